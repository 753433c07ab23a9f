"""Sphere casts (MeshBVH.sphere_cast, Scene.sphere_cast) against the float64
brute force of testkit/reference/proximity.py, on the geometry the engine holds
(float32 vertices relative to the mesh's offset, converted back exactly).

Agreement is asserted with tolerances, never on rounding: the same hit or
miss, ``t`` to 1e-9 relative, and the same triangle or an equal ``t`` (a
sphere touching a shared edge or corner touches every face around it).
"""

import zlib

import numpy as np
import pytest
import trimesh
from hypothesis import HealthCheck, given, settings, strategies as st

import bvh
from bvh.queries import sphere_cast as kernels
from testkit.reference import proximity as ref
from testkit.meshes import sample_mesh, shared_mesh

T_TOLERANCE = 1e-9


def stored_vertices(mesh: bvh.MeshBVH, vertices: np.ndarray) -> np.ndarray:
    """The vertices as the BVH holds them, in world coordinates."""
    return (vertices - mesh.offset).astype(np.float32).astype(np.float64) + mesh.offset


def icosphere(subdivisions=2):
    m = trimesh.creation.icosphere(subdivisions=subdivisions)
    return np.asarray(m.vertices, np.float64), np.asarray(m.faces, np.int64)


def random_casts(vertices, n, rng, radius_fraction=0.1, zero_radius=0):
    """Casts from a sphere around the mesh aimed at points of its box, with
    directions of random lengths and radii up to a fraction of the size."""
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    centre, size = (lo + hi) / 2, np.linalg.norm(hi - lo)
    on_sphere = rng.normal(size=(n, 3))
    on_sphere /= np.linalg.norm(on_sphere, axis=1, keepdims=True)
    origins = centre + size * rng.uniform(0.3, 1.0, (n, 1)) * on_sphere
    targets = lo + rng.random((n, 3)) * (hi - lo)
    directions = (targets - origins) * rng.uniform(0.1, 10.0, (n, 1))
    radius = rng.uniform(0.0, radius_fraction, n) * size
    radius[:zero_radius] = 0.0
    return origins, directions, radius


def assert_agrees(hits, expected, label="", origins=None, directions=None):
    """Same hit or miss; t to T_TOLERANCE relative; same triangle or equal t.

    With ``origins`` and ``directions``, t may also differ by what the
    coordinates' own rounding moves a contact (1e-14 of their magnitude,
    along the direction): far from the world origin the engine's world
    triangles (mapped from float32 object space) and the reference's
    (mapped by numpy) differ by some 1e-16 of 1e5 already."""
    hit = np.isfinite(expected.t)
    np.testing.assert_array_equal(np.isfinite(hits.t), hit, err_msg=f"{label}: hit or miss differs")
    scale = np.maximum(np.abs(expected.t[hit]), 1e-300)
    if origins is not None:
        reach = np.abs(origins[hit]).max(axis=1) + np.abs(expected.point[hit]).max(axis=1)
        scale = np.maximum(scale, 1e-5 * reach / np.linalg.norm(directions[hit], axis=1))
    error = np.abs(hits.t[hit] - expected.t[hit]) / scale
    assert error.max(initial=0.0) <= T_TOLERANCE, f"{label}: t differs by {error.max():.3g} relative"
    same = hits.triangle[hit] == expected.triangle[hit]
    assert (same | (error <= T_TOLERANCE)).all()
    assert (hits.triangle[~hit] == -1).all()


def assert_contacts_are_contacts(hits, radius, world_vertices, faces, tmin=0.0):
    """The point is on the surface, the centre is ``origin + t direction``,
    and for a contact after tmin the centre is ``radius`` from the point
    along the unit normal."""
    hit = np.isfinite(hits.t)
    if not hit.any():
        return
    size = np.linalg.norm(world_vertices.max(0) - world_vertices.min(0))
    on_surface = ref.closest_points(world_vertices, faces, hits.point[hit]).distance
    assert on_surface.max() <= 1e-9 * size
    np.testing.assert_allclose(np.linalg.norm(hits.normal[hit], axis=1), 1.0, atol=1e-12)
    later = hit & (hits.t > tmin)
    gap = hits.center[later] - hits.point[later]
    np.testing.assert_allclose(np.linalg.norm(gap, axis=1), radius[later], rtol=1e-9, atol=1e-9 * size)
    rounded = later & (radius > 0)
    np.testing.assert_allclose(hits.normal[rounded] * radius[rounded, None], (hits.center - hits.point)[rounded],
                               atol=1e-8 * size)


