"""Overlap queries: which triangles and objects have a point in common with a
closed solid (a sphere, a box, an oriented box, a capsule, a convex region).

An overlap query walks the same four-wide trees as a ray
(:mod:`bvh.walk.traversal`), with another leaf test and another node bound: a
child is entered when its box may touch the solid (a conservative test, key
0.0, so the order of the visit is irrelevant) and a leaf collects every
triangle the solid touches. One shape per call: the walk is serial, and the
work of a call is the triangles it finds.

The solid is kept as a *record* (``Q_*`` fields, :mod:`bvh.queries.solids`,
which holds the exact tests of a solid against a triangle and against a
sphere object's surface) in the space of the tree it is tested in. The trees
leave zero-area faces out (they are never hit, see
:func:`bvh.builders.triangles.prepare_triangles`), so overlaps never report
them.

Instances: the solid is given in the world. Half-spaces map exactly into an
object's space (the map of :func:`bvh.queries.frustum.planes_to_object_space`), so
boxes and convex regions are tested in object space, exactly, on the tree's
own triangles. A sphere or capsule becomes an ellipsoid or an "ellipsoidal
capsule" under a non-uniform scale or a shear: its object-space bound is the
capsule of radius ``r sigma_max`` (``sigma_max`` of the world-to-object
map, bounded as :func:`bvh.walk.space.object_point_setup` bounds it), and the
leaves map their triangles to the world and test them there exactly, as
:mod:`bvh.queries.closest_point` measures world distances.

Shape objects are surfaces, as for rays and closest points: a box is its
twelve triangles, a quad its two, a polygon the fan of its outline when the
outline is convex (a non-convex polygon is refused, not skipped: see
:data:`NOT_CONVEX`), each tested as a mesh triangle. A sphere object's
surface is met when the solid reaches both its inside and its outside
(:func:`bvh.queries.solids.ball_meets_region`,
:func:`bvh.queries.solids.ellipsoid_meets_round`).
"""

import math

import numpy as np

from .._jit import jit, jit_inline
from .frustum import check_planes
from .ray_triangle import triangle_edges
from .solids import (Q_A, Q_B, Q_BOX, Q_CENTER, Q_CONVEX, Q_COUNT, Q_HALF, Q_HEAD, Q_KIND, Q_NORMALS, Q_R, Q_RB,
                     Q_REACH, Q_ROUND, ball_meets_region, box_planes, complete_record, convex_outline,
                     ellipsoid_meets_round, make_scratch, triangle_overlaps)
from ..walk.nodes import CHILD_COUNT, CHILD_FIRST, MAX_X, MAX_Y, MAX_Z, MIN_X, MIN_Y, MIN_Z, ROW, WIDTH
from ..primitives import _validate as check
from ..shapes import BOX, QUAD, SPHERE, polygon_point, polygon_row
from ..walk.space import (MAP_00, MAP_01, MAP_02, MAP_03, MAP_10, MAP_11, MAP_12, MAP_13, MAP_20, MAP_21, MAP_22,
                          MAP_23, POINT_SCALE, SOLID, object_point_setup, point_setup, to_world)
from ..walk.traversal import make_instance_walk, make_traversal, new_stack
from ..validation import real_array

# ------------------------------------------------------------------ records

#: ``state[1]`` after a scene walk that reached a polygon object whose outline
#: is not convex: the object's id plus one (0: none).
NOT_CONVEX = 1

#: Tolerance on the rows of an oriented box's ``axes``: ``|A A^T - I|``.
ORTHONORMAL_TOLERANCE = 1.0e-6

KINDS = {"sphere": ("center", "radius"), "aabb": ("min", "max"), "obb": ("center", "axes", "half_size"),
         "capsule": ("a", "b", "radius"), "convex": ("planes",)}


def _vector(name: str, value) -> np.ndarray:
    array = check.real_array(name, value)
    if array.shape != (3,):
        raise ValueError(f"{name} must be 3 numbers (x, y, z), got an array of shape {array.shape}")
    if not (np.isfinite(array).all() and np.abs(array).max() <= check.MAX_COORDINATE):
        raise ValueError(f"{name} must be finite and within +-{check.MAX_COORDINATE:g}, got {array.tolist()}")
    return array


