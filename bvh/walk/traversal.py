"""The one traversal of every query: a stack-based walk of four-wide nodes
(:mod:`bvh.walk.nodes`), with the leaf test as a parameter, as madmann91/bvh
v2 does; meshes, and scenes of instanced meshes and shapes, share it.
What a query carries down the walk, slot by slot, and the maps between an
object's space and the world are in :mod:`bvh.walk.space`; the loops that
run the steps of many queries (two in turns) in :mod:`bvh.walk.drivers`.

Robustness (Ize, "Robust BVH Ray Traversal", JCGT 2013): the slab distances
are computed in float64 from float32 bounds padded outwards, and the far
distance is scaled by ``1 + 2 * gamma(3)``, so that rounding never makes a ray
miss a box it passes through (``_slab_vector`` gives the error bound). Axis-aligned rays use a safe
reciprocal: ``1 / 0`` would be inf, and ``inf * 0`` (an origin on a slab plane)
NaN; a huge finite reciprocal keeps every product finite and the test
conservative.

Array indices are cast to unsigned before use: they are never negative, and
numba otherwise wraps every signed index around (``i + n if i < 0``), which
costs three instructions per load in a loop that is mostly loads.
"""

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .._jit import MAX_DEPTH, jit_inline
from .borrow import frame_array
from .nodes import CHILD_COUNT, CHILD_FIRST, MAX_X, MAX_Y, MAX_Z, MIN_X, MIN_Y, MIN_Z, ROW
from .space import (POINT_SCALE, POINT_X, POINT_Y, POINT_Z, RAY_IX, RAY_IY, RAY_IZ, RAY_NEAR_X, RAY_NEAR_Y,
                    RAY_NEAR_Z, RAY_OIX, RAY_OIY, RAY_OIZ, SWEPT_SCALE, WINDOW_RADIUS, WINDOW_TMIN, object_ray_setup,
                    ray_of, ray_setup)
from ..shapes import MESH

_EPS64 = 2.0 ** -53
_GAMMA3 = 3.0 * _EPS64 / (1.0 - 3.0 * _EPS64)
IZE_FAR_SCALE = 1.0 + 2.0 * _GAMMA3

MISS = 1.0e308
"""What a slab test returns for a box the ray misses: beyond any ``tmax``
(which the kernels clamp to ``FAR``), so a miss sorts after every hit."""


#: Entries of the per-ray stack: a node pushes at most three children, a wide
#: tree is no deeper than the binary one it was collapsed from (< MAX_DEPTH),
#: and a scene's walk stacks an instance's mesh walk on its top level's.
STACK_SIZE = 2 * 3 * MAX_DEPTH


_stack_first = frame_array(STACK_SIZE, np.int32)
_stack_count = frame_array(STACK_SIZE, np.int32)
_stack_t = frame_array(STACK_SIZE, np.float64)


@jit_inline
def new_stack():
    """One ray's traversal scratch: ``(first, count, t)`` of ``STACK_SIZE``
    entries, in the calling kernel's frame (:func:`bvh.walk.borrow.frame_array`):
    handed to the walk on every ray, a heap array would have its references
    counted each time."""
    return _stack_first(), _stack_count(), _stack_t()


