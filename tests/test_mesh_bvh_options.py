"""The query options a trimesh-style engine needs (issue 17), against the
float64 brute force: ``max_hits`` of ``intersect_all``, zero directions as
misses, empty meshes, and rays that start on a face (negative ``tmin`` and
``MeshBVH.start_tolerance``)."""

import numpy as np
import pytest

import bvh
from bvh.validation import MIN_DIRECTION_LENGTH, check_mesh, check_rays_allowing_zero, check_window
from testkit.reference import raycast as reference
from testkit.meshes import pick_rays, sample_mesh
from tests.test_mesh_bvh import CUBE_FACES, CUBE_VERTICES


@pytest.fixture(scope="module")
def torus():
    vertices, faces = sample_mesh("torus.ply")
    return vertices, faces, bvh.build(vertices, faces)


# ---------------------------------------------------------------- max_hits
@pytest.mark.parametrize("max_hits", [0, 1, 2, 3])
def test_max_hits_keeps_the_nearest_crossings_of_each_ray(torus, max_hits):
    vertices, faces, mesh = torus
    origins, directions = pick_rays(vertices, 600, np.random.default_rng(3), axis_aligned_fraction=0.2)
    every = mesh.intersect_all(origins, directions)
    capped = mesh.intersect_all(origins, directions, max_hits=max_hits)
    # Exactly the first max_hits crossings of each ray, nearest first.
    rank = np.arange(len(every)) - np.searchsorted(every.ray, every.ray)
    first = rank < max_hits
    np.testing.assert_array_equal(capped.ray, every.ray[first])
    np.testing.assert_array_equal(capped.triangle, every.triangle[first])
    np.testing.assert_array_equal(capped.t, every.t[first])
    np.testing.assert_array_equal(capped.point, every.point[first])
    # And the oracle's nearest crossings, on the rays whose crossings it counts alike.
    expected = reference.all_hit_distances(vertices, faces, origins, directions)
    counts = np.bincount(every.ray, minlength=len(origins))
    agree = [i for i, e in enumerate(expected) if counts[i] == len(e)]
    assert len(agree) >= 0.999 * len(origins)
    capped_counts = np.bincount(capped.ray, minlength=len(origins))
    for i in agree:
        assert capped_counts[i] == min(max_hits, len(expected[i]))
        np.testing.assert_allclose(capped.t[capped.ray == i], expected[i][:max_hits], rtol=1e-6, atol=1e-9)


def test_max_hits_counts_a_shared_edge_crossing_once():
    mesh = bvh.build(CUBE_VERTICES, CUBE_FACES)
    # Through the diagonals shared by both triangles of the z = 0 and z = 1 faces.
    result = mesh.intersect_all([[0.0, 0.0, -1.0]], [[0.0, 0.0, 1.0]], max_hits=1)
    np.testing.assert_array_equal(result.ray, [0])
    np.testing.assert_allclose(result.t, [1.0])
    assert len(mesh.intersect_all([[0.0, 0.0, -1.0]], [[0.0, 0.0, 1.0]], max_hits=2)) == 2


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_max_hits_must_be_a_count(bad):
    mesh = bvh.build(CUBE_VERTICES, CUBE_FACES)
    with pytest.raises(ValueError, match="max_hits must be an integer >= 0 or None"):
        mesh.intersect_all([[0.3, 0.6, -1.0]], [[0.0, 0.0, 1.0]], max_hits=bad)


# ----------------------------------------------------------- zero directions
def _with_zero_rows(origins, directions, rng):
    """The rays with every third direction replaced by zero or by one too
    short to trace; returns them and the mask of the traceable ones."""
    directions = directions.copy()
    dead = np.zeros(len(directions), bool)
    dead[::3] = True
    directions[dead] = 0.0
    directions[1::6] = rng.normal(size=(len(directions[1::6]), 3)) * 1e-152
    dead[1::6] = True
    return origins, directions, ~dead


@pytest.mark.parametrize("n", [30, 600])  # the serial and the parallel kernels
def test_zero_directions_miss_and_leave_the_other_rays_alone(torus, n):
    vertices, faces, mesh = torus
    rng = np.random.default_rng(5)
    origins, directions, live = _with_zero_rows(*pick_rays(vertices, n, rng), rng)
    hits = mesh.intersect(origins, directions, zero_directions="miss")
    alone = mesh.intersect(origins[live], directions[live])
    assert (hits.triangle[~live] == -1).all() and np.isinf(hits.t[~live]).all()
    assert np.isnan(hits.point[~live]).all() and not hits.front_face[~live].any()
    for name in ("triangle", "t", "u", "v", "point", "normal", "front_face"):
        np.testing.assert_array_equal(getattr(hits, name)[live], getattr(alone, name), err_msg=name)
    triangle, *_ = reference.closest_hits(vertices, faces, origins[live], directions[live])
    assert ((alone.triangle >= 0) == (triangle >= 0)).mean() >= 0.999

    occluded = mesh.occluded(origins, directions, zero_directions="miss")
    assert not occluded[~live].any()
    np.testing.assert_array_equal(occluded[live], mesh.occluded(origins[live], directions[live]))

    every = mesh.intersect_all(origins, directions, zero_directions="miss")
    some = mesh.intersect_all(origins[live], directions[live])
    np.testing.assert_array_equal(every.ray, np.flatnonzero(live)[some.ray])
    np.testing.assert_array_equal(every.t, some.t)
    np.testing.assert_array_equal(every.triangle, some.triangle)


