"""The solids of an overlap query (:mod:`bvh.queries.overlap`) and their
exact tests: against a triangle, and against the surface of a sphere object.

A solid is kept as a *record*, a flat float64 array (``Q_*`` fields) in the
space of the tree it is tested in, of one of three kinds:

- ``Q_ROUND``: the points within ``r`` of the segment ``a b`` (a sphere when
  ``a == b``, else a capsule). Triangle test: the squared distance from the
  segment to the triangle, at most ``r^2`` (Ericson, *Real-Time Collision
  Detection*, 2005: the point/triangle region test of §5.1.5, which
  :func:`bvh.queries.closest_point.closest_on_triangle` is, and the
  segment/segment distance of §5.1.9), 0 when the segment crosses the
  triangle.
- ``Q_BOX``: the parallelepiped ``|N_k . (x - c)| <= h_k`` (``k = 0, 1, 2``):
  an axis-aligned box, an oriented box, or either seen through an affine map.
  Triangle test: the separating-axis test of Akenine-Möller ("Fast 3D
  Triangle-Box Overlap Testing", 2001): the three face normals, the
  triangle's normal and the nine cross products of the triangle's edges with
  the box's edges. A zero axis (a degenerate triangle's normal, an edge
  parallel to a box edge) projects everything to 0 and never separates, so
  it is no axis; the face normals come from the box's planes, not from cross
  products of its edges, so that a flat box (``h_k = 0``) keeps them.
- ``Q_CONVEX``: half-spaces ``n . x + d >= 0`` (unit normals). Triangle
  test: :func:`bvh.queries.frustum.triangles_in_frustum`'s per-triangle test
  (accept or reject by the corners, else clip, Sutherland-Hodgman), which is
  exact.

Every test is float64 on the exact edges of the float32 triangles
(:func:`bvh.queries.ray_triangle.triangle_edges`) and has no tolerance:
boundaries count (a triangle touching the solid overlaps it), and only a
contact within rounding (some 1e-16 relative) can go either way. A
degenerate triangle is its segment or point: each test above is exact for it
(no plane is made from its zero normal).

A sphere object's surface is met when the solid reaches both its inside and
its outside: exactly, by the nearest and farthest points of the solid in the
sphere's own space for half-spaces (:func:`ball_meets_region`), and in the
world for a sphere or capsule (:func:`ellipsoid_meets_round`).
"""

import math

import numpy as np

from .._jit import jit, jit_inline
from .closest_point import closest_on_triangle
from .frustum import triangle_inside
from ..walk.space import MAP_03, MAP_13, MAP_23, POINT_SCALE, nearest_on_ellipsoid, to_object

# ------------------------------------------------------------------ records

Q_ROUND, Q_BOX, Q_CONVEX = 0, 1, 2

#: Fields of a record. ``Q_KIND`` is one of the kinds above. Round: the
#: segment's ends, the radius of the exact test (in the world) and the radius
#: of the node bound (in the tree's space). Box: the centre, the three plane
#: normals ``N_k`` (rows, any length), the half-widths ``h_k`` along them,
#: and, derived by :func:`complete_record`, the edge vectors ``D_k`` (``N_k .
#: D_j`` is 1 for ``j == k``, else 0; the box is ``c + sum u_k h_k D_k``,
#: ``|u_k| <= 1``) and the box's half-extent along x, y and z. Convex: the
#: plane count, the planes from ``Q_HEAD`` on, ``(nx, ny, nz, d)`` each.
Q_KIND = 0
Q_A, Q_B, Q_R, Q_RB = 1, 4, 7, 8
Q_CENTER, Q_NORMALS, Q_HALF, Q_EDGES, Q_REACH = 1, 4, 13, 16, 25
Q_COUNT = 1
Q_HEAD = 28


