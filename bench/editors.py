"""``python -m bench.load --mix editors``: editors working together on one scene over the live channel.

``--editors`` simulated editors (default 32) on one scene of ``--objects``
boxes (default 10,000: ``bench.moves.city_file``, one box placed that many
times), each with its own WebSocket to ``/scenes/{id}/live``, as the viewer
has:

- hover, 60 Hz: a pick message, a ray from outside the scene into it;
- drag, 60 Hz (half a tick after the hover): an edit message moving the
  editor's own box a small step along x (back and forth within half a unit,
  so the boxes never overlap);
- a binary batch of 256 rays straight down, every ``--batch-every`` s
  (default 1);
- a rectangle selection, ``POST /scenes/{id}/select`` over a keep-alive HTTP
  connection of its own, every ``--select-every`` s (default 2).

As the viewer does, each kind keeps at most one request in flight: a tick
that finds the previous one unanswered is skipped (counted), never queued.
Each editor also receives every other editor's moves as ``moved`` events:
fan-out latency is from the edit sent by one editor to the event decoded by
another, matched by object id and the edit's x translation (values k/1024,
exact in binary, unique over 512 steps, and a step every 1/60 s repeats a
value after 8.5 s, long after its events arrived).

The client is one asyncio process writing WebSocket frames by hand (masked
with a zero key, as ``bench.live`` does; pings answered) and decoding only
what it measures, so that it takes little of the CPU it shares with the
server; its CPU is reported. Figures: per kind requests, p50/p95/p99 and
errors; skipped ticks; edits/s; fan-out p50/p99; the server's RSS every
second and its spread after ``--memory-mark`` s; client and server CPU; and
the bars of issue 15 (0 errors, hover p99 <= 20 ms, move p99 <= 30 ms, RSS
within +-5% after the first 10 s).
"""

from __future__ import annotations

import array
import asyncio
import base64
import gc
import json
import math
import os
import socket
import struct
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson

from bench import load_support
from bench.http import every_object
from bench.live import client_frame, server_frames
from bench.load_support import format_mb, format_ms
from bench.moves import city_file

KINDS = ("hover", "move", "batch", "select")
LABELS = {"hover": "hover pick (WS)", "move": "object move (WS edit)", "batch": "drop batch, 256 rays (WS binary)",
          "select": "rectangle select (HTTP)"}
HOVER_HZ = 60.0
MOVE_HZ = 60.0
BATCH_RAYS = 256
HOVER_POOL = 256
MOVE_STEPS = 512            # distinct x offsets of a drag: k / 1024 for k < 512
MAGIC = b"PKB1"
BARS = {"errors": 0, "hover_p99_ms": 20.0, "move_p99_ms": 30.0, "rss_percent": 5.0}
MAX_EDITORS = 256

OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 1, 2, 8, 9, 10


@dataclass
class Tally:
    latencies: array.array = field(default_factory=lambda: array.array("d"))   # seconds
    sent: array.array = field(default_factory=lambda: array.array("d"))        # when, seconds into the run
    errors: int = 0
    causes: dict[str, int] = field(default_factory=dict)
    skipped: int = 0


class Run:
    """What every editor shares: the tallies, the clock, the moves awaiting their events."""

    def __init__(self, duration: float):
        self.duration = duration
        self.tallies = {kind: Tally() for kind in KINDS}
        self.fan_out = array.array("d")
        #: (object id, x translation) of a move -> when it was sent.
        self.moves_sent: dict[tuple[int, float], float] = {}
        self.events = 0
        self.resyncs = 0
        self.samples: list[dict] = []
        self.started = 0.0
        self.deadline = 0.0
        self.elapsed = 0.0

    def error(self, kind: str, cause: str, detail: str = "") -> None:
        tally = self.tallies[kind]
        tally.errors += 1
        tally.causes[cause] = tally.causes.get(cause, 0) + 1
        if len(self.samples) < load_support.ERROR_SAMPLES:
            self.samples.append({"kind": kind, "cause": cause, "detail": detail[:500]})