# ------------------------------------------------------------------ meshes


@pytest.mark.parametrize("source", ["icosphere", "torus", "suzanne"])
def test_random_casts_match_brute_force(source):
    if source == "icosphere":
        vertices, faces = icosphere(2)
    elif source == "torus":
        vertices, faces = sample_mesh("torus.ply")
    else:
        vertices, faces = shared_mesh("suzanne")
    rng = np.random.default_rng(7)
    mesh = bvh.build(vertices, faces)
    exact = stored_vertices(mesh, vertices)
    origins, directions, radius = random_casts(exact, 300, rng, zero_radius=30)
    hits = mesh.sphere_cast(origins, directions, radius)
    expected = ref.sphere_cast(exact, faces, origins, directions, radius)
    assert 0.2 < np.isfinite(expected.t).mean() < 1.0
    assert_agrees(hits, expected, source)
    assert_contacts_are_contacts(hits, radius, exact, faces)
    np.testing.assert_allclose(hits.center[hits.hit], (origins + hits.t[:, None] * directions)[hits.hit])


def test_ten_thousand_casts_on_a_small_mesh_all_agree():
    vertices, faces = icosphere(1)
    rng = np.random.default_rng(11)
    mesh = bvh.build(vertices, faces)
    exact = stored_vertices(mesh, vertices)
    origins, directions, radius = random_casts(exact, 10_000, rng, radius_fraction=0.2, zero_radius=1000)
    tmax = np.where(rng.random(10_000) < 0.2, rng.uniform(0.1, 1.0, 10_000), np.inf)
    hits = np.empty(10_000)
    triangle = np.empty(10_000, np.int64)
    # The brute force takes tmax per ray; the engine one per call: in groups.
    for limit in np.unique(tmax):
        rows = np.flatnonzero(tmax == limit)
        got = mesh.sphere_cast(origins[rows], directions[rows], radius[rows], tmax=limit)
        hits[rows], triangle[rows] = got.t, got.triangle
    expected = ref.sphere_cast(exact, faces, origins, directions, radius, tmax)
    assert_agrees(type("H", (), {"t": hits, "triangle": triangle})(), expected, "10k")


def test_zero_radius_is_intersect():
    vertices, faces = sample_mesh("torus.ply")
    rng = np.random.default_rng(3)
    mesh = bvh.build(vertices, faces)
    origins, directions, _ = random_casts(vertices, 2000, rng)
    rays = mesh.intersect(origins, directions)
    casts = mesh.sphere_cast(origins, directions, 0.0)
    np.testing.assert_array_equal(casts.hit, rays.hit)
    hit = rays.hit
    same_t = np.abs(casts.t[hit] - rays.t[hit]) <= T_TOLERANCE * rays.t[hit]
    assert (same_t | (casts.triangle[hit] == rays.triangle[hit])).all()
    # Radius 0: the face's normal, turned against the ray.
    np.testing.assert_allclose(casts.normal[hit], np.where(rays.front_face[hit, None], 1.0, -1.0) * rays.normal[hit],
                               atol=1e-9)
    np.testing.assert_allclose(casts.point[hit], rays.point[hit], atol=1e-9)
    # A vanishing radius touches no later than the ray, and barely earlier.
    small = mesh.sphere_cast(origins, directions, 1e-9)
    assert (small.t[hit] <= rays.t[hit] * (1 + 1e-12)).all()
    length = np.linalg.norm(directions[hit], axis=1)
    assert np.median((rays.t[hit] - small.t[hit]) * length) < 1e-8


