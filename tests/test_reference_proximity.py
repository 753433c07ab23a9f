"""The proximity oracles of ``reference_proximity`` on cases with answers known by hand.

Coordinates are small binary fractions, so the expected values are exact or
one correctly rounded operation away from it (a square root).
"""

import numpy as np
import pytest

from testkit.reference import proximity as ref
from testkit.reference import raycast as reference_raycast

RTOL = 1e-12

#: The unit right triangle in z = 0: a = origin, b on x, c on y.
UNIT = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
ONE = np.array([[0, 1, 2]])

#: The unit cube [0, 1]^3, vertex x + 2y + 4z, two counter-clockwise
#: triangles per side seen from outside.
CUBE_VERTICES = np.array([[x, y, z] for z in (0.0, 1.0) for y in (0.0, 1.0) for x in (0.0, 1.0)])
CUBE_FACES = np.array([
    [0, 2, 1], [1, 2, 3],  # z = 0
    [4, 5, 6], [5, 7, 6],  # z = 1
    [0, 1, 5], [0, 5, 4],  # y = 0
    [2, 6, 7], [2, 7, 3],  # y = 1
    [0, 4, 6], [0, 6, 2],  # x = 0
    [1, 3, 7], [1, 7, 5],  # x = 1
])

TETRA_VERTICES = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
TETRA_FACES = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])


def outward(vertices, faces):
    """Whether every face's normal points away from the solid's centroid."""
    corners = vertices[faces]
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    return np.all(np.einsum("ij,ij->i", normals, corners.mean(axis=1) - vertices.mean(axis=0)) > 0)


def test_meshes_are_outward():
    assert outward(CUBE_VERTICES, CUBE_FACES)
    assert outward(TETRA_VERTICES, TETRA_FACES)


# ---------------------------------------------------------- closest points

# (query, closest point, distance, u, v) around the unit triangle, one per
# Voronoi region and one on the face.
UNIT_CASES = [
    ((0.25, 0.25, 2.0), (0.25, 0.25, 0.0), 2.0, 0.25, 0.25),  # above the face
    ((0.25, 0.5, -3.0), (0.25, 0.5, 0.0), 3.0, 0.25, 0.5),  # below the face
    ((0.25, 0.5, 0.0), (0.25, 0.5, 0.0), 0.0, 0.25, 0.5),  # on the face
    ((-1.0, -2.0, 0.0), (0.0, 0.0, 0.0), np.sqrt(5.0), 0.0, 0.0),  # corner a
    ((2.0, -1.0, 1.0), (1.0, 0.0, 0.0), np.sqrt(3.0), 1.0, 0.0),  # corner b
    ((-1.0, 3.0, 0.0), (0.0, 1.0, 0.0), np.sqrt(5.0), 0.0, 1.0),  # corner c
    ((0.5, -1.0, 1.0), (0.5, 0.0, 0.0), np.sqrt(2.0), 0.5, 0.0),  # edge ab
    ((-2.0, 0.75, 0.0), (0.0, 0.75, 0.0), 2.0, 0.0, 0.75),  # edge ca
    ((1.0, 1.0, 0.0), (0.5, 0.5, 0.0), np.sqrt(0.5), 0.5, 0.5),  # edge bc, in plane
    ((1.0, 1.0, 0.5), (0.5, 0.5, 0.0), np.sqrt(0.75), 0.5, 0.5),  # edge bc, above
]


def test_closest_points_in_each_region():
    queries = np.array([case[0] for case in UNIT_CASES])
    result = ref.closest_points(UNIT, ONE, queries)
    np.testing.assert_array_equal(result.triangle, 0)
    np.testing.assert_allclose(result.point, [case[1] for case in UNIT_CASES], rtol=RTOL, atol=0)
    np.testing.assert_allclose(result.distance, [case[2] for case in UNIT_CASES], rtol=RTOL, atol=0)
    np.testing.assert_allclose(result.u, [case[3] for case in UNIT_CASES], rtol=RTOL, atol=0)
    np.testing.assert_allclose(result.v, [case[4] for case in UNIT_CASES], rtol=RTOL, atol=0)
    assert result.triangle.dtype == np.int64
    np.testing.assert_allclose(ref.point_triangle_distances(UNIT, ONE, queries)[:, 0], result.distance, rtol=RTOL)


