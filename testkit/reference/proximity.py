"""Slow float64 brute-force proximity queries: every query against every triangle.

The oracles the engine's proximity queries are checked against: the closest
point on a mesh, the generalised winding number, the first contact of a
moving sphere, and which triangles meet a sphere, box, capsule or convex
region. They work on the original float64 vertices, test every triangle
without any tolerance, and are written with numpy broadcasting only, sharing
no code with ``bvh``. Where the engine is likely to use a textbook method,
these use a different one, so that a shared mistake is unlikely:

- closest point: the projection onto the triangle's plane, with barycentrics
  from the 2x2 normal equations, if it falls inside; else the nearest of the
  three edges, each a clamped segment (not Ericson's Voronoi-region test);
- winding number: the Van Oosterom–Strackee solid angle of every triangle;
- sphere cast: the earliest of the ray against the two planes offset from the
  face, the three edge cylinders and the three corner spheres (the boundary
  of the triangle's Minkowski sum with the ball);
- overlap of boxes and convex regions: Sutherland–Hodgman clipping of the
  triangle by every half-space; of spheres and capsules: distances.

Degenerate triangles (zero area: collinear or coincident corners) are their
segments or their point: they have no plane, their edges and corners still
count, and they never produce NaN.

Every function takes ``vertices (V, 3)`` float64 and ``faces (F, 3)``
integer. Queries are processed in blocks of at most ``_CHUNK_PAIRS``
(query, triangle) pairs, so memory stays bounded (a few million float64 per
block, some 60 MB at most) whatever the number of queries and triangles;
only :func:`point_triangle_distances` returns an (N, F) array. Speed is
some 2 to 3 million (query, triangle) pairs a second for closest points, a
third of that for sphere casts.
"""

from typing import NamedTuple

import numpy as np

#: (query, triangle) pairs per block; the largest temporaries are
#: (pairs, 3) float64, and a block peaks at some 60 MB (sphere casts).
_CHUNK_PAIRS = 200_000


def _getitem(self, key):
    """``result["name"]`` as well as ``result.name`` and ``result[0]``."""
    if isinstance(key, str):
        return getattr(self, key)
    return tuple.__getitem__(self, key)


class ClosestPoints(NamedTuple):
    """The closest point of a mesh to each of N points.

    triangle : (N,) int64
        Index of the triangle of the closest point, the lowest index on a
        tie; -1 when no triangle is within ``max_distance``.
    point : (N, 3) float64
        The closest point ``(1 - u - v) * a + u * b + v * c`` for the face
        ``(a, b, c)``; NaN when there is none.
    distance : (N,) float64
        Distance to it; inf when there is none.
    u, v : (N,) float64
        Barycentrics of the closest point; NaN when there is none.
    """

    triangle: np.ndarray
    point: np.ndarray
    distance: np.ndarray
    u: np.ndarray
    v: np.ndarray

    __getitem__ = _getitem


class SphereCastHits(NamedTuple):
    """The first contact of a moving sphere with a mesh, for each of N casts.

    triangle : (N,) int64
        The triangle touched first, the lowest index on a tie; -1 on a miss.
    t : (N,) float64
        The sphere's centre is ``origin + t * direction`` at contact; inf on a miss.
    point : (N, 3) float64
        The contact point, on the triangle; NaN on a miss.
    """

    triangle: np.ndarray
    t: np.ndarray
    point: np.ndarray

    __getitem__ = _getitem


# ------------------------------------------------------------------ helpers


def _dot(a, b):
    return (a * b).sum(axis=-1)


def _norm(a):
    return np.sqrt(_dot(a, a))


def _corners(vertices, faces):
    """``(F, 3, 3)``: the corners of every face, float64."""
    vertices = np.asarray(vertices, np.float64).reshape(-1, 3)
    faces = np.asarray(faces, np.int64).reshape(-1, 3)
    return vertices[faces]


