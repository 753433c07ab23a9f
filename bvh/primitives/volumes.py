"""Bounding volumes of point sets (RTR4 §22.3): AABB, spheres, OBB.

Every volume contains every point, also under rounding: a sphere's radius
and an OBB's half-extents are padded by a few units in the last place of the
cloud's size, so that ``|p - center| <= radius`` (or the box test) holds for
every input point however the caller evaluates it. AABBs are exact min/max
and need no padding.
"""

import math

import numpy as np

from .._jit import jit
from . import _validate as check

#: Relative padding of radii and half-extents (a few float64 ulps).
PAD = 8.0 * np.finfo(np.float64).eps


def _points(points) -> np.ndarray:
    points, _ = check.vectors("points", points, allow_single=False)
    if points.shape[0] == 0:
        raise ValueError("points is empty: a bounding volume needs at least one point")
    return points


def aabb_of(points) -> tuple[np.ndarray, np.ndarray]:
    """Axis-aligned bounding box (RTR4 §22.3.1).

    Parameters
    ----------
    points : (N, 3) array_like
        ``N >= 1``.

    Returns
    -------
    bmin, bmax : (3,) float64
        Exact per-axis minimum and maximum.
    """
    points = _points(points)
    return points.min(axis=0), points.max(axis=0)


# ------------------------------------------------------------------- spheres


@jit
def _ritter_kernel(points):
    """Ritter's near-optimal sphere (RTR4 §22.3.2): ``(cx, cy, cz, radius)``."""
    n = points.shape[0]
    # The points at the minimum and maximum of each axis; of these three
    # pairs the one farthest apart seeds the sphere.
    best = -1.0
    i_best = 0
    j_best = 0
    for k in range(3):
        lo = 0
        hi = 0
        for i in range(1, n):
            if points[i, k] < points[lo, k]:
                lo = i
            if points[i, k] > points[hi, k]:
                hi = i
        dx = points[hi, 0] - points[lo, 0]
        dy = points[hi, 1] - points[lo, 1]
        dz = points[hi, 2] - points[lo, 2]
        d2 = dx * dx + dy * dy + dz * dz
        if d2 > best:
            best = d2
            i_best = lo
            j_best = hi
    cx = 0.5 * (points[i_best, 0] + points[j_best, 0])
    cy = 0.5 * (points[i_best, 1] + points[j_best, 1])
    cz = 0.5 * (points[i_best, 2] + points[j_best, 2])
    radius = 0.5 * math.sqrt(best)
    # Second pass: a point outside at distance dist moves the centre toward
    # it by (dist - r) / 2 and sets r = (dist + r) / 2, enclosing the old
    # sphere and the point.
    for i in range(n):
        dx = points[i, 0] - cx
        dy = points[i, 1] - cy
        dz = points[i, 2] - cz
        d2 = dx * dx + dy * dy + dz * dz
        if d2 > radius * radius:
            dist = math.sqrt(d2)
            new_radius = 0.5 * (dist + radius)
            shift = (new_radius - radius) / dist
            cx += dx * shift
            cy += dy * shift
            cz += dz * shift
            radius = new_radius
    return cx, cy, cz, radius


@jit
def _ball2(ax, ay, az, bx, by, bz):
    cx = 0.5 * (ax + bx)
    cy = 0.5 * (ay + by)
    cz = 0.5 * (az + bz)
    dx = ax - cx
    dy = ay - cy
    dz = az - cz
    return cx, cy, cz, dx * dx + dy * dy + dz * dz


@jit
def _dist2(x, y, z, cx, cy, cz):
    dx = x - cx
    dy = y - cy
    dz = z - cz
    return dx * dx + dy * dy + dz * dz