def _slab_vector(context, builder, data, offsets, values):
    """LLVM IR of the four slab tests of one node, one per lane of a
    ``<4 x double>`` vector: each lane's entry distance into its child's box
    within ``[tmin, tmax]``, or MISS.

    The arithmetic of a lane: ``oix = ox * ix`` (and y, z) are the ray's
    origin scaled by its reciprocal direction, so that each slab distance
    ``(b - o) / d`` is one fused multiply-add, ``b * (1/d) - o * (1/d)``. Its
    rounding error is at most about ``3 eps |t| + eps |b / d|``: the first
    part is what Ize's far factor covers, the second is far below the two
    float32 ulps every bound was padded by (``2^-23 |b|`` against ``2^-53
    |b|``), so the test stays conservative. Choosing the near and far plane
    by the sign of the direction (Williams et al., "An efficient and robust
    ray-box intersection algorithm", 2005) spares a min/max per axis.

    ``data`` points at the flat float32 nodes; ``offsets`` are the flat
    offsets of the near x, y, z and far x, y, z planes (each four adjacent
    floats, one per child); ``values`` are ``near_oix, near_oiy, near_oiz,
    far_oix, far_oiy, far_oiz, ix, iy, iz, tmin, tmax`` as doubles: the
    ``o * i`` subtracted on the near and on the far planes. A ray passes the
    same values for both (the same IR values, so the same code as one);
    a swept sphere shifts its origin by the radius towards each plane
    (:func:`visit_swept`). Returns ``(entry, entered)``: the entry distances
    (MISS where not entered) and the ``<4 x i1>`` mask of the children
    entered.
    """
    f64 = ir.DoubleType()
    v4f = ir.VectorType(ir.FloatType(), 4)
    v4d = ir.VectorType(f64, 4)
    i32 = ir.IntType(32)
    fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(v4d, [v4d, v4d, v4d]), "llvm.fma.v4f64")
    zeros = ir.Constant(ir.VectorType(i32, 4), [0, 0, 0, 0])

    def splat(value):
        lane = builder.insert_element(ir.Constant(v4d, ir.Undefined), value, i32(0))
        return builder.shuffle_vector(lane, lane, zeros)

    def plane(offset, i, oi):
        pointer = builder.bitcast(builder.gep(data, [offset]), v4f.as_pointer())
        bound = builder.fpext(builder.load(pointer, align=4, typ=v4f), v4d)
        return builder.call(fma, [bound, i, oi])

    def vmax(a, b):
        return builder.select(builder.fcmp_ordered(">", a, b), a, b)

    def vmin(a, b):
        return builder.select(builder.fcmp_ordered("<", a, b), a, b)

    # Each distinct value splatted and negated once: a ray's near and far
    # planes share their o * i.
    negated = {}

    def minus(value):
        if id(value) not in negated:
            negated[id(value)] = builder.fneg(splat(value))
        return negated[id(value)]

    ix, iy, iz, tmin, tmax = [splat(v) for v in values[6:]]
    near_x, near_y, near_z, far_x, far_y, far_z = [minus(v) for v in values[:6]]
    near = vmax(vmax(plane(offsets[0], ix, near_x), plane(offsets[1], iy, near_y)),
                vmax(plane(offsets[2], iz, near_z), tmin))
    far = vmin(plane(offsets[3], ix, far_x), plane(offsets[4], iy, far_y))
    far = builder.fmul(vmin(far, plane(offsets[5], iz, far_z)), splat(f64(IZE_FAR_SCALE)))
    entered = builder.fcmp_ordered("<=", near, vmin(far, tmax))
    return builder.select(entered, near, splat(f64(MISS))), entered


