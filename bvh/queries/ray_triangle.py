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

The leaf tests take a leaf's faces four at a time (:func:`_four_triangles`):
the same float64 arithmetic, one face per lane of ``<4 x double>``
vectors, so four faces cost about what one did; the choice among the
candidates then runs face by face, in leaf order, as it did.

Every test has the signature the traversal expects:
``(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out) -> (tmax, stop)``.
"""

import numpy as np
from llvmlite import ir
from numba import literal_unroll, types
from numba.extending import intrinsic

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


def _four_triangles_ir(builder, data, k, n, ray, cull):
    """IR of :func:`moller_trumbore` for rows ``k .. k + 3`` of the flat
    float32 triangles at ``data``, one row per lane of ``<4 x double>``;
    lanes from ``n`` on repeat row ``k + n - 1`` (every load stays inside
    the array) and are masked off. ``ray`` is ``ox, oy, oz, dx, dy, dz,
    tmin, tmax`` as doubles. Returns the ``<4 x i1>`` candidates (front
    or, unless ``cull``, back facing, inside the edges with
    ``EDGE_TOLERANCE``, ``tmin <= t <= tmax``) and the ``t, u, v``
    vectors. The operations are the scalar test's, in its order, so each
    lane rounds as the scalar test would."""
    f32 = ir.FloatType()
    f64 = ir.DoubleType()
    i32 = ir.IntType(32)
    i64 = ir.IntType(64)
    v4f = ir.VectorType(f32, 4)
    v4d = ir.VectorType(f64, 4)
    zeros = ir.Constant(ir.VectorType(i32, 4), [0, 0, 0, 0])

    def splat(value):
        lane = builder.insert_element(ir.Constant(v4d, ir.Undefined), value, i32(0))
        return builder.shuffle_vector(lane, lane, zeros)

    columns = [ir.Constant(v4f, ir.Undefined)] * 9
    last = builder.sub(n, i64(1))
    for lane in range(4):
        row = builder.add(k, builder.select(builder.icmp_signed("<", i64(lane), n), i64(lane), last))
        base = builder.mul(row, i64(9))
        for c in range(9):
            value = builder.load(builder.gep(data, [builder.add(base, i64(c))]))
            columns[c] = builder.insert_element(columns[c], value, i32(lane))
    ax, ay, az, bx, by, bz, cx, cy, cz = [builder.fpext(column, v4d) for column in columns]
    ox, oy, oz, dx, dy, dz, tmin, tmax = [splat(value) for value in ray]
    sub, mul, add = builder.fsub, builder.fmul, builder.fadd
    e1x, e1y, e1z = sub(bx, ax), sub(by, ay), sub(bz, az)
    e2x, e2y, e2z = sub(cx, ax), sub(cy, ay), sub(cz, az)
    sx, sy, sz = sub(ox, ax), sub(oy, ay), sub(oz, az)
    px = sub(mul(dy, e2z), mul(dz, e2y))
    py = sub(mul(dz, e2x), mul(dx, e2z))
    pz = sub(mul(dx, e2y), mul(dy, e2x))
    det = add(add(mul(e1x, px), mul(e1y, py)), mul(e1z, pz))
    inv_det = builder.fdiv(splat(f64(1.0)), det)
    u = mul(add(add(mul(sx, px), mul(sy, py)), mul(sz, pz)), inv_det)
    qx = sub(mul(sy, e1z), mul(sz, e1y))
    qy = sub(mul(sz, e1x), mul(sx, e1z))
    qz = sub(mul(sx, e1y), mul(sy, e1x))
    v = mul(add(add(mul(dx, qx), mul(dy, qy)), mul(dz, qz)), inv_det)
    t = mul(add(add(mul(e2x, qx), mul(e2y, qy)), mul(e2z, qz)), inv_det)
    zero = splat(f64(0.0))
    facing = builder.select(cull, builder.fcmp_ordered(">", det, zero), builder.fcmp_unordered("!=", det, zero))
    low = splat(f64(-EDGE_TOLERANCE))
    high = splat(f64(1.0 + EDGE_TOLERANCE))
    tests = [facing, builder.fcmp_ordered(">=", u, low), builder.fcmp_ordered("<=", u, high),
             builder.fcmp_ordered(">=", v, low), builder.fcmp_ordered("<=", add(u, v), high),
             builder.fcmp_ordered(">=", t, tmin), builder.fcmp_ordered("<=", t, tmax)]
    lanes = builder.insert_element(ir.Constant(ir.VectorType(i64, 4), ir.Undefined), n, i32(0))
    lanes = builder.shuffle_vector(lanes, lanes, zeros)
    tests.append(builder.icmp_signed(">", lanes, ir.Constant(ir.VectorType(i64, 4), [0, 1, 2, 3])))
    candidate = tests[0]
    for test in tests[1:]:
        candidate = builder.and_(candidate, test)
    return candidate, t, u, v


_FOUR = types.UniTuple(types.float64, 4)


@intrinsic
def _four_triangles(typingctx, tris, k, n, ox, oy, oz, dx, dy, dz, tmin, tmax, cull):
    """Möller and Trumbore's test of the ray against rows ``k`` to ``k + n
    - 1`` (``1 <= n <= 4``) of the flat float32 triangles at address
    ``tris`` (``.ctypes.data``), each face as :func:`moller_trumbore`
    tests it. Returns ``(mask, t, u, v)``: bit ``j`` of ``mask`` set when
    row ``k + j`` is a candidate hit in ``[tmin, tmax]``, and its ``t, u,
    v`` at index ``j`` of the three 4-tuples.

    An intrinsic on an address, as the node visits are
    (:mod:`bvh.walk.traversal`): numba has no vector type, and an array
    argument would be reference counted on every leaf."""
    sig = types.Tuple((types.int64, _FOUR, _FOUR, _FOUR))(tris, k, n, ox, oy, oz, dx, dy, dz, tmin, tmax, cull)

    def codegen(context, builder, signature, args):
        kinds = signature.args
        data = builder.inttoptr(context.cast(builder, args[0], kinds[0], types.uintp), ir.FloatType().as_pointer())
        k_value, n_value = [context.cast(builder, args[j], kinds[j], types.int64) for j in (1, 2)]
        ray = [context.cast(builder, args[j], kinds[j], types.float64) for j in range(3, 11)]
        cull_value = context.cast(builder, args[11], kinds[11], types.boolean)
        candidate, t, u, v = _four_triangles_ir(builder, data, k_value, n_value, ray,
                                                builder.trunc(cull_value, ir.IntType(1))
                                                if cull_value.type != ir.IntType(1) else cull_value)
        mask = builder.zext(builder.bitcast(candidate, ir.IntType(4)), ir.IntType(64))
        result = context.get_constant_undef(signature.return_type)
        result = builder.insert_value(result, mask, 0)
        for slot, vector in ((1, t), (2, u), (3, v)):
            for lane in range(4):
                result = builder.insert_value(result, builder.extract_element(vector, ir.IntType(32)(lane)),
                                              [slot, lane])
        return result

    return sig, codegen


@jit_inline
def four_triangles(tris, k, n, ox, oy, oz, dx, dy, dz, tmin, tmax, cull_backfaces):
    """:func:`_four_triangles` of the flat triangle array ``tris``: ``(mask,
    t, u, v)`` of rows ``k`` to ``k + n - 1``, ``n`` at most 4."""
    return _four_triangles(tris.ctypes.data, k, n, ox, oy, oz, dx, dy, dz, tmin, tmax, cull_backfaces)


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
        end = first + count
        for k in range(first, end, 4):
            mask, ts, us, vs = four_triangles(tris, k, min(end - k, 4), ox, oy, oz, dx, dy, dz, tmin, tmax, cull)
            if mask == 0:
                continue
            for j in range(4):
                t = ts[j]
                if (mask >> j) & 1 and (t < tmax or hit[HIT_ROW] < 0.0) and passes(test, k + j, us[j], vs[j], obj):
                    tmax = t
                    hit[HIT_T] = t
                    hit[HIT_U] = us[j]
                    hit[HIT_V] = vs[j]
                    hit[HIT_ROW] = k + j
        return tmax, False

    @jit_inline
    def any_hit(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out, test, obj):
        occluded = out[0]
        end = first + count
        for k in range(first, end, 4):
            mask, ts, us, vs = four_triangles(tris, k, min(end - k, 4), ox, oy, oz, dx, dy, dz, tmin, tmax, False)
            if mask == 0:
                continue
            for j in range(4):
                if (mask >> j) & 1 and passes(test, k + j, us[j], vs[j], obj):
                    occluded[ray] = True
                    return tmax, True
        return tmax, False

    @jit_inline
    def count_hits(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out, test, obj):
        counts = out[0]
        end = first + count
        for k in range(first, end, 4):
            mask, ts, us, vs = four_triangles(tris, k, min(end - k, 4), ox, oy, oz, dx, dy, dz, tmin, tmax, False)
            if mask == 0:
                continue
            for j in range(4):
                if (mask >> j) & 1 and passes(test, k + j, us[j], vs[j], obj):
                    counts[ray] += 1
        return tmax, False

    @jit_inline
    def collect_hits(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out, test, obj):
        cursor, rows, ts_out, us_out, vs_out = out
        end = first + count
        for k in range(first, end, 4):
            mask, ts, us, vs = four_triangles(tris, k, min(end - k, 4), ox, oy, oz, dx, dy, dz, tmin, tmax, False)
            if mask == 0:
                continue
            for j in range(4):
                if (mask >> j) & 1 and passes(test, k + j, us[j], vs[j], obj):
                    slot = cursor[ray]
                    rows[slot] = k + j
                    ts_out[slot] = ts[j]
                    us_out[slot] = us[j]
                    vs_out[slot] = vs[j]
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
