"""Closest point on a surface: the leaf tests and batch kernels of point queries.

A point query walks the same four-wide trees as a ray (:mod:`bvh.walk.traversal`),
with another bound: children are keyed by their squared distance from the
point (:func:`bvh.traversal.visit_point`) and visited nearest first, and a
child farther than the nearest surface found so far is pruned (branch and
bound). The leaf test is the point/triangle region test of Ericson
(*Real-Time Collision Detection*, 2005, §5.1.5) in float64, on the exact
float64 edges of the float32 triangles, as the ray tests use.

Distances are world distances. In a scene, the walk carries the point into
each object's space to descend its mesh's tree with a lower bound on world
distances (:func:`bvh.traversal.object_point_setup`), and the leaves map
their triangles back to the world before measuring, so a non-uniformly
scaled or sheared instance is measured exactly, not in its own metric.

A degenerate triangle (collinear or coincident corners) is measured as the
segment or point it is: the face region's barycentrics divide by
``|e1 x e2|^2``, which is then zero, so those triangles take the nearest of
their three edges instead, and a zero-length edge is its first corner.
"""

import math

import numpy as np
from numba import prange

from .._jit import RAY_BLOCK, jit, jit_inline, jit_parallel
from ..walk.borrow import borrowed, frame_array
from .ray_triangle import triangle_edges
from ..primitives.rays import crossings_inside
from ..shapes import BOX, QUAD, SPHERE
from ..walk.traversal import (make_instance_walk, make_traversal, new_stack, object_point_setup, point_setup,
                        visit_point)

#: Fields of a point query's record (float64): squared world distance,
#: barycentrics, packed triangle row (-1: none, or a shape), object, the
#: closest point in world space and, for a shape, its world normal.
NEAR_D2, NEAR_U, NEAR_V, NEAR_ROW, NEAR_OBJECT, NEAR_POINT, NEAR_NORMAL = 0, 1, 2, 3, 4, 5, 8
NEAR_RECORD = 11

_near_record = frame_array(NEAR_RECORD, np.float64)

#: Padding of a bound taken from a neighbour's answer (:func:`_seeded_limit`):
#: far above the relative rounding of a squared distance (a few 1e-16).
SEED_PAD = 1.0 + 1.0e-9


@jit_inline
def _segment(px, py, pz, ax, ay, az, ex, ey, ez):
    """Squared distance from ``p`` to the segment ``a .. a + e`` and the
    parameter ``s`` in ``[0, 1]`` of its nearest point (0 for a point)."""
    length2 = ex * ex + ey * ey + ez * ez
    s = 0.0
    if length2 > 0.0:
        s = min(max(((px - ax) * ex + (py - ay) * ey + (pz - az) * ez) / length2, 0.0), 1.0)
    dx = ax + s * ex - px
    dy = ay + s * ey - py
    dz = az + s * ez - pz
    return dx * dx + dy * dy + dz * dz, s


