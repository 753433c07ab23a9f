"""Durable edits at editor rate: ``python -m bench.moves [--objects 10000] [--rounds 5]``.

Starts ``python -m service`` on a free loopback port with a temporary data
directory, uploads a glTF that places one box ``--objects`` times (a modest
level or city), and measures the bars of issue 15:

1. one client, sequential single-object ``PATCH /scenes/{id}/objects/{oid}``
   moves: moves per second, p50 and p99 (one keep-alive connection, raw
   sockets: no client library in the timing);
2. 16 connections moving random objects: moves per second and p99 (wrk
   when installed, else a Python asyncio client that shares the 2 cores);
3. a binary batch of every object's transform: round trip, which bounds the
   server time from above (loopback, 52 bytes per object);
4. ``kill -9`` during a stream of edits, ``--rounds`` times: once the
   clients have had ``--acked`` edits acknowledged the server is killed,
   started again, and every acknowledged edit is looked for (single moves
   from 4 connections and batches moving a group of 64 objects to one
   value); reported: lost edits, half-applied batches, seconds to ``/ready``
   and the service's own time to open the scene (its log line).

Every edit is acknowledged only once durable (see ``service.store.journal``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

import numpy as np

from bench.http import ROOT, Server, every_object, free_port, raw_request, request, response_length, upload
from testkit.bombs import many_nodes_glb

BINARY_MOVE = np.dtype([("id", "<i4"), ("rows", "<f4", (3, 4))])
GROUP = 64
#: Connections moving single objects in the kill -9 rounds, each its own share of the objects.
SINGLES = 4


def city_file(directory: Path, objects: int) -> Path:
    """A glTF placing one unit box ``objects`` times on a grid in the x-z plane."""
    path = directory / f"city-{objects}.glb"
    path.write_bytes(many_nodes_glb(objects, axes=(0, 2), name="box"))
    return path


def move_body(x: float, origin=(0.0, 0.0, 0.0)) -> bytes:
    """A move of an object placed at ``origin`` to ``x`` along the x axis from there."""
    ox, oy, oz = origin
    return json.dumps({"transform": [[1, 0, 0, ox + x], [0, 1, 0, oy], [0, 0, 1, oz], [0, 0, 0, 1]]}).encode()


def drag(step: int) -> float:
    """Where a dragged object is at a step: back and forth within a unit, as a hand on a gizmo."""
    return 0.01 * (step % 100)


class Connection:
    """One keep-alive HTTP/1.1 connection on a raw socket."""

    def __init__(self, url: str):
        parts = urllib.parse.urlsplit(url)
        self.host = f"{parts.hostname}:{parts.port}"
        self.socket = socket.create_connection((parts.hostname, parts.port))
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.stream = self.socket.makefile("rb")

    def call(self, method: str, path: str, body: bytes = b"",
             content_type: str = "application/json") -> tuple[int, bytes]:
        self.socket.sendall(raw_request(method, path, self.host, body, content_type))
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            line = self.stream.readline()
            if not line:
                raise ConnectionError("the server closed the connection")
            head += line
        return int(head.split(b" ", 2)[1]), self.stream.read(response_length(head))

    def close(self) -> None:
        self.socket.close()


def sequential_moves(url: str, scene_id: str, origins: np.ndarray, count: int) -> dict:
    connection = Connection(url)
    seconds = np.empty(count)
    rng = np.random.default_rng(1)
    ids = rng.integers(0, origins.shape[0], count)
    try:
        for k in range(count):
            body = move_body(drag(k), origins[ids[k]])
            start = time.perf_counter()
            status, answer = connection.call("PATCH", f"/scenes/{scene_id}/objects/{ids[k]}", body)
            seconds[k] = time.perf_counter() - start
            if status != 200:
                raise RuntimeError(f"move answered {status}: {answer[:200]!r}")
    finally:
        connection.close()
    return {"moves_per_s": count / seconds.sum(), "p50_ms": np.percentile(seconds, 50) * 1e3,
            "p99_ms": np.percentile(seconds, 99) * 1e3}


def concurrent_moves_wrk(url: str, scene_id: str, origins: np.ndarray, connections: int, seconds: float) -> dict:
    table = ",".join(f"{{{x!r},{y!r},{z!r}}}" for x, y, z in origins.tolist())
    lua = f"""
wrk.method = "PATCH"
wrk.headers["Content-Type"] = "application/json"
counter = 0
origins = {{{table}}}
request = function()
  counter = counter + 1
  local oid = math.random(0, {origins.shape[0] - 1})
  local o = origins[oid + 1]
  local x = o[1] + 0.01 * (counter % 100)
  local body = '{{"transform": [[1, 0, 0, ' .. x .. '], [0, 1, 0, ' .. o[2] .. '], [0, 0, 1, ' .. o[3]
    .. '], [0, 0, 0, 1]]}}'
  return wrk.format(nil, "/scenes/{scene_id}/objects/" .. oid, nil, body)
