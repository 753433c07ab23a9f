"""HTTP benchmark of the picking service: ``python -m bench.http [--url URL]``.

Measures, against one running server (started here on a free loopback port
with a temporary ``PICK_DATA_DIR`` unless ``--url`` is given):

1. ``/health`` and ``/pick`` requests per second at 16 connections, one
   after the other with the same load generator, so their ratio is fair;
2. single-pick latency p50 and p99 at one connection (a blocking socket,
   one request at a time);
3. a 100,000-ray binary batch in rays per second, against ``Scene.intersect``
   in this process on the same mesh and the same rays, and likewise 100,000
   points of a binary ``/closest`` against ``Scene.closest_point``;
4. (started server only) restart with a saved ~1.3M-triangle scene: upload
   it, ``kill -9`` the server, start it again and time until ``/ready``.

Load generator: ``wrk`` when it is installed (``apt-get install wrk``),
otherwise a Python asyncio client over raw keep-alive HTTP/1.1 sockets. On
a 2-core machine the Python client needs a core of its own and may be the
bottleneck (both routes then read lower, and closer together); wrk costs the
server far less. The wrk recipe, for a server already running::

    wrk -t1 -c16 -d10s --latency http://127.0.0.1:8000/health
    wrk -t1 -c16 -d10s --latency -s pick.lua http://127.0.0.1:8000/scenes/<id>/pick

with ``pick.lua``::

    wrk.method = "POST"
    wrk.headers["Content-Type"] = "application/json"
    wrk.body = '{"origin": [x, y, z], "direction": [dx, dy, dz]}'

The mesh is ``../shared/meshes/stanford-bunny.obj`` when present, else
``sample_meshes/torus.ply``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BUNNY = ROOT.parent / "shared" / "meshes" / "stanford-bunny.obj"
TORUS = ROOT / "sample_meshes" / "torus.ply"

BATCH_RAYS = 100_000
RECORD_BYTES = 32


# ---------------------------------------------------------------- a server

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """``python -m service`` in a subprocess, on a free loopback port."""

    def __init__(self, data_dir: Path, port: int, workers: int = 1):
        self.data_dir = data_dir
        self.port = port
        self.workers = workers
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> float:
        """Start it; returns the seconds until ``/ready`` answers 200."""
        env = dict(os.environ, PICK_PORT=str(self.port), PICK_HOST="127.0.0.1", PICK_DATA_DIR=str(self.data_dir),
                   PICK_WORKERS=str(self.workers), PICK_LOG_LEVEL="warning")
        env.pop("PICK_API_KEY", None)
        start = time.perf_counter()
        self.process = subprocess.Popen([sys.executable, "-m", "service"], cwd=ROOT, env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_ready(self.url, timeout=600, process=self.process, every_kernel=True)
        return time.perf_counter() - start

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


def wait_ready(url: str, timeout: float, process: subprocess.Popen | None = None, every_kernel: bool = False) -> None:
    """Wait for ``/ready``; with ``every_kernel``, also until nothing is left
    ``compiling`` in the background (a cold numba cache would otherwise
    compile under the measurement)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server exited with status {process.returncode}")
        try:
            status, body = request(url, "GET", "/ready", timeout=1.0)
            if status == 200 and not (every_kernel and "compiling" in json.loads(body)):
                return
        except OSError:
            pass
        time.sleep(0.02)
    raise RuntimeError(f"{url} not ready after {timeout} s")


# ---------------------------------------------------------------- plain HTTP

def request(url: str, method: str, path: str, body: bytes = b"", headers: dict | None = None,
            timeout: float = 600.0) -> tuple[int, bytes]:
    """One request on a fresh connection (http.client: no third-party client in the timing)."""
    import http.client

    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def every_object(get_json, scene_id: str, limit: int = 10_000) -> list[dict]:
    """Every live object of scene ``scene_id`` in id order, page by page (``GET /scenes/{id}/objects``:
    ``GET /scenes/{id}`` lists only the first ``PICK_INLINE_OBJECTS``); ``get_json(path)`` is a GET's JSON."""
    objects, after = [], None
    while True:
        query = f"limit={limit}" if after is None else f"after={after}&limit={limit}"
        page = get_json(f"/scenes/{scene_id}/objects?{query}")
        objects += page["objects"]
        after = page["next_after"]
        if after is None:
            return objects