def test_closest_points_max_distance_and_empty():
    queries = np.array([[0.25, 0.25, 2.0], [0.25, 0.25, 1.0], [0.25, 0.25, 3.0]])
    result = ref.closest_points(UNIT, ONE, queries, max_distance=2.0)
    np.testing.assert_array_equal(result.triangle, [0, 0, -1])  # 2.0 itself counts
    np.testing.assert_array_equal(result.distance, [2.0, 1.0, np.inf])
    assert np.isnan(result.point[2]).all() and np.isnan(result.u[2]) and np.isnan(result.v[2])
    empty = ref.closest_points(UNIT, np.zeros((0, 3), int), queries)
    np.testing.assert_array_equal(empty.triangle, -1)
    assert np.isinf(empty.distance).all() and np.isnan(empty.point).all()
    one = ref.closest_points(UNIT, ONE, (0.25, 0.25, 2.0))  # a single (3,) point
    assert one.point.shape == (1, 3)
    # Fields by name, attribute or position.
    assert one["distance"] is one.distance is one[2] and one._fields == ("triangle", "point", "distance", "u", "v")


def test_closest_points_ties_go_to_the_lowest_index():
    # The unit triangle at z = 0 and z = 2 (in both orders), and a duplicate.
    vertices = np.concatenate([UNIT, UNIT + [0.0, 0.0, 2.0]])
    query = [[0.25, 0.25, 1.0]]
    for faces in ([[0, 1, 2], [3, 4, 5]], [[3, 4, 5], [0, 1, 2]], [[0, 1, 2], [0, 1, 2]]):
        result = ref.closest_points(vertices, faces, query)
        assert result.triangle[0] == 0
        np.testing.assert_array_equal(ref.point_triangle_distances(vertices, faces, query), [[1.0, 1.0]])
    result = ref.closest_points(vertices, [[0, 1, 2], [3, 4, 5]], [[0.25, 0.25, 1.5]])
    assert result.triangle[0] == 1 and result.distance[0] == 0.5


def test_closest_points_on_the_cube_agree_with_all_distances():
    rng = np.random.default_rng(0)
    queries = rng.uniform(-1.0, 2.0, (200, 3))
    result = ref.closest_points(CUBE_VERTICES, CUBE_FACES, queries)
    distances = ref.point_triangle_distances(CUBE_VERTICES, CUBE_FACES, queries)
    # No triangle closer, the first of the nearest, and the fields consistent.
    np.testing.assert_array_equal(result.distance, distances.min(axis=1))
    np.testing.assert_array_equal(result.triangle, np.argmin(distances, axis=1))
    np.testing.assert_allclose(np.linalg.norm(queries - result.point, axis=1), result.distance, rtol=RTOL)
    corners = CUBE_VERTICES[CUBE_FACES[result.triangle]]
    u, v = result.u[:, None], result.v[:, None]
    np.testing.assert_allclose((1 - u - v) * corners[:, 0] + u * corners[:, 1] + v * corners[:, 2],
                               result.point, rtol=0, atol=1e-15)
    assert np.all((result.u >= 0) & (result.v >= 0) & (result.u + result.v <= 1))
    # Inside the cube the distance is to the nearest side.
    inside = np.all((queries > 0) & (queries < 1), axis=1)
    np.testing.assert_allclose(result.distance[inside], np.minimum(queries, 1 - queries)[inside].min(axis=1), rtol=RTOL)


