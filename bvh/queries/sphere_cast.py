"""Sphere casts: the first contact of a sphere swept along a ray, the leaf
tests and batch kernels.

A cast walks the same four-wide trees as a ray (:mod:`bvh.walk.traversal`), with
another bound: each child's box grown by the radius
(:func:`bvh.walk.traversal.visit_swept`), which holds the box's Minkowski sum with
the sphere. The leaf test is the swept sphere against a triangle (Ericson,
*Real-Time Collision Detection*, 2005, §5.5.7, and the capsule and sphere
tests of §5.3.2 and §5.3.7), in float64 on the exact float64 edges of the
float32 triangles, as the ray tests use: the earliest of

- the centre reaching the face's plane offset by the radius towards it, with
  its foot on the plane inside the face: then nothing touched the triangle
  before (the sphere had not touched its plane), so the test stops there;
- the centre entering the infinite cylinder of each edge, clamped to the
  segment;
- the centre entering the sphere about each corner;

all in ``[tmin, tmax]``. A sphere that already overlaps the triangle at
``tmin`` is inside one of these regions then and gets ``t = tmin``, its
contact point the triangle's point nearest the centre. With radius 0 a
triangle with a plane is its face alone, the Möller–Trumbore test of
``intersect`` (the same arithmetic), so a zero radius agrees with it; a
degenerate triangle (no plane) is its edges and corners, and never gives NaN.

Per-ray values travel in a *window* tuple in place of the walk's ``tmin``
(the walk hands it to the bound and the leaves untouched):
``(tmin, radius, ux, uy, uz, length, 1/ux, 1/uy, 1/uz)``, the world radius,
the ray's world direction as a unit vector, its length and the unit vector's
reciprocals (the sphere cast's window of :mod:`bvh.walk.space`, read by its
slot names). The leaves solve in the unit
direction's parameter ``s = t * length`` (world distances along the ray),
which keeps the quadratics well scaled whatever the direction's length.

Distances are world distances. In a scene the walk carries the ray into each
object's space and grows that tree's boxes by the radius times an upper bound
of the largest singular value of the object's inverse map (Gershgorin, as
:func:`bvh.walk.space.object_point_setup` bounds it), since the world sphere is
an ellipsoid there; the leaves map their triangles to the world and test them
there, so non-uniform scales and shears are exact. ``t`` needs no conversion:
an affine map keeps the ray parameter.

Shapes: a sphere under a similarity is sphere against spherical shell
(exact); a box's and a quad's faces are triangles mapped to the world; a
polygon is its plane (the foot's inside test in object space, with
``crossings_inside``) and capsules on its outline. A sphere shape under a
non-uniform map is an ellipsoid, approached by conservative advancement
(sphere tracing: the distance to a surface is 1-Lipschitz along a unit-speed
ray, so stepping by it never passes a contact; Hart, "Sphere tracing", 1996)
on the exact point-to-ellipsoid distance
(:func:`bvh.walk.space.nearest_on_ellipsoid`), see :func:`_swept_ellipsoid`
for its limits.
"""

import math

import numpy as np
from numba import prange

from .._jit import RAY_BLOCK, jit, jit_inline, jit_parallel
from ..walk.borrow import borrowed, frame_array
from .closest_point import closest_on_triangle
from .ray_triangle import EDGE_TOLERANCE, solve_barycentric, triangle_edges, write_miss
from ..primitives.rays import crossings_inside
from ..shapes import BOX, QUAD, SPHERE, polygon_point, polygon_row
from ..walk.space import (MAP_00, MAP_01, MAP_02, MAP_03, MAP_10, MAP_11, MAP_12, MAP_13, MAP_20, MAP_21, MAP_22,
                          MAP_23, POINT_X, POINT_Y, POINT_Z, SWEEP_IX, SWEEP_IY, SWEEP_IZ, SWEEP_LENGTH, SWEEP_UX,
                          SWEEP_UY, SWEEP_UZ, SWEPT_WORLD, WINDOW_RADIUS, WINDOW_TMIN, nearest_on_ellipsoid,
                          normal_to_world, object_swept_setup, safe_reciprocal, similarity_scale2, swept_setup,
                          to_object, to_world, world_point)
from ..walk.traversal import make_instance_walk, make_traversal, new_stack, visit_swept

#: What the leaf tests return for no contact (contacts are at ``s >= 0``).
NO_CONTACT = -1.0

#: A contact whose centre lies closer than this fraction of the radius to
#: its point (an overlap at ``tmin``, or radius 0) takes the surface's normal
#: against the ray: ``centre - point`` is then mostly rounding.
NORMAL_FLOOR = 1.0e-9

#: Conservative advancement on an ellipsoid: at most this many steps, and a
#: contact when within ``ELLIPSOID_TOLERANCE`` of its size; see
#: :func:`_swept_ellipsoid`.
ELLIPSOID_STEPS = 256
ELLIPSOID_TOLERANCE = 1.0e-12
ELLIPSOID_GRAZE = 1.0e-6