def raw_request(method: str, path: str, host: str, body: bytes = b"", content_type: str = "application/json",
                auth: str | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", "Connection: keep-alive"]
    if auth:
        lines.append(f"Authorization: Bearer {auth}")
    if body or method == "POST":
        lines += [f"Content-Type: {content_type}", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


_CONTENT_LENGTH = re.compile(rb"content-length:\s*(\d+)", re.IGNORECASE)


def response_length(head: bytes) -> int:
    match = _CONTENT_LENGTH.search(head)
    if match is None:
        raise RuntimeError(f"response without Content-Length: {head[:200]!r}")
    return int(match.group(1))


# ---------------------------------------------------------------- load generators

def wrk_rate(url: str, path: str, connections: int, seconds: float, method: str = "GET", body: bytes = b"",
             auth: str | None = None) -> float:
    """Requests per second reported by wrk (one thread)."""
    script = None
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s"]
    if method != "GET" or auth:
        lua = [f'wrk.method = "{method}"']
        if body:
            lua.append('wrk.headers["Content-Type"] = "application/json"')
            lua.append(f"wrk.body = {json.dumps(body.decode())}")
        if auth:
            lua.append(f'wrk.headers["Authorization"] = "Bearer {auth}"')
        handle = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)
        handle.write("\n".join(lua) + "\n")
        handle.close()
        script = handle.name
        command += ["-s", script]
    try:
        output = subprocess.run(command + [url + path], capture_output=True, text=True, check=True).stdout
    finally:
        if script:
            os.unlink(script)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    if errors:
        raise RuntimeError(f"wrk saw {errors.group(1)} error responses on {path}")
    return float(re.search(r"Requests/sec:\s*([\d.]+)", output).group(1))


async def _python_load(host: str, port: int, payload: bytes, connections: int, seconds: float) -> float:
    done = 0
    stop_at = time.perf_counter() + seconds

    async def client():
        nonlocal done
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while time.perf_counter() < stop_at:
                writer.write(payload)
                head = await reader.readuntil(b"\r\n\r\n")
                if not head.startswith(b"HTTP/1.1 200"):
                    raise RuntimeError(f"error response: {head[:100]!r}")
                await reader.readexactly(response_length(head))
                done += 1
        finally:
            writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(connections)))
    return done / (time.perf_counter() - start)


def python_rate(url: str, path: str, connections: int, seconds: float, method: str = "GET", body: bytes = b"",
                auth: str | None = None) -> float:
    parts = urllib.parse.urlsplit(url)
    payload = raw_request(method, path, f"{parts.hostname}:{parts.port}", body, auth=auth)
    return asyncio.run(_python_load(parts.hostname, parts.port, payload, connections, seconds))


def latencies(url: str, path: str, body: bytes, count: int, auth: str | None = None) -> np.ndarray:
    """Seconds per request, one keep-alive connection, one request at a time."""
    parts = urllib.parse.urlsplit(url)
    payload = raw_request("POST", path, f"{parts.hostname}:{parts.port}", body, auth=auth)
    out = np.empty(count)
    with socket.create_connection((parts.hostname, parts.port)) as connection:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        stream = connection.makefile("rb")
        for k in range(count):
            start = time.perf_counter()
            connection.sendall(payload)
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                head += stream.readline()
            stream.read(response_length(head))
            out[k] = time.perf_counter() - start
    return out


# ---------------------------------------------------------------- the measurements

def upload(url: str, path: Path, auth: str | None = None) -> dict:
    boundary = "benchboundary7d1f"
    content = path.read_bytes()
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{path.name}\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode() + content + f"\r\n--{boundary}--\r\n".encode()
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    if auth:
        headers["Authorization"] = f"Bearer {auth}"
    status, answer = request(url, "POST", "/scenes/upload", body, headers)
    if status != 201:
        raise RuntimeError(f"upload of {path.name} failed: {status} {answer[:300]!r}")
    return json.loads(answer)


def hitting_ray(bounds) -> tuple[list, list]:
    """A ray from outside the box through its centre, slightly off-axis (a typical hover)."""
    lo, hi = np.asarray(bounds[0]), np.asarray(bounds[1])
    centre = 0.5 * (lo + hi)
    origin = centre + np.array([0.31, 0.42, 1.5]) * float(np.linalg.norm(hi - lo))
    return origin.tolist(), (centre - origin).tolist()


def batch_rate(url: str, scene_id: str, origins: np.ndarray, directions: np.ndarray, repeats: int,
               auth: str | None = None) -> tuple[float, int]:
    body = np.hstack([origins, directions]).astype("<f4").tobytes()
    headers = {"Content-Type": "application/octet-stream"}
    if auth:
        headers["Authorization"] = f"Bearer {auth}"
    best = np.inf
    hits = 0
    for _ in range(repeats):
        start = time.perf_counter()
        status, answer = request(url, "POST", f"/scenes/{scene_id}/pick/batch.bin", body, headers)
        elapsed = time.perf_counter() - start
        if status != 200 or len(answer) != RECORD_BYTES * origins.shape[0]:
            raise RuntimeError(f"batch failed: {status} {answer[:200]!r}")
        best = min(best, elapsed)
        hits = int((np.frombuffer(answer, "<i4").reshape(-1, 8)[:, 1] >= 0).sum())
    return origins.shape[0] / best, hits