@jit
def complete_record(record):
    """Fill a box record's derived fields from its normals and half-widths:
    the edge vectors ``D_k = (N_i x N_j) / (N_k . (N_i x N_j))`` (``i, j``
    the other two), and the box's half-extent along each coordinate axis,
    ``sum_k h_k |D_k|``. Other kinds have none."""
    if record[Q_KIND] != Q_BOX:
        return
    for k in range(3):
        i = (k + 1) % 3
        j = (k + 2) % 3
        ix, iy, iz = record[Q_NORMALS + 3 * i], record[Q_NORMALS + 3 * i + 1], record[Q_NORMALS + 3 * i + 2]
        jx, jy, jz = record[Q_NORMALS + 3 * j], record[Q_NORMALS + 3 * j + 1], record[Q_NORMALS + 3 * j + 2]
        cx = iy * jz - iz * jy
        cy = iz * jx - ix * jz
        cz = ix * jy - iy * jx
        det = record[Q_NORMALS + 3 * k] * cx + record[Q_NORMALS + 3 * k + 1] * cy + record[Q_NORMALS + 3 * k + 2] * cz
        record[Q_EDGES + 3 * k] = cx / det
        record[Q_EDGES + 3 * k + 1] = cy / det
        record[Q_EDGES + 3 * k + 2] = cz / det
    for axis in range(3):
        reach = 0.0
        for k in range(3):
            reach += record[Q_HALF + k] * abs(record[Q_EDGES + 3 * k + axis])
        record[Q_REACH + axis] = reach


# ------------------------------------------------------------ triangle tests


@jit_inline
def _segment_segment_d2(px, py, pz, dx, dy, dz, qx, qy, qz, ex, ey, ez):
    """Squared distance between the segments ``p + s d`` and ``q + t e``,
    ``s, t`` in ``[0, 1]`` (Ericson §5.1.9; a zero-length segment is its
    point, parallel segments are handled by the clamping)."""
    rx, ry, rz = px - qx, py - qy, pz - qz
    a = dx * dx + dy * dy + dz * dz
    e = ex * ex + ey * ey + ez * ez
    f = ex * rx + ey * ry + ez * rz
    s = 0.0
    t = 0.0
    if a <= 0.0 and e <= 0.0:
        pass
    elif a <= 0.0:
        t = min(max(f / e, 0.0), 1.0)
    else:
        c = dx * rx + dy * ry + dz * rz
        if e <= 0.0:
            s = min(max(-c / a, 0.0), 1.0)
        else:
            b = dx * ex + dy * ey + dz * ez
            denominator = a * e - b * b
            if denominator > 0.0:
                s = min(max((b * f - c * e) / denominator, 0.0), 1.0)
            t = (b * s + f) / e
            if t < 0.0:
                t = 0.0
                s = min(max(-c / a, 0.0), 1.0)
            elif t > 1.0:
                t = 1.0
                s = min(max((b - c) / a, 0.0), 1.0)
    gx = px + s * dx - qx - t * ex
    gy = py + s * dy - qy - t * ey
    gz = pz + s * dz - qz - t * ez
    return gx * gx + gy * gy + gz * gz


@jit
def _round_triangle(px, py, pz, qx, qy, qz, r, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z):
    """Whether the segment ``p q`` comes within ``r`` of the triangle: an
    end within ``r`` (Ericson's region test), the segment crossing the
    triangle, or an edge of the triangle within ``r`` of the segment."""
    r2 = r * r
    if closest_on_triangle(px, py, pz, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z)[0] <= r2:
        return True
    sx, sy, sz = qx - px, qy - py, qz - pz
    if sx == 0.0 and sy == 0.0 and sz == 0.0:
        return False
    if closest_on_triangle(qx, qy, qz, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z)[0] <= r2:
        return True
    nx = e1y * e2z - e1z * e2y
    ny = e1z * e2x - e1x * e2z
    nz = e1x * e2y - e1y * e2x
    sa = (px - ax) * nx + (py - ay) * ny + (pz - az) * nz
    sb = (qx - ax) * nx + (qy - ay) * ny + (qz - az) * nz
    # The ends on either side of the plane (a degenerate triangle has no
    # plane: n = 0 makes sa = sb = 0): the crossing point's barycentrics.
    if ((sa <= 0.0 and sb >= 0.0) or (sa >= 0.0 and sb <= 0.0)) and sa != sb:
        t = sa / (sa - sb)
        wx = px + t * sx - ax
        wy = py + t * sy - ay
        wz = pz + t * sz - az
        nn = nx * nx + ny * ny + nz * nz
        u = ((wy * e2z - wz * e2y) * nx + (wz * e2x - wx * e2z) * ny + (wx * e2y - wy * e2x) * nz) / nn
        v = ((e1y * wz - e1z * wy) * nx + (e1z * wx - e1x * wz) * ny + (e1x * wy - e1y * wx) * nz) / nn
        if u >= 0.0 and v >= 0.0 and u + v <= 1.0:
            return True
    if _segment_segment_d2(px, py, pz, sx, sy, sz, ax, ay, az, e1x, e1y, e1z) <= r2:
        return True
    if _segment_segment_d2(px, py, pz, sx, sy, sz, ax, ay, az, e2x, e2y, e2z) <= r2:
        return True
    return _segment_segment_d2(px, py, pz, sx, sy, sz, ax + e1x, ay + e1y, az + e1z, e2x - e1x, e2y - e1y,
                               e2z - e1z) <= r2


