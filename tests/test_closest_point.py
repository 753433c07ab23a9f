"""Closest point on meshes and scenes against the float64 brute force.

The brute force (``testkit.reference.proximity``) measures the mesh exactly as
the BVH stores it (centred float32 vertices, converted back exactly), so the
two differ only by float64 rounding: distances agree to 1e-9 relative, and
the reported triangle is the oracle's or one at the same distance.
"""

import numpy as np
import pytest
import trimesh
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bvh
from bvh.queries.closest_point import closest_on_triangle
from testkit.reference import proximity as ref
from testkit.meshes import sample_mesh, shared_mesh

RTOL = 1e-9


def stored_vertices(mesh: bvh.MeshBVH, vertices: np.ndarray) -> np.ndarray:
    """The vertices as the BVH holds them, in world coordinates."""
    return (vertices - mesh.offset).astype(np.float32).astype(np.float64) + mesh.offset


def icosphere(subdivisions=3):
    sphere = trimesh.creation.icosphere(subdivisions=subdivisions)
    return np.asarray(sphere.vertices), np.asarray(sphere.faces)


def box_points(vertices, n, rng, grow=0.5):
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    pad = grow * (hi - lo)
    return rng.uniform(lo - pad, hi + pad, (n, 3))


def assert_agrees(found_triangle, found_distance, found_point, u, v, world, faces, points):
    """The engine's answer is the nearest: its distance is the brute force's,
    its triangle at that distance, and its point on that triangle."""
    expected = ref.closest_points(world, faces, points)
    # Far from the origin a coordinate's own rounding (1e-16 of it) is what
    # a distance can be known to: the tolerance scales with the coordinates.
    scale = max(np.abs(world).max(), np.abs(points).max())
    np.testing.assert_allclose(found_distance, expected.distance, rtol=RTOL, atol=1e-15 * scale)
    distances = ref.point_triangle_distances(world, faces, points)
    rows = np.arange(len(points))
    np.testing.assert_allclose(distances[rows, found_triangle], expected.distance, rtol=RTOL, atol=1e-15 * scale)
    corners = world[faces[found_triangle]]
    on_face = (1.0 - u - v)[:, None] * corners[:, 0] + u[:, None] * corners[:, 1] + v[:, None] * corners[:, 2]
    np.testing.assert_allclose(found_point, on_face, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(np.linalg.norm(found_point - points, axis=1), found_distance, rtol=RTOL,
                               atol=1e-12 * scale)
    assert np.all((u >= 0) & (v >= 0) & (u + v <= 1 + 1e-12))


@pytest.mark.parametrize("name", ["icosphere", "torus.ply", "gear.stl"])
def test_mesh_closest_point_agrees_with_brute_force(name):
    rng = np.random.default_rng(1)
    if name == "icosphere":
        vertices, faces = icosphere()
    else:
        vertices, faces = sample_mesh(name)
    mesh = bvh.build(vertices, faces)
    points = box_points(vertices, 400, rng)
    found = mesh.closest_point(points)
    assert found.found.all()
    assert_agrees(found.triangle, found.distance, found.point, found.u, found.v, stored_vertices(mesh, vertices),
                  faces, points)


def test_a_single_point_and_a_batch_give_the_same_answers():
    vertices, faces = icosphere(2)
    mesh = bvh.build(vertices, faces)
    points = box_points(vertices, 300, np.random.default_rng(2))
    batch = mesh.closest_point(points)
    for i in range(0, 300, 37):
        one = mesh.closest_point(points[i])
        assert one.distance[0] == batch.distance[i]
        assert one.triangle[0] == batch.triangle[i]


def test_normals_are_the_faces_geometric_normals():
    vertices, faces = icosphere(2)
    mesh = bvh.build(vertices, faces)
    points = box_points(vertices, 200, np.random.default_rng(3))
    found = mesh.closest_point(points)
    world = stored_vertices(mesh, vertices)[faces[found.triangle]]
    cross = np.cross(world[:, 1] - world[:, 0], world[:, 2] - world[:, 0])
    np.testing.assert_allclose(found.normal, cross / np.linalg.norm(cross, axis=1, keepdims=True), atol=1e-9)


def test_max_distance_limits_the_search():
    vertices, faces = icosphere(2)
    mesh = bvh.build(vertices, faces)
    points = box_points(vertices, 500, np.random.default_rng(4), grow=1.0)
    full = mesh.closest_point(points)
    limit = float(np.median(full.distance))
    limited = mesh.closest_point(points, max_distance=limit)
    within = full.distance < limit * (1 - 1e-9)
    beyond = full.distance > limit * (1 + 1e-9)
    np.testing.assert_array_equal(limited.distance[within], full.distance[within])
    assert np.all(limited.triangle[beyond] == -1)
    assert np.all(np.isinf(limited.distance[beyond]))
    assert np.isnan(limited.point[beyond]).all() and np.isnan(limited.u[beyond]).all()
    assert np.isnan(limited.normal[beyond]).all()
    assert not limited.found[beyond].any()
    nothing = mesh.closest_point(points, max_distance=0.0)
    assert (nothing.triangle[full.distance > 0] == -1).all()
    # A limit whose square overflows a double searches everything.
    huge = mesh.closest_point(points, max_distance=1.4e308)
    np.testing.assert_array_equal(huge.distance, full.distance)
    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh(vertices, faces))
    np.testing.assert_array_equal(scene.closest_point(points, max_distance=1.4e308).distance,
                                  scene.closest_point(points).distance)
    np.testing.assert_allclose(scene.closest_point(points).distance, full.distance, rtol=1e-12)