def closest_rates(url: str, scene_id: str, mesh_path: Path, points: np.ndarray, repeats: int,
                  auth: str | None = None) -> tuple[float, float]:
    """``(over HTTP, in process)`` points per second of a binary ``/closest`` and of
    ``Scene.closest_point`` on the same float32-rounded points."""
    import bvh

    body = points.astype("<f4").tobytes()
    headers = {"Content-Type": "application/octet-stream", **({"Authorization": f"Bearer {auth}"} if auth else {})}
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        status, answer = request(url, "POST", f"/scenes/{scene_id}/closest.bin", body, headers)
        elapsed = time.perf_counter() - start
        if status != 200 or len(answer) != 44 * points.shape[0]:
            raise RuntimeError(f"closest failed: {status} {answer[:200]!r}")
        best = min(best, elapsed)
    scene = bvh.load(mesh_path)
    rounded = points.astype(np.float32).astype(np.float64)
    scene.closest_point(rounded[:1000])
    local = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        scene.closest_point(rounded)
        local = min(local, time.perf_counter() - start)
    return points.shape[0] / best, points.shape[0] / local


def in_process_rate(mesh_path: Path, origins: np.ndarray, directions: np.ndarray, repeats: int) -> float:
    import bvh

    scene = bvh.load(mesh_path) if hasattr(bvh, "load") else __import__("bvh.io.load").loader.load(mesh_path)
    # Same float32-rounded rays as the binary batch sends.
    origins = origins.astype(np.float32).astype(np.float64)
    directions = directions.astype(np.float32).astype(np.float64)
    scene.intersect(origins[:1000], directions[:1000])
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        scene.intersect(origins, directions)
        best = min(best, time.perf_counter() - start)
    return origins.shape[0] / best


def big_mesh_file(directory: Path) -> tuple[Path, int]:
    """A 1,310,720-triangle icosphere (8 subdivisions) as binary PLY."""
    import trimesh

    sphere = trimesh.creation.icosphere(subdivisions=8)
    path = directory / "icosphere-1.3m.ply"
    path.write_bytes(sphere.export(file_type="ply"))
    return path, len(sphere.faces)


