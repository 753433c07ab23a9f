"""Inside/outside and signed distance: ``MeshBVH.winding_number``,
``contains``, ``signed_distance`` and their ``Scene`` counterparts, against
the naive float64 winding number (``testkit.reference.proximity``) on the
geometry the engine holds (float32 vertices relative to the mesh's offset).

No test depends on how the CPU rounds: points whose oracle value is within
1e-9 of the 1/2 threshold (on the surface, within rounding) are left out of
the agreement checks, and near-surface points are checked only for what
holds whichever side they are put on.
"""

import numpy as np
import pytest
import trimesh
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bvh
from testkit.meshes import sample_mesh, shared_mesh
from testkit.reference.proximity import winding_numbers

#: How far the hierarchical winding number may be from the exact one away
#: from the surface: the first-order (dipole) approximation with beta = 2
#: measures up to 0.084 on the shared meshes (bench.contains).
WINDING_TOLERANCE = 0.1

#: Oracle values this close to 1/2 are on the surface within rounding.
UNDECIDED = 1e-9


def stored(mesh: bvh.MeshBVH, vertices: np.ndarray) -> np.ndarray:
    """The vertices as the BVH holds them, in world coordinates."""
    return (vertices - mesh.offset).astype(np.float32).astype(np.float64) + mesh.offset


def icosphere(subdivisions=3):
    sphere = trimesh.creation.icosphere(subdivisions)
    return np.asarray(sphere.vertices, np.float64), np.asarray(sphere.faces, np.int64)


def box_points(vertices, n, rng, margin=0.1):
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    pad = margin * (hi - lo)
    return lo - pad + rng.random((n, 3)) * (hi - lo + 2 * pad)


def assert_agrees(mesh, vertices, faces, points, tolerance=WINDING_TOLERANCE):
    """contains matches the oracle wherever it is decided, and the winding
    number is within ``tolerance`` of it."""
    reference = winding_numbers(stored(mesh, vertices), faces, points)
    winding = mesh.winding_number(points)
    decided = np.abs(reference - 0.5) > UNDECIDED
    inside = mesh.contains(points)
    assert np.array_equal(inside[decided], reference[decided] >= 0.5)
    assert np.array_equal(inside, winding >= 0.5)
    assert np.abs(winding - reference).max() < tolerance
    return reference, winding


# ---------------------------------------------------------------- meshes


def test_icosphere_inside_outside_matches_the_oracle():
    vertices, faces = icosphere()
    mesh = bvh.build(vertices, faces)
    points = box_points(vertices, 3000, np.random.default_rng(0))
    reference, winding = assert_agrees(mesh, vertices, faces, points)
    radius = np.linalg.norm(points, axis=1)
    assert mesh.contains(points)[radius < 0.95].all()
    assert not mesh.contains(points)[radius > 1.0].any()


def test_closed_sample_mesh_matches_the_oracle():
    vertices, faces = sample_mesh("torus.ply", merge=True)
    mesh = bvh.build(vertices, faces)
    points = box_points(vertices, 2000, np.random.default_rng(1))
    reference, _ = assert_agrees(mesh, vertices, faces, points)
    assert 0 < (reference > 0.5).sum() < len(points)


def test_closed_shared_mesh_matches_the_oracle():
    vertices, faces = shared_mesh("cow", merge=True)
    mesh = bvh.build(vertices, faces)
    assert_agrees(mesh, vertices, faces, box_points(vertices, 1500, np.random.default_rng(2), margin=0.0))


def test_far_from_origin_and_tiny_meshes():
    vertices, faces = icosphere(2)
    rng = np.random.default_rng(3)
    for scale, shift in ((1e-4, 0.0), (1.0, 1e5), (1e3, -1e6)):
        moved = vertices * scale + shift
        mesh = bvh.build(moved, faces)
        assert_agrees(mesh, moved, faces, box_points(moved, 500, rng))


def test_points_on_the_surface_may_go_either_way_but_the_distance_is_exact():
    vertices, faces = icosphere()
    mesh = bvh.build(vertices, faces)
    rng = np.random.default_rng(4)
    surface = mesh.closest_point(box_points(vertices, 500, rng)).point
    points = surface + rng.uniform(-1e-10, 1e-10, surface.shape)
    signed = mesh.signed_distance(points)
    distance = mesh.closest_point(points).distance
    assert np.array_equal(np.abs(signed), distance)
    assert distance.max() < 1e-9
    assert np.array_equal(signed < 0, mesh.contains(points) & (distance > 0))