def test_points_on_the_surface_are_at_distance_zero():
    vertices, faces = icosphere(2)
    mesh = bvh.build(vertices, faces)
    world = stored_vertices(mesh, vertices)
    found = mesh.closest_point(world)
    assert np.all(found.distance <= 1e-15)
    midpoints = world[faces].mean(axis=1)
    assert np.all(mesh.closest_point(midpoints).distance <= 1e-15)


DEGENERATE = np.array([
    [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0],   # collinear
    [0.0, 2.0, 0.0],                                      # a point triangle (3, 3, 3)
    [0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0],   # two corners coincide
    [0.0, 0.0, -1.0], [1.0, 0.0, -1.0], [0.0, 1.0, -1.0],  # a proper face
])


def test_faces_of_zero_area_are_not_part_of_the_surface():
    # The build leaves them out of the tree, for every query: they have no
    # area and no normal, and in a closed mesh their points lie on the edges
    # of other faces.
    faces = np.array([[0, 1, 2], [3, 3, 3], [4, 5, 6], [7, 8, 9]])
    points = np.random.default_rng(5).uniform(-1, 3, (500, 3))
    found = bvh.build(DEGENERATE, faces).closest_point(points)
    assert (found.triangle == 3).all()
    expected = ref.closest_points(DEGENERATE, faces[3:], points)
    np.testing.assert_allclose(found.distance, expected.distance, rtol=RTOL)


@pytest.mark.parametrize("corners, label", [
    ([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0]], "collinear"),
    ([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [1.0, 0.0, 0.0]], "collinear, middle corner last"),
    ([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [2.0, 0.0, 0.0]], "collinear, middle corner first"),
    ([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0]], "two corners coincide"),
    ([[0.0, 2.0, 0.0], [0.0, 2.0, 0.0], [0.0, 2.0, 0.0]], "a point"),
])
def test_the_leaf_test_measures_a_zero_area_triangle_as_its_segment_or_point(corners, label):
    # The tree holds no zero-area face (above; refit refuses to make one),
    # but a sliver can reach the leaf with a zero computed area: the region
    # test then falls back to the edges, and never divides by zero.
    corners = np.array(corners)
    a, e1, e2 = corners[0], corners[1] - corners[0], corners[2] - corners[0]
    points = np.random.default_rng(6).uniform(-1, 3, (300, 3))
    expected = ref.closest_points(corners, np.array([[0, 1, 2]]), points)
    for i, p in enumerate(points):
        d2, u, v = closest_on_triangle(*p, *a, *e1, *e2)
        assert np.isfinite([d2, u, v]).all(), label
        np.testing.assert_allclose(np.sqrt(d2), expected.distance[i], rtol=RTOL, atol=1e-15)
        np.testing.assert_allclose(a + u * e1 + v * e2, expected.point[i], atol=1e-12)


