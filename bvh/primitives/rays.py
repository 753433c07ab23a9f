"""Ray tests against single analytic shapes, vectorised over N rays.

Every test takes ``origins (N, 3)`` and ``directions (N, 3)`` (either may be a
single ``(3,)`` vector, repeated to match the other; a single ray gives arrays
of length 1). Directions need not be unit: ``t`` is the parameter of
``point = origin + t * direction`` for the direction as given. Only hits with
``tmin <= t <= tmax`` count (both ends closed) and the nearest one is returned.

Sentinels, the same for every test here: ``t`` is ``inf`` on a miss, and every
other per-ray output (normal, ``u``, ``v``) is ``0`` on a miss. No output is
ever NaN. Normals are unit length on a hit, except ``ray_aabb``'s for a ray
that starts inside the box, which enters no face (zeros, see there).

The kernels are serial ``@jit`` loops over plain arrays, one per test, with the
per-ray work in a small device function (``_*_one``) that a BVH traversal can
call directly. Inside kernels "no hit" and "unbounded" are the finite sentinel
``FAR``, turned into ``np.inf`` by the wrappers.
"""

import math
from typing import NamedTuple

import numpy as np

from .._jit import FAR, jit, jit_inline
from . import _validate as check

#: A ray is treated as parallel to a plane (or a triangle's or polygon's
#: plane) when the cosine of its angle to the plane's normal is below this:
#: the hit, if any, would lie more than 1e14 times the plane's distance away,
#: and its ``t`` would be mostly rounding.
PARALLEL_COS = 1.0e-14

#: A direction component smaller than this is treated as exactly zero by the
#: slab tests, so that the reciprocal stays below 1e200 and every slab
#: distance finite (directions are at least 1e-150 long, coordinates at most
#: 1e50).
TINY_COMPONENT = 1.0e-200


class RayHits(NamedTuple):
    """Nearest hit of each of N rays.

    Attributes
    ----------
    t : (N,) float64
        Ray parameter of the hit, ``inf`` on a miss.
    normal : (N, 3) float64
        Unit normal at the hit (see each test for its orientation), zeros on a miss.
    """

    t: np.ndarray
    normal: np.ndarray


class BoxHits(NamedTuple):
    """Entry and exit of each of N rays through an axis-aligned box.

    Attributes
    ----------
    t : (N,) float64
        Entry parameter, or ``tmin`` when the point at ``tmin`` is already
        inside the box; ``inf`` on a miss.
    t_exit : (N,) float64
        Where the ray's line leaves the box (not clipped to ``tmax``); ``inf``
        on a miss.
    normal : (N, 3) float64
        Unit outward normal of the face entered at ``t``; zeros on a miss and
        when the ray starts inside (no face is entered).
    """

    t: np.ndarray
    t_exit: np.ndarray
    normal: np.ndarray


class TriangleHits(NamedTuple):
    """Hit of each of N rays (or segments) with one triangle.

    Attributes
    ----------
    t : (N,) float64
        Parameter of the hit, ``inf`` on a miss.
    u, v : (N,) float64
        Barycentrics of the hit: ``point = (1-u-v)*a + u*b + v*c``; 0 on a miss.
    normal : (N, 3) float64
        Unit geometric normal ``(b-a) x (c-a) / |...|``, the same for every hit
        and not turned toward the ray; zeros on a miss.
    """

    t: np.ndarray
    u: np.ndarray
    v: np.ndarray
    normal: np.ndarray


def _outputs(n: int, extra: int = 0):
    t = np.empty(n, np.float64)
    normal = np.empty((n, 3), np.float64)
    extras = [np.empty(n, np.float64) for _ in range(extra)]
    return t, normal, extras


@jit_inline
def ray_at(origins, directions, i):
    """Ray ``i``: ``(ox, oy, oz, dx, dy, dz)``."""
    return origins[i, 0], origins[i, 1], origins[i, 2], directions[i, 0], directions[i, 1], directions[i, 2]