class Editor:
    """One editor: a WebSocket for hovers, moves and batches, an HTTP connection for selections."""

    def __init__(self, run: Run, index: int, target: load_support.Target, scene_id: str, api_key: str | None,
                 own: dict, hovers: list[bytes], batch: bytes, selects: list[bytes], rng: np.random.Generator,
                 batch_every: float, select_every: float):
        self.run = run
        self.batch_every = batch_every
        self.select_every = select_every
        self.index = index
        self.target = target
        self.scene_id = scene_id
        self.api_key = api_key
        self.own = own["id"]
        self.own_x = float(own["transform"][0][3])
        self.move_frames = []
        self.move_keys = []
        for step in range(MOVE_STEPS):
            # Back and forth, as a hand on a gizmo: 0, 1/1024, ..., 255/1024, 256/1024, 255/1024 ... never
            # the same value twice in a row.
            k = step if step < MOVE_STEPS // 2 else MOVE_STEPS - step
            transform = [list(map(float, row)) for row in own["transform"]]
            transform[0][3] = self.own_x + k / 1024
            self.move_keys.append((self.own, transform[0][3]))
            self.move_frames.append(client_frame(orjson.dumps(
                {"type": "edit", "id": 0, "objects": [{"id": self.own, "transform": transform}]})))
        self.hovers = hovers
        self.batch = batch
        self.selects = selects
        self.phase = float(rng.uniform(0, 1 / HOVER_HZ))
        self.batch_phase = float(rng.uniform(0, batch_every))
        self.select_phase = float(rng.uniform(0, select_every))
        self.writer: asyncio.StreamWriter | None = None
        # In flight, per kind: (send time, detail) or None; answers come in the order sent.
        self.in_flight: dict[str, tuple[float, object] | None] = {"hover": None, "move": None, "batch": None}
        self.order: list[str] = []
        self.closed = False
        self.receiving: asyncio.Task | None = None

    # ------------------------------------------------------------ the socket
    async def connect(self) -> asyncio.StreamReader:
        reader, writer = await asyncio.open_connection(self.target.host, self.target.port)
        writer.transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        auth = f"Authorization: Bearer {self.api_key}\r\n" if self.api_key else ""
        writer.write((f"GET {self.target.prefix}/scenes/{self.scene_id}/live HTTP/1.1\r\n"
                      f"Host: {self.target.host_header}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{auth}\r\n").encode())
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise RuntimeError(f"editor {self.index}: no upgrade: {head[:200]!r}")
        self.writer = writer
        return reader

    async def receive(self, reader: asyncio.StreamReader, hello: asyncio.Future) -> None:
        """Every frame the server sends: hello, answers in order, events."""
        buffer = bytearray()
        run = self.run
        moves_sent = run.moves_sent
        own = self.own
        clock = time.perf_counter
        while True:
            chunk = await reader.read(1 << 18)
            if not chunk:
                if not self.closed:
                    self._lost("the server closed the connection")
                return
            buffer += chunk
            for opcode, payload in server_frames(buffer):
                now = clock()
                if opcode == OP_PING:
                    self.writer.write(client_frame(payload, OP_PONG))
                    continue
                if opcode == OP_CLOSE:
                    if not self.closed:
                        self._lost(f"the server closed the WebSocket: {payload[:200]!r}")
                    return
                if opcode == OP_BINARY:
                    self._answered("batch", now, payload)
                    continue
                if payload.startswith(b'{"type":"event"'):
                    run.events += 1
                    event = orjson.loads(payload)
                    if event["event"] in ("moved", "changed"):
                        for info in event["objects"]:
                            oid = info["id"]
                            if oid != own:
                                sent = moves_sent.get((oid, info["transform"][0][3]))
                                if sent is not None:
                                    run.fan_out.append(now - sent)
                    continue
                if payload.startswith(b'{"type":"pick"'):
                    self._answered("hover", now, payload)
                elif payload.startswith(b'{"type":"edit"'):
                    self._answered("move", now, payload)
                elif payload.startswith(b'{"type":"hello"'):
                    hello.set_result(orjson.loads(payload)["version"])
                elif payload.startswith(b'{"type":"resync"'):
                    run.resyncs += 1
                else:
                    kind = self.order[0] if self.order else "hover"
                    self._answered(kind, now, payload, error=payload.decode(errors="replace"))

    def _answered(self, kind: str, now: float, payload: bytes, error: str | None = None) -> None:
        expected = self.order.pop(0) if self.order else None
        if expected != kind:
            self.run.error(kind, "an answer out of order", f"expected {expected}, got {payload[:200]!r}")
            return
        sent, _ = self.in_flight[kind]
        self.in_flight[kind] = None
        if error is not None:
            self.run.error(kind, "error message", error)
        elif kind == "batch" and len(payload) != 8 + BATCH_RAYS * load_support.RECORD_BYTES:
            self.run.error(kind, "wrong answer size", f"{len(payload)} bytes")
        else:
            tally = self.run.tallies[kind]
            tally.latencies.append(now - sent)
            tally.sent.append(sent - self.run.started)

    def _lost(self, cause: str) -> None:
        self.closed = True
        for kind, flight in self.in_flight.items():
            if flight is not None:
                self.run.error(kind, cause)
                self.in_flight[kind] = None

    def _send(self, kind: str, frame: bytes) -> bool:
        """Send unless one of the kind is in flight (then the tick is skipped, as the viewer drops it)."""
        if self.in_flight[kind] is not None:
            self.run.tallies[kind].skipped += 1
            return False
        self.in_flight[kind] = (time.perf_counter(), None)
        self.order.append(kind)
        self.writer.write(frame)
        return True

    # ------------------------------------------------------------ the work
    async def greeted(self) -> None:
        """Connected, the hello received (only its version is used: at most ``PICK_INLINE_OBJECTS``
        objects, and this editor's come from ``bench.http.every_object``), and a first pick and move
        answered: before the clock starts, since a hello of a large scene costs the server more than many edits,
        and the scene's first edits (its journal opened) stall the server for a moment."""
        reader = await self.connect()
        hello = asyncio.get_running_loop().create_future()
        self.receiving = asyncio.create_task(self.receive(reader, hello))
        await asyncio.wait_for(hello, 120)
        self._send("hover", self.hovers[-1])
        self._send("move", self.move_frames[0])
        deadline = time.perf_counter() + 60
        while any(self.in_flight.values()) and time.perf_counter() < deadline and not self.closed:
            await asyncio.sleep(0.01)

    async def work(self) -> None:
        run = self.run
        receiving = self.receiving
        selecting = asyncio.create_task(self.select_loop())
        try:
            tick = 0
            step = 0
            next_batch = run.started + self.batch_phase if self.batch_every else math.inf
            half = 0.5 / HOVER_HZ
            while not self.closed:
                due = run.started + self.phase + tick / HOVER_HZ
                if due >= run.deadline:
                    break
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                self._send("hover", self.hovers[tick % len(self.hovers)])
                await asyncio.sleep(max(0.0, due + half - time.perf_counter()))
                frame = self.move_frames[step % MOVE_STEPS]
                key = self.move_keys[step % MOVE_STEPS]
                if self.in_flight["move"] is None:
                    run.moves_sent[key] = time.perf_counter()
                if self._send("move", frame):
                    step += 1
                if time.perf_counter() >= next_batch:
                    self._send("batch", self.batch)
                    next_batch += self.batch_every
                tick += 1
            # The last answers, then a clean close.
            grace = time.perf_counter() + 10
            while any(self.in_flight.values()) and time.perf_counter() < grace and not self.closed:
                await asyncio.sleep(0.01)
            for kind, flight in self.in_flight.items():
                if flight is not None:
                    run.error(kind, "no answer within 10 s of the end")
            self.closed = True
            self.writer.write(client_frame(struct.pack("!H", 1000), OP_CLOSE))
            await selecting
        finally:
            receiving.cancel()
            selecting.cancel()
            if self.writer is not None:
                self.writer.close()

    async def select_loop(self) -> None:
        run = self.run
        reader = writer = None
        if not self.select_every:
            return
        due = run.started + self.select_phase
        count = 0
        try:
            while due < run.deadline:
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                due += self.select_every
                request = self.selects[count % len(self.selects)]
                count += 1
                try:
                    if writer is None:
                        reader, writer = await asyncio.open_connection(self.target.host, self.target.port)
                    sent = time.perf_counter()
                    writer.write(request)
                    status, body, close = await asyncio.wait_for(load_support.read_answer(reader), 30)
                    if 200 <= status < 300:
                        run.tallies["select"].latencies.append(time.perf_counter() - sent)
                        run.tallies["select"].sent.append(sent - run.started)
                    else:
                        run.error("select", f"HTTP {status}", body[:300].decode(errors="replace"))
                    if close:
                        writer.close()
                        writer = None
                except (OSError, EOFError, asyncio.IncompleteReadError, asyncio.TimeoutError, ValueError) as error:
                    run.error("select", type(error).__name__, str(error))
                    if writer is not None:
                        writer.transport.abort()
                    writer = None
        finally:
            if writer is not None:
                writer.close()