@pytest.mark.parametrize("offset, scale", [(1e5, 1.0), (-3e6, 1.0), (0.0, 1e-6), (0.0, 1e6), (7e4, 1e-3)])
def test_far_from_the_origin_and_at_tiny_and_huge_scales(offset, scale):
    vertices, faces = icosphere(2)
    vertices = vertices * scale + offset
    mesh = bvh.build(vertices, faces)
    points = box_points(vertices, 200, np.random.default_rng(6))
    found = mesh.closest_point(points)
    assert_agrees(found.triangle, found.distance, found.point, found.u, found.v, stored_vertices(mesh, vertices),
                  faces, points)


@pytest.mark.parametrize("name", ["stanford-bunny", "nefertiti"])
def test_shared_meshes(name):
    vertices, faces = shared_mesh(name)
    mesh = bvh.build(vertices, faces)
    points = box_points(vertices, 120, np.random.default_rng(7), grow=0.0)
    found = mesh.closest_point(points)
    assert_agrees(found.triangle, found.distance, found.point, found.u, found.v, stored_vertices(mesh, vertices),
                  faces, points)


# ---------------------------------------------------------------- scenes

def affine(linear, translation):
    matrix = np.eye(4)
    matrix[:3, :3] = linear
    matrix[:3, 3] = translation
    return matrix


def rotation(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


TRANSFORMS = {
    "translated": affine(np.eye(3), [3.0, 0.0, 0.0]),
    "rotated and scaled": affine(2.5 * rotation([1, 2, 3], 0.7), [-3.0, 1.0, 0.0]),
    "mirrored": affine(np.diag([-1.0, 1.0, 1.0]) @ rotation([0, 1, 1], 0.3), [0.0, 3.5, 0.0]),
    "non-uniform": affine(np.diag([3.0, 0.25, 1.0]) @ rotation([1, 0, 1], 1.1), [0.0, -3.0, 1.0]),
    "sheared": affine([[1.0, 0.8, 0.0], [0.0, 1.0, 0.3], [0.2, 0.0, 0.7]], [0.0, 0.0, -3.5]),
}


def scene_world(scene_vertices, mesh, transforms, faces):
    stored = stored_vertices(mesh, scene_vertices)
    world = [stored @ t[:3, :3].T + t[:3, 3] for t in transforms]
    all_faces = np.concatenate([faces + k * len(scene_vertices) for k in range(len(transforms))])
    return np.concatenate(world), all_faces


def test_scene_instances_measure_world_distances():
    vertices, faces = icosphere(2)
    scene = bvh.Scene()
    mesh_id = scene.add_mesh(vertices, faces)
    transforms = list(TRANSFORMS.values())
    ids = [scene.add_instance(mesh_id, t) for t in transforms]
    world, all_faces = scene_world(vertices, bvh.build(vertices, faces), transforms, faces)
    points = np.random.default_rng(8).uniform(-6, 6, (600, 3))
    found = scene.closest_point(points)
    assert found.found.all()
    instance = (found.object - ids[0])
    flat = instance * len(faces) + found.triangle
    assert_agrees(flat, found.distance, found.point, found.u, found.v, world, all_faces, points)
    assert (found.mesh == mesh_id).all()
    # Normals: the object's normal by the inverse transpose, outward under
    # mirroring: the world winding's normal times the sign of the determinant.
    corners = world[all_faces[flat]]
    cross = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    sign = np.sign([np.linalg.det(transforms[k][:3, :3]) for k in instance])
    np.testing.assert_allclose(found.normal, sign[:, None] * cross / np.linalg.norm(cross, axis=1, keepdims=True),
                               atol=1e-9)
    np.testing.assert_allclose(found.shading_normal, found.normal)


def test_scene_of_one_identity_instance_answers_as_the_mesh():
    vertices, faces = sample_mesh("torus.ply")
    mesh = bvh.build(vertices, faces)
    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh(vertices, faces))
    points = box_points(vertices, 300, np.random.default_rng(9))
    a = mesh.closest_point(points)
    b = scene.closest_point(points)
    np.testing.assert_allclose(b.distance, a.distance, rtol=1e-12)
    np.testing.assert_allclose(b.point, a.point, rtol=0, atol=1e-12)


