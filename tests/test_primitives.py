"""Tests of ``bvh.primitives`` ray, segment, point and plane tests.

The bars of issue 3 are checked against the naive float64 references in
``reference_primitives`` on 4,000 random rays per shape, a fifth of them
axis-aligned: at most 2 disagreements (hit against miss), ``t`` within
1e-6, normals within 1e-6, and never a NaN in any output. Each bug of the
reference texts has its own test.
"""

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bvh.primitives as P

try:
    import reference_primitives as ref
except ImportError:
    from testkit.reference import primitives as ref

N_RAYS = 4000
MAX_DISAGREE = 2
T_TOL = 1e-6
NORMAL_TOL = 1e-6

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------ helpers


def random_rays(rng, n, center, size, axis_fraction=0.2):
    """Rays around a shape: origins in a cube of side 4*size, aimed at points
    within 0.75*size of the centre; ``axis_fraction`` of them along +-x, y or z
    through such a point. Direction lengths are log-uniform in [0.1, 10]."""
    center = np.asarray(center, float)
    origins = center + rng.uniform(-2.0, 2.0, (n, 3)) * size
    targets = center + rng.uniform(-0.75, 0.75, (n, 3)) * size
    directions = targets - origins
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    m = int(round(n * axis_fraction))
    rows = np.arange(m)
    axis = rng.integers(0, 3, m)
    aligned = np.zeros((m, 3))
    aligned[rows, axis] = rng.choice([-1.0, 1.0], m)
    line_origins = targets[:m].copy()
    line_origins[rows, axis] = origins[rows, axis]
    origins[:m] = line_origins
    directions[:m] = aligned
    directions *= 10.0 ** rng.uniform(-1.0, 1.0, (n, 1))
    return origins, directions


def random_rotation(rng):
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q *= np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[2] *= -1
    return q


def compare(t, t_ref, normal=None, normal_ref=None, started_inside=None):
    """``(disagreements, max |dt| on common hits, max |dn| on common hits)``.

    ``started_inside`` marks hits that may carry a zero normal (``ray_aabb``
    from inside)."""
    assert not np.isnan(t).any()
    hit = np.isfinite(t)
    hit_ref = np.isfinite(t_ref)
    both = hit & hit_ref
    disagree = int((hit != hit_ref).sum())
    t_err = float(np.abs(t[both] - t_ref[both]).max(initial=0.0))
    n_err = 0.0
    if normal is not None:
        assert not np.isnan(normal).any()
        unit = hit if started_inside is None else hit & ~started_inside
        assert np.allclose(np.linalg.norm(normal[unit], axis=1), 1.0, atol=1e-12)
        assert (normal[~hit] == 0.0).all()
        n_err = float(np.abs(normal[both] - normal_ref[both]).max(initial=0.0))
    return disagree, t_err, n_err


def check_bars(t, t_ref, normal=None, normal_ref=None, min_hits=400, started_inside=None):
    disagree, t_err, n_err = compare(t, t_ref, normal, normal_ref, started_inside)
    assert np.isfinite(t).sum() >= min_hits, "the random rays should hit often enough to test anything"
    assert disagree <= MAX_DISAGREE, f"{disagree} disagreements with the reference"
    assert t_err <= T_TOL, f"t differs by {t_err:g}"
    assert n_err <= NORMAL_TOL, f"normals differ by {n_err:g}"


WINDOWS = [(0.0, np.inf), (0.3, 2.5)]


# ------------------------------------------------------- bars: random rays


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("window", WINDOWS)
def test_ray_plane_matches_reference(seed, window):
    rng = np.random.default_rng(100 + seed)
    point = rng.normal(size=3)
    normal = rng.normal(size=3) if seed else np.array([0.0, 0.0, 2.0])
    o, d = random_rays(rng, N_RAYS, point, 1.0)
    t, n = P.ray_plane(o, d, point, normal, *window)
    t_ref, n_ref = ref.ray_plane(o, d, point, normal, *window)
    check_bars(t, t_ref, n, n_ref)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("window", WINDOWS)
def test_ray_sphere_matches_reference(seed, window):
    rng = np.random.default_rng(200 + seed)
    center = rng.normal(size=3) * 3
    radius = rng.uniform(0.2, 2.0)
    o, d = random_rays(rng, N_RAYS, center, radius)
    t, n = P.ray_sphere(o, d, center, radius, *window)
    t_ref, n_ref = ref.ray_sphere(o, d, center, radius, *window)
    check_bars(t, t_ref, n, n_ref)


