"""The live channel (``/scenes/{id}/live``) measured: ``python -m bench.live``.

1. Picks per second on one WebSocket, one ray per message, pipelined (a
   writer thread sends every message while the reader counts answers);
   bar >= 10,000/s.
2. Round trip with one message in flight: p50 and p99; bar p50 <= 0.2 ms.
3. Fan-out: 32 subscribers of one scene, events published through the
   store's ``on_change`` from another thread, as the store does after a
   saved edit; latency from the publish to each subscriber's decoded event,
   p99; bar <= 16 ms.
4. Fan-out of real edits: the same 32 subscribers, against ``python -m
   service``; this process moves object 0 with ``PATCH
   /scenes/{id}/objects/0`` (the time of sending in its x translation);
   latency from sending the edit to each subscriber's decoded event, which
   the service pushes once the edit is durable.

1 and 2 run against ``python -m service`` in a subprocess (uvicorn with the
service's WebSocket options), the mesh of ``bench.http`` (the bunny when
``../shared/meshes`` is there, else the torus). 3 serves the app on a
thread of this process, so that the benchmark can call ``on_change``; the
32 subscribers run in a subprocess of their own, so they do not share this
process's interpreter lock with the server. ``time.monotonic`` is the same
clock in both processes.

The clients speak WebSocket frames by hand (a zero masking key, which
servers accept): a client library would cost more per message than the
server does, and on two cores that would be measured as the server's.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from bench.http import BUNNY, TORUS, Server, free_port, hitting_ray, upload

SUBSCRIBERS = 32


# ---------------------------------------------------------------- frames by hand

def open_socket(port: int, path: str) -> tuple[socket.socket, bytes]:
    """A connected WebSocket (TCP_NODELAY) and the bytes read past the 101 answer."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("the server closed the connection during the handshake")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    if not head.startswith(b"HTTP/1.1 101"):
        raise RuntimeError(f"no upgrade: {head[:200]!r}")
    return sock, rest


def client_frame(payload: bytes, opcode: int = 1) -> bytes:
    """A masked client frame with a zero key (so the payload goes as is)."""
    length = len(payload)
    if length < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
    elif length < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
    return head + b"\0\0\0\0" + payload


class Frames:
    """Server frames (unmasked, unfragmented) out of a byte stream."""

    def __init__(self, data: bytes = b""):
        self.buffer = bytearray(data)

    def feed(self, data: bytes) -> list[bytes]:
        self.buffer += data
        return [payload for _, payload in server_frames(self.buffer)]


def server_frames(buffer: bytearray) -> list[tuple[int, bytes]]:
    """The complete (opcode, payload) frames at the start of ``buffer``, removed from it (the server
    never masks nor fragments its frames)."""
    out = []
    offset = 0
    size = len(buffer)
    while size - offset >= 2:
        opcode = buffer[offset] & 0x0F
        length = buffer[offset + 1] & 0x7F
        start = offset + 2
        if length == 126:
            if size - offset < 4:
                break
            length = int.from_bytes(buffer[start:start + 2], "big")
            start += 2
        elif length == 127:
            if size - offset < 10:
                break
            length = int.from_bytes(buffer[start:start + 8], "big")
            start += 8
        if size < start + length:
            break
        out.append((opcode, bytes(buffer[start:start + length])))
        offset = start + length
    del buffer[:offset]
    return out


def read_frames(sock: socket.socket, frames: Frames, count: int) -> list[bytes]:
    out = frames.feed(b"")
    while len(out) < count:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise RuntimeError("the server closed the connection")
        out += frames.feed(chunk)
    return out


def connected(port: int, scene_id: str) -> tuple[socket.socket, Frames]:
    """A live connection past its hello."""
    sock, rest = open_socket(port, f"/scenes/{scene_id}/live")
    frames = Frames(rest)
    hello = json.loads(read_frames(sock, frames, 1)[0])
    if hello.get("type") != "hello":
        raise RuntimeError(f"expected hello, got {hello}")
    return sock, frames


# ---------------------------------------------------------------- 1 and 2: picks

