"""Overlap queries: which triangles and objects have a point in common with a
closed solid (a sphere, a box, an oriented box, a capsule, a convex region).

An overlap query walks the same four-wide trees as a ray
(:mod:`bvh.walk.traversal`), with another leaf test and another node bound: a
child is entered when its box may touch the solid (a conservative test, key
0.0, so the order of the visit is irrelevant) and a leaf collects every
triangle the solid touches. One shape per call: the walk is serial, and the
work of a call is the triangles it finds.

The solid is kept as a *record*, a flat float64 array (``Q_*`` fields) in the
space of the tree it is tested in, of one of three kinds:

- ``Q_ROUND``: the points within ``r`` of the segment ``a b`` (a sphere when
  ``a == b``, else a capsule). Leaf test: the squared distance from the
  segment to the triangle, at most ``r^2`` (Ericson, *Real-Time Collision
  Detection*, 2005: the point/triangle region test of §5.1.5, which
  :func:`bvh.closest_point.closest_on_triangle` is, and the segment/segment
  distance of §5.1.9), 0 when the segment crosses the triangle.
- ``Q_BOX``: the parallelepiped ``|N_k . (x - c)| <= h_k`` (``k = 0, 1, 2``):
  an axis-aligned box, an oriented box, or either seen through an affine map.
  Leaf test: the separating-axis test of Akenine-Möller ("Fast 3D
  Triangle-Box Overlap Testing", 2001): the three face normals, the
  triangle's normal and the nine cross products of the triangle's edges with
  the box's edges. A zero axis (a degenerate triangle's normal, an edge
  parallel to a box edge) projects everything to 0 and never separates, so
  it is no axis; the face normals come from the box's planes, not from cross
  products of its edges, so that a flat box (``h_k = 0``) keeps them.
- ``Q_CONVEX``: half-spaces ``n . x + d >= 0`` (unit normals). Leaf test:
  :func:`bvh.frustum.triangles_in_frustum`'s per-triangle test (accept or
  reject by the corners, else clip, Sutherland-Hodgman), which is exact.

Every test is float64 on the exact edges of the float32 triangles
(:func:`bvh.leaf_tests.triangle_edges`) and has no tolerance: boundaries
count (a triangle touching the solid overlaps it), and only a contact within
rounding (some 1e-16 relative) can go either way. A degenerate triangle is
its segment or point: each test above is exact for it (no plane is made from
its zero normal). The trees leave zero-area faces out (they are never hit,
see :func:`bvh.triangles.prepare_triangles`), so overlaps never report them.

Instances: the solid is given in the world. Half-spaces map exactly into an
object's space (the map of :func:`bvh.frustum.planes_to_object_space`), so
boxes and convex regions are tested in object space, exactly, on the tree's
own triangles. A sphere or capsule becomes an ellipsoid or an "ellipsoidal
capsule" under a non-uniform scale or a shear: its object-space bound is the
capsule of radius ``r sigma_max`` (``sigma_max`` of the world-to-object
map, bounded as :func:`bvh.traversal.object_point_setup` bounds it), and the
leaves map their triangles to the world and test them there exactly, as
:mod:`bvh.queries.closest_point` measures world distances.

Shape objects are surfaces, as for rays and closest points: a box is its
twelve triangles, a quad its two, a polygon the fan of its outline when the
outline is convex (a non-convex polygon is refused, not skipped: see
:data:`NOT_CONVEX`), each tested as a mesh triangle. A sphere object's
surface is met when the solid reaches both its inside and its outside:
exactly, by the nearest and farthest points of the solid in the sphere's own
space for half-spaces (:func:`_ball_meets_region`), and in the world for a
sphere or capsule (:func:`_ellipsoid_meets_round`).
"""

import math

import numpy as np

from .._jit import jit, jit_inline
from .closest_point import NEAR_D2, NEAR_OBJECT, NEAR_RECORD, _ellipsoid, _lift, _mapped, _to_object, \
    closest_on_triangle
from .frustum import check_planes, triangle_inside
from .ray_triangle import triangle_edges
from ..walk.nodes import CHILD_COUNT, CHILD_FIRST, MAX_X, MAX_Y, MAX_Z, MIN_X, MIN_Y, MIN_Z, ROW, WIDTH
from ..primitives import _validate as check
from ..shapes import BOX, QUAD, SPHERE
from ..walk.traversal import make_instance_walk, make_traversal, new_stack, object_point_setup
from ..validation import real_array

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


