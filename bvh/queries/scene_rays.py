"""Batch query kernels over a two-level scene: closest hit, any hit, all hits.

Every query walks the scene with :func:`bvh.walk.traversal.make_instance_step`:
the top level's four-wide tree over the objects' world boxes, and below each
mesh object its mesh's four-wide tree, on one stack, with the ray in the
object's space (the mesh's float32 centring offset folded into the object's
inverse transform). Every mesh's nodes and triangles live in one packed
array (:mod:`bvh.scene.mesh_pack`), each mesh under its own root row. What differs
between the queries is only the pair of leaf tests, below.

The block functions are compiled out of line (``jit``), as the mesh
kernels' are: the per-ray loop unpacks the scene's arrays once per block, so
the call costs nothing measurable, and numba's parallel lowering mishandled
a two-lane loop inlined into a ``prange`` body (every ray missed).
"""

import math
from typing import NamedTuple

import numpy as np
from numba import prange

from .._jit import RAY_BLOCK, jit, jit_inline, jit_parallel
from .alpha import any_hit_leaf_alpha, closest_hit_leaf_alpha, collect_hits_leaf_alpha, count_hits_leaf_alpha
from ..walk.borrow import borrowed, frame_array
from .ray_triangle import (HIT_NORMAL, HIT_OBJECT, HIT_ROW, HIT_T, HIT_U, HIT_V, hit_record, share_vertex, sort_hits,
                           triangle_edges, write_miss)
from ..shapes import MESH, NO_HIT, next_after, shape_hit
from ..walk.drivers import make_instance_lanes
from ..walk.space import object_ray, ray_of, ray_setup
from ..walk.traversal import make_instance_step, make_instance_walk, new_stack


class SceneArrays(NamedTuple):
    """A snapshot of a scene as the kernels take it (``Scene._snapshot``);
    ``O`` objects, ``K`` meshes, every array read-only and 1-D ones flat.

    Attributes
    ----------
    top_nodes, top_links : (R * 32,) float32, int32
        The top level's four-wide nodes (:mod:`bvh.walk.nodes`) and their
        int32 view; a leaf is one row of ``top_order``.
    top_order : (L,) int32
        Object of each top-level leaf row.
    enabled : (O,) bool
        Whether a query sees each object (mask, filters, pickable, removed).
    kind : (O,) int32
        ``bvh.shapes.MESH`` or a shape's code (``REMOVED`` for a hole).
    mesh_of : (O,) int32
        Mesh of each mesh object.
    inverse : (O, 3, 4) float64
        World-to-object maps, the mesh's centring offset folded in.
    mesh_root : (K,) int32
        Node row of each mesh's root in ``nodes``.
    nodes, links : (M * 32,) float32, int32
        Every mesh's four-wide nodes, links rebased into the packed arrays.
    tris : (T * 9,) float32
        Every mesh's triangles in leaf order, relative to its mesh's offset.
    face_index : (T,) int32
        Face, within its mesh, of each packed triangle row.
    shape_start : (O,) int32
        Start of each shape's parameters in ``shape_data``.
    shape_data : (S,) float64
        Every shape's parameters (:mod:`bvh.shapes`).
    mesh_scale : (K,) float64
        Diagonal of each mesh's box, for merging all-hits at shared edges.
    """

    top_nodes: np.ndarray
    top_links: np.ndarray
    top_order: np.ndarray
    enabled: np.ndarray
    kind: np.ndarray
    mesh_of: np.ndarray
    inverse: np.ndarray
    mesh_root: np.ndarray
    nodes: np.ndarray
    links: np.ndarray
    tris: np.ndarray
    face_index: np.ndarray
    shape_start: np.ndarray
    shape_data: np.ndarray
    mesh_scale: np.ndarray


#: Hits of one ray on one object closer than this fraction of the mesh's
#: size, on faces sharing a vertex, are one crossing of the surface.
MERGE_FRACTION = 1.0e-9


# ------------------------------------------------------------------ leaf tests
#
# ``out`` of the closest-hit tests: ``(hit, cull, alpha)``, the ray's hit record
# (``bvh.queries.ray_triangle.HIT_*``: t, u, v, packed triangle row or -1 for a shape,
# object, a shape's object-space normal), the culling flag and the query's
# ``bvh.queries.alpha.ALPHA_FIELDS`` tuple; every query's ``out`` ends with the latter, which
# the mesh leaves' alpha test reads (shapes have no texture).


