"""Ray/triangle tests at the leaves (Möller and Trumbore, "Fast, Minimum
Storage Ray/Triangle Intersection", 1997), one per kind of query.

Triangles are stored as float32 vertices but intersected in float64: the
edges ``v1 - v0`` and ``v2 - v0`` of float32 values are exact in float64, so two
faces sharing an edge see exactly the same edge, and the remaining rounding is
some 1e-16 relative. A barycentric slack of ``EDGE_TOLERANCE`` covers that
rounding, so that a ray through a shared edge or vertex of a closed mesh is
accepted by at least one of the faces around it and never slips through; it
is far below float32 resolution, so it moves no hit visibly. There is no
absolute determinant epsilon (a scanned mesh 0.15 units across has
determinants near 1e-6): only an exactly zero determinant (a ray parallel to
the face) is rejected.

Every test has the signature the traversal expects:
``(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out) -> (tmax, stop)``.
"""

import numpy as np
from numba import literal_unroll

from .._jit import jit, jit_inline
from ..walk.borrow import frame_array

EDGE_TOLERANCE = 1.0e-9
"""Barycentric slack: ``u, v >= -EDGE_TOLERANCE`` and ``u + v <= 1 + EDGE_TOLERANCE``."""

NO_HIT = -1.0


@jit_inline
def triangle_edges(tris, k):
    """``v0`` and the edges ``v1 - v0``, ``v2 - v0`` of row ``k`` of the flat
    ``(T * 9,)`` float32 triangle array, in float64: exact, so two faces that
    share an edge see exactly the same edge."""
    base = k * 9
    ax = np.float64(tris[np.uint64(base)])
    ay = np.float64(tris[np.uint64(base + 1)])
    az = np.float64(tris[np.uint64(base + 2)])
    return (ax, ay, az,
            np.float64(tris[np.uint64(base + 3)]) - ax, np.float64(tris[np.uint64(base + 4)]) - ay,
            np.float64(tris[np.uint64(base + 5)]) - az, np.float64(tris[np.uint64(base + 6)]) - ax,
            np.float64(tris[np.uint64(base + 7)]) - ay, np.float64(tris[np.uint64(base + 8)]) - az)


@jit_inline
def solve_barycentric(dx, dy, dz, e1x, e1y, e1z, e2x, e2y, e2z, sx, sy, sz):
    """Möller and Trumbore's solve of ``s + t d = u e1 + v e2``: the ray
    ``d`` from ``s`` (its origin relative to the triangle's first vertex)
    against the triangle's edges ``e1``, ``e2``, by Cramer's rule with
    ``p = d x e2`` and ``q = s x e1``. Returns ``(det, u, v, t)``; a zero
    ``det`` (the ray parallel to the plane) gives infinite or NaN ``u, v,
    t``, which the caller rejects by ``det``."""
    px = dy * e2z - dz * e2y
    py = dz * e2x - dx * e2z
    pz = dx * e2y - dy * e2x
    det = e1x * px + e1y * py + e1z * pz
    inv_det = 1.0 / det
    u = (sx * px + sy * py + sz * pz) * inv_det
    qx = sy * e1z - sz * e1y
    qy = sz * e1x - sx * e1z
    qz = sx * e1y - sy * e1x
    v = (dx * qx + dy * qy + dz * qz) * inv_det
    t = (e2x * qx + e2y * qy + e2z * qz) * inv_det
    return det, u, v, t


@jit_inline
def moller_trumbore(tris, k, ox, oy, oz, dx, dy, dz, tmin, tmax, cull_backfaces):
    """Hit of the ray with triangle row ``k`` in ``[tmin, tmax]``.

    Returns ``(t, u, v, det)`` with ``t = NO_HIT`` when there is none. ``det > 0``
    means the ray meets the front face (``direction . normal < 0``).

    Every quantity is computed and the tests are combined without branches:
    whether a ray passes each edge of the faces in a leaf is a coin flip the
    branch predictor loses, while the faces' arithmetic is independent and
    overlaps. A zero determinant gives an infinite ``inv_det`` and NaN or
    infinite ``u, v, t``; ``facing`` rejects it whatever they are.
    """
    ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z = triangle_edges(tris, k)
    det, u, v, t = solve_barycentric(dx, dy, dz, e1x, e1y, e1z, e2x, e2y, e2z, ox - ax, oy - ay, oz - az)
    facing = det > 0.0 if cull_backfaces else det != 0.0
    inside = ((u >= -EDGE_TOLERANCE) & (u <= 1.0 + EDGE_TOLERANCE) & (v >= -EDGE_TOLERANCE)
              & (u + v <= 1.0 + EDGE_TOLERANCE))
    if facing & inside & (t >= tmin) & (t <= tmax):
        return t, u, v, det
    return NO_HIT, 0.0, 0.0, det


#: Fields of the hit record a closest-hit walk keeps for its ray (float64;
#: the row is -1 until a hit); a scene's walk adds the object and a shape's
#: normal. One small array rather than an array per field: numba counts a
#: reference to every array a leaf test is handed, on every leaf.
HIT_T, HIT_U, HIT_V, HIT_ROW, HIT_OBJECT, HIT_NORMAL = 0, 1, 2, 3, 4, 5
HIT_RECORD = 8

hit_record = frame_array(HIT_RECORD, np.float64)
"""A hit record in the calling kernel's frame (:func:`bvh.walk.borrow.frame_array`)."""