@jit_inline
def closest_on_triangle(px, py, pz, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z):
    """The point of triangle ``a, a + e1, a + e2`` nearest to ``p``.

    Returns ``(d2, u, v)``: the squared distance and the barycentrics of the
    nearest point ``a + u e1 + v e2``.

    The regions of Ericson's test (§5.1.5), decided robustly: the foot of
    the perpendicular from ``p`` on the plane has barycentrics ``u = ((p-a)
    x e2) . n / |n|^2`` and ``v = (e1 x (p-a)) . n / |n|^2`` (``n = e1 x e2``);
    if they are inside, the foot is the answer. Otherwise the nearest point
    is on an edge whose outer side holds the foot, one with a negative
    barycentric, and the nearest of those edges (one or two) is measured.
    Ericson's form, six dot products and their 2x2 minors, decides the face
    region by a sum of minors that cancels to rounding noise on a thin or
    collinear triangle, and then divides by it; triple products against the
    normal do not cancel so. A zero-area triangle (``n = 0``) is measured as
    its three edges: a segment or a point.
    """
    apx, apy, apz = px - ax, py - ay, pz - az
    nx = e1y * e2z - e1z * e2y
    ny = e1z * e2x - e1x * e2z
    nz = e1x * e2y - e1y * e2x
    area2 = nx * nx + ny * ny + nz * nz
    if area2 > 0.0:
        # (ap x e2) . n and (e1 x ap) . n
        u_area = (apy * e2z - apz * e2y) * nx + (apz * e2x - apx * e2z) * ny + (apx * e2y - apy * e2x) * nz
        v_area = (e1y * apz - e1z * apy) * nx + (e1z * apx - e1x * apz) * ny + (e1x * apy - e1y * apx) * nz
        w_area = area2 - u_area - v_area
        if u_area >= 0.0 and v_area >= 0.0 and w_area >= 0.0:
            u = u_area / area2
            v = v_area / area2
            height = apx * nx + apy * ny + apz * nz
            return height * height / area2, u, v
        best = np.inf
        u = 0.0
        v = 0.0
        if v_area < 0.0:
            best, s = _segment(px, py, pz, ax, ay, az, e1x, e1y, e1z)
            u, v = s, 0.0
        if u_area < 0.0:
            d2, s = _segment(px, py, pz, ax, ay, az, e2x, e2y, e2z)
            if d2 < best:
                best, u, v = d2, 0.0, s
        if w_area < 0.0:
            d2, s = _segment(px, py, pz, ax + e1x, ay + e1y, az + e1z, e2x - e1x, e2y - e1y, e2z - e1z)
            if d2 < best:
                best, u, v = d2, 1.0 - s, s
        return best, u, v
    best, s = _segment(px, py, pz, ax, ay, az, e1x, e1y, e1z)
    u, v = s, 0.0
    d2, s = _segment(px, py, pz, ax, ay, az, e2x, e2y, e2z)
    if d2 < best:
        best, u, v = d2, 0.0, s
    d2, s = _segment(px, py, pz, ax + e1x, ay + e1y, az + e1z, e2x - e1x, e2y - e1y, e2z - e1z)
    if d2 < best:
        best, u, v = d2, 1.0 - s, s
    return best, u, v


@jit_inline
def _keep_nearer(record, d2, u, v, row, obj, tmax, qx, qy, qz):
    """Keep a candidate in ``record`` if it is nearer (the first one within
    the limit counts even at equal distance). Returns ``(limit, kept)``."""
    if d2 < tmax or (d2 <= tmax and record[NEAR_OBJECT] < 0.0):
        record[NEAR_D2] = d2
        record[NEAR_U] = u
        record[NEAR_V] = v
        record[NEAR_ROW] = row
        record[NEAR_OBJECT] = obj
        record[NEAR_POINT] = qx
        record[NEAR_POINT + 1] = qy
        record[NEAR_POINT + 2] = qz
        return d2, True
    return tmax, False


@jit_inline
def closest_point_leaf(tris, first, count, px, py, pz, wx, wy, wz, tmin, tmax, ray, out):
    """Keep the nearest point of a mesh leaf, in the mesh's frame.
    ``out = (record,)``, a :data:`NEAR_RECORD` row; ``tmax`` is the squared
    distance of the nearest so far."""
    record = out[0]
    for k in range(first, first + count):
        ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z = triangle_edges(tris, k)
        d2, u, v = closest_on_triangle(px, py, pz, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z)
        if d2 <= tmax:
            tmax, kept = _keep_nearer(record, d2, u, v, k, 0.0, tmax, ax + u * e1x + v * e2x,
                                      ay + u * e1y + v * e2y, az + u * e1z + v * e2z)
    return tmax, False


@jit_inline
def _mapped(consts, x, y, z, w):
    """``consts``' object-to-world map applied to ``(x, y, z)``, a point
    (``w = 1``) or a vector (``w = 0``)."""
    return (consts[7] * x + consts[8] * y + consts[9] * z + w * consts[10],
            consts[11] * x + consts[12] * y + consts[13] * z + w * consts[14],
            consts[15] * x + consts[16] * y + consts[17] * z + w * consts[18])


