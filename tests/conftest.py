import shutil
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from test_sim_fixtures import mcp_trajectories, terminal_trajectories

from agentworld.models import WorldModel, load_backend
from agentworld.records.trajectory import write_trajectories

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def awbench_dir() -> Path:
    return FIXTURES / "awbench"


@pytest.fixture
def sandbox_tmp() -> Iterator[Path]:
    """A private temp folder that sandboxes may live under. The sandbox's unprivileged uid
    must walk down to it, so it sits directly in the system temp folder (pytest's own
    folders are 0700, and pytest resets them whenever a session starts)."""
    folder = Path(tempfile.mkdtemp(prefix="aw-test-"))
    folder.chmod(0o711)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


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


# -- simulator tests: retrieval world models over the recorded turns of test_sim_fixtures --


@pytest.fixture
def terminal_wm(tmp_path: Path) -> WorldModel:
    write_trajectories(tmp_path / "terminal.jsonl", terminal_trajectories())
    return WorldModel(load_backend("retrieval", source=tmp_path / "terminal.jsonl", domain="terminal"))


@pytest.fixture
def mcp_source(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.jsonl"
    write_trajectories(path, mcp_trajectories())
    return path


@pytest.fixture
def mcp_wm(mcp_source: Path) -> WorldModel:
    return WorldModel(load_backend("retrieval", source=mcp_source, domain="mcp"))