@jit_inline
def write_miss(i, t, u, v, point, normal):
    """Row ``i`` of a query's surface outputs when it found nothing: ``t``
    inf, the barycentrics ``u``, ``v`` and the ``(N, 3)`` ``point`` and
    ``normal`` NaN (the sentinels of closest hits and sphere casts)."""
    t[i] = np.inf
    u[i] = np.nan
    v[i] = np.nan
    for c in range(3):
        point[i, c] = np.nan
        normal[i, c] = np.nan


def make_triangle_leaves(passes):
    """The four leaf tests (closest, any, count and collect hits), keeping
    only the candidates for which ``passes(test, k, u, v, obj)`` holds: a
    filter bound at compile time, as the leaf test is bound into the walk
    (:func:`bvh.queries.alpha.alpha_passes` lets a ray through transparent
    texels; :func:`no_filter` keeps every hit). A rejected candidate is as
    if the ray had missed the face, so the walk goes on behind it.

    Each test is ``(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax,
    ray, out, test, obj) -> (tmax, stop)``: ``out`` as for the plain tests
    below, ``test`` the filter's arguments, ``obj`` the object the walk is
    in (0 for a bare mesh)."""

    @jit_inline
    def closest(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out, test, obj):
        hit, cull = out
        for k in range(first, first + count):
            t, u, v, det = moller_trumbore(tris, k, ox, oy, oz, dx, dy, dz, tmin, tmax, cull)
            if t != NO_HIT and (t < tmax or hit[HIT_ROW] < 0.0) and passes(test, k, u, v, obj):
                tmax = t
                hit[HIT_T] = t
                hit[HIT_U] = u
                hit[HIT_V] = v
                hit[HIT_ROW] = k
        return tmax, False

    @jit_inline
    def any_hit(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out, test, obj):
        occluded = out[0]
        for k in range(first, first + count):
            t, u, v, det = moller_trumbore(tris, k, ox, oy, oz, dx, dy, dz, tmin, tmax, False)
            if t != NO_HIT and passes(test, k, u, v, obj):
                occluded[ray] = True
                return tmax, True
        return tmax, False

    @jit_inline
    def count_hits(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out, test, obj):
        counts = out[0]
        for k in range(first, first + count):
            t, u, v, det = moller_trumbore(tris, k, ox, oy, oz, dx, dy, dz, tmin, tmax, False)
            if t != NO_HIT and passes(test, k, u, v, obj):
                counts[ray] += 1
        return tmax, False

    @jit_inline
    def collect_hits(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out, test, obj):
        cursor, rows, ts, us, vs = out
        for k in range(first, first + count):
            t, u, v, det = moller_trumbore(tris, k, ox, oy, oz, dx, dy, dz, tmin, tmax, False)
            if t != NO_HIT and passes(test, k, u, v, obj):
                slot = cursor[ray]
                rows[slot] = k
                ts[slot] = t
                us[slot] = u
                vs[slot] = v
                cursor[ray] = slot + 1
        return tmax, False

    return closest, any_hit, count_hits, collect_hits


@jit_inline
def no_filter(test, k, u, v, obj):
    """The filter of the plain tests: every hit stands."""
    return True


_closest, _any, _count, _collect = make_triangle_leaves(no_filter)


@jit_inline
def closest_hit_leaf(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out):
    """Keep the nearest hit. ``out = (hit, cull_backfaces)``: the ray's hit
    record (``HIT_T`` .. ``HIT_ROW``) and a flag."""
    return _closest(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out, None, 0)


@jit_inline
def any_hit_leaf(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out):
    """Stop at the first hit. ``out = (occluded,)``: a per-ray bool array."""
    return _any(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out, None, 0)


@jit_inline
def count_hits_leaf(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out):
    """Count every hit in the window. ``out = (counts,)``: per-ray int64."""
    return _count(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out, None, 0)


@jit_inline
def collect_hits_leaf(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out):
    """Append every hit in the window. ``out = (cursor, rows, ts, us, vs)``:
    ``cursor[ray]`` is the next free slot of this ray's segment."""
    return _collect(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out, None, 0)


@jit
def sort_hits(lo, hi, ts, columns):
    """Sort one ray's segment ``lo:hi`` of collected hits by ``ts``,
    nearest first, moving the same rows of every array of the tuple
    ``columns`` (rows, barycentrics, objects) along. An insertion sort,
    stable: a ray's segment is short. Out of line: numba unrolls the loop
    over ``columns`` only in a function of its own."""
    for j in range(lo + 1, hi):
        tj = ts[j]
        m = j - 1
        while m >= lo and ts[m] > tj:
            ts[m + 1] = ts[m]
            m -= 1
        ts[m + 1] = tj
        for column in literal_unroll(columns):
            kept = column[j]
            for k in range(j, m + 1, -1):
                column[k] = column[k - 1]
            column[m + 1] = kept


@jit_inline
def share_vertex(tris, j, k):
    """Whether rows ``j`` and ``k`` of the flat ``(T * 9,)`` triangle array
    have a vertex in common."""
    for a in range(3):
        for b in range(3):
            if (tris[j * 9 + 3 * a] == tris[k * 9 + 3 * b] and tris[j * 9 + 3 * a + 1] == tris[k * 9 + 3 * b + 1]
                    and tris[j * 9 + 3 * a + 2] == tris[k * 9 + 3 * b + 2]):
                return True
    return False