def test_scene_filters_and_limit():
    vertices, faces = icosphere(1)
    scene = bvh.Scene()
    mesh_id = scene.add_mesh(vertices, faces)
    left = scene.add_instance(mesh_id, affine(np.eye(3), [-2.0, 0.0, 0.0]), mask=0b01)
    right = scene.add_instance(mesh_id, affine(np.eye(3), [2.0, 0.0, 0.0]), mask=0b10)
    point = [[-0.5, 0.0, 0.0]]
    assert scene.closest_point(point).object[0] == left
    assert scene.closest_point(point, mask=0b10).object[0] == right
    assert scene.closest_point(point, exclude=[left]).object[0] == right
    assert scene.closest_point(point, objects=[right]).object[0] == right
    assert scene.closest_point(point, objects=[right], max_distance=1.0).object[0] == -1
    scene.set_pickable(left, False)
    assert scene.closest_point(point).object[0] == right
    empty = bvh.Scene().closest_point(np.zeros((3, 3)))
    assert (empty.object == -1).all() and np.isinf(empty.distance).all()


def test_uv_and_shading_normals_are_interpolated():
    vertices = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    normals = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    uvs = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh(vertices, [[0, 1, 2]], normals=normals, uvs=uvs))
    found = scene.closest_point([[0.25, 0.5, 2.0]])
    np.testing.assert_allclose(found.point[0], [0.25, 0.5, 0.0], atol=1e-7)
    np.testing.assert_allclose(found.uv[0], [found.u[0], found.v[0]])
    np.testing.assert_allclose(found.normal[0], [0.0, 0.0, 1.0])
    expected = np.array([found.u[0], found.v[0], 1.0])
    np.testing.assert_allclose(found.shading_normal[0], expected / np.linalg.norm(expected), atol=1e-7)


# ---------------------------------------------------------------- shapes

