"""The binned SAH builder: tree invariants, fallbacks, quality against a full sweep, and the
parallel build (the serial tree whatever the threads) with its triangle preparation."""

import numba
import numpy as np
import pytest

import bvh
from bvh.builders import sah as builder, triangles
from bvh.builders.sah import binned_sah_build
from bvh.builders.config import BuildConfig
from bvh.builders.triangles import prepare_triangles
from bvh.validation import check_mesh
from tests.meshes import sample_mesh, shared_mesh
from tests.sweep_builder import sweep_build


def random_boxes(n, rng):
    lo = rng.random((n, 3)) * 10
    boxes = np.concatenate([lo, lo + rng.random((n, 3))], axis=1)
    return boxes, (boxes[:, :3] + boxes[:, 3:]) / 2


def check_tree(tree, boxes, config):
    """Every primitive in exactly one leaf; boxes nest; leaves within limits."""
    seen = np.zeros(len(boxes), int)
    depth_of = {0: 0}
    for node in range(len(tree.first)):
        lo, hi = tree.bounds[node, :3], tree.bounds[node, 3:]
        if tree.count[node] > 0:
            prims = tree.order[tree.first[node]:tree.first[node] + tree.count[node]]
            seen[prims] += 1
            assert np.all(boxes[prims, :3] >= lo) and np.all(boxes[prims, 3:] <= hi)
            assert tree.count[node] <= config.max_leaf_size or depth_of[node] == config.max_depth - 1
        else:
            for child in (tree.first[node], tree.first[node] + 1):
                depth_of[child] = depth_of[node] + 1
                assert np.all(tree.bounds[child, :3] >= lo) and np.all(tree.bounds[child, 3:] <= hi)
    assert np.all(seen == 1)
    assert max(depth_of.values()) == tree.depth < config.max_depth
    assert np.array_equal(np.sort(tree.order), np.arange(len(boxes)))


@pytest.mark.parametrize("n", [1, 2, 5, 100, 3000])
def test_tree_invariants_on_random_boxes(n):
    boxes, centroids = random_boxes(n, np.random.default_rng(n))
    config = BuildConfig()
    check_tree(binned_sah_build(boxes, centroids, config), boxes, config)


def test_coincident_centroids_fall_back_to_median_splits():
    boxes = np.tile([0.0, 0, 0, 1, 1, 1], (1000, 1))
    config = BuildConfig(max_leaf_size=4)
    tree = binned_sah_build(boxes, (boxes[:, :3] + boxes[:, 3:]) / 2, config)
    check_tree(tree, boxes, config)
    assert tree.count.max() <= 4
    assert tree.depth <= 9  # balanced: ceil(log2(1000 / 4)) + 1


def test_depth_limit_makes_leaves():
    boxes, centroids = random_boxes(2000, np.random.default_rng(0))
    config = BuildConfig(max_depth=4)
    tree = binned_sah_build(boxes, centroids, config)
    check_tree(tree, boxes, config)
    assert tree.depth == 3 and tree.count.max() > config.max_leaf_size


def test_sweep_reference_builds_valid_trees():
    boxes, centroids = random_boxes(500, np.random.default_rng(1))
    config = BuildConfig()
    check_tree(sweep_build(boxes, centroids, config), boxes, config)


@pytest.mark.parametrize("name", ["terrain.obj", "torus.ply", "capsule_quads.obj"])
def test_binned_sah_cost_within_5_percent_of_full_sweep(name):
    vertices, faces = sample_mesh(name)
    binned = bvh.build(vertices, faces)
    sweep = bvh.build(vertices, faces, builder=sweep_build)
    assert binned.sah_cost() <= 1.05 * sweep.sah_cost()
    # Both trees answer the same.
    rng = np.random.default_rng(2)
    origins = rng.normal(size=(500, 3)) * 50
    directions = -origins + rng.normal(size=(500, 3))
    np.testing.assert_allclose(binned.intersect(origins, directions).t, sweep.intersect(origins, directions).t)


def test_binned_sah_cost_within_5_percent_of_full_sweep_on_the_bunny():
    vertices, faces = shared_mesh("stanford-bunny")
    assert bvh.build(vertices, faces).sah_cost() <= 1.05 * bvh.build(vertices, faces, builder=sweep_build).sah_cost()


def test_more_bins_never_much_worse():
    vertices, faces = sample_mesh("terrain.obj")
    costs = [bvh.build(vertices, faces, bins=b).sah_cost() for b in (4, 16, 64)]
    assert costs[2] <= costs[0] * 1.02


# ---------------------------------------------------------------- parallel build

def same_tree(a, b) -> bool:
    """Node for node and primitive for primitive."""
    return a.depth == b.depth and all(np.array_equal(x, y) for x, y in zip(a[:4], b[:4]))


def boxes_of_mesh(name):
    data = prepare_triangles(*check_mesh(*sample_mesh(name)))
    return data.boxes, data.centroids


def coincident_boxes():
    boxes = np.tile([0.0, 0, 0, 1, 1, 1], (1000, 1))
    return boxes, (boxes[:, :3] + boxes[:, 3:]) / 2


PARALLEL_CASES = {
    "random": (lambda: random_boxes(3000, np.random.default_rng(3)), BuildConfig()),
    # Median splits, in the top levels too.
    "coincident": (coincident_boxes, BuildConfig(max_leaf_size=4)),
    # Leaves made by the depth limit, in the top levels too.
    "depth limit": (lambda: random_boxes(2000, np.random.default_rng(4)), BuildConfig(max_depth=3)),
    "4 bins, leaves of 1": (lambda: random_boxes(1500, np.random.default_rng(5)),
                            BuildConfig(bins=4, min_leaf_size=1, max_leaf_size=1)),
    "mesh": (lambda: boxes_of_mesh("terrain.obj"), BuildConfig()),
}


