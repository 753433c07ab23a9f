"""MeshBVH.refit: new vertex positions, same faces, same tree topology."""

import threading
import time

import numpy as np
import pytest

import bvh
from testkit.reference import raycast as reference
from testkit.meshes import pick_rays, sample_mesh
from tests.test_mesh_bvh import assert_agrees_with_oracle

RAYS = 3000


def _size(vertices):
    return float(np.linalg.norm(vertices.max(axis=0) - vertices.min(axis=0)))


def assert_same_hits_as_fresh_build(refitted, vertices, faces, origins, directions):
    """The refitted tree answers as a fresh build of the same vertices: the
    same hit or miss on every ray, t to 1e-9 relative, and the same triangle
    except where the ray passes through an edge shared by two faces (the
    float64 oracle says it grazes one), where the walk order picks one."""
    fresh = bvh.build(vertices, faces)
    ours = refitted.intersect(origins, directions)
    theirs = fresh.intersect(origins, directions)
    np.testing.assert_array_equal(ours.triangle >= 0, theirs.triangle >= 0)
    hit = theirs.triangle >= 0
    np.testing.assert_allclose(ours.t[hit], theirs.t[hit], rtol=1e-9, atol=0.0)
    differ = ours.triangle != theirs.triangle
    if differ.any():
        _, _, _, _, edge = reference.closest_hits(vertices, faces, origins[differ], directions[differ])
        assert np.all(np.abs(edge) < 1e-6), f"{differ.sum()} rays hit different triangles away from edges"
    assert_agrees_with_oracle(vertices, faces, origins, directions, mesh=refitted)


@pytest.mark.parametrize("name", ["torus.ply", "terrain.obj"])
@pytest.mark.parametrize("scale", [1e-3, 1.0])
def test_refit_after_random_displacement_agrees_with_fresh_build(name, scale):
    vertices, faces = sample_mesh(name)
    rng = np.random.default_rng(14)
    mesh = bvh.build(vertices, faces)
    moved = vertices + rng.normal(size=vertices.shape) * (scale * _size(vertices))
    mesh.refit(moved)
    origins, directions = pick_rays(moved, RAYS, rng, axis_aligned_fraction=0.1)
    assert_same_hits_as_fresh_build(mesh, moved, faces, origins, directions)
    # Each face's float32 corners are a fresh build's, whatever the leaf order.
    fresh = bvh.build(moved, faces)
    np.testing.assert_array_equal(mesh.triangles[np.argsort(mesh.face_index)],
                                  fresh.triangles[np.argsort(fresh.face_index)])


def test_refit_far_from_origin_recentres():
    vertices, faces = sample_mesh("torus.ply")
    mesh = bvh.build(vertices, faces)
    moved = vertices * 1.25 + np.array([3.0e6, -2.0e6, 1.0e6])
    mesh.refit(moved)
    fresh = bvh.build(moved, faces)
    np.testing.assert_array_equal(mesh.offset, fresh.offset)
    origins, directions = pick_rays(moved, RAYS, np.random.default_rng(5))
    assert_same_hits_as_fresh_build(mesh, moved, faces, origins, directions)


@pytest.mark.parametrize("name", ["torus.ply", "terrain.obj"])
def test_refit_with_built_vertices_is_bit_identical(name):
    vertices, faces = sample_mesh(name)
    mesh = bvh.build(vertices, faces)
    built = (mesh.nodes.copy(), mesh.triangles.copy(), mesh.offset.copy(), mesh.sah_cost())
    mesh.refit(vertices + np.random.default_rng(1).normal(size=vertices.shape))
    assert mesh.refit_cost_ratio != 1.0
    mesh.refit(vertices)
    assert mesh.nodes.tobytes() == built[0].tobytes()
    assert mesh.triangles.tobytes() == built[1].tobytes()
    assert mesh.offset.tobytes() == built[2].tobytes()
    assert mesh.refit_cost_ratio == 1.0
    assert mesh.sah_cost() == built[3]


def test_refit_cost_ratio_grows_when_the_mesh_is_scrambled():
    vertices, faces = sample_mesh("torus.ply")
    mesh = bvh.build(vertices, faces)
    assert mesh.refit_cost_ratio == 1.0
    rng = np.random.default_rng(3)
    mesh.refit(vertices + rng.normal(size=vertices.shape) * _size(vertices))
    assert mesh.refit_cost_ratio > 1.5
    assert mesh.sah_cost() == pytest.approx(bvh.build(vertices, faces).sah_cost() * mesh.refit_cost_ratio)


