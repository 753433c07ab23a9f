"""Edits at editor rates (issue 15): what a move costs as the scene grows.

    python -m bench.edits                  # 1k, 10k and 100k instances of the sample torus
    python -m bench.edits --sizes 1000 10000

Each scene holds N instances of ``sample_meshes/torus.ply`` (2,304
triangles) scattered over a cube whose side grows with the cube root of N,
so the density stays the same. Columns, in milliseconds:

* ``move+pick``: one ``set_transform`` (a drag step of one object) and the
  next single-ray ``intersect``, which takes the new snapshot: the median of
  300. This is the cost the issue asks to be flat in N.
* ``snapshot``: the part of it spent making the snapshot (the refit of the
  top level and the copies of the per-object arrays), the median of 300.
* ``pick``: a single-ray ``intersect`` on an unchanged scene, for scale.
* ``batch``: ``set_transforms`` of all N objects, then one ``intersect``
  (best of 3); the issue's bar is 50 ms for 10,000.
* ``save``: the first ``save`` (meshes and objects), and ``resave``: a save
  after a move, which rewrites only the object table (best of 3).
* ``open``: ``Scene.open`` (best of 3); ``first pick``: the first
  ``intersect`` after it, which builds the top level.
* ``builds``: whole top-level builds during the 300 moves (refits otherwise).

Timings are wall clock on whatever else the machine is doing; run it idle.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from .rays import best_of, fmt, print_table


def _scene(bvh, vertices, faces, count, rng):
    scene = bvh.Scene()
    mesh = scene.add_mesh(vertices, faces)
    side = 4.0 * count ** (1.0 / 3.0)
    matrices = np.tile(np.eye(4), (count, 1, 1))
    matrices[:, :3, 3] = rng.uniform(-side / 2, side / 2, size=(count, 3))
    with scene.batch():
        for matrix in matrices:
            scene.add_instance(mesh, matrix)
    return scene, matrices, side


def measure(bvh, vertices, faces, count: int, repeat: int, moves: int = 300) -> list[str]:
    rng = np.random.default_rng(count)
    scene, matrices, side = _scene(bvh, vertices, faces, count, rng)
    origin = np.array([[0.0, 0.0, side]])
    direction = np.array([[0.01, 0.02, -1.0]])
    scene.intersect(origin, direction)
    pick, _ = best_of(lambda: scene.intersect(origin, direction), 50)

    builds = scene.top_level_builds
    step = np.eye(4)
    step[:3, 3] = 0.05
    move_pick, snapshot = [], []
    for k in range(moves):
        oid = int(rng.integers(count))
        matrices[oid] = step @ matrices[oid]
        start = time.perf_counter()
        scene.set_transform(oid, matrices[oid])
        moved = time.perf_counter()
        scene._snapshot()
        snapped = time.perf_counter()
        scene.intersect(origin, direction)
        move_pick.append(time.perf_counter() - start)
        snapshot.append(snapped - moved)
    builds = scene.top_level_builds - builds

    ids = np.arange(count)

    def move_all():
        matrices[:, :3, 3] += 0.01
        scene.set_transforms(ids, matrices)
        scene.intersect(origin, direction)

    batch, _ = best_of(move_all, repeat)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "scene"
        start = time.perf_counter()
        scene.save(directory)
        first_save = time.perf_counter() - start

        def resave():
            scene.set_transform(0, matrices[0])
            scene.save(directory)

        resave_time, _ = best_of(resave, repeat)
        open_time, opened = best_of(lambda: bvh.Scene.open(directory), repeat)
        start = time.perf_counter()
        opened.intersect(origin, direction)
        first_pick = time.perf_counter() - start
    ms = 1e3
    return [f"{count:,}", fmt(np.median(move_pick) * ms, ".3f", 10), fmt(np.median(snapshot) * ms, ".3f", 9),
            fmt(pick * ms, ".3f", 7), fmt(batch * ms, ".1f", 8), fmt(first_save * ms, ".1f", 8),
            fmt(resave_time * ms, ".1f", 8), fmt(open_time * ms, ".1f", 8), fmt(first_pick * ms, ".1f", 10),
            f"{builds}"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    import bvh
    import sample_meshes
    import trimesh

    mesh = trimesh.load(sample_meshes.path("torus.ply"), process=False)
    vertices, faces = np.asarray(mesh.vertices, np.float64), np.asarray(mesh.faces, np.int64)
    rows = [measure(bvh, vertices, faces, count, args.repeat) for count in args.sizes]
    print_table("edits (ms)", [("objects", 8), ("move+pick", 10), ("snapshot", 9), ("pick", 7), ("batch", 8),
                               ("save", 8), ("resave", 8), ("open", 8), ("first pick", 10), ("builds", 6)],
                rows)


if __name__ == "__main__":
    main()
