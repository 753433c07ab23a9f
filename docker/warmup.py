"""Compile every numba kernel of ``bvh`` into numba's on-disk cache.

The Dockerfile runs this at build time, as the user the service runs as and
with the ``NUMBA_CACHE_DIR`` it runs with, so that a container answers its
first picks within seconds of starting instead of compiling for minutes::

    python docker/warmup.py                    # compile every kernel, one process per CPU
    python docker/warmup.py --require-cached   # exit 1 unless all came from the cache

The workload is :mod:`service.ops.warmup`'s: the one the service itself runs
(the pick path before ``/ready``, the rest in the background), plus a bare
``bvh.MeshBVH``.

Compiling the scene kernels takes minutes of one CPU, so independent shares
of the work (:data:`GROUPS`) first run in parallel processes (``--jobs``);
then the whole workload runs in this process, loading their kernels from the
cache and compiling anything they missed. It prints the time of each step,
and how many kernel signatures this process compiled and loaded.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from service.ops.warmup import dispatchers, everything, group

#: Shares of the compiling that need no kernel of one another, slowest first:
#: run in parallel processes, they fill the cache in a fraction of the time.
GROUPS = ("closest", "all", "occluded", "mesh", "select", "proximity", "lines")


def _fill_in_parallel(jobs: int) -> bool:
    """Run :data:`GROUPS` in ``jobs`` processes at a time; whether all succeeded."""
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    def run(group):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, __file__, "--group", group], capture_output=True, text=True)
        print(f"  [{group}] {time.perf_counter() - started:.1f} s"
              + ("" if done.returncode == 0 else f": failed\n{done.stdout}{done.stderr}"), flush=True)
        return done.returncode == 0

    with ThreadPoolExecutor(jobs) as pool:
        return all(list(pool.map(run, GROUPS)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--require-cached", action="store_true",
                        help="exit 1 if any kernel had to be compiled rather than loaded from the cache")
    parser.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, len(GROUPS)),
                        help="processes compiling at once before the final pass (default: the CPUs, "
                             f"at most {len(GROUPS)}); 1 compiles everything in this process")
    parser.add_argument("--group", choices=GROUPS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    if args.group:
        group(args.group, rng)
        return 0

    start = time.perf_counter()
    from bvh._jit import _source_keyed_cache_dir

    print(f"numba cache: {_source_keyed_cache_dir()}", flush=True)
    if args.jobs > 1 and not args.require_cached:
        print(f"compiling in {args.jobs} processes:", flush=True)
        if not _fill_in_parallel(args.jobs):
            return 1
    # The whole workload in this process: loads what the groups compiled,
    # compiles whatever they did not reach, and counts both.
    print("every step:", flush=True)
    for name, step in everything(rng):
        started = time.perf_counter()
        step()
        print(f"  {name}: {time.perf_counter() - started:.1f} s", flush=True)
    compiled, loaded = {}, 0
    for name, dispatcher in dispatchers():
        misses = sum(dispatcher.stats.cache_misses.values())
        loaded += sum(dispatcher.stats.cache_hits.values())
        if misses:
            compiled[name] = misses
    print(f"warm-up took {time.perf_counter() - start:.1f} s; in this process {sum(compiled.values())} kernel "
          f"signatures were compiled and {loaded} loaded from the cache")
    if compiled:
        print("compiled here: " + ", ".join(f"{name} ({count})" for name, count in compiled.items()))
    if args.require_cached and compiled:
        print("error: kernels were compiled instead of loaded from the cache", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