@jit
def _local_record(world, inverse, o, scale, f00, f01, f02, f03, f10, f11, f12, f13, f20, f21, f22, f23):
    """The world record in object ``o``'s tree space (``inverse (O, 3, 4)``
    world to tree; ``f`` the tree-to-world map, ``scale``
    :func:`bvh.traversal.object_point_setup`'s bound ``1 / sigma_max^2``).

    Half-spaces: ``n . (F x + t) + d >= 0`` is ``(F^T n) . x + (n . t + d)
    >= 0`` (:func:`bvh.frustum.planes_to_object_space`). Round: the ends mapped, the bound
    radius ``r sigma_max`` (with a margin far above rounding); the exact test
    stays in the world."""
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
    """The node bound of an overlap query (``consts[0]`` is the record in
    the tree's space): go to the first child that may touch the solid and
    push the others, key 0.0 (the walk's ``tmax`` is 1.0, so every pushed
    child is visited). Returns ``(sp, first, count, found)`` as
    :func:`bvh.traversal.visit_node` does."""
    record = consts[0]
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
def overlap_setup(record, x1, x2, x3, x4, x5):
    """The query's constants in the world (or a mesh tree's space, the
    record already moved there): ``(record, 0, 0, 0, 0, 0, 1, f00 .. f23)``
    with the identity as the tree-to-world map, in the slots
    :func:`bvh.traversal.point_setup` gives it. Takes six values as every
    setup does; the record is the first, the others are unused."""
    return (record, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0)


@jit_inline
def object_overlap_setup(inverse, o, record, x1, x2, x3, x4, x5):
    """:func:`overlap_setup` in object ``o``'s tree space: the record mapped
    there (:func:`_local_record`) and the tree-to-world map of
    :func:`bvh.traversal.object_point_setup`."""
    c = object_point_setup(inverse, o, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    local = _local_record(record, inverse, o, c[6], c[7], c[8], c[9], c[10], c[11], c[12], c[13], c[14], c[15], c[16],
                          c[17], c[18])
    return (local, 0.0, 0.0, 0.0, 0.0, 0.0, c[6], c[7], c[8], c[9], c[10], c[11], c[12], c[13], c[14], c[15], c[16],
            c[17], c[18])


# --------------------------------------------------------------- leaf tests


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
    :func:`bvh.frustum.triangles_in_frustum`."""
    count = int(record[Q_COUNT]) if record[Q_KIND] == Q_CONVEX else 0
    face = np.zeros((1, 3), np.int64)
    face[0, 1] = 1
    face[0, 2] = 2
    return (np.empty((3, 3)), face, np.empty(count, np.bool_), np.empty((3 + count, 3)), np.empty((3 + count, 3)),
            np.empty(3 + count))


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
    half-spaces (``consts[0]``, exact), in the world for a sphere or capsule
    (the triangle mapped by ``consts``' tree-to-world map)."""
    local = consts[0]
    if local[Q_KIND] != Q_ROUND:
        return triangle_overlaps(local, ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z, scratch)
    wax, way, waz = _mapped(consts, ax, ay, az, 1.0)
    w1x, w1y, w1z = _mapped(consts, e1x, e1y, e1z, 0.0)
    w2x, w2y, w2z = _mapped(consts, e2x, e2y, e2z, 0.0)
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
def _ball_meets_region(planes, radius):
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


@jit
def _ellipsoid_gap(consts, radius, record, px, py, pz):
    """World distance from ``p`` to the solid ellipsoid ``consts``' map makes
    of the ball of ``radius``: 0 inside, else to its surface
    (:func:`bvh.closest_point._ellipsoid`)."""
    lx, ly, lz = _to_object(consts, px - consts[10], py - consts[14], pz - consts[18])
    if lx * lx + ly * ly + lz * lz <= radius * radius:
        return 0.0
    return _surface_gap(consts, radius, record, px, py, pz)


@jit
def _surface_gap(consts, radius, record, px, py, pz):
    record[NEAR_D2] = np.inf
    record[NEAR_OBJECT] = -1.0
    _ellipsoid(consts, record, px, py, pz, radius, 0.0, np.inf)
    return math.sqrt(record[NEAR_D2])


@jit
def _ellipsoid_meets_round(consts, world, radius):
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
    # The map as a tuple of floats alone, as the closest-point code takes it.
    consts = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, consts[6], consts[7], consts[8], consts[9], consts[10], consts[11],
              consts[12], consts[13], consts[14], consts[15], consts[16], consts[17], consts[18])
    ax, ay, az = world[Q_A], world[Q_A + 1], world[Q_A + 2]
    sx, sy, sz = world[Q_B] - ax, world[Q_B + 1] - ay, world[Q_B + 2] - az
    r = world[Q_R]
    record = np.empty(NEAR_RECORD)
    leaves = False
    for s in (0.0, 1.0):
        px, py, pz = ax + s * sx, ay + s * sy, az + s * sz
        lx, ly, lz = _to_object(consts, px - consts[10], py - consts[14], pz - consts[18])
        if lx * lx + ly * ly + lz * lz >= radius * radius or _surface_gap(consts, radius, record, px, py, pz) <= r:
            leaves = True
    if not leaves:
        return False
    if _ellipsoid_gap(consts, radius, record, ax, ay, az) <= r:
        return True
    if _ellipsoid_gap(consts, radius, record, ax + sx, ay + sy, az + sz) <= r:
        return True
    if sx == 0.0 and sy == 0.0 and sz == 0.0:
        return False
    inv_phi = (math.sqrt(5.0) - 1.0) * 0.5
    lo, hi = 0.0, 1.0
    m1 = hi - inv_phi * (hi - lo)
    m2 = lo + inv_phi * (hi - lo)
    g1 = _ellipsoid_gap(consts, radius, record, ax + m1 * sx, ay + m1 * sy, az + m1 * sz)
    g2 = _ellipsoid_gap(consts, radius, record, ax + m2 * sx, ay + m2 * sy, az + m2 * sz)
    for _ in range(80):
        if min(g1, g2) <= r:
            return True
        if g1 <= g2:
            hi, m2, g2 = m2, m1, g1
            m1 = hi - inv_phi * (hi - lo)
            g1 = _ellipsoid_gap(consts, radius, record, ax + m1 * sx, ay + m1 * sy, az + m1 * sz)
        else:
            lo, m1, g1 = m1, m2, g2
            m2 = lo + inv_phi * (hi - lo)
            g2 = _ellipsoid_gap(consts, radius, record, ax + m2 * sx, ay + m2 * sy, az + m2 * sz)
    return min(g1, g2) <= r