def test_grazing_sphere_rays_match_reference():
    """4,000 rays passing within 1e-9 (relative) of tangency: the cases where
    the geometric method and the quadratic may round to different answers."""
    rng = np.random.default_rng(250)
    center, radius = np.array([1.0, -2.0, 0.5]), 1.3
    u = rng.normal(size=(N_RAYS, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    w = rng.normal(size=(N_RAYS, 3))
    w -= (w * u).sum(axis=1, keepdims=True) * u
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    miss_by = rng.uniform(-1e-9, 1e-9, (N_RAYS, 1))
    o = center + w * radius * (1 + miss_by) - u * rng.uniform(2, 10, (N_RAYS, 1))
    d = u * 10.0 ** rng.uniform(-1, 1, (N_RAYS, 1))
    t, n = P.ray_sphere(o, d, center, radius)
    t_ref, n_ref = ref.ray_sphere(o, d, center, radius)
    disagree, t_err, _ = compare(t, t_ref, n, n_ref)
    assert disagree <= MAX_DISAGREE and t_err <= T_TOL
    assert abs(int(np.isfinite(t).sum()) - int((miss_by <= 0).sum())) <= MAX_DISAGREE


def _random_box(rng, flat):
    bmin = rng.normal(size=3)
    bmax = bmin + rng.uniform(0.1, 2.0, 3)
    if flat:
        bmax[flat - 1] = bmin[flat - 1]
    return bmin, bmax


@pytest.mark.parametrize("seed,flat", [(0, 0), (1, 0), (2, 3)])
@pytest.mark.parametrize("window", WINDOWS)
def test_ray_aabb_matches_reference(seed, flat, window):
    rng = np.random.default_rng(300 + seed)
    bmin, bmax = _random_box(rng, flat)
    o, d = random_rays(rng, N_RAYS, 0.5 * (bmin + bmax), float((bmax - bmin).max()))
    t, t_exit, n = P.ray_aabb(o, d, bmin, bmax, *window)
    t_ref, exit_ref, n_ref = ref.ray_aabb(o, d, bmin, bmax, *window)
    check_bars(t, t_ref, n, n_ref, min_hits=100, started_inside=(t == window[0]))
    both = np.isfinite(t) & np.isfinite(t_ref)
    assert np.abs(t_exit[both] - exit_ref[both]).max() <= T_TOL
    assert (t_exit[both] >= t[both]).all()
    assert not np.isnan(t_exit).any()


@pytest.mark.parametrize("seed,flat", [(0, False), (1, False), (2, True)])
@pytest.mark.parametrize("window", WINDOWS)
def test_ray_obb_matches_reference(seed, flat, window):
    rng = np.random.default_rng(400 + seed)
    center = rng.normal(size=3)
    axes = random_rotation(rng)
    half = rng.uniform(0.1, 1.5, 3)
    if flat:
        half[1] = 0.0
    o, d = random_rays(rng, N_RAYS, center, float(half.max()) * 2)
    t, n = P.ray_obb(o, d, center, axes, half, *window)
    t_ref, n_ref = ref.ray_obb(o, d, center, axes, half, *window)
    check_bars(t, t_ref, n, n_ref, min_hits=100)


def _random_triangle(rng):
    a, b, c = rng.normal(size=(3, 3)) * 1.5
    return a, b, c


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("cull", [False, True])
@pytest.mark.parametrize("window", WINDOWS)
def test_ray_triangle_matches_reference(seed, cull, window):
    rng = np.random.default_rng(500 + seed)
    a, b, c = _random_triangle(rng)
    o, d = random_rays(rng, N_RAYS, (a + b + c) / 3, 1.5)
    t, u, v, n = P.ray_triangle(o, d, a, b, c, cull, *window)
    t_ref, u_ref, v_ref, n_ref = ref.ray_triangle(o, d, a, b, c, cull, *window)
    check_bars(t, t_ref, n, n_ref, min_hits=150)
    both = np.isfinite(t) & np.isfinite(t_ref)
    assert np.abs(u[both] - u_ref[both]).max() <= 1e-9
    assert np.abs(v[both] - v_ref[both]).max() <= 1e-9
    assert (u[~np.isfinite(t)] == 0).all() and (v[~np.isfinite(t)] == 0).all()


@pytest.mark.parametrize("seed", range(3))
def test_segment_triangle_matches_reference(seed):
    rng = np.random.default_rng(600 + seed)
    a, b, c = _random_triangle(rng)
    p, d = random_rays(rng, N_RAYS, (a + b + c) / 3, 1.5)
    q = p + d
    t, u, v, n = P.segment_triangle(p, q, a, b, c)
    t_ref, u_ref, v_ref, n_ref = ref.segment_triangle(p, q, a, b, c)
    check_bars(t, t_ref, n, n_ref, min_hits=100)
    hit = np.isfinite(t)
    assert ((t[hit] >= 0) & (t[hit] <= 1)).all()
    both = hit & np.isfinite(t_ref)
    assert np.abs(u[both] - u_ref[both]).max() <= 1e-9
    assert np.abs(v[both] - v_ref[both]).max() <= 1e-9


def _planar(rng, outline2d):
    rot = random_rotation(rng)
    return rng.normal(size=3) + np.c_[outline2d, np.zeros(len(outline2d))] @ rot


HEXAGON = [(math.cos(k * math.pi / 3), math.sin(k * math.pi / 3)) for k in range(6)]
STAR = [((1.0 if k % 2 == 0 else 0.4) * math.cos(k * math.pi / 5), (1.0 if k % 2 == 0 else 0.4) * math.sin(k * math.pi / 5))
        for k in range(10)]
PENTAGRAM = [(math.cos(4 * k * math.pi / 5), math.sin(4 * k * math.pi / 5)) for k in range(5)]
BOWTIE = [(-1.0, -1.0), (1.0, 1.0), (1.0, -1.0), (-1.0, 1.0)]
POLYGONS = {"hexagon": HEXAGON, "star": STAR, "pentagram": PENTAGRAM, "bowtie": BOWTIE}


@pytest.mark.parametrize("name", sorted(POLYGONS))
@pytest.mark.parametrize("window", WINDOWS)
def test_ray_polygon_matches_reference(name, window):
    rng = np.random.default_rng(700 + sorted(POLYGONS).index(name))
    vertices = _planar(rng, np.array(POLYGONS[name]))
    o, d = random_rays(rng, N_RAYS, vertices.mean(axis=0), 1.0)
    t, n = P.ray_polygon(o, d, vertices, *window)
    t_ref, n_ref = ref.ray_polygon(o, d, vertices, *window)
    if name == "bowtie":
        # Its signed area cancels: the normal's sign is not defined by the winding.
        n_ref = n_ref * np.sign((n * n_ref).sum(axis=1, keepdims=True) + 0.5)
    check_bars(t, t_ref, n, n_ref, min_hits=150)


def test_polygon_regions_of_a_pentagram():
    """Even–odd: the pentagram's centre pentagon is wrapped twice, so outside."""
    flat = np.array(PENTAGRAM)
    assert not P.point_in_polygon([0.0, 0.0], flat)[0]
    tip = 0.8 * flat[0]
    assert P.point_in_polygon(tip, flat)[0]
    vertices = np.c_[flat, np.zeros(5)]
    t, _ = P.ray_polygon([[0, 0, 1.0], [tip[0], tip[1], 1.0]], [0, 0, -1.0], vertices)
    assert t[0] == np.inf and t[1] == 1.0


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(3, 12))
def test_point_in_polygon_matches_fan_parity(seed, m):
    rng = np.random.default_rng(seed)
    polygon = rng.uniform(-1, 1, (m, 2))
    points = rng.uniform(-1.2, 1.2, (300, 2))
    got = P.point_in_polygon(points, polygon)
    want = ref.point_in_polygon(points, polygon)
    assert (got != want).sum() <= 1


# ------------------------------------------- the triangle methods agree


@pytest.mark.parametrize("seed", range(2))
def test_triangle_methods_agree(seed):
    """Möller–Trumbore, the matrix method, the polygon test on the triangle,
    and plane + angle sum give the same hits on the same segments."""
    rng = np.random.default_rng(800 + seed)
    a, b, c = _random_triangle(rng)
    p, d = random_rays(rng, N_RAYS, (a + b + c) / 3, 1.5)
    d *= rng.uniform(1.0, 8.0, (N_RAYS, 1)) / np.linalg.norm(d, axis=1, keepdims=True)
    q = p + d
    mt = P.ray_triangle(p, d, a, b, c, tmax=1.0)
    seg = P.segment_triangle(p, q, a, b, c)
    poly = P.ray_polygon(p, d, [a, b, c], tmax=1.0)
    plane = P.ray_plane(p, d, a, np.cross(b - a, c - a), tmax=1.0)
    on_plane = np.isfinite(plane.t)
    angles = np.zeros(N_RAYS, bool)
    points = p[on_plane] + plane.t[on_plane, None] * d[on_plane]
    angles[on_plane] = P.point_in_triangle_angles(points, a, b, c)
    hit = np.isfinite(mt.t)
    assert hit.sum() >= 100
    for other in (np.isfinite(seg.t), np.isfinite(poly.t), angles):
        assert (other != hit).sum() <= MAX_DISAGREE
    both = hit & np.isfinite(seg.t)
    assert np.abs(seg.t[both] - mt.t[both]).max() <= 1e-9
    assert np.abs(seg.u[both] - mt.u[both]).max() <= 1e-9
    assert np.abs(seg.v[both] - mt.v[both]).max() <= 1e-9
    both = hit & np.isfinite(poly.t)
    assert np.abs(poly.t[both] - mt.t[both]).max() <= 1e-9
    assert np.abs(plane.t[hit] - mt.t[hit]).max() <= 1e-9
    assert np.allclose(mt.normal[hit], seg.normal[hit]) and np.allclose(mt.normal[hit], poly.normal[hit])


@SETTINGS
@given(st.integers(0, 2**32 - 1))
def test_cached_matrix_gives_the_same_hits(seed):
    rng = np.random.default_rng(seed)
    a, b, c = _random_triangle(rng)
    p, d = random_rays(rng, 50, (a + b + c) / 3, 1.5)
    direct = P.segment_triangle(p, p + d, a, b, c)
    cached = P.segment_triangle_matrix(p, p + d, P.triangle_matrix(a, b, c))
    for x, y in zip(direct, cached):
        assert np.array_equal(x, y)


def test_triangle_matrix_maps_the_triangle_to_the_unit_triangle():
    a, b, c = np.array([1.0, 2, 3]), np.array([4.0, 0, 1]), np.array([0.5, 5, -2])
    r = P.triangle_matrix(a, b, c)
    n = np.cross(b - a, c - a)
    for x, want in ((a, [0, 0, 0]), (b, [1, 0, 0]), (c, [0, 1, 0]), (a + n, [0, 0, 1])):
        assert np.allclose(r @ np.append(x, 1.0), np.append(want, 1.0), atol=1e-12)
    assert np.array_equal(r[3], [0, 0, 0, 1])


# ------------------------------------------- properties under hypothesis

coord = st.floats(-10, 10, allow_nan=False)
vec = st.tuples(coord, coord, coord).map(np.array)
direction = vec.filter(lambda v: np.linalg.norm(v) > 1e-3)


@SETTINGS
@given(vec, vec, direction, st.floats(0.05, 5))
def test_sphere_hit_lies_on_the_sphere(center, origin, d, radius):
    t, n = P.ray_sphere(origin, d, center, radius)
    t_ref, _ = ref.ray_sphere(origin[None], d[None], center, radius)
    if np.isfinite(t[0]):
        point = origin + t[0] * d
        assert abs(np.linalg.norm(point - center) - radius) <= 1e-9 * (1 + np.linalg.norm(point))
        assert np.allclose(n[0], (point - center) / np.linalg.norm(point - center))
        assert t[0] >= 0
    if np.isfinite(t[0]) != np.isfinite(t_ref[0]):
        # Only a grazing ray may disagree: its distance to the centre is r.
        u = d / np.linalg.norm(d)
        m = np.linalg.norm(np.cross(center - origin, u))
        assert abs(m - radius) <= 1e-9 * (1 + radius) or abs(np.linalg.norm(center - origin) - radius) < 1e-9


@SETTINGS
@given(vec, st.tuples(st.floats(0, 3), st.floats(0, 3), st.floats(0, 3)).map(np.array), vec, direction,
       st.integers(0, 4))
def test_aabb_hit_is_on_the_box(bmin, size, origin, d, axis_aligned):
    if axis_aligned < 3:
        d = np.zeros(3)
        d[axis_aligned] = 1.0
    bmax = bmin + size
    t, t_exit, n = P.ray_aabb(origin, d, bmin, bmax)
    assert not (np.isnan(t).any() or np.isnan(t_exit).any() or np.isnan(n).any())
    if np.isfinite(t[0]):
        assert t_exit[0] >= t[0] >= 0
        for s in (t[0], t_exit[0]):
            point = origin + s * d
            assert ((point >= bmin - 1e-9 * (1 + abs(point))) & (point <= bmax + 1e-9 * (1 + abs(point)))).all()
        if (n[0] != 0).any():
            assert np.dot(n[0], d) < 0
    else:
        assert (n[0] == 0).all() and t_exit[0] == np.inf


@SETTINGS
@given(st.integers(0, 2**32 - 1))
def test_obb_is_the_aabb_in_the_box_frame(seed):
    rng = np.random.default_rng(seed)
    axes = random_rotation(rng)
    center = rng.normal(size=3)
    half = rng.uniform(0.1, 2, 3)
    o, d = random_rays(rng, 64, center, 2.0)
    t, n = P.ray_obb(o, d, center, axes, half)
    local_o = (o - center) @ axes.T
    local_d = d @ axes.T
    box = P.ray_aabb(local_o, local_d, -half, half)
    outside = np.isfinite(box.t) & (box.t > 0)
    assert np.allclose(t[outside], box.t[outside], rtol=1e-12, atol=1e-12)
    assert np.allclose(n[outside], box.normal[outside] @ axes, atol=1e-12)


# ------------------------------------------- tangent, grazing, on, inside


def test_sphere_tangent_and_surface_origins():
    t, n = P.ray_sphere([[-5.0, 1.0, 0.0], [1.0, 0, 0], [1.0, 0, 0], [0, 0, 0]],
                        [[1.0, 0, 0], [1.0, 0, 0], [-2.0, 0, 0], [0, 3.0, 0]], [0, 0, 0], 1.0)
    assert t[0] == 5.0 and np.allclose(n[0], [0, 1, 0])   # tangent: touches
    assert t[1] == 0.0 and np.allclose(n[1], [1, 0, 0])   # on the surface, leaving
    assert t[2] == 0.0                                     # on the surface, entering
    assert t[3] == pytest.approx(1 / 3) and np.allclose(n[3], [0, 1, 0])  # from the centre: exit
    t, _ = P.ray_sphere([-5.0, 1.0 + 1e-9, 0.0], [1.0, 0, 0], [0, 0, 0], 1.0)
    assert t[0] == np.inf                                  # just past tangent
    t, _ = P.ray_sphere([1.0, 0, 0], [1.0, 0, 0], [0, 0, 0], 1.0, tmin=1e-9)
    assert t[0] == np.inf                                  # leaving, surface excluded


def test_aabb_grazing_on_and_inside():
    box = ([-1.0, -1, -1], [1.0, 1, 1])
    hits = P.ray_aabb([[-5.0, 1.0, 0.0], [-1.0, 0, 0], [0.0, 0, 0], [-5.0, 1.0, 1.0], [-5.0, 1.5, 0]],
                      [[1.0, 0, 0], [1.0, 0, 0], [0, 0, -1.0], [1.0, 0, 0], [1.0, 0, 0]], *box)
    assert hits.t[0] == 4.0 and hits.t_exit[0] == 6.0 and np.array_equal(hits.normal[0], [-1, 0, 0])
    assert hits.t[1] == 0.0 and np.array_equal(hits.normal[1], [-1, 0, 0])  # origin on a face
    assert hits.t[2] == 0.0 and hits.t_exit[2] == 1.0 and (hits.normal[2] == 0).all()  # inside
    assert hits.t[3] == 4.0                      # along an edge
    assert hits.t[4] == np.inf                   # parallel to the y slab and outside it
    hits = P.ray_aabb([0.0, 0, 0], [0.0, 0, -1.0], *box, tmin=0.5)
    assert hits.t[0] == 0.5 and (hits.normal[0] == 0).all()


def test_flat_boxes_are_rectangles():
    hits = P.ray_aabb([[0.5, 0.5, -2.0], [0.5, 0.5, 0.0], [3.0, 0.5, 0.0]],
                      [[0, 0, 1.0], [1.0, 0, 0], [-1.0, 0, 0]], [0, 0, 0], [1.0, 1.0, 0.0])
    assert hits.t[0] == 2.0 and hits.t_exit[0] == 2.0 and np.array_equal(hits.normal[0], [0, 0, -1])
    assert hits.t[1] == 0.0            # starts on the rectangle, runs in its plane
    assert hits.t[2] == 2.0            # runs in its plane, enters at the x = 1 edge
    t, n = P.ray_obb([0.0, 0, 5.0], [0, 0, -1.0], [0, 0, 0], np.eye(3), [1.0, 1.0, 0.0])
    assert t[0] == 5.0 and np.array_equal(n[0], [0, 0, 1])


def test_obb_from_inside_hits_the_exit_face():
    axes = random_rotation(np.random.default_rng(1))
    t, n = P.ray_obb([0.0, 0, 0], axes[1] * 2.0, [0, 0, 0], axes, [1.0, 0.5, 2.0])
    assert t[0] == pytest.approx(0.25)
    assert np.allclose(n[0], axes[1])


def test_triangle_edges_and_vertices_are_inside():
    a, b, c = [0.0, 0, 0], [1.0, 0, 0], [0.0, 1, 0]
    o = np.array([[0.5, 0, 1], [0, 0, 1], [0.5, 0.5, 1], [1, 0, 1], [0.5, -1e-12, 1]], float)
    t, u, v, _ = P.ray_triangle(o, [0, 0, -1.0], a, b, c)
    assert (t[:4] == 1.0).all() and t[4] == np.inf
    assert (u[1], v[1]) == (0.0, 0.0) and (u[3], v[3]) == (1.0, 0.0)
    seg = P.segment_triangle(o, o - [0, 0, 2.0], a, b, c)
    assert (seg.t[:4] == 0.5).all() and seg.t[4] == np.inf


def test_backface_culling():
    a, b, c = [0.0, 0, 0], [1.0, 0, 0], [0.0, 1, 0]          # normal +z
    o = [[0.2, 0.2, 1.0], [0.2, 0.2, -1.0]]
    d = [[0, 0, -1.0], [0, 0, 1.0]]
    two = P.ray_triangle(o, d, a, b, c)
    one = P.ray_triangle(o, d, a, b, c, cull_backfaces=True)
    assert (two.t == 1.0).all()
    assert one.t[0] == 1.0 and one.t[1] == np.inf
    assert np.array_equal(two.normal, [[0, 0, 1], [0, 0, 1]])


def test_polygon_plane_parallel_and_in_plane_rays_miss():
    square = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]
    t, n = P.ray_polygon([[0.5, 0.5, 1.0], [0.5, 0.5, 0.0]], [[1.0, 0, 0], [1.0, 0, 0]], square)
    assert (t == np.inf).all() and (n == 0).all()