def test_zero_directions_are_refused_by_default_and_other_faults_always():
    mesh = bvh.build(CUBE_VERTICES, CUBE_FACES)
    with pytest.raises(ValueError, match="directions must be non-zero: row 0 has length 0"):
        mesh.intersect([[0.0, 0.0, 0.0]], [[0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="zero_directions must be one of"):
        mesh.intersect([[0.0, 0.0, 0.0]], [[0.0, 0.0, 1.0]], zero_directions="skip")
    with pytest.raises(ValueError, match=r"directions contain NaN or infinite values \(first at row 1\)"):
        mesh.intersect_all(np.zeros((2, 3)), [[0.0, 0.0, 0.0], [np.nan, 0.0, 1.0]], zero_directions="miss")
    with pytest.raises(ValueError, match=r"origins contain NaN or infinite values \(first at row 1\)"):
        mesh.occluded([[0.0, 0.0, 0.0], [np.inf, 0, 0]], np.zeros((2, 3)), zero_directions="miss")


def test_check_rays_allowing_zero():
    origins = np.zeros((4, 3))
    directions = np.array([[0.0, 0, 1], [0, 0, 0], [MIN_DIRECTION_LENGTH / 2, 0, 0], [MIN_DIRECTION_LENGTH, 0, 0]])
    _, _, traceable = check_rays_allowing_zero(origins, directions)
    np.testing.assert_array_equal(traceable, [True, False, False, True])
    assert check_rays_allowing_zero(origins[:1], directions[:1])[2] is None


# --------------------------------------------------------------- empty meshes
@pytest.mark.parametrize("vertices, faces", [
    (np.zeros((0, 3)), np.zeros((0, 3), int)),
    ([], []),
    (CUBE_VERTICES, np.zeros((0, 3), int)),
])
def test_an_empty_mesh_is_built_on_request_and_never_hit(vertices, faces):
    # Refused by default: as empty, or (an empty list) as not (V, 3).
    with pytest.raises(ValueError, match=r"the mesh is empty|vertices must have shape \(V, 3\), got \(0,\)"):
        bvh.build(vertices, faces)
    mesh = bvh.build(vertices, faces, allow_empty=True)
    assert mesh.triangle_count == 0 and mesh.start_tolerance == 0.0
    origins, directions = np.array([[0.5, 0.5, -1.0], [0, 0, 0]]), np.array([[0.0, 0, 1], [0, 0, 0]])
    hits = mesh.intersect(origins, directions, zero_directions="miss")
    np.testing.assert_array_equal(hits.triangle, [-1, -1])
    assert np.isinf(hits.t).all()
    assert not mesh.occluded(origins, directions, zero_directions="miss").any()
    every = mesh.intersect_all(origins, directions, max_hits=3, zero_directions="miss")
    assert len(every) == 0 and every.point.shape == (0, 3)
    assert not mesh.contains([[0.5, 0.5, 0.5]]).any()
    assert (mesh.closest_point([[0.5, 0.5, 0.5]]).triangle == -1).all()


def test_check_mesh_allow_empty_still_checks_what_is_there():
    assert check_mesh([], [], allow_empty=True)[1].shape == (0, 3)
    with pytest.raises(ValueError, match="faces must have shape"):
        check_mesh(CUBE_VERTICES, np.zeros((0, 4), int), allow_empty=True)
    with pytest.raises(ValueError, match="vertices must have shape"):
        check_mesh(np.zeros((0, 2)), [], allow_empty=True)
    with pytest.raises(ValueError, match="faces refer to vertex 8"):
        check_mesh(CUBE_VERTICES, [[0, 1, 8]], allow_empty=True)


# ------------------------------------------------------- rays starting on a face
def _half_rounding_up(n: int) -> list[float]:
    """Scales ``s`` whose half is stored above itself in float32
    (``float32(s / 2) > s / 2``): a ray from ``z = s / 2`` on the top face of
    a box of size ``s`` then starts just below the face as stored, which it
    meets at a negative ``t``. The scales are chosen by the data's rounding
    to float32 (exact, IEEE round to nearest), not by the CPU's arithmetic."""
    scales = []
    for s in np.geomspace(1e-4, 1e8, 400):
        # Well above: far beyond float64 rounding, so the sign of the hit's t is the data's.
        if float(np.float32(s / 2)) - s / 2 > 1e-12 * s:
            scales.append(float(s))
    return scales[:: max(1, len(scales) // n)][:n]


def _box(scale):
    """A box of side ``scale`` centred on the origin, two triangles per
    side, the top face's diagonal not through (0, 0)."""
    return (CUBE_VERTICES - 0.5) * scale, CUBE_FACES


@pytest.mark.parametrize("scale", _half_rounding_up(6))
def test_a_ray_starting_on_a_face_meets_it_with_the_start_tolerance(scale):
    vertices, faces = _box(scale)
    mesh = bvh.build(vertices, faces)
    # x > y: off the faces' shared diagonals, on face 10 at the top and 9 at the bottom.
    origin, down = np.array([[0.2 * scale, 0.1 * scale, scale / 2]]), np.array([[0.0, 0.0, -1.0]])
    assert float(np.float32(scale / 2)) - scale / 2 <= mesh.start_tolerance
    # From tmin = 0 the top face as stored is behind the origin: one crossing.
    assert len(mesh.intersect_all(origin, down)) == 1
    every = mesh.intersect_all(origin, down, tmin=-mesh.start_tolerance)
    np.testing.assert_array_equal(every.triangle, [10, 9])  # the top face, then the bottom
    assert -mesh.start_tolerance <= every.t[0] < 0.0
    np.testing.assert_allclose(every.t[1], scale, rtol=1e-6)
    # The brute force on the float64 box agrees, from the same tmin.
    expected = reference.all_hit_distances(vertices, faces, origin, down, tmin=-mesh.start_tolerance)[0]
    assert len(expected) == 2
    closest = mesh.intersect(origin, down, tmin=-mesh.start_tolerance)
    assert closest.triangle[0] == 10 and closest.t[0] == every.t[0]
    assert mesh.occluded(origin, -down, tmin=-mesh.start_tolerance)[0]


def test_rays_from_points_on_faces_meet_them(torus):
    """From random points of random faces (float64, on the face as given),
    every ray meets its own face first within the start tolerance, leaving
    the face either way, at a torus moved far from the origin and scaled."""
    vertices, faces, _ = torus
    rng = np.random.default_rng(9)
    vertices = vertices * 37.0 + [1e4, -3e3, 5e2]
    mesh = bvh.build(vertices, faces)
    chosen = rng.choice(len(faces), 400)
    corners = vertices[faces[chosen]]
    w = rng.dirichlet([4.0, 4.0, 4.0], len(chosen))  # away from edges, where a neighbour may be met instead
    origins = np.einsum("nk,nkd->nd", w, corners)
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    side = rng.choice([-1.0, 1.0], (len(chosen), 1))
    directions = side * normals + 0.3 * rng.normal(size=(len(chosen), 3))  # within ~45 degrees of the normal
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    hits = mesh.intersect(origins, directions, tmin=-mesh.start_tolerance)
    np.testing.assert_array_equal(hits.triangle, chosen)
    assert (np.abs(hits.t) <= mesh.start_tolerance).all()
    every = mesh.intersect_all(origins, directions, tmin=-mesh.start_tolerance)
    first = np.searchsorted(every.ray, np.arange(len(chosen)))
    np.testing.assert_array_equal(every.triangle[first], chosen)
    assert mesh.occluded(origins, directions, tmin=-mesh.start_tolerance).all()


def test_start_tolerance_bounds_the_float32_storage_error(torus):
    vertices, faces, mesh = torus
    for scale, shift in [(1.0, 0.0), (1e-3, 0.0), (1e6, 0.0), (1.0, 1e5)]:
        moved = vertices * scale + shift
        mesh = bvh.build(moved, faces)
        stored = (moved - mesh.offset).astype(np.float32).astype(np.float64) + mesh.offset
        error = np.linalg.norm(stored - moved, axis=1).max()
        assert error <= mesh.start_tolerance / 2
        assert mesh.start_tolerance <= 1e-6 * np.linalg.norm(np.ptp(moved, axis=0))


def test_negative_tmin_is_accepted_finite_only():
    assert check_window(-0.5, 1.0, allow_negative_tmin=True) == (-0.5, 1.0)
    with pytest.raises(ValueError, match="tmin must be a finite number >= 0"):
        check_window(-0.5, 1.0)
    with pytest.raises(ValueError, match="tmin must be a finite number, got -inf"):
        check_window(-np.inf, 1.0, allow_negative_tmin=True)
    mesh = bvh.build(CUBE_VERTICES, CUBE_FACES)
    with pytest.raises(ValueError, match="tmax must be a number >= tmin"):
        mesh.intersect([[0.5, 0.5, 0.5]], [[0.0, 0.0, 1.0]], tmin=-0.1, tmax=-0.2)
    # Inside the cube, tmin = -0.75 reaches back to the bottom face.
    hits = mesh.intersect([[0.5, 0.4, 0.5]], [[0.0, 0.0, 1.0]], tmin=-0.75)
    np.testing.assert_allclose(hits.t, [-0.5])
    np.testing.assert_allclose(mesh.intersect_all([[0.5, 0.4, 0.5]], [[0.0, 0.0, 1.0]], tmin=-0.75).t, [-0.5, 0.5])
