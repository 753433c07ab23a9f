"""Our engine against trimesh's default ray engine: ``python -m bench.trimesh_engine``.

trimesh answers ``mesh.ray.intersects_first`` with its own engine (an rtree of
triangle boxes, then numpy tests) when Embree is not installed. It is the
slowest anchor by far, so it gets few rays: ``--rays`` random pick rays per
mesh (the same generator as ``bench.rays``), one thread for ours; the
share of rays on which both agree about hit or miss is printed beside.
Needs the ``bench`` extra (trimesh's engine uses ``rtree``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from bench.meshes import load_mesh, shared_mesh_paths
from bench.rays_gen import random_pick_rays

#: The meshes of ``../shared/meshes`` measured by default (the others are alike).
DEFAULT_MESHES = ("stanford-bunny", "nefertiti", "ogre")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rays", type=int, default=2000)
    parser.add_argument("--meshes", nargs="*", default=list(DEFAULT_MESHES))
    args = parser.parse_args(argv)

    import numba
    import trimesh
    import trimesh.ray.ray_triangle

    import bvh

    numba.set_num_threads(1)
    paths = {os.path.splitext(os.path.basename(p))[0]: p for p in shared_mesh_paths()}
    missing = [name for name in args.meshes if name not in paths]
    if missing:
        print(f"meshes not found in ../shared/meshes: {', '.join(missing)}", file=sys.stderr)
        return 2
    print(f"{'mesh':16s} {'triangles':>9s} {'ours M rays/s':>14s} {'trimesh rays/s':>15s} {'ratio':>9s} agree")
    for name in args.meshes:
        mesh = load_mesh(paths[name])
        origins, directions = random_pick_rays(mesh.bounds, args.rays, seed=1)
        ours = bvh.build(mesh.vertices, mesh.faces)
        ours.intersect(origins, directions)
        start = time.perf_counter()
        hits = ours.intersect(origins, directions)
        ours_rate = args.rays / (time.perf_counter() - start)

        engine = trimesh.ray.ray_triangle.RayMeshIntersector(
            trimesh.Trimesh(mesh.vertices, mesh.faces, process=False))
        engine.intersects_first(origins[:10], directions[:10])
        start = time.perf_counter()
        theirs = engine.intersects_first(origins, directions)
        theirs_rate = args.rays / (time.perf_counter() - start)

        agree = ((hits.triangle >= 0) == (theirs >= 0)).mean()
        print(f"{name:16s} {mesh.triangle_count:9,d} {ours_rate / 1e6:14.2f} {theirs_rate:15,.0f} "
              f"{ours_rate / theirs_rate:8,.0f}x {100 * agree:.2f}% hit/miss")
    return 0


if __name__ == "__main__":
    sys.exit(main())