@jit_inline
def closest_mesh_leaf(tris, first, count, consts, tmin, tmax, ray, out, obj):
    ox, oy, oz, dx, dy, dz = ray_of(consts)
    hit = out[0]
    row, t = hit[HIT_ROW], hit[HIT_T]
    tmax, stop = closest_hit_leaf_alpha(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, (hit, out[1]),
                                        out[2], obj)
    # Two instances of one mesh share its rows: a new hit changes t or row.
    if hit[HIT_ROW] != row or hit[HIT_T] != t:
        hit[HIT_OBJECT] = obj
    return tmax, stop


@jit_inline
def closest_shape_leaf(kind, shape_data, start, consts, tmin, tmax, ray, out, obj):
    ox, oy, oz, dx, dy, dz = ray_of(consts)
    hit, cull = out[0], out[1]
    t, nx, ny, nz = shape_hit(kind, shape_data, start, ox, oy, oz, dx, dy, dz, tmin, tmax, cull)
    if t != NO_HIT:
        hit[HIT_T] = t
        hit[HIT_ROW] = -1.0
        hit[HIT_OBJECT] = obj
        hit[HIT_NORMAL] = nx
        hit[HIT_NORMAL + 1] = ny
        hit[HIT_NORMAL + 2] = nz
        return t, False
    return tmax, False


@jit_inline
def shape_crossings(kind, shape_data, start, consts, tmin, tmax):
    """The first two crossings of a shape object's surface by the ray of
    ``consts`` in ``[tmin, tmax]``: ``(t0, t1)``, ``NO_HIT`` where there is
    none. A closed shape is crossed at most twice (in and out)."""
    ox, oy, oz, dx, dy, dz = ray_of(consts)
    t0 = shape_hit(kind, shape_data, start, ox, oy, oz, dx, dy, dz, tmin, tmax, False)[0]
    if t0 == NO_HIT:
        return NO_HIT, NO_HIT
    return t0, shape_hit(kind, shape_data, start, ox, oy, oz, dx, dy, dz, next_after(t0), tmax, False)[0]


@jit_inline
def _any_mesh_leaf(tris, first, count, consts, tmin, tmax, ray, out, obj):
    ox, oy, oz, dx, dy, dz = ray_of(consts)
    return any_hit_leaf_alpha(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, (out[0],), out[1], obj)


@jit_inline
def _any_shape_leaf(kind, shape_data, start, consts, tmin, tmax, ray, out, obj):
    ox, oy, oz, dx, dy, dz = ray_of(consts)
    t, nx, ny, nz = shape_hit(kind, shape_data, start, ox, oy, oz, dx, dy, dz, tmin, tmax, False)
    if t != NO_HIT:
        out[0][ray] = True
        return tmax, True
    return tmax, False


@jit_inline
def _count_mesh_leaf(tris, first, count, consts, tmin, tmax, ray, out, obj):
    ox, oy, oz, dx, dy, dz = ray_of(consts)
    return count_hits_leaf_alpha(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, (out[0],), out[1],
                                 obj)


@jit_inline
def _count_shape_leaf(kind, shape_data, start, consts, tmin, tmax, ray, out, obj):
    counts = out[0]
    for t in shape_crossings(kind, shape_data, start, consts, tmin, tmax):
        if t != NO_HIT:
            counts[ray] += 1
    return tmax, False


# ``out`` of the collecting tests: ``((cursor, rows, ts, us, vs), objects, alpha)``.


@jit_inline
def _collect_mesh_leaf(tris, first, count, consts, tmin, tmax, ray, out, obj):
    ox, oy, oz, dx, dy, dz = ray_of(consts)
    triangle_out, objects = out[0], out[1]
    cursor = triangle_out[0]
    before = cursor[ray]
    collect_hits_leaf_alpha(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, triangle_out, out[2], obj)
    for slot in range(before, cursor[ray]):
        objects[slot] = obj
    return tmax, False


@jit_inline
def _collect_shape_leaf(kind, shape_data, start, consts, tmin, tmax, ray, out, obj):
    triangle_out, objects = out[0], out[1]
    cursor, rows, ts, us, vs = triangle_out
    for t in shape_crossings(kind, shape_data, start, consts, tmin, tmax):
        if t == NO_HIT:
            break
        slot = cursor[ray]
        rows[slot] = -1
        ts[slot] = t
        us[slot] = np.nan
        vs[slot] = np.nan
        objects[slot] = obj
        cursor[ray] = slot + 1
    return tmax, False


_closest_step = make_instance_step(closest_mesh_leaf, closest_shape_leaf)
_closest_walk = make_instance_walk(closest_mesh_leaf, closest_shape_leaf)
_collect_walk = make_instance_walk(_collect_mesh_leaf, _collect_shape_leaf)


