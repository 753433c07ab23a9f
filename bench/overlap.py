"""Overlap queries on the bunny: agreement with the float64 oracle and rate.

    python -m bench.overlap                  # 10,000 queries of each kind
    python -m bench.overlap --queries 2000   # fewer

Each query is one random shape (``testkit.scenes.shapes.random_shape``, about
a tenth of the bunny across, centred in its box) and one call of
``MeshBVH.overlap`` on the calling thread (one shape per call: the walk is
serial). The rate is queries per second over the calls alone, after a
warm-up. Agreement: the engine's faces contain every face the oracle finds
for the shape shrunk by 1e-9 of the bunny's size and lie within those it
finds for the shape grown by as much (faces closer than that to the
boundary are decided by rounding); the oracle sees only faces whose box
meets the shape's box.
"""

import argparse
import time
from pathlib import Path

import numpy as np

import bvh
from testkit.meshes import load_mesh
from testkit.scenes.shapes import KINDS, agrees, bracket, face_boxes, random_shape

BUNNY = Path(__file__).resolve().parents[1].parent / "shared" / "meshes" / "stanford-bunny.obj"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000, help="queries of each kind")
    parser.add_argument("--mesh", type=Path, default=BUNNY)
    args = parser.parse_args()
    vertices, faces = load_mesh(args.mesh)
    mesh = bvh.build(vertices, faces)
    stored = (vertices - mesh.offset).astype(np.float32).astype(np.float64) + mesh.offset
    lo, hi = stored.min(axis=0), stored.max(axis=0)
    size = float((hi - lo).max())
    boxes = face_boxes(stored, faces)
    print(f"{args.mesh.name}: {len(faces)} faces, {args.queries} queries of each kind, one thread")
    print(f"{'kind':8} {'agree':>13} {'faces/query':>12} {'queries/s':>10}")
    rng = np.random.default_rng(2024)
    for kind in KINDS:
        shapes = [random_shape(rng, kind, (lo + hi) / 2, size * 0.1) for _ in range(args.queries)]
        mesh.overlap(shapes[0][0])
        start = time.perf_counter()
        found = [mesh.overlap(shape) for shape, _ in shapes]
        elapsed = time.perf_counter() - start
        agree = sum(agrees(f, *bracket(stored, faces, shape, 1e-9 * size, box, boxes))
                    for f, (shape, box) in zip(found, shapes))
        mean = sum(len(f) for f in found) / len(found)
        print(f"{kind:8} {agree:>6}/{len(shapes):<6} {mean:>12.1f} {len(shapes) / elapsed:>10.0f}")


if __name__ == "__main__":
    main()