def test_touching_at_tmin_gives_tmin_and_the_nearest_point():
    vertices = np.array([[0.0, 0.0, 0.0], [4.0, 0.0, 0.0], [0.0, 4.0, 0.0], [4.0, 4.0, 0.0]])
    faces = np.array([[0, 1, 2], [1, 3, 2]])
    mesh = bvh.build(vertices, faces)
    origins = np.array([[1.0, 1.0, 0.5], [1.0, 1.0, 0.5], [4.5, 2.0, 0.25]])
    directions = np.array([[0.0, 0.0, -1.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    hits = mesh.sphere_cast(origins, directions, 1.0)
    np.testing.assert_array_equal(hits.t, [0.0, 0.0, 0.0])
    np.testing.assert_allclose(hits.point, [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [4.0, 2.0, 0.0]], atol=1e-15)
    np.testing.assert_array_equal(mesh.sphere_cast(origins, directions, 1.0, tmin=0.25).t, [0.25, 0.25, 0.25])
    # At tmin = 1 the first is still 0.5 from the plane, the others have moved away.
    np.testing.assert_array_equal(mesh.sphere_cast(origins, directions, 1.0, tmin=1.0).t, [1.0, np.inf, np.inf])
    # Exactly built: from z = 3 down, a unit sphere touches z = 0 at t = 2.
    down = mesh.sphere_cast([1.0, 1.0, 3.0], [0.0, 0.0, -2.0], 1.0)
    assert down.t[0] == 1.0 and down.triangle[0] == 0
    np.testing.assert_array_equal(down.normal[0], [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(down.center[0], [1.0, 1.0, 1.0])
    # Past the corner (4, 0, 0) along y at height 0: the corner's ball, t = 4 - sqrt(1 - 0.36).
    corner = mesh.sphere_cast([4.6, -5.0, 0.0], [0.0, 1.0, 0.0], 1.0)
    assert corner.t[0] == pytest.approx(5.0 - 0.8, rel=1e-14)
    np.testing.assert_allclose(corner.point[0], [4.0, 0.0, 0.0])


def test_degenerate_triangles_are_their_edges_and_corners():
    rng = np.random.default_rng(5)
    corners = [np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [3.0, 3.0, 0.0]]),  # collinear
               np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [2.0, -1.0, 1.0]]),  # a repeated corner
               np.array([[1.0, 2.0, 3.0]] * 3)]  # a point
    for triangle in corners:
        origins = rng.normal(size=(200, 3)) * 3
        directions = rng.normal(size=(200, 3))
        radius = rng.uniform(0.0, 1.5, 200)
        expected = ref.sphere_cast(triangle, [[0, 1, 2]], origins, directions, radius)
        a, e1, e2 = triangle[0], triangle[1] - triangle[0], triangle[2] - triangle[0]
        for i in range(200):
            length = np.linalg.norm(directions[i])
            unit = directions[i] / length
            s, u, v = kernels.sweep_triangle(*(a - origins[i]), *e1, *e2, *unit, radius[i], 0.0, np.inf)
            assert np.isfinite([s, u, v]).all()
            if np.isfinite(expected.t[i]):
                assert s / length == pytest.approx(expected.t[i], rel=T_TOLERANCE, abs=1e-12)
                np.testing.assert_allclose(a + u * e1 + v * e2, expected.point[i], atol=1e-9)
            else:
                assert s == kernels.NO_CONTACT
    # In a mesh, a zero-area face is left out of the tree, as intersect leaves it;
    # one along an edge of the mesh changes nothing.
    vertices, faces = icosphere(1)
    sliver = np.vstack([faces, [[faces[0, 0], faces[0, 1], faces[0, 1]]]])
    mesh = bvh.build(vertices, sliver)
    exact = stored_vertices(mesh, vertices)
    origins, directions, radius = random_casts(exact, 300, rng)
    hits = mesh.sphere_cast(origins, directions, radius)
    expected = ref.sphere_cast(exact, sliver, origins, directions, radius)
    hit = np.isfinite(expected.t)
    np.testing.assert_array_equal(hits.hit, hit)
    np.testing.assert_allclose(hits.t[hit], expected.t[hit], rtol=T_TOLERANCE)


def test_per_ray_radius_and_empty_batches():
    vertices, faces = icosphere(1)
    mesh = bvh.build(vertices, faces)
    origins = np.array([[0.0, 0.0, 5.0]] * 3)
    directions = np.array([[0.0, 0.0, -1.0]] * 3)
    hits = mesh.sphere_cast(origins, directions, [0.0, 1.0, 2.0])
    assert hits.t[0] > hits.t[1] > hits.t[2]
    assert len(mesh.sphere_cast(np.zeros((0, 3)), np.zeros((0, 3)), 1.0)) == 0


def test_large_batches_take_the_parallel_kernel_with_the_same_answers():
    vertices, faces = sample_mesh("torus.ply")
    mesh = bvh.build(vertices, faces)
    origins, directions, radius = random_casts(vertices, 500, np.random.default_rng(2))
    together = mesh.sphere_cast(origins, directions, radius)
    for start in range(0, 500, 50):
        alone = mesh.sphere_cast(origins[start:start + 50], directions[start:start + 50], radius[start:start + 50])
        np.testing.assert_array_equal(alone.t, together.t[start:start + 50])
        np.testing.assert_array_equal(alone.triangle, together.triangle[start:start + 50])


# ------------------------------------------------------------------ scenes


def _rotation(rng):
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return q * np.sign(np.linalg.det(q))


def _transform(kind, rng):
    t = np.eye(4)
    if kind == "mirrored":
        t[:3, :3] = _rotation(rng) @ np.diag([-1.0, 1.0, 1.0])
    elif kind == "non-uniform":
        t[:3, :3] = _rotation(rng) @ np.diag([3.0, 0.5, 1.2]) @ _rotation(rng)
    elif kind == "sheared":
        t[:3, :3] = np.array([[1.0, 0.9, 0.0], [0.0, 1.0, -0.6], [0.4, 0.0, 1.0]])
    elif kind == "far":
        t[:3, :3] = _rotation(rng)
        t[:3, 3] = [1e5, -1e5, 1e5]
    elif kind == "tiny":
        t[:3, :3] = 1e-4 * _rotation(rng)
        t[:3, 3] = [3e-4, 0.0, 0.0]
    elif kind == "huge":
        t[:3, :3] = np.diag([1e4, 2e4, 1e4])
    return t


@pytest.mark.parametrize("kind", ["identity", "mirrored", "non-uniform", "sheared", "far", "tiny", "huge"])
def test_instances_match_brute_force_in_the_world(kind):
    rng = np.random.default_rng(zlib.crc32(kind.encode()))
    vertices, faces = icosphere(2)
    scene = bvh.Scene()
    mesh_id = scene.add_mesh(vertices, faces)
    transform = _transform(kind, rng)
    object_id = scene.add_instance(mesh_id, transform)
    offset = bvh.build(vertices, faces).offset
    exact = (vertices - offset).astype(np.float32).astype(np.float64) + offset
    world = exact @ transform[:3, :3].T + transform[:3, 3]
    origins, directions, radius = random_casts(world, 300, rng, zero_radius=30)
    hits = scene.sphere_cast(origins, directions, radius)
    expected = ref.sphere_cast(world, faces, origins, directions, radius)
    assert_agrees(hits, expected, kind, origins, directions)
    assert (hits.object[hits.hit] == object_id).all() and (hits.mesh[hits.hit] == mesh_id).all()
    assert_contacts_are_contacts(hits, radius, world, faces)


def test_scene_masks_and_filters():
    vertices, faces = icosphere(1)
    scene = bvh.Scene()
    mesh_id = scene.add_mesh(vertices, faces)
    near = scene.add_instance(mesh_id, mask=0b01)
    shifted = np.eye(4)
    shifted[2, 3] = -4.0
    far = scene.add_instance(mesh_id, shifted, mask=0b10)
    origin, direction = [0.0, 0.0, 10.0], [0.0, 0.0, -1.0]
    assert scene.sphere_cast(origin, direction, 0.5).object[0] == near
    assert scene.sphere_cast(origin, direction, 0.5, mask=0b10).object[0] == far
    assert scene.sphere_cast(origin, direction, 0.5, exclude=[near]).object[0] == far
    assert scene.sphere_cast(origin, direction, 0.5, objects=[far]).object[0] == far
    assert scene.sphere_cast(origin, direction, 0.5, objects=[]).object[0] == -1
    assert not bvh.Scene().sphere_cast(origin, direction, 0.5).hit.any()


# ------------------------------------------------------------------ shapes


def _shape_scene(kind, transform, **params):
    scene = bvh.Scene()
    return scene, scene.add_shape(kind, transform, **params)


def test_sphere_shape_under_a_similarity_is_exact():
    transform = np.eye(4)
    transform[:3, :3] = 2.0 * _rotation(np.random.default_rng(1))
    transform[:3, 3] = [1.0, 2.0, 3.0]
    scene, ball = _shape_scene("sphere", transform, radius=1.5)  # world radius 3
    hits = scene.sphere_cast([[1.0, 2.0, 13.0], [1.0, 2.0, 3.5], [1.0, 2.0, 3.0]],
                             [[0.0, 0.0, -2.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], [0.5, 0.5, 3.0])
    np.testing.assert_allclose(hits.t, [(10.0 - 3.5) / 2.0, 3.0 - 0.5 - 0.5, 0.0], rtol=1e-14, atol=1e-14)
    assert (hits.object == ball).all() and (hits.triangle == -1).all() and np.isnan(hits.u).all()
    np.testing.assert_allclose(hits.point[0], [1.0, 2.0, 6.0], atol=1e-13)
    np.testing.assert_allclose(hits.normal[:2], [[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]], atol=1e-13)


def test_sphere_shape_under_a_non_uniform_scale_is_an_ellipsoid():
    scene, _ = _shape_scene("sphere", np.diag([2.0, 1.0, 1.0, 1.0]), radius=1.0)
    hits = scene.sphere_cast([[-10.0, 0.0, 0.0], [0.0, -10.0, 0.0]], [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], 0.5)
    np.testing.assert_allclose(hits.t, [7.5, 8.5], rtol=1e-9)
    rng = np.random.default_rng(4)
    origins = rng.normal(size=(200, 3)) * 6
    directions = rng.normal(size=(200, 3)) * 0.1 - origins * 0.2
    hits = scene.sphere_cast(origins, directions, 0.3)
    assert 0.3 < hits.hit.mean()
    p = hits.point[hits.hit]
    np.testing.assert_allclose((p[:, 0] / 2) ** 2 + p[:, 1] ** 2 + p[:, 2] ** 2, 1.0, atol=1e-9)
    later = hits.hit & (hits.t > 0)
    np.testing.assert_allclose(np.linalg.norm(hits.center[later] - hits.point[later], axis=1), 0.3, rtol=1e-6)


BOX_CORNERS = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-1.0, 1.0) for z in (-1.5, 1.5)])


