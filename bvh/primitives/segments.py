"""Segment/triangle test by a precomputed world-to-triangle matrix.

The method of the GPWiki "Ray Triangle Collision" page
(``shared/seeds/001``): with ``e1 = b - a``, ``e2 = c - a`` and
``n = e1 x e2`` as the columns of a basis at ``a``, the inverse of that
affine map takes a world point to ``(u, v, w)``: its barycentrics along the
two edges and its height over the triangle's plane in units of ``n``. A
segment ``p -> q`` crosses the plane when the heights of its ends differ in
sign; the crossing's ``(u, v)`` interpolates those of the ends, and the
triangle contains it when ``u, v >= 0`` and ``u + v <= 1``.

The matrix costs one 3x3 inverse per triangle and can be cached with the
mesh (``triangle_matrix``); the per-segment work is then 3 rows of a matrix
product per end, one division and the bounds.
"""

import math

import numpy as np

from .._jit import FAR, jit
from . import _validate as check
from .rays import TriangleHits, triangle_frame, write_hit


def triangle_matrix(a, b, c) -> np.ndarray:
    """The 4x4 world-to-triangle matrix ``R`` of the GPWiki method.

    Parameters
    ----------
    a, b, c : (3,) array_like
        Vertices; collinear or coincident vertices are refused.

    Returns
    -------
    (4, 4) float64
        ``R @ [x, y, z, 1] = [u, v, w, 1]`` where ``x = a + u (b-a) + v (c-a)
        + w n`` and ``n = (b-a) x (c-a)``. The upper 3x3 block is
        ``adj(M) / det(M)`` for ``M = [e1 e2 n]`` (columns), whose third row
        is ``n / |n|^2`` and whose determinant is ``|n|^2``; the last column
        is ``-R[:3, :3] @ a``; the last row is ``[0, 0, 0, 1]``.
    """
    a, e1, e2, _, n_len2 = triangle_frame(a, b, c)
    n = np.cross(e1, e2)
    inv_det = 1.0 / n_len2
    r = np.zeros((4, 4), np.float64)
    # Rows of adj(M): e2 x n, n x e1, e1 x e2 (= n), each over det(M) = |n|^2.
    r[0, :3] = np.cross(e2, n) * inv_det
    r[1, :3] = np.cross(n, e1) * inv_det
    r[2, :3] = n * inv_det
    r[:3, 3] = -(r[:3, :3] @ a)
    r[3, 3] = 1.0
    return r


@jit
def _row(r, k, x, y, z):
    return r[k, 0] * x + r[k, 1] * y + r[k, 2] * z + r[k, 3]


@jit
def _segment_one(r, px, py, pz, qx, qy, qz):
    """``(t, u, v)`` of segment ``p -> q`` against the triangle of matrix ``r``, or ``(FAR, 0, 0)``."""
    # Heights first: most segments miss the plane and need nothing else.
    jw = _row(r, 2, px, py, pz)
    kw = _row(r, 2, qx, qy, qz)
    # Signs, not the product jw * kw: the GPWiki code's ``J*K >= 0`` underflows
    # to 0 for tiny heights of opposite sign and so rejects real crossings,
    # and it also rejects an end lying on the plane, which its text accepts.
    if (jw > 0.0 and kw > 0.0) or (jw < 0.0 and kw < 0.0):
        return FAR, 0.0, 0.0
    if jw == kw:
        # Both ends on the plane (the segment lies in it): no single crossing.
        return FAR, 0.0, 0.0
    t = jw / (jw - kw)
    ju = _row(r, 0, px, py, pz)
    ku = _row(r, 0, qx, qy, qz)
    u = ju + t * (ku - ju)
    if u < 0.0 or u > 1.0:
        return FAR, 0.0, 0.0
    jv = _row(r, 1, px, py, pz)
    kv = _row(r, 1, qx, qy, qz)
    v = jv + t * (kv - jv)
    if v < 0.0 or u + v > 1.0:
        return FAR, 0.0, 0.0
    return t, u, v