@jit_inline
def _separated(record, lx, ly, lz, v0x, v0y, v0z, v1x, v1y, v1z, v2x, v2y, v2z):
    """Whether the axis ``l`` separates the triangle ``v`` (relative to the
    box's centre) from the box: its projections against the box's radius
    ``sum_k h_k |D_k . l|``. A zero axis separates nothing."""
    p0 = v0x * lx + v0y * ly + v0z * lz
    p1 = v1x * lx + v1y * ly + v1z * lz
    p2 = v2x * lx + v2y * ly + v2z * lz
    radius = 0.0
    for k in range(3):
        radius += record[Q_HALF + k] * abs(record[Q_EDGES + 3 * k] * lx + record[Q_EDGES + 3 * k + 1] * ly
                                           + record[Q_EDGES + 3 * k + 2] * lz)
    return min(p0, min(p1, p2)) > radius or max(p0, max(p1, p2)) < -radius


@jit
def _box_triangle(record, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z):
    """Akenine-Möller's separating-axis test (2001), the triangle moved to
    the box's centre first as there, for any parallelepiped: the box's face
    normals, the triangle's normal and the nine edge cross products."""
    v0x = ax - record[Q_CENTER]
    v0y = ay - record[Q_CENTER + 1]
    v0z = az - record[Q_CENTER + 2]
    v1x, v1y, v1z = v0x + e1x, v0y + e1y, v0z + e1z
    v2x, v2y, v2z = v0x + e2x, v0y + e2y, v0z + e2z
    for k in range(3):
        if _separated(record, record[Q_NORMALS + 3 * k], record[Q_NORMALS + 3 * k + 1],
                      record[Q_NORMALS + 3 * k + 2], v0x, v0y, v0z, v1x, v1y, v1z, v2x, v2y, v2z):
            return False
    if _separated(record, e1y * e2z - e1z * e2y, e1z * e2x - e1x * e2z, e1x * e2y - e1y * e2x,
                  v0x, v0y, v0z, v1x, v1y, v1z, v2x, v2y, v2z):
        return False
    for fx, fy, fz in ((e1x, e1y, e1z), (e2x - e1x, e2y - e1y, e2z - e1z), (e2x, e2y, e2z)):
        for k in range(3):
            dx = record[Q_EDGES + 3 * k]
            dy = record[Q_EDGES + 3 * k + 1]
            dz = record[Q_EDGES + 3 * k + 2]
            if _separated(record, fy * dz - fz * dy, fz * dx - fx * dz, fx * dy - fy * dx,
                          v0x, v0y, v0z, v1x, v1y, v1z, v2x, v2y, v2z):
                return False
    return True