# ---------------------------------------------------------------- requests, built before the run

def build_requests(scene: dict, target: load_support.Target, api_key: str | None, rng: np.random.Generator, count: int):
    """Per editor: hover frames, a batch frame, select requests."""
    lo, hi = (np.asarray(corner, np.float64) for corner in scene["bounds"])
    sample = load_support.SampleScene("city", scene["id"], lo, hi, scene["objects"], scene["triangles"])
    editors = []
    for index in range(count):
        hovers = []
        for k in range(HOVER_POOL):
            origin = load_support.outside_point(sample, rng)
            direction = load_support.inside_point(sample, rng) - origin
            hovers.append(client_frame(orjson.dumps({"type": "pick", "id": k, "origin": load_support.rounded(origin),
                                                     "direction": load_support.rounded(direction)})))
        # Straight down onto the boxes (the grid lies in the x-z plane, y up).
        xz = lo[[0, 2]] + rng.random((BATCH_RAYS, 2)) * (hi - lo)[[0, 2]]
        rays = np.zeros((BATCH_RAYS, 6), np.float32)
        rays[:, 0], rays[:, 1], rays[:, 2], rays[:, 4] = xz[:, 0], hi[1] + 1.0, xz[:, 1], -1.0
        batch = client_frame(MAGIC + struct.pack("<I", index) + rays.astype("<f4").tobytes(), OP_BINARY)
        selects = []
        for _ in range(8):
            camera = load_support.pinhole(sample, rng)
            camera["up"] = [0, 1, 0]
            width, height = rng.uniform(8, 400), rng.uniform(8, 300)
            x0, y0 = rng.uniform(0, load_support.IMAGE[0] - width), rng.uniform(0, load_support.IMAGE[1] - height)
            body = orjson.dumps({**camera, "rect": load_support.rounded([x0, y0, x0 + width, y0 + height], 1)})
            selects.append(load_support.http_request(target, "POST", f"/scenes/{scene['id']}/select", body,
                                             "application/json", api_key))
        editors.append((hovers, batch, selects))
    return editors