@jit_inline
def _world_triangle(consts, record, px, py, pz, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, row, obj, tmax):
    """Measure the object-space triangle ``a, e1, e2`` in the world; keep it
    if nearer. Returns ``(limit, kept)``."""
    wax, way, waz = _mapped(consts, ax, ay, az, 1.0)
    w1x, w1y, w1z = _mapped(consts, e1x, e1y, e1z, 0.0)
    w2x, w2y, w2z = _mapped(consts, e2x, e2y, e2z, 0.0)
    d2, u, v = closest_on_triangle(px, py, pz, wax, way, waz, w1x, w1y, w1z, w2x, w2y, w2z)
    if d2 <= tmax:
        return _keep_nearer(record, d2, u, v, row, obj, tmax, wax + u * w1x + v * w2x, way + u * w1y + v * w2y,
                            waz + u * w1z + v * w2z)
    return tmax, False


@jit_inline
def _scene_mesh_leaf(tris, first, count, consts, tmin, tmax, ray, out, obj):
    record = out[0]
    px, py, pz = consts[3], consts[4], consts[5]
    for k in range(first, first + count):
        ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z = triangle_edges(tris, k)
        tmax, kept = _world_triangle(consts, record, px, py, pz, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, k, obj,
                                     tmax)
    return tmax, False


@jit_inline
def _shape_normal(record, nx, ny, nz):
    inv_len = 1.0 / math.sqrt(nx * nx + ny * ny + nz * nz)
    record[NEAR_NORMAL] = nx * inv_len
    record[NEAR_NORMAL + 1] = ny * inv_len
    record[NEAR_NORMAL + 2] = nz * inv_len


@jit
def _shape_triangle(consts, record, px, py, pz, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, row, obj, tmax):
    """:func:`_world_triangle`, compiled once for every shape face."""
    return _world_triangle(consts, record, px, py, pz, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, row, obj, tmax)


@jit_inline
def _parallelogram(consts, record, px, py, pz, cx, cy, cz, ex, ey, ez, fx, fy, fz, nx, ny, nz, obj, tmax):
    """The parallelogram ``c +- e +- f`` (object space, outward normal ``n``)
    as two triangles, measured in the world; keeps the nearer point and, if
    it is on this face, the face's world normal."""
    ax, ay, az = cx - ex - fx, cy - ey - fy, cz - ez - fz
    tmax, kept_a = _shape_triangle(consts, record, px, py, pz, ax, ay, az, 2.0 * ex, 2.0 * ey, 2.0 * ez, 2.0 * fx,
                                   2.0 * fy, 2.0 * fz, -1, obj, tmax)
    bx, by, bz = cx + ex + fx, cy + ey + fy, cz + ez + fz
    tmax, kept_b = _shape_triangle(consts, record, px, py, pz, bx, by, bz, -2.0 * ex, -2.0 * ey, -2.0 * ez,
                                   -2.0 * fx, -2.0 * fy, -2.0 * fz, -1, obj, tmax)
    if kept_a or kept_b:
        _world_normal(consts, record, nx, ny, nz)
    return tmax


