"""The node layout: a builder's binary tree, bounds rounded outwards,
collapsed into 128-byte four-wide nodes."""

import numpy as np

import bvh
from bvh.walk.nodes import CHILD_COUNT, CHILD_FIRST, EMPTY_MIN, WIDTH, aligned_empty, outward_float32, rebase
from testkit.meshes import sample_mesh


def test_rebase_moves_inner_links_by_rows_and_leaves_by_triangles_but_not_unused_slots():
    vertices, faces = sample_mesh("torus.ply")
    nodes = bvh.build(vertices, faces).nodes
    moved = rebase(nodes, 1000, 50000)
    links, moved_links = nodes.view(np.int32), moved.view(np.int32)
    first, count = links[:, CHILD_FIRST:CHILD_FIRST + WIDTH], links[:, CHILD_COUNT:CHILD_COUNT + WIDTH]
    moved_first = moved_links[:, CHILD_FIRST:CHILD_FIRST + WIDTH]
    leaf, inner, unused = count > 0, (count == 0) & (first > 0), (count == 0) & (first == 0)
    assert leaf.any() and inner.any() and unused.any()
    assert np.array_equal(moved_first[leaf], first[leaf] + 50000)
    assert np.array_equal(moved_first[inner], first[inner] + 1000)
    assert np.all(moved_first[unused] == 0)
    assert np.array_equal(moved[:, :24], nodes[:, :24]) and moved.ctypes.data % 64 == 0
    assert np.array_equal(rebase(moved, -1000, -50000), nodes)


def test_outward_rounding_never_shrinks_a_box():
    rng = np.random.default_rng(0)
    bounds = np.concatenate([rng.normal(size=(1000, 3)), rng.normal(size=(1000, 3)) + 5], axis=1) * 1e3
    rounded = outward_float32(bounds).astype(np.float64)
    assert np.all(rounded[:, :3] < bounds[:, :3]) and np.all(rounded[:, 3:] > bounds[:, 3:])
    exact = np.array([[0.0, 1.0, -1.0, 2.0, 3.0, 4.0]])
    padded = outward_float32(exact, ulps=2)
    assert np.all(padded[0, :3] == np.nextafter(np.nextafter(exact[0, :3].astype(np.float32), -np.inf), -np.inf))


def test_aligned_empty():
    for shape in [(3, 8), (1, 9), (7,)]:
        array = aligned_empty(shape, np.float32)
        assert array.shape == shape and array.ctypes.data % 64 == 0 and array.flags.c_contiguous


def _slot_boxes(wide, row):
    """(4, 6) boxes of the four slots of wide node ``row``."""
    planes = wide[row, :24].reshape(6, WIDTH)
    return planes.T


def test_wide_nodes_hold_every_triangle_once_inside_nested_boxes():
    vertices, faces = sample_mesh("torus.ply")
    mesh = bvh.build(vertices, faces)
    wide, links = mesh.nodes, mesh.nodes.view(np.int32)
    assert wide.dtype == np.float32 and wide.shape[1] * wide.itemsize == 128 and wide.ctypes.data % 64 == 0
    seen = np.zeros(mesh.triangle_count, int)
    reached = np.zeros(len(wide), int)
    reached[0] = 1
    for row in range(len(wide)):
        boxes = _slot_boxes(wide, row)
        for slot in range(WIDTH):
            first, count = links[row, CHILD_FIRST + slot], links[row, CHILD_COUNT + slot]
            lo, hi = boxes[slot, :3], boxes[slot, 3:]
            if np.all(lo == EMPTY_MIN):
                assert np.all(hi == -EMPTY_MIN) and count == 0  # an unused slot no ray enters
                continue
            if count > 0:
                tris = mesh.triangles[first:first + count].reshape(-1, 3)
                assert np.all(tris > lo) and np.all(tris < hi)
                seen[first:first + count] += 1
            else:
                assert first > row  # depth first: children after their parent, no cycles
                reached[first] += 1
                child = _slot_boxes(wide, first)
                used = ~np.all(child[:, :3] == EMPTY_MIN, axis=1)
                assert np.all(child[used, :3] >= lo) and np.all(child[used, 3:] <= hi)
    assert np.all(seen == 1) and np.all(reached == 1)
    # Collapsing fills most slots: the tree is about half as deep.
    assert np.mean(wide[:, 0:WIDTH] != EMPTY_MIN) > 0.7


def test_a_single_triangle_is_a_root_with_one_leaf():
    mesh = bvh.build(np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]))
    links = mesh.nodes.view(np.int32)
    assert mesh.nodes.shape == (1, 32)
    assert list(links[0, CHILD_COUNT:CHILD_COUNT + WIDTH]) == [1, 0, 0, 0]
    assert np.all(mesh.nodes[0, 1:WIDTH] == EMPTY_MIN)
    hits = mesh.intersect([[0.2, 0.2, 1.0], [2.0, 2.0, 1.0]], [[0.0, 0.0, -1.0], [0.0, 0.0, -1.0]])
    assert list(hits.triangle) == [0, -1]
