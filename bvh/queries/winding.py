"""Inside or outside: the generalised winding number of a triangle mesh.

The winding number of a closed, consistently oriented surface at a point is
the number of times the surface wraps around it: 1 inside (outward normals),
0 outside, -1 inside a mesh turned inside out. Jacobson, Kavan and
Sorkine-Hornung ("Robust Inside-Outside Segmentation using Generalized
Winding Numbers", 2013) define it for any triangle soup as the sum of the
signed solid angles of its triangles over 4 pi; for an open mesh it is a
fraction that falls smoothly from 1 to 0 across a hole, and thresholding it
at 1/2 still tells inside from outside where the holes are small.

Summing every triangle costs O(T) per point. Barill, Dickson, Schmidt, Levin
and Jacobson ("Fast Winding Numbers for Soups and Clouds", 2018) evaluate it
on a tree instead: seen from far enough, a cluster of triangles subtends
the solid angle of a dipole, the sum ``N`` of its triangles' area vectors
(area times unit normal) placed at their area-weighted centre ``c``::

    Omega ~= N . (c - q) / |c - q|^3

A child of a node is far when ``|c - q| > beta r``, ``r`` the radius of its
triangles about ``c``; Barill take ``beta = 2``, and so do we. Far children
add their dipole term and are not entered; near ones are; leaves add the
exact solid angle of each triangle (Van Oosterom and Strackee, "The Solid
Angle of a Plane Triangle", 1983) in float64 from the exact edges of the
float32 triangles (:func:`bvh.queries.ray_triangle.triangle_edges`). This is the one
walk of every query (:mod:`bvh.walk.traversal`) with a new bound
(:func:`visit_winding`, which adds the far children's terms to the answer
through the walk's ``out``) and a new leaf test (:func:`winding_leaf`).

Accuracy. The dipole term is the first of Barill's expansion; its error on
a child is of order ``r / |c - q|`` of the child's solid angle. Measured on
points in the boxes of the shared meshes (``bench.contains``), the sum is
within 0.084 of the exact one at worst, 0.005 in the median. Only the
decision at 1/2 must be exact, so a point whose value lies within
``MARGINS[k]`` of 1/2 is evaluated again with the next, larger ``beta``
(``PASSES``), and within the last margin exactly (every triangle). Each
margin is at least three times the largest error measured at its pass's
``beta``. Points of a closed mesh away from its surface have values near
0 or 1 (or 2 where it overlaps itself) and take one pass; 0.2% of the
points in the bunny's box (open, with holes) take a second.

A point on the surface (within rounding of it) has no winding number: a
triangle through it contributes anything from -1/2 to 1/2, and rounding
decides which side it lands on. Degenerate triangles are not in the tree
and contribute nothing, as their solid angle is zero.
"""

import math

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from .._jit import RAY_BLOCK, jit, jit_inline, jit_parallel
from ..walk.borrow import borrowed
from .ray_triangle import triangle_edges
from ..walk.nodes import CHILD_COUNT, CHILD_FIRST, MAX_X, MIN_X, ROW, WIDTH
from ..shapes import BOX, MESH, SPHERE
from ..walk.space import POINT_X, POINT_Y, POINT_Z, WINDING_BETA2, point_setup
from ..walk.traversal import make_traversal, new_stack, visit_point

#: Columns of a node row's dipole data (float64, beside the float32 node
#: row of the same index), plane by plane as the node rows store boxes: one
#: column of each of the four child slots. ``R2`` is the squared radius of
#: the slot's triangles about its centre, -1 for an unused slot.
DIPOLE_NX, DIPOLE_NY, DIPOLE_NZ = 0, 4, 8
DIPOLE_CX, DIPOLE_CY, DIPOLE_CZ = 12, 16, 20
DIPOLE_R2 = 24
DIPOLE_AREA = 28
DIPOLE_ROW = 32

#: Barill et al.'s accuracy parameter: a child is far when its centre is
#: more than ``BETA`` radii away.
BETA = 2.0

