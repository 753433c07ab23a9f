"""The binned SAH builder: tree invariants, fallbacks, and quality against a full sweep."""

import numpy as np
import pytest

import bvh
from bvh.builder import binned_sah_build
from bvh.config import BuildConfig
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