#: Fields of a cast's record (float64): the contact's ``s`` (unit-speed
#: parameter, for comparisons) and ``t`` (as reported), barycentrics, packed
#: triangle row (-1: none, or a shape), object, the contact point relative to
#: the ray's world origin, the surface's normal oriented against the ray
#: (not unit; for radius 0 and overlaps, see :data:`NORMAL_FLOOR`), and the
#: squared distance from the point to the centre (to break ties at tmin).
CAST_S, CAST_T, CAST_U, CAST_V, CAST_ROW, CAST_OBJECT, CAST_POINT, CAST_NORMAL, CAST_GAP = 0, 1, 2, 3, 4, 5, 6, 9, 12
CAST_RECORD = 13

_cast_record = frame_array(CAST_RECORD, np.float64)


# ------------------------------------------------------------------ window


@jit_inline
def _path(window):
    """A cast's ``(tmin, radius, ux, uy, uz, length)``: where it starts, its
    world radius, its unit direction and the direction's length."""
    return (window[WINDOW_TMIN], window[WINDOW_RADIUS], window[SWEEP_UX], window[SWEEP_UY], window[SWEEP_UZ],
            window[SWEEP_LENGTH])


# ------------------------------------------------------------------ features


@jit_inline
def _entry(a, b, c, smin):
    """Entry into the region where ``a s^2 + 2 b s + c <= 0`` (``a > 0``)
    clamped to ``smin``: ``s`` or NO_CONTACT when the region ends before
    ``smin`` or does not exist. The roots by the cancellation-free form of
    the quadratic formula."""
    disc = b * b - a * c
    if disc < 0.0:
        return NO_CONTACT
    q = -(b + math.copysign(math.sqrt(disc), b))
    if q == 0.0:
        # b = 0 and disc = 0: a double root at 0.
        low = high = 0.0
    else:
        low = min(q / a, c / q)
        high = max(q / a, c / q)
    if high < smin:
        return NO_CONTACT
    return max(low, smin)


@jit_inline
def _ball(px, py, pz, dx, dy, dz, radius, smin):
    """First ``s >= smin`` at which the centre ``s d`` (``d`` unit) is within
    ``radius`` of the point ``p`` (both relative to the ray's origin), or
    NO_CONTACT."""
    b = -(px * dx + py * dy + pz * dz)
    c = px * px + py * py + pz * pz - radius * radius
    return _entry(dx * dx + dy * dy + dz * dz, b, c, smin)


@jit_inline
def _cylinder(px, py, pz, ex, ey, ez, dx, dy, dz, radius, smin):
    """First ``s >= smin`` at which the centre ``s d`` is within ``radius``
    of the segment ``p .. p + e`` through its side (the infinite cylinder,
    with the nearest point's parameter on the segment): ``(s, w)`` with
    ``w`` that parameter in ``[0, 1]``, or ``(NO_CONTACT, 0)``. Entering
    past an end is the corner's ball. The perpendicular parts are formed
    first, as sums of squares, rather than ``ee (m.m) - (m.e)^2``, which
    cancels."""
    ee = ex * ex + ey * ey + ez * ez
    if ee == 0.0:
        return NO_CONTACT, 0.0
    mx, my, mz = -px, -py, -pz
    me = (mx * ex + my * ey + mz * ez) / ee
    de = (dx * ex + dy * ey + dz * ez) / ee
    qx, qy, qz = mx - me * ex, my - me * ey, mz - me * ez
    wx, wy, wz = dx - de * ex, dy - de * ey, dz - de * ez
    a = wx * wx + wy * wy + wz * wz
    c = qx * qx + qy * qy + qz * qz - radius * radius
    if a == 0.0:
        # Along the edge: at a constant distance from its line.
        s = smin if c <= 0.0 else NO_CONTACT
    else:
        s = _entry(a, qx * wx + qy * wy + qz * wz, c, smin)
    if s == NO_CONTACT:
        return NO_CONTACT, 0.0
    w = me + s * de
    if w < 0.0 or w > 1.0:
        return NO_CONTACT, 0.0
    return s, w


@jit_inline
def _cannot_touch(ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, nx, ny, nz, length, dx, dy, dz, radius, smin, smax):
    """Whether the edges and corners of a triangle with a plane are out of
    reach, by a cheap conservative test: a contact needs the centre within
    ``radius`` of the plane (an interval of ``s``) and, then, within
    ``radius`` of the triangle's box. Most triangles of a leaf a cast
    reaches are rejected here, before three cylinders and three balls. The
    radius is padded far beyond the tests' rounding."""
    reach = radius * (1.0 + 1.0e-6) + 1.0e-12 * (abs(ax) + abs(ay) + abs(az))
    speed = dx * nx + dy * ny + dz * nz
    plane = ax * nx + ay * ny + az * nz
    band = reach * length
    if speed == 0.0:
        return abs(smin * speed - plane) > band
    first = (plane - band) / speed
    last = (plane + band) / speed
    low = max(min(first, last), smin)
    high = min(max(first, last), smax)
    if low > high:
        return True
    for d, a, e1, e2 in ((dx, ax, e1x, e2x), (dy, ay, e1y, e2y), (dz, az, e1z, e2z)):
        lo = min(low * d, high * d)
        hi = max(low * d, high * d)
        if lo > max(a, a + e1, a + e2) + reach or hi < min(a, a + e1, a + e2) - reach:
            return True
    return False