@jit
def triangle_overlaps(record, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, scratch):
    """Whether the closed triangle ``a, a + e1, a + e2`` (degenerate or not)
    has a point in common with the record's solid, both in one space.

    ``scratch`` is :func:`make_scratch`'s. Out of line, and each kind's test
    out of line again: inlined into one function, the three tests took 36 s
    to compile cold, against 20 s split (measured beside another job)."""
    kind = record[Q_KIND]
    if kind == Q_ROUND:
        return _round_triangle(record[Q_A], record[Q_A + 1], record[Q_A + 2], record[Q_B], record[Q_B + 1],
                               record[Q_B + 2], record[Q_R], ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z)
    if kind == Q_BOX:
        return _box_triangle(record, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z)
    corners, face, cuts, poly, other, dist = scratch
    count = int(record[Q_COUNT])
    corners[0, 0], corners[0, 1], corners[0, 2] = ax, ay, az
    corners[1, 0], corners[1, 1], corners[1, 2] = ax + e1x, ay + e1y, az + e1z
    corners[2, 0], corners[2, 1], corners[2, 2] = ax + e2x, ay + e2y, az + e2z
    planes = record[Q_HEAD:Q_HEAD + 4 * count].reshape((count, 4))
    return triangle_inside(corners, face, 0, planes, cuts, poly, other, dist)


@jit
def make_scratch(record):
    """Scratch of the convex test for a record of ``P`` planes: the corners
    ``(3, 3)``, the face ``(1, 3)`` and the clipping buffers of
    :func:`bvh.queries.frustum.triangles_in_frustum`."""
    count = int(record[Q_COUNT]) if record[Q_KIND] == Q_CONVEX else 0
    face = np.zeros((1, 3), np.int64)
    face[0, 1] = 1
    face[0, 2] = 2
    return (np.empty((3, 3)), face, np.empty(count, np.bool_), np.empty((3 + count, 3)), np.empty((3 + count, 3)),
            np.empty(3 + count))


# ------------------------------------------------------------ sphere objects


@jit_inline
def _feasible(planes, x, y, z, skip_a, skip_b, skip_c):
    """Whether ``x`` is inside every plane but the (active) ones skipped,
    within a rounding tolerance relative to the point and the offsets."""
    size = math.sqrt(x * x + y * y + z * z)
    for p in range(planes.shape[0]):
        if p == skip_a or p == skip_b or p == skip_c:
            continue
        value = planes[p, 0] * x + planes[p, 1] * y + planes[p, 2] * z + planes[p, 3]
        if value < -1.0e-12 * (size + abs(planes[p, 3])):
            return False
    return True


