"""A real ``python -m service`` on a free loopback port, for the tests that
need a process of its own (kill -9, several workers, the README's session)."""

import os
import signal
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


def start_server(data_dir: Path, port: int, workers: int = 1, log_dir: Path | None = None,
                 settings: dict[str, str] | None = None) -> subprocess.Popen:
    """``python -m service`` on ``data_dir``, ready; its output in ``server-<port>.log`` of
    ``log_dir`` (default: the data directory, which a full-disk test must keep for the data).
    Without an API key unless ``settings`` (more ``PICK_*`` variables) gives one."""
    env = dict(os.environ, PICK_DATA_DIR=str(data_dir), PICK_PORT=str(port), PICK_HOST="127.0.0.1",
               PICK_LOG_LEVEL="warning", PICK_WORKERS=str(workers))
    env.pop("PICK_API_KEY", None)
    env.update(settings or {})
    log_path = (log_dir or data_dir) / f"server-{port}.log"
    log = open(log_path, "ab")
    process = subprocess.Popen([sys.executable, "-m", "service"], cwd=ROOT, env=env, stdout=log, stderr=log)
    log.close()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        assert process.poll() is None, log_path.read_text()
        try:
            if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    process.kill()
    raise TimeoutError("python -m service did not become ready")


def child_pids(pid: int) -> list[int]:
    """The pids of ``pid``'s children (uvicorn's worker processes), read from ``/proc``."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                # The parent's pid is the 4th field, after the ")" that ends the command name.
                stat = open(f"/proc/{entry.name}/stat").read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def kill_9(process) -> None:
    """SIGKILL the server and its uvicorn workers, all at once."""
    for pid in [process.pid] + child_pids(process.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


def stop(process, timeout: float = 30) -> None:
    """Stop the server as a shutdown would (SIGTERM); SIGKILL it and its workers when it takes
    longer than ``timeout`` seconds (a loaded machine)."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_9(process)
