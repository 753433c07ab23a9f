"""Scenes of 10^4 to 10^6 objects (issue 38): placing, picking, dragging, saving.

    python -m bench.scale [--sizes 10000,100000,1000000] [--moves 300] [--rays 200000] [--embree-instances]

Each size runs in a process of its own, so that its peak memory is its own.
The scene: four sphere meshes of 80 to 320 triangles, instanced on a grid of
ten storeys (a building, a plant), each turned about the vertical and scaled
by 0.5-1.2. What is measured, on one thread unless said:

- ``place``: the objects placed (one ``Scene.add_instances``) and
  ``ready``: the first pick after them, which builds the top level; wall
  time, and the process's CPU time beside it (all its threads: the top
  level's build runs on several), which a machine shared with other work
  stretches less;
- ``rays/s``: closest hits of ``random_pick_rays`` aimed at the scene's box,
  one thread and all threads;
- ``drag``: ``--moves`` single moves each followed by a one-ray pick at the
  moved object, the objects chosen across the scene and moved to random places
  across it (the median, p99 and max of move + pick), and the same moving each
  object a little (``in place``);
- ``batch``: 1,000 objects moved in one ``set_transforms`` and a pick, ten times;
- ``save``/``open``: ``Scene.save`` and ``Scene.open`` (memory-mapped) and the
  first pick after opening;
- ``peak``: the process's peak resident memory beyond what it held before the
  scene was made, per object (the meshes are a few kilobytes).

``--embree-instances`` adds Embree 3's own instancing (bench/embree_instances.c,
one ``RTC_GEOMETRY_TYPE_INSTANCE`` per object) on the same transforms and rays:
its build time (``rtcCommitScene``) and rays/s on one thread.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

#: Issue 38's bars at 10^6 objects.
BARS = {"place_s": 10.0, "median_ms": 1.0, "p99_ms": 4.0, "max_ms": 16.0, "batch_ms": 16.0, "rays_per_s": 1.5e6,
        "bytes_per_object": 600.0, "save_open_s": 2.0}

STOREYS = 10
SPACING = 3.0


def sphere_meshes() -> list[tuple[np.ndarray, np.ndarray]]:
    """Four unit spheres of 80 to 320 triangles."""
    import trimesh

    meshes = [trimesh.creation.icosphere(subdivisions=1), trimesh.creation.uv_sphere(count=[6, 10]),
              trimesh.creation.uv_sphere(count=[8, 12]), trimesh.creation.icosphere(subdivisions=2)]
    return [(np.asarray(m.vertices, np.float64), np.asarray(m.faces, np.int64)) for m in meshes]


def grid_layout(count: int, seed: int = 38) -> tuple[np.ndarray, np.ndarray]:
    """``(mesh ids (K,), transforms (K, 4, 4))``: ``count`` objects on ten
    storeys of a square grid, ``SPACING`` apart, each turned about z and
    scaled by 0.5-1.2."""
    rng = np.random.default_rng(seed)
    storeys = min(STOREYS, count)
    side = int(np.ceil(np.sqrt(count / storeys)))
    cell = np.arange(count)
    x, y, z = cell % side, (cell // side) % side, cell // (side * side)
    angle = rng.uniform(0.0, 2.0 * np.pi, count)
    scale = rng.uniform(0.5, 1.2, count)
    transforms = np.zeros((count, 4, 4))
    transforms[:, 0, 0] = transforms[:, 1, 1] = np.cos(angle) * scale
    transforms[:, 0, 1] = -np.sin(angle) * scale
    transforms[:, 1, 0] = np.sin(angle) * scale
    transforms[:, 2, 2] = scale
    transforms[:, :3, 3] = np.stack([x, y, z], axis=1) * SPACING
    transforms[:, 3, 3] = 1.0
    return (cell % 4).astype(np.int64), transforms


def place(scene, mesh_ids: np.ndarray, transforms: np.ndarray) -> np.ndarray:
    """Object ids of the placed objects: one ``Scene.add_instances``."""
    return scene.add_instances(mesh_ids, transforms)


def percentile_ms(samples: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples) * 1e3, q))


def drag(scene, ids: np.ndarray, transforms: np.ndarray, moves: int, across: bool, seed: int) -> dict:
    """``moves`` single moves, each with a one-ray pick straight down at the moved object."""
    rng = np.random.default_rng(seed)
    lo, hi = scene.bounds
    chosen = rng.choice(ids.shape[0], moves, replace=False)
    times = []
    for k in chosen:
        matrix = transforms[k].copy()
        if across:
            matrix[:3, 3] = lo + rng.random(3) * (hi - lo)
        else:
            matrix[:3, 3] += rng.uniform(-0.2, 0.2, 3)
        origin = matrix[:3, 3] + (0.0, 0.0, 50.0)
        start = time.perf_counter()
        scene.set_transform(int(ids[k]), matrix)
        scene.intersect(origin, (0.0, 0.0, -1.0))
        times.append(time.perf_counter() - start)
        transforms[k] = matrix
    return {"median_ms": percentile_ms(times, 50), "p99_ms": percentile_ms(times, 99),
            "max_ms": max(times) * 1e3}


def batch_moves(scene, ids: np.ndarray, transforms: np.ndarray, size: int, rounds: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    lo, hi = scene.bounds
    times = []
    for _ in range(rounds):
        chosen = rng.choice(ids.shape[0], size, replace=False)
        matrices = transforms[chosen].copy()
        matrices[:, :3, 3] += rng.uniform(-0.5, 0.5, (size, 3))
        origin = 0.5 * (lo + hi) + (0.0, 0.0, 50.0)
        start = time.perf_counter()
        scene.set_transforms(ids[chosen], matrices)
        scene.intersect(origin, (0.0, 0.0, -1.0))
        times.append(time.perf_counter() - start)
        transforms[chosen] = matrices
    return {"batch_median_ms": percentile_ms(times, 50), "batch_max_ms": max(times) * 1e3}


def rays_per_second(scene, origins, directions, threads: int, repeat: int = 3) -> float:
    import numba

    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        scene.intersect(origins[:1000], directions[:1000])
        best = min(_timed(lambda: scene.intersect(origins, directions)) for _ in range(repeat))
    finally:
        numba.set_num_threads(previous)
    return origins.shape[0] / best


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def current_rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def run_size(count: int, moves: int, rays: int, embree: bool) -> dict:
    """Everything for one size, in this process."""
    import bvh
    from bench.rays_gen import random_pick_rays

    meshes = sphere_meshes()
    mesh_ids, transforms = grid_layout(count)
    placed = transforms.copy()  # as the rays/s were measured: the drags below move objects
    # Warm the kernels on a small scene first: compile time is not the scene's.
    warm = bvh.Scene()
    warm_ids = [warm.add_mesh(v, f) for v, f in meshes]
    place(warm, np.array(warm_ids)[mesh_ids[:64]], transforms[:64])
    warm.intersect(np.zeros((300, 3)) + (1.0, 1.0, 50.0), np.tile((0.0, 0.0, -1.0), (300, 1)))
    warm.set_transform(0, transforms[0])
    warm.intersect((1.0, 1.0, 50.0), (0.0, 0.0, -1.0))
    del warm
    baseline = current_rss_bytes()
    result = {"objects": count}

    start, start_cpu = time.perf_counter(), time.process_time()
    scene = bvh.Scene()
    scene_meshes = np.array([scene.add_mesh(v, f) for v, f in meshes])
    ids = place(scene, scene_meshes[mesh_ids], transforms)
    result["place_s"], result["place_cpu_s"] = time.perf_counter() - start, time.process_time() - start_cpu
    scene.intersect((1.0, 1.0, 50.0), (0.0, 0.0, -1.0))
    result["ready_s"], result["ready_cpu_s"] = time.perf_counter() - start, time.process_time() - start_cpu

    bounds = scene.bounds
    origins, directions = random_pick_rays(bounds, rays, seed=7)
    result["rays_per_s_1"] = rays_per_second(scene, origins, directions, 1)
    result["rays_per_s_all"] = rays_per_second(scene, origins, directions, os.cpu_count() or 1)
    result["hit_fraction"] = float(np.mean(scene.intersect(origins, directions).object >= 0))

    result.update({f"in_place_{key}": value for key, value in
                   drag(scene, ids, transforms, moves, across=False, seed=1).items()})
    result.update(drag(scene, ids, transforms, moves, across=True, seed=2))
    result.update(batch_moves(scene, ids, transforms, min(1000, count), rounds=10, seed=3))
    result["peak_bytes_per_object"] = (peak_rss_bytes() - baseline) / count

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "scene")
        start = time.perf_counter()
        scene.save(path)
        result["save_s"] = time.perf_counter() - start
        del scene
        start = time.perf_counter()
        opened = bvh.Scene.open(path)
        result["open_s"] = time.perf_counter() - start
        opened.intersect((1.0, 1.0, 50.0), (0.0, 0.0, -1.0))
        result["open_and_pick_s"] = time.perf_counter() - start
        del opened

    if embree:
        result.update(embree_instances(meshes, mesh_ids, placed, origins, directions))
    return result


def embree_instances(meshes, mesh_ids, transforms, origins, directions) -> dict:
    """Embree's build time and one-thread rays/s on the same objects and rays
    (bench/embree_instances.c), or the reason it did not run."""
    from bench.scene import compile_embree_instances, embree_instanced_meshes

    with tempfile.TemporaryDirectory() as directory:
        program = compile_embree_instances(directory)
        if program is None:
            return {"embree": "skipped: needs gcc and Debian's libembree-dev"}
        rates = embree_instanced_meshes(program, directory, meshes, mesh_ids, transforms, (origins, directions),
                                        repeat=3)
    return {"embree_build_s": rates["build"][0], "embree_rays_per_s_1": rates["instances"][0],
            "embree_hit_fraction": rates["instances"][2]}


def report(results: list[dict]) -> None:
    print()
    print("| objects | place s (CPU) | ready s (CPU) | rays/s 1 thread | all | "
          "move+pick median / p99 / max ms (across) | in place max ms | 1,000 moves + pick ms | save / open s | "
          "peak B/object |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['objects']:,} | {r['place_s']:.2f} ({r['place_cpu_s']:.2f}) | "
              f"{r['ready_s']:.2f} ({r['ready_cpu_s']:.2f}) | {r['rays_per_s_1'] / 1e6:.2f} M | "
              f"{r['rays_per_s_all'] / 1e6:.2f} M | {r['median_ms']:.2f} / {r['p99_ms']:.2f} / {r['max_ms']:.1f} | "
              f"{r['in_place_max_ms']:.1f} | {r['batch_median_ms']:.1f} (max {r['batch_max_ms']:.1f}) | "
              f"{r['save_s']:.2f} / {r['open_and_pick_s']:.2f} | {r['peak_bytes_per_object']:.0f} |")
    for r in results:
        if "embree_rays_per_s_1" in r:
            print(f"Embree instancing, {r['objects']:,} objects: build {r['embree_build_s']:.2f} s, "
                  f"{r['embree_rays_per_s_1'] / 1e6:.2f} M rays/s on one thread (hits {r['embree_hit_fraction']:.4f}, "
                  f"ours {r['hit_fraction']:.4f}); ours / Embree: {r['rays_per_s_1'] / r['embree_rays_per_s_1']:.2f}x")
        elif "embree" in r:
            print(f"Embree: {r['embree']}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--moves", type=int, default=300)
    parser.add_argument("--rays", type=int, default=200_000)
    parser.add_argument("--embree-instances", action="store_true")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_size(args.one, args.moves, args.rays, args.embree_instances)))
        return 0
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        command = [sys.executable, "-m", "bench.scale", "--one", str(size), "--moves", str(min(args.moves, size)),
                   "--rays", str(args.rays)] + (["--embree-instances"] if args.embree_instances else [])
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            print(done.stderr[-3000:], file=sys.stderr)
            return done.returncode
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(results[-1]), flush=True)
    report(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