# --------------------------------------------- known bugs of the reference texts


def test_aabb_far_distance_is_the_max_of_each_slab():
    """Gamedev article: ``tfar = f4min(tmin, tmax)`` makes far = near, so every
    ray from outside "misses" (enter < exit fails). Far is the per-slab max."""
    o = np.array([[-3.0, -2.5, -2.0], [4.0, 0.3, 0.2], [0.1, -5.0, 0.3]])
    d = np.array([[1.0, 0.9, 0.8], [-1.0, 0.05, 0.0], [0.0, 1.0, 0.05]])
    hits = P.ray_aabb(o, d, [-1.0, -1, -1], [1.0, 1, 1])
    want_t, want_exit, _ = ref.ray_aabb(o, d, [-1.0, -1, -1], [1.0, 1, 1])
    assert np.isfinite(hits.t).all()
    assert (hits.t_exit > hits.t).all()
    assert np.allclose(hits.t, want_t) and np.allclose(hits.t_exit, want_exit)
    assert np.allclose(hits.t_exit, [3.75, 5.0, 6.0])


def test_sphere_behind_misses_and_inside_hits_the_exit():
    """Gamedev article: it returns "hit" when ``t < 0`` and rejects on
    ``s < 0`` alone; a sphere behind is a miss, an origin inside hits the exit."""
    center, radius = [0.0, 0, 0], 1.0
    t, n = P.ray_sphere([[0.0, 0, 3.0], [0.0, 0, 0.5], [0.0, 0, -0.5], [0.0, 0, -3.0]],
                        [0, 0, 1.0], center, radius)
    assert t[0] == np.inf and (n[0] == 0).all()           # behind
    assert t[1] == pytest.approx(0.5) and np.allclose(n[1], [0, 0, 1])  # inside, centre behind
    assert t[2] == pytest.approx(1.5) and np.allclose(n[2], [0, 0, 1])  # inside, centre ahead
    assert t[3] == pytest.approx(2.0) and np.allclose(n[3], [0, 0, -1])  # in front: entry