@jit_inline
def _sphere(consts, record, px, py, pz, radius, obj, tmax):
    """The sphere of ``radius`` about the object's origin, in the world.

    Under a map that keeps shapes (a rotation and a uniform scale, with the
    columns of the map orthogonal and of equal length) it is a sphere, and
    the nearest point is along the line from its centre. Otherwise it is an
    ellipsoid, measured by :func:`_ellipsoid`."""
    cx, cy, cz = consts[10], consts[14], consts[18]
    c0x, c0y, c0z = consts[7], consts[11], consts[15]
    c1x, c1y, c1z = consts[8], consts[12], consts[16]
    c2x, c2y, c2z = consts[9], consts[13], consts[17]
    g00 = c0x * c0x + c0y * c0y + c0z * c0z
    g11 = c1x * c1x + c1y * c1y + c1z * c1z
    g22 = c2x * c2x + c2y * c2y + c2z * c2z
    g01 = c0x * c1x + c0y * c1y + c0z * c1z
    g02 = c0x * c2x + c0y * c2y + c0z * c2z
    g12 = c1x * c2x + c1y * c2y + c1z * c2z
    tolerance = 1.0e-12 * g00
    if (abs(g11 - g00) <= tolerance and abs(g22 - g00) <= tolerance and abs(g01) <= tolerance
            and abs(g02) <= tolerance and abs(g12) <= tolerance):
        world_radius = radius * math.sqrt(g00)
        dx, dy, dz = px - cx, py - cy, pz - cz
        length = math.sqrt(dx * dx + dy * dy + dz * dz)
        if length == 0.0:
            dx, dy, dz, length = 0.0, 0.0, 1.0, 1.0
        gap = length - world_radius
        d2 = gap * gap
        if d2 <= tmax:
            scale = world_radius / length
            tmax, kept = _keep_nearer(record, d2, 0.0, 0.0, -1, obj, tmax, cx + dx * scale, cy + dy * scale,
                                      cz + dz * scale)
            if kept:
                _shape_normal(record, dx, dy, dz)
        return tmax
    return _ellipsoid(consts, record, px, py, pz, radius, obj, tmax)