@jit
def sweep_triangle(ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, dx, dy, dz, radius, smin, smax):
    """First contact in ``[smin, smax]`` of the sphere of ``radius`` centred
    at ``s d`` (``d`` unit) with the triangle ``a, a + e1, a + e2`` (``a``
    relative to the ray's origin).

    Returns ``(s, u, v)``: the contact's parameter and the barycentrics of
    the contact point ``a + u e1 + v e2``, or ``s = NO_CONTACT``. The face
    (the plane offset by the radius towards the centre, Möller–Trumbore on
    the ray moved by the radius along the normal, so that radius 0 is the ray
    test exactly), then the edges' cylinders and the corners' balls (module
    docstring). Out of line: it is the bulk of a leaf, and inlined into
    every walk it would multiply the kernels' compile time.
    """
    nx = e1y * e2z - e1z * e2y
    ny = e1z * e2x - e1x * e2z
    nz = e1x * e2y - e1y * e2x
    nn = nx * nx + ny * ny + nz * nz
    best, u, v = NO_CONTACT, 0.0, 0.0
    if nn > 0.0:
        # The centre's height above the plane at smin, times |n|.
        height = (smin * dx - ax) * nx + (smin * dy - ay) * ny + (smin * dz - az) * nz
        length = math.sqrt(nn)
        if abs(height) <= radius * length:
            # The sphere meets the plane at smin: touching the face if the
            # foot of the centre is inside it.
            k = height / nn
            fx, fy, fz = smin * dx - k * nx - ax, smin * dy - k * ny - ay, smin * dz - k * nz - az
            fu = ((fy * e2z - fz * e2y) * nx + (fz * e2x - fx * e2z) * ny + (fx * e2y - fy * e2x) * nz) / nn
            fv = ((e1y * fz - e1z * fy) * nx + (e1z * fx - e1x * fz) * ny + (e1x * fy - e1y * fx) * nz) / nn
            if fu >= 0.0 and fv >= 0.0 and fu + fv <= 1.0:
                return smin, fu, fv
        else:
            # Möller–Trumbore from the origin moved by the radius towards
            # the plane: it meets the plane when the sphere touches it.
            shift = (radius if height > 0.0 else -radius) / length
            sx, sy, sz = -shift * nx - ax, -shift * ny - ay, -shift * nz - az
            det, fu, fv, s = solve_barycentric(dx, dy, dz, e1x, e1y, e1z, e2x, e2y, e2z, sx, sy, sz)
            if (det != 0.0 and fu >= -EDGE_TOLERANCE and fu <= 1.0 + EDGE_TOLERANCE and fv >= -EDGE_TOLERANCE
                    and fu + fv <= 1.0 + EDGE_TOLERANCE and s >= smin and s <= smax):
                fu = min(max(fu, 0.0), 1.0)
                return s, fu, min(max(fv, 0.0), 1.0 - fu)
        if radius == 0.0:
            # A zero radius meets a triangle with a plane only through its
            # face; its edges inclusive, by the slack above.
            return NO_CONTACT, 0.0, 0.0
        if _cannot_touch(ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, nx, ny, nz, length, dx, dy, dz, radius, smin,
                         smax):
            return NO_CONTACT, 0.0, 0.0
    for edge in range(3):
        if edge == 0:
            px, py, pz, ex, ey, ez = ax, ay, az, e1x, e1y, e1z
        elif edge == 1:
            px, py, pz, ex, ey, ez = ax, ay, az, e2x, e2y, e2z
        else:
            px, py, pz, ex, ey, ez = ax + e1x, ay + e1y, az + e1z, e2x - e1x, e2y - e1y, e2z - e1z
        s, w = _cylinder(px, py, pz, ex, ey, ez, dx, dy, dz, radius, smin)
        if s != NO_CONTACT and s <= smax and (best == NO_CONTACT or s < best):
            best = s
            if edge == 0:
                u, v = w, 0.0
            elif edge == 1:
                u, v = 0.0, w
            else:
                u, v = 1.0 - w, w
    for corner in range(3):
        cu = 1.0 if corner == 1 else 0.0
        cv = 1.0 if corner == 2 else 0.0
        s = _ball(ax + cu * e1x + cv * e2x, ay + cu * e1y + cv * e2y, az + cu * e1z + cv * e2z, dx, dy, dz,
                  radius, smin)
        if s != NO_CONTACT and s <= smax and (best == NO_CONTACT or s < best):
            best, u, v = s, cu, cv
    if best == smin:
        # Overlapping at smin: the contact is the triangle's nearest point.
        d2, u, v = closest_on_triangle(smin * dx, smin * dy, smin * dz, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z)
    return best, u, v