# ---------------------------------------------------------------- figures

def _row(seconds, errors: int, skipped: int, elapsed: float) -> dict:
    ms = np.frombuffer(seconds, np.float64) * 1e3 if len(seconds) else np.empty(0)
    row = {"requests": int(ms.size) + errors, "ok": int(ms.size), "errors": errors, "skipped": skipped,
           "per_s": (ms.size + errors) / elapsed if elapsed else 0.0}
    for p in (50, 95, 99):
        row[f"p{p}_ms"] = float(np.percentile(ms, p)) if ms.size else None
    row["max_ms"] = float(ms.max()) if ms.size else None
    return row


def timeline(run: Run) -> list[dict]:
    """Per second of the run: hovers and moves answered, and their p99 (ms): where the tail comes from."""
    out = []
    columns = {}
    for kind in ("hover", "move"):
        tally = run.tallies[kind]
        columns[kind] = (np.frombuffer(tally.sent, np.float64) if len(tally.sent) else np.empty(0),
                         np.frombuffer(tally.latencies, np.float64) * 1e3 if len(tally.latencies) else np.empty(0))
    for second in range(int(np.ceil(run.duration))):
        row = {"s": second}
        for kind, (sent, ms) in columns.items():
            chosen = ms[(sent >= second) & (sent < second + 1)]
            row[kind] = int(chosen.size)
            row[f"{kind}_p99_ms"] = round(float(np.percentile(chosen, 99)), 1) if chosen.size else None
        out.append(row)
    return out