# ------------------------------------------------------------------ closest


@jit_inline
def finish_closest(start, end, base, kind, mesh_of, inverse, tris, face_index, origins, directions, hit_object,
                   hit_row, hit_t, hit_u, hit_v, hit_normal, out_object, out_mesh, out_triangle, t, u, v, point,
                   normal, front_face):
    """For each ray ``i`` of ``start:end``, turn its raw hit (row ``i - base``
    of the ``hit_*`` scratch, :func:`keep_hit`'s) into world-space outputs
    (NaN, -1, inf on a miss).

    Takes the scene's arrays one by one, unpacked once per block, and loops
    over the rays itself: numba counts a reference to every array handed to
    an inlined function, on every call (measured: 20 atomic increments and
    decrements per ray, called once per ray).
    """
    for i in range(start, end):
        j = i - base
        o = hit_object[j]
        if o < 0:
            out_object[i] = -1
            out_mesh[i] = -1
            out_triangle[i] = -1
            write_miss(i, t, u, v, point, normal)
            front_face[i] = False
            continue
        out_object[i] = o
        t[i] = hit_t[j]
        row = hit_row[j]
        if kind[o] == MESH:
            out_mesh[i] = mesh_of[o]
            out_triangle[i] = face_index[row]
            # Clamp the barycentrics EDGE_TOLERANCE may have let slightly outside.
            ui = min(max(hit_u[j], 0.0), 1.0)
            u[i] = ui
            v[i] = min(max(hit_v[j], 0.0), 1.0 - ui)
            ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z = triangle_edges(tris, row)
            nx = e1y * e2z - e1z * e2y
            ny = e1z * e2x - e1x * e2z
            nz = e1x * e2y - e1y * e2x
        else:
            out_mesh[i] = -1
            out_triangle[i] = -1
            u[i] = np.nan
            v[i] = np.nan
            nx = hit_normal[3 * j]
            ny = hit_normal[3 * j + 1]
            nz = hit_normal[3 * j + 2]
        # Normals map by the inverse transpose: the transpose of the linear part
        # of the world-to-object map. It keeps "outward" outward under mirroring,
        # and keeps the sign of direction . normal, so front faces stay front.
        wx = inverse[o, 0, 0] * nx + inverse[o, 1, 0] * ny + inverse[o, 2, 0] * nz
        wy = inverse[o, 0, 1] * nx + inverse[o, 1, 1] * ny + inverse[o, 2, 1] * nz
        wz = inverse[o, 0, 2] * nx + inverse[o, 1, 2] * ny + inverse[o, 2, 2] * nz
        inv_len = 1.0 / math.sqrt(wx * wx + wy * wy + wz * wz)
        normal[i, 0] = wx * inv_len
        normal[i, 1] = wy * inv_len
        normal[i, 2] = wz * inv_len
        for c in range(3):
            point[i, c] = origins[i, c] + t[i] * directions[i, c]
        front_face[i] = wx * directions[i, 0] + wy * directions[i, 1] + wz * directions[i, 2] < 0.0


@jit_inline
def start_hit(hit):
    hit[HIT_T] = np.inf
    hit[HIT_ROW] = -1.0
    hit[HIT_OBJECT] = -1.0


@jit_inline
def keep_hit(hit, j, hit_object, hit_row, hit_t, hit_u, hit_v, hit_normal):
    """A walk's hit record into row ``j`` of the raw-hit scratch
    (``hit_normal`` flat, three values a row)."""
    hit_object[j] = np.int32(hit[HIT_OBJECT])
    hit_row[j] = np.int32(hit[HIT_ROW])
    hit_t[j] = hit[HIT_T]
    hit_u[j] = hit[HIT_U]
    hit_v[j] = hit[HIT_V]
    for c in range(3):
        hit_normal[3 * j + c] = hit[HIT_NORMAL + c]


#: One block's raw-hit scratch, in :func:`closest_hits_block`'s frame.
_block_rows = frame_array(RAY_BLOCK, np.int32)
_block_values = frame_array(RAY_BLOCK, np.float64)
_block_normals = frame_array(3 * RAY_BLOCK, np.float64)


class RawHits(NamedTuple):
    """Raw hits (:func:`keep_hit`'s rows) waiting for :func:`finish_closest`:
    ``object``, ``row`` (int32), ``t``, ``u``, ``v`` (float64) and
    ``normal`` (float64, flat, three values a row)."""

    object: np.ndarray
    row: np.ndarray
    t: np.ndarray
    u: np.ndarray
    v: np.ndarray
    normal: np.ndarray