# ------------------------------------------------------------------ keeping


@jit_inline
def _keep(record, window, s, u, v, px, py, pz, nx, ny, nz, row, obj):
    """Keep a contact at ``s`` if earlier than the record's (the first one
    kept wins a tie, but for ties at ``tmin``); ``p`` is the contact point relative to the ray's
    origin, ``n`` the surface's normal there (any orientation, not unit).
    Returns the walk's new ``tmax``, or -1.0 if not kept."""
    tmin, radius, dx, dy, dz, length = _path(window)
    # At tmin every overlapping face ties: the one nearest the centre wins,
    # so the point is the surface's nearest.
    gx, gy, gz = s * dx - px, s * dy - py, s * dz - pz
    gap = gx * gx + gy * gy + gz * gz
    if s > record[CAST_S] or (s == record[CAST_S] and not (s == tmin * length and gap < record[CAST_GAP])):
        return -1.0
    record[CAST_S] = s
    record[CAST_GAP] = gap
    # Touching at tmin reports tmin itself, not tmin * length / length.
    t = tmin if s == tmin * length else s / length
    record[CAST_T] = t
    record[CAST_U] = u
    record[CAST_V] = v
    record[CAST_ROW] = row
    record[CAST_OBJECT] = obj
    record[CAST_POINT] = px
    record[CAST_POINT + 1] = py
    record[CAST_POINT + 2] = pz
    flip = -1.0 if nx * dx + ny * dy + nz * dz > 0.0 else 1.0
    record[CAST_NORMAL] = flip * nx
    record[CAST_NORMAL + 1] = flip * ny
    record[CAST_NORMAL + 2] = flip * nz
    return t


@jit_inline
def _limits(record, window, tmax):
    """The window ``[smin, smax]`` in the unit-speed parameter, ``smax``
    no later than the contact kept so far."""
    length = window[SWEEP_LENGTH]
    return window[WINDOW_TMIN] * length, min(tmax * length, record[CAST_S])


@jit_inline
def _reaches_box(window, smin, smax, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z):
    """Whether the cast's path within ``[smin, smax]`` meets the triangle's
    box grown by the radius (the slab test, as the nodes have it, padded by
    far more than its rounding): a cheap filter, inline in the leaf, before
    the out-of-line :func:`sweep_triangle`. Most triangles of a leaf the
    cast reaches fail it."""
    radius, ix, iy, iz = window[WINDOW_RADIUS], window[SWEEP_IX], window[SWEEP_IY], window[SWEEP_IZ]
    reach = radius * (1.0 + 1.0e-6) + 1.0e-12 * (abs(ax) + abs(ay) + abs(az) + abs(e1x) + abs(e1y) + abs(e1z)
                                                 + abs(e2x) + abs(e2y) + abs(e2z))
    near, far = smin, smax
    for i, a, e1, e2 in ((ix, ax, e1x, e2x), (iy, ay, e1y, e2y), (iz, az, e1z, e2z)):
        low = (min(a, min(a + e1, a + e2)) - reach) * i
        high = (max(a, max(a + e1, a + e2)) + reach) * i
        near = max(near, min(low, high))
        far = min(far, max(low, high))
    return near <= far


@jit_inline
def _triangle_contact(record, window, tmax, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, row, obj):
    """Test the triangle ``a, e1, e2`` (world, ``a`` relative to the ray's
    origin) and keep its contact if earlier. Returns the walk's ``tmax``."""
    smin, smax = _limits(record, window, tmax)
    if not _reaches_box(window, smin, smax, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z):
        return tmax
    s, u, v = sweep_triangle(ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, window[SWEEP_UX], window[SWEEP_UY],
                             window[SWEEP_UZ], window[WINDOW_RADIUS], smin, smax)
    if s != NO_CONTACT:
        t = _keep(record, window, s, u, v, ax + u * e1x + v * e2x, ay + u * e1y + v * e2y, az + u * e1z + v * e2z,
                  e1y * e2z - e1z * e2y, e1z * e2x - e1x * e2z, e1x * e2y - e1y * e2x, row, obj)
        if t >= 0.0:
            return t
    return tmax


@jit_inline
def sweep_leaf(tris, first, count, ox, oy, oz, dx, dy, dz, window, tmax, ray, out):
    """Keep the earliest contact of a mesh leaf, in the mesh's frame (a
    translation of the world: distances are the world's). ``out =
    (record,)``, a :data:`CAST_RECORD` row; ``window`` the cast's tuple."""
    record = out[0]
    for k in range(first, first + count):
        ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z = triangle_edges(tris, k)
        tmax = _triangle_contact(record, window, tmax, ax - ox, ay - oy, az - oz, e1x, e1y, e1z, e2x, e2y, e2z, k,
                                 0.0)
    return tmax, False


