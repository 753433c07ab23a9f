"""Load test of the picking service: an editor's mix of requests over the sample scenes.

Run it with::

    python -m bench.load                           # starts python -m service here, 60 s, 64 connections
    python -m bench.load --duration 10 --connections 16
    python -m bench.load --url http://127.0.0.1:8000 [--pid 1234]   # a running server (loopback only)
    python -m bench.load --mix editors [--editors 32]   # editors on one scene over the live channel

Without ``--url`` it starts ``python -m service`` (this interpreter) on a free
loopback port with a temporary ``PICK_DATA_DIR`` and ``PICK_SAMPLE_SCENES=true``,
waits for ``/ready``, and stops it at the end (SIGINT, then SIGKILL). Scenes are
the sample files (``sample_meshes.ALL``), found by name in ``GET /scenes``; any
that is missing is uploaded (and, on a server given by ``--url``, deleted again
afterwards; moved objects are put back too).

What it sends: ``--connections`` keep-alive HTTP/1.1 connections, each sending
one request at a time, the kind drawn by weight from a fixed schedule:

- hover pick, 70%: ``POST /scenes/{id}/pick``, one ray from a camera outside a
  scene's box to a random point inside it;
- camera pick, 10%: ``POST /scenes/{id}/pick/camera``, a pinhole camera, 1-4 pixels;
- drop to ground, 8%: ``POST /scenes/{id}/pick/batch``, 256 rays straight down
  (-z) over the terrain or the city block, as JSON (6%) or binary float32 (2%);
- rectangle select, 8%: ``POST /scenes/{id}/select``, a random marquee
  (objects, or a quarter of the time triangles);
- object move, 4%: ``PATCH /scenes/{id}/objects/{oid}``, a city-block building
  set to one of four transforms within 0.5 m of where it stood (no drift).

Every request is serialised before the timed run (a pool of ``--pool`` bodies
per kind) and the client is raw asyncio sockets, so the client costs little of
the CPU it shares with the server. The run is bounded by ``--duration`` and by
``--max-requests``; a request that gets no answer within ``--request-timeout``
counts as an error.

What it measures: per kind, requests, req/s, latency p50/p95/p99 (send to last
byte of the answer, on the client) and errors (any non-2xx status, a refused or
dropped connection, a timeout, a binary answer of the wrong size); the server's
memory (RSS of the process and its children from ``/proc``, sampled every
second: RSS and peak at 10 s and at the end, "stable" when the growth from 10 s
to the end is under ``--stable-growth`` percent); client and server CPU; and a
one-line summary starting with ``load:``. MB are 2**20 bytes. Exit status 1 when
any request failed. ``--json FILE`` writes every figure and the five slowest
requests of each kind (with their bodies); ``--show-slowest N`` prints them;
``--mix move=0`` (say) changes the weights.

``--mix editors`` is another load altogether: ``--editors`` editors hovering,
dragging their own box, selecting and dropping batches on one scene of
``--objects`` boxes over WebSockets, with fan-out latency and the bars of
issue 15 (see ``bench/editors.py``).

On a 2-core machine the server (one worker) is the bottleneck: the client uses
about 0.1 of a core. Closed loop: a connection waits for each answer, so a kind
that queues (moves of one scene are serialised and saved one by one) holds
more of the connections than its share of the requests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.load_support import (ERROR_SAMPLES, IMAGE, MAX_CONNECTIONS, MAX_DURATION, MAX_REQUESTS,  # noqa: E402
                                MB, RECORD_BYTES, Http, MemorySampler, NotLoopback, SampleScene, Server, Target,
                                client_cpu_seconds, cpu_seconds, find_scenes, format_mb, format_ms, http_request,
                                inside_point, loopback_target, memory, outside_point, pinhole, read_answer, rounded)

KINDS = ("hover", "camera", "drop", "drop_bin", "select", "move")
LABELS = {
    "hover": "hover pick",
    "camera": "camera pick (1-4 px)",
    "drop": "drop to ground, JSON",
    "drop_bin": "drop to ground, binary",
    "select": "rectangle select",
    "move": "object move",
}
#: The ``--mix`` of the other mode: editors on one scene over the live channel (``bench/editors.py``).
EDITORS = "editors"
#: Percent of requests of each kind.
WEIGHTS = {"hover": 70, "camera": 10, "drop": 6, "drop_bin": 2, "select": 8, "move": 4}

DROP_RAYS = 256
MOVE_OFFSETS = ((0.0, 0.0), (0.5, 0.0), (0.0, 0.5), (-0.35, -0.35))   # metres, from where each building stood
GROUND_SCENES = ("terrain", "city_block")
MOVE_SCENE = "city_block"
SCHEDULE_LENGTH = 1 << 16


@dataclass
class Item:
    """One pre-serialised request."""

    payload: bytes                   # the whole HTTP/1.1 request
    answer_bytes: int | None = None  # the exact body size a good answer has, when it is known


def describe(item: Item) -> dict:
    """The request line and body of a pre-serialised request (a binary body as hex)."""
    head, _, body = item.payload.partition(b"\r\n\r\n")
    return {"request": head.split(b"\r\n", 1)[0].decode(),
            "request_body": body.decode() if not body or body[:1] in b"{[" else body.hex()}


def build_pools(scenes: dict[str, SampleScene], target: Target, size: int, rng: np.random.Generator,
                api_key: str | None = None) -> tuple[dict[str, list[Item]], dict]:
    """``size`` requests per kind, and what the moves start from (to put the buildings back)."""
    def item(method, path, body, content_type="application/json", answer_bytes=None):
        data = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
        return Item(http_request(target, method, path, data, content_type, api_key), answer_bytes)

    everywhere = list(scenes.values())
    grounds = [scenes[name] for name in GROUND_SCENES]
    pools = {kind: [] for kind in KINDS}
    for k in range(size):
        scene = everywhere[k % len(everywhere)]
        origin = outside_point(scene, rng)
        direction = inside_point(scene, rng) - origin
        pools["hover"].append(item("POST", f"/scenes/{scene.id}/pick",
                                   {"origin": rounded(origin), "direction": rounded(direction)}))

        scene = everywhere[(k + 1) % len(everywhere)]
        pixels = [[float(rng.integers(0, IMAGE[0])) + 0.5, float(rng.integers(0, IMAGE[1])) + 0.5]
                  for _ in range(int(rng.integers(1, 5)))]
        pools["camera"].append(item("POST", f"/scenes/{scene.id}/pick/camera", {**pinhole(scene, rng),
                                                                                "pixels": pixels}))

        scene = everywhere[(k + 2) % len(everywhere)]
        width, height = rng.uniform(8, 640), rng.uniform(8, 400)
        x0, y0 = rng.uniform(0, IMAGE[0] - width), rng.uniform(0, IMAGE[1] - height)
        rect = rounded([x0, y0, x0 + width, y0 + height], 1)
        mode = "triangles" if rng.random() < 0.25 else "objects"
        pools["select"].append(item("POST", f"/scenes/{scene.id}/select", {**pinhole(scene, rng), "rect": rect,
                                                                           "mode": mode}))

        scene = grounds[k % len(grounds)]
        span = scene.hi - scene.lo
        xy = scene.lo[:2] + (0.01 + 0.98 * rng.random((DROP_RAYS, 2))) * span[:2]
        origins = np.column_stack([xy, np.full(DROP_RAYS, scene.hi[2] + 1.0)])
        directions = np.tile([0.0, 0.0, -1.0], (DROP_RAYS, 1))
        pools["drop"].append(item("POST", f"/scenes/{scene.id}/pick/batch",
                                  {"origins": [rounded(o, 3) for o in origins],
                                   "directions": [[0, 0, -1]] * DROP_RAYS}))
        pools["drop_bin"].append(item("POST", f"/scenes/{scene.id}/pick/batch.bin",
                                      np.hstack([origins, directions]).astype("<f4").tobytes(),
                                      "application/octet-stream", DROP_RAYS * RECORD_BYTES))

    city = scenes[MOVE_SCENE]
    buildings = [obj for obj in city.objects if obj["name"] and "/" in obj["name"]] or city.objects
    originals = {obj["id"]: obj["transform"] for obj in buildings}
    for k in range(size):
        building = buildings[k % len(buildings)]
        dx, dy = MOVE_OFFSETS[(k // len(buildings)) % len(MOVE_OFFSETS)]
        transform = [list(row) for row in building["transform"]]
        transform[0][3] += dx
        transform[1][3] += dy
        pools["move"].append(item("PATCH", f"/scenes/{city.id}/objects/{building['id']}", {"transform": transform}))
    return pools, {"scene": city.id, "transforms": originals}


def schedule(rng: np.random.Generator, size: int, mix: dict[str, float] = WEIGHTS) -> list[tuple[str, int]]:
    """The order of kinds (drawn by weight) and pool entries, cycled through by every connection."""
    weights = np.array([mix[kind] for kind in KINDS], np.float64)
    kinds = rng.choice(len(KINDS), size=SCHEDULE_LENGTH, p=weights / weights.sum())
    entries = rng.integers(0, size, SCHEDULE_LENGTH)
    return [(KINDS[kind], int(entry)) for kind, entry in zip(kinds, entries)]


# ---------------------------------------------------------------- the load

@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)   # seconds, successful requests
    entries: list[int] = field(default_factory=list)       # their pool entries, to name the slowest
    starts: list[float] = field(default_factory=list)      # when they were sent, seconds into the run
    errors: int = 0
    causes: dict[str, int] = field(default_factory=dict)


class Load:
    """``connections`` keep-alive connections, each one request at a time, until the deadline or the count."""

    def __init__(self, target: Target, pools: dict[str, list[Item]], order: list[tuple[str, int]],
                 connections: int, duration: float, max_requests: int, request_timeout: float):
        self.target = target
        self.pools = pools
        self.order = order
        self.connections = connections
        self.duration = duration
        self.max_requests = max_requests
        self.request_timeout = request_timeout
        self.tallies = {kind: Tally() for kind in KINDS}
        self.samples: list[dict] = []
        self.issued = 0
        self.deadline = 0.0
        self.started_at: list[float | None] = [None] * connections
        self.writers: list[asyncio.StreamWriter | None] = [None] * connections
        self.timed_out = [False] * connections
        self.elapsed = 0.0
        self.started = 0.0

    def _error(self, kind: str, cause: str, item: Item, status: int | None = None, answer: bytes = b"") -> None:
        tally = self.tallies[kind]
        tally.errors += 1
        tally.causes[cause] = tally.causes.get(cause, 0) + 1
        if len(self.samples) < ERROR_SAMPLES:
            self.samples.append({"kind": kind, "cause": cause, "status": status, **describe(item),
                                 "answer": answer[:2000].decode(errors="replace")})

    def slowest(self, kind: str, count: int) -> list[dict]:
        """The ``count`` slowest successful requests of a kind, with what they sent."""
        tally = self.tallies[kind]
        ranked = np.argsort(tally.latencies)[::-1][:count]
        return [{"ms": round(tally.latencies[k] * 1e3, 1), "sent_at_s": round(tally.starts[k], 2),
                 **describe(self.pools[kind][tally.entries[k]])} for k in ranked]

    async def _connection(self, slot: int) -> None:
        reader = writer = None
        loop_time = time.perf_counter
        tallies, pools, order = self.tallies, self.pools, self.order
        while self.issued < self.max_requests and loop_time() < self.deadline:
            kind, entry = order[self.issued % SCHEDULE_LENGTH]
            self.issued += 1
            item = pools[kind][entry]
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection(self.target.host, self.target.port)
                    writer.transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    self.writers[slot] = writer
                start = loop_time()
                self.started_at[slot] = start
                writer.write(item.payload)
                status, body, close = await read_answer(reader)
                elapsed = loop_time() - start
                self.started_at[slot] = None
                if not 200 <= status < 300:
                    self._error(kind, f"HTTP {status}", item, status, body)
                elif item.answer_bytes is not None and len(body) != item.answer_bytes:
                    self._error(kind, "wrong answer size", item, status, body[:200])
                else:
                    tally = tallies[kind]
                    tally.latencies.append(elapsed)
                    tally.entries.append(entry)
                    tally.starts.append(start - self.started)
                if close:
                    writer.close()
                    writer = None
            except (OSError, EOFError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as error:
                self.started_at[slot] = None
                if self.timed_out[slot]:
                    self.timed_out[slot] = False
                    cause = f"no answer within {self.request_timeout:g} s"
                else:
                    cause = type(error).__name__ + (f": {error}" if str(error) else "")
                self._error(kind, cause, item)
                if writer is not None:
                    writer.transport.abort()
                writer = None
                await asyncio.sleep(0.01)     # a refused connection must not spin
        if writer is not None:
            writer.close()

    async def _watchdog(self) -> None:
        while True:
            await asyncio.sleep(0.25)
            now = time.perf_counter()
            for slot, started in enumerate(self.started_at):
                if started is not None and now - started > self.request_timeout and self.writers[slot] is not None:
                    self.timed_out[slot] = True
                    self.writers[slot].transport.abort()

    async def run(self, sampler=None) -> None:
        start = self.started = time.perf_counter()
        self.deadline = start + self.duration
        watchdog = asyncio.create_task(self._watchdog())
        sampling = asyncio.create_task(sampler(start)) if sampler else None
        tasks = [asyncio.create_task(self._connection(slot)) for slot in range(self.connections)]
        try:
            done, _ = await asyncio.wait(tasks, timeout=self.duration + self.request_timeout + 5)
            for task in done:
                if task.exception() is not None:
                    raise task.exception()
        finally:
            for task in tasks:
                task.cancel()
            self.elapsed = time.perf_counter() - start
            watchdog.cancel()
            if sampling is not None:
                sampling.cancel()
                # The last sample, at the end of the run.
                try:
                    await sampling
                except asyncio.CancelledError:
                    pass


# ---------------------------------------------------------------- the report

def figures(load: Load) -> dict:
    rows = {}
    every = []
    for kind in KINDS:
        tally = load.tallies[kind]
        ms = np.asarray(tally.latencies) * 1e3
        every.append(ms)
        rows[kind] = _row(ms, tally.errors, load.elapsed)
        rows[kind]["causes"] = tally.causes
    rows["total"] = _row(np.concatenate(every), sum(t.errors for t in load.tallies.values()), load.elapsed)
    return rows


def _row(ms: np.ndarray, errors: int, elapsed: float) -> dict:
    count = int(ms.size) + errors
    row = {"requests": count, "ok": int(ms.size), "errors": errors, "req_per_s": count / elapsed if elapsed else 0.0}
    for p in (50, 95, 99):
        row[f"p{p}_ms"] = float(np.percentile(ms, p)) if ms.size else None
    row["max_ms"] = float(ms.max()) if ms.size else None
    return row


def table(rows: dict) -> str:
    header = f"{'kind':<24} {'requests':>9} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>7}"
    lines = [header, "-" * len(header)]
    for kind in (*KINDS, "total"):
        row = rows[kind]
        if kind == "total":
            lines.append("-" * len(header))
        lines.append(f"{LABELS.get(kind, kind):<24} {row['requests']:>9,} {row['req_per_s']:>8.1f} "
                     f"{format_ms(row['p50_ms']):>8} {format_ms(row['p95_ms']):>8} {format_ms(row['p99_ms']):>8} {row['errors']:>7,}")
    return "\n".join(lines)


def memory_lines(report: dict) -> list[str]:
    if not report.get("known"):
        return ["server memory: unknown (give --pid with --url to read it from /proc)"]
    mark, end = report["mark_s"], report["end_s"]
    processes = report["processes"]
    verdict = "stable" if report["stable"] else "NOT stable"
    return [
        f"server memory (pid {report['pid']}, {processes} process{'es' if processes != 1 else ''}, RSS summed):",
        f"  RSS at {mark:g} s {format_mb(report['rss_at_mark'])}, at the end ({end:g} s) {format_mb(report['rss_at_end'])}: "
        f"{report['growth_percent']:+.1f}%, {verdict} (threshold {report['stable_threshold_percent']:g}%)",
        f"  peak RSS sampled over 0-{mark:g} s {format_mb(report['peak_rss_to_mark'])}, over 0-{end:g} s "
        f"{format_mb(report['peak_rss_to_end'])}; VmHWM (kernel's peak since start) {format_mb(report['vmhwm_at_mark'])} "
        f"at {mark:g} s, {format_mb(report['vmhwm_at_end'])} at the end",
    ]


def summary_line(rows: dict, load: Load, report: dict) -> str:
    total = rows["total"]
    line = (f"load: {load.elapsed:.1f} s, {load.connections} connections, {total['requests']:,} requests "
            f"({total['req_per_s']:.1f} req/s), {total['errors']:,} errors, "
            f"p50 {format_ms(total['p50_ms'])} ms p99 {format_ms(total['p99_ms'])} ms")
    if report.get("known"):
        line += (f", server RSS {format_mb(report['rss_at_mark'])} at {report['mark_s']:g} s -> "
                 f"{format_mb(report['rss_at_end'])} at {report['end_s']:g} s (peak {format_mb(report['peak_rss_to_end'])})")
    else:
        line += ", server RSS unknown"
    return line


# ---------------------------------------------------------------- main

def sanity_check(http: Http, pools: dict[str, list[Item]]) -> list[str]:
    """One request of each kind, one at a time, before the load: what failed, in words."""
    failures = []
    for kind in KINDS:
        item = pools[kind][0]
        head, _, body = item.payload.partition(b"\r\n\r\n")
        method, path, _ = head.split(b"\r\n", 1)[0].decode().split(" ")
        content_type = re.search(rb"Content-Type: ([^\r]+)", head).group(1).decode()
        status, answer = http.call(method, path[len(http.target.prefix):], body, content_type)
        if not 200 <= status < 300 or (item.answer_bytes is not None and len(answer) != item.answer_bytes):
            failures.append(f"{kind}: {method} {path} -> {status} {answer[:500]!r}\n    request body: "
                            f"{body[:1000]!r}")
    return failures


def parse_mix(text: str) -> dict[str, float] | str:
    """``kind=weight,...`` on top of the default weights; or ``editors``, the other mode."""
    if text.strip() == EDITORS:
        return EDITORS
    mix = dict(WEIGHTS)
    for part in filter(None, (p.strip() for p in text.split(","))):
        kind, _, weight = part.partition("=")
        if kind not in mix:
            raise argparse.ArgumentTypeError(f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
        try:
            mix[kind] = float(weight)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r}: the weight is not a number") from None
        if not mix[kind] >= 0:
            raise argparse.ArgumentTypeError(f"{part!r}: weights are not negative")
    if sum(mix.values()) <= 0:
        raise argparse.ArgumentTypeError("every weight is zero")
    return mix


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running server on loopback (default: start python -m service here)")
    parser.add_argument("--pid", type=int, help="with --url: the server's process id, to read its memory")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load (default 60)")
    parser.add_argument("--connections", type=int, default=64, help="concurrent connections (default 64)")
    parser.add_argument("--max-requests", type=int, default=1_000_000, help="stop after this many (default 1e6)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the rays, cameras and schedule")
    parser.add_argument("--pool", type=int, default=1000, help="pre-built request bodies per kind (default 1000)")
    parser.add_argument("--mix", type=parse_mix, default=dict(WEIGHTS), metavar="KIND=W,...",
                        help="change weights of the mix, e.g. move=0 or hover=50,select=28 (kinds: "
                             + ", ".join(KINDS) + "); or 'editors': editors on one scene over the live "
                             "channel (see bench/editors.py)")
    parser.add_argument("--editors", type=int, default=32,
                        help="with --mix editors: simulated editors, each with its WebSocket (default 32)")
    parser.add_argument("--objects", type=int, default=10_000,
                        help="with --mix editors: boxes in the scene they edit (default 10000)")
    parser.add_argument("--select-every", type=float, default=2.0, metavar="S",
                        help="with --mix editors: seconds between one editor's selections (default 2; 0: none)")
    parser.add_argument("--batch-every", type=float, default=1.0, metavar="S",
                        help="with --mix editors: seconds between one editor's binary batches (default 1; 0: none)")
    parser.add_argument("--workers", type=int, default=1, help="PICK_WORKERS of the started server")
    parser.add_argument("--request-timeout", type=float, default=30.0, help="seconds before a request is an error")
    parser.add_argument("--no-kernel-wait", action="store_true",
                        help="start the load once /ready is 200, while the started server may still compile "
                             "kernels in the background (the figures then include that compiling)")
    parser.add_argument("--ready-timeout", type=float, default=600.0,
                        help="seconds to wait for the started server's /ready (numba may compile first)")
    parser.add_argument("--memory-mark", type=float, default=10.0, help="the early memory reading, seconds in")
    parser.add_argument("--stable-growth", type=float, default=10.0,
                        help="percent of RSS growth from the mark to the end still called stable")
    parser.add_argument("--api-key", default=None, help="with --url: Bearer key (default: $PICK_API_KEY)")
    parser.add_argument("--show-slowest", type=int, default=0, metavar="N",
                        help="print the N slowest requests of each kind with their bodies")
    parser.add_argument("--json", type=Path, help="write the figures to this file (with the 5 slowest of each kind)")
    args = parser.parse_args(argv)
    if not 0 < args.duration <= MAX_DURATION:
        parser.error(f"--duration must be in (0, {MAX_DURATION:g}] seconds")
    if not 1 <= args.connections <= MAX_CONNECTIONS:
        parser.error(f"--connections must be in [1, {MAX_CONNECTIONS}]")
    if not 1 <= args.max_requests <= MAX_REQUESTS:
        parser.error(f"--max-requests must be in [1, {MAX_REQUESTS:,}]")
    if not 1 <= args.pool <= 100_000:
        parser.error("--pool must be in [1, 100000]")
    if args.pid is not None and not args.url:
        parser.error("--pid goes with --url (a started server's pid is known)")
    if args.mix == EDITORS:
        from bench.editors import MAX_EDITORS

        if not 1 <= args.editors <= MAX_EDITORS:
            parser.error(f"--editors must be in [1, {MAX_EDITORS}]")
        if args.select_every < 0 or args.batch_every < 0:
            parser.error("--select-every and --batch-every are seconds, 0 for none")
        if not args.editors <= args.objects <= 1_000_000:
            parser.error("--objects must be in [--editors, 1000000]: each editor drags a box of its own")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.mix == EDITORS:
        from bench import editors

        return editors.main(args)

    def log(message: str) -> None:
        print(message, flush=True)

    server = None
    uploaded: list[str] = []
    moves = None
    http = None
    try:
        if args.url:
            try:
                target = loopback_target(args.url)
            except NotLoopback as error:
                print(f"bench.load: refusing {error}", file=sys.stderr)
                return 2
            api_key = args.api_key or os.environ.get("PICK_API_KEY")
            pid = args.pid
            if pid is not None and memory(pid) is None:
                print(f"bench.load: no process {pid} to read memory from", file=sys.stderr)
                return 2
            origin = "given"
        else:
            server = Server(args.workers)
            log(f"starting python -m service on {server.url} (PICK_WORKERS={args.workers}, PICK_SAMPLE_SCENES=true, "
                f"data in {server.data_dir}) ...")
            ready = server.start(args.ready_timeout, not args.no_kernel_wait)
            log(f"ready in {ready:.1f} s" if args.no_kernel_wait else
                f"ready, every kernel compiled or loaded, in {ready:.1f} s")
            target = loopback_target(server.url)
            api_key = None
            pid = server.process.pid
            origin = "started here"
        http = Http(target, api_key)
        scenes, uploaded = find_scenes(http, log)
        log("scenes: " + ", ".join(f"{s.name} ({s.triangles:,} triangles, {len(s.objects)} objects)"
                                   for s in scenes.values()))

        rng = np.random.default_rng(args.seed)
        built = time.perf_counter()
        pools, moves = build_pools(scenes, target, args.pool, rng, api_key)
        order = schedule(rng, args.pool, args.mix)
        share = 100 / sum(args.mix.values())
        log(f"built {args.pool:,} requests per kind in {time.perf_counter() - built:.1f} s; mix: "
            + ", ".join(f"{LABELS[kind]} {args.mix[kind] * share:.3g}%" for kind in KINDS))
        failures = sanity_check(http, pools)
        if failures:
            print("bench.load: a first request of each kind failed before the load:\n  " + "\n  ".join(failures),
                  file=sys.stderr)
            if server is not None:
                print("server log ends:\n" + server.log_tail(), file=sys.stderr)
            return 1

        load = Load(target, pools, order, args.connections, args.duration, args.max_requests, args.request_timeout)
        sampler = MemorySampler(pid) if pid is not None else None
        log(f"load: {args.duration:g} s (at most {args.max_requests:,} requests), {args.connections} connections "
            f"to {target.url} ...")
        client_cpu, server_cpu = client_cpu_seconds(), cpu_seconds(pid) if pid is not None else None
        asyncio.run(load.run(sampler))
        client_cpu = client_cpu_seconds() - client_cpu
        server_cpu = cpu_seconds(pid) - server_cpu if pid is not None else None

        rows = figures(load)
        report = ({"known": False} if sampler is None
                  else sampler.report(min(args.memory_mark, load.elapsed), args.stable_growth))
        print()
        print(table(rows))
        print()
        for line in memory_lines(report):
            print(line)
        cpu = f"client CPU {client_cpu / load.elapsed:.2f} cores"
        if server_cpu is not None:
            cpu += f", server CPU {server_cpu / load.elapsed:.2f} cores"
        print(f"{cpu} ({os.cpu_count()} cores on this machine); server {target.url} ({origin})")
        total_errors = rows["total"]["errors"]
        if args.show_slowest:
            names = {s.id: s.name for s in scenes.values()}
            print(f"\nslowest {args.show_slowest} of each kind:")
            for kind in KINDS:
                for slow in load.slowest(kind, args.show_slowest):
                    method, path, _ = slow["request"].split(" ")
                    scene = names.get(path.split("/")[2], "?") if path.count("/") >= 2 else "?"
                    print(f"  {LABELS[kind]}: {slow['ms']:.0f} ms, sent at {slow['sent_at_s']:.1f} s, "
                          f"{method} {path} ({scene}): {slow['request_body'][:160]}")
        if total_errors:
            print("\nerrors by cause:")
            for kind in KINDS:
                for cause, count in load.tallies[kind].causes.items():
                    print(f"  {LABELS[kind]}: {cause}: {count:,}")
            print("first failed requests:")
            for sample in load.samples:
                print(f"  [{sample['kind']}] {sample['request']} -> {sample['cause']}: {sample['answer'][:300]!r}")
                print(f"      request body: {sample['request_body'][:400]}")
            if server is not None:
                print("server log ends:\n" + server.log_tail())
        print()
        line = summary_line(rows, load, report)
        print(line)
        if args.json:
            args.json.write_text(json.dumps({
                "url": target.url, "server": origin, "duration_s": load.elapsed, "connections": args.connections,
                "max_requests": args.max_requests, "seed": args.seed, "weights": args.mix,
                "scenes": {s.name: {"id": s.id, "triangles": s.triangles, "objects": len(s.objects)}
                           for s in scenes.values()},
                "kinds": rows, "memory": report, "client_cpu_cores": client_cpu / load.elapsed,
                "server_cpu_cores": None if server_cpu is None else server_cpu / load.elapsed,
                "errors": load.samples, "slowest": {kind: load.slowest(kind, 5) for kind in KINDS},
                "summary": line}, indent=2) + "\n")
        return 1 if total_errors else 0
    finally:
        if server is not None:
            server.stop()
        elif http is not None:
            _tidy(http, moves, uploaded)


def _tidy(http: Http, moves: dict | None, uploaded: list[str]) -> None:
    """On a server given by --url: put the moved buildings back and delete the scenes uploaded here."""
    try:
        if moves is not None and moves["scene"] not in uploaded:
            for oid, transform in moves["transforms"].items():
                http.json("PATCH", f"/scenes/{moves['scene']}/objects/{oid}", {"transform": transform})
        for scene_id in uploaded:
            http.call("DELETE", f"/scenes/{scene_id}")
    except (OSError, RuntimeError) as error:
        print(f"bench.load: could not tidy up the server: {error}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