def test_blocks_do_not_change_the_answers(monkeypatch):
    rng = np.random.default_rng(1)
    queries = rng.uniform(-1.0, 2.0, (37, 3))
    faces = np.concatenate([CUBE_FACES, CUBE_FACES])  # every distance tied with a later copy
    whole = ref.closest_points(CUBE_VERTICES, faces, queries)
    cast = ref.sphere_cast(CUBE_VERTICES, faces, queries, 0.5 - queries, 0.125)
    winding = ref.winding_numbers(CUBE_VERTICES, faces, queries)
    box = {"kind": "aabb", "min": [0.2, 0.2, -0.5], "max": [0.6, 0.4, 0.5]}
    overlap = ref.overlapping_triangles(CUBE_VERTICES, faces, box)
    monkeypatch.setattr(ref, "_CHUNK_PAIRS", 5)
    blocked = ref.closest_points(CUBE_VERTICES, faces, queries)
    assert whole.triangle.max() < len(CUBE_FACES)
    for name in ref.ClosestPoints._fields:
        np.testing.assert_array_equal(getattr(blocked, name), getattr(whole, name))
    blocked_cast = ref.sphere_cast(CUBE_VERTICES, faces, queries, 0.5 - queries, 0.125)
    for name in ("triangle", "t", "point"):
        np.testing.assert_array_equal(getattr(blocked_cast, name), getattr(cast, name))
    assert cast.triangle.max() < len(CUBE_FACES)
    np.testing.assert_allclose(ref.winding_numbers(CUBE_VERTICES, faces, queries), winding, rtol=RTOL, atol=1e-14)
    np.testing.assert_array_equal(ref.overlapping_triangles(CUBE_VERTICES, faces, box), overlap)



# ------------------------------------------------------ degenerate triangles

COLLINEAR = np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [1.0, 0.0, 0.0]])  # c between a and b
POINT = np.array([[1.0, 2.0, 3.0]] * 3)
DOUBLED = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])  # a == b