def memory_spread(sampler: load_support.MemorySampler, mark: float, duration: float) -> dict:
    """The RSS samples from ``mark`` s to the end of the load against the one at ``mark``: the largest
    deviation, in percent (the sample taken once the editors have closed their sockets is left out)."""
    report = sampler.report(mark, load_support.MAX_DURATION)
    if not report.get("known"):
        return report
    later = [rss for t, rss, _, _ in sampler.samples if mark + 0.5 < t < duration]
    base = report["rss_at_mark"]
    low = min(later, default=base)
    high = max(later, default=base)
    report["min_percent_after_mark"] = round((low - base) / base * 100, 2)
    report["max_percent_after_mark"] = round((high - base) / base * 100, 2)
    report["within_percent"] = BARS["rss_percent"]
    report["within"] = max(abs(low - base), abs(high - base)) <= base * BARS["rss_percent"] / 100
    report.pop("stable", None)
    report.pop("stable_threshold_percent", None)
    return report


def figures(run: Run, sampler, mark: float, client_cpu: float, server_cpu, editors: int, scene: dict) -> dict:
    rows = {kind: _row(run.tallies[kind].latencies, run.tallies[kind].errors, run.tallies[kind].skipped, run.elapsed)
            for kind in KINDS}
    for kind in KINDS:
        rows[kind]["causes"] = run.tallies[kind].causes
    fan = np.frombuffer(run.fan_out, np.float64) * 1e3 if len(run.fan_out) else np.empty(0)
    fan_out = {"samples": int(fan.size), "p50_ms": float(np.percentile(fan, 50)) if fan.size else None,
               "p99_ms": float(np.percentile(fan, 99)) if fan.size else None,
               "max_ms": float(fan.max()) if fan.size else None, "events": run.events, "resyncs": run.resyncs}
    errors = sum(row["errors"] for row in rows.values())
    memory = (memory_spread(sampler, min(mark, run.duration), run.duration) if sampler is not None
              else {"known": False})
    bars = {
        "errors": {"value": errors, "bar": BARS["errors"], "met": errors == BARS["errors"]},
        "hover_p99_ms": {"value": rows["hover"]["p99_ms"], "bar": BARS["hover_p99_ms"],
                         "met": rows["hover"]["p99_ms"] is not None and rows["hover"]["p99_ms"] <= BARS["hover_p99_ms"]},
        "move_p99_ms": {"value": rows["move"]["p99_ms"], "bar": BARS["move_p99_ms"],
                        "met": rows["move"]["p99_ms"] is not None and rows["move"]["p99_ms"] <= BARS["move_p99_ms"]},
        "rss_within_percent": {"value": [memory.get("min_percent_after_mark"), memory.get("max_percent_after_mark")],
                               "bar": BARS["rss_percent"], "met": bool(memory.get("within"))},
    }
    return {"mode": "editors", "editors": editors, "duration_s": run.elapsed,
            "scene": {"id": scene["id"], "objects": len(scene["objects"]), "triangles": scene["triangles"]},
            "kinds": rows, "edits_per_s": rows["move"]["ok"] / run.elapsed if run.elapsed else 0.0,
            "fan_out": fan_out, "errors": errors, "error_samples": run.samples, "memory": memory,
            "client_cpu_cores": client_cpu / run.elapsed if run.elapsed else None,
            "server_cpu_cores": None if server_cpu is None else server_cpu / run.elapsed, "bars": bars,
            "timeline": timeline(run)}