def _radius(value) -> float:
    array = real_array("radius", value)
    if array.shape != ():
        raise ValueError(f"radius must be a single number, got an array of shape {array.shape}")
    r = float(array)
    if not (math.isfinite(r) and abs(r) <= check.MAX_COORDINATE):
        raise ValueError(f"radius must be finite, got {r!r}")
    if r < 0.0:
        raise ValueError(f"radius must be >= 0, got {r!r}")
    return r


def shape_record(shape) -> np.ndarray:
    """Validate an overlap shape and make its world record.

    Parameters
    ----------
    shape : dict
        ``{"kind": "sphere", "center": (3,), "radius": r}``;
        ``{"kind": "aabb", "min": (3,), "max": (3,)}``;
        ``{"kind": "obb", "center": (3,), "axes": (3, 3), "half_size": (3,)}``
        (rows of ``axes`` orthonormal within :data:`ORTHONORMAL_TOLERANCE`;
        the box is ``|axes[k] . (x - center)| <= half_size[k]``);
        ``{"kind": "capsule", "a": (3,), "b": (3,), "radius": r}``;
        ``{"kind": "convex", "planes": (P, 4)}``, inside where ``n . x + d >=
        0`` for every row (any non-zero normal length; ``P = 0`` is all of
        space), as in :mod:`bvh.queries.frustum`. Radii and sizes may be 0.

    Returns
    -------
    (Q_HEAD + 4 P,) float64
        The record (module docstring), derived fields filled in.

    Raises
    ------
    ValueError
        Saying what is wrong: not a dict, an unknown kind, a missing or
        unknown key, a wrong shape, NaN or inf, a negative radius or size,
        ``min > max``, axes that are not orthonormal, a zero plane normal.
    """
    if not isinstance(shape, dict):
        raise ValueError("an overlap shape must be a dict with a 'kind' and its parameters, "
                         f"got {type(shape).__name__}")
    if "kind" not in shape:
        raise ValueError(f"an overlap shape needs a 'kind': one of {', '.join(KINDS)}")
    kind = shape["kind"]
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"unknown overlap shape kind {kind!r}: the kinds are {', '.join(KINDS)}")
    keys = KINDS[kind]
    missing = [key for key in keys if key not in shape]
    if missing:
        raise ValueError(f"a {kind} needs {', '.join(repr(k) for k in keys)}; {missing[0]!r} is missing")
    extra = sorted(str(key) for key in shape if key != "kind" and key not in keys)
    if extra:
        raise ValueError(f"a {kind} takes {', '.join(repr(k) for k in keys)}; {extra[0]!r} is not one of them")
    if kind == "convex":
        planes = check_planes(shape["planes"])
        record = np.zeros(Q_HEAD + 4 * planes.shape[0])
        record[Q_KIND] = Q_CONVEX
        record[Q_COUNT] = planes.shape[0]
        record[Q_HEAD:] = planes.reshape(-1)
        return record
    record = np.zeros(Q_HEAD)
    if kind in ("sphere", "capsule"):
        if kind == "sphere":
            a = b = _vector("center", shape["center"])
        else:
            a = _vector("a", shape["a"])
            b = _vector("b", shape["b"])
        r = _radius(shape["radius"])
        record[Q_KIND] = Q_ROUND
        record[Q_A:Q_A + 3] = a
        record[Q_B:Q_B + 3] = b
        record[Q_R] = record[Q_RB] = r
        return record
    if kind == "aabb":
        lo = _vector("min", shape["min"])
        hi = _vector("max", shape["max"])
        inverted = np.flatnonzero(lo > hi)
        if inverted.size:
            k = int(inverted[0])
            raise ValueError(f"min must be <= max on every axis, but min[{k}] = {float(lo[k])!r} "
                             f"> max[{k}] = {float(hi[k])!r}")
        center, normals, half = (lo + hi) * 0.5, np.eye(3), (hi - lo) * 0.5
    else:
        center = _vector("center", shape["center"])
        normals = check.real_array("axes", shape["axes"])
        if normals.shape != (3, 3):
            raise ValueError(f"axes must be 3 rows of 3 numbers, got an array of shape {normals.shape}")
        if not np.isfinite(normals).all():
            raise ValueError("axes must be finite, got NaN or inf")
        error = float(np.abs(normals @ normals.T - np.eye(3)).max())
        if not error <= ORTHONORMAL_TOLERANCE:
            raise ValueError(f"axes must be orthonormal rows (a rotation, or a rotation and a mirror): "
                             f"|axes axes^T - I| is {error:.3g}, more than {ORTHONORMAL_TOLERANCE:g}")
        half = _vector("half_size", shape["half_size"])
        if (half < 0.0).any():
            raise ValueError(f"half_size must be >= 0 on every axis, got {half.tolist()}")
    record[Q_KIND] = Q_BOX
    record[Q_CENTER:Q_CENTER + 3] = center
    record[Q_NORMALS:Q_NORMALS + 9] = np.asarray(normals, np.float64).reshape(-1)
    record[Q_HALF:Q_HALF + 3] = half
    complete_record(record)
    return record