def _choose_next(context, builder, signature, link_data, first_data, count_data, t_data, sp, base, entry, entered):
    """IR of the second half of every node visit: given each child's ``entry``
    key (``<4 x double>``, MISS where not entered) and the ``entered`` mask,
    go straight to a single entered child, or sort the entered ones by key
    (five compare-and-swaps, ties kept in slot order), push all but the
    nearest far to near and go to the nearest. Returns the visit's
    ``(sp, first, count, found)`` tuple value."""
    i32 = ir.IntType(32)
    i64 = ir.IntType(64)
    f64 = ir.DoubleType()
    mask = builder.zext(builder.bitcast(entered, ir.IntType(4)), i32)
    none_or_more = builder.append_basic_block("none_or_more")
    single_block = builder.append_basic_block("single")
    multi_block = builder.append_basic_block("multi")
    done_block = builder.append_basic_block("done")
    single = builder.icmp_unsigned("==", builder.and_(mask, builder.sub(mask, i32(1))), i32(0))
    nonzero = builder.icmp_unsigned("!=", mask, i32(0))
    builder.cbranch(builder.and_(single, nonzero), single_block, none_or_more)

    def child(slot):
        at = builder.add(base, slot)
        return (builder.load(builder.gep(link_data, [builder.add(at, i64(CHILD_FIRST))])),
                builder.load(builder.gep(link_data, [builder.add(at, i64(CHILD_COUNT))])))

    builder.position_at_end(single_block)
    cttz = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i32, [i32, ir.IntType(1)]),
                                          "llvm.cttz.i32")
    first_one, count_one = child(builder.zext(builder.call(cttz, [mask, ir.IntType(1)(1)]), i64))
    builder.branch(done_block)

    builder.position_at_end(none_or_more)
    builder.cbranch(nonzero, multi_block, done_block)

    builder.position_at_end(multi_block)
    ts = [builder.extract_element(entry, i32(lane)) for lane in range(4)]
    slots = [i64(lane) for lane in range(4)]

    def order(a, b):
        swap = builder.fcmp_ordered("<", ts[b], ts[a])
        ts[a], ts[b] = builder.select(swap, ts[b], ts[a]), builder.select(swap, ts[a], ts[b])
        slots[a], slots[b] = builder.select(swap, slots[b], slots[a]), builder.select(swap, slots[a], slots[b])

    for a, b in ((0, 1), (2, 3), (0, 2), (1, 3), (1, 2)):
        order(a, b)
    pushed = sp
    # The pushed children are visited later, after the nearest one's
    # subtree: a prefetch of their two cache lines now lets those misses
    # overlap that work instead of stalling the walk when they are popped.
    # Incoherent rays wait on node loads more than on arithmetic (measured
    # on random rays: about +6% against Embree on the bunny, nefertiti and
    # ogre; +50% on a 1M-point cloud whose nodes do not fit in the cache).
    # A leaf child (or an empty slot) prefetches its own node's row, which
    # is in the cache already: branch-free and harmless.
    prefetch = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer(), i32, i32, i32]),
        "llvm.prefetch.p0i8")
    for lane in (3, 2, 1):
        first_k, count_k = child(slots[lane])
        row_base = builder.select(builder.icmp_signed("==", count_k, i32(0)),
                                  builder.mul(builder.sext(first_k, i64), i64(ROW)), base)
        line = builder.bitcast(builder.gep(link_data, [row_base]), ir.IntType(8).as_pointer())
        for offset in (0, 64):
            # the row's two 64-byte lines: read, keep in every level, data
            builder.call(prefetch, [builder.gep(line, [i64(offset)]), i32(0), i32(3), i32(1)])
        builder.store(first_k, builder.gep(first_data, [pushed]))
        builder.store(count_k, builder.gep(count_data, [pushed]))
        builder.store(ts[lane], builder.gep(t_data, [pushed]))
        hit = builder.fcmp_ordered("!=", ts[lane], f64(MISS))
        pushed = builder.add(pushed, builder.zext(hit, i64))
    first_many, count_many = child(slots[0])
    builder.branch(done_block)

    builder.position_at_end(done_block)
    sp_out = builder.phi(i64)
    first_out = builder.phi(i32)
    count_out = builder.phi(i32)
    found = builder.phi(ir.IntType(1))
    for block, values in ((single_block, (sp, first_one, count_one, 1)),
                          (none_or_more, (sp, i32(0), i32(0), 0)),
                          (multi_block, (pushed, first_many, count_many, 1))):
        sp_out.add_incoming(values[0], block)
        first_out.add_incoming(values[1], block)
        count_out.add_incoming(values[2], block)
        found.add_incoming(ir.IntType(1)(values[3]), block)
    result = context.get_constant_undef(signature.return_type)
    for k, value in enumerate((sp_out, first_out, count_out, found)):
        result = builder.insert_value(result, value, k)
    return result


#: What a node visit returns: ``(sp, first, count, found)``.
_VISIT_RESULT = types.Tuple((types.int64, types.int32, types.int32, types.boolean))


def _visit_codegen(keys):
    """The code of a node visit intrinsic (:func:`_visit_node` and its
    kin), whose arguments are the five addresses, ``sp``, ``base`` and then
    the values of its bound: ``keys(context, builder, node_data, base,
    value)`` makes the children's keys and entered mask from those values
    (``value(k, kind)`` is the ``k``-th, cast to ``kind``, float64 unless
    told), and :func:`_choose_next` does the rest."""

    def codegen(context, builder, signature, args):
        types_in = signature.args
        node_data, link_data, first_data, count_data, t_data = [
            builder.inttoptr(context.cast(builder, args[k], types_in[k], types.uintp), kind.as_pointer())
            for k, kind in enumerate((ir.FloatType(), ir.IntType(32), ir.IntType(32), ir.IntType(32),
                                      ir.DoubleType()))]
        sp, base = [context.cast(builder, args[k], types_in[k], types.int64) for k in (5, 6)]

        def value(k, kind=types.float64):
            return context.cast(builder, args[7 + k], types_in[7 + k], kind)

        entry, entered = keys(context, builder, node_data, base, value)
        return _choose_next(context, builder, signature, link_data, first_data, count_data, t_data, sp, base,
                            entry, entered)

    return codegen