#: ``beta^2`` of each evaluation pass, and how near 1/2 a pass's value must
#: be for the next pass to run. The error falls as ``1 / beta^2`` or faster
#: (worst cases measured: 0.084 at beta 2 on the shared meshes; 0.0028 at
#: 8 and 0.000075 at 32 on the bunny), and a pass costs up to ``beta^2``
#: times the first; the last pass (infinite beta: no child is far) sums
#: every triangle exactly, some 5 ms a point on the bunny, so it runs only
#: within 0.0003 of 1/2.
PASSES = (BETA * BETA, 64.0, 1024.0, math.inf)
MARGINS = (0.3, 0.01, 0.0003, 0.0)

FOUR_PI = 4.0 * math.pi


# ------------------------------------------------------------------ dipoles


@jit
def _leaf_dipole(tris, first, count, dipoles, base, slot):
    """Area vector, area, centre and radius of the triangles ``first ..
    first + count`` into slot ``slot`` of the dipole row at ``base``."""
    nx = ny = nz = area = 0.0
    cx = cy = cz = 0.0
    for k in range(first, first + count):
        ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z = triangle_edges(tris, k)
        # Half the cross product: the triangle's area times its unit normal.
        tx = 0.5 * (e1y * e2z - e1z * e2y)
        ty = 0.5 * (e1z * e2x - e1x * e2z)
        tz = 0.5 * (e1x * e2y - e1y * e2x)
        a = math.sqrt(tx * tx + ty * ty + tz * tz)
        nx += tx
        ny += ty
        nz += tz
        area += a
        cx += a * (ax + (e1x + e2x) / 3.0)
        cy += a * (ay + (e1y + e2y) / 3.0)
        cz += a * (az + (e1z + e2z) / 3.0)
    if area > 0.0:
        cx, cy, cz = cx / area, cy / area, cz / area
    else:
        cx = np.float64(tris[np.uint64(first * 9)])
        cy = np.float64(tris[np.uint64(first * 9 + 1)])
        cz = np.float64(tris[np.uint64(first * 9 + 2)])
    r2 = 0.0
    for k in range(first * 9, (first + count) * 9, 3):
        dx = np.float64(tris[np.uint64(k)]) - cx
        dy = np.float64(tris[np.uint64(k + 1)]) - cy
        dz = np.float64(tris[np.uint64(k + 2)]) - cz
        r2 = max(r2, dx * dx + dy * dy + dz * dz)
    _store(dipoles, base, slot, nx, ny, nz, cx, cy, cz, r2, area)


@jit_inline
def _store(dipoles, base, slot, nx, ny, nz, cx, cy, cz, r2, area):
    dipoles[base + DIPOLE_NX + slot] = nx
    dipoles[base + DIPOLE_NY + slot] = ny
    dipoles[base + DIPOLE_NZ + slot] = nz
    dipoles[base + DIPOLE_CX + slot] = cx
    dipoles[base + DIPOLE_CY + slot] = cy
    dipoles[base + DIPOLE_CZ + slot] = cz
    dipoles[base + DIPOLE_R2 + slot] = r2
    dipoles[base + DIPOLE_AREA + slot] = area


