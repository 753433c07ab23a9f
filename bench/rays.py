"""Closest-hit benchmark of ``bvh`` side by side with Embree (``embreex``).

    python -m bench.rays              # every mesh in ../shared/meshes + a 1.3M-triangle mesh
    python -m bench.rays --quick      # fewer rays, no 1M mesh
    python -m bench.rays --mesh bunny # meshes whose name contains "bunny"

Every timing is the best of ``--repeat`` runs after a warm-up. "1T" is one
thread (``numba.set_num_threads(1)``; one embreex ``run`` call), "NT" all
threads (``numba.config.NUMBA_NUM_THREADS``; one embreex ``run`` per thread on
contiguous chunks). Both engines get the same rays; Embree gets them as
float32 (the conversion is not timed), ours as float64.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import subprocess
import sys
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import embree_anchor as emb
from .meshes import BIG_NAME, SHARED_MESHES, Mesh, displaced_icosphere, load_mesh, shared_mesh_paths
from .rays_gen import camera_rays, random_pick_rays

#: Issue 14: one thread, closest hit, random and camera rays, >= 0.8x Embree on each.
BARS_MESHES = ("stanford-bunny", "nefertiti", "ogre")
RATIO_BAR = 0.8
BUILD_BAR_S = 3.0
SAH_BAR = 1.05
BYTES_BAR = 64


# --------------------------------------------------------------------------- helpers


def best_of(fn, repeat: int):
    best, result = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def fmt(x, spec: str, width: int) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "-".rjust(width)
    return format(x, spec).rjust(width)


def print_table(title: str, columns: list[tuple[str, int]], rows: list[list[str]]) -> None:
    print()
    print(title)
    header = " ".join(name.rjust(w) if i else name.ljust(w) for i, (name, w) in enumerate(columns))
    print(header)
    print("-" * len(header))
    for row in rows:
        print(" ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, (_, w)) in enumerate(zip(row, columns))))


def load_ours():
    """``bvh`` if its API imports, else the reason it does not."""
    try:
        bvh = importlib.import_module("bvh")
        bvh.build  # noqa: B018
        return bvh, None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"


def load_sweep_builder():
    """``sweep_build`` from ``testkit/reference/sweep_builder.py``, or None and the reason."""
    try:
        from testkit.reference.sweep_builder import sweep_build
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return sweep_build, None


# --------------------------------------------------------------------------- one mesh


class Bench:
    def __init__(self, args, bvh, numba):
        self.args = args
        self.bvh = bvh
        self.numba = numba
        self.nthreads = numba.config.NUMBA_NUM_THREADS if numba else 1
        self.pool = ThreadPoolExecutor(self.nthreads) if emb.AVAILABLE else None

    def threads(self, n: int) -> None:
        if self.numba is not None:
            self.numba.set_num_threads(n)

    def warm_up(self) -> dict:
        """Compile (or load cached) kernels and start Embree's TBB workers."""
        info = {}
        small = displaced_icosphere(subdivisions=2, seed=1)
        o, d = random_pick_rays(small.bounds, 1000, seed=1)
        if self.bvh is not None:
            t = time.perf_counter()
            self.threads(1)
            m = self.bvh.build(small.vertices, small.faces)
            m.intersect(o, d)
            m.intersect(o[:1], d[:1])
            self.threads(self.nthreads)
            m.intersect(o, d)
            m.sah_cost()
            m.leaf_stats()
            info["ours_warmup_s"] = time.perf_counter() - t
            try:
                info["threading_layer"] = self.numba.threading_layer()
            except Exception:
                pass
        if emb.AVAILABLE:
            a = emb.EmbreeAnchor(small.triangles32)
            a.intersect(o.astype(np.float32), d.astype(np.float32))
        return info

    def run_mesh(self, mesh: Mesh, big: bool) -> dict:
        args = self.args
        r = {"name": mesh.name, "tris": mesh.triangle_count}
        bounds = mesh.bounds
        diag = float(np.linalg.norm(bounds[1] - bounds[0]))
        seed = zlib.crc32(mesh.name.encode())
        n_random = args.big_rays if big else args.rays
        ro, rd = random_pick_rays(bounds, n_random, seed)
        co, cd = camera_rays(bounds, args.camera, args.camera)
        r["n_random"], r["n_camera"] = len(ro), len(co)
        repeat = args.repeat

        # ---------------------------------------------------------------- ours
        # ---------------------------------------------------------------- builds
        m = anchor = None
        if self.bvh is not None:
            self.threads(1)
            r["build_s"], m = best_of(lambda: self.bvh.build(mesh.vertices, mesh.faces), repeat)
            self.threads(self.nthreads)
            r["sah"] = m.sah_cost()
            r["nodes"] = m.node_count
            r["depth"] = m.depth
            r["bytes_per_tri"] = m.nbytes / m.triangle_count
            r["leaf"] = m.leaf_stats()
            if big and not args.no_sweep:
                self.sweep(mesh, r)
            elif big:
                r["sweep_msg"] = "skipped (--no-sweep)"
        if emb.AVAILABLE:
            tris = mesh.triangles32
            builds = [emb.EmbreeAnchor(tris, robust=True, single_core=True) for _ in range(repeat)]
            r["e_build_1"] = min(b.build_s for b in builds)
            r["e_upload"] = min(b.upload_s for b in builds)
            del builds
            builds = [emb.EmbreeAnchor(tris, robust=True, single_core=False) for _ in range(repeat)]
            r["e_build_n"] = min(b.build_s for b in builds)
            anchor = builds[-1]
            del builds, tris

        # ---------------------------------------------------------------- rays
        # The repeats of ours and Embree alternate, so that load from other
        # processes on the machine hits both engines alike.
        ours_hits, emb_hits = {}, {}
        for kind, (o, d) in (("rnd", (ro, rd)), ("cam", (co, cd))):
            o32 = np.ascontiguousarray(o, dtype=np.float32)
            d32 = np.ascontiguousarray(d, dtype=np.float32)
            chunks = emb.split_chunks(o32, d32, self.nthreads)
            for mode, nthreads in (("1", 1), ("n", self.nthreads)):
                best_ours = best_emb = np.inf
                self.threads(nthreads)
                if m is not None:
                    m.intersect(o[:4096], d[:4096])
                if anchor is not None:
                    anchor.intersect(o32[:4096], d32[:4096])
                for _ in range(repeat):
                    if m is not None:
                        t = time.perf_counter()
                        hits = m.intersect(o, d)
                        best_ours = min(best_ours, time.perf_counter() - t)
                        if mode == "1":
                            ours_hits[kind] = hits
                    if anchor is not None:
                        t = time.perf_counter()
                        if mode == "1":
                            emb_hits[kind] = anchor.intersect(o32, d32)
                        else:
                            anchor.intersect_chunks(self.pool, chunks)
                        best_emb = min(best_emb, time.perf_counter() - t)
                if m is not None:
                    r[f"ours_{kind}_{mode}"] = len(o) / best_ours / 1e6
                if anchor is not None:
                    r[f"e_{kind}_{mode}"] = len(o) / best_emb / 1e6
            self.threads(self.nthreads)
        del m, anchor

        # ---------------------------------------------------------------- ratios, agreement
        for key in ("rnd_1", "rnd_n", "cam_1", "cam_n"):
            if f"ours_{key}" in r and f"e_{key}" in r:
                r[f"ratio_{key}"] = r[f"ours_{key}"] / r[f"e_{key}"]
        if "build_s" in r and "e_build_1" in r:
            r["build_ratio"] = r["e_build_1"] / r["build_s"]
        for kind in ("rnd", "cam"):
            if kind in ours_hits and kind in emb_hits:
                ours_tri = np.asarray(ours_hits[kind].triangle)
                ours_t = np.asarray(ours_hits[kind].t)
                e_tri = np.asarray(emb_hits[kind]["primID"]).astype(np.int64)
                e_t = np.asarray(emb_hits[kind]["tfar"], dtype=np.float64)
                o_hit, e_hit = ours_tri >= 0, e_tri >= 0
                r[f"agree_{kind}"] = float(np.mean(o_hit == e_hit))
                r[f"same_tri_{kind}"] = float(np.mean(ours_tri == e_tri))
                both = o_hit & e_hit
                r[f"dt_{kind}"] = float(np.max(np.abs(ours_t[both] - e_t[both])) / diag) if both.any() else 0.0
                r[f"hitrate_{kind}"] = float(np.mean(o_hit))
        return r

    def sweep(self, mesh: Mesh, r: dict) -> None:
        sweep_build, why = load_sweep_builder()
        if sweep_build is None:
            r["sweep_msg"] = f"sweep builder unavailable ({why})"
            return
        try:
            t = time.perf_counter()
            ms = self.bvh.build(mesh.vertices, mesh.faces, builder=sweep_build)
            r["sweep_s"] = time.perf_counter() - t
            r["sweep_sah"] = ms.sah_cost()
            r["sah_ratio"] = r["sah"] / r["sweep_sah"]
        except Exception as exc:
            r["sweep_msg"] = f"sweep builder unavailable ({type(exc).__name__}: {exc})"