@jit
def ball_meets_region(planes, radius):
    """Whether the sphere ``|x| = radius`` meets the convex region of
    ``planes (P, 4)`` (unit normals): the region reaches within ``radius``
    of the origin and not only inside the open ball.

    Nearest point of the region: the projection of the origin onto the
    affine hull of some set of at most three planes (the active ones at the
    nearest point, by the optimality conditions), which is feasible; every
    feasible candidate is a point of the region, so the nearest feasible
    candidate is the nearest point. Farthest: unbounded regions have no
    farthest point (some ``+-n_i x n_j`` is in every plane's recession
    half-space, or the normals span less than space); bounded ones have it
    at a vertex. O(P^4) for P planes: shapes are few per query."""
    n = planes.shape[0]
    nearest = np.inf
    farthest = 0.0
    if _feasible(planes, 0.0, 0.0, 0.0, -1, -1, -1):
        nearest = 0.0
    full_rank = False
    for i in range(n):
        x, y, z = -planes[i, 3] * planes[i, 0], -planes[i, 3] * planes[i, 1], -planes[i, 3] * planes[i, 2]
        if _feasible(planes, x, y, z, i, -1, -1):
            nearest = min(nearest, math.sqrt(x * x + y * y + z * z))
        for j in range(i + 1, n):
            c = planes[i, 0] * planes[j, 0] + planes[i, 1] * planes[j, 1] + planes[i, 2] * planes[j, 2]
            det = 1.0 - c * c
            if det > 1.0e-24:
                alpha = (-planes[i, 3] + c * planes[j, 3]) / det
                beta = (-planes[j, 3] + c * planes[i, 3]) / det
                x = alpha * planes[i, 0] + beta * planes[j, 0]
                y = alpha * planes[i, 1] + beta * planes[j, 1]
                z = alpha * planes[i, 2] + beta * planes[j, 2]
                if _feasible(planes, x, y, z, i, j, -1):
                    nearest = min(nearest, math.sqrt(x * x + y * y + z * z))
            for k in range(j + 1, n):
                # Cramer: x = -(d_i (n_j x n_k) + d_j (n_k x n_i) + d_k (n_i x n_j)) / det.
                jkx = planes[j, 1] * planes[k, 2] - planes[j, 2] * planes[k, 1]
                jky = planes[j, 2] * planes[k, 0] - planes[j, 0] * planes[k, 2]
                jkz = planes[j, 0] * planes[k, 1] - planes[j, 1] * planes[k, 0]
                det3 = planes[i, 0] * jkx + planes[i, 1] * jky + planes[i, 2] * jkz
                if abs(det3) <= 1.0e-12:
                    continue
                full_rank = True
                kix = planes[k, 1] * planes[i, 2] - planes[k, 2] * planes[i, 1]
                kiy = planes[k, 2] * planes[i, 0] - planes[k, 0] * planes[i, 2]
                kiz = planes[k, 0] * planes[i, 1] - planes[k, 1] * planes[i, 0]
                ijx = planes[i, 1] * planes[j, 2] - planes[i, 2] * planes[j, 1]
                ijy = planes[i, 2] * planes[j, 0] - planes[i, 0] * planes[j, 2]
                ijz = planes[i, 0] * planes[j, 1] - planes[i, 1] * planes[j, 0]
                x = -(planes[i, 3] * jkx + planes[j, 3] * kix + planes[k, 3] * ijx) / det3
                y = -(planes[i, 3] * jky + planes[j, 3] * kiy + planes[k, 3] * ijy) / det3
                z = -(planes[i, 3] * jkz + planes[j, 3] * kiz + planes[k, 3] * ijz) / det3
                if _feasible(planes, x, y, z, i, j, k):
                    size = math.sqrt(x * x + y * y + z * z)
                    nearest = min(nearest, size)
                    farthest = max(farthest, size)
    if nearest > radius:
        return False
    if not full_rank:
        return True
    for i in range(n):
        for j in range(i + 1, n):
            dx = planes[i, 1] * planes[j, 2] - planes[i, 2] * planes[j, 1]
            dy = planes[i, 2] * planes[j, 0] - planes[i, 0] * planes[j, 2]
            dz = planes[i, 0] * planes[j, 1] - planes[i, 1] * planes[j, 0]
            length = math.sqrt(dx * dx + dy * dy + dz * dz)
            if length <= 1.0e-12:
                continue
            for sign in (1.0, -1.0):
                inside = True
                for k in range(n):
                    if sign * (planes[k, 0] * dx + planes[k, 1] * dy + planes[k, 2] * dz) < -1.0e-12 * length:
                        inside = False
                        break
                if inside:
                    return True
    return farthest >= radius


@jit_inline
def _inside_ball(consts, radius, px, py, pz):
    """Whether the world point ``p`` is in the ball of ``radius`` about the
    object's origin, seen in the object's space."""
    lx, ly, lz = to_object(consts, px - consts[MAP_03], py - consts[MAP_13], pz - consts[MAP_23])
    return lx * lx + ly * ly + lz * lz <= radius * radius


@jit_inline
def _surface_gap(consts, radius, px, py, pz):
    """World distance from ``p`` to the surface ``consts``' map makes of
    the sphere of ``radius`` (:func:`bvh.walk.space.nearest_on_ellipsoid`)."""
    return math.sqrt(nearest_on_ellipsoid(consts, radius, px, py, pz)[0])


@jit
def _ellipsoid_gap(consts, radius, px, py, pz):
    """World distance from ``p`` to the solid ellipsoid ``consts``' map makes
    of the ball of ``radius``: 0 inside, else to its surface."""
    if _inside_ball(consts, radius, px, py, pz):
        return 0.0
    return _surface_gap(consts, radius, px, py, pz)