@jit
def _ball3(ax, ay, az, bx, by, bz, qx, qy, qz):
    """Smallest sphere with a, b, q on its surface: centred on their circumcircle.

    Collinear points (no circumcircle) fall back to the widest pair's sphere.
    """
    ux = ax - qx
    uy = ay - qy
    uz = az - qz
    vx = bx - qx
    vy = by - qy
    vz = bz - qz
    wx = uy * vz - uz * vy
    wy = uz * vx - ux * vz
    wz = ux * vy - uy * vx
    w2 = wx * wx + wy * wy + wz * wz
    u2 = ux * ux + uy * uy + uz * uz
    v2 = vx * vx + vy * vy + vz * vz
    if w2 <= 1e-24 * u2 * v2:
        best = _ball2(ax, ay, az, bx, by, bz)
        other = _ball2(ax, ay, az, qx, qy, qz)
        if other[3] > best[3]:
            best = other
        other = _ball2(bx, by, bz, qx, qy, qz)
        if other[3] > best[3]:
            best = other
        return best
    # Circumcentre relative to q: ((|u|^2 v - |v|^2 u) x (u x v)) / (2 |u x v|^2).
    sx = u2 * vx - v2 * ux
    sy = u2 * vy - v2 * uy
    sz = u2 * vz - v2 * uz
    inv = 0.5 / w2
    ox = (sy * wz - sz * wy) * inv
    oy = (sz * wx - sx * wz) * inv
    oz = (sx * wy - sy * wx) * inv
    return qx + ox, qy + oy, qz + oz, ox * ox + oy * oy + oz * oz


@jit
def _contains(ball, x, y, z, slack):
    return _dist2(x, y, z, ball[0], ball[1], ball[2]) <= ball[3] * (1.0 + slack) + slack



@jit
def _smaller_enclosing(cand, best, p, idx, slack):
    """``cand`` if it is smaller than ``best`` (radius -1: none yet) and holds
    the four points ``p[idx]``, else ``best``."""
    if best[3] >= 0.0 and cand[3] >= best[3]:
        return best
    for e in range(4):
        if not _contains(cand, p[idx[e], 0], p[idx[e], 1], p[idx[e], 2], slack):
            return best
    return cand

@jit
def _ball4(p, i, j, k, m, slack):
    """Sphere through four points; for (near-)coplanar points, the smallest
    sphere of a pair or triple of them that contains all four."""
    ax = p[i, 0]
    ay = p[i, 1]
    az = p[i, 2]
    ux = p[j, 0] - ax
    uy = p[j, 1] - ay
    uz = p[j, 2] - az
    vx = p[k, 0] - ax
    vy = p[k, 1] - ay
    vz = p[k, 2] - az
    wx = p[m, 0] - ax
    wy = p[m, 1] - ay
    wz = p[m, 2] - az
    # Centre offset x solves 2 u.x = |u|^2, 2 v.x = |v|^2, 2 w.x = |w|^2;
    # by Cramer: x = (|u|^2 v x w + |v|^2 w x u + |w|^2 u x v) / (2 u.(v x w)).
    vwx = vy * wz - vz * wy
    vwy = vz * wx - vx * wz
    vwz = vx * wy - vy * wx
    wux = wy * uz - wz * uy
    wuy = wz * ux - wx * uz
    wuz = wx * uy - wy * ux
    uvx = uy * vz - uz * vy
    uvy = uz * vx - ux * vz
    uvz = ux * vy - uy * vx
    det = ux * vwx + uy * vwy + uz * vwz
    u2 = ux * ux + uy * uy + uz * uz
    v2 = vx * vx + vy * vy + vz * vz
    w2 = wx * wx + wy * wy + wz * wz
    scale = math.sqrt(u2 * v2 * w2)
    if abs(det) > 1e-12 * scale:
        inv = 0.5 / det
        ox = (u2 * vwx + v2 * wux + w2 * uvx) * inv
        oy = (u2 * vwy + v2 * wuy + w2 * uvy) * inv
        oz = (u2 * vwz + v2 * wuz + w2 * uvz) * inv
        return ax + ox, ay + oy, az + oz, ox * ox + oy * oy + oz * oz
    idx = (i, j, k, m)
    best = (0.0, 0.0, 0.0, -1.0)
    for a in range(4):
        for b in range(a + 1, 4):
            pa = idx[a]
            pb = idx[b]
            cand = _ball2(p[pa, 0], p[pa, 1], p[pa, 2], p[pb, 0], p[pb, 1], p[pb, 2])
            best = _smaller_enclosing(cand, best, p, idx, slack)
            for c in range(b + 1, 4):
                pc = idx[c]
                cand = _ball3(p[pa, 0], p[pa, 1], p[pa, 2], p[pb, 0], p[pb, 1], p[pb, 2],
                              p[pc, 0], p[pc, 1], p[pc, 2])
                best = _smaller_enclosing(cand, best, p, idx, slack)
    return best