def pick_frames(origin: list, direction: list, count: int) -> list[bytes]:
    rng = np.random.default_rng(3)
    jitter = rng.normal(0.0, 0.01, (count, 3)) * float(np.linalg.norm(direction))
    return [client_frame(json.dumps({"type": "pick", "id": k, "origin": origin,
                                     "direction": (np.asarray(direction) + jitter[k]).tolist()}).encode())
            for k in range(count)]


def pipelined_rate(port: int, scene_id: str, messages: list[bytes]) -> float:
    sock, frames = connected(port, scene_id)
    with sock:
        payload = b"".join(messages)

        def write():
            view = memoryview(payload)
            for start in range(0, len(view), 65536):
                sock.sendall(view[start:start + 65536])

        writer = threading.Thread(target=write)
        started = time.perf_counter()
        writer.start()
        answers = read_frames(sock, frames, len(messages))
        elapsed = time.perf_counter() - started
        writer.join()
    last = json.loads(answers[-1])
    if last.get("id") != len(messages) - 1 or "result" not in last:
        raise RuntimeError(f"unexpected last answer: {answers[-1][:200]!r}")
    return len(messages) / elapsed


def round_trips(port: int, scene_id: str, messages: list[bytes]) -> np.ndarray:
    sock, frames = connected(port, scene_id)
    out = np.empty(len(messages))
    with sock:
        for k, message in enumerate(messages):
            started = time.perf_counter()
            sock.sendall(message)
            read_frames(sock, frames, 1)
            out[k] = time.perf_counter() - started
    return out


# ---------------------------------------------------------------- 3: fan-out

def subscribe_and_time(port: int, scene_id: str, count: int, events: int) -> None:
    """The subscriber process: ``count`` connections; prints one JSON list of latencies (s)."""
    connections = [connected(port, scene_id) for _ in range(count)]
    print("subscribed", flush=True)
    by_fd = {sock.fileno(): (sock, frames) for sock, frames in connections}
    poller = select.epoll()
    for fd in by_fd:
        poller.register(fd, select.EPOLLIN)
    latencies = []
    expected = count * events
    deadline = time.monotonic() + 120
    while len(latencies) < expected and time.monotonic() < deadline:
        for fd, _ in poller.poll(1.0):
            sock, frames = by_fd[fd]
            for frame in frames.feed(sock.recv(1 << 20)):
                now = time.monotonic()
                event = json.loads(frame)
                if event.get("type") == "event":
                    moved = event["objects"][0]
                    # A published event carries its time; a real edit, in its x translation.
                    sent = moved["sent"] if "sent" in moved else moved["transform"][0][3]
                    latencies.append(now - sent)
    print(json.dumps(latencies), flush=True)


def start_subscribers(port: int, scene_id: str, events: int) -> subprocess.Popen:
    """The subscriber process (:func:`subscribe_and_time`), once its connections are open."""
    subscribers = subprocess.Popen([sys.executable, "-m", "bench.live", "--subscriber", str(port), scene_id,
                                    str(SUBSCRIBERS), str(events)], stdout=subprocess.PIPE, text=True,
                                   cwd=Path(__file__).resolve().parents[1])
    if subscribers.stdout.readline().strip() != "subscribed":
        subscribers.kill()
        raise RuntimeError("the subscriber process failed")
    return subscribers


def fan_out(mesh_path: Path, events: int, interval: float) -> np.ndarray:
    import uvicorn

    from service.__main__ import websocket_options
    from service.app import create_app
    from service.settings import Settings

    settings = Settings(data_dir=Path(tempfile.mkdtemp(prefix="pick-bench-live-")), log_level="warning")
    app = create_app(settings)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           access_log=False, **websocket_options(settings)))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    from bench.http import wait_ready

    wait_ready(f"http://127.0.0.1:{port}", timeout=600, every_kernel=True)
    scene_id = upload(f"http://127.0.0.1:{port}", mesh_path)["id"]
    subscribers = start_subscribers(port, scene_id, events)
    try:
        on_change = app.state.store.on_change

        def publish():
            for version in range(1, events + 1):
                time.sleep(interval)
                on_change(scene_id, {"event": "moved", "version": version,
                                     "objects": [{"id": 0, "name": "bunny", "sent": time.monotonic()}]})

        publisher = threading.Thread(target=publish)
        publisher.start()
        publisher.join()
        latencies = np.array(json.loads(subscribers.stdout.readline()))
    finally:
        subscribers.wait(timeout=150)
        server.should_exit = True
        thread.join(timeout=30)
    if latencies.size != SUBSCRIBERS * events:
        raise RuntimeError(f"{latencies.size} events received of {SUBSCRIBERS * events}")
    return latencies


