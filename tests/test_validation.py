"""Every refusal at the library boundary, with its message."""

import numpy as np
import pytest

import bvh

TRIANGLE = (np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), np.array([[0, 1, 2]]))


@pytest.fixture(scope="module")
def mesh():
    return bvh.build(*TRIANGLE)


@pytest.mark.parametrize("vertices, faces, message", [
    (np.zeros((0, 3)), np.zeros((0, 3), int), r"the mesh is empty: vertices has no rows"),
    (TRIANGLE[0], np.zeros((0, 3), int), r"the mesh is empty: faces has no rows"),
    (np.zeros((3, 2)), TRIANGLE[1], r"vertices must have shape \(V, 3\), got \(3, 2\)"),
    (TRIANGLE[0], np.array([[0, 1]]), r"faces must have shape \(F, 3\), got \(1, 2\)"),
    (TRIANGLE[0], np.array([[0.0, 1.0, 2.0]]), r"faces must be an array of integers, got dtype float64"),
    (TRIANGLE[0], np.array([[True, False, True]]), r"faces must be an array of integers, got dtype bool"),
    (np.array([["a", "b", "c"]] * 3), TRIANGLE[1], r"vertices must be an array of real numbers, got dtype <U1"),
    (np.array([[0.0, 0, 0], [np.nan, 0, 0], [0, 1, 0]]), TRIANGLE[1],
     r"vertices contain NaN or infinite values \(first at row 1\)"),
    (np.array([[0.0, 0, 0], [1, 0, 0], [0, np.inf, 0]]), TRIANGLE[1],
     r"vertices contain NaN or infinite values \(first at row 2\)"),
    (TRIANGLE[0], np.array([[0, 1, 2], [0, 1, 3]]),
     r"faces refer to vertex 3 but there are only 3 vertices \(face 1\)"),
    (TRIANGLE[0], np.array([[0, -1, 2]]), r"faces hold a negative vertex index -1 \(face 0\)"),
    (np.array([[0.0, 0, 0], [1e38, 0, 0], [0, 1, 0]]), TRIANGLE[1],
     r"vertex coordinates span 1e\+38, more than float32 can hold"),
])
def test_bad_meshes_are_refused(vertices, faces, message):
    with pytest.raises(ValueError, match=message):
        bvh.build(vertices, faces)


@pytest.mark.parametrize("options, message", [
    ({"bins": 1}, r"bins must be an integer >= 2, got 1"),
    ({"bins": 8.0}, r"bins must be an integer >= 2, got 8.0"),
    ({"max_leaf_size": 0}, r"max_leaf_size must be an integer >= 1, got 0"),
    ({"min_leaf_size": 9}, r"min_leaf_size must be an integer in \[1, max_leaf_size=8\], got 9"),
    ({"traversal_cost": -1.0}, r"traversal_cost must be a positive number, got -1.0"),
    ({"intersection_cost": "1"}, r"intersection_cost must be a positive number, got '1'"),
    ({"max_depth": 65}, r"max_depth must be an integer in \[2, 64\], got 65"),
    ({"leaf_size": 4}, r"unknown build option 'leaf_size'; known options: bins, intersection_cost"),
])
def test_bad_build_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        bvh.build(*TRIANGLE, **options)


@pytest.mark.parametrize("query", ["intersect", "occluded", "intersect_all"])
@pytest.mark.parametrize("origins, directions, message", [
    ([[0.0, 0.0]], [[0.0, 0.0, 1.0]], r"origins must have shape \(N, 3\) or \(3,\), got \(1, 2\)"),
    ([0.0, 0.0, 0.0], [[[0.0, 0.0, 1.0]]], r"directions must have shape \(N, 3\) or \(3,\), got \(1, 1, 3\)"),
    ([[0.0, 0.0, 0.0]] * 2, [[0.0, 0.0, 1.0]] * 3,
     r"origins and directions hold different numbers of rays: 2 and 3"),
    ([[0.0, np.nan, 0.0]], [[0.0, 0.0, 1.0]], r"origins contain NaN or infinite values \(first at row 0\)"),
    ([[0.0, 0.0, 0.0]] * 2, [[0.0, 0.0, 1.0], [np.inf, 0, 0]],
     r"directions contain NaN or infinite values \(first at row 1\)"),
    ([[0.0, 0.0, 0.0]] * 2, [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]], r"directions must be non-zero: row 1 has length 0"),
    ([[0.0, 0.0, 0.0]], [[0.0, 0.0, 1e-200]],
     r"direction row 0 is too short to trace: length 1e-200, the shortest accepted is 1e-150"),
    ([["0", "0", "0"]], [[0.0, 0.0, 1.0]], r"origins must be an array of real numbers, got dtype <U1"),
    ([[0.0, 0.0, 0.0], [0.0, -2e30, 0.0]], [[0.0, 0.0, 1.0]] * 2,
     r"origins must lie within 1e\+30 of the world origin \(row 1\)"),
    ([[0.0, 0.0, 0.0], [1.0]], [[0.0, 0.0, 1.0]], r"origins must be an array of numbers"),
])
def test_bad_rays_are_refused(mesh, query, origins, directions, message):
    with pytest.raises(ValueError, match=message):
        getattr(mesh, query)(origins, directions)


@pytest.mark.parametrize("query", ["intersect", "occluded", "intersect_all"])
@pytest.mark.parametrize("tmin, tmax, message", [
    # A mesh's queries take a negative tmin (tests/test_mesh_bvh_options.py); a scene's refuse it.
    (np.nan, np.inf, r"tmin must be a finite number, got nan"),
    (np.inf, np.inf, r"tmin must be a finite number, got inf"),
    (2.0, 1.0, r"tmax must be a number >= tmin \(2.0\), got 1.0"),
    (0.0, np.nan, r"tmax must be a number >= tmin \(0.0\), got nan"),
    ("a", 1.0, r"tmin and tmax must be numbers, got 'a' and 1.0"),
])
def test_bad_windows_are_refused(mesh, query, tmin, tmax, message):
    with pytest.raises(ValueError, match=message):
        getattr(mesh, query)([0.2, 0.2, 1.0], [0.0, 0.0, -1.0], tmin, tmax)


def test_integer_and_float32_inputs_are_accepted(mesh):
    hits = mesh.intersect(np.array([[0, 0, 1]], np.int32), np.array([[0.2, 0.2, -1]], np.float32))
    assert hits.hit[0]
    built = bvh.build(TRIANGLE[0].astype(np.float32), TRIANGLE[1].astype(np.uint16))
    assert built.triangle_count == 1


def test_refusal_loses_nothing(mesh):
    before = mesh.intersect([0.2, 0.2, 1.0], [0.0, 0.0, -1.0])
    with pytest.raises(ValueError):
        mesh.intersect([0.2, 0.2, np.nan], [0.0, 0.0, -1.0])
    after = mesh.intersect([0.2, 0.2, 1.0], [0.0, 0.0, -1.0])
    assert before.t[0] == after.t[0] == pytest.approx(1.0)


def test_built_arrays_are_read_only(mesh):
    with pytest.raises(ValueError):
        mesh.nodes[0, 0] = 1.0