@intrinsic
def _visit_node(typingctx, nodes, links, stack_first, stack_count, stack_t, sp, base, near_x, near_y, near_z,
                far_x, far_y, far_z, oix, oiy, oiz, ix, iy, iz, tmin, tmax):
    """Test the four children of the node at flat offset ``base`` and choose
    what to visit next: ``(sp, first, count, found)``.

    ``nodes``, ``links``, ``stack_first``, ``stack_count`` and ``stack_t`` are
    the data addresses (``.ctypes.data``) of the flat float32 nodes, their
    int32 view and the ray's stack (int32, int32, float64), ``sp`` its depth;
    ``near_x`` .. ``far_z`` the flat offsets of the planes (see
    :func:`_slab_vector`, which makes the slab tests).

    With no child entered, ``found`` is False. With one (half the visits on
    random rays, 40% on camera rays), it is next and nothing is pushed or
    sorted. With more, a sorting network of five compare-and-swaps (by
    entry distance, ties kept in slot order) orders them, the nearest is next
    and the others are pushed far to near (the stores are unconditional, only
    ``sp`` depends on the hits).

    Why IR and addresses: written in numba, the branch on the number of
    children entered stops numba from pruning the reference counting of the
    stack arrays in the inlined step, which then costs five ``NRT_decref``
    calls per node (measured: half the rate); arrays passed to an intrinsic
    cost the same, plain addresses nothing. The arrays outlive every call:
    the caller holds them.
    """
    sig = _VISIT_RESULT(
        nodes, links, stack_first, stack_count, stack_t, sp, base, near_x, near_y, near_z, far_x, far_y, far_z,
        oix, oiy, oiz, ix, iy, iz, tmin, tmax)

    def keys(context, builder, node_data, base, value):
        oi = [value(k) for k in range(6, 9)]
        return _slab_vector(context, builder, node_data, [value(k, types.intp) for k in range(6)],
                            oi + oi + [value(k) for k in range(9, 14)])

    return sig, _visit_codegen(keys)


@intrinsic
def _visit_node_swept(typingctx, nodes, links, stack_first, stack_count, stack_t, sp, base, near_x, near_y, near_z,
                      far_x, far_y, far_z, near_oix, near_oiy, near_oiz, far_oix, far_oiy, far_oiz, ix, iy, iz, tmin,
                      tmax):
    """:func:`_visit_node` with separate ``o * i`` values for the near and
    the far planes (:func:`_slab_vector`): the slab test of a ray whose
    origin moves towards each plane, as a swept sphere's does."""
    sig = _VISIT_RESULT(
        nodes, links, stack_first, stack_count, stack_t, sp, base, near_x, near_y, near_z, far_x, far_y, far_z,
        near_oix, near_oiy, near_oiz, far_oix, far_oiy, far_oiz, ix, iy, iz, tmin, tmax)

    def keys(context, builder, node_data, base, value):
        return _slab_vector(context, builder, node_data, [value(k, types.intp) for k in range(6)],
                            [value(k) for k in range(6, 17)])

    return sig, _visit_codegen(keys)


