"""Exactly-once writes through crashes: ``python -m bench.idempotency [--writes N] [--kills K] [--workers W]``.

Starts ``python -m service`` on a temporary directory, makes a scene, then
sends ``--writes`` writes from ``--clients`` threads, each an add of an
instance named after the write with an ``Idempotency-Key`` of its own, and
each sent twice: one in three writes sends both copies at once (the retry
arrives while the first is in flight), the others one after the other. The
server is killed with SIGKILL ``--kills`` times at even intervals and
started again; a copy that meets a dropped connection or a 503 is sent again
under the same key until it is answered (so those writes go across a kill).

Then every object is read and counted: a write found twice was **applied
twice**, a write answered 201 and not found was **lost** (bars: 0 and 0);
and the two answers of each write are compared (a repeat must answer the
first answer: the same status and body).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from .http import Server, every_object, free_port

TRIANGLE = {"vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]], "faces": [[0, 1, 2]]}


class Run:
    """What the clients saw."""

    def __init__(self):
        self.lock = threading.Lock()
        self.answers: dict[int, list] = {}
        self.across_kill: set[int] = set()
        self.replayed = 0

    def note(self, number: int, response: httpx.Response, retried: bool) -> None:
        with self.lock:
            self.answers.setdefault(number, []).append((response.status_code, response.content))
            self.replayed += response.headers.get("idempotent-replayed") == "true"
            if retried:
                self.across_kill.add(number)


#: Each thread's keep-alive connection (a new one after a dropped one).
connections = threading.local()


def send(url: str, scene: str, number: int, run: Run, server_up: threading.Event) -> None:
    """One copy of write ``number``, sent again under its key until it is answered."""
    body = {"mesh": 0, "name": f"write {number}"}
    headers = {"Idempotency-Key": f"bench-{number}"}
    retried = False
    while True:
        client = getattr(connections, "client", None)
        if client is None:
            client = connections.client = httpx.Client(base_url=url, timeout=60)
        try:
            response = client.post(f"/scenes/{scene}/objects", json=body, headers=headers)
            if response.status_code not in (502, 503):
                run.note(number, response, retried)
                return
        except httpx.TransportError:
            client.close()
            connections.client = None
        retried = True
        server_up.wait(120)
        time.sleep(0.01)


def client_thread(url: str, scene: str, numbers: range, run: Run, server_up: threading.Event) -> None:
    for number in numbers:
        if number % 3 == 0:
            both = [threading.Thread(target=send, args=(url, scene, number, run, server_up)) for _ in range(2)]
            for thread in both:
                thread.start()
            for thread in both:
                thread.join()
        else:
            send(url, scene, number, run, server_up)
            send(url, scene, number, run, server_up)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=10_000)
    parser.add_argument("--kills", type=int, default=4, help="kill -9 of the server during the run")
    parser.add_argument("--clients", type=int, default=16, help="client threads")
    parser.add_argument("--workers", type=int, default=1, help="PICK_WORKERS of the server")
    args = parser.parse_args(argv)
    # Adding instances compiles no query kernel: a start waits for none (with a cold numba
    # cache on a busy machine, a warm-up takes minutes), so that a restart is a crash's.
    os.environ["PICK_WARM_UP"] = "0"

    with tempfile.TemporaryDirectory(prefix="bench-idempotency-") as scratch:
        server = Server(Path(scratch) / "data", free_port(), workers=args.workers)
        server.start()
        server_up = threading.Event()
        server_up.set()
        try:
            with httpx.Client(base_url=server.url, timeout=60) as client:
                made = client.post("/scenes", json={"name": "idempotency", "meshes": [TRIANGLE]})
                assert made.status_code == 201, made.text
                scene = made.json()["id"]
            run = Run()
            share = -(-args.writes // args.clients)
            threads = [threading.Thread(target=client_thread,
                                        args=(server.url, scene, range(start, min(start + share, args.writes)),
                                              run, server_up))
                       for start in range(0, args.writes, share)]
            began = time.perf_counter()
            for thread in threads:
                thread.start()
            restarts = []
            for kill in range(args.kills):
                target = (kill + 1) * args.writes // (args.kills + 1)
                while len(run.answers) < target and any(thread.is_alive() for thread in threads):
                    time.sleep(0.02)
                server_up.clear()
                server.kill()
                stopped = time.perf_counter()
                server.start()
                restarts.append(time.perf_counter() - stopped)
                server_up.set()
            for thread in threads:
                thread.join()
            seconds = time.perf_counter() - began
            with httpx.Client(base_url=server.url, timeout=60) as client:
                objects = every_object(lambda path: client.get(path).json(), scene)
        finally:
            server.stop()

    counts = Counter(entry["name"] for entry in objects)
    acknowledged = {number for number, answers in run.answers.items()
                    if any(status == 201 for status, _ in answers)}
    twice = sum(count > 1 for name, count in counts.items() if name and name.startswith("write "))
    lost = sum(counts[f"write {number}"] == 0 for number in acknowledged)
    differing = sum(len({answer for answer in answers}) > 1 for answers in run.answers.values())
    refused = Counter(status for answers in run.answers.values() for status, _ in answers if status != 201)
    print(f"{args.writes:,} writes, each sent twice (one in three both at once), {args.clients} client threads, "
          f"{args.workers} worker(s), {args.kills} kill -9 with restarts of "
          + ", ".join(f"{restart:.1f} s" for restart in restarts) + f"; {seconds:.1f} s in all")
    print(f"  answered 201: {len(acknowledged):,}; repeats answered as replayed: {run.replayed:,}; "
          f"writes retried across a kill: {len(run.across_kill):,}; other answers: {dict(refused)}")
    print(f"  applied twice: {twice} (bar: 0); lost: {lost} (bar: 0); writes whose two answers differ: {differing}")
    print(json.dumps({"writes": args.writes, "acknowledged": len(acknowledged), "twice": twice, "lost": lost,
                      "differing": differing, "across_kill": len(run.across_kill), "replayed": run.replayed}))
    return 0 if twice == 0 and lost == 0 and differing == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