def test_box_and_quad_match_their_triangles():
    box = trimesh.creation.box(extents=[1.0, 2.0, 3.0])
    quad_vertices = np.array([[-1.0, -0.5, 0.0], [1.0, -0.5, 0.0], [1.0, 0.5, 0.0], [-1.0, 0.5, 0.0]])
    rng = np.random.default_rng(8)
    for kind, params, vertices, faces in (
            ("box", {"size": [1.0, 2.0, 3.0]}, np.asarray(box.vertices), np.asarray(box.faces)),
            ("quad", {"size": [2.0, 1.0]}, quad_vertices, np.array([[0, 1, 2], [0, 2, 3]]))):
        transform = _transform("non-uniform", rng)
        transform[:3, 3] = [5.0, -2.0, 1.0]
        scene, _ = _shape_scene(kind, transform, **params)
        world = vertices @ transform[:3, :3].T + transform[:3, 3]
        origins, directions, radius = random_casts(world, 300, rng, zero_radius=30)
        hits = scene.sphere_cast(origins, directions, radius)
        expected = ref.sphere_cast(world, faces, origins, directions, radius)
        hit = np.isfinite(expected.t)
        np.testing.assert_array_equal(hits.hit, hit, err_msg=kind)
        np.testing.assert_allclose(hits.t[hit], expected.t[hit], rtol=T_TOLERANCE, err_msg=kind)
        np.testing.assert_allclose(hits.point[hit], expected.point[hit], atol=1e-9, err_msg=kind)