class _ClosestBlock(NamedTuple):
    """What the two lanes of a closest-hit block share
    (:func:`bvh.walk.drivers.make_instance_lanes`): the scene, the rays and
    their window, the leaf tests' flags, and where raw hits go (row ``i -
    base`` of ``raw``)."""

    scene: SceneArrays
    origins: np.ndarray
    directions: np.ndarray
    tmin: float
    tmax: float
    cull: bool
    alpha: tuple
    raw: RawHits
    base: int


@jit_inline
def _begin_closest(block, hit, i):
    """Ray ``i``'s world constants, its ``tmin`` and ``out`` (the closest
    leaves'), no hit yet in ``hit``."""
    start_hit(hit)
    origins, directions = block.origins, block.directions
    consts = ray_setup(origins[i, 0], origins[i, 1], origins[i, 2], directions[i, 0], directions[i, 1],
                       directions[i, 2])
    return consts, block.tmin, (hit, block.cull, block.alpha)


@jit_inline
def _finish_ray(block, hit, i):
    raw = block.raw
    keep_hit(hit, i - block.base, raw.object, raw.row, raw.t, raw.u, raw.v, raw.normal)


_closest_lanes = make_instance_lanes(_closest_step, _begin_closest, _finish_ray)


@jit
def closest_hits_block(scene, alpha, origins, directions, tmin, tmax, cull, start, end, out_object, out_mesh,
                       out_triangle, t, u, v, point, normal, front_face):
    """Closest hits of rays ``start:end``, written as
    :func:`closest_hits_parallel` writes them, two rays walking in turns
    (:mod:`bvh.walk.drivers`) and a second pass to the outputs, block by
    block of ``RAY_BLOCK`` rays."""
    if start >= end:
        return
    scene, alpha, origins, directions = borrowed((scene, alpha, origins, directions))
    # The raw hits wait in the frame, RAY_BLOCK rays at a time, for the
    # second pass, rather than in arrays of every ray that the caller
    # allocates: 56 bytes a ray, 11 MB for a batch of 200,000 rays (no
    # change in speed measured, as the allocator reuses the pages).
    raw = RawHits(_block_rows(), _block_rows(), _block_values(), _block_values(), _block_values(), _block_normals())
    hit_a = hit_record()
    hit_b = hit_record()
    for chunk in range(start, end, RAY_BLOCK):
        chunk_end = min(end, chunk + RAY_BLOCK)
        _closest_lanes(_ClosestBlock(scene, origins, directions, tmin, tmax, cull, alpha, raw, chunk), hit_a, hit_b,
                       chunk, chunk_end)
        # A second pass, as in bvh.queries.mesh_rays: inside the walk's loop the outputs
        # would crowd the registers the walk needs.
        finish_closest(chunk, chunk_end, chunk, scene.kind, scene.mesh_of, scene.inverse, scene.tris,
                       scene.face_index, origins, directions, raw.object, raw.row, raw.t, raw.u, raw.v, raw.normal,
                       out_object, out_mesh, out_triangle, t, u, v, point, normal, front_face)


@jit
def closest_hits_serial(scene, alpha, origins, directions, tmin, tmax, cull, out_object, out_mesh, out_triangle, t,
                        u, v, point, normal, front_face):
    """:func:`closest_hits_parallel` on the calling thread for the few rays of
    a click, one ray at a time: two rays in turns would double the code a
    first start compiles before it answers, for rays too few to gain."""
    # The raw-hit scratch is allocated here, not by the caller: for the few
    # rays of a click, each array passed in costs more in numba's argument
    # dispatch and numpy's allocation than the kernel's own allocation.
    n = origins.shape[0]
    scene, alpha, origins, directions = borrowed((scene, alpha, origins, directions))
    hit_object, hit_row = np.empty(n, np.int32), np.empty(n, np.int32)
    hit_t, hit_u, hit_v, hit_normal = np.empty(n), np.empty(n), np.empty(n), np.empty(3 * n)
    stack_first, stack_count, stack_t = new_stack()
    hit = hit_record()
    out = (hit, cull, alpha)
    for i in range(n):
        start_hit(hit)
        _closest_walk(scene, origins, directions, tmin, tmax, i, out, stack_first, stack_count, stack_t)
        keep_hit(hit, i, hit_object, hit_row, hit_t, hit_u, hit_v, hit_normal)
    finish_closest(0, n, 0, scene.kind, scene.mesh_of, scene.inverse, scene.tris, scene.face_index, origins, directions,
                   hit_object, hit_row, hit_t, hit_u, hit_v, hit_normal, out_object, out_mesh, out_triangle, t, u, v,
                   point, normal, front_face)