@pytest.mark.parametrize("case", sorted(PARALLEL_CASES))
@pytest.mark.parametrize("threads, subtree_size", [(2, None), (2, 1), (3, 40)])
def test_parallel_build_is_the_serial_tree(monkeypatch, case, threads, subtree_size):
    monkeypatch.setattr(builder, "PIECE", 100)  # so that the pool bins the top levels of these small inputs
    make, config = PARALLEL_CASES[case]
    boxes, centroids = make()
    serial = builder._build(boxes, centroids, config, 1)
    parallel = builder._build(boxes, centroids, config, threads, subtree_size)
    assert same_tree(serial, parallel)
    check_tree(parallel, boxes, config)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("config", [BuildConfig(), BuildConfig(min_leaf_size=1, max_leaf_size=1)])
def test_small_inputs_serial_and_parallel(monkeypatch, n, config):
    monkeypatch.setattr(builder, "PIECE", 1)
    boxes, centroids = random_boxes(n, np.random.default_rng(n))
    serial = builder._build(boxes, centroids, config, 1)
    assert same_tree(serial, builder._build(boxes, centroids, config, 2, subtree_size=1))
    if n:
        check_tree(serial, boxes, config)
    else:
        assert len(serial.first) == 1 and serial.count[0] == 0 and serial.order.size == 0 and serial.depth == 0


@pytest.fixture
def numba_threads():
    """Restores numba's thread count (a per-thread setting) after the test."""
    threads = numba.get_num_threads()
    yield min(2, numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(threads)


def test_binned_sah_build_uses_numbas_threads_for_the_same_tree(monkeypatch, numba_threads):
    boxes, centroids = random_boxes(5000, np.random.default_rng(6))
    monkeypatch.setattr(builder, "PARALLEL_BUILD", 1000)
    numba.set_num_threads(1)
    serial = binned_sah_build(boxes, centroids, BuildConfig())
    numba.set_num_threads(numba_threads)
    assert same_tree(serial, binned_sah_build(boxes, centroids, BuildConfig()))


def test_parallel_mesh_build_is_the_serial_mesh(monkeypatch, numba_threads):
    vertices, faces = sample_mesh("terrain.obj")
    numba.set_num_threads(1)
    serial = bvh.build(vertices, faces)
    monkeypatch.setattr(builder, "PARALLEL_BUILD", 0)
    monkeypatch.setattr(triangles, "PARALLEL_PREPARE", 0)
    numba.set_num_threads(numba_threads)
    parallel = bvh.build(vertices, faces)
    for name in ("nodes", "triangles", "face_index", "offset"):
        assert np.array_equal(getattr(serial, name), getattr(parallel, name)), name
    assert serial.sah_cost() == parallel.sah_cost()


def reference_triangles(vertices, faces):
    """``prepare_triangles`` in plain numpy: ``(offset, corners, face_index, boxes, centroids)``."""
    used = vertices[faces].reshape(-1, 3)
    offset = triangles.centring_offset(used.min(axis=0), used.max(axis=0))
    corners = (vertices - offset).astype(np.float32)[faces].reshape(-1, 9)
    exact = corners.astype(np.float64).reshape(-1, 3, 3)
    # Products of differences of float32 values are exact in float64, so the
    # cross product is zero exactly when the float32 triangle has no area.
    normal = np.cross(exact[:, 1] - exact[:, 0], exact[:, 2] - exact[:, 0])
    kept = np.flatnonzero((normal != 0.0).any(axis=1))
    lo, hi = exact[kept].min(axis=1), exact[kept].max(axis=1)
    return offset, corners[kept], kept.astype(np.int32), np.concatenate([lo, hi], axis=1), (lo + hi) * 0.5


@pytest.mark.parametrize("shift", [0.0, 1.0e6])
def test_parallel_triangle_preparation_is_exact(monkeypatch, numba_threads, shift):
    rng = np.random.default_rng(7)
    vertices = np.round(rng.random((400, 3)) * 64) / 8 + shift  # exact after centring and rounding to float32
    faces = rng.integers(0, 400, (3000, 3))
    faces[:50, 2] = faces[:50, 1]  # a repeated vertex
    # Collinear corners (the third the second moved along the first edge,
    # exactly), and slivers (the third the second moved by 2^-10), which stay.
    collinear = vertices[faces[50:100, 1]] * 2 - vertices[faces[50:100, 0]]
    sliver = vertices[faces[100:150, 1]] + np.array([2.0 ** -10, 0.0, 0.0])
    faces[50:150, 2] = np.arange(400, 500)
    vertices = np.concatenate([vertices, collinear, sliver])
    expected = reference_triangles(vertices, faces)
    dropped = np.setdiff1d(np.arange(3000), expected[2])
    assert np.all(np.isin(np.arange(100), dropped)) and not np.any(np.isin(np.arange(100, 150), dropped))
    monkeypatch.setattr(triangles, "PARALLEL_PREPARE", 0)
    numba.set_num_threads(numba_threads)
    for data in (prepare_triangles(vertices, faces), prepare_triangles(*check_mesh(vertices, faces))):
        for got, want in zip(data, expected):
            assert got.dtype == want.dtype and np.array_equal(got, want)