def test_signed_distance_is_negative_inside_and_honours_max_distance():
    vertices, faces = icosphere()
    mesh = bvh.build(vertices, faces)
    points = np.array([[0.0, 0.0, 0.0], [3.0, 0.0, 0.0], [0.5, 0.0, 0.0]])
    signed = mesh.signed_distance(points)
    assert signed[0] < -0.98 and signed[1] > 1.99 and -0.51 < signed[2] < -0.48
    assert np.array_equal(np.abs(signed), mesh.closest_point(points).distance)
    limited = mesh.signed_distance(points, max_distance=0.6)
    assert limited[0] == -np.inf and limited[1] == np.inf and limited[2] == signed[2]


def test_open_meshes_give_the_oracle_fractions():
    vertices, faces = icosphere()
    centroids = vertices[faces].mean(axis=1)
    hemisphere = faces[centroids[:, 2] > 0.0]
    rng = np.random.default_rng(5)
    mesh = bvh.build(vertices, hemisphere)
    points = box_points(vertices, 2000, rng)
    reference, winding = assert_agrees(mesh, vertices, hemisphere, points)
    fractional = (reference > 0.1) & (reference < 0.9)
    assert fractional.sum() > 100
    # One triangle: a leaf alone, its solid angle exact or its dipole's.
    triangle = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    single = bvh.build(triangle, [[0, 1, 2]])
    points = rng.uniform(-1.0, 2.0, (500, 3))
    reference, winding = assert_agrees(single, triangle, np.array([[0, 1, 2]]), points)
    assert np.abs(winding).max() < 0.5 and not single.contains(points).any()


def test_inside_out_mesh_winds_minus_one_and_contains_nothing():
    vertices, faces = icosphere()
    mesh = bvh.build(vertices, faces[:, ::-1])
    points = box_points(vertices, 1000, np.random.default_rng(6))
    reference, winding = assert_agrees(mesh, vertices, faces[:, ::-1], points)
    assert np.abs(winding[np.linalg.norm(points, axis=1) < 0.9] + 1.0).max() < WINDING_TOLERANCE
    assert not mesh.contains(points).any()


def test_refit_moves_the_dipoles_with_the_vertices():
    vertices, faces = sample_mesh("torus.ply", merge=True)
    mesh = bvh.build(vertices, faces)
    rng = np.random.default_rng(7)
    points = box_points(vertices, 1000, rng)
    before = mesh.contains(points)
    moved = vertices * np.array([1.5, 0.7, 1.0]) + np.array([0.3, -0.2, 0.1])
    mesh.refit(moved)
    reference, _ = assert_agrees(mesh, moved, faces, points)
    assert not np.array_equal(before, reference >= 0.5)


def test_serial_and_parallel_batches_agree():
    vertices, faces = sample_mesh("torus.ply", merge=True)
    mesh = bvh.build(vertices, faces)
    points = box_points(vertices, 300, np.random.default_rng(8))
    whole = mesh.winding_number(points)
    parts = np.concatenate([mesh.winding_number(points[k:k + 10]) for k in range(0, 300, 10)])
    assert np.array_equal(whole, parts)


def test_empty_inputs():
    vertices, faces = icosphere(1)
    mesh = bvh.build(vertices, faces)
    assert mesh.contains(np.zeros((0, 3))).shape == (0,)
    assert mesh.signed_distance(np.zeros((0, 3))).shape == (0,)
    degenerate = bvh.build(np.zeros((3, 3)), [[0, 1, 2]])
    assert degenerate.winding_number([0.0, 0.0, 0.0]).tolist() == [0.0]
    scene = bvh.Scene()
    assert scene.contains([1.0, 2.0, 3.0]).object.tolist() == [-1]