@jit
def _node_dipole(nodes, dipoles, child, base, slot):
    """Slot ``slot`` of the row at ``base`` from the four slots of its child
    row ``child``: the sums of the area vectors and areas, the area-weighted
    centre, and a radius that bounds the triangles below: the smaller of the
    largest distance to a child's centre plus that child's radius and the
    distance to the farthest corner of the slot's box (tighter deep in the
    tree, where the first bound adds up the radii of every level)."""
    at = child * DIPOLE_ROW
    nx = ny = nz = area = cx = cy = cz = 0.0
    for s in range(WIDTH):
        if dipoles[at + DIPOLE_R2 + s] < 0.0:
            continue
        a = dipoles[at + DIPOLE_AREA + s]
        nx += dipoles[at + DIPOLE_NX + s]
        ny += dipoles[at + DIPOLE_NY + s]
        nz += dipoles[at + DIPOLE_NZ + s]
        area += a
        cx += a * dipoles[at + DIPOLE_CX + s]
        cy += a * dipoles[at + DIPOLE_CY + s]
        cz += a * dipoles[at + DIPOLE_CZ + s]
    if area > 0.0:
        cx, cy, cz = cx / area, cy / area, cz / area
    else:
        cx, cy, cz = dipoles[at + DIPOLE_CX], dipoles[at + DIPOLE_CY], dipoles[at + DIPOLE_CZ]
    radius = 0.0
    for s in range(WIDTH):
        if dipoles[at + DIPOLE_R2 + s] < 0.0:
            continue
        dx = dipoles[at + DIPOLE_CX + s] - cx
        dy = dipoles[at + DIPOLE_CY + s] - cy
        dz = dipoles[at + DIPOLE_CZ + s] - cz
        radius = max(radius, math.sqrt(dx * dx + dy * dy + dz * dz) + math.sqrt(dipoles[at + DIPOLE_R2 + s]))
    corner2 = 0.0
    for axis, centre in ((0, cx), (1, cy), (2, cz)):
        low = abs(np.float64(nodes[base + MIN_X + 4 * axis + slot]) - centre)
        high = abs(np.float64(nodes[base + MAX_X + 4 * axis + slot]) - centre)
        corner2 += max(low, high) ** 2
    _store(dipoles, base, slot, nx, ny, nz, cx, cy, cz, min(radius * radius, corner2), area)


@jit
def fill_dipoles(nodes, links, tris, dipoles):
    """Every child slot's dipole data, bottom-up in one pass.

    Parameters
    ----------
    nodes, links : (K * 32,) float32, int32
        Four-wide node rows (:mod:`bvh.walk.nodes`) and their int32 view,
        flat: one tree or a scene's packed trees.
    tris : (T * 9,) float32
        The flat triangle rows the leaves refer to.
    dipoles : (K * 32,) float64
        Output: row ``k`` at ``k * DIPOLE_ROW`` (the ``DIPOLE_*`` columns).

    Notes
    -----
    A child row is always after its parent's (the collapse numbers rows
    depth first, and a scene's pack appends each mesh's rows), so the
    reverse row order meets every node after its descendants, as
    :mod:`bvh.builders.refit` recomputes boxes.
    """
    rows = links.shape[0] // ROW
    for node in range(rows - 1, -1, -1):
        base = node * ROW
        for slot in range(WIDTH):
            first = links[base + CHILD_FIRST + slot]
            count = links[base + CHILD_COUNT + slot]
            if count > 0:
                _leaf_dipole(tris, first, count, dipoles, base, slot)
            elif first > 0:
                _node_dipole(nodes, dipoles, first, base, slot)
            else:
                _store(dipoles, base, slot, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0)