@jit
def _welzl_kernel(p, slack):
    """Minimal enclosing sphere, Welzl (1991), in its iterative form.

    The recursion "minimal sphere of the first i points with the support set
    R on its surface" unrolled into four nested loops, one per size of R
    (RTR4 §22.3.2): a point outside the current sphere must lie on the
    surface of the minimal sphere of the points so far, so it joins R and the
    earlier points are run through again. Expected linear time on points in
    random order. ``slack`` is a relative tolerance on squared distances that
    keeps rounding from re-triggering the inner loops on points that lie on
    the sphere. Returns ``(cx, cy, cz, r^2)``.
    """
    n = p.shape[0]
    ball = (p[0, 0], p[0, 1], p[0, 2], 0.0)
    for i in range(1, n):
        if _contains(ball, p[i, 0], p[i, 1], p[i, 2], slack):
            continue
        ball = (p[i, 0], p[i, 1], p[i, 2], 0.0)
        for j in range(i):
            if _contains(ball, p[j, 0], p[j, 1], p[j, 2], slack):
                continue
            ball = _ball2(p[i, 0], p[i, 1], p[i, 2], p[j, 0], p[j, 1], p[j, 2])
            for k in range(j):
                if _contains(ball, p[k, 0], p[k, 1], p[k, 2], slack):
                    continue
                ball = _ball3(p[i, 0], p[i, 1], p[i, 2], p[j, 0], p[j, 1], p[j, 2],
                              p[k, 0], p[k, 1], p[k, 2])
                for m in range(k):
                    if _contains(ball, p[m, 0], p[m, 1], p[m, 2], slack):
                        continue
                    ball = _ball4(p, i, j, k, m, slack)
    return ball


def _enclose(points: np.ndarray, center: np.ndarray) -> float:
    """The radius about ``center`` that holds every point, padded for rounding."""
    reach = float(np.sqrt(((points - center) ** 2).sum(axis=1)).max())
    return reach * (1.0 + PAD)


def bounding_sphere(points, method="ritter") -> tuple[np.ndarray, float]:
    """A sphere containing every point (RTR4 §22.3.2).

    Parameters
    ----------
    points : (N, 3) array_like
        ``N >= 1``.
    method : {"ritter", "aabb", "welzl"}
        ``"ritter"``: Ritter's two-pass sphere, a few percent above the minimum
        on typical clouds, linear time. ``"aabb"``: centred on the bounding
        box, radius to the farthest point (RTR4's improved box sphere).
        ``"welzl"``: the exact minimal sphere (Welzl's algorithm, expected
        linear time on the shuffled points; the shuffle is seeded, so the
        result is deterministic).

    Returns
    -------
    center : (3,) float64
    radius : float
        ``>= 0``; 0 when all points coincide. Every point satisfies
        ``|p - center| <= radius`` (the radius is padded by a few ulps).
    """
    points = _points(points)
    if method == "aabb":
        center = 0.5 * (points.min(axis=0) + points.max(axis=0))
    elif method == "ritter":
        center = np.array(_ritter_kernel(points)[:3])
    elif method == "welzl":
        # Welzl on a centred, unit-scaled copy: the tolerances are then
        # relative to the cloud, and far-from-origin clouds keep their digits.
        shift = 0.5 * (points.min(axis=0) + points.max(axis=0))
        scale = float(np.abs(points - shift).max())
        if scale == 0.0:
            return shift, 0.0
        local = (points - shift) / scale
        order = np.random.default_rng(0x5EED).permutation(local.shape[0])
        ball = _welzl_kernel(np.ascontiguousarray(local[order]), 1e-12)
        center = np.array(ball[:3]) * scale + shift
    else:
        raise ValueError(f"method must be 'ritter', 'aabb' or 'welzl', got {method!r}")
    return center, float(_enclose(points, center))


# ----------------------------------------------------------------------- OBB

#: The 13 directions of a 26-DOP: its slabs' extreme points seed the
#: ditetrahedron method (Larsson & Källberg 2011, RTR4 §22.3.4).
_DOP_NORMALS = np.array([
    [1, 0, 0], [0, 1, 0], [0, 0, 1],
    [1, 1, 1], [1, 1, -1], [1, -1, 1], [1, -1, -1],
    [1, 1, 0], [1, -1, 0], [1, 0, 1], [1, 0, -1], [0, 1, 1], [0, 1, -1],
], np.float64)