@jit_inline
def _world_triangle(world, record, window, tmax, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, row, obj):
    """The object-space triangle ``a, e1, e2`` mapped to the world by
    ``world`` (the point layout of :func:`bvh.walk.space.object_point_setup`)
    and tested there."""
    ox, oy, oz = world_point(world)
    wax, way, waz = to_world(world, ax, ay, az, 1.0)
    w1x, w1y, w1z = to_world(world, e1x, e1y, e1z, 0.0)
    w2x, w2y, w2z = to_world(world, e2x, e2y, e2z, 0.0)
    return _triangle_contact(record, window, tmax, wax - ox, way - oy, waz - oz, w1x, w1y, w1z, w2x, w2y, w2z, row,
                             obj)


@jit_inline
def _scene_mesh_leaf(tris, first, count, consts, window, tmax, ray, out, obj):
    record = out[0]
    world = consts[SWEPT_WORLD]
    for k in range(first, first + count):
        ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z = triangle_edges(tris, k)
        tmax = _world_triangle(world, record, window, tmax, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, k, obj)
    return tmax, False


# ------------------------------------------------------------------ shapes


@jit
def _shape_triangle(world, record, window, tmax, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, obj):
    """:func:`_world_triangle` for a shape's face, compiled once for all."""
    return _world_triangle(world, record, window, tmax, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, -1, obj)


@jit_inline
def _parallelogram(world, record, window, tmax, cx, cy, cz, ex, ey, ez, fx, fy, fz, obj):
    """The parallelogram ``c +- e +- f`` (object space) as two triangles."""
    tmax = _shape_triangle(world, record, window, tmax, cx - ex - fx, cy - ey - fy, cz - ez - fz, 2.0 * ex,
                           2.0 * ey, 2.0 * ez, 2.0 * fx, 2.0 * fy, 2.0 * fz, obj)
    return _shape_triangle(world, record, window, tmax, cx + ex + fx, cy + ey + fy, cz + ez + fz, -2.0 * ex,
                           -2.0 * ey, -2.0 * ez, -2.0 * fx, -2.0 * fy, -2.0 * fz, obj)


@jit_inline
def _shell(world, record, window, tmax, radius, obj):
    """The sphere of ``radius`` about the object's origin under a map that
    keeps shapes (columns orthogonal, of equal length): a sphere of radius
    ``R`` in the world, a surface. The cast touches it where its centre is
    between ``R - r`` and ``R + r`` from the sphere's centre: at ``smin`` if
    it is already, else entering the outer ball or, from inside, leaving the
    inner one. Exact. Returns ``(tmax, done)``, ``done`` False for a map that
    does not keep shapes."""
    scale2 = similarity_scale2(world)
    if scale2 < 0.0:
        return tmax, False
    tmin, r, dx, dy, dz, length = _path(window)
    smin, smax = _limits(record, window, tmax)
    big = radius * math.sqrt(scale2)
    cx, cy, cz = _centre(world)
    mx, my, mz = smin * dx - cx, smin * dy - cy, smin * dz - cz
    gap = math.sqrt(mx * mx + my * my + mz * mz)
    if big - r <= gap <= big + r:
        s = smin
    elif gap > big + r:
        s = _ball(cx, cy, cz, dx, dy, dz, big + r, smin)
    else:
        # Inside the inner ball: the exit root, by the same quadratic.
        b = -(cx * dx + cy * dy + cz * dz)
        c = cx * cx + cy * cy + cz * cz - (big - r) * (big - r)
        disc = max(b * b - c, 0.0)
        q = -(b + math.copysign(math.sqrt(disc), b))
        s = max(q, c / q) if q != 0.0 else 0.0
    if s == NO_CONTACT or s > smax:
        return tmax, True
    ox, oy, oz = s * dx - cx, s * dy - cy, s * dz - cz
    away = math.sqrt(ox * ox + oy * oy + oz * oz)
    if away == 0.0:
        ox, oy, oz, away = -dx, -dy, -dz, 1.0
    scale = big / away
    t = _keep(record, window, s, np.nan, np.nan, cx + ox * scale, cy + oy * scale, cz + oz * scale, ox, oy, oz, -1,
              obj)
    return (t if t >= 0.0 else tmax), True


@jit_inline
def _centre(world):
    """The object's origin in the world, relative to the cast's origin."""
    ox, oy, oz = world_point(world)
    return world[MAP_03] - ox, world[MAP_13] - oy, world[MAP_23] - oz