def _point_vector(builder, data, base, values):
    """LLVM IR of the four box bounds of a point query, one per lane: each
    child's squared distance from the point, times the query's ``scale``,
    or MISS for a child beyond ``limit`` or an unused slot.

    ``values`` are ``px, py, pz, scale, limit`` as doubles. The distance is
    ``max(lo - p, p - hi, 0)`` per axis in float64 from the float32 planes;
    the planes were padded outwards, so it never exceeds the distance to
    anything in the box. An unused slot (``min > max``) is never entered.
    Returns ``(key, entered)`` as :func:`_slab_vector` does.
    """
    f64 = ir.DoubleType()
    v4f = ir.VectorType(ir.FloatType(), 4)
    v4d = ir.VectorType(f64, 4)
    i32 = ir.IntType(32)
    i64 = ir.IntType(64)
    zeros = ir.Constant(ir.VectorType(i32, 4), [0, 0, 0, 0])

    def splat(value):
        lane = builder.insert_element(ir.Constant(v4d, ir.Undefined), value, i32(0))
        return builder.shuffle_vector(lane, lane, zeros)

    def plane(column):
        pointer = builder.bitcast(builder.gep(data, [builder.add(base, i64(column))]), v4f.as_pointer())
        return builder.fpext(builder.load(pointer, align=4, typ=v4f), v4d)

    def vmax(a, b):
        return builder.select(builder.fcmp_ordered(">", a, b), a, b)

    px, py, pz, scale, limit = [splat(v) for v in values]
    zero = splat(f64(0.0))
    squared = None
    for p, low, high in ((px, MIN_X, MAX_X), (py, MIN_Y, MAX_Y), (pz, MIN_Z, MAX_Z)):
        gap = vmax(vmax(builder.fsub(plane(low), p), builder.fsub(p, plane(high))), zero)
        term = builder.fmul(gap, gap)
        squared = term if squared is None else builder.fadd(squared, term)
    key = builder.fmul(squared, scale)
    used = builder.fcmp_ordered("<=", plane(MIN_X), plane(MAX_X))
    entered = builder.and_(used, builder.fcmp_ordered("<=", key, limit))
    return builder.select(entered, key, splat(f64(MISS))), entered


@intrinsic
def _visit_node_point(typingctx, nodes, links, stack_first, stack_count, stack_t, sp, base, px, py, pz, scale,
                      limit):
    """:func:`_visit_node` for a point query: children are keyed by their
    scaled squared distance from ``(px, py, pz)`` (:func:`_point_vector`),
    entered within ``limit``, nearest first."""
    sig = _VISIT_RESULT(
        nodes, links, stack_first, stack_count, stack_t, sp, base, px, py, pz, scale, limit)

    def keys(context, builder, node_data, base, value):
        return _point_vector(builder, node_data, base, [value(k) for k in range(5)])

    return sig, _visit_codegen(keys)


@jit_inline
def _slab_constants(consts):
    """The slots of the ray layout the slab tests read (:mod:`bvh.walk.space`)."""
    return (consts[RAY_IX], consts[RAY_IY], consts[RAY_IZ], consts[RAY_OIX], consts[RAY_OIY], consts[RAY_OIZ],
            consts[RAY_NEAR_X], consts[RAY_NEAR_Y], consts[RAY_NEAR_Z])


@jit_inline
def visit_node(nodes, links, ray_consts, tmin, tmax, node, sp, stack_first, stack_count, stack_t, ray, out):
    """Test the four children of node row ``node`` against the ray and choose
    what to visit next (:func:`_visit_node`): ``(sp, first, count, found)``,
    ``found`` False when the ray enters no child. ``ray`` and ``out`` (the
    leaf test's) are not read: a bound that accumulates into the query's
    answer, as the winding number's does (:mod:`bvh.queries.winding`), needs them."""
    ix, iy, iz, oix, oiy, oiz, near_x, near_y, near_z = _slab_constants(ray_consts)
    base = node * ROW
    return _visit_node(nodes.ctypes.data, links.ctypes.data, stack_first.ctypes.data, stack_count.ctypes.data,
                       stack_t.ctypes.data, sp, base, base + near_x, base + near_y, base + near_z,
                       base + (MIN_X + MAX_X) - near_x, base + (MIN_Y + MAX_Y) - near_y,
                       base + (MIN_Z + MAX_Z) - near_z, oix, oiy, oiz, ix, iy, iz, tmin, tmax)