@jit
def _extents_kernel(points, dirs, lo, hi, arg_lo, arg_hi):
    """Min and max of ``points . dirs[k]`` for every row ``k``, and where they occur."""
    for k in range(dirs.shape[0]):
        s = points[0, 0] * dirs[k, 0] + points[0, 1] * dirs[k, 1] + points[0, 2] * dirs[k, 2]
        lo[k] = s
        hi[k] = s
        arg_lo[k] = 0
        arg_hi[k] = 0
    for i in range(1, points.shape[0]):
        x = points[i, 0]
        y = points[i, 1]
        z = points[i, 2]
        for k in range(dirs.shape[0]):
            s = x * dirs[k, 0] + y * dirs[k, 1] + z * dirs[k, 2]
            if s < lo[k]:
                lo[k] = s
                arg_lo[k] = i
            if s > hi[k]:
                hi[k] = s
                arg_hi[k] = i


def _extents(points: np.ndarray, dirs: np.ndarray):
    """``(lo, hi, arg_lo, arg_hi)`` of the points along each row of ``dirs``, in one pass."""
    dirs = np.ascontiguousarray(dirs, dtype=np.float64)
    m = dirs.shape[0]
    lo = np.empty(m)
    hi = np.empty(m)
    arg_lo = np.empty(m, np.int64)
    arg_hi = np.empty(m, np.int64)
    _extents_kernel(points, dirs, lo, hi, arg_lo, arg_hi)
    return lo, hi, arg_lo, arg_hi


