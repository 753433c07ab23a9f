"""What the two load modes share (``bench.load``'s request mix and ``bench.editors``):
the loopback target, one-shot set-up requests, a server of our own, the
server's memory and CPU from ``/proc``, the sample scenes and editor
cameras over them, raw HTTP/1.1 requests and answers, and the report's
number formats."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import sample_meshes
from bench.http import free_port

ROOT = Path(__file__).resolve().parents[1]

RECORD_BYTES = 32                     # one binary batch answer per ray
IMAGE = (1280, 720)                   # the editor's viewport, pixels
FOV_Y = 50.0
ERROR_SAMPLES = 8
MB = 1024 * 1024

# Hard limits: this is a load test for one's own machine, not a flood.
MAX_DURATION = 3600.0
MAX_CONNECTIONS = 1024
MAX_REQUESTS = 10_000_000


class NotLoopback(ValueError):
    """The URL points somewhere other than this machine's loopback interface."""


# ---------------------------------------------------------------- the target

@dataclass
class Target:
    host: str          # what to connect to
    port: int
    prefix: str        # path prefix of the URL, without a trailing slash

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host_header}{self.prefix}"


def loopback_target(url: str) -> Target:
    """The URL's host and port, when the host is loopback (127.0.0.0/8, ::1, localhost); else NotLoopback."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http":
        raise NotLoopback(f"{url!r}: only plain http:// URLs on loopback are load-tested")
    host = parts.hostname
    if not host:
        raise NotLoopback(f"{url!r}: no host")
    try:
        port = parts.port or 80
    except ValueError as error:
        raise NotLoopback(f"{url!r}: {error}") from None
    if host == "localhost":
        try:
            addresses = {info[4][0] for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)}
        except socket.gaierror as error:
            raise NotLoopback(f"{url!r}: localhost does not resolve ({error})") from None
        outside = sorted(a for a in addresses if not ipaddress.ip_address(a.split("%")[0]).is_loopback)
        if outside or not addresses:
            raise NotLoopback(f"{url!r}: localhost resolves to {', '.join(outside) or 'nothing'}, not loopback")
        host = "127.0.0.1" if "127.0.0.1" in addresses else sorted(addresses)[0]
    else:
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            raise NotLoopback(f"{url!r}: host {host!r} is not a loopback address; the load test only runs "
                              "against 127.0.0.0/8, ::1 or localhost") from None
        if not address.is_loopback:
            raise NotLoopback(f"{url!r}: {host} is not a loopback address; the load test only runs "
                              "against 127.0.0.0/8, ::1 or localhost")
    return Target(host, port, parts.path.rstrip("/"))


class Http:
    """Blocking one-shot requests for the set-up (http.client, a fresh connection each)."""

    def __init__(self, target: Target, api_key: str | None = None):
        self.target = target
        self.api_key = api_key

    def call(self, method: str, path: str, body: bytes = b"", content_type: str | None = None,
             timeout: float = 120.0) -> tuple[int, bytes]:
        import http.client

        headers = {}
        if content_type:
            headers["Content-Type"] = content_type
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        connection = http.client.HTTPConnection(self.target.host, self.target.port, timeout=timeout)
        try:
            connection.request(method, self.target.prefix + path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def json(self, method: str, path: str, body=None, expect=(200,)):
        data = b"" if body is None else json.dumps(body).encode()
        status, answer = self.call(method, path, data, "application/json" if body is not None else None)
        if status not in expect:
            raise RuntimeError(f"{method} {path}: {status} {answer[:500]!r}")
        return json.loads(answer) if answer else None

    def upload(self, path: Path) -> dict:
        boundary = "loadboundary5c0ffee"
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{path.name}\"\r\n"
                f"Content-Type: application/octet-stream\r\n\r\n").encode() + path.read_bytes() + \
            f"\r\n--{boundary}--\r\n".encode()
        status, answer = self.call("POST", "/scenes/upload", body, f"multipart/form-data; boundary={boundary}")
        if status != 201:
            raise RuntimeError(f"upload of {path.name} failed: {status} {answer[:500]!r}")
        return json.loads(answer)


# ---------------------------------------------------------------- a server of our own

def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when this script dies, even by SIGKILL (Linux)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
    except Exception:
        pass


class Server:
    """``python -m service`` on a free loopback port, with a temporary data directory."""

    def __init__(self, workers: int = 1, sample_scenes: bool = True):
        self.workers = workers
        self.sample_scenes = sample_scenes
        self.workdir = Path(tempfile.mkdtemp(prefix="pick-load-"))
        self.data_dir = self.workdir / "data"
        self.log_path = self.workdir / "server.log"
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self._log = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float, every_kernel: bool = True) -> float:
        """Start it and wait for ``/ready``, and with ``every_kernel`` until
        nothing is left ``compiling``: a kernel compiling in the background
        (a cold numba cache) takes a core and the compile lock for minutes,
        and the load would measure that; the seconds that took."""
        env = dict(os.environ, PICK_HOST="127.0.0.1", PICK_PORT=str(self.port), PICK_DATA_DIR=str(self.data_dir),
                   PICK_WORKERS=str(self.workers), PICK_LOG_LEVEL="warning",
                   PICK_SAMPLE_SCENES="true" if self.sample_scenes else "false")
        env.pop("PICK_API_KEY", None)
        self._log = open(self.log_path, "wb")
        start = time.perf_counter()
        self.process = subprocess.Popen([sys.executable, "-m", "service"], cwd=ROOT, env=env,
                                        stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        http = Http(loopback_target(self.url))
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with status {self.process.returncode}; its log ends:\n"
                                   + self.log_tail())
            try:
                status, body = http.call("GET", "/ready", timeout=2.0)
                if status == 200 and not (every_kernel and "compiling" in json.loads(body)):
                    return time.perf_counter() - start
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.url} not ready after {timeout:g} s; its log ends:\n" + self.log_tail())
            time.sleep(0.1)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """SIGINT (uvicorn's graceful shutdown), SIGKILL after 15 s; then remove the temporary files."""
        try:
            if self.process is not None and self.process.poll() is None:
                self.process.send_signal(signal.SIGINT)
                try:
                    self.process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        finally:
            if self._log is not None:
                self._log.close()
            shutil.rmtree(self.workdir, ignore_errors=True)


# ---------------------------------------------------------------- server memory and CPU from /proc

def process_tree(pid: int) -> list[int]:
    """The process and its descendants (uvicorn's workers when PICK_WORKERS > 1)."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    queue.extend(int(child) for child in handle.read().split())
            except OSError:
                pass
    return found


def _status_kb(pid: int, fields: tuple[str, ...]) -> dict[str, int]:
    values = {}
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            name, _, rest = line.partition(":")
            if name in fields:
                values[name] = int(rest.split()[0])
    return values


def memory(pid: int) -> tuple[int, int, int] | None:
    """(RSS, VmHWM summed, processes) in bytes over the tree, or None when the process is gone."""
    rss = hwm = count = 0
    for member in process_tree(pid):
        try:
            values = _status_kb(member, ("VmRSS", "VmHWM"))
        except (OSError, ValueError):
            continue
        rss += values.get("VmRSS", 0) * 1024
        hwm += values.get("VmHWM", 0) * 1024
        count += 1
    return (rss, hwm, count) if count else None


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of the tree's live processes."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for member in process_tree(pid):
        try:
            with open(f"/proc/{member}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
        except (OSError, ValueError, IndexError):
            pass
    return total


def client_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# ---------------------------------------------------------------- the sample scenes, cameras over them, requests

@dataclass
class SampleScene:
    name: str
    id: str
    lo: np.ndarray
    hi: np.ndarray
    objects: list[dict]
    triangles: int

    @property
    def centre(self) -> np.ndarray:
        return 0.5 * (self.lo + self.hi)

    @property
    def diagonal(self) -> float:
        return float(np.linalg.norm(self.hi - self.lo))


def find_scenes(http: Http, log) -> tuple[dict[str, SampleScene], list[str]]:
    """The sample scenes by name (uploading any the server lacks) and the ids this call uploaded."""
    wanted = {Path(name).stem: name for name in sample_meshes.ALL}
    listed = http.json("GET", "/scenes")["scenes"]
    ids = {}
    for summary in listed:
        if summary["name"] in wanted and summary["name"] not in ids and summary["bounds"] is not None:
            ids[summary["name"]] = summary["id"]
    uploaded = []
    missing = [stem for stem in wanted if stem not in ids]
    if missing:
        log(f"the server has {len(listed)} scenes, without {', '.join(missing)}: uploading "
            + ", ".join(wanted[stem] for stem in missing))
        for stem in missing:
            created = http.upload(sample_meshes.path(wanted[stem]))
            ids[stem] = created["id"]
            uploaded.append(created["id"])
    scenes = {}
    for stem in wanted:
        described = http.json("GET", f"/scenes/{ids[stem]}")
        lo, hi = (np.asarray(corner, np.float64) for corner in described["bounds"])
        scenes[stem] = SampleScene(stem, ids[stem], lo, hi, described["objects"], described["triangles"])
    return scenes, uploaded


def rounded(values, digits: int = 5) -> list[float]:
    return [round(float(v), digits) for v in values]


def outside_point(scene: SampleScene, rng: np.random.Generator) -> np.ndarray:
    """An editor camera: 0.8-1.5 box diagonals from the centre (outside the box), 10-70 degrees above it."""
    azimuth = rng.uniform(0, 2 * np.pi)
    elevation = np.radians(rng.uniform(10, 70))
    distance = scene.diagonal * rng.uniform(0.8, 1.5)
    return scene.centre + distance * np.array([np.cos(elevation) * np.cos(azimuth),
                                               np.cos(elevation) * np.sin(azimuth), np.sin(elevation)])


def inside_point(scene: SampleScene, rng: np.random.Generator) -> np.ndarray:
    return scene.lo + rng.random(3) * (scene.hi - scene.lo)


def pinhole(scene: SampleScene, rng: np.random.Generator) -> dict:
    target = scene.centre + 0.1 * (rng.random(3) - 0.5) * (scene.hi - scene.lo)
    return {"position": rounded(outside_point(scene, rng)), "target": rounded(target), "up": [0, 0, 1],
            "fov_y_deg": FOV_Y, "width": IMAGE[0], "height": IMAGE[1]}


def http_request(target: Target, method: str, path: str, body: bytes, content_type: str,
                 api_key: str | None) -> bytes:
    lines = [f"{method} {target.prefix}{path} HTTP/1.1", f"Host: {target.host_header}",
             f"Content-Type: {content_type}", f"Content-Length: {len(body)}"]
    if api_key:
        lines.append(f"Authorization: Bearer {api_key}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


# ---------------------------------------------------------------- reading answers

_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)", re.IGNORECASE)
_CHUNKED = re.compile(rb"\r\ntransfer-encoding:[^\r]*chunked", re.IGNORECASE)
_CLOSE = re.compile(rb"\r\nconnection:[ \t]*close", re.IGNORECASE)


async def read_answer(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """One HTTP/1.1 answer: status, body, and whether the server closes the connection after it."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    match = _CONTENT_LENGTH.search(head)
    if match is not None:
        body = await reader.readexactly(int(match.group(1)))
    elif _CHUNKED.search(head):
        parts = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            parts.append((await reader.readexactly(size + 2))[:-2])
        body = b"".join(parts)
    elif status in (204, 304) or 100 <= status < 200:
        body = b""
    else:
        raise ValueError(f"an answer without Content-Length: {head[:300]!r}")
    return status, body, _CLOSE.search(head) is not None


# ---------------------------------------------------------------- memory over the run

class MemorySampler:
    """The server's RSS every second of the run, from /proc/<pid>."""

    def __init__(self, pid: int):
        self.pid = pid
        self.samples: list[tuple[float, int, int, int]] = []     # (seconds into the run, RSS, VmHWM, processes)

    def sample(self, t: float) -> None:
        reading = memory(self.pid)
        if reading is not None:
            self.samples.append((t, *reading))

    async def __call__(self, start: float) -> None:
        tick = 0
        try:
            while True:
                self.sample(time.perf_counter() - start)
                tick += 1
                await asyncio.sleep(max(0.0, start + tick - time.perf_counter()))
        finally:
            self.sample(time.perf_counter() - start)

    def report(self, mark: float, threshold: float) -> dict:
        if not self.samples:
            return {"known": False}
        early = [s for s in self.samples if s[0] <= mark + 0.5] or self.samples[:1]
        at_mark = early[-1]
        end = self.samples[-1]
        growth = (end[1] - at_mark[1]) / at_mark[1] * 100
        return {"known": True, "pid": self.pid, "processes": end[3], "mark_s": round(at_mark[0], 1),
                "end_s": round(end[0], 1), "rss_at_mark": at_mark[1], "rss_at_end": end[1],
                "peak_rss_to_mark": max(s[1] for s in early), "peak_rss_to_end": max(s[1] for s in self.samples),
                "vmhwm_at_mark": at_mark[2], "vmhwm_at_end": end[2], "growth_percent": round(growth, 2),
                "stable_threshold_percent": threshold, "stable": growth < threshold,
                "samples": [(round(t, 2), rss) for t, rss, _, _ in self.samples]}


# ---------------------------------------------------------------- the report's numbers

def format_ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def format_mb(value: int) -> str:
    return f"{value / MB:.0f} MB"