def test_plane_parallel_rays_miss_cleanly():
    """Gamedev article: it tests an undefined ``dotND``. Parallel rays, and rays
    lying in the plane, miss without a warning, inf or NaN."""
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        t, n = P.ray_plane([[0, 0, 1.0], [0, 0, 0.0], [5, 5, 0.0]], [[1.0, 0, 0], [0, 1.0, 0], [1e-140, 1e-140, 0]],
                           [0, 0, 0], [0, 0, 1.0])
    assert (t == np.inf).all() and (n == 0).all() and not np.isnan(n).any()


#: A triangle and three points on its edge ``ab`` (found once by a seeded
#: search, written out exactly) whose anti-parallel vectors ``a - p``,
#: ``b - p`` give a cosine below -1 in plain float64 arithmetic (the kernel's
#: order of operations; with a fused multiply-add the kernel may round it to
#: -1 or below, and the clamp must make either read as inside).
_EDGE_A = [float.fromhex(x) for x in ("-0x1.4db791e89425fp-1", "-0x1.65d22e04add80p-3", "0x1.a9e9d0c49884cp+0")]
_EDGE_B = [float.fromhex(x) for x in ("0x1.517bd05985e69p-1", "-0x1.a4329cf3fbe33p+0", "-0x1.550049736df1bp-8")]
_EDGE_C = [float.fromhex(x) for x in ("-0x1.3f36a3b392ed0p-1", "0x1.3065b95c2d4b8p-3", "-0x1.9bb231d2e8415p+0")]
_EDGE_POINTS = [[float.fromhex(x) for x in row] for row in (
    ("0x1.1c163bef3febbp-1", "-0x1.8653d7917c97cp+0", "0x1.0541bf2f59780p-3"),
    ("0x1.25eef269c5038p-3", "-0x1.10840a4970bbep+0", "0x1.4d6dc9c3a9d92p-1"),
    ("-0x1.281ea93a56180p-8", "-0x1.cc3ae37e95ef6p-1", "0x1.adec8f680e4f8p-1"))]