@jit_inline
def visit_swept(nodes, links, consts, window, tmax, node, sp, stack_first, stack_count, stack_t, ray, out):
    """:func:`visit_node` for a sphere of radius ``r`` swept along the ray:
    the slab test against each child's box grown by ``r`` on every side,
    which holds the Minkowski sum of the box and the sphere, so the bound is
    conservative (it admits the box's rounded corners' corners too).

    Growing the box is moving the origin: for an axis with ``i >= 0`` the
    near plane's distance is ``(min - r - o) i = min i - (o + r) i`` and the
    far plane's ``max i - (o - r) i``, mirrored for ``i < 0``; both are
    ``o i +- r |i|``. Ize's far factor stays; the one more rounding of
    ``o i + r |i|`` is covered by the padding in ``consts[SWEPT_SCALE]``.

    ``consts`` is a swept layout (:mod:`bvh.walk.space`): the ray layout of
    the ray in this tree's space, then ``SWEPT_SCALE``, a factor from world
    radii to an upper bound of their size in this space (padded by a few
    parts in 1e12). ``window`` is the query's per-ray tuple, which starts
    ``(tmin, radius)`` (``WINDOW_TMIN``, ``WINDOW_RADIUS``): the world
    radius. With radius 0 this is :func:`visit_node`'s test.
    """
    ix, iy, iz, oix, oiy, oiz, near_x, near_y, near_z = _slab_constants(consts)
    grown = window[WINDOW_RADIUS] * consts[SWEPT_SCALE]
    gx = grown * abs(ix)
    gy = grown * abs(iy)
    gz = grown * abs(iz)
    base = node * ROW
    return _visit_node_swept(nodes.ctypes.data, links.ctypes.data, stack_first.ctypes.data, stack_count.ctypes.data,
                             stack_t.ctypes.data, sp, base, base + near_x, base + near_y, base + near_z,
                             base + (MIN_X + MAX_X) - near_x, base + (MIN_Y + MAX_Y) - near_y,
                             base + (MIN_Z + MAX_Z) - near_z, oix + gx, oiy + gy, oiz + gz, oix - gx, oiy - gy,
                             oiz - gz, ix, iy, iz, window[WINDOW_TMIN], tmax)


@jit_inline
def visit_point(nodes, links, consts, tmin, tmax, node, sp, stack_first, stack_count, stack_t, ray, out):
    """:func:`visit_node` for a point query (the point layout of
    :func:`bvh.walk.space.point_setup`):
    ``tmax`` is the squared world distance of the nearest surface so far,
    children are entered nearest first and pruned beyond it."""
    base = node * ROW
    return _visit_node_point(nodes.ctypes.data, links.ctypes.data, stack_first.ctypes.data,
                             stack_count.ctypes.data, stack_t.ctypes.data, sp, base, consts[POINT_X],
                             consts[POINT_Y], consts[POINT_Z], consts[POINT_SCALE], tmax)


def make_step(leaf_test, visit=visit_node):
    """One step of a walk of one four-wide tree, specialised to ``leaf_test``
    and to the node bound ``visit`` (:func:`visit_node` for rays,
    :func:`visit_point` for points).

    ``leaf_test(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out)``
    returns ``(tmax, stop)``: the new far limit (a closest-hit test shrinks it
    to its hit) and whether to end the walk (an any-hit test stops at its
    first hit). The test is bound at compile time rather than passed as a
    value, so the call is static, can be inlined, and the kernel can be
    cached. A walk is a loop of steps until one says it is done; a caller may
    run the steps of several rays in turns (:mod:`bvh.walk.drivers`).

    The walk hands ``tmin`` to ``visit`` and ``leaf_test`` untouched and
    never reads it itself, so a query that needs more per-ray values than
    the six its setup is made from may pass a tuple there: a sphere cast
    passes ``(tmin, radius, ...)`` (:mod:`bvh.queries.sphere_cast`).
    ``visit(nodes, links, consts, tmin, tmax, node, sp, stack_first,
    stack_count, stack_t, ray, out)`` returns ``(sp, first, count, found)``:
    it pushes the children to visit later and names the next one. It is
    handed the leaf test's ``ray`` and ``out`` too, so that a bound can add
    a child's share to the query's answer instead of entering it (the far
    nodes of a winding number, :mod:`bvh.queries.winding`); the ray and point bounds
    ignore them, and inlined, unused, they cost nothing.
    """

    @jit_inline
    def step(nodes, links, tris, ray_consts, tmin, tmax, first, count, sp, ray, out, stack_first, stack_count, stack_t):
        """Visit the node or leaf ``(first, count)`` and choose what to visit next.

        ``ray_consts`` is the setup's tuple (:mod:`bvh.walk.space`); ``nodes``/``links`` are the
        flat float32 and int32 views of the wide rows; ``stack_first``,
        ``stack_count`` (int32) and ``stack_t`` (float64) are this ray's
        scratch of ``STACK_SIZE`` entries, ``sp`` its depth. Nodes are entered
        near child first; a child popped beyond the current ``tmax`` is skipped.

        Returns ``(first, count, sp, tmax, done)``: the next node or leaf, and
        whether the walk is over.
        """
        if count > 0:
            ox, oy, oz, dx, dy, dz = ray_of(ray_consts)
            tmax, stop = leaf_test(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out)
            if stop:
                return first, count, sp, tmax, True
        else:
            sp, child_first, child_count, found = visit(nodes, links, ray_consts, tmin, tmax, first, sp,
                                                        stack_first, stack_count, stack_t, ray, out)
            if found:
                return child_first, child_count, sp, tmax, False
        while sp > 0:
            sp -= 1
            if stack_t[np.uint64(sp)] <= tmax:
                return stack_first[np.uint64(sp)], stack_count[np.uint64(sp)], sp, tmax, False
        return first, count, sp, tmax, True

    return step