@pytest.mark.parametrize("call", ["winding_number", "contains", "signed_distance"])
@pytest.mark.parametrize("points, message", [
    (np.zeros((4, 2)), r"points must have shape \(N, 3\) or \(3,\), got \(4, 2\)"),
    ([[0.0, np.nan, 0.0]], r"points contain NaN or infinite values \(first at row 0\)"),
    ([[0.0, 0.0, 0.0], [1e31, 0.0, 0.0]], r"points must lie within 1e\+30 of the world origin \(row 1\)"),
    (["a", "b", "c"], r"points must be an array of real numbers, got dtype <U1"),
])
def test_mesh_refusals(call, points, message):
    vertices, faces = icosphere(1)
    mesh = bvh.build(vertices, faces)
    with pytest.raises(ValueError, match=message):
        getattr(mesh, call)(points)


def test_max_distance_refusals():
    vertices, faces = icosphere(1)
    mesh = bvh.build(vertices, faces)
    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh(vertices, faces))
    for target in (mesh, scene):
        with pytest.raises(ValueError, match=r"max_distance must be a number >= 0 \(inf for no limit\), got -1"):
            target.signed_distance([0.0, 0.0, 0.0], max_distance=-1)
        with pytest.raises(ValueError, match=r"max_distance must be a number, got 'far'"):
            target.signed_distance([0.0, 0.0, 0.0], max_distance="far")


# ---------------------------------------------------------------- scenes


def affine(linear, translation):
    matrix = np.eye(4)
    matrix[:3, :3] = linear
    matrix[:3, 3] = translation
    return matrix


def world_oracle(mesh, vertices, faces, transform, points):
    """The oracle in the world for an instance: its stored vertices mapped,
    faces reversed under a mirror (a mirror turns the surface inside out:
    inside must stay inside), both translated back by the instance's
    translation first, so that a far instance keeps its float64 precision."""
    linear, shift = transform[:3, :3], transform[:3, 3]
    world = stored(mesh, vertices) @ linear.T
    faces = faces[:, ::-1] if np.linalg.det(linear) < 0 else faces
    return winding_numbers(world, faces, points - shift)


@pytest.mark.parametrize("linear, shift", [
    (np.diag([-1.0, 1.0, 1.0]), (0.3, 0.0, 0.0)),
    (np.diag([2.0, 0.5, 1.3]), (0.0, 1.0, -2.0)),
    (np.array([[0.0, -1.5, 0.0], [1.0, 0.0, 0.3], [0.0, 0.0, -0.8]]), (1e5, -1e5, 2.5e5)),
], ids=["mirrored", "non-uniform", "sheared-mirrored-far"])
def test_scene_instances_match_the_oracle(linear, shift):
    vertices, faces = sample_mesh("torus.ply", merge=True)
    mesh = bvh.build(vertices, faces)
    transform = affine(linear, shift)
    scene = bvh.Scene()
    oid = scene.add_instance(scene.add_mesh(vertices, faces), transform=transform)
    world = (vertices @ linear.T) + np.asarray(shift)
    points = box_points(world, 2000, np.random.default_rng(9))
    reference = world_oracle(mesh, vertices, faces, transform, points)
    decided = np.abs(reference - 0.5) > UNDECIDED
    result = scene.contains(points)
    assert np.array_equal(result.inside[decided], reference[decided] >= 0.5)
    assert 0 < result.inside.sum() < len(points)
    assert np.array_equal(result.object, np.where(result.inside, oid, -1))
    signed = scene.signed_distance(points)
    assert np.array_equal(np.abs(signed), scene.closest_point(points).distance)
    assert np.array_equal(signed < 0, result.inside)


def test_scene_shapes_answer_exactly_in_object_space():
    scene = bvh.Scene()
    ball = scene.add_shape("sphere", radius=2.0, transform=affine(np.diag([1.0, 0.5, 3.0]), (10.0, 0.0, 0.0)))
    box = scene.add_shape("box", size=(2.0, 4.0, 6.0), transform=affine(np.diag([-1.0, 1.0, 1.0]), (0.0, 10.0, 0.0)))
    scene.add_shape("quad", size=(5.0, 5.0))
    scene.add_shape("polygon", vertices=[[0.0, 0.0, 0.0], [3.0, 0.0, 0.0], [0.0, 3.0, 0.0]])
    points = np.array([
        [10.0, 0.0, 5.9], [10.0, 0.0, 6.1], [10.0, 0.9, 0.0], [10.0, 1.1, 0.0],   # ellipsoid 2 x 1 x 6
        [0.9, 10.0, 0.0], [1.1, 10.0, 0.0], [0.0, 11.9, 2.9], [0.0, 12.1, 0.0],   # box 2 x 4 x 6
        [0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 0.1],                       # quad, polygon
    ])
    result = scene.contains(points)
    assert result.object.tolist() == [ball, -1, ball, -1, box, -1, box, -1, -1, -1, -1]
    signed = scene.signed_distance(points[:2])
    assert signed[0] < 0.0 < signed[1]


