"""Lines and points benchmark: agreement of ``Scene.intersect`` with line and
point tolerances against the float64 brute force of ``testkit/reference/lines.py``,
and the pick rate on a large point cloud.

    python -m bench.lines_points                    # 10,000 rays per tolerance, 1M points
    python -m bench.lines_points --rays 2000 --points 100000

Agreement: the random scene of ``testkit/scenes/lines_points.py`` (polylines,
loose segments, two instances of a point cloud, three instanced planes),
``--rays`` random rays per tolerance set; each ray agrees when kernel and
brute force report the same primitive kind, object and index. Rays whose
brute-force answer lies within a relative 1e-6 of flipping (a distance at
the tolerance, near ties: ``testkit.reference.lines.MARGIN``) are counted apart as
ambiguous. The bar: 100% of the unambiguous rays.

Rate: ``--points`` uniform random points in a unit cube, one point set
instanced once, picked with ten times ``--rays`` random rays aimed into the
cube, a point tolerance of 0.002; then as many points on a terrain's surface
(a scan, about one point per pixel of the view), picked through as many
random pixels of a 1920x1080 camera with a 3-pixel cone
(``Camera.pixel_tolerance``); each on one thread and on all of numba's
threads (best of ``--repeat``). The bar: >= 1 M rays/s on both. For scale, a numpy brute
force (every point against a block of rays) is timed on a few rays.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

import bvh
from testkit.reference.lines import agreement
from testkit.scenes.lines_points import TOLERANCES, random_rays, random_scene


def _agreement(rays: int) -> None:
    scene = random_scene()
    exclude = [info.id for info in scene.objects if info.kind == "sphere"]
    origins, directions = random_rays(rays, 11)
    for tolerance in TOLERANCES:
        hits = scene.intersect(origins, directions, exclude=exclude, line_tolerance=tolerance[0],
                               line_slope=tolerance[1], point_tolerance=tolerance[2], point_slope=tolerance[3])
        counts = {}
        agree, ambiguous, wrong = agreement(scene, hits, origins, directions, 0.0, np.inf,
                                            np.tile(tolerance, (rays, 1)), counts)
        firm = rays - ambiguous
        kinds = np.bincount(hits.primitive + 1, minlength=5)
        print(f"tolerance {tolerance}: {agree}/{firm} unambiguous rays agree ({100.0 * agree / max(firm, 1):.2f}%), "
              f"{ambiguous} ambiguous of which {counts['ambiguous_agreeing']} agree too; misses {kinds[0]}, "
              f"triangles {kinds[1]}, segments {kinds[3]}, points {kinds[4]}")


def _rate(points: int, rays: int, repeat: int) -> None:
    rng = np.random.default_rng(0)
    cloud = rng.uniform(size=(points, 3))
    scene = bvh.Scene()
    started = time.perf_counter()
    scene.add_instance(points=scene.add_points(cloud))
    print(f"{points} points built in {time.perf_counter() - started:.2f} s")
    origins = rng.uniform(-1, 2, size=(rays, 3))
    directions = rng.uniform(0.2, 0.8, size=(rays, 3)) - origins
    scene.intersect(origins[:10], directions[:10], point_tolerance=0.002)
    threads = numba.get_num_threads()
    for count in sorted({1, threads}):
        numba.set_num_threads(count)
        best = np.inf
        for _ in range(repeat):
            started = time.perf_counter()
            hits = scene.intersect(origins, directions, point_tolerance=0.002)
            best = min(best, time.perf_counter() - started)
        print(f"{count} thread(s): {rays / best / 1e6:.2f} M rays/s ({hits.hit.mean():.0%} hit)")
    numba.set_num_threads(threads)
    # A scan-like cloud: the same number of points on a terrain's surface,
    # filling the view of a camera whose pixels pick with a 3-pixel cone.
    ground = rng.uniform(size=(points, 2))
    surface = np.column_stack([ground, 0.05 * np.sin(6.0 * ground[:, 0]) * np.cos(5.0 * ground[:, 1])])
    scan = bvh.Scene()
    scan.add_instance(points=scan.add_points(surface))
    camera = bvh.Camera.pinhole([0.5, 0.5, 1.2], [0.5, 0.5, 0.0], [0, 1, 0], 40.0, 1920, 1080)
    pixels = rng.uniform([0, 0], [1920, 1080], size=(rays, 2))
    eye, towards = camera.rays(pixels)
    world, slope = camera.pixel_tolerance(pixels, 3.0)
    scan.intersect(eye[:10], towards[:10], point_tolerance=world[:10], point_slope=slope[:10])
    for count in sorted({1, threads}):
        numba.set_num_threads(count)
        best = np.inf
        for _ in range(repeat):
            started = time.perf_counter()
            hits = scan.intersect(eye, towards, point_tolerance=world, point_slope=slope)
            best = min(best, time.perf_counter() - started)
        print(f"surface cloud, {rays} pixels of a 1920x1080 camera, 3-pixel cone, {count} thread(s): "
              f"{len(pixels) / best / 1e6:.2f} M rays/s ({hits.hit.mean():.0%} hit)")
    numba.set_num_threads(threads)
    few = 20
    started = time.perf_counter()
    for i in range(few):
        rel = cloud - origins[i]
        t = np.maximum(0.0, rel @ directions[i] / (directions[i] @ directions[i]))
        gap = t[:, None] * directions[i] - rel
        np.einsum("ij,ij->i", gap, gap)
    print(f"numpy brute force: {few / (time.perf_counter() - started):.0f} rays/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rays", type=int, default=10_000)
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rate-only", action="store_true", help="skip the agreement")
    args = parser.parse_args()
    if not args.rate_only:
        _agreement(args.rays)
    _rate(args.points, args.rays * 10, args.repeat)


if __name__ == "__main__":
    main()