def _cosine_in_the_kernels_order(u, v) -> float:
    """``u . v / sqrt(|u|^2 |v|^2)`` in plain float64 arithmetic, summed left to
    right as ``_angle`` does: correctly rounded operations in a fixed order,
    so the same on every CPU (``@`` would round as the BLAS kernel pleases)."""
    (ux, uy, uz), (vx, vy, vz) = u, v
    return (ux * vx + uy * vy + uz * vz) / math.sqrt((ux * ux + uy * uy + uz * uz) * (vx * vx + vy * vy + vz * vz))


def test_angle_sum_clamps_acos_on_edges():
    """Bullets tutorial: ``acos`` of a cosine rounded below -1 is NaN, and NaN
    compared with 2 pi reads as outside; the arguments are clamped."""
    for p in _EDGE_POINTS:
        ia = [a - q for a, q in zip(_EDGE_A, p)]
        ib = [b - q for b, q in zip(_EDGE_B, p)]
        assert _cosine_in_the_kernels_order(ia, ib) < -1.0, "the case must exercise the unclamped acos"
    assert P.point_in_triangle_angles(_EDGE_POINTS, _EDGE_A, _EDGE_B, _EDGE_C).all()
    vertices = [_EDGE_A, _EDGE_B, _EDGE_C]
    assert P.point_in_triangle_angles(vertices, *vertices).all()   # vertices: zero vectors