@jit
def _symmetric_eigen(m):
    """Eigenvalues ``(3,)`` and eigenvectors (the columns of a ``(3, 3)``) of
    the symmetric ``m``, by cyclic Jacobi rotations (Golub and Van Loan,
    §8.5): each rotation zeroes one off-diagonal entry; a few sweeps bring
    all three below rounding."""
    a = m.copy()
    vectors = np.eye(3)
    for _ in range(50):
        off = a[0, 1] * a[0, 1] + a[0, 2] * a[0, 2] + a[1, 2] * a[1, 2]
        if off <= 1e-30 * (a[0, 0] * a[0, 0] + a[1, 1] * a[1, 1] + a[2, 2] * a[2, 2]):
            break
        for p, q in ((0, 1), (0, 2), (1, 2)):
            if a[p, q] == 0.0:
                continue
            theta = (a[q, q] - a[p, p]) / (2.0 * a[p, q])
            t = (1.0 if theta >= 0.0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
            c = 1.0 / math.sqrt(t * t + 1.0)
            sn = t * c
            for k in range(3):
                akp, akq = a[k, p], a[k, q]
                a[k, p] = c * akp - sn * akq
                a[k, q] = sn * akp + c * akq
            for k in range(3):
                apk, aqk = a[p, k], a[q, k]
                a[p, k] = c * apk - sn * aqk
                a[q, k] = sn * apk + c * aqk
            for k in range(3):
                vkp, vkq = vectors[k, p], vectors[k, q]
                vectors[k, p] = c * vkp - sn * vkq
                vectors[k, q] = sn * vkp + c * vkq
    return np.array([a[0, 0], a[1, 1], a[2, 2]]), vectors


@jit
def _ellipsoid(consts, record, px, py, pz, radius, obj, tmax):
    """The image of a sphere under a general linear map: an ellipsoid.

    Its axes are the eigenvectors of ``L L^T`` (``L`` the map's linear part)
    and its semi-axes ``radius`` times the square roots of the eigenvalues.
    In that frame the nearest point ``y`` to ``x`` satisfies
    ``y_i = e_i^2 x_i / (t + e_i^2)`` where ``t`` is the root of
    ``sum (e_i x_i / (t + e_i^2))^2 = 1``, found by bisection (Eberly,
    "Distance from a Point to an Ellipse, an Ellipsoid, or a Hyperellipsoid",
    2013), on the side of the surface the point is on. Out of line: it runs
    only for such shapes.
    """
    gram = np.empty((3, 3))
    for r in range(3):
        for c in range(3):
            gram[r, c] = (consts[7 + 4 * r] * consts[7 + 4 * c] + consts[8 + 4 * r] * consts[8 + 4 * c]
                          + consts[9 + 4 * r] * consts[9 + 4 * c])
    values, axes = _symmetric_eigen(gram)
    offset = np.array([px - consts[10], py - consts[14], pz - consts[18]])
    local = np.empty(3)
    semi = np.empty(3)
    for k in range(3):
        local[k] = axes[0, k] * offset[0] + axes[1, k] * offset[1] + axes[2, k] * offset[2]
        semi[k] = radius * math.sqrt(max(values[k], 0.0))
    x = np.abs(local)
    level = np.sum((x / semi) ** 2)
    nearest = np.zeros(3)
    if level == 0.0:
        # At the centre: the end of the shortest axis.
        k = np.argmin(semi)
        nearest[k] = semi[k]
    else:
        # g(t) = sum (e x / (t + e^2))^2 - 1 falls as t grows; outside
        # (level > 1) the root is positive, inside it lies in (-e_min^2, 0).
        low = -np.min(semi) ** 2 if level < 1.0 else 0.0
        high = np.max(semi) * math.sqrt(np.sum(x * x)) if level > 1.0 else 0.0
        for _ in range(2000):
            middle = 0.5 * (low + high)
            if middle == low or middle == high:
                break
            if np.sum((semi * x / (middle + semi * semi)) ** 2) > 1.0:
                low = middle
            else:
                high = middle
        t = 0.5 * (low + high)
        for k in range(3):
            denominator = t + semi[k] * semi[k]
            nearest[k] = semi[k] * semi[k] * x[k] / denominator if denominator > 0.0 else 0.0
        # A point inside on the plane of the shortest axis (x_k = 0) may have
        # no root above -e_k^2: its nearest point leaves that plane, by the
        # ellipsoid's equation.
        rest = 1.0 - np.sum((nearest / semi) ** 2)
        k = np.argmin(semi)
        if x[k] == 0.0 and rest > 0.0:
            nearest[k] = semi[k] * math.sqrt(rest)
    world = np.empty(3)
    normal = np.empty(3)
    for r in range(3):
        signed = np.where(local < 0.0, -nearest, nearest)
        world[r] = np.sum(axes[r, :] * signed)
        normal[r] = np.sum(axes[r, :] * signed / (semi * semi))
    gap_x = world[0] + consts[10] - px
    gap_y = world[1] + consts[14] - py
    gap_z = world[2] + consts[18] - pz
    d2 = gap_x * gap_x + gap_y * gap_y + gap_z * gap_z
    if d2 <= tmax:
        tmax, kept = _keep_nearer(record, d2, 0.0, 0.0, -1, obj, tmax, world[0] + consts[10], world[1] + consts[14],
                                  world[2] + consts[18])
        if kept:
            _shape_normal(record, normal[0], normal[1], normal[2])
    return tmax


@jit_inline
def _polygon(consts, record, shape_data, start, px, py, pz, obj, tmax):
    """A planar polygon (:mod:`bvh.shapes`' row): its plane if the foot of
    the perpendicular is inside the outline, else the nearest outline edge,
    both in the world."""
    qx, qy, qz = shape_data[start], shape_data[start + 1], shape_data[start + 2]
    nx, ny, nz = shape_data[start + 3], shape_data[start + 4], shape_data[start + 5]
    axis = int(shape_data[start + 6])
    m = int(shape_data[start + 7])
    xs = shape_data[start + 8:start + 8 + m]
    ys = shape_data[start + 8 + m:start + 8 + 2 * m]
    # The world plane: a point and a normal (by the inverse transpose).
    cx, cy, cz = _mapped(consts, qx, qy, qz, 1.0)
    wnx, wny, wnz = _normal_to_world(consts, nx, ny, nz)
    inv_len = 1.0 / math.sqrt(wnx * wnx + wny * wny + wnz * wnz)
    wnx, wny, wnz = wnx * inv_len, wny * inv_len, wnz * inv_len
    height = (px - cx) * wnx + (py - cy) * wny + (pz - cz) * wnz
    fx, fy, fz = px - height * wnx, py - height * wny, pz - height * wnz
    # The foot in object space: the object point plus the object image of
    # the world step from p to the foot (consts[0:3] is p in object space).
    lfx, lfy, lfz = _to_object(consts, fx - px, fy - py, fz - pz)
    lfx, lfy, lfz = lfx + consts[0], lfy + consts[1], lfz + consts[2]
    u = lfy if axis == 0 else lfx
    v = lfy if axis == 2 else lfz
    kept = False
    if crossings_inside(u, v, xs, ys):
        if height * height <= tmax:
            tmax, kept = _keep_nearer(record, height * height, 0.0, 0.0, -1, obj, tmax, fx, fy, fz)
    else:
        for k in range(m):
            j = k + 1 if k + 1 < m else 0
            ax, ay, az = _lift(axis, xs[k], ys[k], qx, qy, qz, nx, ny, nz)
            bx, by, bz = _lift(axis, xs[j], ys[j], qx, qy, qz, nx, ny, nz)
            wax, way, waz = _mapped(consts, ax, ay, az, 1.0)
            wex, wey, wez = _mapped(consts, bx - ax, by - ay, bz - az, 0.0)
            d2, s = _segment(px, py, pz, wax, way, waz, wex, wey, wez)
            if d2 <= tmax:
                tmax, kept_edge = _keep_nearer(record, d2, 0.0, 0.0, -1, obj, tmax, wax + s * wex, way + s * wey,
                                               waz + s * wez)
                kept = kept or kept_edge
    if kept:
        _shape_normal(record, wnx, wny, wnz)
    return tmax


@jit_inline
def _lift(axis, u, v, qx, qy, qz, nx, ny, nz):
    """The object-space point of the polygon's plane whose two kept
    coordinates are ``u, v`` (the dropped one from the plane equation)."""
    if axis == 0:
        return qx - (ny * (u - qy) + nz * (v - qz)) / nx, u, v
    if axis == 1:
        return u, qy - (nx * (u - qx) + nz * (v - qz)) / ny, v
    return u, v, qz - (nx * (u - qx) + ny * (v - qy)) / nz


@jit_inline
def _normal_to_world(consts, nx, ny, nz):
    """An object-space normal in the world, not unit: by the inverse
    transpose of the object-to-world map (its cofactor matrix over its
    determinant, whose sign is all that matters here), so that outward stays
    outward under mirroring, as :class:`bvh.hits.SceneHits` maps normals."""
    a, b, c = consts[7], consts[8], consts[9]
    d, e, f = consts[11], consts[12], consts[13]
    g, h, i = consts[15], consts[16], consts[17]
    c00, c01, c02 = e * i - f * h, f * g - d * i, d * h - e * g
    sign = 1.0 if a * c00 + b * c01 + c * c02 > 0.0 else -1.0
    return (sign * (c00 * nx + c01 * ny + c02 * nz),
            sign * ((c * h - b * i) * nx + (a * i - c * g) * ny + (b * g - a * h) * nz),
            sign * ((b * f - c * e) * nx + (c * d - a * f) * ny + (a * e - b * d) * nz))


@jit_inline
def _world_normal(consts, record, nx, ny, nz):
    wx, wy, wz = _normal_to_world(consts, nx, ny, nz)
    _shape_normal(record, wx, wy, wz)


@jit_inline
def _to_object(consts, x, y, z):
    """A world vector in object space: the inverse of ``consts``' linear map."""
    a, b, c = consts[7], consts[8], consts[9]
    d, e, f = consts[11], consts[12], consts[13]
    g, h, i = consts[15], consts[16], consts[17]
    c00, c01, c02 = e * i - f * h, c * h - b * i, b * f - c * e
    c10, c11, c12 = f * g - d * i, a * i - c * g, c * d - a * f
    c20, c21, c22 = d * h - e * g, b * g - a * h, a * e - b * d
    inv_det = 1.0 / (a * c00 + b * c10 + c * c20)
    return ((c00 * x + c01 * y + c02 * z) * inv_det, (c10 * x + c11 * y + c12 * z) * inv_det,
            (c20 * x + c21 * y + c22 * z) * inv_det)


@jit_inline
def _scene_shape_leaf(kind, shape_data, start, consts, tmin, tmax, ray, out, obj):
    return _shape_nearest(kind, shape_data, start, consts, out[0], obj, tmax), False


@jit
def _shape_nearest(kind, shape_data, start, consts, record, obj, tmax):
    """Keep the nearest point of a shape object if nearer; returns the limit.
    Out of line, and its triangles measured by one out-of-line function:
    inlined into the walk, the box's twelve triangles made the scene kernel
    take minutes to compile."""
    px, py, pz = consts[3], consts[4], consts[5]
    if kind == SPHERE:
        tmax = _sphere(consts, record, px, py, pz, shape_data[start], obj, tmax)
    elif kind == BOX:
        hx, hy, hz = shape_data[start], shape_data[start + 1], shape_data[start + 2]
        for sign in (-1.0, 1.0):
            tmax = _parallelogram(consts, record, px, py, pz, sign * hx, 0.0, 0.0, 0.0, hy, 0.0, 0.0, 0.0, hz,
                                  sign, 0.0, 0.0, obj, tmax)
            tmax = _parallelogram(consts, record, px, py, pz, 0.0, sign * hy, 0.0, 0.0, 0.0, hz, hx, 0.0, 0.0,
                                  0.0, sign, 0.0, obj, tmax)
            tmax = _parallelogram(consts, record, px, py, pz, 0.0, 0.0, sign * hz, hx, 0.0, 0.0, 0.0, hy, 0.0,
                                  0.0, 0.0, sign, obj, tmax)
    elif kind == QUAD:
        tmax = _parallelogram(consts, record, px, py, pz, 0.0, 0.0, 0.0, shape_data[start], 0.0, 0.0, 0.0,
                              shape_data[start + 1], 0.0, 0.0, 0.0, 1.0, obj, tmax)
    else:
        tmax = _polygon(consts, record, shape_data, start, px, py, pz, obj, tmax)
    return tmax


_mesh_walk = make_traversal(closest_point_leaf, point_setup, visit_point)
_scene_walk = make_instance_walk(_scene_mesh_leaf, _scene_shape_leaf, point_setup, object_point_setup, visit_point)


@jit_inline
def _start(record):
    record[NEAR_ROW] = -1.0
    record[NEAR_OBJECT] = -1.0
    record[NEAR_D2] = np.inf
    for c in range(3):
        record[NEAR_NORMAL + c] = np.nan


@jit_inline
def _seeded_limit(limit, record, seeded, px, py, pz):
    """The search limit for point ``p``, given the previous point's answer
    still in ``record`` (``seeded``: it found a surface point ``s``).

    ``s`` lies on the surface, so ``|p - s|`` bounds ``p``'s distance to
    the surface from above; searching only that far prunes every box beyond
    it from the start. A neighbour's answer is a tight bound when the batch
    runs in a coherent order (``bvh.queries.point_order``). The bound is padded for
    the rounding of ``s`` and of the leaf's distances; if the walk finds
    nothing within it all the same, the point is searched again to
    ``limit``."""
    if seeded:
        dx = px - record[NEAR_POINT]
        dy = py - record[NEAR_POINT + 1]
        dz = pz - record[NEAR_POINT + 2]
        bound = (dx * dx + dy * dy + dz * dz) * SEED_PAD
        if bound < limit:
            return bound
    return limit


@jit
def _mesh_block(nodes, links, tris, offset, points, limit, order, start, end, rows, d2, u, v, nearest):
    nodes, links, tris, offset, points, order = borrowed((nodes, links, tris, offset, points, order))
    stack_first, stack_count, stack_t = new_stack()
    record = _near_record()
    out = (record,)
    seeded = False
    for k in range(start, end):
        i = order[k]
        px = points[i, 0] - offset[0]
        py = points[i, 1] - offset[1]
        pz = points[i, 2] - offset[2]
        bound = _seeded_limit(limit, record, seeded, px, py, pz)
        # At most twice: to the bound, then (nothing found) to the limit. One
        # call site, so the walk is inlined and compiled once.
        while True:
            _start(record)
            _mesh_walk(nodes, links, tris, 0, px, py, pz, 0.0, 0.0, 0.0, 0.0, bound, i, out, stack_first,
                       stack_count, stack_t)
            if record[NEAR_OBJECT] >= 0.0 or bound >= limit:
                break
            bound = limit
        seeded = record[NEAR_OBJECT] >= 0.0
        rows[i] = np.int32(record[NEAR_ROW])
        d2[i] = record[NEAR_D2]
        u[i] = record[NEAR_U]
        v[i] = record[NEAR_V]
        for c in range(3):
            nearest[i, c] = record[NEAR_POINT + c] + offset[c]


@jit
def mesh_closest_points_serial(nodes, links, tris, offset, points, limit, order, rows, d2, u, v, nearest):
    """:func:`mesh_closest_points` on the calling thread, for a few points."""
    # A typed 0: a literal would give the block a second signature to compile.
    _mesh_block(nodes, links, tris, offset, points, limit, order, np.int64(0), points.shape[0], rows, d2, u, v,
                nearest)


@jit_parallel
def mesh_closest_points(nodes, links, tris, offset, points, limit, order, rows, d2, u, v, nearest):
    """Nearest surface point of each of N points on one mesh.

    ``nodes``, ``links``, ``tris`` are the flat arrays of the mesh's tree,
    ``offset`` its centring offset; ``limit`` the squared search radius
    (finite); ``order`` the order in which to answer the points
    (``bvh.point_order.coherent_order``), each answer bounding the next
    one's search. Writes per point (in the points' own order) the packed
    triangle row (-1: nothing within the limit), squared distance,
    barycentrics and the nearest point.
    """
    n = points.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _mesh_block(nodes, links, tris, offset, points, limit, order, b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK),
                    rows, d2, u, v, nearest)