def edit_fan_out(port: int, scene_id: str, events: int, interval: float) -> np.ndarray:
    """Seconds from sending each of ``events`` PATCH moves of object 0 to each subscriber's event."""
    subscribers = start_subscribers(port, scene_id, events)
    try:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            stream = sock.makefile("rb")
            for _ in range(events):
                time.sleep(interval)
                body = json.dumps({"transform": [[1, 0, 0, time.monotonic()], [0, 1, 0, 0], [0, 0, 1, 0],
                                                 [0, 0, 0, 1]]}).encode()
                sock.sendall(f"PATCH /scenes/{scene_id}/objects/0 HTTP/1.1\r\nHost: bench\r\n"
                             f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                             + body)
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    head += stream.readline()
                if not head.startswith(b"HTTP/1.1 200"):
                    raise RuntimeError(f"the move answered {head[:40]!r}")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                stream.read(length)
        latencies = np.array(json.loads(subscribers.stdout.readline()))
    finally:
        subscribers.wait(timeout=150)
    if latencies.size != SUBSCRIBERS * events:
        raise RuntimeError(f"{latencies.size} events received of {SUBSCRIBERS * events}")
    return latencies


# ---------------------------------------------------------------- main

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mesh", type=Path, help="mesh file (default: the bunny, else the torus)")
    parser.add_argument("--messages", type=int, default=50_000, help="pipelined picks per run")
    parser.add_argument("--rounds", type=int, default=3, help="pipelined runs; best kept")
    parser.add_argument("--round-trips", type=int, default=5_000)
    parser.add_argument("--events", type=int, default=200, help="events published for the fan-out")
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between published events")
    parser.add_argument("--subscriber", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.subscriber:
        port, scene_id, count, events = args.subscriber
        subscribe_and_time(int(port), scene_id, int(count), int(events))
        return 0

    mesh_path = args.mesh or (BUNNY if BUNNY.exists() else TORUS)
    server = Server(Path(tempfile.mkdtemp(prefix="pick-bench-live-")), free_port())
    print(f"starting python -m service on {server.url} ...", flush=True)
    server.start()
    rows = []
    try:
        scene = upload(server.url, mesh_path)
        origin, direction = hitting_ray(scene["bounds"])
        messages = pick_frames(origin, direction, args.messages)
        # A first pass loads the kernels and warms the connection's path.
        pipelined_rate(server.port, scene["id"], messages[:2000])
        rates = [pipelined_rate(server.port, scene["id"], messages) for _ in range(args.rounds)]
        rows.append((f"picks, one WebSocket, pipelined ({args.messages:,} messages, best of {args.rounds})",
                     f"{max(rates):,.0f} picks/s", "bar >= 10,000/s"))
        times = round_trips(server.port, scene["id"], messages[:args.round_trips]) * 1e3
        rows.append(("pick round trip, one message in flight",
                     f"p50 {np.percentile(times, 50):.3f} ms, p99 {np.percentile(times, 99):.3f} ms",
                     "bar p50 <= 0.2 ms"))
        edits = edit_fan_out(server.port, scene["id"], args.events, args.interval) * 1e3
        rows.append((f"edit fan-out, {SUBSCRIBERS} subscribers, {args.events} PATCH moves",
                     f"p50 {np.percentile(edits, 50):.2f} ms, p99 {np.percentile(edits, 99):.2f} ms, "
                     f"max {edits.max():.2f} ms", "bar p99 <= 16 ms"))
    finally:
        server.stop()
    latencies = fan_out(mesh_path, args.events, args.interval) * 1e3
    rows.append((f"event fan-out, {SUBSCRIBERS} subscribers, {args.events} events",
                 f"p50 {np.percentile(latencies, 50):.2f} ms, p99 {np.percentile(latencies, 99):.2f} ms, "
                 f"max {latencies.max():.2f} ms", "bar p99 <= 16 ms"))
    print(f"mesh: {mesh_path.name}")
    for name, value, note in rows:
        print(f"{name:<70} {value:<36} {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