def dipole_rows(nodes: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """The dipole data of a tree (see :func:`fill_dipoles`).

    Parameters
    ----------
    nodes : (K, 32) float32
        Four-wide node rows.
    tris : (T, 9) float32
        The triangles their leaves refer to.

    Returns
    -------
    (K * 32,) float64, read-only
    """
    dipoles = np.empty(nodes.shape[0] * DIPOLE_ROW)
    if nodes.shape[0]:
        fill_dipoles(nodes.reshape(-1), nodes.view(np.int32).reshape(-1), tris.reshape(-1), dipoles)
    dipoles.setflags(write=False)
    return dipoles


# ----------------------------------------------------------- walk: bound, leaf


@jit_inline
def winding_setup(px, py, pz, beta2, unused_y, unused_z):
    """The query's constants: the point (in the tree's frame) and ``beta^2``,
    padded to the six values a step unpacks."""
    return px, py, pz, beta2, 0.0, 0.0


def _pointer(context, builder, address, address_type, element):
    return builder.inttoptr(context.cast(builder, address, address_type, types.uintp), element.as_pointer())


@intrinsic
def _load_f64(typingctx, address, index):
    """``address[index]`` of float64 data at the integer ``address``."""
    def codegen(context, builder, signature, args):
        pointer = _pointer(context, builder, args[0], signature.args[0], ir.DoubleType())
        return builder.load(builder.gep(pointer, [context.cast(builder, args[1], signature.args[1], types.intp)]))

    return types.float64(address, index), codegen


@intrinsic
def _load_i32(typingctx, address, index):
    """``address[index]`` of int32 data at the integer ``address``."""
    def codegen(context, builder, signature, args):
        pointer = _pointer(context, builder, args[0], signature.args[0], ir.IntType(32))
        return builder.load(builder.gep(pointer, [context.cast(builder, args[1], signature.args[1], types.intp)]))

    return types.int32(address, index), codegen


@intrinsic
def _store_at(typingctx, address, index, value):
    """``address[index] = value``, the data's type that of ``value``
    (int32 or float64)."""
    def codegen(context, builder, signature, args):
        element = ir.DoubleType() if signature.args[2] == types.float64 else ir.IntType(32)
        pointer = _pointer(context, builder, args[0], signature.args[0], element)
        builder.store(args[2], builder.gep(pointer, [context.cast(builder, args[1], signature.args[1], types.intp)]))
        return context.get_dummy_value()

    return types.void(address, index, value), codegen


@intrinsic
def _dipole_vector(typingctx, dipoles, base, px, py, pz, beta2):
    """The four child slots of the dipole row at flat offset ``base``, one
    per lane of ``<4 x double>`` vectors: ``(far, near)``, the sum of the
    far slots' dipole solid angles ``N . (c - q) / |c - q|^3`` and the
    4-bit mask of the used slots that are near (centre within ``beta``
    radii of ``q``; ``beta2`` is ``beta^2``).

    In LLVM IR so that the four square roots and divisions are two vector
    instructions: written per slot in numba they were not vectorised.
    Lanes that are near or unused compute a term too (perhaps inf or NaN)
    and the select drops it; the sum is ``(s0 + s1) + (s2 + s3)``, in a
    fixed order.
    """
    sig = types.Tuple((types.float64, types.int32))(dipoles, base, px, py, pz, beta2)

    def codegen(context, builder, signature, args):
        f64 = ir.DoubleType()
        v4d = ir.VectorType(f64, 4)
        i32 = ir.IntType(32)
        data = _pointer(context, builder, args[0], signature.args[0], f64)
        at = context.cast(builder, args[1], signature.args[1], types.intp)
        zeros = ir.Constant(ir.VectorType(i32, 4), [0, 0, 0, 0])

        def splat(value):
            lane = builder.insert_element(ir.Constant(v4d, ir.Undefined), value, i32(0))
            return builder.shuffle_vector(lane, lane, zeros)

        def plane(column):
            pointer = builder.bitcast(builder.gep(data, [builder.add(at, at.type(column))]), v4d.as_pointer())
            return builder.load(pointer, align=8, typ=v4d)

        point = [splat(context.cast(builder, args[k], signature.args[k], types.float64)) for k in (2, 3, 4, 5)]
        dx, dy, dz = [builder.fsub(plane(column), point[k])
                      for k, column in enumerate((DIPOLE_CX, DIPOLE_CY, DIPOLE_CZ))]
        d2 = builder.fadd(builder.fadd(builder.fmul(dx, dx), builder.fmul(dy, dy)), builder.fmul(dz, dz))
        dot = builder.fadd(builder.fadd(builder.fmul(plane(DIPOLE_NX), dx), builder.fmul(plane(DIPOLE_NY), dy)),
                           builder.fmul(plane(DIPOLE_NZ), dz))
        r2 = plane(DIPOLE_R2)
        sqrt = cgutils.get_or_insert_function(builder.module, ir.FunctionType(v4d, [v4d]), "llvm.sqrt.v4f64")
        term = builder.fdiv(dot, builder.fmul(d2, builder.call(sqrt, [d2])))
        used = builder.fcmp_ordered(">=", r2, splat(f64(0.0)))
        beyond = builder.fcmp_ordered(">", d2, builder.fmul(point[3], r2))
        far = builder.and_(used, beyond)
        kept = builder.select(far, term, splat(f64(0.0)))
        lanes = [builder.extract_element(kept, i32(k)) for k in range(4)]
        total = builder.fadd(builder.fadd(lanes[0], lanes[1]), builder.fadd(lanes[2], lanes[3]))
        near = builder.and_(used, builder.not_(beyond))
        mask = builder.zext(builder.bitcast(near, ir.IntType(4)), i32)
        result = context.get_constant_undef(signature.return_type)
        result = builder.insert_value(result, total, 0)
        return builder.insert_value(result, mask, 1)

    return sig, codegen


@jit_inline
def _visit_dipoles(dipoles, links, stack_first, stack_count, stack_t, omega, ray, node, sp, px, py, pz, beta2):
    """:func:`visit_winding` on the addresses of its arrays.

    Why addresses: numba counts references to every array an inlined
    function holds, and cannot drop the counting across this function's
    branches (which children to enter): the same code on arrays ran at
    half the rate (measured: 0.43 against 0.83 M points per CPU second on
    the bunny, one thread, one pass). :func:`bvh.walk.traversal.visit_node`
    passes addresses to LLVM IR for the same reason.
    """
    base = node * ROW
    far, near = _dipole_vector(dipoles, base, px, py, pz, beta2)
    _store_at(omega, ray, _load_f64(omega, ray) + far)
    found = False
    next_first = np.int32(0)
    next_count = np.int32(0)
    for slot in range(WIDTH):
        if (near >> slot) & 1 == 0:
            continue
        if found:
            _store_at(stack_first, sp, next_first)
            _store_at(stack_count, sp, next_count)
            _store_at(stack_t, sp, 0.0)
            sp += 1
        found = True
        next_first = _load_i32(links, base + CHILD_FIRST + slot)
        next_count = _load_i32(links, base + CHILD_COUNT + slot)
    return sp, next_first, next_count, found


@jit_inline
def visit_winding(nodes, links, consts, tmin, tmax, node, sp, stack_first, stack_count, stack_t, ray, out):
    """The bound of the winding number's walk (:func:`bvh.walk.traversal.make_step`):
    each used child of row ``node`` is far (its centre farther than ``beta``
    radii from the point), and adds its dipole's solid angle to
    ``omega[ray]``, or near, and is entered. ``out = (dipoles, omega)``:
    the addresses of the tree's :func:`fill_dipoles` data and of the
    per-point solid angles (float64). Entered children get the key 0, so
    ``tmax >= 0`` keeps every one."""
    return _visit_dipoles(out[0], links.ctypes.data, stack_first.ctypes.data, stack_count.ctypes.data,
                          stack_t.ctypes.data, out[1], ray, node, sp, consts[POINT_X], consts[POINT_Y], consts[POINT_Z],
                          consts[WINDING_BETA2])


@jit_inline
def solid_angle(ax, ay, az, bx, by, bz, cx, cy, cz):
    """Signed solid angle of the triangle ``a, b, c`` (corners relative to
    the point) by Van Oosterom and Strackee (1983): ``tan(Omega / 2) =
    a.(b x c) / (|a||b||c| + (a.b)|c| + (b.c)|a| + (c.a)|b|)``, positive
    when the triangle turns counter-clockwise seen from the point's far
    side (the point behind its normal). ``atan2`` keeps the quadrant, so
    Omega is in ``[-2 pi, 2 pi]``."""
    la = math.sqrt(ax * ax + ay * ay + az * az)
    lb = math.sqrt(bx * bx + by * by + bz * bz)
    lc = math.sqrt(cx * cx + cy * cy + cz * cz)
    triple = ax * (by * cz - bz * cy) + ay * (bz * cx - bx * cz) + az * (bx * cy - by * cx)
    denominator = (la * lb * lc + (ax * bx + ay * by + az * bz) * lc + (bx * cx + by * cy + bz * cz) * la
                   + (cx * ax + cy * ay + cz * az) * lb)
    return 2.0 * math.atan2(triple, denominator)


@jit_inline
def winding_leaf(tris, first, count, px, py, pz, beta2, unused_y, unused_z, tmin, tmax, ray, out):
    """Add the exact solid angle of each triangle of a leaf to ``omega[ray]``
    (``out`` as for :func:`visit_winding`)."""
    total = 0.0
    for k in range(first, first + count):
        ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z = triangle_edges(tris, k)
        ax, ay, az = ax - px, ay - py, az - pz
        total += solid_angle(ax, ay, az, ax + e1x, ay + e1y, az + e1z, ax + e2x, ay + e2y, az + e2z)
    _store_at(out[1], ray, _load_f64(out[1], ray) + total)
    return tmax, False


_winding_walk = make_traversal(winding_leaf, winding_setup, visit_winding)


@jit_inline
def _winding(nodes, links, tris, root, px, py, pz, i, out, stack_first, stack_count, stack_t):
    """Winding number of point ``i`` (``(px, py, pz)`` in the tree's frame)
    for the tree under ``root``: pass after pass (``PASSES``) while the value
    is within the pass's margin of 1/2. ``out = (dipoles, omega)``, the
    addresses of the tree's dipole data and of the per-point solid angles
    (float64 scratch, ``omega[i]`` is this point's)."""
    omega = out[1]
    w = 0.0
    for k in range(len(PASSES)):
        _store_at(omega, i, 0.0)
        _winding_walk(nodes, links, tris, root, px, py, pz, PASSES[k], 0.0, 0.0, 0.0, 1.0, i, out, stack_first,
                      stack_count, stack_t)
        w = _load_f64(omega, i) / FOUR_PI
        if abs(w - 0.5) >= MARGINS[k]:
            break
    return w


# -------------------------------------------------------------- mesh kernels


@jit
def _mesh_block(nodes, links, tris, dipoles, offset, points, start, end, omega, winding):
    nodes, links, tris, offset, points = borrowed((nodes, links, tris, offset, points))
    stack_first, stack_count, stack_t = new_stack()
    # Addresses, not arrays: see _visit_dipoles. The caller holds the arrays.
    out = (dipoles.ctypes.data, omega.ctypes.data)
    for i in range(start, end):
        winding[i] = _winding(nodes, links, tris, 0, points[i, 0] - offset[0], points[i, 1] - offset[1],
                              points[i, 2] - offset[2], i, out, stack_first, stack_count, stack_t)


@jit
def mesh_winding_serial(nodes, links, tris, dipoles, offset, points, omega, winding):
    """:func:`mesh_winding` on the calling thread, for a few points."""
    _mesh_block(nodes, links, tris, dipoles, offset, points, np.int64(0), points.shape[0], omega, winding)


@jit_parallel
def mesh_winding(nodes, links, tris, dipoles, offset, points, omega, winding):
    """Winding number of one mesh at each of N points.

    ``nodes``, ``links``, ``tris`` are the flat arrays of the mesh's tree,
    ``dipoles`` their :func:`fill_dipoles` data, ``offset`` the mesh's
    centring offset, ``points`` ``(N, 3)`` float64 world points; ``omega``
    ``(N,)`` is scratch. Writes ``winding`` ``(N,)``.
    """
    n = points.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _mesh_block(nodes, links, tris, dipoles, offset, points, b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK), omega,
                    winding)


