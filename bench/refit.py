"""Refit against rebuild (``MeshBVH.refit``, issue 14).

    python -m bench.refit             # the bunny (if ../shared/meshes has it) and the 1.31M-triangle mesh
    python -m bench.refit --repeat 5

Every timing is the best of ``--repeat`` runs after a warm-up. "1T" is one
thread, "NT" all of ``numba.config.NUMBA_NUM_THREADS``. A refit moves every
vertex by a small random displacement (1e-3 of the mesh size), alternating
between two such positions so that every timed call does real work; the
rebuild is ``bvh.build`` of the same displaced mesh. The issue's bars: the
1.31M-triangle mesh in 60 ms and the bunny in 2 ms, both threads.
"""

from __future__ import annotations

import argparse
import os

import numba
import numpy as np

from .meshes import SHARED_MESHES, displaced_icosphere, load_mesh
from .rays import best_of, fmt, print_table

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
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    bar = next((ms for key, ms in BARS_MS.items() if mesh.name.startswith(key)), None)
    return [mesh.name, fmt(mesh.triangle_count, ",d", 10)] + [
        fmt(timings[key] * 1e3, ".2f", 10) for key in ("refit 1T", "refit NT", "build 1T", "build NT")
    ] + [fmt(bar, ".0f", 7), "yes" if bar and timings["refit NT"] * 1e3 <= bar else "no",
         fmt(tree.refit_cost_ratio, ".3f", 7)]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args(argv)
    import bvh

    rows = [_row(bvh, mesh, args.repeat) for mesh in _meshes()]
    print_table(f"refit and rebuild, ms (NT = {numba.config.NUMBA_NUM_THREADS} threads)",
                [("mesh", 24), ("triangles", 10), ("refit 1T", 10), ("refit NT", 10), ("build 1T", 10),
                 ("build NT", 10), ("bar ms", 7), ("meets", 5), ("SAH x", 7)], rows)


if __name__ == "__main__":
    main()