@jit_inline
def write_hit(i, t, normal, t_out, n_out):
    """Ray ``i``'s ``t`` (``FAR`` on a miss) and the shape's unit ``normal``
    (zeros on a miss) into the outputs, for the flat shapes, whose normal is
    the same at every hit."""
    t_out[i] = t
    hit = 1.0 if t < FAR else 0.0
    for c in range(3):
        n_out[i, c] = hit * normal[c]


# --------------------------------------------------------------------- plane


@jit
def plane_one(ox, oy, oz, dx, dy, dz, px, py, pz, nx, ny, nz, tmin, tmax):
    """``t`` of the ray's hit with the plane through ``p`` with unit normal ``n``, or FAR."""
    # t = n.(p - o) / n.d (the gamedev article's derivation, RTR4 eq. 22.17).
    # The article tests an undefined ``dotND``; the denominator is ``denom``,
    # and a ray parallel to the plane (or lying in it) misses.
    denom = nx * dx + ny * dy + nz * dz
    if denom * denom <= PARALLEL_COS * PARALLEL_COS * (dx * dx + dy * dy + dz * dz):
        return FAR
    t = (nx * (px - ox) + ny * (py - oy) + nz * (pz - oz)) / denom
    if t < tmin or t > tmax:
        return FAR
    return t


@jit
def _ray_plane_kernel(origins, directions, point, normal, tmin, tmax, t_out, n_out):
    for i in range(origins.shape[0]):
        t = plane_one(origins[i, 0], origins[i, 1], origins[i, 2],
                      directions[i, 0], directions[i, 1], directions[i, 2],
                      point[0], point[1], point[2], normal[0], normal[1], normal[2], tmin, tmax)
        write_hit(i, t, normal, t_out, n_out)


def ray_plane(origins, directions, point, normal, tmin=0.0, tmax=np.inf) -> RayHits:
    """Nearest hit of each ray with an infinite plane.

    Parameters
    ----------
    origins, directions : (N, 3) or (3,) array_like
        Rays ``origin + t * direction``; directions need not be unit.
    point : (3,) array_like
        Any point of the plane.
    normal : (3,) array_like
        The plane's normal, any non-zero length (it is normalised).
    tmin, tmax : float
        The window of accepted ``t``; ``0 <= tmin <= tmax``, ``tmax`` may be inf.

    Returns
    -------
    RayHits
        ``t (N,)``: inf on a miss. ``normal (N, 3)``: the plane's unit normal
        as given (not turned toward the ray), zeros on a miss.

    Notes
    -----
    Rays parallel to the plane miss, including rays lying in it: "parallel" is
    a cosine below ``PARALLEL_COS`` (1e-14) between direction and normal.
    """
    origins, directions = check.rays(origins, directions)
    point = check.vector3("point", point)
    normal = check.unit("normal", normal)
    tmin, tmax = check.window(tmin, tmax)
    t, n_out, _ = _outputs(origins.shape[0])
    _ray_plane_kernel(origins, directions, point, normal, tmin, tmax, t, n_out)
    return RayHits(check.far_to_inf(t), n_out)


# -------------------------------------------------------------------- sphere