def _points(points):
    """``(N, 3)`` float64 from one point ``(3,)`` or ``(N, 3)``."""
    return np.asarray(points, np.float64).reshape(-1, 3)


def _blocks(n_queries, n_triangles):
    """``(queries, triangles)`` slices covering every pair, triangles in the
    outer loop so that each query meets the triangles in increasing order."""
    columns = max(1, min(n_triangles, _CHUNK_PAIRS))
    rows = max(1, _CHUNK_PAIRS // columns)
    for c in range(0, n_triangles, columns):
        for r in range(0, n_queries, rows):
            yield slice(r, min(n_queries, r + rows)), slice(c, min(n_triangles, c + columns))


def _plane_coordinates(a, e0, e1, x):
    """``(u, v, ok)``: the projection of ``x`` onto the plane ``a + u e0 + v e1``,
    from the 2x2 normal equations ``G [u v] = [e0.w e1.w]``, ``w = x - a``.

    ``ok`` is False where the triangle is degenerate (Gram determinant not
    positive); ``u`` and ``v`` are then meaningless but never NaN there.
    """
    w = x - a
    g00 = _dot(e0, e0)
    g01 = _dot(e0, e1)
    g11 = _dot(e1, e1)
    r0 = _dot(w, e0)
    r1 = _dot(w, e1)
    det = g00 * g11 - g01 * g01
    ok = det > 0
    safe = np.where(ok, det, 1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        u = (g11 * r0 - g01 * r1) / safe
        v = (g00 * r1 - g01 * r0) / safe
    return u, v, ok


def _inside(u, v, ok):
    """Closed triangle test on plane coordinates."""
    with np.errstate(invalid="ignore"):
        return ok & (u >= 0) & (v >= 0) & (u + v <= 1)


def _segment_parameter(x, s0, e):
    """Parameter in [0, 1] of the point of segment ``s0 + s e`` closest to
    ``x``; 0 for a zero-length segment."""
    ee = _dot(e, e)
    s = _dot(x - s0, e) / np.where(ee > 0, ee, 1.0)
    return np.clip(np.where(ee > 0, s, 0.0), 0.0, 1.0)


def _closest_on_triangles(corners, points):
    """``distance, u, v (R, T)`` and ``point (R, T, 3)``: the closest point of
    each of T triangles to each of R points.

    Candidates, every one a point of the triangle: the projection onto the
    plane if it falls inside, and the closest point of each edge. The first
    of the nearest wins (the projection, then ab, ac, bc).
    """
    a = corners[None, :, 0]
    b = corners[None, :, 1]
    c = corners[None, :, 2]
    p = points[:, None, :]
    shape = (len(points), len(corners))
    e0 = b - a
    e1 = c - a
    u_in, v_in, ok = _plane_coordinates(a, e0, e1, p)
    inside = _inside(u_in, v_in, ok)
    u_in = np.where(inside, u_in, 0.0)
    v_in = np.where(inside, v_in, 0.0)
    s_ab = _segment_parameter(p, a, e0)
    s_ac = _segment_parameter(p, a, e1)
    s_bc = _segment_parameter(p, b, c - b)
    # (weight of a, u, v, valid) with u the weight of b and v of c.
    candidates = (
        (1.0 - u_in - v_in, u_in, v_in, inside),
        (1.0 - s_ab, s_ab, 0.0, True),
        (1.0 - s_ac, 0.0, s_ac, True),
        (0.0, 1.0 - s_bc, s_bc, True),
    )
    best_d = np.full(shape, np.inf)
    best_u = np.zeros(shape)
    best_v = np.zeros(shape)
    best_x = np.zeros(shape + (3,))
    for w, u, v, valid in candidates:
        w = np.broadcast_to(w, shape)
        u = np.broadcast_to(u, shape)
        v = np.broadcast_to(v, shape)
        x = w[..., None] * a + u[..., None] * b + v[..., None] * c
        d = np.where(valid, _norm(p - x), np.inf)
        take = d < best_d
        best_d = np.where(take, d, best_d)
        best_u = np.where(take, u, best_u)
        best_v = np.where(take, v, best_v)
        best_x = np.where(take[..., None], x, best_x)
    return best_d, best_u, best_v, best_x


# ---------------------------------------------------------- closest points


def point_triangle_distances(vertices, faces, points):
    """Distance from every point to every triangle.

    Parameters
    ----------
    vertices : (V, 3) float64
    faces : (F, 3) int
    points : (N, 3) float64, or one point (3,)

    Returns
    -------
    (N, F) float64
        ``[i, j]`` the distance from point ``i`` to the closed triangle ``j``
        (a degenerate triangle: its segment or point). The result itself is
        N x F; the work is done in bounded blocks, so keep N x F to what fits
        in memory (say 10^8).
    """
    corners = _corners(vertices, faces)
    points = _points(points)
    out = np.empty((len(points), len(corners)))
    for rows, cols in _blocks(len(points), len(corners)):
        out[rows, cols] = _closest_on_triangles(corners[cols], points[rows])[0]
    return out


def closest_points(vertices, faces, points, max_distance=np.inf):
    """The closest point of the mesh to each point, by brute force.

    Parameters
    ----------
    vertices : (V, 3) float64
    faces : (F, 3) int
    points : (N, 3) float64, or one point (3,)
    max_distance : float
        Triangles farther than this are ignored (a triangle at exactly
        ``max_distance`` counts).

    Returns
    -------
    ClosestPoints
        ``triangle (N,) int64`` (-1 when none within ``max_distance``, and on
        a tie the lowest index), ``point (N, 3)`` (NaN when none),
        ``distance (N,)`` (inf when none), ``u, v (N,)`` (NaN when none), with
        ``point = (1 - u - v) * a + u * b + v * c`` for the face ``(a, b, c)``.
    """
    corners = _corners(vertices, faces)
    points = _points(points)
    n = len(points)
    triangle = np.full(n, -1, np.int64)
    distance = np.full(n, np.inf)
    point = np.full((n, 3), np.nan)
    u_out = np.full(n, np.nan)
    v_out = np.full(n, np.nan)
    for rows, cols in _blocks(n, len(corners)):
        d, u, v, x = _closest_on_triangles(corners[cols], points[rows])
        best = np.argmin(d, axis=1)
        r = np.arange(len(best))
        d_best = d[r, best]
        # Strictly closer only: earlier blocks hold lower triangle indices.
        take = (d_best <= max_distance) & (d_best < distance[rows])
        idx = np.flatnonzero(take) + rows.start
        triangle[idx] = best[take] + cols.start
        distance[idx] = d_best[take]
        point[idx] = x[r, best][take]
        u_out[idx] = u[r, best][take]
        v_out[idx] = v[r, best][take]
    return ClosestPoints(triangle, point, distance, u_out, v_out)


# --------------------------------------------------------- winding numbers


def _solid_angles(corners, points):
    """``(R, T)`` signed solid angle of each triangle seen from each point
    (Van Oosterom & Strackee 1983)."""
    a = corners[None, :, 0] - points[:, None, :]
    b = corners[None, :, 1] - points[:, None, :]
    c = corners[None, :, 2] - points[:, None, :]
    la, lb, lc = _norm(a), _norm(b), _norm(c)
    triple = _dot(a, np.cross(b, c))
    denominator = la * lb * lc + _dot(a, b) * lc + _dot(b, c) * la + _dot(c, a) * lb
    return 2.0 * np.arctan2(triple, denominator)


def winding_numbers(vertices, faces, points):
    """Generalised winding number of the mesh at each point (Jacobson et al. 2013).

    The sum over every triangle of its signed solid angle seen from the
    point, ``tan(Omega / 2) = a.(b x c) / (|a||b||c| + (a.b)|c| + (b.c)|a|
    + (c.a)|b|)`` with ``a, b, c`` the corners relative to the point
    (``atan2``, so Omega is in (-2 pi, 2 pi]), divided by 4 pi.

    Parameters
    ----------
    vertices : (V, 3) float64
    faces : (F, 3) int
        Counter-clockwise seen from outside (outward normals, trimesh's
        convention): +1 inside a closed mesh, 0 outside; -1 inside if the mesh
        is turned inside out. Open meshes give values in between.
    points : (N, 3) float64, or one point (3,)

    Returns
    -------
    (N,) float64
        Undefined (but finite) for points on the surface: a triangle through
        the point contributes anything in [-1/2, 1/2] (rounding decides). A
        degenerate triangle contributes 0 (up to rounding) to points off it.
    """
    corners = _corners(vertices, faces)
    points = _points(points)
    total = np.zeros(len(points))
    for rows, cols in _blocks(len(points), len(corners)):
        total[rows] += _solid_angles(corners[cols], points[rows]).sum(axis=1)
    return total / (4.0 * np.pi)


# -------------------------------------------------------------- sphere cast


def _first_root(A, B, C):
    """The smaller real root of ``A t^2 + B t + C`` where ``A > 0``, NaN
    where there is none (the cancellation-free form of the quadratic formula)."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        disc = B * B - 4.0 * A * C
        real = (A > 0) & (disc >= 0)
        q = -0.5 * (B + np.copysign(np.sqrt(np.where(real, disc, 0.0)), B))
        # q = 0 only for B = C = 0 (a double root at 0): C / q is NaN, fmin skips it.
        t = np.fmin(q / np.where(real, A, 1.0), C / q)
    return np.where(real, t, np.nan)


def _sphere_cast_block(corners, origins, directions, radius, tmax):
    """``t (R, T)`` (inf where no contact) and ``point (R, T, 3)`` of R casts
    against T triangles."""
    a = corners[None, :, 0]
    b = corners[None, :, 1]
    c = corners[None, :, 2]
    o = origins[:, None, :]
    d = directions[:, None, :]
    r = radius[:, None]
    t_max = tmax[:, None]
    shape = (len(origins), len(corners))

    # Touching already: the closest point at t = 0.
    dist0, _, _, x0 = _closest_on_triangles(corners, origins)
    touching = dist0 <= r
    best_t = np.where(touching, 0.0, np.inf)
    best_x = np.where(touching[..., None], x0, np.nan)

    def offer(t, x, valid):
        nonlocal best_t, best_x
        with np.errstate(invalid="ignore"):
            take = valid & (t >= 0) & (t <= t_max) & (t < best_t)
        best_t = np.where(take, t, best_t)
        best_x = np.where(take[..., None], np.broadcast_to(x, shape + (3,)), best_x)

    e0 = b - a
    e1 = c - a
    n = np.cross(e0, e1)
    nn = _norm(n)
    flat = nn > 0  # (1, T): the triangle has a plane
    n_hat = n / np.where(flat, nn, 1.0)[..., None]
    height = _dot(o - a, n_hat)
    speed = _dot(d, n_hat)
    moving = speed != 0
    safe_speed = np.where(moving, speed, 1.0)
    # The face: the centre reaches the plane offset by +-radius, and its foot
    # on the face's plane is inside the (closed) triangle.
    for side in (1.0, -1.0):
        t = (side * r - height) / safe_speed
        foot = o + t[..., None] * d - (side * r)[..., None] * n_hat
        u, v, ok = _plane_coordinates(a, e0, e1, foot)
        offer(t, foot, flat & moving & _inside(u, v, ok))

    # With radius 0 a triangle with a plane is its face alone (the plain ray
    # hit, edges inclusive): zero-radius cylinders and spheres would only add
    # rounding noise. A degenerate triangle is always its edges and corners.
    rounded = (r > 0) | ~flat
    # The edges: the centre enters the infinite cylinder of radius r around
    # the edge's line, at an axial position within the segment.
    for p0, p1 in ((a, b), (b, c), (c, a)):
        e = p1 - p0
        ee = _dot(e, e)
        safe_ee = np.where(ee > 0, ee, 1.0)
        m = o - p0
        m_perp = m - (_dot(m, e) / safe_ee)[..., None] * e
        d_perp = d - (_dot(d, e) / safe_ee)[..., None] * e
        t = _first_root(_dot(d_perp, d_perp), 2.0 * _dot(m_perp, d_perp), _dot(m_perp, m_perp) - r * r)
        with np.errstate(invalid="ignore"):
            s = _dot(m + t[..., None] * d, e) / safe_ee
            along = (ee > 0) & (s >= 0) & (s <= 1)
        offer(t, p0 + np.where(along, s, 0.0)[..., None] * e, rounded & along)

    # The corners: the centre enters the sphere of radius r around each.
    for p0 in (a, b, c):
        m = o - p0
        t = _first_root(_dot(d, d), 2.0 * _dot(m, d), _dot(m, m) - r * r)
        offer(t, p0, rounded)
    return best_t, best_x


def sphere_cast(vertices, faces, origins, directions, radius, tmax=np.inf):
    """The first contact of a sphere moving along each ray, by brute force.

    The sphere of ``radius`` centred at ``origin + t * direction`` touches a
    triangle when its centre is within ``radius`` of it; the result is the
    smallest such ``t`` in ``[0, tmax]`` over every triangle. For each
    triangle it is the earliest of: the centre reaching the face's plane
    offset by +-radius with its foot inside the face; the infinite cylinder
    of radius ``radius`` around each edge, at a point whose projection is on
    the segment; the sphere of radius ``radius`` around each corner. A
    sphere already touching a triangle at ``t = 0`` gives ``t = 0`` and the
    closest point as contact (it is not pushed out). With ``radius = 0`` it is
    the plain ray hit: the triangle first along the ray, edges inclusive.

    Parameters
    ----------
    vertices : (V, 3) float64
    faces : (F, 3) int
    origins, directions : (N, 3) float64 (either may be one (3,) row)
        Directions need not be unit: ``t`` is in units of the given
        direction. A zero direction only finds contacts at ``t = 0``.
    radius : float >= 0, or (N,)
    tmax : float, or (N,)

    Returns
    -------
    SphereCastHits
        ``triangle (N,) int64`` (-1 on a miss; the lowest index on a tie),
        ``t (N,) float64`` (inf on a miss), ``point (N, 3) float64`` the
        contact point on the triangle (NaN on a miss).

    Rays that graze an edge or corner, or start exactly ``radius`` from a
    triangle, may be decided by rounding.
    """
    corners = _corners(vertices, faces)
    origins, directions = np.broadcast_arrays(_points(origins), _points(directions))
    n = len(origins)
    radius = np.broadcast_to(np.asarray(radius, np.float64), (n,))
    tmax = np.broadcast_to(np.asarray(tmax, np.float64), (n,))
    triangle = np.full(n, -1, np.int64)
    t_out = np.full(n, np.inf)
    point = np.full((n, 3), np.nan)
    for rows, cols in _blocks(n, len(corners)):
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            t, x = _sphere_cast_block(corners[cols], origins[rows], directions[rows], radius[rows], tmax[rows])
        best = np.argmin(t, axis=1)
        r = np.arange(len(best))
        t_best = t[r, best]
        take = t_best < t_out[rows]  # inf never takes; earlier blocks win ties
        idx = np.flatnonzero(take) + rows.start
        triangle[idx] = best[take] + cols.start
        t_out[idx] = t_best[take]
        point[idx] = x[r, best][take]
    return SphereCastHits(triangle, t_out, point)


# ---------------------------------------------------------------- overlaps


def _point_segment_distances(x, s0, s1):
    e = s1 - s0
    s = _segment_parameter(x, s0, e)
    return _norm(x - (s0 + s[..., None] * e))


def _segment_segment_distances(p0, p1, q0, q1):
    """Distance between the closed segments ``p0 p1`` and ``q0 q1`` (broadcast
    over leading axes): the nearest of each endpoint to the other segment and,
    where the lines' closest pair lies inside both segments, that pair."""
    best = np.minimum.reduce([
        _point_segment_distances(p0, q0, q1),
        _point_segment_distances(p1, q0, q1),
        _point_segment_distances(q0, p0, p1),
        _point_segment_distances(q1, p0, p1),
    ])
    d1 = p1 - p0
    d2 = q1 - q0
    w = p0 - q0
    a = _dot(d1, d1)
    b = _dot(d1, d2)
    e = _dot(d2, d2)
    c = _dot(d1, w)
    f = _dot(d2, w)
    den = a * e - b * b  # 0 for parallel or zero-length segments
    ok = den > 0
    safe = np.where(ok, den, 1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        s = (b * f - c * e) / safe
        t = (a * f - b * c) / safe
        inner = ok & (s >= 0) & (s <= 1) & (t >= 0) & (t <= 1)
    s = np.where(inner, s, 0.0)
    t = np.where(inner, t, 0.0)
    gap = _norm((p0 + s[..., None] * d1) - (q0 + t[..., None] * d2))
    return np.where(inner, np.minimum(best, gap), best)


def segment_triangle_distances(vertices, faces, a, b):
    """Distance from the closed segment ``a b`` to every triangle.

    0 where the segment crosses the triangle (meets its plane at a point
    inside it); else the nearest of its endpoints to the triangle and of the
    triangle's three edges to the segment. ``a == b`` is a point.

    Parameters
    ----------
    vertices : (V, 3) float64
    faces : (F, 3) int
    a, b : (3,) float64

    Returns
    -------
    (F,) float64
    """
    corners = _corners(vertices, faces)
    a = np.asarray(a, np.float64).reshape(3)
    b = np.asarray(b, np.float64).reshape(3)
    distance = point_triangle_distances(vertices, faces, np.stack([a, b])).min(axis=0, initial=np.inf)
    v0, v1, v2 = corners[:, 0], corners[:, 1], corners[:, 2]
    for p0, p1 in ((v0, v1), (v1, v2), (v2, v0)):
        distance = np.minimum(distance, _segment_segment_distances(p0, p1, a, b))
    e0 = v1 - v0
    e1 = v2 - v0
    n = np.cross(e0, e1)
    sa = _dot(a - v0, n)
    sb = _dot(b - v0, n)
    straddle = (((sa <= 0) & (sb >= 0)) | ((sa >= 0) & (sb <= 0))) & (sa != sb)
    along = sa / np.where(straddle, sa - sb, 1.0)
    x = a + along[:, None] * (b - a)
    crosses = straddle & _inside(*_plane_coordinates(v0, e0, e1, x))
    return np.where(crosses, 0.0, distance)


def _half_spaces(shape):
    """``(P, 4)`` rows ``(n, d)``, inside where ``n . x + d >= 0``."""
    kind = shape["kind"]
    if kind == "convex":
        return np.asarray(shape["planes"], np.float64).reshape(-1, 4)
    if kind == "aabb":
        lo = np.asarray(shape["min"], np.float64).reshape(3)
        hi = np.asarray(shape["max"], np.float64).reshape(3)
        eye = np.eye(3)
        # x_k - lo_k >= 0 and hi_k - x_k >= 0.
        return np.concatenate([np.column_stack([eye, -lo]), np.column_stack([-eye, hi])])
    if kind == "obb":
        center = np.asarray(shape["center"], np.float64).reshape(3)
        axes = np.asarray(shape["axes"], np.float64).reshape(3, 3)
        half = np.asarray(shape["half_size"], np.float64).reshape(3)
        along = axes @ center
        # |axis_k . (x - center)| <= half_k, one half-space per side.
        return np.concatenate([np.column_stack([axes, half - along]), np.column_stack([-axes, half + along])])
    raise ValueError(f"not a convex kind: {kind!r}")


def _clip_nonempty(corners, planes):
    """``(T,) bool``: whether what is left of each triangle after clipping by
    every closed half-space (Sutherland–Hodgman) is non-empty.

    Polygons are kept padded, ``poly (T, M, 3)`` with ``count (T,)`` vertices
    each. Every clip emits, for each vertex, the vertex if it is inside, then
    the crossing point of its outgoing edge if the edge strictly crosses the
    plane; the emitted points are then packed to the front in order.
    """
    poly = corners.copy()
    count = np.full(len(corners), 3)
    for plane in planes:
        normal, offset = plane[:3], plane[3]
        m = poly.shape[1]
        side = poly @ normal + offset  # (T, M)
        index = np.arange(m)[None, :]
        valid = index < count[:, None]
        following = (index + 1) % np.maximum(count, 1)[:, None]
        next_side = np.take_along_axis(side, following, axis=1)
        next_point = np.take_along_axis(poly, following[..., None], axis=1)
        keep = valid & (side >= 0)
        crossing = valid & (((side > 0) & (next_side < 0)) | ((side < 0) & (next_side > 0)))
        fraction = side / np.where(crossing, side - next_side, 1.0)
        cut = poly + fraction[..., None] * (next_point - poly)
        emitted = np.empty((len(poly), 2 * m, 3))
        emitted[:, 0::2] = poly
        emitted[:, 1::2] = cut
        mask = np.empty((len(poly), 2 * m), bool)
        mask[:, 0::2] = keep
        mask[:, 1::2] = crossing
        order = np.argsort(~mask, axis=1, kind="stable")
        count = mask.sum(axis=1)
        width = max(int(count.max(initial=0)), 1)
        poly = np.take_along_axis(emitted, order[:, :width, None], axis=1)
    return count > 0


def overlapping_triangles(vertices, faces, shape):
    """Whether each triangle has a point in common with a closed solid.

    Parameters
    ----------
    vertices : (V, 3) float64
    faces : (F, 3) int
    shape : dict, one of
        ``{"kind": "sphere", "center": (3,), "radius": r}``;
        ``{"kind": "aabb", "min": (3,), "max": (3,)}``;
        ``{"kind": "obb", "center": (3,), "axes": (3, 3), "half_size": (3,)}``
        (rows of ``axes`` orthonormal, the box is ``|axes[k] . (x - center)|
        <= half_size[k]``);
        ``{"kind": "capsule", "a": (3,), "b": (3,), "radius": r}``;
        ``{"kind": "convex", "planes": (P, 4)}``, rows ``(nx, ny, nz, d)``
        with ``x`` inside when ``n . x + d >= 0`` for every row, as in
        ``bvh.queries.frustum`` (any scale; ``P = 0`` is all of space).

    Returns
    -------
    (F,) bool
        Boundaries count (a triangle touching the shape overlaps it); cases
        within rounding of touching may go either way. Boxes and convex
        regions: the triangle clipped by each half-space (Sutherland–Hodgman)
        is non-empty. Sphere: the distance from the centre to the triangle is
        at most r. Capsule: the distance from the segment to the triangle
        (:func:`segment_triangle_distances`) is at most r.
    """
    kind = shape["kind"]
    if kind == "sphere":
        center = np.asarray(shape["center"], np.float64).reshape(1, 3)
        return point_triangle_distances(vertices, faces, center)[0] <= shape["radius"]
    if kind == "capsule":
        return segment_triangle_distances(vertices, faces, shape["a"], shape["b"]) <= shape["radius"]
    if kind not in ("aabb", "obb", "convex"):
        raise ValueError(f"unknown shape kind {kind!r}")
    planes = _half_spaces(shape)
    corners = _corners(vertices, faces)
    out = np.empty(len(corners), bool)
    step = max(1, _CHUNK_PAIRS // (2 * (3 + len(planes))))
    for start in range(0, len(corners), step):
        block = slice(start, min(len(corners), start + step))
        out[block] = _clip_nonempty(corners[block], planes)
    return out
