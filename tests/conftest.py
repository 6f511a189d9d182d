import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def awbench_dir() -> Path:
    return FIXTURES / "awbench"


@pytest.fixture
def sandbox_tmp(tmp_path: Path) -> Path:
    """A private temp folder that sandboxes may live under: the sandbox's unprivileged uid
    must be able to walk down to it (o+x on pytest's 0700 folders)."""
    for d in (tmp_path, *tmp_path.parents[:2]):
        d.chmod(0o711)
    return tmp_path


@pytest.fixture
def host_http_port() -> Iterator[int]:
    """Port of an HTTP server on the host's loopback that sandboxes must not reach."""

    class Hello(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.end_headers()

        def log_message(self, *a: object) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