@jit
def sphere_one(ox, oy, oz, dx, dy, dz, cx, cy, cz, radius, tmin, tmax):
    """``t`` of the nearest hit in ``[tmin, tmax]`` with the sphere, or FAR.

    The optimised geometric method of RTR4 §22.6.2, with its early
    rejections, written for a direction of any length ``|d|``: with
    ``l = c - o`` and ``s = l . d`` (``|d|`` times RTR4's s), the squared
    distance of the centre from the line is ``m^2 = |l x d|^2 / |d|^2``, and
    the crossings are ``t = (s -+ sqrt(r^2 |d|^2 - |l x d|^2)) / |d|^2``.
    Both rejections compare without a division or square root, which are
    left to rays that hit (RTR4 §22.5: postpone expensive operations).
    """
    lx = cx - ox
    ly = cy - oy
    lz = cz - oz
    l2 = lx * lx + ly * ly + lz * lz
    r2 = radius * radius
    s = lx * dx + ly * dy + lz * dz
    # First rejection: the centre is behind the origin and the origin is
    # outside, so both crossings are behind. The gamedev article rejects on
    # s < 0 alone, which also loses origins inside the sphere.
    if s < 0.0 and l2 > r2:
        return FAR
    # Second rejection: the line passes farther than r from the centre.
    # |l x d|^2 rather than l^2 |d|^2 - s^2, which cancels to rounding noise
    # for a distant sphere.
    wx = ly * dz - lz * dy
    wy = lz * dx - lx * dz
    wz = lx * dy - ly * dx
    d2 = dx * dx + dy * dy + dz * dz
    disc = r2 * d2 - (wx * wx + wy * wy + wz * wz)
    if disc < 0.0:
        return FAR
    q = math.sqrt(disc)
    inv = 1.0 / d2
    # Both crossings, nearer first; an origin inside the sphere has t0 < 0 and
    # gets the exit point t1. The article returned "hit" for t < 0.
    t0 = (s - q) * inv
    if t0 >= tmin and t0 <= tmax:
        return t0
    t1 = (s + q) * inv
    if t1 >= tmin and t1 <= tmax:
        return t1
    return FAR


@jit
def _ray_sphere_kernel(origins, directions, center, radius, tmin, tmax, t_out, n_out):
    cx = center[0]
    cy = center[1]
    cz = center[2]
    for i in range(origins.shape[0]):
        ox, oy, oz, dx, dy, dz = ray_at(origins, directions, i)
        t = sphere_one(ox, oy, oz, dx, dy, dz, cx, cy, cz, radius, tmin, tmax)
        t_out[i] = t
        if t < FAR:
            nx = ox + t * dx - cx
            ny = oy + t * dy - cy
            nz = oz + t * dz - cz
            # Normalise by the actual length rather than the radius, so the
            # normal is unit even when the hit point carries rounding.
            inv = 1.0 / math.sqrt(nx * nx + ny * ny + nz * nz)
            n_out[i, 0] = nx * inv
            n_out[i, 1] = ny * inv
            n_out[i, 2] = nz * inv
        else:
            n_out[i, 0] = 0.0
            n_out[i, 1] = 0.0
            n_out[i, 2] = 0.0


def ray_sphere(origins, directions, center, radius, tmin=0.0, tmax=np.inf) -> RayHits:
    """Nearest hit of each ray with a sphere (its surface).

    Parameters
    ----------
    origins, directions : (N, 3) or (3,) array_like
        Rays ``origin + t * direction``; directions need not be unit.
    center : (3,) array_like
    radius : float
        Must be > 0: a zero radius is refused.
    tmin, tmax : float
        The window of accepted ``t``; ``0 <= tmin <= tmax``, ``tmax`` may be inf.

    Returns
    -------
    RayHits
        ``t (N,)``: the nearest crossing of the surface in the window, inf on a
        miss. A sphere behind the ray misses; a ray starting inside hits the
        exit point; a tangent ray hits its touching point. ``normal (N, 3)``:
        unit outward normal ``(point - center) / |...|``, also at an exit
        point; zeros on a miss.
    """
    origins, directions = check.rays(origins, directions)
    center = check.vector3("center", center)
    radius = check.scalar("radius", radius, positive=True)
    tmin, tmax = check.window(tmin, tmax)
    t, n_out, _ = _outputs(origins.shape[0])
    _ray_sphere_kernel(origins, directions, center, radius, tmin, tmax, t, n_out)
    return RayHits(check.far_to_inf(t), n_out)


# --------------------------------------------------------------- slabs (box)