def test_sphere_shape_under_a_similarity():
    scene = bvh.Scene()
    transform = affine(2.0 * rotation([1, 1, 0], 0.4), [1.0, 2.0, 3.0])
    ball = scene.add_shape("sphere", transform, radius=0.5)
    points = np.random.default_rng(10).uniform(-3, 5, (300, 3))
    found = scene.closest_point(points)
    assert (found.object == ball).all() and (found.triangle == -1).all() and (found.mesh == -1).all()
    offset = points - [1.0, 2.0, 3.0]
    np.testing.assert_allclose(found.distance, np.abs(np.linalg.norm(offset, axis=1) - 1.0), rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(found.normal, offset / np.linalg.norm(offset, axis=1, keepdims=True), atol=1e-12)
    assert np.isnan(found.u).all() and np.isnan(found.uv).all()


def test_ellipsoid_points_lie_on_it_and_nothing_sampled_is_nearer():
    scene = bvh.Scene()
    transform = affine(np.diag([3.0, 1.0, 0.5]) @ rotation([1, 2, 0], 0.9), [0.5, 0.0, -1.0])
    scene.add_shape("sphere", transform, radius=1.0)
    rng = np.random.default_rng(11)
    points = np.concatenate([rng.uniform(-5, 5, (150, 3)), rng.uniform(-0.3, 0.3, (50, 3)) + [0.5, 0, -1]])
    found = scene.closest_point(points)
    local = (found.point - transform[:3, 3]) @ np.linalg.inv(transform[:3, :3]).T
    np.testing.assert_allclose(np.linalg.norm(local, axis=1), 1.0, atol=1e-9)
    unit = rng.normal(size=(100_000, 3))
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    surface = unit @ transform[:3, :3].T + transform[:3, 3]
    sampled = np.array([np.linalg.norm(surface - p, axis=1).min() for p in points])
    assert np.all(found.distance <= sampled + 1e-12)
    # The normal is the surface's: perpendicular to it, so along the offset
    # from a point outside (or against it from inside).
    offset = points - found.point
    cosine = np.einsum("ij,ij->i", offset, found.normal) / np.linalg.norm(offset, axis=1)
    np.testing.assert_allclose(np.abs(cosine), 1.0, atol=1e-6)


def test_box_and_quad_shapes_are_their_faces():
    box = trimesh.creation.box(extents=(1.0, 2.0, 0.5))
    transform = affine(np.diag([1.0, 2.0, 0.7]) @ rotation([1, 1, 1], 0.5), [2.0, 0.0, 0.0])
    quad_transform = affine(rotation([0, 1, 0], 0.3), [-2.0, 0.0, 0.0])
    scene = bvh.Scene()
    box_id = scene.add_shape("box", transform, size=(1.0, 2.0, 0.5))
    quad_id = scene.add_shape("quad", quad_transform, size=(1.0, 3.0))
    quad_vertices = np.array([[-0.5, -1.5, 0], [0.5, -1.5, 0], [0.5, 1.5, 0], [-0.5, 1.5, 0]], float)
    world = np.concatenate([np.asarray(box.vertices) @ transform[:3, :3].T + transform[:3, 3],
                            quad_vertices @ quad_transform[:3, :3].T + quad_transform[:3, 3]])
    faces = np.concatenate([np.asarray(box.faces), np.array([[8, 9, 10], [8, 10, 11]])])
    points = np.random.default_rng(12).uniform(-4, 4, (500, 3))
    found = scene.closest_point(points)
    expected = ref.closest_points(world, faces, points)
    np.testing.assert_allclose(found.distance, expected.distance, rtol=RTOL)
    assert np.all(found.object == np.where(expected.triangle < 12, box_id, quad_id))
    np.testing.assert_allclose(np.linalg.norm(found.point - points, axis=1), found.distance, rtol=RTOL)
    # Outward normals of the box's faces, +z of the quad mapped.
    on_quad = found.object == quad_id
    np.testing.assert_allclose(found.normal[on_quad], np.tile(quad_transform[:3, 2], (on_quad.sum(), 1)), atol=1e-12)
    outward = np.einsum("ij,ij->i", found.normal[~on_quad], found.point[~on_quad] - transform[:3, 3])
    assert np.all(outward > 0)


def test_concave_polygon_shape():
    # An L: the union of two rectangles, triangulated by hand for the oracle.
    outline = np.array([[0, 0, 0], [2, 0, 0], [2, 1, 0], [1, 1, 0], [1, 2, 0], [0, 2, 0]], float)
    faces = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 4], [0, 4, 5]])
    transform = affine(np.diag([1.0, 1.5, 1.0]) @ rotation([1, 0, 0], 0.6), [0.0, 0.0, 1.0])
    scene = bvh.Scene()
    scene.add_shape("polygon", transform, vertices=outline)
    world = outline @ transform[:3, :3].T + transform[:3, 3]
    points = np.random.default_rng(13).uniform(-1, 3, (500, 3))
    found = scene.closest_point(points)
    np.testing.assert_allclose(found.distance, ref.closest_points(world, faces, points).distance, rtol=RTOL,
                               atol=1e-15)


# ---------------------------------------------------------------- refusals

@pytest.mark.parametrize("points, message", [
    ([[0.0, 0.0]], "points must have shape (N, 3) or (3,), got (1, 2)"),
    ([[0.0, np.nan, 0.0]], "points contain NaN or infinite values (first at row 0)"),
    ([[0.0, 0.0, 0.0], [2e30, 0.0, 0.0]], "points must lie within 1e+30 of the world origin (row 1)"),
    ("here", "points must be an array of real numbers, got dtype <U4"),
])
def test_bad_points_are_refused(points, message):
    mesh = bvh.build(*icosphere(0))
    with pytest.raises(ValueError) as error:
        mesh.closest_point(points)
    assert str(error.value) == message
    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh(*icosphere(0)))
    with pytest.raises(ValueError) as error:
        scene.closest_point(points)
    assert str(error.value) == message


