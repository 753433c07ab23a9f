"""Closest point on a surface: the leaf tests and batch kernels of point queries.

A point query walks the same four-wide trees as a ray (:mod:`bvh.walk.traversal`),
with another bound: children are keyed by their squared distance from the
point (:func:`bvh.walk.traversal.visit_point`) and visited nearest first, and a
child farther than the nearest surface found so far is pruned (branch and
bound). The leaf test is the point/triangle region test of Ericson
(*Real-Time Collision Detection*, 2005, §5.1.5) in float64, on the exact
float64 edges of the float32 triangles, as the ray tests use.

Distances are world distances. In a scene, the walk carries the point into
each object's space to descend its mesh's tree with a lower bound on world
distances (:func:`bvh.walk.space.object_point_setup`), and the leaves map
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
from ..shapes import BOX, QUAD, SPHERE, polygon_point, polygon_row
from ..walk.space import (MAP_03, MAP_13, MAP_23, POINT_X, POINT_Y, POINT_Z, nearest_on_ellipsoid, normal_to_world,
                          object_point_setup, point_setup, similarity_scale2, to_object, to_world, world_point)
from ..walk.traversal import make_instance_walk, make_traversal, new_stack, visit_point

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
def _world_triangle(consts, record, px, py, pz, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, row, obj, tmax):
    """Measure the object-space triangle ``a, e1, e2`` in the world; keep it
    if nearer. Returns ``(limit, kept)``."""
    wax, way, waz = to_world(consts, ax, ay, az, 1.0)
    w1x, w1y, w1z = to_world(consts, e1x, e1y, e1z, 0.0)
    w2x, w2y, w2z = to_world(consts, e2x, e2y, e2z, 0.0)
    d2, u, v = closest_on_triangle(px, py, pz, wax, way, waz, w1x, w1y, w1z, w2x, w2y, w2z)
    if d2 <= tmax:
        return _keep_nearer(record, d2, u, v, row, obj, tmax, wax + u * w1x + v * w2x, way + u * w1y + v * w2y,
                            waz + u * w1z + v * w2z)
    return tmax, False


@jit_inline
def _scene_mesh_leaf(tris, first, count, consts, tmin, tmax, ray, out, obj):
    record = out[0]
    px, py, pz = world_point(consts)
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

    Under a map that keeps shapes it is a sphere, and the nearest point is
    along the line from its centre. Otherwise it is an ellipsoid
    (:func:`bvh.walk.space.nearest_on_ellipsoid`, out of line)."""
    scale2 = similarity_scale2(consts)
    if scale2 >= 0.0:
        cx, cy, cz = consts[MAP_03], consts[MAP_13], consts[MAP_23]
        world_radius = radius * math.sqrt(scale2)
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
    d2, qx, qy, qz, nx, ny, nz = nearest_on_ellipsoid(consts, radius, px, py, pz)
    if d2 <= tmax:
        tmax, kept = _keep_nearer(record, d2, 0.0, 0.0, -1, obj, tmax, qx, qy, qz)
        if kept:
            record[NEAR_NORMAL] = nx
            record[NEAR_NORMAL + 1] = ny
            record[NEAR_NORMAL + 2] = nz
    return tmax


@jit_inline
def _polygon(consts, record, shape_data, start, px, py, pz, obj, tmax):
    """A planar polygon (:mod:`bvh.shapes`' row): its plane if the foot of
    the perpendicular is inside the outline, else the nearest outline edge,
    both in the world."""
    qx, qy, qz, nx, ny, nz, axis, xs, ys = polygon_row(shape_data, start)
    m = xs.shape[0]
    # The world plane: a point and a normal (by the inverse transpose).
    cx, cy, cz = to_world(consts, qx, qy, qz, 1.0)
    wnx, wny, wnz = normal_to_world(consts, nx, ny, nz)
    inv_len = 1.0 / math.sqrt(wnx * wnx + wny * wny + wnz * wnz)
    wnx, wny, wnz = wnx * inv_len, wny * inv_len, wnz * inv_len
    height = (px - cx) * wnx + (py - cy) * wny + (pz - cz) * wnz
    fx, fy, fz = px - height * wnx, py - height * wny, pz - height * wnz
    # The foot in object space: the object point plus the object image of
    # the world step from p to the foot (POINT_X .. is p in object space).
    lfx, lfy, lfz = to_object(consts, fx - px, fy - py, fz - pz)
    lfx, lfy, lfz = lfx + consts[POINT_X], lfy + consts[POINT_Y], lfz + consts[POINT_Z]
    u = lfy if axis == 0 else lfx
    v = lfy if axis == 2 else lfz
    kept = False
    if crossings_inside(u, v, xs, ys):
        if height * height <= tmax:
            tmax, kept = _keep_nearer(record, height * height, 0.0, 0.0, -1, obj, tmax, fx, fy, fz)
    else:
        for k in range(m):
            j = k + 1 if k + 1 < m else 0
            ax, ay, az = polygon_point(axis, xs[k], ys[k], qx, qy, qz, nx, ny, nz)
            bx, by, bz = polygon_point(axis, xs[j], ys[j], qx, qy, qz, nx, ny, nz)
            wax, way, waz = to_world(consts, ax, ay, az, 1.0)
            wex, wey, wez = to_world(consts, bx - ax, by - ay, bz - az, 0.0)
            d2, s = _segment(px, py, pz, wax, way, waz, wex, wey, wez)
            if d2 <= tmax:
                tmax, kept_edge = _keep_nearer(record, d2, 0.0, 0.0, -1, obj, tmax, wax + s * wex, way + s * wey,
                                               waz + s * wez)
                kept = kept or kept_edge
    if kept:
        _shape_normal(record, wnx, wny, wnz)
    return tmax


@jit_inline
def _world_normal(consts, record, nx, ny, nz):
    wx, wy, wz = normal_to_world(consts, nx, ny, nz)
    _shape_normal(record, wx, wy, wz)


@jit_inline
def _scene_shape_leaf(kind, shape_data, start, consts, tmin, tmax, ray, out, obj):
    return _shape_nearest(kind, shape_data, start, consts, out[0], obj, tmax), False


@jit
def _shape_nearest(kind, shape_data, start, consts, record, obj, tmax):
    """Keep the nearest point of a shape object if nearer; returns the limit.
    Out of line, and its triangles measured by one out-of-line function:
    inlined into the walk, the box's twelve triangles made the scene kernel
    take minutes to compile."""
    px, py, pz = world_point(consts)
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
    (``bvh.queries.point_order.coherent_order``), each answer bounding the next
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
            _scene_walk(scene, points, points, 0.0, bound, i, out, stack_first, stack_count, stack_t)
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
    (``scene`` a ``bvh.queries.scene_rays.SceneArrays``), answered in ``order``
    as :func:`mesh_closest_points` does. Writes per point the object (-1:
    nothing within ``limit``, a squared world distance), the packed triangle
    row (-1 for a shape), squared distance, barycentrics, the world point
    and, for a shape, its world normal (NaN for meshes)."""
    n = points.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _scene_block(scene, points, limit, order, b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK), objects, rows, d2, u, v,
                     nearest, normal)