@jit
def slabs_one(ox, oy, oz, dx, dy, dz, lo0, lo1, lo2, hi0, hi1, hi2):
    """Kay–Kajiya slabs on the box ``[lo, hi]`` (RTR4 §22.7.1).

    Returns ``(t_near, axis_near, t_far, axis_far)`` for the ray's line:
    the latest slab entry and the earliest slab exit, each with the axis it
    came from (-1 when no slab bounds it). ``t_near > t_far`` means a miss.
    A direction component of zero (below ``TINY_COMPONENT``) makes that slab
    either all of the line (origin inside it) or none of it, so no 0 * inf
    or inf - inf is ever formed.
    """
    t_near = -FAR
    t_far = FAR
    axis_near = -1
    axis_far = -1
    for k in range(3):
        if k == 0:
            o, d, lo, hi = ox, dx, lo0, hi0
        elif k == 1:
            o, d, lo, hi = oy, dy, lo1, hi1
        else:
            o, d, lo, hi = oz, dz, lo2, hi2
        if abs(d) < TINY_COMPONENT:
            if o < lo or o > hi:
                return FAR, -1, -FAR, -1
            continue
        inv = 1.0 / d
        t1 = (lo - o) * inv
        t2 = (hi - o) * inv
        if t1 > t2:
            t1, t2 = t2, t1
        if t1 > t_near:
            t_near = t1
            axis_near = k
        # The far distance is the *minimum* of the slabs' exits: the gamedev
        # article takes min(tmin, tmax) per slab for ``tfar``, which is the
        # near distance again; it must be the max (here: t2 after the swap).
        if t2 < t_far:
            t_far = t2
            axis_far = k
    return t_near, axis_near, t_far, axis_far


@jit
def _ray_aabb_kernel(origins, directions, bmin, bmax, tmin, tmax, t_out, exit_out, n_out):
    for i in range(origins.shape[0]):
        dx = directions[i, 0]
        dy = directions[i, 1]
        dz = directions[i, 2]
        t_near, axis, t_far, _ = slabs_one(origins[i, 0], origins[i, 1], origins[i, 2], dx, dy, dz,
                                           bmin[0], bmin[1], bmin[2], bmax[0], bmax[1], bmax[2])
        n_out[i, 0] = 0.0
        n_out[i, 1] = 0.0
        n_out[i, 2] = 0.0
        entry = t_near if t_near > tmin else tmin
        if t_near > t_far or entry > t_far or entry > tmax:
            t_out[i] = FAR
            exit_out[i] = FAR
            continue
        t_out[i] = entry
        exit_out[i] = t_far
        if t_near >= tmin and axis >= 0:
            # Entering through the min face when moving up the axis.
            d = dx if axis == 0 else (dy if axis == 1 else dz)
            n_out[i, axis] = -1.0 if d > 0.0 else 1.0


def ray_aabb(origins, directions, bmin, bmax, tmin=0.0, tmax=np.inf) -> BoxHits:
    """Entry of each ray into a solid axis-aligned box (Kay–Kajiya slabs).

    Parameters
    ----------
    origins, directions : (N, 3) or (3,) array_like
        Rays ``origin + t * direction``; directions need not be unit and may
        have zero components.
    bmin, bmax : (3,) array_like
        Corners, ``bmin <= bmax`` on every axis. A flat box (``bmin == bmax``
        on some axis) is accepted and tested as the closed rectangle it is.
    tmin, tmax : float
        The window of accepted ``t``; ``0 <= tmin <= tmax``, ``tmax`` may be inf.

    Returns
    -------
    BoxHits
        ``t (N,)``: entry parameter, or ``tmin`` when the point at ``tmin`` is
        inside the (closed) box; inf on a miss. ``t_exit (N,)``: where the
        line leaves the box (not clipped to ``tmax``), inf on a miss.
        ``normal (N, 3)``: unit outward normal of the entered face, zeros on a
        miss and when the ray starts inside.

    Notes
    -----
    A ray parallel to a slab and outside it misses; one parallel and inside
    it is bounded by the other slabs only. No NaN arises from zero direction
    components. A ray that just touches an edge or face counts as a hit.
    """
    origins, directions = check.rays(origins, directions)
    bmin = check.vector3("bmin", bmin)
    bmax = check.vector3("bmax", bmax)
    inverted = bmin > bmax
    if inverted.any():
        k = _first_true(inverted)
        raise ValueError(f"bmin must be <= bmax on every axis: axis {k} has {float(bmin[k])!r} > {float(bmax[k])!r}")
    tmin, tmax = check.window(tmin, tmax)
    t, n_out, (t_exit,) = _outputs(origins.shape[0], 1)
    _ray_aabb_kernel(origins, directions, bmin, bmax, tmin, tmax, t, t_exit, n_out)
    return BoxHits(check.far_to_inf(t), check.far_to_inf(t_exit), n_out)


