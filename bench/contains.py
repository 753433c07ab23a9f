"""Inside/outside benchmark: ``MeshBVH.contains`` on points in each mesh's box.

    python -m bench.contains                  # 100,000 points per closed shared mesh, and the bunny's rate
    python -m bench.contains --points 20000   # fewer points
    python -m bench.contains --oracle-pairs 1e8

For each closed mesh of ``../shared/meshes`` (the six that
``tests/test_watertight.py`` knows) and for the bunny (open: holes in its
base; rates only), uniform random points in the mesh's box:

- agreement of ``contains`` with the naive float64 winding number
  (``testkit.reference.proximity.winding_numbers``, every triangle for every
  point) on the geometry the BVH holds. That oracle does some 3 million
  (point, triangle) pairs a second, so it runs on the first points only, as
  many as ``--oracle-pairs`` allows (the table says how many);
- agreement on every point with ray parity: for a closed mesh, the number
  of crossings of a ray from the point (``MeshBVH.intersect_all``, which
  counts a crossing at a shared edge once) has the parity of the winding
  number, so ``round(winding_number)`` must be odd exactly where it is odd.
  Three rays in different directions; points where they disagree (on or
  next to the surface) are left out. Parity, not inside: where a mesh
  overlaps itself (the cow) the winding number is 2, inside, and even;
- the largest error of the winding number against the oracle;
- points per second on one and on two threads (wall clock, best of
  ``--repeat`` after a warm-up), on one thread per CPU second (what the
  code does when other work shares the cores: the table prints the load
  average), and the time of the dipole pass.
"""

from __future__ import annotations

import argparse
import os
import time

import numba
import numpy as np

from .meshes import SHARED_MESHES

CLOSED = ("nefertiti", "cow", "fandisk", "rocker-arm", "homer", "spot")
RATE_ONLY = ("stanford-bunny",)


def load(name: str):
    import trimesh

    mesh = trimesh.load(os.path.join(SHARED_MESHES, f"{name}.obj"), force="mesh", process=True)
    return np.asarray(mesh.vertices, np.float64), np.asarray(mesh.faces, np.int64)


def best_of(fn, repeat: int, clock=time.perf_counter) -> float:
    fn()
    best = np.inf
    for _ in range(repeat):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best


def parity(mesh, points: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
    """``(odd, unanimous)``: whether the crossings along three rays are odd,
    and whether the three agree."""
    votes = []
    for _ in range(3):
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        hits = mesh.intersect_all(points, np.broadcast_to(direction, points.shape))
        votes.append(np.bincount(hits.ray, minlength=len(points)) % 2 == 1)
    votes = np.array(votes)
    return votes[0], (votes == votes[0]).all(axis=0)


def run(name: str, args, rng) -> list[str]:
    import bvh
    from bvh.queries import winding
    from testkit.reference.proximity import winding_numbers

    vertices, faces = load(name)
    mesh = bvh.build(vertices, faces)
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    points = lo + rng.random((args.points, 3)) * (hi - lo)
    winding.dipole_rows(mesh.nodes, mesh.triangles)
    start = time.perf_counter()
    winding.dipole_rows(mesh.nodes, mesh.triangles)
    dipole_ms = (time.perf_counter() - start) * 1e3
    winding = mesh.winding_number(points)
    inside = winding >= 0.5
    rates = []
    for threads in (1, 2):
        numba.set_num_threads(threads)
        rates.append(args.points / best_of(lambda: mesh.contains(points), args.repeat))
    numba.set_num_threads(1)
    rates.append(args.points / best_of(lambda: mesh.contains(points), args.repeat, time.process_time))
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    row = [name, f"{mesh.triangle_count:,}", f"{rates[0] / 1e6:.2f}", f"{rates[1] / 1e6:.2f}", f"{rates[2] / 1e6:.2f}",
           f"{dipole_ms:.1f}"]
    if name in RATE_ONLY:
        return row + ["-"] * 4
    count = int(min(args.points, max(100, args.oracle_pairs // len(faces))))
    stored = (vertices - mesh.offset).astype(np.float32).astype(np.float64) + mesh.offset
    reference = winding_numbers(stored, faces, points[:count])
    oracle_bad = int(((reference >= 0.5) != inside[:count]).sum())
    by_rays, unanimous = parity(mesh, points, rng)
    odd = np.round(winding).astype(np.int64) % 2 == 1
    ray_bad = int((by_rays != odd)[unanimous].sum())
    error = float(np.abs(reference - winding[:count]).max())
    return row + [f"{count - oracle_bad:,} / {count:,}", f"{int(unanimous.sum()) - ray_bad:,} / {int(unanimous.sum()):,}",
                  f"{error:.2g}", f"{inside.mean():.2f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=100_000, help="points per mesh (default 100000)")
    parser.add_argument("--oracle-pairs", type=float, default=5e7,
                        help="(point, triangle) pairs the naive oracle may take per mesh (default 5e7)")
    parser.add_argument("--repeat", type=int, default=3, help="timings per rate, best kept")
    parser.add_argument("--mesh", help="only meshes whose name contains this")
    args = parser.parse_args()
    args.oracle_pairs = int(args.oracle_pairs)
    names = [name for name in CLOSED + RATE_ONLY if os.path.exists(os.path.join(SHARED_MESHES, f"{name}.obj"))
             and (not args.mesh or args.mesh in name)]
    if not names:
        print(f"no shared meshes in {SHARED_MESHES}")
        return
    rng = np.random.default_rng(2024)
    columns = ["mesh", "triangles", "1T Mpts/s", "2T Mpts/s", "1T Mpts/CPU-s", "dipoles ms", "= oracle", "= ray parity",
               "max |w err|", "inside"]
    rows = [run(name, args, rng) for name in names]
    widths = [max(len(c), *(len(r[k]) for r in rows)) for k, c in enumerate(columns)]
    print(f"\ncontains: {args.points:,} uniform points in each mesh's box; {numba.config.NUMBA_NUM_THREADS} threads "
          f"available; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths)))
    for row in rows:
        print("  ".join(v.rjust(w) for v, w in zip(row, widths)))


if __name__ == "__main__":
    main()