def test_angle_sum_tolerance_as_documented():
    """With the default tol = 1e-6: outside from 1e-6 of the edge length reads
    outside, inside reads inside however close; outside within 1e-8 reads
    inside (the method's blur, documented)."""
    a, b, c = np.array([0.0, 0, 0]), np.array([1.0, 0, 0]), np.array([0.3, 0.8, 0])
    s = np.linspace(0.05, 0.95, 101)
    edge = a + s[:, None] * (b - a)
    up = np.array([0, 1.0, 0])
    for delta in (1e-6, 1e-4, 1e-2):
        assert not P.point_in_triangle_angles(edge - delta * up, a, b, c).any()
    for delta in (1e-12, 1e-10, 1e-7, 1e-3):
        assert P.point_in_triangle_angles(edge + delta * up, a, b, c).all()
    assert P.point_in_triangle_angles(edge - 1e-8 * up, a, b, c).all()
    assert not ref.barycentric_inside(edge - 1e-8 * up, a, b, c).any()


def test_segment_heights_of_opposite_sign_never_underflow():
    """GPWiki ``collide``: ``J[2] * K[2] >= 0`` underflows to 0 for tiny heights
    and rejects a real crossing; it also rejects an end on the plane, which its
    text accepts. Signs are compared instead."""
    a, b, c = [0.0, 0, 0], [1.0, 0, 0], [0.0, 1, 0]
    seg = P.segment_triangle([[0.2, 0.2, 1e-170], [0.2, 0.2, 0.0], [0.2, 0.2, 1.0]],
                             [[0.2, 0.2, -1e-170], [0.2, 0.2, -1.0], [0.2, 0.2, 0.0]], a, b, c)
    assert (1e-170 * -1e-170) == 0.0
    assert seg.t[0] == 0.5 and seg.t[1] == 0.0 and seg.t[2] == 1.0
    assert np.allclose(seg.u, 0.2) and np.allclose(seg.v, 0.2)
    inside_plane = P.segment_triangle([0.1, 0.1, 0.0], [0.3, 0.1, 0.0], a, b, c)
    assert inside_plane.t[0] == np.inf