@jit
def _segment_kernel(p, q, r, unit_normal, t_out, u_out, v_out, n_out):
    for i in range(p.shape[0]):
        t, u, v = _segment_one(r, p[i, 0], p[i, 1], p[i, 2], q[i, 0], q[i, 1], q[i, 2])
        write_hit(i, t, unit_normal, t_out, n_out)
        u_out[i] = u
        v_out[i] = v


def _segments(p, q):
    p, _ = check.vectors("p", p)
    q, _ = check.vectors("q", q)
    if p.shape[0] != q.shape[0]:
        if p.shape[0] == 1:
            p = np.ascontiguousarray(np.broadcast_to(p, q.shape))
        elif q.shape[0] == 1:
            q = np.ascontiguousarray(np.broadcast_to(q, p.shape))
        else:
            raise ValueError(f"p and q hold different numbers of segments: {p.shape[0]} and {q.shape[0]}")
    same = (p == q).all(axis=1)
    if same.any():
        row = int(np.flatnonzero(same)[0])
        raise ValueError(f"segments must have non-zero length: row {row} has p == q")
    return p, q


def segment_triangle_matrix(p, q, matrix) -> TriangleHits:
    """``segment_triangle`` with a cached ``triangle_matrix``.

    Parameters
    ----------
    p, q : (N, 3) or (3,) array_like
        Segment ends.
    matrix : (4, 4) array_like
        From ``triangle_matrix(a, b, c)`` (last row ``[0, 0, 0, 1]``).

    Returns
    -------
    TriangleHits
        As ``segment_triangle``.
    """
    p, q = _segments(p, q)
    r = check.real_array("matrix", matrix)
    if r.shape != (4, 4):
        raise ValueError(f"matrix must have shape (4, 4), got {r.shape}")
    if not np.isfinite(r).all():
        raise ValueError("matrix contains NaN or infinite values")
    if not np.array_equal(r[3], [0.0, 0.0, 0.0, 1.0]):
        raise ValueError(f"matrix must be affine (last row [0, 0, 0, 1]), got last row {r[3].tolist()}")
    w_row = r[2, :3]
    length = math.sqrt(float(w_row @ w_row))
    if not length > 0.0:
        raise ValueError("matrix has a zero normal row: it is not a triangle matrix")
    unit_normal = w_row / length
    n = p.shape[0]
    t = np.empty(n)
    u = np.empty(n)
    v = np.empty(n)
    normal = np.empty((n, 3))
    _segment_kernel(p, q, r, unit_normal, t, u, v, normal)
    return TriangleHits(check.far_to_inf(t), u, v, normal)


def segment_triangle(p, q, a, b, c) -> TriangleHits:
    """Crossing of each segment ``p -> q`` with a triangle, by the matrix method.

    Parameters
    ----------
    p, q : (N, 3) or (3,) array_like
        Segment ends, ``point = p + t (q - p)``; either may be a single
        ``(3,)`` point, repeated to match the other. ``p == q`` is refused.
    a, b, c : (3,) array_like
        Vertices; collinear or coincident vertices are refused.

    Returns
    -------
    TriangleHits
        ``t (N,)`` in ``[0, 1]``, inf on a miss. ``u, v (N,)``: barycentrics,
        ``point = (1-u-v)*a + u*b + v*c`` (the same ``u, v`` as
        ``ray_triangle``), 0 on a miss. ``normal (N, 3)``: unit
        ``(b-a) x (c-a)``, zeros on a miss.

    Notes
    -----
    Both faces count. An end lying on the plane counts (``t`` is 0 or 1); a
    segment lying in the plane misses. Edges are inside, as in
    ``ray_triangle``.
    """
    return segment_triangle_matrix(p, q, triangle_matrix(a, b, c))