def restart_time(big_file: Path, port: int) -> dict:
    """Upload the big scene, kill -9, restart: seconds to /health and to /ready."""
    data_dir = Path(tempfile.mkdtemp(prefix="pick-bench-restart-"))
    server = Server(data_dir, port)
    try:
        server.start()
        scene = upload(server.url, big_file)
        server.kill()
        env = dict(os.environ, PICK_PORT=str(port), PICK_HOST="127.0.0.1", PICK_DATA_DIR=str(data_dir),
                   PICK_LOG_LEVEL="warning")
        start = time.perf_counter()
        server.process = subprocess.Popen([sys.executable, "-m", "service"], cwd=ROOT, env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        healthy = None
        while True:
            if server.process.poll() is not None:
                raise RuntimeError("the restarted server exited")
            try:
                if healthy is None and request(server.url, "GET", "/health", timeout=1.0)[0] == 200:
                    healthy = time.perf_counter() - start
                if request(server.url, "GET", "/ready", timeout=1.0)[0] == 200:
                    ready = time.perf_counter() - start
                    break
            except OSError:
                pass
            if time.perf_counter() - start > 120:
                raise RuntimeError("the restarted server was not ready within 120 s")
            time.sleep(0.01)
        status, answer = request(server.url, "GET", f"/scenes/{scene['id']}")
        found = status == 200 and json.loads(answer)["triangles"] == scene["triangles"]
        return {"triangles": scene["triangles"], "healthy": healthy, "ready": ready, "found": found,
                "build_ms": scene["build_ms"]}
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a running server (default: start one)")
    parser.add_argument("--api-key", default=os.environ.get("PICK_API_KEY"))
    parser.add_argument("--mesh", type=Path, help="mesh file (default: the bunny, else the torus)")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=5.0, help="per throughput run")
    parser.add_argument("--rounds", type=int, default=3, help="throughput runs per route, alternating; best kept")
    parser.add_argument("--latency-requests", type=int, default=3000)
    parser.add_argument("--client", choices=["auto", "wrk", "python"], default="auto")
    parser.add_argument("--skip-restart", action="store_true", help="skip the 1.3M-triangle restart test")
    args = parser.parse_args(argv)

    mesh_path = args.mesh or (BUNNY if BUNNY.exists() else TORUS)
    client = args.client
    if client == "auto":
        client = "wrk" if shutil.which("wrk") else "python"
    rate = wrk_rate if client == "wrk" else python_rate

    server = None
    if args.url:
        url = args.url.rstrip("/")
    else:
        server = Server(Path(tempfile.mkdtemp(prefix="pick-bench-")), free_port())
        print(f"starting python -m service on {server.url} ...", flush=True)
        server.start()
        url = server.url
    rows = []
    try:
        scene = upload(url, mesh_path, args.api_key)
        scene_id = scene["id"]
        origin, direction = hitting_ray(scene["bounds"])
        pick_body = json.dumps({"origin": origin, "direction": direction}).encode()
        pick_path = f"/scenes/{scene_id}/pick"
        status, answer = request(url, "POST", pick_path, pick_body, {"Content-Type": "application/json",
                                                                     **({"Authorization": f"Bearer {args.api_key}"}
                                                                        if args.api_key else {})})
        if status != 200 or not json.loads(answer).get("hit"):
            raise RuntimeError(f"the benchmark ray should hit: {status} {answer[:200]!r}")

        # Alternate the two routes so that drift in the machine's load hits both.
        health_rates, pick_rates = [], []
        for _ in range(args.rounds):
            health_rates.append(rate(url, "/health", args.connections, args.seconds))
            pick_rates.append(rate(url, pick_path, args.connections, args.seconds, "POST", pick_body, args.api_key))
        health_rate, pick_rate = max(health_rates), max(pick_rates)
        ratio = pick_rate / health_rate
        rows.append((f"/health, {args.connections} connections ({client})", f"{health_rate:,.0f} req/s", ""))
        rows.append((f"/pick, {args.connections} connections ({client})", f"{pick_rate:,.0f} req/s",
                     f"{ratio:.2f}x /health (bar >= 0.85)"))

        latencies(url, pick_path, pick_body, 200, args.api_key)
        times = latencies(url, pick_path, pick_body, args.latency_requests, args.api_key) * 1e3
        p50, p99 = float(np.percentile(times, 50)), float(np.percentile(times, 99))
        rows.append(("/pick latency, 1 connection", f"p50 {p50:.3f} ms, p99 {p99:.3f} ms",
                     "bar p50 <= 1 ms"))

        sys.path.insert(0, str(ROOT))
        from bench.rays_gen import random_pick_rays

        lo, hi = np.asarray(scene["bounds"][0]), np.asarray(scene["bounds"][1])
        origins, directions = random_pick_rays(np.array([lo, hi]), BATCH_RAYS, seed=5)
        http_rate, hits = batch_rate(url, scene_id, origins, directions, 3, args.api_key)
        local_rate = in_process_rate(mesh_path, origins, directions, 3)
        rows.append((f"binary batch, {BATCH_RAYS:,} rays over HTTP", f"{http_rate / 1e6:.2f} M rays/s",
                     f"{http_rate / local_rate:.2f}x in-process (bar >= 0.5)"))
        rows.append(("Scene.intersect in this process", f"{local_rate / 1e6:.2f} M rays/s", f"{hits:,} hits"))
        points = lo + np.random.default_rng(6).random((BATCH_RAYS, 3)) * (hi - lo)
        http_closest, local_closest = closest_rates(url, scene_id, mesh_path, points, 3, args.api_key)
        rows.append((f"binary /closest, {BATCH_RAYS:,} points over HTTP", f"{http_closest / 1e6:.3f} M points/s",
                     f"{http_closest / local_closest:.2f}x in-process (bar >= 0.5)"))
        rows.append(("Scene.closest_point in this process", f"{local_closest / 1e6:.3f} M points/s", ""))

        restart = None
        if server is not None and not args.skip_restart:
            big_dir = Path(tempfile.mkdtemp(prefix="pick-bench-mesh-"))
            try:
                big_file, _ = big_mesh_file(big_dir)
                restart = restart_time(big_file, free_port())
            finally:
                shutil.rmtree(big_dir, ignore_errors=True)
            rows.append((f"restart after kill -9, {restart['triangles']:,}-triangle scene saved",
                         f"/health {restart['healthy']:.2f} s, /ready {restart['ready']:.2f} s",
                         f"scene found: {restart['found']} (bar ready <= 5 s)"))
    finally:
        if server is not None:
            server.stop()
            shutil.rmtree(server.data_dir, ignore_errors=True)

    width = max(len(row[0]) for row in rows)
    value_width = max(len(row[1]) for row in rows)
    print(f"\nmesh: {mesh_path.name}, {scene['triangles']:,} triangles; server {url}")
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:<{value_width}}  {note}")
    summary = (f"summary: /pick {ratio:.2f}x /health at {args.connections} connections, pick p50 {p50:.3f} ms, "
               f"batch {http_rate / local_rate:.2f}x in-process")
    if restart is not None:
        summary += f", restart ready in {restart['ready']:.2f} s"
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