@jit
def _swept_ellipsoid(world, record, window, tmax, radius, obj):
    """The sphere shape under a map that does not keep shapes: an ellipsoid.

    Conservative advancement (Hart 1996): from ``smin``, step along the
    unit-speed ray by the ellipsoid's distance less ``r``, measured exactly
    by :func:`bvh.walk.space.nearest_on_ellipsoid`; the distance to a surface changes
    no faster than the centre moves, so no step passes a contact. Stops at a
    contact, ``ELLIPSOID_TOLERANCE`` of the ellipsoid's size early at most
    (conservative), or past ``smax``. The march starts where the centre
    enters the ball about the ellipsoid's centre holding it grown by ``r``.
    A cast that grazes the ellipsoid for more than ``ELLIPSOID_STEPS`` steps
    is taken as touching if it came within ``ELLIPSOID_GRAZE`` of the size,
    else as missing: the one approximate answer of the module.
    """
    tmin, r, dx, dy, dz, length = _path(window)
    smin, smax = _limits(record, window, tmax)
    size = radius * math.sqrt(world[MAP_00] * world[MAP_00] + world[MAP_01] * world[MAP_01]
                              + world[MAP_02] * world[MAP_02] + world[MAP_10] * world[MAP_10]
                              + world[MAP_11] * world[MAP_11] + world[MAP_12] * world[MAP_12]
                              + world[MAP_20] * world[MAP_20] + world[MAP_21] * world[MAP_21]
                              + world[MAP_22] * world[MAP_22])
    cx, cy, cz = _centre(world)
    s = _ball(cx, cy, cz, dx, dy, dz, size + r, smin)
    if s == NO_CONTACT or s > smax:
        return tmax
    ox, oy, oz = world_point(world)
    for step in range(ELLIPSOID_STEPS):
        d2, qx, qy, qz, nx, ny, nz = nearest_on_ellipsoid(world, radius, ox + s * dx, oy + s * dy, oz + s * dz)
        ahead = math.sqrt(d2) - r
        if ahead <= ELLIPSOID_TOLERANCE * size or (step == ELLIPSOID_STEPS - 1 and ahead <= ELLIPSOID_GRAZE * size):
            t = _keep(record, window, s, np.nan, np.nan, qx - ox, qy - oy, qz - oz, nx, ny, nz, -1, obj)
            return t if t >= 0.0 else tmax
        s += ahead
        if s > smax:
            return tmax
    return tmax


@jit_inline
def _polygon(world, record, window, tmax, shape_data, start, obj):
    """A planar polygon (:mod:`bvh.shapes`' row): the face, its plane offset
    by the radius with the foot's inside test in object space, then (radius
    > 0) a capsule on each outline edge."""
    tmin, r, dx, dy, dz, length = _path(window)
    smin, smax = _limits(record, window, tmax)
    qx, qy, qz, nx, ny, nz, axis, xs, ys = polygon_row(shape_data, start)
    m = xs.shape[0]
    ox, oy, oz = world_point(world)
    cx, cy, cz = to_world(world, qx, qy, qz, 1.0)
    cx, cy, cz = cx - ox, cy - oy, cz - oz
    wnx, wny, wnz = normal_to_world(world, nx, ny, nz)
    inv_len = 1.0 / math.sqrt(wnx * wnx + wny * wny + wnz * wnz)
    wnx, wny, wnz = wnx * inv_len, wny * inv_len, wnz * inv_len
    plane = cx * wnx + cy * wny + cz * wnz
    speed = dx * wnx + dy * wny + dz * wnz
    height = smin * speed - plane
    s = NO_CONTACT
    if abs(height) <= r:
        s, lift = smin, height
    elif speed != 0.0:
        lift = r if height > 0.0 else -r
        s = (lift + plane) / speed
        if s < smin:
            s = NO_CONTACT
    if s != NO_CONTACT and s <= smax:
        fx, fy, fz = s * dx - lift * wnx, s * dy - lift * wny, s * dz - lift * wnz
        lfx, lfy, lfz = to_object(world, fx, fy, fz)
        lfx, lfy, lfz = lfx + world[POINT_X], lfy + world[POINT_Y], lfz + world[POINT_Z]
        if crossings_inside(lfy if axis == 0 else lfx, lfy if axis == 2 else lfz, xs, ys):
            t = _keep(record, window, s, np.nan, np.nan, fx, fy, fz, wnx, wny, wnz, -1, obj)
            return t if t >= 0.0 else tmax
    if r == 0.0:
        return tmax
    best, bx, by, bz = NO_CONTACT, 0.0, 0.0, 0.0
    for k in range(m):
        j = k + 1 if k + 1 < m else 0
        ax, ay, az = polygon_point(axis, xs[k], ys[k], qx, qy, qz, nx, ny, nz)
        ex, ey, ez = polygon_point(axis, xs[j], ys[j], qx, qy, qz, nx, ny, nz)
        wax, way, waz = to_world(world, ax, ay, az, 1.0)
        wax, way, waz = wax - ox, way - oy, waz - oz
        wex, wey, wez = to_world(world, ex - ax, ey - ay, ez - az, 0.0)
        s, w = _cylinder(wax, way, waz, wex, wey, wez, dx, dy, dz, r, smin)
        if s != NO_CONTACT and s <= smax and (best == NO_CONTACT or s < best):
            best, bx, by, bz = s, wax + w * wex, way + w * wey, waz + w * wez
        s = _ball(wax, way, waz, dx, dy, dz, r, smin)
        if s != NO_CONTACT and s <= smax and (best == NO_CONTACT or s < best):
            best, bx, by, bz = s, wax, way, waz
    if best == NO_CONTACT:
        return tmax
    t = _keep(record, window, best, np.nan, np.nan, bx, by, bz, wnx, wny, wnz, -1, obj)
    return t if t >= 0.0 else tmax


