"""Scenes in an object store (issue 18): open time from the store, edit round trip, follow delay.

    python -m bench.object_store                 # a local SeaweedFS started here, stopped after
    python -m bench.object_store --edits 500

Figures, against a real SeaweedFS on this machine (``cluster.seaweedfs``):

* ``open``: the 1,310,720-triangle displaced icosphere (``bench.meshes``)
  opened by a store with an empty cache: newest checkpoint and segments
  downloaded, cache written, ``Scene.open``; then its first pick (which
  builds the top level). The issue's bar: <= 5 s on a fresh node.
* ``edit``: one move through ``SceneStore.record`` at one editor, answered
  once durable: a conditional create of a journal segment in S3 mode, an
  ``fdatasync`` of the journal file in the embedded store. p50 and p99.
* ``follow``: from a move answered in store A to the moment store B (its own
  cache, polling every ``--poll`` seconds) shows it. p50 and p99.

Timings are wall clock on whatever else the machine is doing; run it idle.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def _percentiles(samples) -> str:
    values = np.array(samples) * 1e3
    return f"p50 {np.percentile(values, 50):7.2f} ms   p99 {np.percentile(values, 99):7.2f} ms   (n={len(values)})"


def _move(store, scene_id, oid, x):
    from service.store import edits

    matrix = np.eye(4)
    matrix[0, 3] = x
    return store.record(scene_id, edits.objects_record([oid], matrix[None], []))


def _small_scene(store) -> str:
    import bvh

    scene = bvh.Scene()
    mesh = scene.add_mesh(np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]))
    for index in range(16):
        scene.add_instance(mesh, np.eye(4), name=f"o{index}")
    return store.create(scene, "bench", 0.0).id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=300)
    parser.add_argument("--poll", type=float, default=0.1)
    parser.add_argument("--skip-open", action="store_true", help="leave out the 1.31M-triangle open")
    arguments = parser.parse_args()

    import bvh
    from cluster.seaweedfs import SeaweedFS
    from service.store.object_store import ObjectStore
    from service.store.s3 import ObjectStoreBackend
    from service.store.store import SceneStore

    from .meshes import displaced_icosphere

    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        server = SeaweedFS.start(folder / "seaweedfs")
        try:
            os.environ.update(server.environment())

            def remote(name, poll=arguments.poll):
                return SceneStore(ObjectStoreBackend(ObjectStore(server.store_url), folder / name, poll_seconds=poll))

            if not arguments.skip_open:
                mesh = displaced_icosphere()
                scene = bvh.Scene()
                scene.add_instance(scene.add_mesh(mesh.vertices, mesh.faces))
                writer = remote("writer")
                started = time.perf_counter()
                scene_id = writer.create(scene, "big", 0.0).id
                print(f"create (save + upload) of {len(mesh.faces):,} triangles: {time.perf_counter() - started:.2f} s")
                writer.close()
                reader = remote("reader")
                started = time.perf_counter()
                stored = reader.get(scene_id)
                opened = time.perf_counter() - started
                stored.scene.intersect(np.array([[0.0, 0.0, 5.0]]), np.array([[0.0, 0.0, -1.0]]))
                print(f"open from the store into an empty cache: {opened:.2f} s; with its first pick "
                      f"{time.perf_counter() - started:.2f} s (bar: <= 5 s)")
                reader.close()

            for name, store in (("embedded", SceneStore(folder / "embedded")), ("s3", remote("edits"))):
                scene_id = _small_scene(store)
                for warm in range(10):
                    _move(store, scene_id, 0, float(warm))
                samples = []
                for step in range(arguments.edits):
                    started = time.perf_counter()
                    _move(store, scene_id, step % 16, float(step))
                    samples.append(time.perf_counter() - started)
                print(f"edit round trip, one editor, {name:8s}: {_percentiles(samples)}")
                store.close()

            a, b = remote("follow-a"), remote("follow-b")
            scene_id = _small_scene(a)
            b.get(scene_id)
            seen = {}

            def watch(sid, event):
                seen[event["version"]] = time.perf_counter()

            b.on_change = watch
            answered = {}
            for step in range(arguments.edits):
                _, _, view = _move(a, scene_id, step % 16, float(step))
                answered[view.version] = time.perf_counter()
                # Editors' moves arrive spread out: the poller's phase is then random.
                time.sleep(np.random.uniform(0.0, arguments.poll))
            deadline = time.monotonic() + 5
            while len(seen) < len(answered) and time.monotonic() < deadline:
                time.sleep(0.01)
            delays = [seen[version] - answered[version] for version in answered if version in seen]
            print(f"follow delay (answered in A -> event in B), poll {arguments.poll} s: {_percentiles(delays)}"
                  f"; {len(answered) - len(delays)} not seen")
            a.close()
            b.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