def print_report(report: dict, cpu_count: int) -> str:
    header = f"{'kind':<34} {'requests':>9} {'per s':>8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'errors':>7} " \
             f"{'skipped':>8}"
    print(header)
    print("-" * len(header))
    for kind in KINDS:
        row = report["kinds"][kind]
        print(f"{LABELS[kind]:<34} {row['requests']:>9,} {row['per_s']:>8.1f} {format_ms(row['p50_ms']):>8} "
              f"{format_ms(row['p99_ms']):>8} {format_ms(row['max_ms']):>8} {row['errors']:>7,} {row['skipped']:>8,}")
    fan = report["fan_out"]
    print(f"\nfan-out (a move sent by one editor -> its moved event decoded by another): {fan['samples']:,} "
          f"samples, p50 {format_ms(fan['p50_ms'])} ms, p99 {format_ms(fan['p99_ms'])} ms, max "
          f"{format_ms(fan['max_ms'])} ms; {fan['events']:,} event frames received, {fan['resyncs']} resyncs")
    memory = report["memory"]
    if memory.get("known"):
        print(f"server RSS at {memory['mark_s']:g} s {format_mb(memory['rss_at_mark'])}, then "
              f"{memory['min_percent_after_mark']:+.1f}% to {memory['max_percent_after_mark']:+.1f}% of it up to "
              f"{memory['end_s']:g} s (end {format_mb(memory['rss_at_end'])}, peak "
              f"{format_mb(memory['peak_rss_to_end'])})")
        print("  RSS over time (s, MB): " + ", ".join(f"{t:.0f}: {rss / load_support.MB:.0f}"
                                                    for t, rss in memory["samples"][::5]))
    else:
        print("server memory: unknown (give --pid with --url to read it from /proc)")
    slow = sorted(report["timeline"], key=lambda row: -(row["move_p99_ms"] or 0))[:3]
    print("  slowest seconds (move p99): " + ", ".join(f"{row['s']}-{row['s'] + 1} s {format_ms(row['move_p99_ms'])} ms "
                                                        f"({row['move']} moves)" for row in slow))
    cpu = f"client CPU {report['client_cpu_cores']:.2f} cores"
    if report["server_cpu_cores"] is not None:
        cpu += f", server CPU {report['server_cpu_cores']:.2f} cores"
    print(f"{cpu} ({cpu_count} cores on this machine)")
    def shown(value) -> str:
        if isinstance(value, list):
            return " to ".join("-" if v is None else f"{v:+.1f}%" for v in value)
        return format_ms(value) if isinstance(value, float) else str(value)

    print("bars: " + "; ".join(f"{name} {shown(value['value'])} (bar {value['bar']:g}): "
                               f"{'met' if value['met'] else 'NOT met'}" for name, value in report["bars"].items()))
    if report["errors"]:
        print("first errors:")
        for sample in report["error_samples"]:
            print(f"  [{sample['kind']}] {sample['cause']}: {sample['detail'][:300]}")
    kinds = report["kinds"]
    line = (f"editors: {report['duration_s']:.1f} s, {report['editors']} editors, {report['scene']['objects']:,} "
            f"objects, {report['errors']:,} errors, hover p99 {format_ms(kinds['hover']['p99_ms'])} ms, move p99 "
            f"{format_ms(kinds['move']['p99_ms'])} ms, {report['edits_per_s']:.0f} edits/s, fan-out p99 "
            f"{format_ms(fan['p99_ms'])} ms, client CPU {report['client_cpu_cores']:.2f} cores")
    print()
    print(line)
    return line


# ---------------------------------------------------------------- main