def test_polygon_is_its_face_and_outline():
    outline = np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [2.0, 1.0, 0.0], [1.0, 0.4, 0.0], [0.0, 1.0, 0.0]])
    faces = np.array([[0, 1, 3], [1, 2, 3], [0, 3, 4]])  # the concave outline as triangles
    rng = np.random.default_rng(9)
    transform = _transform("sheared", rng)
    scene, _ = _shape_scene("polygon", transform, vertices=outline)
    world = outline @ transform[:3, :3].T + transform[:3, 3]
    origins, directions, radius = random_casts(world, 400, rng, zero_radius=40)
    hits = scene.sphere_cast(origins, directions, radius)
    expected = ref.sphere_cast(world, faces, origins, directions, radius)
    hit = np.isfinite(expected.t)
    np.testing.assert_array_equal(hits.hit, hit)
    np.testing.assert_allclose(hits.t[hit], expected.t[hit], rtol=T_TOLERANCE)


# ------------------------------------------------------------------ refusals


@pytest.mark.parametrize("call, message", [
    (lambda q: q([0, 0, 0], [0, 0, 1], -1.0), r"radius must be >= 0, got -1.0 \(row 0\)"),
    (lambda q: q([0, 0, 0], [0, 0, 1], np.nan), r"radius must be finite, got nan \(row 0\)"),
    (lambda q: q([[0, 0, 0]] * 2, [[0, 0, 1]] * 2, [1.0, np.inf]), r"radius must be finite, got inf \(row 1\)"),
    (lambda q: q([[0, 0, 0]] * 2, [[0, 0, 1]] * 2, [1.0, 2.0, 3.0]),
     r"radius must be one number or one per ray, shape \(2,\), got shape \(3,\)"),
    (lambda q: q([0, 0, 0], [0, 0, 1], "big"), r"radius must be an array of real numbers"),
    (lambda q: q([0, 0, 0], [0, 0, 0], 1.0), r"directions must be non-zero: row 0 has length 0"),
    (lambda q: q([0, 0, np.nan], [0, 0, 1], 1.0), r"origins contain NaN or infinite values \(first at row 0\)"),
    (lambda q: q([[0, 0, 0]] * 2, [0, 0, 1], 1.0), r"origins and directions hold different numbers of rays"),
    (lambda q: q([0, 0, 0], [0, 0, 1], 1.0, tmin=-1.0), r"tmin must be a finite number >= 0"),
    (lambda q: q([0, 0, 0], [0, 0, 1], 1.0, tmin=2.0, tmax=1.0), r"tmax must be a number >= tmin"),
])
def test_refusals(call, message):
    vertices, faces = icosphere(0)
    scene = bvh.Scene()
    scene.add_instance(scene.add_mesh(vertices, faces))
    for query in (bvh.build(vertices, faces).sphere_cast, scene.sphere_cast):
        with pytest.raises(ValueError, match=message):
            call(query)


# ------------------------------------------------------------------ properties

_MESH_VERTICES, _MESH_FACES = icosphere(1)
_MESH = bvh.build(_MESH_VERTICES, _MESH_FACES)
coordinate = st.floats(-3.0, 3.0, allow_nan=False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(origin=st.tuples(coordinate, coordinate, coordinate), target=st.tuples(coordinate, coordinate, coordinate),
       radius=st.floats(0.0, 1.0))
def test_contact_is_on_the_surface_and_nothing_is_touched_before(origin, target, radius):
    origin, direction = np.array(origin), np.array(target) - np.array(origin)
    if np.linalg.norm(direction) < 1e-3:
        return
    hits = _MESH.sphere_cast(origin, direction, radius)
    t = hits.t[0]
    if np.isfinite(t):
        assert _MESH.closest_point(hits.point).distance[0] <= 1e-12
        # Touching at t = 0 leaves nothing before.
        before = np.linspace(0.0, t, 17)[:-1] if t > 0.0 else np.zeros(0)
    else:
        before = np.linspace(0.0, 10.0, 33)
    centres = origin + before[:, None] * direction
    assert (_MESH.closest_point(centres).distance >= radius * (1 - 1e-9) - 1e-12).all()