def test_several_containing_objects_most_wraps_then_lowest_id():
    vertices, faces = icosphere(2)
    scene = bvh.Scene()
    single = scene.add_mesh(vertices, faces)
    doubled = scene.add_mesh(np.concatenate([vertices, vertices * 0.5]), np.concatenate([faces, faces + len(vertices)]))
    first = scene.add_instance(single)
    second = scene.add_shape("sphere", radius=0.8)
    twice = scene.add_instance(doubled)
    points = np.array([[0.0, 0.0, 0.0], [0.7, 0.0, 0.0], [0.9, 0.0, 0.0], [1.5, 0.0, 0.0]])
    result = scene.contains(points)
    # The origin is wrapped twice by the doubled mesh; at 0.7 every object
    # holds the point once; at 0.9 the first instance and the doubled mesh's
    # outer sphere do.
    assert result.object.tolist() == [twice, first, first, -1]
    assert scene.contains(points, exclude=[first]).object.tolist() == [twice, second, twice, -1]
    assert scene.contains(points, objects=[second]).object.tolist() == [second, second, -1, -1]
    assert scene.contains(points, mask=0).object.tolist() == [-1, -1, -1, -1]


def test_scene_refusals():
    scene = bvh.Scene()
    scene.add_shape("sphere")
    with pytest.raises(ValueError, match=r"points must have shape \(N, 3\) or \(3,\), got \(2,\)"):
        scene.contains([0.0, 1.0])
    with pytest.raises(ValueError, match=r"points contain NaN or infinite values \(first at row 1\)"):
        scene.signed_distance([[0.0, 0.0, 0.0], [np.inf, 0.0, 0.0]])
    with pytest.raises(bvh.UnknownIdError, match="no object 7 in this scene"):
        scene.contains([0.0, 0.0, 0.0], objects=[7])
    with pytest.raises(ValueError, match="exclude must be a list of integer object ids"):
        scene.contains([0.0, 0.0, 0.0], exclude=["a"])


def test_scene_follows_a_mesh_update():
    vertices, faces = icosphere(2)
    scene = bvh.Scene()
    mesh = scene.add_mesh(vertices, faces)
    scene.add_instance(mesh)
    point = [[1.5, 0.0, 0.0]]
    assert not scene.contains(point).inside[0]
    scene.update_mesh(mesh, vertices * 2.0)
    assert scene.contains(point).inside[0]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(angles=st.tuples(*[st.floats(-np.pi, np.pi)] * 3),
       scale=st.floats(0.01, 100.0), shift=st.tuples(*[st.floats(-1e4, 1e4)] * 3),
       mirror=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_property_rigid_instances_of_a_sphere(angles, scale, shift, mirror, seed):
    """Whatever the rotation, scale, translation and mirror, a point well
    inside the icosphere's inscribed sphere is inside and one outside its
    circumscribed sphere is outside, in the world."""
    rotation = trimesh.transformations.euler_matrix(*angles)[:3, :3]
    linear = scale * rotation @ np.diag([-1.0 if mirror else 1.0, 1.0, 1.0])
    vertices, faces = icosphere(2)
    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh(vertices, faces), transform=affine(linear, shift))
    rng = np.random.default_rng(seed)
    local = rng.uniform(-1.3, 1.3, (200, 3))
    radius = np.linalg.norm(local, axis=1)
    keep = (radius < 0.95) | (radius > 1.0 + 1e-6)
    points = local[keep] @ linear.T + np.asarray(shift)
    assert np.array_equal(scene.contains(points).inside, radius[keep] < 0.95)