end
"""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(lua)
    try:
        output = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--latency", "-s", handle.name,
                                 url], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(handle.name)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    if errors:
        raise RuntimeError(f"wrk saw {errors.group(1)} error responses:\n{output}")

    def milliseconds(label: str) -> float:
        value, unit = re.search(rf"\s{label}\s+([\d.]+)(us|ms|s)\b", output).groups()
        return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]

    return {"moves_per_s": float(re.search(r"Requests/sec:\s*([\d.]+)", output).group(1)),
            "p50_ms": milliseconds("50%"), "p99_ms": milliseconds("99%"), "client": "wrk"}


def concurrent_moves_python(url: str, scene_id: str, origins: np.ndarray, connections: int, seconds: float) -> dict:
    parts = urllib.parse.urlsplit(url)
    host = f"{parts.hostname}:{parts.port}"
    latencies: list[float] = []

    async def client(slot: int, deadline: float):
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        rng = random.Random(slot)
        k = 0
        while time.perf_counter() < deadline:
            k += 1
            oid = rng.randrange(origins.shape[0])
            path = f"/scenes/{scene_id}/objects/{oid}"
            start = time.perf_counter()
            writer.write(raw_request("PATCH", path, host, move_body(drag(k), origins[oid])))
            head = await reader.readuntil(b"\r\n\r\n")
            await reader.readexactly(response_length(head))
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(head[:100])
            latencies.append(time.perf_counter() - start)
        writer.close()

    async def run():
        deadline = time.perf_counter() + seconds
        await asyncio.gather(*(client(slot, deadline) for slot in range(connections)))

    start = time.perf_counter()
    asyncio.run(run())
    elapsed = time.perf_counter() - start
    values = np.array(latencies)
    return {"moves_per_s": values.size / elapsed, "p50_ms": np.percentile(values, 50) * 1e3,
            "p99_ms": np.percentile(values, 99) * 1e3, "client": "python"}


def batch_round_trip(url: str, scene_id: str, origins: np.ndarray, repeats: int) -> dict:
    connection = Connection(url)
    records = np.zeros(origins.shape[0], BINARY_MOVE)
    records["id"] = np.arange(origins.shape[0])
    seconds = []
    try:
        for repeat in range(repeats):
            records["rows"] = np.eye(4, dtype=np.float32)[:3]
            records["rows"][:, :, 3] = origins
            records["rows"][:, 1, 3] += drag(repeat)
            start = time.perf_counter()
            status, answer = connection.call("PATCH", f"/scenes/{scene_id}/objects.bin", records.tobytes(),
                                             "application/octet-stream")
            seconds.append(time.perf_counter() - start)
            if status != 200:
                raise RuntimeError(f"batch answered {status}: {answer[:200]!r}")
    finally:
        connection.close()
    return {"median_ms": float(np.median(seconds)) * 1e3, "min_ms": float(np.min(seconds)) * 1e3,
            "bytes": int(records.nbytes)}


class Stream:
    """Edits from several connections until stopped or the server dies: what was acknowledged and sent."""

    def __init__(self, url: str, scene_id: str, objects: int, start_value: float):
        # Values are x translations; objects start at x = 0 on another row of the grid each, so a
        # value may grow (it tells edits apart) while the boxes stay apart in y and z.
        self.url, self.scene_id, self.objects = url, scene_id, objects
        self.acked: dict[int, float] = {}
        self.sent: dict[int, float] = {}
        self.count = 0
        self.lock = threading.Lock()
        self.value = start_value
        self.stop = threading.Event()

    def _next(self) -> float:
        with self.lock:
            self.value += 1.0
            return self.value

    def _singles(self, slot: int):
        rng = random.Random(slot)
        connection = Connection(self.url)
        while not self.stop.is_set():
            # Each connection moves only its own objects: two connections moving one object at once
            # could be applied in either order, and the larger value, acknowledged, read as lost.
            oid = rng.randrange(GROUP + slot, self.objects, SINGLES)
            value = self._next()
            with self.lock:
                self.sent[oid] = max(self.sent.get(oid, value), value)
            try:
                status, _ = connection.call("PATCH", f"/scenes/{self.scene_id}/objects/{oid}", move_body(value))
            except OSError:
                return
            if status == 200:
                with self.lock:
                    self.acked[oid] = max(self.acked.get(oid, value), value)
                    self.count += 1

    def _batches(self):
        connection = Connection(self.url)
        records = np.zeros(GROUP, BINARY_MOVE)
        records["id"] = np.arange(GROUP)
        while not self.stop.is_set():
            value = self._next()
            records["rows"] = np.eye(4, dtype=np.float32)[:3]
            records["rows"][:, 0, 3] = value
            with self.lock:
                for oid in range(GROUP):
                    self.sent[oid] = value
            try:
                status, _ = connection.call("PATCH", f"/scenes/{self.scene_id}/objects.bin", records.tobytes(),
                                            "application/octet-stream")
            except OSError:
                return
            if status == 200:
                with self.lock:
                    for oid in range(GROUP):
                        self.acked[oid] = value
                    self.count += 1

    def run(self, until_acked: int) -> tuple[list[threading.Thread], int]:
        threads = [threading.Thread(target=self._singles, args=(slot,)) for slot in range(SINGLES)]
        threads.append(threading.Thread(target=self._batches))
        for thread in threads:
            thread.start()
        while self.count < until_acked:
            time.sleep(0.001)
        return threads, self.count


def get_json(url: str, path: str):
    status, answer = request(url, "GET", path)
    if status != 200:
        raise RuntimeError(f"GET {path}: {status} {answer[:300]!r}")
    return json.loads(answer)


def durability_rounds(server: Server, scene_id: str, objects: int, rounds: int, acked: int) -> list[dict]:
    results = []
    start_value = 1.0e6
    for round_number in range(rounds):
        stream = Stream(server.url, scene_id, objects, start_value)
        threads, at_kill = stream.run(acked)
        server.kill()
        stream.stop.set()
        for thread in threads:
            thread.join()
        ready_s = server.start()
        objects = every_object(lambda path: get_json(server.url, path), scene_id)
        table = {o["id"]: o["transform"][0][3] for o in objects}
        lost = sum(1 for oid, value in stream.acked.items() if table[oid] < value)
        beyond = sum(1 for oid, value in stream.sent.items() if table[oid] > value)
        half = len({table[oid] for oid in range(GROUP)}) != 1
        opened = re.findall(r"scene %s: (\d+) journaled edits replayed" % scene_id, server_log(server))
        results.append({"round": round_number + 1, "acked_at_kill": at_kill, "lost": lost,
                        "half_batches": int(half), "values_never_sent": beyond, "ready_s": ready_s,
                        "replayed": int(opened[-1]) if opened else 0})
        start_value = max(table.values()) + 1.0e6
    return results


def server_log(server: Server) -> str:
    path = server.data_dir / "server.log"
    return path.read_text() if path.exists() else ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--moves", type=int, default=3000, help="sequential moves")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the 16-connection run")
    parser.add_argument("--rounds", type=int, default=5, help="kill -9 rounds")
    parser.add_argument("--acked", type=int, default=10_000, help="acknowledged edits before each kill")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        data = scratch / "data"
        data.mkdir()
        server = LoggedServer(data, free_port())
        print(f"starting python -m service ({ROOT})", flush=True)
        server.start()
        try:
            started = time.perf_counter()
            scene_id = upload(server.url, city_file(scratch, args.objects))["id"]
            seconds = time.perf_counter() - started
            objects = every_object(lambda path: get_json(server.url, path), scene_id)
            print(f"uploaded {len(objects)} objects in {seconds:.1f} s", flush=True)
            origins = np.array([o["transform"] for o in objects])[:, :3, 3]
            print("1. sequential single moves:", _rounded(sequential_moves(server.url, scene_id, origins,
                                                                         args.moves)), flush=True)
            concurrent = concurrent_moves_wrk if _has_wrk() else concurrent_moves_python
            print("2. 16 connections:", _rounded(concurrent(server.url, scene_id, origins, 16, args.seconds)),
                  flush=True)
            print("3. binary batch of every object:", _rounded(batch_round_trip(server.url, scene_id, origins,
                                                                               20)), flush=True)
            for result in durability_rounds(server, scene_id, args.objects, args.rounds, args.acked):
                print("4. kill -9:", _rounded(result), flush=True)
        finally:
            server.stop()
    return 0


class LoggedServer(Server):
    """:class:`bench.http.Server` with its log kept (``data_dir/server.log``, info level)."""

    def start(self) -> float:
        env = dict(os.environ, PICK_PORT=str(self.port), PICK_HOST="127.0.0.1", PICK_DATA_DIR=str(self.data_dir),
                   PICK_WORKERS=str(self.workers), PICK_LOG_LEVEL="info")
        env.pop("PICK_API_KEY", None)
        start = time.perf_counter()
        with open(self.data_dir / "server.log", "ab") as log:
            self.process = subprocess.Popen([sys.executable, "-m", "service"], cwd=ROOT, env=env, stdout=log,
                                            stderr=log)
        from bench.http import wait_ready

        wait_ready(self.url, timeout=600, process=self.process)
        return time.perf_counter() - start


def _has_wrk() -> bool:
    from shutil import which

    return which("wrk") is not None


def _rounded(result: dict) -> dict:
    return {key: round(value, 3) if isinstance(value, float) else value for key, value in result.items()}


if __name__ == "__main__":
    sys.exit(main())