@pytest.mark.parametrize("limit, message", [
    (-1.0, "max_distance must be a number >= 0 (inf for no limit), got -1.0"),
    (float("nan"), "max_distance must be a number >= 0 (inf for no limit), got nan"),
    ("far", "max_distance must be a number, got 'far'"),
])
def test_bad_max_distance_is_refused(limit, message):
    mesh = bvh.build(*icosphere(0))
    with pytest.raises(ValueError) as error:
        mesh.closest_point([0.0, 0.0, 0.0], max_distance=limit)
    assert str(error.value) == message


def test_no_points_give_empty_answers():
    mesh = bvh.build(*icosphere(0))
    assert len(mesh.closest_point(np.zeros((0, 3)))) == 0


# ---------------------------------------------------------------- properties

coordinates = st.floats(-4.0, 4.0, allow_nan=False, width=32)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(st.lists(st.tuples(coordinates, coordinates, coordinates), min_size=3, max_size=18),
       st.lists(st.tuples(coordinates, coordinates, coordinates), min_size=1, max_size=8))
def test_the_closest_point_is_on_the_surface_and_nothing_is_nearer(corner_list, point_list):
    vertices = np.array(corner_list[: len(corner_list) // 3 * 3], float)
    faces = np.arange(len(vertices)).reshape(-1, 3)
    points = np.array(point_list, float)
    mesh = bvh.build(vertices, faces)
    found = mesh.closest_point(points)
    world = stored_vertices(mesh, vertices)
    # Faces of zero area are not part of the surface (see above): the
    # surface is the faces the tree kept.
    surface = faces[np.unique(mesh.face_index)]
    if len(surface) == 0:
        assert not found.found.any()
        return
    assert found.found.all()
    distances = ref.point_triangle_distances(world, surface, points)
    scale = max(1.0, np.abs(world).max())
    # On the surface: the reported point is (next to) its triangle ...
    own = ref.point_triangle_distances(world, surface, found.point)
    assert np.all(own.min(axis=1) <= 1e-12 * scale)
    # ... and no triangle is nearer to the query.
    assert np.all(distances.min(axis=1) >= found.distance - 1e-12 * scale)


def test_a_batch_answered_in_coherent_order_gives_each_points_own_answer():
    # Past MIN_SORTED points a batch runs along a Morton curve, each answer
    # bounding the next one's search: points on the surface, repeated
    # points and far points beside each other must still get their nearest.
    vertices, faces = icosphere(3)
    mesh = bvh.build(vertices, faces)
    world = stored_vertices(mesh, vertices)
    rng = np.random.default_rng(21)
    midpoints = world[faces[:300]].mean(axis=1)
    points = np.concatenate([box_points(vertices, 400, rng, grow=2.0), midpoints, midpoints, world[:100]])
    points = points[rng.permutation(len(points))]
    batch = mesh.closest_point(points)
    assert_agrees(batch.triangle, batch.distance, batch.point, batch.u, batch.v, world, faces, points)
    for i in range(0, len(points), 53):
        one = mesh.closest_point(points[i])
        np.testing.assert_allclose(one.distance[0], batch.distance[i], rtol=1e-12, atol=1e-15)
    limit = float(np.median(batch.distance))
    limited = mesh.closest_point(points, max_distance=limit)
    within = batch.distance < limit * (1 - 1e-9)
    np.testing.assert_allclose(limited.distance[within], batch.distance[within], rtol=1e-12, atol=1e-15)
    assert (limited.triangle[batch.distance > limit * (1 + 1e-9)] == -1).all()
    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh(vertices, faces))
    in_scene = scene.closest_point(points, max_distance=limit)
    np.testing.assert_allclose(in_scene.distance[within], batch.distance[within], rtol=1e-12, atol=1e-15)
    assert (in_scene.object[batch.distance > limit * (1 + 1e-9)] == -1).all()