# ------------------------------------------------------------- scene kernels


@jit
def _shape_winding(kind, shape_data, start, lx, ly, lz):
    """1.0 if a sphere or box holds the object-space point (its surface
    included), else 0.0; the open shapes (quad, polygon) hold nothing."""
    if kind == SPHERE:
        radius = shape_data[start]
        return 1.0 if lx * lx + ly * ly + lz * lz <= radius * radius else 0.0
    if kind == BOX:
        inside = (abs(lx) <= shape_data[start] and abs(ly) <= shape_data[start + 1]
                  and abs(lz) <= shape_data[start + 2])
        return 1.0 if inside else 0.0
    return 0.0


@jit_inline
def _object_leaf(top_order, first, count, px, py, pz, wx, wy, wz, tmin, tmax, ray, out):
    """The objects of a top-level leaf whose box holds the point: each
    enabled one's winding number in its own space, the best kept in
    ``best[ray]`` and ``best_object[ray]`` (see :func:`scene_contains`)."""
    (enabled, kind, mesh_of, inverse, mesh_root, nodes, links, tris, shape_start, shape_data, mesh_out, best,
     best_object, stack_first, stack_count, stack_t) = out
    for k in range(first, first + count):
        o = top_order[np.uint64(k)]
        if not enabled[o]:
            continue
        lx = inverse[o, 0, 0] * px + inverse[o, 0, 1] * py + inverse[o, 0, 2] * pz + inverse[o, 0, 3]
        ly = inverse[o, 1, 0] * px + inverse[o, 1, 1] * py + inverse[o, 1, 2] * pz + inverse[o, 1, 3]
        lz = inverse[o, 2, 0] * px + inverse[o, 2, 1] * py + inverse[o, 2, 2] * pz + inverse[o, 2, 3]
        if kind[o] == MESH:
            w = _winding(nodes, links, tris, mesh_root[mesh_of[o]], lx, ly, lz, ray, mesh_out, stack_first,
                         stack_count, stack_t)
        else:
            w = _shape_winding(kind[o], shape_data, shape_start[o], lx, ly, lz)
        if w >= 0.5:
            wraps = math.floor(w + 0.5)
            held = best_object[ray]
            if held < 0 or wraps > best[ray] or (wraps == best[ray] and o < held):
                best[ray] = wraps
                best_object[ray] = o
    return tmax, False