@jit
def _box_planes(local):
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
def _convex_outline(xs, ys):
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


@jit
def _shape_overlaps(kind, shape_data, start, consts, world, scratch):
    """Whether the query meets shape object's surface: 1 yes, 0 no, -1 a
    polygon whose outline is not convex (refused by the caller). Out of
    line, as :func:`bvh.closest_point._shape_nearest` is, for compile time."""
    local = consts[0]
    if kind == SPHERE:
        radius = shape_data[start]
        if local[Q_KIND] == Q_ROUND:
            return 1 if _ellipsoid_meets_round(consts, world, radius) else 0
        if local[Q_KIND] == Q_BOX:
            planes = _box_planes(local)
        else:
            count = int(local[Q_COUNT])
            planes = local[Q_HEAD:Q_HEAD + 4 * count].reshape((count, 4)).copy()
        return 1 if _ball_meets_region(planes, radius) else 0
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
    qx, qy, qz = shape_data[start], shape_data[start + 1], shape_data[start + 2]
    nx, ny, nz = shape_data[start + 3], shape_data[start + 4], shape_data[start + 5]
    axis = int(shape_data[start + 6])
    m = int(shape_data[start + 7])
    xs = shape_data[start + 8:start + 8 + m]
    ys = shape_data[start + 8 + m:start + 8 + 2 * m]
    if not _convex_outline(xs, ys):
        return -1
    ax, ay, az = _lift(axis, xs[0], ys[0], qx, qy, qz, nx, ny, nz)
    for k in range(1, m - 1):
        bx, by, bz = _lift(axis, xs[k], ys[k], qx, qy, qz, nx, ny, nz)
        cx, cy, cz = _lift(axis, xs[k + 1], ys[k + 1], qx, qy, qz, nx, ny, nz)
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
    ``bvh.scene_kernels.SceneArrays``) that touch the solid of the world
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
    _scene_walk(scene.top_nodes, scene.top_links, scene.top_order, scene.enabled, scene.kind, scene.mesh_of,
                scene.inverse, scene.mesh_root, scene.nodes, scene.links, scene.tris, scene.shape_start,
                scene.shape_data, query, query, 0.0, 1.0, 0, out, stack_first, stack_count, stack_t)


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