@jit
def _scene_block(scene, points, limit, order, start, end, objects, rows, d2, u, v, nearest, normal):
    scene, points, order = borrowed((scene, points, order))
    stack_first, stack_count, stack_t = new_stack()
    record = _near_record()
    out = (record,)
    seeded = False
    for k in range(start, end):
        i = order[k]
        bound = _seeded_limit(limit, record, seeded, points[i, 0], points[i, 1], points[i, 2])
        while True:  # as in _mesh_block: to the bound, then to the limit
            _start(record)
            _scene_walk(scene.top_nodes, scene.top_links, scene.top_order, scene.enabled, scene.kind, scene.mesh_of,
                        scene.inverse, scene.mesh_root, scene.nodes, scene.links, scene.tris, scene.shape_start,
                        scene.shape_data, points, points, 0.0, bound, i, out, stack_first, stack_count, stack_t)
            if record[NEAR_OBJECT] >= 0.0 or bound >= limit:
                break
            bound = limit
        seeded = record[NEAR_OBJECT] >= 0.0
        objects[i] = np.int64(record[NEAR_OBJECT])
        rows[i] = np.int32(record[NEAR_ROW])
        d2[i] = record[NEAR_D2]
        u[i] = record[NEAR_U]
        v[i] = record[NEAR_V]
        for c in range(3):
            nearest[i, c] = record[NEAR_POINT + c]
            normal[i, c] = record[NEAR_NORMAL + c]


@jit
def scene_closest_points_serial(scene, points, limit, order, objects, rows, d2, u, v, nearest, normal):
    """:func:`scene_closest_points` on the calling thread, for a few points."""
    _scene_block(scene, points, limit, order, np.int64(0), points.shape[0], objects, rows, d2, u, v, nearest, normal)


@jit_parallel
def scene_closest_points(scene, points, limit, order, objects, rows, d2, u, v, nearest, normal):
    """Nearest surface point of each of N world points in a scene
    (``scene`` a ``bvh.scene_kernels.SceneArrays``), answered in ``order``
    as :func:`mesh_closest_points` does. Writes per point the object (-1:
    nothing within ``limit``, a squared world distance), the packed triangle
    row (-1 for a shape), squared distance, barycentrics, the world point
    and, for a shape, its world normal (NaN for meshes)."""
    n = points.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _scene_block(scene, points, limit, order, b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK), objects, rows, d2, u, v,
                     nearest, normal)