def make_traversal(leaf_test, setup=ray_setup, visit=visit_node):
    """A whole walk of one tree, specialised to ``leaf_test`` and to a kind of
    query: ``setup`` makes the query's constants from six values (a ray's
    origin and direction, or a point and three unused values) and ``visit``
    is the matching node bound (see :func:`make_step`)."""
    step = make_step(leaf_test, visit)

    @jit_inline
    def traverse(nodes, links, tris, root, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out,
                 stack_first, stack_count, stack_t):
        """Walk the wide tree under node row ``root`` front to back, calling the
        leaf test on every leaf the ray reaches; returns the final ``tmax``.
        The arguments are those of the step function (:func:`make_step`)."""
        ray_consts = setup(ox, oy, oz, dx, dy, dz)
        first = root
        count = 0
        sp = 0
        done = False
        while not done:
            first, count, sp, tmax, done = step(nodes, links, tris, ray_consts, tmin, tmax, first, count, sp, ray,
                                                out, stack_first, stack_count, stack_t)
        return tmax

    return traverse


def make_instance_step(mesh_leaf, shape_leaf, setup=ray_setup, object_setup=object_ray_setup, visit=visit_node):
    """One step of a walk of one world query through a two-level scene,
    specialised to its leaf tests and its kind of query (see
    :func:`make_instance_walk`, the loop of these steps). A caller may run
    the steps of several queries in turns (:mod:`bvh.walk.drivers`).

    The state of a walk is ``(consts, first, count, sp, mark, obj, tmax)``:
    the query's constants in the space of the tree it is in, the node or
    leaf to visit next, the stack depth, ``mark`` (-1 on the top level, else
    the depth at which the walk entered object ``obj``) and the far limit.
    The step takes the scene as the walk does; borrowed
    (:mod:`bvh.walk.borrow`), its arrays cost no reference counting per step.
    Returns the next state and whether the walk is over.
    """

    @jit_inline
    def step(scene, origins, directions, tmin, ray, out, stack_first, stack_count, stack_t, consts, first, count, sp,
             mark, obj, tmax):
        if count > 0:
            if mark >= 0:
                tmax, stop = mesh_leaf(scene.tris, first, count, consts, tmin, tmax, ray, out, obj)
                if stop:
                    return consts, first, count, sp, mark, obj, tmax, True
            else:
                o = scene.top_order[np.uint64(first)]
                if scene.enabled[o]:
                    local = object_setup(scene.inverse, o, origins[ray, 0], origins[ray, 1], origins[ray, 2],
                                         directions[ray, 0], directions[ray, 1], directions[ray, 2])
                    kind = scene.kind[o]
                    if kind == MESH:
                        return local, scene.mesh_root[scene.mesh_of[o]], 0, sp, sp, o, tmax, False
                    tmax, stop = shape_leaf(kind, scene.shape_data, scene.shape_start[o], local, tmin, tmax, ray, out,
                                            o)
                    if stop:
                        return consts, first, count, sp, mark, obj, tmax, True
        else:
            if mark >= 0:
                sp, child_first, child_count, found = visit(scene.nodes, scene.links, consts, tmin, tmax, first, sp,
                                                            stack_first, stack_count, stack_t, ray, out)
            else:
                sp, child_first, child_count, found = visit(scene.top_nodes, scene.top_links, consts, tmin, tmax,
                                                            first, sp, stack_first, stack_count, stack_t, ray, out)
            if found:
                return consts, child_first, child_count, sp, mark, obj, tmax, False
        while sp > 0:
            sp -= 1
            if sp < mark:
                mark = -1
                consts = setup(origins[ray, 0], origins[ray, 1], origins[ray, 2], directions[ray, 0],
                               directions[ray, 1], directions[ray, 2])
            if stack_t[np.uint64(sp)] <= tmax:
                return consts, stack_first[np.uint64(sp)], stack_count[np.uint64(sp)], sp, mark, obj, tmax, False
        return consts, first, count, sp, mark, obj, tmax, True

    return step


