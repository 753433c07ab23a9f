"""Embree (through ``embreex``) as the benchmark's anchor.

How it is configured, measured on this 2-core machine:

* Scenes are built with ``EmbreeScene(robust=True)`` (``RTC_SCENE_FLAG_ROBUST``)
  from a float32 triangle soup ``(F, 3, 3)``.
* Queries are ``scene.run(origins, directions, output=1)``: one
  ``rtcIntersect1`` per ray in a serial loop that releases the GIL, returning
  primID, tfar, u, v, Ng. One call therefore always runs on one thread;
  "all threads" runs one ``run`` per thread on contiguous chunks of the rays.
* embreex creates its device with ``rtcNewDevice(NULL)`` and offers no
  config string, so the BVH build (``rtcCommitScene``, done lazily by the
  first ``run``) uses all TBB workers. A "threads=1" device made through
  ctypes does not limit embreex's devices; for a one-core build we pin every
  thread of the process to one CPU for the duration of the commit.
* Copying the geometry into Embree (``TriangleMesh``) is a Python-level loop in
  embreex and is timed separately ("upload"): it is not Embree's build.
"""

from __future__ import annotations

import contextlib
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

try:
    from embreex import rtcore_scene
    from embreex.mesh_construction import TriangleMesh

    IMPORT_ERROR = None
except Exception as exc:  # the bench extra is not installed
    rtcore_scene = TriangleMesh = None
    IMPORT_ERROR = exc

AVAILABLE = IMPORT_ERROR is None


def version() -> str:
    try:
        from importlib.metadata import version as v

        return v("embreex")
    except Exception:
        return "?"


@contextlib.contextmanager
def one_cpu():
    """Pin every thread of this process (TBB and numba workers included) to a
    single CPU, then restore the previous masks."""
    if not hasattr(os, "sched_setaffinity"):
        yield False
        return
    process_mask = os.sched_getaffinity(0)
    cpu = min(process_mask)
    saved = {}
    for tid in os.listdir("/proc/self/task"):
        tid = int(tid)
        try:
            saved[tid] = os.sched_getaffinity(tid)
            os.sched_setaffinity(tid, {cpu})
        except OSError:
            pass
    try:
        yield True
    finally:
        for tid in os.listdir("/proc/self/task"):  # threads born meanwhile too
            tid = int(tid)
            try:
                os.sched_setaffinity(tid, saved.get(tid, process_mask))
            except OSError:
                pass


_PROBE = (np.zeros((1, 3), np.float32), np.array([[1.0, 0.0, 0.0]], np.float32))


class EmbreeAnchor:
    def __init__(self, triangles32: np.ndarray, robust: bool = True, single_core: bool = False):
        """Upload the triangles and commit the scene. Timings land in
        ``upload_s`` (embreex's geometry copy) and ``build_s`` (the commit)."""
        t0 = time.perf_counter()
        self.scene = rtcore_scene.EmbreeScene(robust=robust)
        TriangleMesh(self.scene, np.ascontiguousarray(triangles32, dtype=np.float32))
        t1 = time.perf_counter()
        cm = one_cpu() if single_core else contextlib.nullcontext()
        with cm:
            t2 = time.perf_counter()
            self.scene.run(*_PROBE)  # first run commits the scene (the BVH build)
            t3 = time.perf_counter()
        self.upload_s = t1 - t0
        self.build_s = t3 - t2

    def intersect(self, origins32: np.ndarray, directions32: np.ndarray) -> dict:
        return self.scene.run(origins32, directions32, output=1)

    def intersect_chunks(self, pool: ThreadPoolExecutor, chunks) -> list:
        """Run pre-split (origins32, directions32) chunks, one per worker."""
        futures = [pool.submit(self.scene.run, o, d, output=1) for o, d in chunks]
        return [f.result() for f in futures]


def split_chunks(origins32: np.ndarray, directions32: np.ndarray, parts: int):
    bounds = np.linspace(0, len(origins32), parts + 1).astype(int)
    return [
        (np.ascontiguousarray(origins32[a:b]), np.ascontiguousarray(directions32[a:b]))
        for a, b in zip(bounds[:-1], bounds[1:])
    ]