def test_obb_parallel_slab_outside_misses():
    """Dev log: its parallel early-out tests ``|f| < 0``, never true, and then
    divides by zero. A ray parallel to a face and outside its slab misses."""
    axes = random_rotation(np.random.default_rng(3))
    half = np.array([1.0, 1.0, 1.0])
    outside = 1.5 * axes[0] - 5 * axes[1]
    inside = 0.5 * axes[0] - 5 * axes[1]
    with np.errstate(all="raise"):
        t, _ = P.ray_obb([outside, inside], axes[1], [0, 0, 0], axes, half)
    assert t[0] == np.inf and t[1] == pytest.approx(4.0)


# ------------------------------------------------------- plane / volume sides


@SETTINGS
@given(st.integers(0, 2**32 - 1))
def test_plane_sides_match_all_corners(seed):
    rng = np.random.default_rng(seed)
    normal = rng.normal(size=3)
    d = rng.normal()
    bmin = rng.normal(size=(200, 3))
    bmax = bmin + rng.uniform(0, 1, (200, 3))
    side = P.plane_aabb(normal, d, bmin, bmax)
    corners = ref.aabb_corners(bmin, bmax)
    # A corner within rounding of the plane has its side decided by how the
    # dot products round (``@`` rounds as the BLAS kernel pleases): left out.
    close = (np.abs(corners @ normal + d) < 1e-12).any(axis=1)
    assert np.array_equal(side[~close], ref.plane_box_side(normal, d, corners)[~close])
    axes = random_rotation(rng)
    centers = rng.normal(size=(200, 3))
    half = rng.uniform(0, 1, (200, 3))
    side = P.plane_obb(normal, d, centers, axes, half)
    corners = np.stack([ref.obb_corners(c, axes, h) for c, h in zip(centers, half)])
    want = ref.plane_box_side(normal, d, corners)
    close = np.abs(np.abs(centers @ normal + d) - (np.abs(axes @ normal) * half).sum(1)) < 1e-12
    assert np.array_equal(side[~close], want[~close])
    radius = rng.uniform(0, 1, 200)
    side = P.plane_sphere(normal * 3, d * 3, centers, radius)
    dist = (centers @ normal + d) / np.linalg.norm(normal)
    close = np.abs(np.abs(dist) - radius) < 1e-12
    assert np.array_equal(side[~close], np.where(dist > radius, 1, np.where(dist < -radius, -1, 0))[~close])


def test_plane_sides_touching_counts_as_intersecting():
    assert P.plane_aabb([0, 0, 1.0], -1.0, [0, 0, 0], [1.0, 1, 1])[0] == 0
    assert P.plane_aabb([0, 0, 1.0], -1.0 - 1e-12, [0, 0, 0], [1.0, 1, 1])[0] == -1
    assert P.plane_sphere([0, 0, 2.0], 0.0, [0, 0, 1.0], 1.0)[0] == 0
    assert P.plane_obb([0, 0, 1.0], 0.0, [0, 0, 2.0], np.eye(3), [1, 1, 1.0])[0] == 1


# ------------------------------------------------------------ shapes of I/O


def test_single_rays_broadcasting_and_empty_batches():
    t, n = P.ray_sphere([0, 0, -5.0], [0, 0, 1.0], [0, 0, 0], 1.0)
    assert t.shape == (1,) and n.shape == (1, 3)
    t, _ = P.ray_sphere([0, 0, -5.0], [[0, 0, 1.0], [0, 1.0, 0]], [0, 0, 0], 1.0)
    assert t.tolist() == [4.0, np.inf]
    t, n = P.ray_plane(np.zeros((0, 3)), np.zeros((0, 3)) + 1, [0, 0, 0], [0, 0, 1.0])
    assert t.shape == (0,) and n.shape == (0, 3)
    t, _ = P.ray_sphere([[0, 0, -5]], [[0, 0, 2]], [0, 0, 0], 1)   # integers convert
    assert t[0] == 2.0 and t.dtype == np.float64


