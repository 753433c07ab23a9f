"""Sphere-cast benchmark: ``MeshBVH.sphere_cast`` on the Stanford bunny.

    python -m bench.sphere_cast                 # 10,000 casts, radius 1% of the bunny's size
    python -m bench.sphere_cast --casts 2000 --radius 0.05

The casts are ``bench.rays_gen.random_pick_rays`` (origins one box diagonal
from the centre, aimed into the box, unit directions). Every cast is checked
against the float64 brute force of ``testkit/reference/proximity.py`` on the
geometry the BVH holds (float32 vertices relative to its offset, converted
back exactly). To keep that affordable, each cast's brute force runs over the
triangles whose bounding sphere comes within the radius of its path (a
conservative cull: no other triangle can be touched), not all 69,451.
Rates are the best of ``--repeat`` runs, on one thread and on all of numba's
threads, beside ``MeshBVH.intersect`` on the same rays.
"""

from __future__ import annotations

import argparse
import os
import time

import numba
import numpy as np

import bvh
from testkit.reference import proximity as ref

from .meshes import SHARED_MESHES, load_mesh
from .rays_gen import random_pick_rays

BUNNY = os.path.join(SHARED_MESHES, "stanford-bunny.obj")


def best_of(fn, repeat: int) -> float:
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def candidates(corners: np.ndarray, origins: np.ndarray, directions: np.ndarray, radius: float, chunk: int = 32):
    """For each cast, the triangles whose bounding sphere (about the corners'
    mean) comes within ``radius`` of the half-line ``origin + s * unit``."""
    centres = corners.mean(axis=1)
    reach = np.sqrt(((corners - centres[:, None, :]) ** 2).sum(axis=2)).max(axis=1) + radius
    units = directions / np.linalg.norm(directions, axis=1, keepdims=True)
    out = []
    for start in range(0, len(origins), chunk):
        w = centres[None, :, :] - origins[start:start + chunk, None, :]
        along = np.maximum((w * units[start:start + chunk, None, :]).sum(axis=2), 0.0)
        gap = w - along[..., None] * units[start:start + chunk, None, :]
        near = (gap * gap).sum(axis=2) <= (reach * (1 + 1e-9)) ** 2
        out.extend(np.flatnonzero(row) for row in near)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.sphere_cast", description=__doc__.split("\n\n")[0])
    parser.add_argument("--casts", type=int, default=10_000)
    parser.add_argument("--radius", type=float, default=0.01, help="radius as a fraction of the box diagonal")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if not os.path.exists(BUNNY):
        raise SystemExit(f"{BUNNY} is absent: the meshes live in ../shared beside the checkout")
    mesh_data = load_mesh(BUNNY)
    vertices, faces = mesh_data.vertices, mesh_data.faces
    mesh = bvh.build(vertices, faces)
    size = float(np.linalg.norm(vertices.max(axis=0) - vertices.min(axis=0)))
    radius = args.radius * size
    origins, directions = random_pick_rays(mesh_data.bounds, args.casts, seed=1)

    start = time.perf_counter()
    hits = mesh.sphere_cast(origins, directions, radius)
    first = time.perf_counter() - start

    # Agreement with the brute force, cast by cast over its candidates.
    stored = (vertices - mesh.offset).astype(np.float32).astype(np.float64) + mesh.offset
    corners = stored[faces]
    start = time.perf_counter()
    t_ref = np.full(args.casts, np.inf)
    tri_ref = np.full(args.casts, -1)
    pairs = 0
    for i, rows in enumerate(candidates(corners, origins, directions, radius)):
        if rows.size == 0:
            continue
        pairs += rows.size
        answer = ref.sphere_cast(stored, faces[rows], origins[i], directions[i], radius)
        t_ref[i] = answer.t[0]
        tri_ref[i] = rows[answer.triangle[0]] if answer.triangle[0] >= 0 else -1
    oracle_s = time.perf_counter() - start
    hit = np.isfinite(t_ref)
    same_hit = np.isfinite(hits.t) == hit
    both = hit & np.isfinite(hits.t)
    relative = np.abs(hits.t[both] - t_ref[both]) / t_ref[both]
    # Agreement: the same hit or miss and, on a hit, t to 1e-9 relative (the
    # triangle may differ where faces are touched at one t: an edge, a corner).
    agree = same_hit.copy()
    agree[both] = relative <= 1e-9
    same_triangle = (hits.triangle[both] == tri_ref[both]).mean() if both.any() else 1.0

    threads = numba.config.NUMBA_NUM_THREADS
    rates = {}
    for label, count in (("1T", 1), (f"{threads}T", threads)):
        numba.set_num_threads(count)
        rates[label] = (args.casts / best_of(lambda: mesh.sphere_cast(origins, directions, radius), args.repeat),
                        args.casts / best_of(lambda: mesh.intersect(origins, directions), args.repeat))
    numba.set_num_threads(threads)

    print("bench.sphere_cast: MeshBVH.sphere_cast on stanford-bunny")
    print(f"  mesh      : {len(faces):,} triangles, diagonal {size:.4g}; radius {radius:.4g} ({args.radius:g} of it)")
    print(f"  casts     : {args.casts:,} random pick rays (bench.rays_gen, seed 1), {hit.mean():.1%} touch")
    print(f"  first call: {first:.2f} s (JIT compile or cache load, and the casts)")
    print(f"  oracle    : testkit/reference/proximity.sphere_cast over {pairs:,} culled (cast, triangle) pairs, "
          f"{oracle_s:.1f} s")
    print()
    print(f"{'':12}{'casts':>8}{'hit/miss':>10}{'agree':>10}{'same tri':>10}{'max rel dt':>12}")
    print(f"{'agreement':12}{args.casts:>8,}{same_hit.mean():>10.2%}{agree.mean():>10.2%}{same_triangle:>10.2%}"
          f"{relative.max(initial=0.0):>12.2e}")
    print("  agree = same hit or miss and t within 1e-9 relative; same tri: of the casts both touch")
    print()
    print(f"{'threads':10}{'casts/s':>14}{'rays/s':>14}{'casts/rays':>12}")
    for label, (cast_rate, ray_rate) in rates.items():
        print(f"{label:10}{cast_rate:>14,.0f}{ray_rate:>14,.0f}{cast_rate / ray_rate:>12.3f}")
    if not agree.all():
        bad = np.flatnonzero(~agree)[:10]
        print(f"\nDISAGREE on {int((~agree).sum())} casts, first: {bad.tolist()}")


if __name__ == "__main__":
    main()