def _first_true(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


@jit
def _ray_obb_kernel(origins, directions, center, axes, half, tmin, tmax, t_out, n_out):
    for i in range(origins.shape[0]):
        # Into the box's frame: rows of ``axes`` are its unit axes, so the
        # slabs of RTR4 §22.7.1 become an AABB [-h, h] there.
        rx = origins[i, 0] - center[0]
        ry = origins[i, 1] - center[1]
        rz = origins[i, 2] - center[2]
        ox = axes[0, 0] * rx + axes[0, 1] * ry + axes[0, 2] * rz
        oy = axes[1, 0] * rx + axes[1, 1] * ry + axes[1, 2] * rz
        oz = axes[2, 0] * rx + axes[2, 1] * ry + axes[2, 2] * rz
        wx = directions[i, 0]
        wy = directions[i, 1]
        wz = directions[i, 2]
        dx = axes[0, 0] * wx + axes[0, 1] * wy + axes[0, 2] * wz
        dy = axes[1, 0] * wx + axes[1, 1] * wy + axes[1, 2] * wz
        dz = axes[2, 0] * wx + axes[2, 1] * wy + axes[2, 2] * wz
        t_near, axis_near, t_far, axis_far = slabs_one(ox, oy, oz, dx, dy, dz,
                                                       -half[0], -half[1], -half[2],
                                                       half[0], half[1], half[2])
        n_out[i, 0] = 0.0
        n_out[i, 1] = 0.0
        n_out[i, 2] = 0.0
        t_out[i] = FAR
        if t_near > t_far:
            continue
        # RTR4's closest positive t: the entry, or the exit when the ray
        # starts inside (the surface is what a pick hits).
        if t_near >= tmin and t_near <= tmax and axis_near >= 0:
            t = t_near
            axis = axis_near
            outward = -1.0
        elif t_far >= tmin and t_far <= tmax and axis_far >= 0:
            t = t_far
            axis = axis_far
            outward = 1.0
        else:
            continue
        t_out[i] = t
        d = dx if axis == 0 else (dy if axis == 1 else dz)
        sign = outward if d > 0.0 else -outward
        for c in range(3):
            n_out[i, c] = sign * axes[axis, c]


def ray_obb(origins, directions, center, axes, half_extents, tmin=0.0, tmax=np.inf) -> RayHits:
    """Nearest hit of each ray with the surface of an oriented box.

    Parameters
    ----------
    origins, directions : (N, 3) or (3,) array_like
        Rays ``origin + t * direction``; directions need not be unit.
    center : (3,) array_like
    axes : (3, 3) array_like
        Rows are the box's unit axes, mutually orthogonal (to 1e-9).
    half_extents : (3,) array_like
        Half side lengths along each axis, ``>= 0``; a zero half-extent makes
        a flat box, tested as the closed rectangle it is.
    tmin, tmax : float
        The window of accepted ``t``; ``0 <= tmin <= tmax``, ``tmax`` may be inf.

    Returns
    -------
    RayHits
        ``t (N,)``: entry parameter; a ray starting inside the box gets its
        exit point (RTR4 §22.7.1 returns the closest positive t); inf on a
        miss. ``normal (N, 3)``: unit outward normal of the face hit (entry or
        exit face), zeros on a miss.
    """
    origins, directions = check.rays(origins, directions)
    center = check.vector3("center", center)
    axes = _check_axes(axes)
    half = check.vector3("half_extents", half_extents)
    if (half < 0.0).any():
        raise ValueError(f"half_extents must be >= 0, got {half.tolist()}")
    tmin, tmax = check.window(tmin, tmax)
    t, n_out, _ = _outputs(origins.shape[0])
    _ray_obb_kernel(origins, directions, center, axes, half, tmin, tmax, t, n_out)
    return RayHits(check.far_to_inf(t), n_out)


def _check_axes(axes) -> np.ndarray:
    axes = check.real_array("axes", axes)
    if axes.shape != (3, 3):
        raise ValueError(f"axes must have shape (3, 3) (rows are the box's axes), got {axes.shape}")
    if not np.isfinite(axes).all():
        raise ValueError("axes contain NaN or infinite values")
    error = np.abs(axes @ axes.T - np.eye(3)).max()
    if error > 1e-9:
        raise ValueError(f"axes must be orthonormal rows (|A A^T - I| = {error:.3g} > 1e-9)")
    return axes


# ------------------------------------------------------------------ triangle


@jit
def _triangle_one(ox, oy, oz, dx, dy, dz, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z,
                  n_len2, tmin, tmax, cull):
    """Möller–Trumbore (1997; RTR4 §22.8): ``(t, u, v)`` or ``(FAR, 0, 0)``.

    ``n_len2`` is ``|e1 x e2|^2``, used to make the parallel test relative.
    """
    px = dy * e2z - dz * e2y
    py = dz * e2x - dx * e2z
    pz = dx * e2y - dy * e2x
    det = e1x * px + e1y * py + e1z * pz
    # det = -n.d: compare it with |n||d| rather than RTR4's absolute 1e-5,
    # which would reject every ray at a small triangle and none at a big one.
    limit2 = PARALLEL_COS * PARALLEL_COS * n_len2 * (dx * dx + dy * dy + dz * dz)
    if det * det <= limit2:
        return FAR, 0.0, 0.0
    sx = ox - ax
    sy = oy - ay
    sz = oz - az
    qx = sy * e1z - sz * e1y
    qy = sz * e1x - sx * e1z
    qz = sx * e1y - sy * e1x
    if cull:
        # The culling branch: only det > 0 (the ray meets the front, the side
        # e1 x e2 points to) survives, and the bounds are tested on the
        # numerators so the one division waits until a hit is certain.
        if det < 0.0:
            return FAR, 0.0, 0.0
        u_num = sx * px + sy * py + sz * pz
        if u_num < 0.0 or u_num > det:
            return FAR, 0.0, 0.0
        v_num = dx * qx + dy * qy + dz * qz
        if v_num < 0.0 or u_num + v_num > det:
            return FAR, 0.0, 0.0
        inv = 1.0 / det
        t = (e2x * qx + e2y * qy + e2z * qz) * inv
        if t < tmin or t > tmax:
            return FAR, 0.0, 0.0
        return t, u_num * inv, v_num * inv
    inv = 1.0 / det
    u = (sx * px + sy * py + sz * pz) * inv
    if u < 0.0 or u > 1.0:
        return FAR, 0.0, 0.0
    v = (dx * qx + dy * qy + dz * qz) * inv
    if v < 0.0 or u + v > 1.0:
        return FAR, 0.0, 0.0
    t = (e2x * qx + e2y * qy + e2z * qz) * inv
    if t < tmin or t > tmax:
        return FAR, 0.0, 0.0
    return t, u, v


@jit
def _ray_triangle_kernel(origins, directions, a, e1, e2, unit_normal, n_len2, tmin, tmax, cull,
                         t_out, u_out, v_out, n_out):
    for i in range(origins.shape[0]):
        t, u, v = _triangle_one(origins[i, 0], origins[i, 1], origins[i, 2],
                                directions[i, 0], directions[i, 1], directions[i, 2],
                                a[0], a[1], a[2], e1[0], e1[1], e1[2], e2[0], e2[1], e2[2],
                                n_len2, tmin, tmax, cull)
        write_hit(i, t, unit_normal, t_out, n_out)
        u_out[i] = u
        v_out[i] = v


def triangle_frame(a, b, c):
    """Validated ``(a, e1, e2, unit_normal, |e1 x e2|^2)`` of a triangle.

    Refuses a degenerate triangle: collinear vertices (``|e1 x e2|`` below
    1e-12 of ``|e1||e2|``) or one too small for float64 to square its area.
    """
    a = check.vector3("a", a)
    b = check.vector3("b", b)
    c = check.vector3("c", c)
    e1 = b - a
    e2 = c - a
    n = np.cross(e1, e2)
    n_len2 = float(n @ n)
    scale2 = float(e1 @ e1) * float(e2 @ e2)
    if not n_len2 > 1e-24 * scale2 or n_len2 < 1e-280:
        raise ValueError("the triangle is degenerate: its vertices are collinear or coincide (zero area)")
    return a, e1, e2, n / math.sqrt(n_len2), n_len2


def ray_triangle(origins, directions, a, b, c, cull_backfaces=False, tmin=0.0, tmax=np.inf) -> TriangleHits:
    """Hit of each ray with a triangle, Möller–Trumbore (RTR4 §22.8).

    Parameters
    ----------
    origins, directions : (N, 3) or (3,) array_like
        Rays ``origin + t * direction``; directions need not be unit.
    a, b, c : (3,) array_like
        Vertices; collinear or coincident vertices are refused.
    cull_backfaces : bool
        When True only the front face counts: the side ``(b-a) x (c-a)``
        points to, i.e. rays with ``direction . normal < 0``.
    tmin, tmax : float
        The window of accepted ``t``; ``0 <= tmin <= tmax``, ``tmax`` may be inf.

    Returns
    -------
    TriangleHits
        ``t (N,)``: inf on a miss. ``u, v (N,)``: barycentrics,
        ``point = (1-u-v)*a + u*b + v*c``, 0 on a miss. ``normal (N, 3)``: the
        unit geometric normal ``(b-a) x (c-a)``, not turned toward the ray,
        zeros on a miss.

    Notes
    -----
    Edges and vertices count as inside (``u, v >= 0``, ``u + v <= 1``, all
    closed). A ray within 1e-14 (cosine) of the triangle's plane is parallel
    and misses.
    """
    origins, directions = check.rays(origins, directions)
    a, e1, e2, unit_normal, n_len2 = triangle_frame(a, b, c)
    tmin, tmax = check.window(tmin, tmax)
    t, n_out, (u, v) = _outputs(origins.shape[0], 2)
    _ray_triangle_kernel(origins, directions, a, e1, e2, unit_normal, n_len2, tmin, tmax,
                         bool(cull_backfaces), t, u, v, n_out)
    return TriangleHits(check.far_to_inf(t), u, v, n_out)


# ------------------------------------------------------------------- polygon


@jit
def crossings_inside(tx, ty, xs, ys):
    """Even–odd point-in-polygon, the crossings test (RTR4 §22.9.1).

    Counts crossings of the polygon's edges with the ray from ``(tx, ty)``
    along +x. A vertex with ``y >= ty`` counts as above the ray, so a ray
    through a vertex crosses exactly one of its two edges or neither, never
    both. The x-intercept test is done without a division: with
    ``f = (y1-ty)(x0-x1) - (x1-tx)(y0-y1)`` the intercept lies at
    ``x > tx`` exactly when ``f > 0`` matches "vertex 1 is above".
    """
    m = xs.shape[0]
    inside = False
    x0 = xs[m - 1]
    y0 = ys[m - 1]
    above0 = y0 >= ty
    for k in range(m):
        x1 = xs[k]
        y1 = ys[k]
        above1 = y1 >= ty
        if above0 != above1:
            f = (y1 - ty) * (x0 - x1) - (x1 - tx) * (y0 - y1)
            if (f > 0.0) == above1:
                inside = not inside
        above0 = above1
        x0 = x1
        y0 = y1
    return inside


@jit
def _ray_polygon_kernel(origins, directions, point, normal, drop, xs, ys, tmin, tmax, t_out, n_out):
    # The two coordinates kept after dropping the normal's dominant axis.
    k0 = 1 if drop == 0 else 0
    k1 = 1 if drop == 2 else 2
    for i in range(origins.shape[0]):
        ox, oy, oz, dx, dy, dz = ray_at(origins, directions, i)
        t = plane_one(ox, oy, oz, dx, dy, dz, point[0], point[1], point[2],
                      normal[0], normal[1], normal[2], tmin, tmax)
        if t < FAR:
            hx = ox + t * dx
            hy = oy + t * dy
            hz = oz + t * dz
            h0 = hx if k0 == 0 else hy
            h1 = hy if k1 == 1 else hz
            if not crossings_inside(h0, h1, xs, ys):
                t = FAR
        write_hit(i, t, normal, t_out, n_out)


def polygon_plane(vertices):
    """Validated ``(vertices (M, 3), point, unit normal, dropped axis)`` of a planar polygon.

    The normal is that of the polygon's widest triangle (a vertex, the vertex
    farthest from it, and the vertex farthest from their line), oriented by
    Newell's area vector when that is not zero, so it follows the winding
    (counter-clockwise seen from the side it points to). A self-intersecting
    polygon whose signed area cancels still gets a plane this way.
    """
    vertices, _ = check.vectors("vertices", vertices, allow_single=False)
    m = vertices.shape[0]
    if m < 3:
        raise ValueError(f"a polygon needs at least 3 vertices, got {m}")
    origin = vertices[0]
    rel = vertices - origin
    size = float(np.sqrt((rel * rel).sum(axis=1)).max())
    far = int(np.argmax((rel * rel).sum(axis=1)))
    cross = np.cross(rel[far], rel)
    cross_len2 = (cross * cross).sum(axis=1)
    best = int(np.argmax(cross_len2))
    if size == 0.0 or not cross_len2[best] > (1e-12 * size * size) ** 2:
        raise ValueError("the polygon is degenerate: its vertices are collinear or coincide (zero area)")
    normal = cross[best] / math.sqrt(cross_len2[best])
    newell = 0.5 * np.cross(rel, np.roll(rel, -1, axis=0)).sum(axis=0)
    if float(newell @ normal) < 0.0:
        normal = 0.0 - normal
    off_plane = float(np.abs(rel @ normal).max())
    if off_plane > 1e-9 * size:
        raise ValueError(
            f"the polygon is not planar: a vertex lies {off_plane:.3g} from its plane "
            f"(more than 1e-9 of its size {size:.3g})"
        )
    drop = int(np.argmax(np.abs(normal)))
    return vertices, origin.copy(), normal, drop


def ray_polygon(origins, directions, vertices, tmin=0.0, tmax=np.inf) -> RayHits:
    """Nearest hit of each ray with a planar polygon (RTR4 §22.9).

    The ray meets the polygon's plane, then the hit point is projected by
    dropping the coordinate of the normal's largest component and tested
    with the crossings (even–odd) rule, so concave and self-intersecting
    polygons work: a region is inside when a ray from it crosses the outline
    an odd number of times.

    Parameters
    ----------
    origins, directions : (N, 3) or (3,) array_like
        Rays ``origin + t * direction``; directions need not be unit.
    vertices : (M, 3) array_like
        The closed outline ``v0 .. v(M-1)``, ``M >= 3``, planar to 1e-9 of
        its size. Collinear or coincident outlines are refused.
    tmin, tmax : float
        The window of accepted ``t``; ``0 <= tmin <= tmax``, ``tmax`` may be inf.

    Returns
    -------
    RayHits
        ``t (N,)``: inf on a miss. ``normal (N, 3)``: the polygon's unit normal
        (right-handed with the winding, not turned toward the ray), zeros on a
        miss.

    Notes
    -----
    Points exactly on the outline are inside for some edges and outside for
    others (the crossings test's half-open rule), so two polygons sharing an
    edge never both claim a point of it, nor both miss it. Rays parallel to
    the plane (cosine below 1e-14) miss.
    """
    origins, directions = check.rays(origins, directions)
    vertices, point, normal, drop = polygon_plane(vertices)
    tmin, tmax = check.window(tmin, tmax)
    keep = [k for k in range(3) if k != drop]
    xs = np.ascontiguousarray(vertices[:, keep[0]])
    ys = np.ascontiguousarray(vertices[:, keep[1]])
    t, n_out, _ = _outputs(origins.shape[0])
    _ray_polygon_kernel(origins, directions, point, normal, drop, xs, ys, tmin, tmax, t, n_out)
    return RayHits(check.far_to_inf(t), n_out)