def make_instance_walk(mesh_leaf, shape_leaf, setup=ray_setup, object_setup=object_ray_setup, visit=visit_node):
    """A whole walk of one world query through a two-level scene, specialised
    to its leaf tests and its kind of query.

    The scene's top level is a four-wide tree over its objects, one object
    per leaf. Reaching a mesh object, the walk takes the query into the
    object's space and goes on down the mesh's tree on the same stack, above
    the entries of the top level (Embree's instancing does the same); when
    the stack falls back below that mark, it takes up the world query again.
    So a scene's rays make the same node visits (:func:`visit_node`) as a
    bare mesh's.

    The kind of query is three functions: ``setup(x0, .., x5)`` makes the
    world query's constants from its six values (row ``ray`` of ``origins``
    and ``directions``), ``object_setup(inverse, o, x0, .., x5)`` makes them
    in object ``o``'s space, and ``visit`` is the node bound. Rays:
    :func:`ray_setup`, :func:`object_ray_setup`, :func:`visit_node`; points:
    :func:`point_setup`, :func:`object_point_setup`, :func:`visit_point`;
    swept spheres: ``bvh.queries.sphere_cast``'s setups and :func:`visit_swept`, with
    a per-ray tuple in place of ``tmin`` (see :func:`make_step`).

    ``mesh_leaf(tris, first, count, consts, tmin, tmax, ray, out, obj)``
    is a mesh leaf test told the query's constants in the object's space and
    the object it is in; ``shape_leaf(kind, shape_data, start, consts, tmin,
    tmax, ray, out, obj)`` tests an analytic shape (:mod:`bvh.shapes`) in
    object space. Both return ``(tmax, stop)``.

    The walk is a loop of :func:`make_instance_step`'s steps; a caller may
    run the steps of two queries in turns instead.
    """
    step = make_instance_step(mesh_leaf, shape_leaf, setup, object_setup, visit)

    @jit_inline
    def walk(scene, origins, directions, tmin, tmax, ray, out, stack_first, stack_count, stack_t):
        """Walk world query ``ray`` (of ``origins``, ``directions``) near to far
        through ``scene``: a ``bvh.queries.scene_rays.SceneArrays``, or any
        named tuple with the fields the step reads (``top_nodes``,
        ``top_links``, ``top_order``, ``enabled``, ``kind``, ``mesh_of``,
        ``inverse``, ``mesh_root``, ``nodes``, ``links``, ``tris``,
        ``shape_start``, ``shape_data``); ``stack_*`` are the query's
        scratch of ``STACK_SIZE`` entries. Returns the final ``tmax``."""
        consts = setup(origins[ray, 0], origins[ray, 1], origins[ray, 2], directions[ray, 0], directions[ray, 1],
                       directions[ray, 2])
        first, count, sp, mark, obj = 0, 0, 0, -1, -1
        done = False
        while not done:
            consts, first, count, sp, mark, obj, tmax, done = step(scene, origins, directions, tmin, ray, out,
                                                                   stack_first, stack_count, stack_t, consts, first,
                                                                   count, sp, mark, obj, tmax)
        return tmax

    return walk
