"""A real ``python -m service`` on a free loopback port, for the tests that
need a process of its own (kill -9, several workers, the README's session)."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

#: The project's root: the server runs there, so it imports this checkout.
ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(data_dir: Path, port: int, workers: int = 1) -> subprocess.Popen:
    env = dict(os.environ, PICK_DATA_DIR=str(data_dir), PICK_PORT=str(port), PICK_HOST="127.0.0.1",
               PICK_LOG_LEVEL="warning", PICK_WORKERS=str(workers))
    env.pop("PICK_API_KEY", None)
    log = open(data_dir / f"server-{port}.log", "ab")
    process = subprocess.Popen([sys.executable, "-m", "service"], cwd=ROOT, env=env, stdout=log, stderr=log)
    log.close()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        assert process.poll() is None, (data_dir / f"server-{port}.log").read_text()
        try:
            if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    process.kill()
    raise TimeoutError("python -m service did not become ready")
