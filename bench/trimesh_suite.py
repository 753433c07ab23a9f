"""trimesh's own ray tests on three engines: ``python -m bench.trimesh_suite``.

Runs trimesh 5.2.0's ray tests (``../shared/trimesh-suite``) three times,
each from a fresh copy in a scratch folder, with one engine in the place of
both of trimesh's (see ``testkit/trimesh_suite.py``): ours
(``bvh.trimesh.RayMeshIntersector``), trimesh's default engine
(``trimesh.ray.ray_triangle``) and its Embree engine (``embreex``, in the
``bench`` extra). Prints how many tests pass on each, which fail, and the
wall time of each run (the suite's own work dominates it; it is not a
measure of the engines' speed, ``bench.trimesh_engine`` is). The three runs
take some five minutes on two idle cores.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

from testkit.trimesh_suite import ENGINES, SUITE, run_suite

LABELS = {"bvh": "ours (bvh.trimesh)", "ray_triangle": "trimesh default (ray_triangle)",
          "embree": "trimesh Embree (embreex)"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", nargs="*", default=list(ENGINES), choices=ENGINES)
    args = parser.parse_args(argv)
    if not SUITE.is_dir():
        print(f"{SUITE} is absent: the suite lives in ../shared beside the checkout", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="trimesh-suite-") as scratch:
        for engine in args.engines:
            if engine == "embree" and importlib.util.find_spec("embreex") is None:
                print(f"{LABELS[engine]}: embreex is not installed (pip install -e '.[bench]')", file=sys.stderr)
                continue
            folder = Path(scratch) / engine
            folder.mkdir()
            run = run_suite(engine, folder)
            rows.append((engine, run))
            print(f"{LABELS[engine]:32s} {run.count('passed'):4d} passed {run.count('failed'):3d} failed "
                  f"{run.count('skipped'):3d} skipped of {len(run.outcomes)} in {run.seconds:.0f} s", flush=True)
    for engine, run in rows:
        for name in sorted(run.with_outcome("failed")):
            print(f"  {engine}: FAILED {name}")
        for name in sorted(run.with_outcome("skipped")):
            print(f"  {engine}: skipped {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
