"""Run the fetch MCP server next to a static page server on its private loopback.

Started inside the episode sandbox as ``python /opt/agentworld/fetch_host.py SITE PORT``
(this file alone is bound there, read-only: the sandbox needs nothing else of this
package, and standard library plus ``mcp_server_fetch`` are all it imports): the pages
under SITE are served at ``http://localhost:PORT/`` in the sandbox's own network
namespace, so the fetch server can reach them and nothing else.
"""

from __future__ import annotations

import functools
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass  # stdout is the MCP channel and stderr is the episode log; keep both clean


def main() -> None:
    site, port = sys.argv[1], int(sys.argv[2])
    handler = functools.partial(_QuietHandler, directory=site)
    httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()

    import mcp_server_fetch

    # Loopback pages are refused by default; here they are the only reachable pages.
    sys.argv = ["mcp-server-fetch", "--allow-private-ips"]
    mcp_server_fetch.main()


if __name__ == "__main__":
    main()