def test_closest_point_on_a_collinear_triangle():
    queries = [[1.5, 1.0, 0.0], [3.0, 0.0, 4.0], [-3.0, 4.0, 0.0], [0.5, 0.0, 0.0]]
    result = ref.closest_points(COLLINEAR, ONE, queries)
    np.testing.assert_array_equal(result.point, [[1.5, 0, 0], [2, 0, 0], [0, 0, 0], [0.5, 0, 0]])
    np.testing.assert_array_equal(result.distance, [1.0, np.sqrt(17.0), 5.0, 0.0])
    u, v = result.u[:, None], result.v[:, None]
    np.testing.assert_allclose((1 - u - v) * COLLINEAR[0] + u * COLLINEAR[1] + v * COLLINEAR[2], result.point,
                               rtol=RTOL, atol=0)
    doubled = ref.closest_points(DOUBLED, ONE, [[0.25, 1.0, 0.0], [2.0, 0.0, 0.0]])
    np.testing.assert_array_equal(doubled.point, [[0.25, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal(doubled.distance, [1.0, 1.0])


def test_closest_point_on_a_point_triangle():
    result = ref.closest_points(POINT, ONE, [[1.0, 2.0, 7.0], [1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(result.point, [[1.0, 2.0, 3.0]] * 2)
    np.testing.assert_array_equal(result.distance, [4.0, 0.0])
    np.testing.assert_array_equal(result.u, [0.0, 0.0])
    np.testing.assert_array_equal(result.v, [0.0, 0.0])


def test_degenerate_triangles_never_give_nan():
    vertices = np.concatenate([COLLINEAR, POINT, DOUBLED])
    faces = np.arange(9).reshape(3, 3)
    rng = np.random.default_rng(2)
    queries = np.concatenate([rng.uniform(-1, 4, (50, 3)), vertices, [[1.5, 0, 0], [0.5, 0, 0]]])
    closest = ref.closest_points(vertices, faces, queries)
    assert np.isfinite(closest.point).all() and np.isfinite(closest.u).all() and np.isfinite(closest.v).all()
    assert np.isfinite(ref.point_triangle_distances(vertices, faces, queries)).all()
    assert np.isfinite(ref.winding_numbers(vertices, faces, queries)).all()
    for radius in (0.0, 0.25):
        cast = ref.sphere_cast(vertices, faces, queries, rng.normal(size=queries.shape), radius)
        hit = cast.triangle >= 0
        assert np.isfinite(cast.t[hit]).all() and np.isfinite(cast.point[hit]).all()
        assert np.isinf(cast.t[~hit]).all() and np.isnan(cast.point[~hit]).all()
    for shape in ({"kind": "sphere", "center": [1, 0, 0.5], "radius": 0.5},
                  {"kind": "capsule", "a": [1, -1, 0], "b": [1, 1, 0], "radius": 0.0},
                  {"kind": "aabb", "min": [0.9, -0.1, -0.1], "max": [1.1, 0.1, 0.1]}):
        np.testing.assert_array_equal(ref.overlapping_triangles(vertices, faces, shape), [True, False, True])


# --------------------------------------------------------- winding numbers


def test_winding_number_of_the_cube():
    inside = np.array([[0.5, 0.5, 0.5], [0.25, 0.75, 0.125], [0.001, 0.999, 0.5], [0.9, 0.1, 0.9]])
    outside = np.array([[1.5, 0.5, 0.5], [-0.25, 0.5, 0.5], [0.5, 0.5, -0.001], [3.0, 4.0, 5.0], [2, 2, 2]])
    np.testing.assert_allclose(ref.winding_numbers(CUBE_VERTICES, CUBE_FACES, inside), 1.0, rtol=RTOL)
    np.testing.assert_allclose(ref.winding_numbers(CUBE_VERTICES, CUBE_FACES, outside), 0.0, atol=1e-12)
    inverted = CUBE_FACES[:, ::-1]
    np.testing.assert_allclose(ref.winding_numbers(CUBE_VERTICES, inverted, inside), -1.0, rtol=RTOL)
    # A degenerate face adds nothing; the open cube without its top is in between.
    with_degenerate = np.concatenate([CUBE_FACES, [[0, 1, 1], [0, 0, 0]]])
    np.testing.assert_array_equal(ref.winding_numbers(CUBE_VERTICES, with_degenerate, inside),
                                  ref.winding_numbers(CUBE_VERTICES, CUBE_FACES, inside))
    # Seen from the centre each side is a sixth of the sphere.
    np.testing.assert_allclose(ref.winding_numbers(CUBE_VERTICES, CUBE_FACES[2:], [0.5, 0.5, 0.5]), 5 / 6, rtol=RTOL)


def test_winding_number_of_the_tetrahedron():
    inside = np.array([[0.1, 0.2, 0.3], [0.25, 0.25, 0.25], [0.01, 0.01, 0.97]])
    outside = np.array([[1.0, 1.0, 1.0], [-0.1, 0.2, 0.3], [0.4, 0.4, 0.4], [0.0, 0.0, -5.0]])
    np.testing.assert_allclose(ref.winding_numbers(TETRA_VERTICES, TETRA_FACES, inside), 1.0, rtol=RTOL)
    np.testing.assert_allclose(ref.winding_numbers(TETRA_VERTICES, TETRA_FACES, outside), 0.0, atol=1e-12)
    # The slanted face seen from the right-angled corner: an octant, 1/8
    # (tan(Omega/2) = 1 / (1 + 0 + 0 + 0), Omega = pi / 2).
    np.testing.assert_allclose(ref.winding_numbers(TETRA_VERTICES, [[1, 2, 3]], [0, 0, 0]), 1 / 8, rtol=RTOL)
    np.testing.assert_allclose(ref.winding_numbers(TETRA_VERTICES, [[1, 3, 2]], [0, 0, 0]), -1 / 8, rtol=RTOL)


def test_winding_number_on_the_surface_is_finite():
    on = np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 0.0], [0.5, 0.0, 0.0]])
    assert np.isfinite(ref.winding_numbers(CUBE_VERTICES, CUBE_FACES, on)).all()


# -------------------------------------------------------------- sphere cast

#: A larger right triangle in z = 0, room for spheres of radius 5.
BIG = 8.0 * UNIT


def test_sphere_cast_onto_the_face():
    # From height 5 straight down, radius 1/2: the sphere touches at t = 5 - 1/2.
    hits = ref.sphere_cast(BIG, ONE, [[1.0, 1.0, 5.0], [1.0, 1.0, -5.0]], [[0, 0, -1], [0, 0, 2]], 0.5)
    np.testing.assert_array_equal(hits.triangle, [0, 0])
    np.testing.assert_array_equal(hits.t, [4.5, 2.25])  # t in units of the given direction
    np.testing.assert_array_equal(hits.point, [[1.0, 1.0, 0.0]] * 2)
    # tmax is inclusive.
    np.testing.assert_array_equal(ref.sphere_cast(BIG, ONE, [1, 1, 5], [0, 0, -1], 0.5, tmax=4.5).t, [4.5])
    short = ref.sphere_cast(BIG, ONE, [1, 1, 5], [0, 0, -1], 0.5, tmax=4.25)
    assert short.triangle[0] == -1 and np.isinf(short.t[0]) and np.isnan(short.point).all()
    away = ref.sphere_cast(BIG, ONE, [1, 1, 5], [0, 0, 1], 0.5)
    assert away.triangle[0] == -1 and np.isinf(away.t[0])


def test_sphere_cast_beside_an_edge():
    # Down past edge ab at 3 from its line, radius 5: touches when the centre is 4 above it.
    hits = ref.sphere_cast(BIG, ONE, [4.0, -3.0, 10.0], [0.0, 0.0, -1.0], 5.0)
    assert hits.triangle[0] == 0
    np.testing.assert_allclose(hits.t, [6.0], rtol=RTOL)
    np.testing.assert_allclose(hits.point, [[4.0, 0.0, 0.0]], rtol=RTOL, atol=1e-15)
    # Radius 3 - 1/1024 passes by; 3 + 1/1024 touches (just under the line, at t = 10).
    assert ref.sphere_cast(BIG, ONE, [4.0, -3.0, 10.0], [0, 0, -1], 3.0 - 2.0**-10).triangle[0] == -1
    grazing = ref.sphere_cast(BIG, ONE, [4.0, -3.0, 10.0], [0, 0, -1], 3.0 + 2.0**-10)
    assert grazing.triangle[0] == 0 and 9.9 < grazing.t[0] < 10.0


def test_sphere_cast_at_a_corner():
    # Straight at corner b from outside its region: |(4, -4, 7)| = 9, radius 4.5.
    origin = np.array([12.0, -4.0, 7.0])
    hits = ref.sphere_cast(BIG, ONE, origin, [-4.0, 4.0, -7.0], 4.5)
    assert hits.triangle[0] == 0
    np.testing.assert_allclose(hits.t, [0.5], rtol=RTOL)
    np.testing.assert_array_equal(hits.point, [[8.0, 0.0, 0.0]])
    # In the triangle's plane, along (-3, 4, 0) from b + (6, -8, 0), radius 5.
    hits = ref.sphere_cast(BIG, ONE, [14.0, -8.0, 0.0], [-3.0, 4.0, 0.0], 5.0)
    np.testing.assert_allclose(hits.t, [1.0], rtol=RTOL)
    np.testing.assert_array_equal(hits.point, [[8.0, 0.0, 0.0]])


def test_sphere_cast_already_touching():
    hits = ref.sphere_cast(BIG, ONE, [[1.0, 1.0, 0.25], [-0.5, 2.0, 0.0], [1, 1, 0.5]], [0.0, 0.0, 1.0], 0.5)
    np.testing.assert_array_equal(hits.triangle, [0, 0, 0])
    np.testing.assert_array_equal(hits.t, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(hits.point, [[1.0, 1.0, 0.0], [0.0, 2.0, 0.0], [1.0, 1.0, 0.0]])
    # Not moving: only what touches at t = 0.
    still = ref.sphere_cast(BIG, ONE, [[1.0, 1.0, 0.25], [1.0, 1.0, 2.0]], [0.0, 0.0, 0.0], 0.5)
    np.testing.assert_array_equal(still.triangle, [0, -1])


def test_sphere_cast_against_degenerate_triangles():
    hits = ref.sphere_cast(COLLINEAR, ONE, [1.5, 0.0, 5.0], [0.0, 0.0, -1.0], 1.0)
    np.testing.assert_allclose(hits.t, [4.0], rtol=RTOL)
    np.testing.assert_allclose(hits.point, [[1.5, 0.0, 0.0]], rtol=RTOL)
    hits = ref.sphere_cast(POINT, ONE, [1.0, 2.0, 13.0], [0.0, 0.0, -2.0], 4.0)
    np.testing.assert_allclose(hits.t, [3.0], rtol=RTOL)
    np.testing.assert_array_equal(hits.point, [[1.0, 2.0, 3.0]])
    # With radius 0 a degenerate triangle is still its segment or point (a
    # plain ray test, which needs a plane, would miss it).
    hits = ref.sphere_cast(COLLINEAR, ONE, [[1.5, 0.0, 5.0], [1.5, 0.25, 5.0]], [0.0, 0.0, -1.0], 0.0)
    np.testing.assert_array_equal(hits.triangle, [0, -1])
    np.testing.assert_array_equal(hits.t[0], 5.0)
    np.testing.assert_array_equal(hits.point[0], [1.5, 0.0, 0.0])
    hits = ref.sphere_cast(POINT, ONE, [1.0, 2.0, 13.0], [0.0, 0.0, -2.0], 0.0)
    np.testing.assert_array_equal(hits.t, [5.0])
    np.testing.assert_array_equal(hits.point, [[1.0, 2.0, 3.0]])


def test_sphere_cast_first_triangle_and_ties():
    # Falling onto the cube's top (z = 1) from z = 3, off its diagonal: t = 2 - r.
    origins = np.array([[0.25, 0.625, 3.0], [0.75, 0.625, 3.0]])
    hits = ref.sphere_cast(CUBE_VERTICES, CUBE_FACES, origins, [0, 0, -1], 0.25)
    np.testing.assert_array_equal(hits.triangle, [2, 3])
    np.testing.assert_array_equal(hits.t, [1.75, 1.75])
    np.testing.assert_array_equal(hits.point, [[0.25, 0.625, 1.0], [0.75, 0.625, 1.0]])
    # On the diagonal both top triangles touch at once: the lower index.
    tie = ref.sphere_cast(CUBE_VERTICES, CUBE_FACES, [0.5, 0.5, 3.0], [0, 0, -1], 0.25)
    assert tie.triangle[0] == 2 and tie.t[0] == 1.75
    # From inside, the sphere already touches the nearest side.
    inside = ref.sphere_cast(CUBE_VERTICES, CUBE_FACES, [0.5, 0.5, 0.125], [1, 0, 0], 0.25)
    assert inside.triangle[0] in (0, 1) and inside.t[0] == 0.0


def test_sphere_cast_of_radius_zero_is_the_ray_hit():
    # Through faces, a shared diagonal, an edge and a corner of the cube,
    # from outside and inside, and misses.
    origins = np.array([
        [0.25, 0.625, 3.0], [0.5, 0.5, 3.0], [-2.0, 0.25, 0.75], [0.5, 0.25, 0.5], [1.0, 0.5, 3.0],
        [1.0, 1.0, 3.0], [0.25, 0.25, -1.0], [3.0, 3.0, 3.0], [2.0, 2.0, 2.0], [0.5, 0.5, 0.5],
    ])
    directions = np.array([
        [0, 0, -1], [0, 0, -1], [1, 0, 0], [0, 0, 1], [0, 0, -1],
        [0, 0, -2], [0, 0, 0.5], [-1, -1, -1], [1, 0, 0], [-1, -2, -4],
    ], dtype=float)
    hits = ref.sphere_cast(CUBE_VERTICES, CUBE_FACES, origins, directions, 0.0)
    triangle, t, u, v, _ = reference_raycast.closest_hits(CUBE_VERTICES, CUBE_FACES, origins, directions)
    np.testing.assert_array_equal(hits.triangle, triangle)
    np.testing.assert_allclose(hits.t, t, rtol=RTOL)
    assert hits.triangle[8] == -1 and (hits.triangle[:8] >= 0).all()
    np.testing.assert_array_equal(hits.t[:8], [2.0, 2.0, 2.0, 0.5, 2.0, 1.0, 2.0, 2.0])
    hit = hits.triangle >= 0
    np.testing.assert_allclose(hits.point[hit], origins[hit] + t[hit, None] * directions[hit], rtol=RTOL, atol=1e-15)
    # And on the single triangle: inside, on the hypotenuse, at a corner.
    origins = np.array([[1.0, 1.0, 5.0], [4.0, 4.0, 5.0], [8.0, 0.0, 5.0], [4.0, 4.0 + 2.0**-20, 5.0]])
    hits = ref.sphere_cast(BIG, ONE, origins, [0.0, 0.0, -1.0], 0.0)
    np.testing.assert_array_equal(hits.triangle, [0, 0, 0, -1])
    np.testing.assert_array_equal(hits.t[:3], 5.0)
    np.testing.assert_array_equal(hits.point[:3], origins[:3] * [1, 1, 0])


# ----------------------------------------------------------------- overlaps

EPS = 1e-3


def overlaps(shape, vertices=UNIT, faces=ONE):
    return bool(ref.overlapping_triangles(vertices, faces, shape)[0])


@pytest.mark.parametrize("center, distance", [
    ((0.25, 0.25, 1.0), 1.0),  # above the face
    ((-1.0, -1.0, 0.0), np.sqrt(2.0)),  # beyond corner a
    ((1.0, 1.0, 0.0), np.sqrt(0.5)),  # beyond the hypotenuse
])
def test_sphere_overlap(center, distance):
    assert overlaps({"kind": "sphere", "center": center, "radius": distance + EPS})
    assert not overlaps({"kind": "sphere", "center": center, "radius": distance - EPS})


def test_aabb_overlap():
    def box(lo, hi):
        return overlaps({"kind": "aabb", "min": lo, "max": hi})

    # Across the hypotenuse x + y = 1 with the box's corner.
    assert box([0.5 - EPS, 0.5 - EPS, -1.0], [2.0, 2.0, 1.0])
    assert not box([0.5 + EPS, 0.5 + EPS, -1.0], [2.0, 2.0, 1.0])
    # Above and below the face.
    assert box([0.0, 0.0, -EPS], [1.0, 1.0, 1.0])
    assert not box([0.0, 0.0, EPS], [1.0, 1.0, 1.0])
    assert not box([0.0, 0.0, -1.0], [1.0, 1.0, -EPS])
    # A small box the face passes through, no corner of either inside the other.
    assert box([0.2, 0.2, -0.1], [0.3, 0.3, 0.1])
    # Around the whole triangle; a flat box (zero height) in its plane.
    assert box([-1.0, -1.0, -1.0], [2.0, 2.0, 2.0])
    assert box([0.2, 0.2, 0.0], [0.3, 0.3, 0.0])
    # Beside edge ca (x = 0).
    assert not box([-1.0, 0.25, -1.0], [-EPS, 0.5, 1.0])
    assert box([-1.0, 0.25, -1.0], [EPS, 0.5, 1.0])


def test_obb_overlap():
    # Turned 45 degrees about z, centred at (1, 1, 0): its face x + y = 2 - 2h/sqrt(2)
    # reaches the hypotenuse x + y = 1 for h = sqrt(2)/2.
    s = np.sqrt(0.5)
    axes = [[s, s, 0.0], [-s, s, 0.0], [0.0, 0.0, 1.0]]

    def obb(h, center=(1.0, 1.0, 0.0)):
        return overlaps({"kind": "obb", "center": center, "axes": axes, "half_size": [h, 1.0, 1.0]})

    assert obb(s + EPS)
    assert not obb(s - EPS)
    # Lifted above the face by more than its half height, or less.
    assert not obb(s + 0.5, center=(1.0, 1.0, 1.0 + EPS))
    assert obb(s + 0.5, center=(1.0, 1.0, 1.0 - EPS))


def test_convex_overlap_uses_the_frustum_sign():
    def region(*planes):
        return overlaps({"kind": "convex", "planes": np.array(planes, float).reshape(-1, 4)})

    # Inside where n . x + d >= 0: z >= -EPS meets the face, z >= EPS does not.
    assert region([0, 0, 1, EPS])
    assert not region([0, 0, 1, -EPS])
    assert not region([0, 0, -1, -EPS])  # z <= -EPS
    # x + y >= 1 -+ EPS, at any scale.
    assert region([1, 1, 0, -(1 - EPS)])
    assert not region([1, 1, 0, -(1 + EPS)])
    assert not region([7, 7, 0, -7 * (1 + EPS)])
    # A wedge crossing the face with no triangle corner inside it.
    assert region([1, 0, 0, -0.4], [-1, 0, 0, 0.6], [0, 1, 0, -0.1], [0, -1, 0, 0.2])
    assert not region([1, 0, 0, -0.4], [-1, 0, 0, 0.6], [0, 1, 0, -0.7], [0, -1, 0, 0.8])
    # No planes: all of space.
    assert region()


@pytest.mark.parametrize("a, b, distance", [
    ((0.25, 0.25, -1.0), (0.25, 0.25, 1.0), 0.0),  # through the face
    ((0.25, 0.25, 1.0), (0.5, 0.25, 1.0), 1.0),  # above the face, parallel
    ((0.5, -1.0, -1.0), (0.5, -1.0, 1.0), 1.0),  # skew to edge ab: the segments' interiors
    ((-0.5, -1.0, 0.0), (2.0, -1.0, 0.0), 1.0),  # parallel to edge ab, in the plane
    ((2.0, 2.0, 1.0), (2.0, 2.0, 1.0), np.sqrt(2.0 * 1.5**2 + 1.0)),  # a point: a sphere
    ((-1.0, 0.5, 0.0), (2.0, 0.5, 0.0), 0.0),  # across the triangle, in its plane
])
def test_capsule_overlap(a, b, distance):
    np.testing.assert_allclose(ref.segment_triangle_distances(UNIT, ONE, a, b), [distance], rtol=RTOL)
    assert overlaps({"kind": "capsule", "a": a, "b": b, "radius": distance + EPS})
    if distance > 0:
        assert not overlaps({"kind": "capsule", "a": a, "b": b, "radius": distance - EPS})
    else:
        assert overlaps({"kind": "capsule", "a": a, "b": b, "radius": 0.0})


def test_overlap_of_several_triangles_and_unknown_kinds():
    # The cube's 12 triangles against a sphere touching only the top side.
    top = ref.overlapping_triangles(CUBE_VERTICES, CUBE_FACES, {"kind": "sphere", "center": [0.25, 0.75, 1.5],
                                                                "radius": 0.5 + EPS})
    np.testing.assert_array_equal(np.flatnonzero(top), [2, 3])
    everything = ref.overlapping_triangles(CUBE_VERTICES, CUBE_FACES, {"kind": "aabb", "min": [0.5] * 3,
                                                                       "max": [0.5] * 3})
    assert not everything.any()  # a point at the centre touches no side
    assert ref.overlapping_triangles(CUBE_VERTICES, np.zeros((0, 3), int), {"kind": "convex", "planes": []}).shape == (0,)
    with pytest.raises(ValueError):
        ref.overlapping_triangles(UNIT, ONE, {"kind": "cone"})
