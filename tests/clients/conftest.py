"""Fixtures of the official clients' tests: a real ``python -m service`` on a free port.

The Python client is imported from this checkout's ``clients/python`` (put first on
``sys.path``), so the tests check the client beside the service they run against, whether or
not ``make test`` has installed it into the virtualenv too.
"""

import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from testkit.servers import free_port, start_server

CLIENT_ROOT = Path(__file__).resolve().parents[2] / "clients" / "python"
sys.path.insert(0, str(CLIENT_ROOT))


class Server:
    """A running service: its URL, its OpenAPI document, and how to stop or restart it."""

    def __init__(self, data_dir: Path, settings: dict[str, str]):
        self.data_dir = data_dir
        self.settings = settings
        self.port = free_port()
        self.process = start_server(data_dir, self.port, settings=settings)
        self.url = f"http://127.0.0.1:{self.port}"
        self.openapi = httpx.get(f"{self.url}/openapi.json", timeout=30).json()

    def serves(self, method: str, path: str) -> bool:
        """Whether the OpenAPI document has this operation."""
        return method.lower() in self.openapi["paths"].get(path, {})

    def require(self, method: str, path: str, why: str) -> None:
        """Skip, saying so, when the service does not have the operation yet."""
        if not self.serves(method, path):
            pytest.skip(f"{method} {path} is not served by this service yet ({why})")

    def has_idempotency_keys(self) -> bool:
        return "Idempotency-Key" in str(self.openapi)

    def restart(self) -> None:
        """kill -9 the process, then start another on the same port and data directory."""
        from testkit.servers import kill_9
        kill_9(self.process)
        self.process = start_server(self.data_dir, self.port, settings=self.settings)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


#: The service's settings for these tests: few inline objects (so tables are paged), a short live
#: queue (so a stalled client is resynced soon), events as they come.
SETTINGS = {"PICK_INLINE_OBJECTS": "50", "PICK_LIVE_QUEUE": "2", "PICK_LIVE_EVENT_MS": "0"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    running = Server(tmp_path_factory.mktemp("client-data"), SETTINGS)
    yield running
    running.stop()