@jit
def _shape_contact(kind, shape_data, start, world, record, window, tmax, obj):
    """Keep a shape object's contact if earlier; returns the walk's ``tmax``.
    Out of line, its faces tested by one out-of-line function: inlined into
    the walk, a box's twelve triangles made a scene kernel take minutes to
    compile."""
    if kind == SPHERE:
        tmax, done = _shell(world, record, window, tmax, shape_data[start], obj)
        if not done:
            tmax = _swept_ellipsoid(world, record, window, tmax, shape_data[start], obj)
    elif kind == BOX:
        hx, hy, hz = shape_data[start], shape_data[start + 1], shape_data[start + 2]
        for sign in (-1.0, 1.0):
            tmax = _parallelogram(world, record, window, tmax, sign * hx, 0.0, 0.0, 0.0, hy, 0.0, 0.0, 0.0, hz, obj)
            tmax = _parallelogram(world, record, window, tmax, 0.0, sign * hy, 0.0, 0.0, 0.0, hz, hx, 0.0, 0.0, obj)
            tmax = _parallelogram(world, record, window, tmax, 0.0, 0.0, sign * hz, hx, 0.0, 0.0, 0.0, hy, 0.0, obj)
    elif kind == QUAD:
        tmax = _parallelogram(world, record, window, tmax, 0.0, 0.0, 0.0, shape_data[start], 0.0, 0.0, 0.0,
                              shape_data[start + 1], 0.0, obj)
    else:
        tmax = _polygon(world, record, window, tmax, shape_data, start, obj)
    return tmax


@jit_inline
def _scene_shape_leaf(kind, shape_data, start, consts, window, tmax, ray, out, obj):
    return _shape_contact(kind, shape_data, start, consts[SWEPT_WORLD], out[0], window, tmax, obj), False


_mesh_walk = make_traversal(sweep_leaf, swept_setup, visit_swept)
_scene_walk = make_instance_walk(_scene_mesh_leaf, _scene_shape_leaf, swept_setup, object_swept_setup, visit_swept)


# ------------------------------------------------------------------ kernels


@jit_inline
def _window(tmin, radius, dx, dy, dz):
    """A cast's per-ray tuple: ``(tmin, radius, ux, uy, uz, length, 1/ux,
    1/uy, 1/uz)``, the direction's length found without overflow (scaled by
    its largest component) and the unit direction's safe reciprocals."""
    largest = max(abs(dx), abs(dy), abs(dz))
    sx, sy, sz = dx / largest, dy / largest, dz / largest
    length = largest * math.sqrt(sx * sx + sy * sy + sz * sz)
    inv = 1.0 / math.sqrt(sx * sx + sy * sy + sz * sz)
    ux, uy, uz = sx * inv, sy * inv, sz * inv
    return tmin, radius, ux, uy, uz, length, safe_reciprocal(ux), safe_reciprocal(uy), safe_reciprocal(uz)


@jit_inline
def _start(record):
    record[CAST_S] = np.inf
    record[CAST_T] = np.inf
    record[CAST_ROW] = -1.0
    record[CAST_OBJECT] = -1.0


@jit_inline
def _finish(record, window, i, ox, oy, oz, directions, rows, t, u, v, point, centre, normal):
    """Ray ``i``'s record into the outputs (-1, inf, NaN on a miss); ``o``
    the ray's world origin. The normal: ``centre - point`` from the relative
    coordinates (no cancellation of a far origin), or the surface's normal
    against the ray where that is too short (:data:`NORMAL_FLOOR`)."""
    rows[i] = np.int32(record[CAST_ROW])
    if record[CAST_OBJECT] < 0.0:
        write_miss(i, t, u, v, point, normal)
        for c in range(3):
            centre[i, c] = np.nan
        return
    tmin, radius, dx, dy, dz, length = _path(window)
    ti = record[CAST_T]
    t[i] = ti
    u[i] = record[CAST_U]
    v[i] = record[CAST_V]
    s = record[CAST_S]
    px, py, pz = record[CAST_POINT], record[CAST_POINT + 1], record[CAST_POINT + 2]
    point[i, 0] = ox + px
    point[i, 1] = oy + py
    point[i, 2] = oz + pz
    centre[i, 0] = ox + ti * directions[i, 0]
    centre[i, 1] = oy + ti * directions[i, 1]
    centre[i, 2] = oz + ti * directions[i, 2]
    nx, ny, nz = s * dx - px, s * dy - py, s * dz - pz
    away = math.sqrt(nx * nx + ny * ny + nz * nz)
    if not (radius > 0.0 and away > NORMAL_FLOOR * radius):
        nx, ny, nz = record[CAST_NORMAL], record[CAST_NORMAL + 1], record[CAST_NORMAL + 2]
        away = math.sqrt(nx * nx + ny * ny + nz * nz)
        if not away > 0.0:
            nx, ny, nz, away = -dx, -dy, -dz, 1.0
    normal[i, 0] = nx / away
    normal[i, 1] = ny / away
    normal[i, 2] = nz / away


