"""Scene benchmark: a 1,000-instance scene of one mesh, against that mesh alone.

    python -m bench.scene [--instances 1000] [--rays 200000] [--repeat 9] [--embree-instances] [--embree]

Reports the build time of the scene, the median cost of one ``set_transform``
followed by a one-ray pick, closest-hit rays/s on one thread and on all of
them, the ratio to the single mesh's rate (issue 14's bars: >= 0.6 for the
cube layout, >= 0.9 for the floor), and the time to open a saved
1.3M-triangle scene. ``--embree`` adds the anchor: Embree (one thread,
robust) on the same rays, on the bare mesh and on the scene flattened into
one triangle soup, since embreex offers no instancing. The mesh is the
Stanford bunny from ../shared/meshes when present, else the sample torus.
Each ray set is ``random_pick_rays`` aimed at its own target's bounds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

import bvh

from . import embree_anchor as emb
from .meshes import SHARED_MESHES, displaced_icosphere, load_mesh
from .rays_gen import random_pick_rays


LAYOUTS = ("cube", "floor")

#: Issue 14's bars: a 1,000-instance scene's closest-hit rate on one thread
#: over a bare mesh's, per layout.
RATIO_BARS = {"cube": 0.6, "floor": 0.9}


def grid_transforms(count: int, size: float, layout: str = "cube", seed: int = 3) -> np.ndarray:
    """``count`` transforms 1.5 mesh sizes (box diagonals) apart, each scaled
    by 0.7–1.3, one in seven mirrored.

    ``cube``: a 10 x 10 x 10 lattice, each instance turned at random, the
    hardest case (a ray crosses up to ten instances' boxes). ``floor``: a
    32 x 32 grid on a ground plane, each turned about the vertical only, as
    objects stand in an editor's scene.
    """
    rng = np.random.default_rng(seed)
    if layout == "cube":
        side = int(np.ceil(count ** (1 / 3)))
        cells = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)[:count]
    else:
        side = int(np.ceil(count ** 0.5))
        cells = np.stack(np.meshgrid(np.arange(side), [0], np.arange(side), indexing="ij"), axis=-1)
        cells = cells.reshape(-1, 3)[:count]
    transforms = np.tile(np.eye(4), (count, 1, 1))
    for k in range(count):
        if layout == "cube":
            rotation, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        else:
            angle = rng.uniform(0.0, 2.0 * np.pi)
            rotation = np.array([[np.cos(angle), 0.0, np.sin(angle)], [0.0, 1.0, 0.0],
                                 [-np.sin(angle), 0.0, np.cos(angle)]])
        scale = rng.uniform(0.7, 1.3)
        transforms[k, :3, :3] = rotation * scale * (-1.0 if k % 7 == 0 else 1.0)
        transforms[k, :3, 3] = cells[k] * 1.5 * size
    return transforms


def flattened_triangles(vertices: np.ndarray, faces: np.ndarray, transforms: np.ndarray) -> np.ndarray:
    """(K * F, 3, 3) float32: every instance's triangles in the world, one soup."""
    soup = np.empty((len(transforms) * len(faces), 3, 3), np.float32)
    for k, transform in enumerate(transforms):
        world = vertices @ transform[:3, :3].T + transform[:3, 3]
        soup[k * len(faces):(k + 1) * len(faces)] = world[faces]
    return soup


def embree_ratio(mesh, transforms: np.ndarray, mesh_rays, scene_rays, rays: int) -> tuple[float, float]:
    """Embree's one-thread closest-hit rate on the bare mesh and on the scene
    flattened into one triangle soup (embreex offers no instancing), on the
    same rays as ours: ``(bare, flattened)`` rays/s."""
    bare = emb.EmbreeAnchor(np.asarray(mesh.vertices, np.float32)[mesh.faces])
    flat = emb.EmbreeAnchor(flattened_triangles(mesh.vertices, mesh.faces, transforms))
    bare_rays = [np.ascontiguousarray(a, np.float32) for a in mesh_rays]
    flat_rays = [np.ascontiguousarray(a, np.float32) for a in scene_rays]
    return (best_rate(lambda: bare.intersect(*bare_rays), rays), best_rate(lambda: flat.intersect(*flat_rays), rays))


EMBREE_HEADER = "/usr/include/embree3/rtcore.h"
EMBREE_SOURCE = Path(__file__).with_name("embree_instances.c")


def compile_embree_instances(directory: str) -> str | None:
    """Build ``embree_instances.c`` into ``directory``; its path, or None
    (with the reason printed) when Embree 3's headers or gcc are missing."""
    if not os.path.exists(EMBREE_HEADER) or shutil.which("gcc") is None:
        print(f"Embree with instancing skipped: needs gcc and {EMBREE_HEADER} "
              "(Debian: apt-get install gcc libembree-dev)")
        return None
    program = os.path.join(directory, "embree_instances")
    subprocess.run(["gcc", "-O2", "-o", program, str(EMBREE_SOURCE), "-lembree3"], check=True)
    return program


def embree_instanced(program: str, directory: str, mesh, transforms: np.ndarray, mesh_rays, scene_rays,
                     repeat: int) -> dict:
    """Embree's closest-hit rates, one thread, on the bare mesh and on its
    instances under ``transforms`` (Embree's own two-level instancing), on
    the same rays as ours: ``{"bare": (best, median, hit fraction),
    "instances": (...), "build": (seconds,)}`` in rays/s."""
    return embree_instanced_meshes(program, directory, [(mesh.vertices, mesh.faces)],
                                   np.zeros(len(transforms), np.int64), transforms, scene_rays, repeat, mesh_rays)


def embree_instanced_meshes(program: str, directory: str, meshes, mesh_of: np.ndarray, transforms: np.ndarray,
                            scene_rays, repeat: int, mesh_rays=None) -> dict:
    """As :func:`embree_instanced` for instances of several ``meshes``
    (``[(vertices, faces), ...]``), instance ``i`` showing ``meshes[mesh_of[i]]``;
    ``mesh_rays`` (rays at the first mesh alone) default to the scene's rays."""
    mesh_rays = scene_rays if mesh_rays is None else mesh_rays
    path = os.path.join(directory, "input.bin")
    with open(path, "wb") as out:
        out.write(np.array([len(meshes), len(transforms), len(scene_rays[0])], "<u4").tobytes())
        for vertices, faces in meshes:
            out.write(np.array([len(vertices), len(faces)], "<u4").tobytes())
            out.write(np.ascontiguousarray(vertices, "<f4").tobytes())
            out.write(np.ascontiguousarray(faces, "<u4").tobytes())
        out.write(np.ascontiguousarray(mesh_of, "<u4").tobytes())
        out.write(np.ascontiguousarray(transforms[:, :3, :4], "<f4").tobytes())
        for origins, directions in (mesh_rays, scene_rays):
            out.write(np.ascontiguousarray(np.hstack([origins, directions]), "<f4").tobytes())
    printed = subprocess.run([program, path, str(repeat)], check=True, capture_output=True, text=True).stdout
    return {line.split()[0]: tuple(float(x) for x in line.split()[1:]) for line in printed.splitlines()}


def best_rate(fn, rays: int, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return rays / best


def paired_rates(first, second, rays: int, repeat: int) -> tuple[list[float], list[float]]:
    """Rays/s of ``first`` and ``second``, timed in turns ``repeat`` times
    each, so that a slow spell of the machine falls on both."""
    rates = ([], [])
    for _ in range(repeat):
        for fn, out in zip((first, second), rates):
            start = time.perf_counter()
            fn()
            out.append(rays / (time.perf_counter() - start))
    return rates


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--rays", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=9,
                        help="timed runs of each, mesh and scene in turns; the rates are the best run")
    parser.add_argument("--no-open", action="store_true", help="skip the 1.3M-triangle save/open")
    parser.add_argument("--embree-instances", action="store_true",
                        help="also Embree 3's own instancing on the same rays (bench/embree_instances.c, built "
                             "with gcc against Debian's libembree-dev)")
    parser.add_argument("--embree", action="store_true",
                        help="also Embree on the scene flattened into one soup (1,000 bunnies: about 70 s of "
                             "build and 10 GB of memory per layout)")
    args = parser.parse_args(argv)

    bunny = os.path.join(SHARED_MESHES, "stanford-bunny.obj")
    if os.path.exists(bunny):
        mesh = load_mesh(bunny)
    else:
        import sample_meshes
        from testkit.meshes import load_mesh as load_sample

        vertices, faces = load_sample(sample_meshes.path("torus.ply"))
        mesh = type("Mesh", (), {"name": "torus", "vertices": vertices, "faces": faces,
                                 "bounds": np.array([vertices.min(axis=0), vertices.max(axis=0)])})()
    print(f"mesh: {mesh.name}, {len(mesh.faces):,} triangles; {args.instances} instances; "
          f"{args.rays:,} random pick rays; {numba.get_num_threads()} threads available")

    single = bvh.build(mesh.vertices, mesh.faces)
    size = float(np.linalg.norm(mesh.bounds[1] - mesh.bounds[0]))
    mesh_rays = random_pick_rays(mesh.bounds, args.rays, seed=1)
    single.intersect(*mesh_rays)
    threads = numba.get_num_threads()
    # Compile (or load) the scene kernels first, so build times are builds.
    warm = bvh.Scene()
    warm.add_instance(warm.add_mesh(np.eye(3), [[0, 1, 2]]))
    warm.intersect(np.zeros((1000, 3)), np.ones((1000, 3)))
    warm.intersect([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
    anchors = []
    for layout in LAYOUTS:
        transforms = grid_transforms(args.instances, size, layout)
        start = time.perf_counter()
        scene = bvh.Scene()
        mesh_id = scene.add_mesh(mesh.vertices, mesh.faces, name=mesh.name)
        mesh_built = time.perf_counter()
        for k, transform in enumerate(transforms):
            scene.add_instance(mesh_id, transform, name=f"{mesh.name}{k}")
        scene.intersect([0.0, 0.0, 0.0], [1.0, 0.0, 0.0])
        built = time.perf_counter()
        print(f"\n[{layout}] scene build: {built - start:.3f} s ({mesh_built - start:.3f} s mesh BVH, "
              f"{built - mesh_built:.3f} s for {args.instances} instances + top level + first pick)")

        scene_rays = random_pick_rays(scene.bounds, args.rays, seed=2)
        scene.intersect(*scene_rays)
        rates = {}
        medians = {}
        for n in (1, threads):
            numba.set_num_threads(n)
            mesh_rates, scene_rates = paired_rates(lambda: single.intersect(*mesh_rays),
                                                   lambda: scene.intersect(*scene_rays), args.rays, args.repeat)
            for what, measured in (("mesh", mesh_rates), ("scene", scene_rates)):
                rates[(what, n)] = max(measured)
                medians[(what, n)] = statistics.median(measured)
        numba.set_num_threads(threads)
        hit_rate = scene.intersect(*scene_rays).hit.mean()

        rng = np.random.default_rng(5)
        costs = []
        one_origin, one_direction = scene_rays[0][:1], scene_rays[1][:1]
        for _ in range(300):
            oid = int(rng.integers(args.instances))
            moved = transforms[oid].copy()
            moved[:3, 3] += rng.normal(size=3) * 0.01 * size
            start = time.perf_counter()
            scene.set_transform(oid, moved)
            scene.intersect(one_origin, one_direction)
            costs.append(time.perf_counter() - start)
        move_ms = statistics.median(costs) * 1e3
        single_pick = []
        for i in range(300):
            start = time.perf_counter()
            scene.intersect(scene_rays[0][i], scene_rays[1][i])
            single_pick.append(time.perf_counter() - start)

        print(f"{'':34}{'1 thread':>14}{f'{threads} threads':>14}")
        for what, label in (("mesh", f"single {mesh.name} (MeshBVH)"),
                            ("scene", f"{args.instances} instances (Scene)")):
            print(f"{label + ' rays/s':34}{rates[(what, 1)] / 1e6:>12.2f} M{rates[(what, threads)] / 1e6:>12.2f} M")
        ratio = rates[("scene", 1)] / rates[("mesh", 1)]
        print(f"scene hit rate {hit_rate:.1%}, single mesh hit rate {single.intersect(*mesh_rays).hit.mean():.1%}")
        bar = RATIO_BARS[layout]
        print(f"scene / single mesh, 1 thread: {ratio:.2f}x   (bar >= {bar}x: {'met' if ratio >= bar else 'NOT met'})")
        print(f"  (best of {args.repeat} each; the medians give "
              f"{medians[('scene', 1)] / medians[('mesh', 1)]:.2f}x)")
        print(f"set_transform + 1-ray pick, median: {move_ms:.3f} ms   "
              f"(bar <= 5 ms: {'met' if move_ms <= 5 else 'NOT met'})")
        print(f"1-ray pick alone, median: {statistics.median(single_pick) * 1e6:.1f} us")
        anchors.append((layout, transforms, scene_rays, rates[("scene", 1)]))

    if args.embree_instances:
        with tempfile.TemporaryDirectory() as directory:
            program = compile_embree_instances(directory)
            for layout, transforms, scene_rays, ours in anchors if program else ():
                rates = embree_instanced(program, directory, mesh, transforms, mesh_rays, scene_rays, args.repeat)
                (bare, bare_median, bare_hit), (inst, inst_median, inst_hit) = rates["bare"], rates["instances"]
                print(f"\n[{layout}] Embree 3 with instancing, 1 thread: {inst / 1e6:.2f} M rays/s against "
                      f"{bare / 1e6:.2f} M on the bare mesh = {inst / bare:.2f}x (medians: "
                      f"{inst_median / bare_median:.2f}x); hit rates {inst_hit:.1%} and {bare_hit:.1%}; "
                      f"ours: {ours / inst:.2f}x Embree's instanced rate")

    # The anchor last: building and freeing a 10 GB soup slowed the next
    # layout's own timings (a bare bunny at 3.3 M rays/s against 4.8).
    for layout, transforms, scene_rays, ours in anchors if args.embree and emb.AVAILABLE else ():
        bare, flat = embree_ratio(mesh, transforms, mesh_rays, scene_rays, args.rays)
        print(f"\n[{layout}] Embree, 1 thread, the scene flattened: {flat / 1e6:.2f} M rays/s against "
              f"{bare / 1e6:.2f} M on the bare mesh = {flat / bare:.2f}x  (ours: {ours / flat:.2f}x Embree's "
              f"flattened rate)")

    if not args.no_open:
        big = displaced_icosphere()
        big_scene = bvh.Scene()
        big_scene.add_instance(big_scene.add_mesh(big.vertices, big.faces, name=big.name))
        with tempfile.TemporaryDirectory() as directory:
            start = time.perf_counter()
            big_scene.save(directory)
            saved = time.perf_counter() - start
            start = time.perf_counter()
            opened = bvh.Scene.open(directory)
            open_s = time.perf_counter() - start
            start = time.perf_counter()
            opened.intersect(*random_pick_rays(big.bounds, 1, seed=3))
            first_pick = time.perf_counter() - start
        print(f"{big.name} ({len(big.faces):,} triangles): save {saved:.2f} s, open {open_s * 1e3:.0f} ms "
              f"(checksums verified), first pick after open {first_pick * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
