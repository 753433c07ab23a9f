"""Refit against rebuild (``MeshBVH.refit``, issue 14).

    python -m bench.refit             # the bunny (if ../shared/meshes has it) and the 1.31M-triangle mesh
    python -m bench.refit --repeat 5

Every timing is the best of ``--repeat`` runs after a warm-up. "1T" is one
thread, "NT" all of ``numba.config.NUMBA_NUM_THREADS``. A refit moves every
vertex by a small random displacement (1e-3 of the mesh size), alternating
between two such positions so that every timed call does real work; the
rebuild is ``bvh.build`` of the same displaced mesh. "scene NT" is
``Scene.update_mesh`` of the mesh under one instance (the refit, plus the
pack's new arrays and the top level). "agree" is the share of 100,000
random pick rays on which the refitted tree answers as a fresh build of the
same vertices: the same hit or miss, ``t`` within 1e-9 relative. The issue's
bars: the 1.31M-triangle mesh in 60 ms and the bunny in 2 ms, both threads,
and 100% agreement.
"""

from __future__ import annotations

import argparse
import os

import numba
import numpy as np

from .meshes import SHARED_MESHES, displaced_icosphere, load_mesh
from .rays import best_of, fmt, print_table
from .rays_gen import random_pick_rays

BARS_MS = {"stanford-bunny": 2.0, "displaced-icosphere": 60.0}


def _meshes():
    bunny = os.path.join(SHARED_MESHES, "stanford-bunny.obj")
    if os.path.exists(bunny):
        yield load_mesh(bunny)
    else:
        print(f"{bunny} is absent: the bunny is skipped")
    yield displaced_icosphere()


def _row(bvh, mesh, repeat: int) -> list[str]:
    rng = np.random.default_rng(0)
    size = float(np.linalg.norm(mesh.vertices.max(axis=0) - mesh.vertices.min(axis=0)))
    positions = [mesh.vertices + rng.normal(size=mesh.vertices.shape) * 1e-3 * size for _ in range(2)]
    tree = bvh.build(mesh.vertices, mesh.faces)
    tree.refit(positions[0])
    calls = iter(range(10 ** 9))

    def refit():
        tree.refit(positions[next(calls) % 2])

    timings = {}
    for label, threads in (("1T", 1), ("NT", numba.config.NUMBA_NUM_THREADS)):
        numba.set_num_threads(threads)
        timings[f"refit {label}"], _ = best_of(refit, repeat)
        timings[f"build {label}"], _ = best_of(lambda: bvh.build(positions[0], mesh.faces), max(1, repeat // 3))
        if threads > 1:
            scene = bvh.Scene()
            scene_mesh = scene.add_mesh(mesh.vertices, mesh.faces)
            scene.add_instance(scene_mesh)
            scene_calls = iter(range(10 ** 9))
            timings["scene NT"], _ = best_of(
                lambda: scene.update_mesh(scene_mesh, positions[next(scene_calls) % 2]), repeat)
            scene.wait_for_rebuilds()
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    tree.refit(positions[0])
    fresh = bvh.build(positions[0], mesh.faces)
    rays = random_pick_rays(np.array([positions[0].min(axis=0), positions[0].max(axis=0)]), 100_000, seed=4)
    ours, theirs = tree.intersect(*rays), fresh.intersect(*rays)
    hit = theirs.triangle >= 0
    same = (ours.triangle >= 0) == hit
    same[hit] &= np.abs(ours.t[hit] - theirs.t[hit]) <= 1e-9 * theirs.t[hit]
    bar = next((ms for key, ms in BARS_MS.items() if mesh.name.startswith(key)), None)
    return [mesh.name, fmt(mesh.triangle_count, ",d", 10)] + [
        fmt(timings[key] * 1e3, ".2f", 10) for key in ("refit 1T", "refit NT", "scene NT", "build 1T", "build NT")
    ] + [fmt(bar, ".0f", 7), "yes" if bar and timings["refit NT"] * 1e3 <= bar else "no",
         fmt(tree.refit_cost_ratio, ".3f", 7), fmt(100.0 * same.mean(), ".3f", 8)]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args(argv)
    import bvh

    rows = [_row(bvh, mesh, args.repeat) for mesh in _meshes()]
    print_table(f"refit and rebuild, ms (NT = {numba.config.NUMBA_NUM_THREADS} threads)",
                [("mesh", 24), ("triangles", 10), ("refit 1T", 10), ("refit NT", 10), ("scene NT", 10),
                 ("build 1T", 10), ("build NT", 10), ("bar ms", 7), ("meets", 5), ("SAH x", 7), ("agree %", 8)],
                rows)


if __name__ == "__main__":
    main()