@jit
def _mesh_block(nodes, links, tris, offset, origins, directions, radius, tmin, tmax, start, end, rows, t, u, v,
                point, centre, normal):
    nodes, links, tris, offset, origins, directions, radius = borrowed(
        (nodes, links, tris, offset, origins, directions, radius))
    stack_first, stack_count, stack_t = new_stack()
    record = _cast_record()
    out = (record,)
    for i in range(start, end):
        _start(record)
        window = _window(tmin, radius[i], directions[i, 0], directions[i, 1], directions[i, 2])
        ox = origins[i, 0] - offset[0]
        oy = origins[i, 1] - offset[1]
        oz = origins[i, 2] - offset[2]
        _mesh_walk(nodes, links, tris, 0, ox, oy, oz, directions[i, 0], directions[i, 1], directions[i, 2], window,
                   tmax, i, out, stack_first, stack_count, stack_t)
        _finish(record, window, i, origins[i, 0], origins[i, 1], origins[i, 2], directions, rows, t, u, v, point,
                centre, normal)


@jit
def mesh_sphere_casts_serial(nodes, links, tris, offset, origins, directions, radius, tmin, tmax, rows, t, u, v,
                             point, centre, normal):
    """:func:`mesh_sphere_casts` on the calling thread, for a few casts."""
    # A typed 0: a literal 0 would give the block another signature, and a
    # second compilation, from the parallel kernel's.
    _mesh_block(nodes, links, tris, offset, origins, directions, radius, tmin, tmax, np.int64(0), origins.shape[0],
                rows, t, u, v, point, centre, normal)


@jit_parallel
def mesh_sphere_casts(nodes, links, tris, offset, origins, directions, radius, tmin, tmax, rows, t, u, v, point,
                      centre, normal):
    """First contact of each of N swept spheres with one mesh.

    ``nodes``, ``links``, ``tris`` are the flat arrays of the mesh's tree,
    ``offset`` its centring offset; ``radius (N,)``; ``tmax`` finite (at
    most ``FAR``). Writes per cast the packed triangle row (-1: no contact),
    ``t`` (inf), barycentrics (NaN), the contact point, the centre and the
    unit normal (NaN) in the world.
    """
    n = origins.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _mesh_block(nodes, links, tris, offset, origins, directions, radius, tmin, tmax, b * RAY_BLOCK,
                    min(n, (b + 1) * RAY_BLOCK), rows, t, u, v, point, centre, normal)


@jit
def _scene_block(scene, origins, directions, radius, tmin, tmax, start, end, objects, rows, t, u, v, point, centre,
                 normal):
    scene, origins, directions, radius = borrowed((scene, origins, directions, radius))
    stack_first, stack_count, stack_t = new_stack()
    record = _cast_record()
    out = (record,)
    for i in range(start, end):
        _start(record)
        window = _window(tmin, radius[i], directions[i, 0], directions[i, 1], directions[i, 2])
        _scene_walk(scene, origins, directions, window, tmax, i, out, stack_first, stack_count, stack_t)
        objects[i] = np.int64(record[CAST_OBJECT])
        _finish(record, window, i, origins[i, 0], origins[i, 1], origins[i, 2], directions, rows, t, u, v, point,
                centre, normal)


@jit
def scene_sphere_casts_serial(scene, origins, directions, radius, tmin, tmax, objects, rows, t, u, v, point, centre,
                              normal):
    """:func:`scene_sphere_casts` on the calling thread, for a few casts."""
    _scene_block(scene, origins, directions, radius, tmin, tmax, np.int64(0), origins.shape[0], objects, rows, t, u,
                 v, point, centre, normal)


@jit_parallel
def scene_sphere_casts(scene, origins, directions, radius, tmin, tmax, objects, rows, t, u, v, point, centre,
                       normal):
    """First contact of each of N swept spheres in a scene (``scene`` a
    ``bvh.queries.scene_rays.SceneArrays``). Writes per cast the object (-1: no
    contact), the packed triangle row (-1 for a shape), and what
    :func:`mesh_sphere_casts` writes, in the world."""
    n = origins.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _scene_block(scene, origins, directions, radius, tmin, tmax, b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK),
                     objects, rows, t, u, v, point, centre, normal)