@pytest.mark.parametrize("vertices, message", [
    (np.zeros((3, 3)), "refit needs the mesh's 4 vertices, got 3; a different vertex count is a new mesh: build it"),
    (np.zeros((4, 2)), r"vertices must have shape \(V, 3\), got \(4, 2\)"),
    (np.array([[0, 0, 0], [1, 0, 0], [0, np.nan, 0], [0, 0, 1.0]]),
     r"vertices contain NaN or infinite values \(first at row 2\)"),
    (np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, np.inf]]),
     r"vertices contain NaN or infinite values \(first at row 3\)"),
    (np.array([["a"] * 3] * 4), "vertices must be an array of real numbers, got dtype <U1"),
    (np.array([[0, 0, 0], [1e38, 0, 0], [0, 1, 0], [-1e38, 0, 1.0]]),
     r"vertex coordinates span 2e\+38, more than float32 can hold \(1e\+37\)"),
])
def test_refit_refuses_bad_vertices_and_keeps_the_mesh(vertices, message):
    tetrahedron = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]])
    faces = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    mesh = bvh.build(tetrahedron, faces)
    nodes = mesh.nodes
    with pytest.raises(ValueError, match=f"^{message}$"):
        mesh.refit(vertices)
    assert mesh.nodes is nodes


def test_refit_refuses_to_change_which_faces_are_zero_area():
    vertices = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [2, 0, 0], [0, 0, 1.0]])
    # Face 1 is zero-area (three points on the x axis).
    faces = np.array([[0, 1, 2], [0, 1, 3], [0, 2, 4]])
    mesh = bvh.build(vertices, faces)
    assert mesh.triangle_count == 2
    gains_area = vertices + np.array([[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0.5, 0], [0, 0, 0]])
    with pytest.raises(ValueError, match=r"^refit cannot change which faces are zero-area \(0 faces of the tree "
                                         r"would become zero-area, 1 zero-area faces would gain area\): "
                                         r"build the mesh anew$"):
        mesh.refit(gains_area)
    flattens = vertices.copy()
    flattens[4] = [0, 2, 0]
    with pytest.raises(ValueError, match=r"\(1 faces of the tree would become zero-area, 0 zero-area"):
        mesh.refit(flattens)
    # Moves that keep face 1 on a line are accepted, and it is still never hit.
    mesh.refit(vertices * 2.0)
    hits = mesh.intersect([[1.0, -1.0, 0.0]], [[0.0, 1.0, 0.0]])
    assert hits.triangle[0] != 1


def test_refit_of_a_mesh_with_only_zero_area_faces():
    vertices = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0.0]])
    mesh = bvh.build(vertices, np.array([[0, 1, 2]]))
    mesh.refit(vertices * 3.0)
    assert mesh.triangle_count == 0
    assert mesh.intersect([[1.0, 0, 1]], [[0, 0, -1.0]]).triangle[0] == -1


def test_queries_during_refits_see_the_old_or_the_new_mesh():
    vertices, faces = sample_mesh("torus.ply")
    # Rays straight down the z axis: lifting the mesh by a whole unit moves every hit by t = 1.
    lifted = vertices + np.array([0.0, 0.0, 1.0])
    rng = np.random.default_rng(7)
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    origins = np.column_stack([rng.uniform(lo[0], hi[0], 2000), rng.uniform(lo[1], hi[1], 2000),
                               np.full(2000, hi[2] + 10.0)])
    directions = np.tile([0.0, 0.0, -1.0], (2000, 1))
    expected = [bvh.build(position, faces).intersect(origins, directions).t for position in (vertices, lifted)]
    hit = np.isfinite(expected[0])
    assert hit.sum() > 500 and np.array_equal(hit, np.isfinite(expected[1]))
    mesh = bvh.build(vertices, faces)
    done = threading.Event()
    seen, failures = [0, 0], []

    def read():
        while not done.is_set():
            t = mesh.intersect(origins, directions).t
            matches = [np.array_equal(np.isfinite(t), hit) and np.allclose(t[hit], e[hit], rtol=1e-9, atol=0)
                       for e in expected]
            if not any(matches):
                failures.append(t)
                return
            seen[matches.index(True)] += 1

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(100):
            mesh.refit(lifted if i % 2 == 0 else vertices)
            # Let a query finish between refits (and so see both positions)
            # while the next refit still overlaps the query after it.
            queries = sum(seen)
            while sum(seen) == queries and not failures and reader.is_alive():
                time.sleep(1e-4)
    finally:
        done.set()
        reader.join()
    assert not failures, "a query saw a mix of two meshes"
    assert seen[0] > 0 and seen[1] > 0


def test_refit_reports_the_first_non_finite_row_of_a_large_array():
    vertices, faces = sample_mesh("terrain.obj")
    mesh = bvh.build(vertices, faces)
    bad = vertices.copy()
    bad[len(bad) - 5, 1] = np.inf
    bad[len(bad) // 3, 2] = np.nan
    first = len(bad) // 3
    with pytest.raises(ValueError, match=rf"^vertices contain NaN or infinite values \(first at row {first}\)$"):
        mesh.refit(bad)