# --------------------------------------------------------------------------- report


COLD_START_BAR_S = 2.0

COLD_START_SCRIPT = """
import numpy as np, bvh
mesh = bvh.build(np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]))
assert mesh.intersect([0.2, 0.2, 1.0], [0.0, 0.0, -1.0]).triangle[0] == 0
"""


def cold_start_seconds() -> float:
    """Wall time of a fresh process from start to its first answer, with the
    JIT cache already on disk (the run before fills it if needed)."""
    command = [sys.executable, "-c", COLD_START_SCRIPT]
    subprocess.run(command, check=True)
    start = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - start


def report(results: list[dict], bench: Bench, have_ours: bool) -> None:
    n = bench.nthreads
    rows = []
    for r in results:
        leaf = r.get("leaf") or {}
        leaf_s = f"{leaf['mean']:.1f}/{leaf['max']}" if leaf else "-"
        mtris = r["tris"] / r["build_s"] / 1e6 if "build_s" in r else None
        rows.append([
            r["name"], f"{r['tris']:,}", fmt(r.get("build_s"), ".3f", 7), fmt(mtris, ".2f", 6),
            fmt(r.get("sah"), ".2f", 7), fmt(r.get("nodes"), ",", 9), fmt(r.get("depth"), "d", 5), leaf_s,
            fmt(r.get("bytes_per_tri"), ".1f", 6),
            fmt(r.get("e_build_1"), ".3f", 7), fmt(r.get("e_build_n"), ".3f", 7), fmt(r.get("e_upload"), ".3f", 7),
            fmt(r.get("build_ratio"), ".2f", 6),
        ])
    print_table(
        "BUILD (ours: one thread; Embree robust: commit on one core / on all cores; upload = embreex geometry copy)",
        [("mesh", 26), ("tris", 9), ("build s", 7), ("Mtri/s", 6), ("SAH", 7), ("nodes", 9), ("depth", 5),
         ("leaf avg/max", 12), ("B/tri", 6), ("E 1c s", 7), ("E Nc s", 7), ("E upl s", 7), ("E1/us", 6)],
        rows,
    )
    print("  E1/us = Embree one-core build seconds / ours one-thread build seconds (> 1: ours faster)")

    rows = []
    for r in results:
        row = [r["name"], f"{r['n_random']:,}"]
        for kind in ("rnd", "cam"):
            for t in ("1", "n"):
                row += [fmt(r.get(f"ours_{kind}_{t}"), ".2f", 6), fmt(r.get(f"e_{kind}_{t}"), ".2f", 6),
                        fmt(r.get(f"ratio_{kind}_{t}"), ".2f", 5)]
        rows.append(row)
    cols = [("mesh", 26), ("rnd rays", 9)]
    for kind in ("rnd", "cam"):
        for t in ("1T", f"{n}T"):
            cols += [(f"{kind} {t} ours", 6), ("Embree", 6), ("ratio", 5)]
    print_table(
        f"CLOSEST HIT, Mrays/s (random pick rays; camera {bench.args.camera}x{bench.args.camera} row-major; "
        f"ratio = ours/Embree)",
        [(name if len(name) <= w else name, max(w, len(name))) for name, w in cols],
        rows,
    )

    if have_ours and emb.AVAILABLE:
        rows = []
        for r in results:
            rows.append([
                r["name"], fmt(r.get("hitrate_rnd"), ".4f", 8), fmt(r.get("agree_rnd"), ".6f", 9),
                fmt(r.get("same_tri_rnd"), ".6f", 9), fmt(r.get("dt_rnd"), ".1e", 8),
                fmt(r.get("hitrate_cam"), ".4f", 8), fmt(r.get("agree_cam"), ".6f", 9),
                fmt(r.get("same_tri_cam"), ".6f", 9), fmt(r.get("dt_cam"), ".1e", 8),
            ])
        print_table(
            "AGREEMENT ours vs Embree (hit = our hit rate; agree = same hit/miss; same tri = same triangle or both miss; "
            "max|dt|/diag where both hit)",
            [("mesh", 26), ("rnd hit", 8), ("rnd agree", 9), ("same tri", 9), ("max dt", 8),
             ("cam hit", 8), ("cam agree", 9), ("same tri", 9), ("max dt", 8)],
            rows,
        )

    big = [r for r in results if r["name"].startswith(BIG_NAME)]
    if big and have_ours:
        r = big[0]
        print()
        if "sweep_sah" in r:
            print(f"SWEEP vs BINNED on {r['name']} ({r['tris']:,} tris): binned SAH {r['sah']:.3f}, "
                  f"full-sweep SAH {r['sweep_sah']:.3f} (sweep build {r['sweep_s']:.1f} s), "
                  f"binned/sweep = {r['sah_ratio']:.4f}")
        else:
            print(f"SWEEP vs BINNED on {r['name']}: {r.get('sweep_msg', 'sweep builder unavailable')}")

    # ------------------------------------------------------------------ bars
    print()
    print("SUMMARY (bars of issues 2 and 14)")
    by_name = {r["name"]: r for r in results}

    def line(label, value, bar_text, ok):
        verdict = "n/a " if ok is None else ("PASS" if ok else "FAIL")
        print(f"  [{verdict}] {label:<52} {value:>12}   bar {bar_text}")

    for name in BARS_MESHES:
        r = by_name.get(name)
        for kind, label in (("rnd", "random"), ("cam", "camera")):
            v = r.get(f"ratio_{kind}_1") if r else None
            line(f"{name}: one-thread {label} rays, ours/Embree", fmt(v, ".2f", 0) + ("x" if v else ""),
                 f">= {RATIO_BAR}x", None if v is None else v >= RATIO_BAR)
    r = big[0] if big else None
    v = r.get("build_s") if r else None
    line(f"{r['name'] if r else '1M mesh'}: build, one thread", fmt(v, ".2f", 0) + (" s" if v else ""),
         f"<= {BUILD_BAR_S} s", None if v is None else v <= BUILD_BAR_S)
    v = r.get("sah_ratio") if r else None
    line("1M mesh: SAH binned / full sweep", fmt(v, ".4f", 0), f"<= {SAH_BAR}",
         None if v is None else v <= SAH_BAR)
    bpt = [(x["bytes_per_tri"], x["name"]) for x in results if "bytes_per_tri" in x]
    v, who = max(bpt) if bpt else (None, "")
    line(f"max bytes/triangle ({who})" if who else "max bytes/triangle", fmt(v, ".1f", 0), f"<= {BYTES_BAR}",
         None if v is None else v <= BYTES_BAR)
    if have_ours:
        v = cold_start_seconds()
        line("second process: start to first answer (cached JIT)", f"{v:.2f} s", f"<= {COLD_START_BAR_S} s",
             v <= COLD_START_BAR_S)
    agree = [x["agree_rnd"] for x in results if "agree_rnd" in x]
    if agree:
        print(f"  [info] min random-ray hit/miss agreement with Embree: {min(agree):.6f} "
              f"(sanity only; the 99.99% bar is against the float64 oracle in the tests)")
    print("  (oracle agreement, leaks and NaN are bars of the tests: tests/test_mesh_bvh.py, test_watertight.py)")