@jit_parallel
def closest_hits_parallel(scene, alpha, origins, directions, tmin, tmax, cull, out_object, out_mesh, out_triangle, t,
                          u, v, point, normal, front_face):
    n = origins.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        closest_hits_block(scene, alpha, origins, directions, tmin, tmax, cull, b * RAY_BLOCK,
                           min(n, (b + 1) * RAY_BLOCK), out_object, out_mesh, out_triangle, t, u, v, point, normal,
                           front_face)


# ------------------------------------------------------------------ any hit


def _make_answer_rays(walk, empty):
    """The block loop of a query with one answer per ray, which its leaf
    tests write (``occluded``, hit counts): each ray's answer set to
    ``empty``, then its walk by ``walk`` (:func:`make_instance_walk` of the
    leaf tests). Inlined into the block kernels, as the walk is."""

    @jit_inline
    def answer_rays(scene, alpha, origins, directions, tmin, tmax, start, end, answers):
        scene, alpha, origins, directions = borrowed((scene, alpha, origins, directions))
        stack_first, stack_count, stack_t = new_stack()
        out = (answers, alpha)
        for i in range(start, end):
            answers[i] = empty
            walk(scene, origins, directions, tmin, tmax, i, out, stack_first, stack_count, stack_t)

    return answer_rays


_occluded_rays = _make_answer_rays(make_instance_walk(_any_mesh_leaf, _any_shape_leaf), False)
_count_rays = _make_answer_rays(make_instance_walk(_count_mesh_leaf, _count_shape_leaf), 0)


@jit
def _occluded_block(scene, alpha, origins, directions, tmin, tmax, start, end, occluded):
    _occluded_rays(scene, alpha, origins, directions, tmin, tmax, start, end, occluded)


@jit
def occluded_serial(scene, alpha, origins, directions, tmin, tmax, occluded):
    _occluded_block(scene, alpha, origins, directions, tmin, tmax, np.int64(0), origins.shape[0], occluded)


@jit_parallel
def occluded_parallel(scene, alpha, origins, directions, tmin, tmax, occluded):
    n = origins.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _occluded_block(scene, alpha, origins, directions, tmin, tmax, b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK),
                        occluded)


# ------------------------------------------------------------------ all hits


@jit
def _count_block(scene, alpha, origins, directions, tmin, tmax, start, end, counts):
    _count_rays(scene, alpha, origins, directions, tmin, tmax, start, end, counts)


@jit_parallel
def count_hits_parallel(scene, alpha, origins, directions, tmin, tmax, counts):
    n = origins.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _count_block(scene, alpha, origins, directions, tmin, tmax, b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK), counts)


@jit
def _collect_block(scene, alpha, origins, directions, tmin, tmax, start, end, starts, cursor, rows, ts, us, vs, objects,
                   keep):
    scene, alpha, origins, directions = borrowed((scene, alpha, origins, directions))
    stack_first, stack_count, stack_t = new_stack()
    out = ((cursor, rows, ts, us, vs), objects, alpha)
    mesh_of = scene.mesh_of
    inverse = scene.inverse
    tris = scene.tris
    mesh_scale = scene.mesh_scale
    for i in range(start, end):
        cursor[i] = starts[i]
        _collect_walk(scene, origins, directions, tmin, tmax, i, out, stack_first, stack_count, stack_t)
        lo = starts[i]
        hi = cursor[i]
        sort_hits(lo, hi, ts, (rows, us, vs, objects))
        # A ray through an edge or vertex shared by faces of one object meets
        # them at one point: one crossing of the surface, reported once.
        kept = -1
        for j in range(lo, hi):
            keep[j] = True
            o = objects[j]
            if kept >= 0 and objects[kept] == o and rows[j] >= 0 and rows[kept] >= 0:
                lox, loy, loz, ldx, ldy, ldz = object_ray(inverse, o, 0.0, 0.0, 0.0, directions[i, 0],
                                                          directions[i, 1], directions[i, 2])
                length = math.sqrt(ldx * ldx + ldy * ldy + ldz * ldz)
                if ((ts[j] - ts[kept]) * length <= MERGE_FRACTION * mesh_scale[mesh_of[o]]
                        and share_vertex(tris, rows[j], rows[kept])):
                    keep[j] = False
                    continue
            kept = j


@jit_parallel
def collect_hits_parallel(scene, alpha, origins, directions, tmin, tmax, starts, cursor, rows, ts, us, vs, objects,
                          keep):
    n = origins.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _collect_block(scene, alpha, origins, directions, tmin, tmax, b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK),
                       starts, cursor, rows, ts, us, vs, objects, keep)