def translated(record: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """The record moved by ``-offset`` (a mesh's centring offset): the same
    solid in the mesh tree's space."""
    moved = record.copy()
    kind = int(record[Q_KIND])
    if kind == Q_ROUND:
        moved[Q_A:Q_A + 3] -= offset
        moved[Q_B:Q_B + 3] -= offset
    elif kind == Q_BOX:
        moved[Q_CENTER:Q_CENTER + 3] -= offset
    else:
        planes = moved[Q_HEAD:].reshape(-1, 4)
        planes[:, 3] += planes[:, :3] @ offset
    return moved


@jit
def _local_record(world, inverse, o, c):
    """The world record in object ``o``'s tree space (``inverse (O, 3, 4)``
    world to tree; ``c`` the point layout of
    :func:`bvh.walk.space.object_point_setup`: ``f`` its tree-to-world map,
    ``scale`` its bound ``1 / sigma_max^2``).

    Half-spaces: ``n . (F x + t) + d >= 0`` is ``(F^T n) . x + (n . t + d)
    >= 0`` (:func:`bvh.queries.frustum.planes_to_object_space`). Round: the ends mapped, the bound
    radius ``r sigma_max`` (with a margin far above rounding); the exact test
    stays in the world."""
    scale = c[POINT_SCALE]
    f00, f01, f02, f03 = c[MAP_00], c[MAP_01], c[MAP_02], c[MAP_03]
    f10, f11, f12, f13 = c[MAP_10], c[MAP_11], c[MAP_12], c[MAP_13]
    f20, f21, f22, f23 = c[MAP_20], c[MAP_21], c[MAP_22], c[MAP_23]
    local = np.zeros_like(world)
    kind = world[Q_KIND]
    local[Q_KIND] = kind
    if kind == Q_ROUND:
        for end in (Q_A, Q_B):
            x, y, z = world[end], world[end + 1], world[end + 2]
            for r in range(3):
                local[end + r] = inverse[o, r, 0] * x + inverse[o, r, 1] * y + inverse[o, r, 2] * z + inverse[o, r, 3]
        local[Q_R] = world[Q_R]
        local[Q_RB] = world[Q_R] * math.sqrt(1.0 / scale) * (1.0 + 1.0e-9)
        return local
    if kind == Q_BOX:
        x, y, z = world[Q_CENTER], world[Q_CENTER + 1], world[Q_CENTER + 2]
        for r in range(3):
            local[Q_CENTER + r] = inverse[o, r, 0] * x + inverse[o, r, 1] * y + inverse[o, r, 2] * z + inverse[o, r, 3]
        for k in range(3):
            nx, ny, nz = world[Q_NORMALS + 3 * k], world[Q_NORMALS + 3 * k + 1], world[Q_NORMALS + 3 * k + 2]
            local[Q_NORMALS + 3 * k] = f00 * nx + f10 * ny + f20 * nz
            local[Q_NORMALS + 3 * k + 1] = f01 * nx + f11 * ny + f21 * nz
            local[Q_NORMALS + 3 * k + 2] = f02 * nx + f12 * ny + f22 * nz
            local[Q_HALF + k] = world[Q_HALF + k]
        complete_record(local)
        return local
    count = int(world[Q_COUNT])
    local[Q_COUNT] = count
    for p in range(count):
        base = Q_HEAD + 4 * p
        nx, ny, nz, d = world[base], world[base + 1], world[base + 2], world[base + 3]
        lx = f00 * nx + f10 * ny + f20 * nz
        ly = f01 * nx + f11 * ny + f21 * nz
        lz = f02 * nx + f12 * ny + f22 * nz
        ld = nx * f03 + ny * f13 + nz * f23 + d
        inv_len = 1.0 / math.sqrt(lx * lx + ly * ly + lz * lz)
        local[base] = lx * inv_len
        local[base + 1] = ly * inv_len
        local[base + 2] = lz * inv_len
        local[base + 3] = ld * inv_len
    return local


# --------------------------------------------------------------- node bound


@jit_inline
def _box_may_touch(record, kind, lx, ly, lz, hx, hy, hz):
    """Whether the node box ``lo .. hi`` may touch the record's solid:
    conservative (a touching box always passes), in float64 from the padded
    float32 planes, so rounding never excludes a box."""
    if kind == Q_ROUND:
        r = record[Q_RB]
        ax, ay, az = record[Q_A], record[Q_A + 1], record[Q_A + 2]
        dx, dy, dz = record[Q_B] - ax, record[Q_B + 1] - ay, record[Q_B + 2] - az
        if dx == 0.0 and dy == 0.0 and dz == 0.0:
            gx = max(max(lx - ax, ax - hx), 0.0)
            gy = max(max(ly - ay, ay - hy), 0.0)
            gz = max(max(lz - az, az - hz), 0.0)
            return gx * gx + gy * gy + gz * gz <= r * r
        # The segment against the box grown by r on every side (a superset
        # of the box's points within r): the slab test on t in [0, 1].
        t0 = 0.0
        t1 = 1.0
        for o, d, lo, hi in ((ax, dx, lx, hx), (ay, dy, ly, hy), (az, dz, lz, hz)):
            if d == 0.0:
                if o < lo - r or o > hi + r:
                    return False
            else:
                ta = (lo - r - o) / d
                tb = (hi + r - o) / d
                t0 = max(t0, min(ta, tb))
                t1 = min(t1, max(ta, tb))
        return t0 <= t1
    if kind == Q_BOX:
        # Separating axes: the node's three and the box's three face normals
        # (the nine edge pairs are left to the leaves).
        mx, my, mz = 0.5 * (lx + hx), 0.5 * (ly + hy), 0.5 * (lz + hz)
        gx, gy, gz = 0.5 * (hx - lx), 0.5 * (hy - ly), 0.5 * (hz - lz)
        cx = record[Q_CENTER] - mx
        cy = record[Q_CENTER + 1] - my
        cz = record[Q_CENTER + 2] - mz
        if (abs(cx) > gx + record[Q_REACH] or abs(cy) > gy + record[Q_REACH + 1]
                or abs(cz) > gz + record[Q_REACH + 2]):
            return False
        for k in range(3):
            nx, ny, nz = record[Q_NORMALS + 3 * k], record[Q_NORMALS + 3 * k + 1], record[Q_NORMALS + 3 * k + 2]
            if abs(nx * cx + ny * cy + nz * cz) > gx * abs(nx) + gy * abs(ny) + gz * abs(nz) + record[Q_HALF + k]:
                return False
        return True
    # Each plane against the box's corner farthest along its normal.
    for p in range(int(record[Q_COUNT])):
        base = Q_HEAD + 4 * p
        nx, ny, nz = record[base], record[base + 1], record[base + 2]
        far = (record[base + 3] + (nx * hx if nx >= 0.0 else nx * lx) + (ny * hy if ny >= 0.0 else ny * ly)
               + (nz * hz if nz >= 0.0 else nz * lz))
        if far < 0.0:
            return False
    return True


@jit_inline
def visit_overlap(nodes, links, consts, tmin, tmax, node, sp, stack_first, stack_count, stack_t, ray, out):
    """The node bound of an overlap query (``consts[SOLID]`` is the record
    in the tree's space): go to the first child that may touch the solid and
    push the others, key 0.0 (the walk's ``tmax`` is 1.0, so every pushed
    child is visited). Returns ``(sp, first, count, found)`` as
    :func:`bvh.walk.traversal.visit_node` does."""
    record = consts[SOLID]
    kind = record[Q_KIND]
    base = node * ROW
    first = np.int32(0)
    count = np.int32(0)
    found = False
    for slot in range(WIDTH):
        lx = np.float64(nodes[base + MIN_X + slot])
        hx = np.float64(nodes[base + MAX_X + slot])
        if lx > hx:
            continue
        if _box_may_touch(record, kind, lx, np.float64(nodes[base + MIN_Y + slot]),
                          np.float64(nodes[base + MIN_Z + slot]), hx, np.float64(nodes[base + MAX_Y + slot]),
                          np.float64(nodes[base + MAX_Z + slot])):
            child_first = links[base + CHILD_FIRST + slot]
            child_count = links[base + CHILD_COUNT + slot]
            if found:
                stack_first[sp] = child_first
                stack_count[sp] = child_count
                stack_t[sp] = 0.0
                sp += 1
            else:
                first = child_first
                count = child_count
                found = True
    return sp, first, count, found


@jit_inline
def _with_solid(record, c):
    """The overlap layout (:mod:`bvh.walk.space`): the point layout ``c``
    with ``record`` in ``SOLID`` and zeros in the other five leading
    slots, which no overlap test reads."""
    return (record, 0.0, 0.0, 0.0, 0.0, 0.0) + c[POINT_SCALE:]


@jit_inline
def overlap_setup(record, x1, x2, x3, x4, x5):
    """The query's constants in the world (or a mesh tree's space, the
    record already moved there), with the identity as the tree-to-world
    map. Takes six values as every setup does; the record is the first, the
    others are unused."""
    return _with_solid(record, point_setup(0.0, 0.0, 0.0, 0.0, 0.0, 0.0))


@jit_inline
def object_overlap_setup(inverse, o, record, x1, x2, x3, x4, x5):
    """:func:`overlap_setup` in object ``o``'s tree space: the record mapped
    there (:func:`_local_record`) and the tree-to-world map of
    :func:`bvh.walk.space.object_point_setup`."""
    c = object_point_setup(inverse, o, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    return _with_solid(_local_record(record, inverse, o, c), c)


# --------------------------------------------------------------- leaf tests


@jit_inline
def _append_row(rows, state, row):
    """Keep one found row; past the buffer's end only count it (the caller
    runs the walk again with room for ``state[0]``)."""
    n = state[0]
    if n < rows.shape[0]:
        rows[n] = row
    state[0] = n + 1


@jit_inline
def _append(rows, objects, state, row, obj):
    """:func:`_append_row` of a ``(row, obj)`` pair."""
    n = state[0]
    if n < rows.shape[0]:
        rows[n] = row
        objects[n] = obj
    state[0] = n + 1


@jit_inline
def _mesh_leaf(tris, first, count, record, oy, oz, dx, dy, dz, tmin, tmax, ray, out):
    """Collect the triangles of a leaf that touch the solid; ``record`` is
    the first of the query's constants (:func:`overlap_setup`), ``out`` is
    ``(scratch, rows, state)``."""
    scratch, rows, state = out
    for k in range(first, first + count):
        ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z = triangle_edges(tris, k)
        if triangle_overlaps(record, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, scratch):
            _append_row(rows, state, k)
    return tmax, False


@jit_inline
def _object_triangle(consts, world, scratch, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z):
    """An object-space triangle against the query: in object space for
    half-spaces (``consts[SOLID]``, exact), in the world for a sphere or
    capsule (the triangle mapped by ``consts``' tree-to-world map)."""
    local = consts[SOLID]
    if local[Q_KIND] != Q_ROUND:
        return triangle_overlaps(local, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, scratch)
    wax, way, waz = to_world(consts, ax, ay, az, 1.0)
    w1x, w1y, w1z = to_world(consts, e1x, e1y, e1z, 0.0)
    w2x, w2y, w2z = to_world(consts, e2x, e2y, e2z, 0.0)
    return triangle_overlaps(world, wax, way, waz, w1x, w1y, w1z, w2x, w2y, w2z, scratch)


@jit_inline
def _scene_mesh_leaf(tris, first, count, consts, tmin, tmax, ray, out, obj):
    world, scratch, rows, objects, state = out
    for k in range(first, first + count):
        ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z = triangle_edges(tris, k)
        if _object_triangle(consts, world, scratch, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z):
            _append(rows, objects, state, k, obj)
    return tmax, False


# ------------------------------------------------------------ shape objects


@jit
def _shape_overlaps(kind, shape_data, start, consts, world, scratch):
    """Whether the query meets shape object's surface: 1 yes, 0 no, -1 a
    polygon whose outline is not convex (refused by the caller). Out of
    line, as :func:`bvh.queries.closest_point._shape_nearest` is, for compile time."""
    local = consts[SOLID]
    if kind == SPHERE:
        radius = shape_data[start]
        if local[Q_KIND] == Q_ROUND:
            return 1 if ellipsoid_meets_round(consts, world, radius) else 0
        if local[Q_KIND] == Q_BOX:
            planes = box_planes(local)
        else:
            count = int(local[Q_COUNT])
            planes = local[Q_HEAD:Q_HEAD + 4 * count].reshape((count, 4)).copy()
        return 1 if ball_meets_region(planes, radius) else 0
    if kind == BOX:
        hx, hy, hz = shape_data[start], shape_data[start + 1], shape_data[start + 2]
        for axis in range(3):
            for sign in (-1.0, 1.0):
                # The face's centre c and half-vectors e, f: two triangles.
                cx = sign * hx if axis == 0 else 0.0
                cy = sign * hy if axis == 1 else 0.0
                cz = sign * hz if axis == 2 else 0.0
                ex = hx if axis == 1 else 0.0
                ey = hy if axis == 2 else 0.0
                ez = hz if axis == 0 else 0.0
                fx = hx if axis == 2 else 0.0
                fy = hy if axis == 0 else 0.0
                fz = hz if axis == 1 else 0.0
                if _object_triangle(consts, world, scratch, cx - ex - fx, cy - ey - fy, cz - ez - fz, 2.0 * ex,
                                    2.0 * ey, 2.0 * ez, 2.0 * fx, 2.0 * fy, 2.0 * fz):
                    return 1
                if _object_triangle(consts, world, scratch, cx + ex + fx, cy + ey + fy, cz + ez + fz, -2.0 * ex,
                                    -2.0 * ey, -2.0 * ez, -2.0 * fx, -2.0 * fy, -2.0 * fz):
                    return 1
        return 0
    if kind == QUAD:
        hx, hy = shape_data[start], shape_data[start + 1]
        if _object_triangle(consts, world, scratch, -hx, -hy, 0.0, 2.0 * hx, 0.0, 0.0, 0.0, 2.0 * hy, 0.0):
            return 1
        if _object_triangle(consts, world, scratch, hx, hy, 0.0, -2.0 * hx, 0.0, 0.0, 0.0, -2.0 * hy, 0.0):
            return 1
        return 0
    qx, qy, qz, nx, ny, nz, axis, xs, ys = polygon_row(shape_data, start)
    if not convex_outline(xs, ys):
        return -1
    ax, ay, az = polygon_point(axis, xs[0], ys[0], qx, qy, qz, nx, ny, nz)
    for k in range(1, xs.shape[0] - 1):
        bx, by, bz = polygon_point(axis, xs[k], ys[k], qx, qy, qz, nx, ny, nz)
        cx, cy, cz = polygon_point(axis, xs[k + 1], ys[k + 1], qx, qy, qz, nx, ny, nz)
        if _object_triangle(consts, world, scratch, ax, ay, az, bx - ax, by - ay, bz - az, cx - ax, cy - ay,
                            cz - az):
            return 1
    return 0


@jit_inline
def _scene_shape_leaf(kind, shape_data, start, consts, tmin, tmax, ray, out, obj):
    world, scratch, rows, objects, state = out
    found = _shape_overlaps(kind, shape_data, start, consts, world, scratch)
    if found > 0:
        _append(rows, objects, state, -1, obj)
    elif found < 0 and state[NOT_CONVEX] == 0:
        state[NOT_CONVEX] = obj + 1
    return tmax, False


# ------------------------------------------------------------------ kernels

_mesh_walk = make_traversal(_mesh_leaf, overlap_setup, visit_overlap)
_scene_walk = make_instance_walk(_scene_mesh_leaf, _scene_shape_leaf, overlap_setup, object_overlap_setup,
                                 visit_overlap)


@jit
def mesh_overlap(nodes, links, tris, record, rows, state):
    """Packed triangle rows of one mesh that touch the solid of ``record``
    (in the tree's space: :func:`translated`), in the order found.

    ``rows (C,) int32`` receives up to ``C`` of them; ``state (2,) int64``
    gets their number in ``state[0]`` (more than ``C``: run again with room
    for all). One query, on the calling thread."""
    stack_first, stack_count, stack_t = new_stack()
    state[0] = 0
    state[NOT_CONVEX] = 0
    out = (make_scratch(record), rows, state)
    _mesh_walk(nodes, links, tris, 0, record, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0, out, stack_first, stack_count,
               stack_t)


@jit
def scene_overlap(scene, query, world, rows, objects, state):
    """``(row, object)`` pairs of a scene (``scene`` a
    ``bvh.queries.scene_rays.SceneArrays``) that touch the solid of the world
    record ``world``: packed triangle rows of mesh objects, -1 for a shape
    object met. ``query (1, 3, K)`` is the record thrice, where the walk
    reads a query's six values (``origins[0, :3]``, ``directions[0, :3]``).

    ``rows``, ``objects (C,) int32`` and ``state`` as in
    :func:`mesh_overlap`; ``state[NOT_CONVEX]`` is one more than the id of
    a polygon object reached whose outline is not convex (0: none)."""
    stack_first, stack_count, stack_t = new_stack()
    state[0] = 0
    state[NOT_CONVEX] = 0
    out = (world, make_scratch(world), rows, objects, state)
    _scene_walk(scene, query, query, 0.0, 1.0, 0, out, stack_first, stack_count, stack_t)


#: Room for this many finds in a first walk; a query that finds more walks again.
FIRST_CAPACITY = 4096


def mesh_rows(nodes, links, tris, record) -> np.ndarray:
    """:func:`mesh_overlap` with room for every find: ``(K,) int32`` rows."""
    state = np.zeros(2, np.int64)
    rows = np.empty(min(FIRST_CAPACITY, tris.shape[0] // 9), np.int32)
    mesh_overlap(nodes, links, tris, record, rows, state)
    if state[0] > rows.shape[0]:
        rows = np.empty(int(state[0]), np.int32)
        mesh_overlap(nodes, links, tris, record, rows, state)
    return rows[:state[0]]


def scene_pairs(scene, world) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`scene_overlap` with room for every find: ``(rows, objects,
    not_convex)``, ``(K,) int32`` each and the first non-convex polygon
    object reached (-1: none)."""
    query = np.ascontiguousarray(np.broadcast_to(world, (1, 3, world.shape[0])))
    state = np.zeros(2, np.int64)
    rows = np.empty(FIRST_CAPACITY, np.int32)
    objects = np.empty(FIRST_CAPACITY, np.int32)
    scene_overlap(scene, query, world, rows, objects, state)
    if state[0] > rows.shape[0] and state[NOT_CONVEX] == 0:
        rows = np.empty(int(state[0]), np.int32)
        objects = np.empty(int(state[0]), np.int32)
        scene_overlap(scene, query, world, rows, objects, state)
    found = int(min(state[0], rows.shape[0]))
    return rows[:found], objects[:found], int(state[NOT_CONVEX]) - 1


__all__ = ["KINDS", "complete_record", "mesh_rows", "scene_pairs", "shape_record", "translated",
           "triangle_overlaps"]