@jit
def ellipsoid_meets_round(consts, world, radius):
    """Whether the capsule (or sphere) of the world record meets the surface
    of the sphere object of ``radius``, seen in the world through
    ``consts``' map: a sphere under a rotation and a uniform scale, else an
    ellipsoid.

    The capsule ``C`` is convex, so it meets the surface when it meets the
    solid and is not inside its interior. It meets the solid when the
    distance ``g(s)`` from the segment's point ``s`` to the solid, a convex
    function, has its minimum within ``r``: golden-section search on ``s``.
    It leaves the interior when an end is outside, or within ``r`` of the
    surface (the farthest points of ``C`` from the centre, in any metric, are
    on its end balls)."""
    # The map as a tuple of floats alone, as the point layout is.
    consts = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0) + consts[POINT_SCALE:]
    ax, ay, az = world[Q_A], world[Q_A + 1], world[Q_A + 2]
    sx, sy, sz = world[Q_B] - ax, world[Q_B + 1] - ay, world[Q_B + 2] - az
    r = world[Q_R]
    leaves = False
    for s in (0.0, 1.0):
        px, py, pz = ax + s * sx, ay + s * sy, az + s * sz
        lx, ly, lz = to_object(consts, px - consts[MAP_03], py - consts[MAP_13], pz - consts[MAP_23])
        if lx * lx + ly * ly + lz * lz >= radius * radius or _surface_gap(consts, radius, px, py, pz) <= r:
            leaves = True
    if not leaves:
        return False
    if _ellipsoid_gap(consts, radius, ax, ay, az) <= r:
        return True
    if _ellipsoid_gap(consts, radius, ax + sx, ay + sy, az + sz) <= r:
        return True
    if sx == 0.0 and sy == 0.0 and sz == 0.0:
        return False
    inv_phi = (math.sqrt(5.0) - 1.0) * 0.5
    lo, hi = 0.0, 1.0
    m1 = hi - inv_phi * (hi - lo)
    m2 = lo + inv_phi * (hi - lo)
    g1 = _ellipsoid_gap(consts, radius, ax + m1 * sx, ay + m1 * sy, az + m1 * sz)
    g2 = _ellipsoid_gap(consts, radius, ax + m2 * sx, ay + m2 * sy, az + m2 * sz)
    for _ in range(80):
        if min(g1, g2) <= r:
            return True
        if g1 <= g2:
            hi, m2, g2 = m2, m1, g1
            m1 = hi - inv_phi * (hi - lo)
            g1 = _ellipsoid_gap(consts, radius, ax + m1 * sx, ay + m1 * sy, az + m1 * sz)
        else:
            lo, m1, g1 = m1, m2, g2
            m2 = lo + inv_phi * (hi - lo)
            g2 = _ellipsoid_gap(consts, radius, ax + m2 * sx, ay + m2 * sy, az + m2 * sz)
    return min(g1, g2) <= r


@jit
def box_planes(local):
    """A box record's six half-spaces, unit normals: ``N_k . (x - c) + h_k
    >= 0`` and ``-N_k . (x - c) + h_k >= 0``."""
    planes = np.empty((6, 4))
    for k in range(3):
        nx, ny, nz = local[Q_NORMALS + 3 * k], local[Q_NORMALS + 3 * k + 1], local[Q_NORMALS + 3 * k + 2]
        inv_len = 1.0 / math.sqrt(nx * nx + ny * ny + nz * nz)
        nx, ny, nz = nx * inv_len, ny * inv_len, nz * inv_len
        along = nx * local[Q_CENTER] + ny * local[Q_CENTER + 1] + nz * local[Q_CENTER + 2]
        half = local[Q_HALF + k] * inv_len
        for side in range(2):
            sign = 1.0 if side == 0 else -1.0
            planes[2 * k + side, 0] = sign * nx
            planes[2 * k + side, 1] = sign * ny
            planes[2 * k + side, 2] = sign * nz
            planes[2 * k + side, 3] = half - sign * along
    return planes


@jit
def convex_outline(xs, ys):
    """Whether a polygon's outline (its two kept coordinates) is convex:
    every turn the same way (collinear vertices allowed) and one turn in all,
    which rules out stars, whose turns also agree."""
    m = xs.shape[0]
    positive = False
    negative = False
    turning = 0.0
    for k in range(m):
        j = (k + 1) % m
        i = (k + 2) % m
        ux, uy = xs[j] - xs[k], ys[j] - ys[k]
        vx, vy = xs[i] - xs[j], ys[i] - ys[j]
        cross = ux * vy - uy * vx
        if cross > 0.0:
            positive = True
        elif cross < 0.0:
            negative = True
        turning += math.atan2(cross, ux * vx + uy * vy)
    return not (positive and negative) and abs(turning) < 3.0 * math.pi