# ------------------------------------------------------------- refusals

SQUARE = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]
O1, D1 = [0, 0, -1.0], [0, 0, 1.0]

REFUSALS = [
    (lambda: P.ray_sphere([[0, 0]], D1, [0, 0, 0], 1), r"origins must have shape \(N, 3\) or \(3,\), got \(1, 2\)"),
    (lambda: P.ray_sphere([np.nan, 0, 0], D1, [0, 0, 0], 1), r"origins contain NaN or infinite values \(first at row 0\)"),
    (lambda: P.ray_sphere(O1, [[0, 0, 1], [0, 0, 0]], [0, 0, 0], 1), r"directions must be non-zero: row 1 has length 0"),
    (lambda: P.ray_sphere(np.zeros((2, 3)), np.ones((3, 3)), [0, 0, 0], 1),
     r"origins and directions hold different numbers of rays: 2 and 3"),
    (lambda: P.ray_sphere(O1, D1, [0, 0, 0], 0.0), r"radius must be > 0, got 0.0"),
    (lambda: P.ray_sphere(O1, D1, [0, 0, 0], -1.0), r"radius must be > 0"),
    (lambda: P.ray_sphere(O1, ["a", "b", "c"], [0, 0, 0], 1), r"directions must be an array of real numbers"),
    (lambda: P.ray_sphere(O1, [1j, 0, 0], [0, 0, 0], 1), r"directions must be an array of real numbers, got dtype complex"),
    (lambda: P.ray_sphere(O1, D1, [0, 0, 0], 1, tmin=-1), r"tmin must be a finite number >= 0"),
    (lambda: P.ray_sphere(O1, D1, [0, 0, 0], 1, tmin=2, tmax=1), r"tmax must be a number >= tmin"),
    (lambda: P.ray_sphere(O1, D1, [0, 0, 1e60], 1), r"center hold a value beyond \+-1e\+50"),
    (lambda: P.ray_plane(O1, D1, [0, 0, 0], [0, 0, 0]), r"normal must be a non-zero vector"),
    (lambda: P.ray_aabb(O1, D1, [0, 0, 1], [1, 1, 0]), r"bmin must be <= bmax on every axis: axis 2 has 1.0 > 0.0"),
    (lambda: P.ray_obb(O1, D1, [0, 0, 0], [[1, 0, 0], [1, 0, 0], [0, 0, 1]], [1, 1, 1]),
     r"axes must be orthonormal rows"),
    (lambda: P.ray_obb(O1, D1, [0, 0, 0], np.eye(2), [1, 1, 1]), r"axes must have shape \(3, 3\)"),
    (lambda: P.ray_obb(O1, D1, [0, 0, 0], np.eye(3), [1, -1, 1]), r"half_extents must be >= 0"),
    (lambda: P.ray_triangle(O1, D1, [0, 0, 0], [1, 1, 1], [2, 2, 2]), r"the triangle is degenerate"),
    (lambda: P.ray_triangle(O1, D1, [0, 0, 0], [0, 0, 0], [0, 1, 0]), r"the triangle is degenerate"),
    (lambda: P.segment_triangle([0, 0, 1], [0, 0, 1], [0, 0, 0], [1, 0, 0], [0, 1, 0]),
     r"segments must have non-zero length: row 0 has p == q"),
    (lambda: P.segment_triangle_matrix([0, 0, 1], [0, 0, -1], np.eye(3)), r"matrix must have shape \(4, 4\)"),
    (lambda: P.ray_polygon(O1, D1, [[0, 0, 0], [1, 1, 1], [2, 2, 2], [3, 3, 3]]), r"the polygon is degenerate"),
    (lambda: P.ray_polygon(O1, D1, [[0, 0, 0], [1, 0, 0]]), r"a polygon needs at least 3 vertices, got 2"),
    (lambda: P.ray_polygon(O1, D1, [[0, 0, 0], [1, 0, 0], [1, 1, 0.5], [0, 1, 0]]), r"the polygon is not planar"),
    (lambda: P.point_in_polygon([[0, 0, 0]], [[0, 0], [1, 0], [0, 1]]), r"points2d must have shape \(K, 2\)"),
    (lambda: P.point_in_triangle_angles([0, 0, 0], [0, 0, 0], [1, 0, 0], [0, 1, 0], tol=-1),
     r"tol must be >= 0"),
    (lambda: P.plane_aabb([0, 0, 0], 0, [0, 0, 0], [1, 1, 1]), r"normal must be a non-zero vector"),
    (lambda: P.plane_aabb([0, 0, 1], 0, [[0, 0, 0]], [[1, 1, 1], [2, 2, 2]]), r"bmin and bmax must have the same shape"),
    (lambda: P.plane_sphere([0, 0, 1], 0, [0, 0, 0], -1), r"radius must be finite and >= 0"),
]


@pytest.mark.parametrize("call,message", REFUSALS, ids=[m[:40] for _, m in REFUSALS])
def test_refusals_say_what_is_wrong(call, message):
    with pytest.raises(ValueError, match=message):
        call()
