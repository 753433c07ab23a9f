"""The cluster path against the single process: ``python -m bench.cluster [--dir DIR] [--quick]``.

Starts a local cluster (``cluster.local.up`` on a temporary directory: SeaweedFS,
a Ray head and two workers, three replicas) unless ``--dir`` names the directory
of a running one (``make cluster``: ``cluster-data``), and one ``python -m
service`` process, then measures:

1. per-pick latency at one keep-alive connection (``bench.http.latencies``),
   p50 and p99, on the same scene in both, and the cluster's overhead
   (cluster minus single process, at each percentile);
   The same over the live channel (one WebSocket, ``{"type": "pick"}``
   messages): round trip p50 and p99, then picks pipelined (10,000 sent,
   then read) per second;
2. scene affinity: 20 scenes under a mixed load (picks, batches, edits,
   object reads; a few hot scenes, from 8 connections), then how many
   replicas loaded each and how many answered its requests (``GET
   /cluster/replica`` at each replica's own port; the bar: loaded on at most 2);
4. (a cluster started here only) failures: ``--edits`` edits, each adding an
   instance named ``edit N``, with a pick after each, from one client; a
   replica holding the scene is killed with SIGKILL after a third of them and
   the raylet of the node holding it then after two thirds; then every
   acknowledged edit is looked for in the scene (and any edit found twice:
   HAProxy resends a request its replica died under, and the client sends
   an edit again after a dropped connection or a 503, each under the edit's
   ``Idempotency-Key``, so that it applies once), and the longest time
   without a right pick after each kill is reported (bar: 0 lost, <= 5 s).
3. scene open on another replica: the 1.31M-triangle icosphere uploaded,
   then its first pick on a replica that does not hold it (at that replica's
   own port) against the next one there: the time to open it from the store (from the
   object store in S3 mode; from the shared directory by memory map before it).

The figures mean something only on an otherwise idle machine: HAProxy and
the replicas share its cores with the load generator.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from .http import Server, big_mesh_file, free_port, hitting_ray, latencies, request, upload

ROOT = Path(__file__).resolve().parent.parent
TORUS = ROOT / "sample_meshes" / "torus.ply"


def pick_body(scene: dict) -> bytes:
    origin, direction = hitting_ray(scene["bounds"])
    return json.dumps({"origin": origin, "direction": direction}).encode()


def percentiles(seconds: np.ndarray) -> tuple[float, float]:
    return float(np.percentile(seconds, 50) * 1e3), float(np.percentile(seconds, 99) * 1e3)


def pick_latency(url: str, count: int) -> tuple[float, float]:
    scene = upload(url, TORUS)
    path = f"/scenes/{scene['id']}/pick"
    body = pick_body(scene)
    latencies(url, path, body, 200)  # the scene opened and held, connections warm
    return percentiles(latencies(url, path, body, count))


def live_picks(url: str, count: int) -> dict:
    """Round trips and pipelined picks over the live channel of a one-triangle scene."""
    from websockets.sync.client import connect

    triangle = {"vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]], "faces": [[0, 1, 2]]}
    status, answer = request(url, "POST", "/scenes", json.dumps({"name": "live", "meshes": [triangle]}).encode(),
                             {"Content-Type": "application/json"})
    assert status == 201, answer
    scene = json.loads(answer)["id"]
    message = json.dumps({"type": "pick", "id": 1, "origin": [0.2, 0.2, 1], "direction": [0, 0, -1]})
    with connect(url.replace("http://", "ws://") + f"/scenes/{scene}/live", max_size=None) as socket:
        socket.recv()
        for _ in range(200):
            socket.send(message)
            socket.recv()
        seconds = []
        for _ in range(count):
            start = time.perf_counter()
            socket.send(message)
            socket.recv()
            seconds.append(time.perf_counter() - start)
        pipelined = 10_000
        start = time.perf_counter()
        for _ in range(pipelined):
            socket.send(message)
        for _ in range(pipelined):
            socket.recv()
        rate = pipelined / (time.perf_counter() - start)
    p50, p99 = percentiles(np.array(seconds))
    return {"p50": p50, "p99": p99, "rate": rate}


def affinity(cluster, requests_each: int) -> dict:
    """Replicas that loaded each of 20 scenes after a mixed load from 8 connections."""
    url = cluster.url
    triangle = {"vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]], "faces": [[0, 1, 2]]}
    scenes = []
    for number in range(20):
        status, answer = request(url, "POST", "/scenes", json.dumps({"name": f"affinity {number}",
                                 "meshes": [triangle]}).encode(), {"Content-Type": "application/json"})
        assert status == 201, answer
        scenes.append(json.loads(answer)["id"])
    rays = np.array([[0.2, 0.2, 1, 0, 0, -1]] * 64, "<f4").tobytes()
    pick = json.dumps({"origin": [0.2, 0.2, 1], "direction": [0, 0, -1]}).encode()
    errors = []

    def load(seed: int) -> None:
        import httpx

        rng = np.random.default_rng(seed)
        with httpx.Client(base_url=url, timeout=60) as client:
            for _ in range(requests_each):
                scene = scenes[min(int(rng.exponential(4.0)), 19)]
                kind = rng.integers(4)
                if kind == 0:
                    answer = client.post(f"/scenes/{scene}/pick", content=pick,
                                         headers={"Content-Type": "application/json"})
                elif kind == 1:
                    answer = client.post(f"/scenes/{scene}/pick/batch", content=rays,
                                         headers={"Content-Type": "application/octet-stream"})
                elif kind == 2:
                    answer = client.patch(f"/scenes/{scene}/objects/0", json={"name": f"n{rng.integers(1000)}"})
                else:
                    answer = client.get(f"/scenes/{scene}/objects/0")
                if answer.status_code != 200:
                    errors.append(answer.status_code)

    threads = [threading.Thread(target=load, args=(seed,)) for seed in range(8)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    reports = cluster.replica_reports()
    loaded_on = {scene: sum(1 for report in reports.values() if report["loads"].get(scene)) for scene in scenes}
    answered_on = {scene: sum(1 for report in reports.values() if report["requests"].get(scene)) for scene in scenes}
    return {"replicas": len(reports), "requests": 8 * requests_each, "seconds": seconds, "errors": len(errors),
            "most": max(loaded_on.values()), "histogram": np.bincount(list(loaded_on.values())).tolist(),
            "answered_most": max(answered_on.values())}


def open_elsewhere(cluster, directory: Path) -> dict:
    """First pick of the 1.31M-triangle scene on a replica that does not hold it, and the next one."""
    url = cluster.url
    path, triangles = big_mesh_file(directory)
    scene = upload(url, path)
    body = pick_body(scene)
    pick = f"/scenes/{scene['id']}/pick"
    request(url, "POST", pick, body, {"Content-Type": "application/json"})
    reports = cluster.replica_reports()
    fresh = [name for name, report in reports.items() if scene["id"] not in report["scenes"]]
    if not fresh:
        return {"triangles": triangles, "note": "every replica already holds it"}
    there = cluster.replicas()[fresh[0]]
    headers = {"Content-Type": "application/json"}
    start = time.perf_counter()
    status, _ = request(there, "POST", pick, body, headers)
    first = time.perf_counter() - start
    start = time.perf_counter()
    request(there, "POST", pick, body, headers)
    second = time.perf_counter() - start
    return {"triangles": triangles, "status": status, "first_s": first, "next_s": second}


def edits_through_kills(cluster, edits: int) -> dict:
    """Edits and picks from one client while a holder replica, then its node's raylet, are killed."""
    import os
    import signal

    import httpx

    triangle = {"vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]], "faces": [[0, 1, 2]]}
    status, answer = request(cluster.url, "POST", "/scenes", json.dumps({"name": "kills", "meshes": [triangle]}).encode(),
                             {"Content-Type": "application/json"})
    assert status == 201, answer
    scene = json.loads(answer)["id"]
    acknowledged, refused, wrong, right_picks, kills, replayed = [], {}, 0, [], [], 0
    with httpx.Client(base_url=cluster.url, timeout=5) as client:
        for number in range(edits):
            if number in (edits // 3, 2 * edits // 3):
                victim = cluster.serving(scene)
                if number == edits // 3:
                    pid, what = victim["pid"], "replica"
                else:
                    what = "raylet"
                    pid = next(process["pid"] for which in ("worker0", "worker1")
                               for process in cluster.node_processes(which)
                               if process["name"] == "raylet"
                               and any(p["pid"] == victim["pid"] for p in cluster.node_processes(which)))
                os.kill(pid, signal.SIGKILL)
                kills.append((what, time.monotonic()))
            try:
                added = add_once(client, scene, number)
                if added.status_code == 201:
                    acknowledged.append(f"edit {number}")
                    replayed += added.headers.get("idempotent-replayed") == "true"
                else:
                    refused[added.status_code] = refused.get(added.status_code, 0) + 1
                pick = client.post(f"/scenes/{scene}/pick", json={"origin": [0.2, 0.2, 1], "direction": [0, 0, -1]})
                if pick.status_code == 200:
                    hit = pick.json()
                    if hit["hit"] and abs(hit["t"] - 1.0) < 1e-6:
                        right_picks.append(time.monotonic())
                    else:
                        wrong += 1
            except httpx.TransportError:
                refused["dropped"] = refused.get("dropped", 0) + 1
    deadline = time.monotonic() + 30
    while True:
        status, answer = request(cluster.url, "GET", f"/scenes/{scene}")
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    found = [entry["name"] for entry in json.loads(answer)["objects"]]
    names = set(found)
    gaps = {}
    for what, when in kills:
        after = [moment for moment in right_picks if moment > when]
        gaps[what] = (after[0] - when) if after else float("inf")
    return {"edits": edits, "acknowledged": len(acknowledged), "lost": sum(name not in names for name in acknowledged),
            "twice": len(found) - len(names), "refused": refused, "wrong": wrong, "gaps": gaps, "replayed": replayed}


def add_once(client, scene: str, number: int, attempts: int = 20):
    """Add edit ``number``'s instance under an ``Idempotency-Key`` of its own, sent again under
    the same key after a dropped connection or a 502/503 (as a client that retries does; HAProxy
    resends too): applied once however often it is sent."""
    import httpx

    for attempt in range(attempts):
        try:
            added = client.post(f"/scenes/{scene}/objects", json={"mesh": 0, "name": f"edit {number}"},
                                headers={"Idempotency-Key": f"kills-{scene}-{number}"})
            if added.status_code not in (502, 503) or attempt == attempts - 1:
                return added
        except httpx.TransportError:
            if attempt == attempts - 1:
                raise
        time.sleep(0.25)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, help="the directory of a running local cluster, as `make cluster` "
                        "leaves it (cluster-data; default: start one here)")
    parser.add_argument("--quick", action="store_true", help="fewer requests: to check the bench runs")
    parser.add_argument("--shared-dir", action="store_true",
                        help="scenes in one shared local directory rather than SeaweedFS")
    parser.add_argument("--edits", type=int, default=5000, help="edits through the kills (section 4)")
    args = parser.parse_args(argv)
    count = 300 if args.quick else 3000

    from cluster import local

    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as scratch:
        scratch = Path(scratch)
        started = None
        if args.dir is not None:
            cluster = local.Cluster.recorded(args.dir)
        else:
            print("starting a local cluster (SeaweedFS, a Ray head, two workers, 3 replicas) ...", flush=True)
            began = time.perf_counter()
            cluster = started = local.up(scratch / "cluster", use_store=not args.shared_dir, timeout=600)
            print(f"  ready in {time.perf_counter() - began:.0f} s at {cluster.url}")
        url = cluster.url
        single = Server(scratch / "single", free_port())
        try:
            single.start()
            alone = pick_latency(single.url, count)
            clustered = pick_latency(url, count)
            live_alone = live_picks(single.url, count)
            live_clustered = live_picks(url, count)
            print(f"\n1. one pick at one connection ({count} picks, torus):")
            print(f"   single process  p50 {alone[0]:.2f} ms  p99 {alone[1]:.2f} ms")
            print(f"   cluster         p50 {clustered[0]:.2f} ms  p99 {clustered[1]:.2f} ms")
            print(f"   overhead        p50 {clustered[0] - alone[0]:.2f} ms  p99 {clustered[1] - alone[1]:.2f} ms"
                  f"   (bar: p50 <= 2 ms)")
            print("   over the live channel (one WebSocket):")
            for name, live in (("single process", live_alone), ("cluster", live_clustered)):
                print(f"   {name:15} p50 {live['p50']:.2f} ms  p99 {live['p99']:.2f} ms  pipelined "
                      f"{live['rate']:,.0f} picks/s")
            print(f"   overhead        p50 {live_clustered['p50'] - live_alone['p50']:.2f} ms")
        finally:
            single.stop()
        spread = affinity(cluster, 40 if args.quick else 250)
        print(f"\n2. affinity: 20 scenes, {spread['requests']} mixed requests from 8 connections in "
              f"{spread['seconds']:.1f} s ({spread['errors']} errors) over {spread['replicas']} replicas:")
        print(f"   replicas that loaded a scene: at most {spread['most']} (bar: <= 2); scenes by count "
              f"{dict(enumerate(spread['histogram']))}; replicas that answered a scene's requests: "
              f"at most {spread['answered_most']}")
        opened = open_elsewhere(cluster, scratch)
        if "first_s" in opened:
            print(f"\n3. the {opened['triangles']:,}-triangle scene on a replica that did not hold it: first pick "
                  f"{opened['first_s']:.2f} s (opening it), next {opened['next_s'] * 1e3:.1f} ms (bar: open <= 5 s)")
        else:
            print(f"\n3. {opened['note']}")
        if started is not None:
            try:
                survived = edits_through_kills(started, 300 if args.quick else args.edits)
                print(f"\n4. {survived['edits']} edits (each adds a named instance) and picks, one client; "
                      f"a holder replica killed (kill -9) after a third, its node's raylet after two thirds:")
                print(f"   acknowledged {survived['acknowledged']} ({survived['replayed']} as a repeat's first answer), "
                      f"lost {survived['lost']} (bar: 0), found twice {survived['twice']} (bar: 0); refused "
                      f"{survived['refused']}; wrong picks {survived['wrong']}; first right pick after the kill: "
                      + ", ".join(f"{what} {gap:.2f} s" for what, gap in survived["gaps"].items()) + " (bar: <= 5 s)")
            finally:
                local.down(started.directory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