def _box_on(points: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Extent ``(lo, hi)`` of the points along each row of ``axes``."""
    lo, hi, _, _ = _extents(points, axes)
    return lo, hi


@jit
def _reach_kernel(points, center, axes, reach):
    """``reach[k] = max |(p - center) . axes[k]|``; returns ``max |p - center|``."""
    for k in range(3):
        reach[k] = 0.0
    size2 = 0.0
    for i in range(points.shape[0]):
        x = points[i, 0] - center[0]
        y = points[i, 1] - center[1]
        z = points[i, 2] - center[2]
        for k in range(3):
            s = abs(x * axes[k, 0] + y * axes[k, 1] + z * axes[k, 2])
            if s > reach[k]:
                reach[k] = s
        r2 = x * x + y * y + z * z
        if r2 > size2:
            size2 = r2
    return math.sqrt(size2)


def _measure(lo: np.ndarray, hi: np.ndarray) -> tuple[float, float]:
    """``(volume, surface area)`` of the box with these extents."""
    e = hi - lo
    return float(e[0] * e[1] * e[2]), float(2.0 * (e[0] * e[1] + e[1] * e[2] + e[2] * e[0]))


def _better(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Smaller volume wins; near-equal volumes (flat clouds) go to the smaller area."""
    if a[0] < b[0] * (1.0 - 1e-12):
        return True
    if b[0] < a[0] * (1.0 - 1e-12):
        return False
    return a[1] < b[1]


def _frame(u: np.ndarray, n: np.ndarray) -> np.ndarray | None:
    """Right-handed orthonormal rows ``u, n x u, n`` (``u`` made perpendicular to ``n``)."""
    u = u - (u @ n) * n
    length = float(np.sqrt(u @ u))
    if not length > 0.0:
        return None
    u = u / length
    return np.array([u, np.cross(n, u), n])


def _unit(v: np.ndarray) -> np.ndarray | None:
    length = float(np.sqrt(v @ v))
    return v / length if length > 0.0 else None


def _triangle_axes(p0, p1, p2):
    """The three candidate frames of a base triangle: each edge, the in-plane
    normal to it, and the triangle's normal (RTR4 §22.3.4)."""
    n = _unit(np.cross(p1 - p0, p2 - p0))
    if n is None:
        return [], None
    frames = []
    for e in (p1 - p0, p2 - p1, p0 - p2):
        frame = _frame(e, n)
        if frame is not None:
            frames.append(frame)
    return frames, n


def _any_perpendicular(u: np.ndarray) -> np.ndarray:
    helper = np.eye(3)[int(np.argmin(np.abs(u)))]
    return _unit(np.cross(u, helper))


def _dito_candidates(extremal: np.ndarray) -> list[np.ndarray]:
    """Candidate axes from the ditetrahedron of the extremal points."""
    rel = extremal - extremal.mean(axis=0)
    d2 = ((rel[:, None, :] - rel[None, :, :]) ** 2).sum(axis=2)
    i, j = np.unravel_index(int(np.argmax(d2)), d2.shape)
    if d2[i, j] == 0.0:
        return []
    p0, p1 = rel[i], rel[j]
    edge = _unit(p1 - p0)
    off = rel - p0
    off_line = off - np.outer(off @ edge, edge)
    k = int(np.argmax((off_line ** 2).sum(axis=1)))
    if not (off_line[k] @ off_line[k]) > 1e-24 * d2[i, j]:
        # Collinear extremal points: the line's direction and any frame around it.
        side = _any_perpendicular(edge)
        return [np.array([edge, side, np.cross(edge, side)])]
    p2 = rel[k]
    frames, n = _triangle_axes(p0, p1, p2)
    heights = (rel - p0) @ n
    # Apexes of the two tetrahedra: the extremal points farthest below and
    # above the base triangle; each gives three more triangles.
    for apex in (rel[int(np.argmin(heights))], rel[int(np.argmax(heights))]):
        for a, b in ((p0, p1), (p1, p2), (p2, p0)):
            more, _ = _triangle_axes(a, b, apex)
            frames.extend(more)
    return frames


def obb_of(points) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An oriented bounding box, near the smallest by volume.

    Candidate orientations come from Larsson and Källberg's ditetrahedron
    method (RTR4 §22.3.4): the extreme points of a 26-DOP, a large base
    triangle among them and the two tetrahedra on it give up to 21 frames
    (each triangle edge, its in-plane normal, the triangle normal). Added to
    them are the principal axes of all the points (PCA as in Gottschalk's
    method, without his convex hull) and the world axes. Each frame is
    fitted to all points and the box of least volume is kept (least area
    among boxes of equal volume, which decides between flat clouds), so the
    result is never larger than the AABB.

    Parameters
    ----------
    points : (N, 3) array_like
        ``N >= 1``.

    Returns
    -------
    center : (3,) float64
    axes : (3, 3) float64
        Rows are the box's orthonormal axes, right-handed.
    half_extents : (3,) float64
        ``>= 0``, padded by a few ulps of the cloud's size, so that
        ``|axes @ (p - center)| <= half_extents`` for every point.
    """
    points = _points(points)
    # Fit in a frame centred on the cloud: projections then keep their digits
    # for clouds far from the origin.
    shift = 0.5 * (points.min(axis=0) + points.max(axis=0))
    local = points - shift
    _, _, arg_lo, arg_hi = _extents(local, _DOP_NORMALS)
    extremal = local[np.unique(np.concatenate([arg_lo, arg_hi]))]
    candidates = _dito_candidates(extremal)
    if local.shape[0] >= 2:
        _, vectors = np.linalg.eigh(np.cov(local.T))
        pca = vectors.T[::-1].copy()
        pca[2] = np.cross(pca[0], pca[1])
        candidates.append(pca)
    if not candidates:
        center, half = _fit(points, shift, np.eye(3), pad=False)
        return center, np.eye(3), half
    # Every candidate frame measured on every point, in one pass.
    lo, hi, _, _ = _extents(local, np.concatenate(candidates))
    best_axes = None
    best_score = None
    for k, axes in enumerate(candidates):
        score = _measure(lo[3 * k:3 * k + 3], hi[3 * k:3 * k + 3])
        if best_score is None or _better(score, best_score):
            best_axes = axes
            best_score = score
    # The winner and the AABB are compared once more as returned, padding
    # included, so the result is never larger than the AABB.
    center, half = _fit(points, shift, best_axes, pad=True)
    a_center, a_half = _fit(points, shift, np.eye(3), pad=False)
    if not _better(_measure(-half, half), _measure(-a_half, a_half)):
        return a_center, np.eye(3), a_half
    return center, best_axes, half


def _fit(points: np.ndarray, shift: np.ndarray, axes: np.ndarray, pad: bool):
    """Centre and half-extents of the box on ``axes`` holding every point.

    Measured from the returned centre, as the caller will test. For a
    rotated frame the half-extents are padded by a few ulps of the cloud's
    size: a dot product with a rotated axis rounds differently under another
    evaluation order. Along the world axes the projection is a plain
    subtraction, exact to the same rounding for every caller, so no padding.
    """
    lo, hi = _box_on(points - shift, axes)
    center = shift + (0.5 * (lo + hi)) @ axes
    reach = np.empty(3)
    size = _reach_kernel(points, center, np.ascontiguousarray(axes), reach)
    half = np.maximum(0.5 * (hi - lo), reach)
    if pad:
        half = half + PAD * (size + float(np.abs(center).max()))
    return center, half