# --------------------------------------------------------------------------- main


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.rays", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer rays, skip the 1M-triangle mesh")
    p.add_argument("--mesh", help="only meshes whose name contains this (e.g. bunny, icosphere)")
    p.add_argument("--rays", type=int, help="random rays per mesh (default 200000, --quick 50000)")
    p.add_argument("--big-rays", type=int, default=1_000_000, help="random rays for the 1M mesh")
    p.add_argument("--camera", type=int, help="camera resolution (square; default 512, --quick 256)")
    p.add_argument("--no-sweep", action="store_true",
                   help="skip the full-sweep SAH reference build of the 1M mesh (about 3 minutes)")
    p.add_argument("--repeat", type=int, default=3, help="timings per measurement, best kept")
    args = p.parse_args(argv)
    args.rays = args.rays or (50_000 if args.quick else 200_000)
    args.camera = args.camera or (256 if args.quick else 512)
    t_start = time.perf_counter()

    bvh, why_not = load_ours()
    try:
        import numba
    except Exception:
        numba = None

    print("bench.rays: closest-hit picking, bvh vs Embree")
    print(f"  machine   : {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"numpy {np.__version__}" + (f", numba {numba.__version__} ({numba.config.NUMBA_NUM_THREADS} threads)"
                                        if numba else ""))
    if bvh is None:
        print(f"  ours      : bvh.build unavailable ({why_not}) -- our columns are empty")
    if emb.AVAILABLE:
        print(f"  Embree    : embreex {emb.version()}, EmbreeScene(robust=True) [RTC_SCENE_FLAG_ROBUST], float32 "
              f"triangle soup; queries run(o, d, output=1) = rtcIntersect1 per ray")
        print("              1T = one run() call; NT = one run() per thread on contiguous chunks; "
              "build '1c' = commit with all threads pinned to one CPU, 'Nc' = TBB default")
    else:
        print(f"  Embree    : skipped, `import embreex` failed ({emb.IMPORT_ERROR}); "
              f"install the bench extra: pip install -e '.[bench]'")

    bench = Bench(args, bvh, numba)
    info = bench.warm_up()
    if "ours_warmup_s" in info:
        print(f"  warm-up   : ours first build+queries (JIT compile or cache load) {info['ours_warmup_s']:.2f} s; "
              f"numba threading layer {info.get('threading_layer', '?')}")

    paths = shared_mesh_paths()
    if not paths:
        print(f"  meshes    : {SHARED_MESHES} absent -- skipping the shared meshes")
    jobs = [(path, False) for path in paths]
    if not args.quick or (args.mesh and args.mesh.lower() in BIG_NAME):
        jobs.append((None, True))
    if args.mesh:
        key = args.mesh.lower()
        jobs = [(path, big) for path, big in jobs
                if (big and key in BIG_NAME) or (path and key in os.path.basename(path).lower())]
        if not jobs:
            print(f"  no mesh matches --mesh {args.mesh!r}")
            return 1
    print(f"  rays      : {args.rays:,} random per mesh ({args.big_rays:,} on the 1M mesh), camera "
          f"{args.camera}x{args.camera}, best of {args.repeat}")
    print()

    results = []
    for i, (path, big) in enumerate(jobs, 1):
        t = time.perf_counter()
        mesh = displaced_icosphere(8) if big else load_mesh(path)
        r = bench.run_mesh(mesh, big)
        results.append(r)
        print(f"  [{i}/{len(jobs)}] {mesh.name:<26} {mesh.triangle_count:>9,} tris  {time.perf_counter() - t:6.1f} s",
              flush=True)

    report(results, bench, bvh is not None)
    print(f"\ntotal {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