_top_walk = make_traversal(_object_leaf, point_setup, visit_point)


@jit
def _scene_block(scene, dipoles, points, start, end, omega, wraps, objects):
    scene, points, wraps, objects = borrowed((scene, points, wraps, objects))
    top_first, top_count, top_t = new_stack()
    stack_first, stack_count, stack_t = new_stack()
    out = (scene.enabled, scene.kind, scene.mesh_of, scene.inverse, scene.mesh_root, scene.nodes, scene.links,
           scene.tris, scene.shape_start, scene.shape_data, (dipoles.ctypes.data, omega.ctypes.data), wraps, objects,
           stack_first, stack_count, stack_t)
    for i in range(start, end):
        wraps[i] = 0.0
        objects[i] = -1
        # A squared distance of at most 0: the top-level boxes that hold the point.
        _top_walk(scene.top_nodes, scene.top_links, scene.top_order, 0, points[i, 0], points[i, 1], points[i, 2],
                  0.0, 0.0, 0.0, 0.0, 0.0, i, out, top_first, top_count, top_t)


@jit
def scene_contains_serial(scene, dipoles, points, omega, wraps, objects):
    """:func:`scene_contains` on the calling thread, for a few points."""
    _scene_block(scene, dipoles, points, np.int64(0), points.shape[0], omega, wraps, objects)


@jit_parallel
def scene_contains(scene, dipoles, points, omega, wraps, objects):
    """Which object of a scene holds each of N world points.

    ``scene`` is a ``bvh.queries.scene_rays.SceneArrays``, ``dipoles`` the
    :func:`fill_dipoles` data of its packed trees. Only objects whose world
    box holds the point are evaluated, each in its own space (an affine map
    keeps inside and outside; a mirror turns the surface inside out in the
    world, the object-space winding number does not see it). A mesh object
    holds the point when its winding number is at least 1/2; a sphere or a
    box when the point is in it or on it. Of several, the one whose winding
    number rounds to the largest integer (the surface wraps the point most
    often) is kept, ties to the lowest id. Writes per point that rounded
    winding number (0.0 for none) into ``wraps`` and the object (-1: none)
    into ``objects``; ``omega`` ``(N,)`` is scratch.
    """
    n = points.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _scene_block(scene, dipoles, points, b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK), omega, wraps, objects)