async def _drive(run: Run, editors: list[Editor], sampler, pid: int | None) -> tuple[float, float | None]:
    """Greet every editor, then run them; client and server CPU seconds over the run."""
    greeting = time.perf_counter()
    await asyncio.gather(*(editor.greeted() for editor in editors))
    print(f"{len(editors)} editors connected, greeted and warmed up in {time.perf_counter() - greeting:.1f} s",
          flush=True)
    # The client measures the server, so its own pauses must not show in the figures: the
    # glTF it built and the libraries it loaded are some hundreds of thousands of objects,
    # and each full collection walked them all, a 60-90 ms stall of every editor about
    # every 5 s (read with gc.callbacks). Frozen, they are never walked again.
    gc.collect()
    gc.freeze()
    # The warm-up's figures are not the load's.
    run.tallies = {kind: Tally() for kind in KINDS}
    run.fan_out = array.array("d")
    run.events = run.resyncs = 0
    run.samples.clear()
    client_cpu = load_support.client_cpu_seconds()
    server_cpu = load_support.cpu_seconds(pid) if pid is not None else None
    run.started = time.perf_counter()
    run.deadline = run.started + run.duration
    sampling = None
    try:
        sampling = asyncio.create_task(sampler(run.started)) if sampler else None
        for task in [asyncio.create_task(editor.work()) for editor in editors]:
            await task
        return (load_support.client_cpu_seconds() - client_cpu,
                None if pid is None else load_support.cpu_seconds(pid) - server_cpu)
    finally:
        run.elapsed = time.perf_counter() - run.started
        if sampling is not None:
            sampling.cancel()
            try:
                await sampling
            except asyncio.CancelledError:
                pass


def main(args) -> int:
    def log(message: str) -> None:
        print(message, flush=True)

    server = None
    http = None
    uploaded = None
    try:
        if args.url:
            try:
                target = load_support.loopback_target(args.url)
            except load_support.NotLoopback as error:
                print(f"bench.load: refusing {error}", file=sys.stderr)
                return 2
            api_key = args.api_key or os.environ.get("PICK_API_KEY")
            pid = args.pid
        else:
            server = load_support.Server(args.workers, sample_scenes=False)
            log(f"starting python -m service on {server.url} (PICK_WORKERS={args.workers}, data in "
                f"{server.data_dir}) ...")
            ready = server.start(args.ready_timeout, not args.no_kernel_wait)
            log(f"ready in {ready:.1f} s" if args.no_kernel_wait else
                f"ready, every kernel compiled or loaded, in {ready:.1f} s")
            target = load_support.loopback_target(server.url)
            api_key = None
            pid = server.process.pid
        http = load_support.Http(target, api_key)
        with tempfile.TemporaryDirectory(prefix="pick-editors-") as scratch:
            built = time.perf_counter()
            path = city_file(Path(scratch), args.objects)
            log(f"a glTF of {args.objects:,} boxes in {time.perf_counter() - built:.1f} s; uploading ...")
            uploaded = http.upload(path)["id"]
        scene = http.json("GET", f"/scenes/{uploaded}")
        scene["objects"] = every_object(lambda path: http.json("GET", path), uploaded)
        rng = np.random.default_rng(args.seed)
        requests = build_requests(scene, target, api_key, rng, args.editors)
        # Each editor drags its own box, spread over the scene.
        stride = max(1, len(scene["objects"]) // args.editors)
        owned = [scene["objects"][k * stride] for k in range(args.editors)]
        run = Run(args.duration)
        editors = [Editor(run, k, target, uploaded, api_key, owned[k], *requests[k], rng, args.batch_every,
                          args.select_every) for k in range(args.editors)]
        sampler = load_support.MemorySampler(pid) if pid is not None else None
        log(f"editors: {args.duration:g} s, {args.editors} editors on {len(scene['objects']):,} objects, each "
            f"hovering at {HOVER_HZ:g} Hz and dragging at {MOVE_HZ:g} Hz over its WebSocket, a batch every "
            f"{args.batch_every:g} s, a selection every {args.select_every:g} s (0: none) ...")
        client_cpu, server_cpu = asyncio.run(_drive(run, editors, sampler, pid))
        report = figures(run, sampler, args.memory_mark, client_cpu, server_cpu, args.editors, scene)
        report["select_every_s"], report["batch_every_s"] = args.select_every, args.batch_every
        print()
        report["summary"] = print_report(report, os.cpu_count())
        if args.json:
            args.json.write_text(json.dumps(report, indent=2) + "\n")
        return 1 if report["errors"] else 0
    finally:
        if server is not None:
            server.stop()
        elif http is not None and uploaded is not None:
            try:
                http.call("DELETE", f"/scenes/{uploaded}")
            except OSError as error:
                print(f"bench.load: could not delete the scene uploaded: {error}", file=sys.stderr)
