"""Batch query kernels over a two-level scene BVH: closest hit, any hit, all hits.

The top level is a BVH over the objects' world boxes, walked by the same
traversal as a mesh BVH (``make_traversal``) with an *instance* leaf test:
for each enabled object in the leaf, the ray is taken into object space by
the object's inverse transform (an affine map keeps the ray parameter ``t``,
so ``tmin``, ``tmax`` and hits need no conversion) and either walks the
object's mesh BVH — every mesh's nodes and triangles live in one packed
array, each mesh under its own root row — or meets its analytic shape.

``scene`` is the tuple of plain arrays that describes a snapshot of the
scene (see ``Scene._snapshot``):

``(top_nodes, top_links, top_order, enabled, kind, mesh_of, inverse, mesh_root,
nodes, links, tris, face_index, shape_start, shape_data, mesh_scale)``

with the node and triangle arrays flat, ``inverse`` the ``(O, 3, 4)``
world-to-object maps (the mesh's float32 centring offset folded in) and
``mesh_scale`` each mesh's diagonal, for merging all-hits at shared edges.

Everything down to the per-block loop is inlined into the ``prange`` kernels
(``jit_inline``): as out-of-line calls, the block functions ran at 0.62 of a
single mesh's rate on a one-instance scene; inlined, at 0.97.
"""

import math

import numpy as np
from numba import prange

from ._jit import MAX_DEPTH, RAY_BLOCK, jit, jit_inline, jit_parallel
from .leaf_tests import any_hit_leaf, closest_hit_leaf, collect_hits_leaf, count_hits_leaf, triangle_edges
from .shapes import MESH, NO_HIT, next_after, shape_hit
from .traversal import make_traversal

_mesh_closest = make_traversal(closest_hit_leaf)
_mesh_any = make_traversal(any_hit_leaf)
_mesh_count = make_traversal(count_hits_leaf)
_mesh_collect = make_traversal(collect_hits_leaf)

@jit_inline
def _mesh_closest_hit(nodes, links, tris, root, ox, oy, oz, dx, dy, dz, tmin, tmax, inner_out, stack_node, stack_t):
    """Closest hit of an object-space ray in the mesh under ``root``, into
    ``inner_out``'s one-slot arrays (row -1 when none)."""
    inner_out[0][0] = -1
    _mesh_closest(nodes, links, tris, root, ox, oy, oz, dx, dy, dz, tmin, tmax, 0, inner_out, stack_node, stack_t)


#: Hits of one ray on one object closer than this fraction of the mesh's
#: size, on faces sharing a vertex, are one crossing of the surface.
MERGE_FRACTION = 1.0e-9


@jit_inline
def _object_ray(inverse, o, ox, oy, oz, dx, dy, dz):
    """The ray ``o + t d`` in object ``o``'s space: same ``t``, mapped origin and direction."""
    lox = inverse[o, 0, 0] * ox + inverse[o, 0, 1] * oy + inverse[o, 0, 2] * oz + inverse[o, 0, 3]
    loy = inverse[o, 1, 0] * ox + inverse[o, 1, 1] * oy + inverse[o, 1, 2] * oz + inverse[o, 1, 3]
    loz = inverse[o, 2, 0] * ox + inverse[o, 2, 1] * oy + inverse[o, 2, 2] * oz + inverse[o, 2, 3]
    ldx = inverse[o, 0, 0] * dx + inverse[o, 0, 1] * dy + inverse[o, 0, 2] * dz
    ldy = inverse[o, 1, 0] * dx + inverse[o, 1, 1] * dy + inverse[o, 1, 2] * dz
    ldz = inverse[o, 2, 0] * dx + inverse[o, 2, 1] * dy + inverse[o, 2, 2] * dz
    return lox, loy, loz, ldx, ldy, ldz


# ------------------------------------------------------------------ closest


@jit_inline
def _closest_instance_leaf(order, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out):
    """Instance leaf test keeping the nearest hit over the leaf's objects.

    ``out = (scene, inner, hits)``: ``inner`` is the scratch of the nested
    mesh walk ``((rows, ts, us, vs, cull), stack_node, stack_t)``, one slot
    each, built once per block (building a tuple of arrays costs reference
    counting); ``hits = (object, row, t, u, v, local_normal)`` per ray,
    ``row`` a packed triangle row or -1 for a shape.
    """
    scene, inner, hits = out
    enabled = scene[3]
    kind = scene[4]
    mesh_of = scene[5]
    inverse = scene[6]
    mesh_root = scene[7]
    nodes = scene[8]
    links = scene[9]
    tris = scene[10]
    shape_start = scene[12]
    shape_data = scene[13]
    inner_out, stack_node, stack_t = inner
    rows, ts, us, vs, cull = inner_out
    hit_object, hit_row, hit_t, hit_u, hit_v, hit_normal = hits
    for j in range(first, first + count):
        o = order[j]
        if not enabled[o]:
            continue
        lox, loy, loz, ldx, ldy, ldz = _object_ray(inverse, o, ox, oy, oz, dx, dy, dz)
        if kind[o] == MESH:
            _mesh_closest_hit(nodes, links, tris, mesh_root[mesh_of[o]], lox, loy, loz, ldx, ldy, ldz, tmin, tmax,
                              inner_out, stack_node, stack_t)
            if rows[0] >= 0:
                tmax = ts[0]
                hit_object[ray] = o
                hit_row[ray] = rows[0]
                hit_t[ray] = ts[0]
                hit_u[ray] = us[0]
                hit_v[ray] = vs[0]
        else:
            t, nx, ny, nz = shape_hit(kind[o], shape_data, shape_start[o], lox, loy, loz, ldx, ldy, ldz,
                                      tmin, tmax, cull)
            if t != NO_HIT:
                tmax = t
                hit_object[ray] = o
                hit_row[ray] = -1
                hit_t[ray] = t
                hit_normal[ray, 0] = nx
                hit_normal[ray, 1] = ny
                hit_normal[ray, 2] = nz
    return tmax, False


_top_closest = make_traversal(_closest_instance_leaf)


@jit_inline
def _finish_closest(i, kind, mesh_of, inverse, tris, face_index, origins, directions, hit_object, hit_row, hit_t,
                    hit_u, hit_v, hit_normal, out_object, out_mesh, out_triangle, t, u, v, point, normal, front_face):
    """Turn ray ``i``'s raw hit into world-space outputs (NaN, -1, inf on a miss).

    Takes the scene's arrays one by one, unpacked once per block: taking an
    array out of a tuple costs an atomic reference count increment and
    decrement, which per ray came to a fifth of the time of a pick.
    """
    o = hit_object[i]
    if o < 0:
        out_object[i] = -1
        out_mesh[i] = -1
        out_triangle[i] = -1
        t[i] = np.inf
        u[i] = np.nan
        v[i] = np.nan
        for c in range(3):
            point[i, c] = np.nan
            normal[i, c] = np.nan
        front_face[i] = False
        return
    out_object[i] = o
    t[i] = hit_t[i]
    row = hit_row[i]
    if kind[o] == MESH:
        out_mesh[i] = mesh_of[o]
        out_triangle[i] = face_index[row]
        # Clamp the barycentrics EDGE_TOLERANCE may have let slightly outside.
        ui = min(max(hit_u[i], 0.0), 1.0)
        u[i] = ui
        v[i] = min(max(hit_v[i], 0.0), 1.0 - ui)
        ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z = triangle_edges(tris, row)
        nx = e1y * e2z - e1z * e2y
        ny = e1z * e2x - e1x * e2z
        nz = e1x * e2y - e1y * e2x
    else:
        out_mesh[i] = -1
        out_triangle[i] = -1
        u[i] = np.nan
        v[i] = np.nan
        nx = hit_normal[i, 0]
        ny = hit_normal[i, 1]
        nz = hit_normal[i, 2]
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
def _closest_block(scene, origins, directions, tmin, tmax, cull, start, end, hit_object, hit_row, hit_t, hit_u,
                   hit_v, hit_normal, out_object, out_mesh, out_triangle, t, u, v, point, normal, front_face):
    top_stack_node = np.empty(MAX_DEPTH, np.int32)
    top_stack_t = np.empty(MAX_DEPTH, np.float64)
    inner = ((np.empty(1, np.int32), np.empty(1), np.empty(1), np.empty(1), cull),
             np.empty(MAX_DEPTH, np.int32), np.empty(MAX_DEPTH, np.float64))
    hits = (hit_object, hit_row, hit_t, hit_u, hit_v, hit_normal)
    out = (scene, inner, hits)
    top_nodes, top_links, top_order = scene[0], scene[1], scene[2]
    kind, mesh_of, inverse, tris, face_index = scene[4], scene[5], scene[6], scene[10], scene[11]
    for i in range(start, end):
        hit_object[i] = -1
        _top_closest(top_nodes, top_links, top_order, 0, origins[i, 0], origins[i, 1], origins[i, 2],
                     directions[i, 0], directions[i, 1], directions[i, 2], tmin, tmax, i, out,
                     top_stack_node, top_stack_t)
        _finish_closest(i, kind, mesh_of, inverse, tris, face_index, origins, directions, hit_object, hit_row,
                        hit_t, hit_u, hit_v, hit_normal, out_object, out_mesh, out_triangle, t, u, v, point, normal,
                        front_face)


@jit
def closest_hits_serial(scene, origins, directions, tmin, tmax, cull, out_object, out_mesh, out_triangle, t, u, v,
                        point, normal, front_face):
    # The raw-hit scratch is allocated here, not by the caller: for the few
    # rays of a click, each array passed in costs more in numba's argument
    # dispatch and numpy's allocation than the kernel's own allocation.
    n = origins.shape[0]
    _closest_block(scene, origins, directions, tmin, tmax, cull, 0, n, np.empty(n, np.int32),
                   np.empty(n, np.int32), np.empty(n), np.empty(n), np.empty(n), np.empty((n, 3)),
                   out_object, out_mesh, out_triangle, t, u, v, point, normal, front_face)


@jit_parallel
def closest_hits_parallel(scene, origins, directions, tmin, tmax, cull, hit_object, hit_row, hit_t, hit_u, hit_v,
                          hit_normal, out_object, out_mesh, out_triangle, t, u, v, point, normal, front_face):
    n = origins.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _closest_block(scene, origins, directions, tmin, tmax, cull, b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK),
                       hit_object, hit_row, hit_t, hit_u, hit_v, hit_normal, out_object, out_mesh, out_triangle,
                       t, u, v, point, normal, front_face)


# ------------------------------------------------------------------ any hit


@jit_inline
def _any_instance_leaf(order, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out):
    """Instance leaf test that stops at the first hit. ``out = (scene, inner, occluded)``."""
    scene, inner, occluded = out
    enabled = scene[3]
    kind = scene[4]
    mesh_of = scene[5]
    inverse = scene[6]
    shape_start = scene[12]
    shape_data = scene[13]
    stack_node, stack_t = inner
    for j in range(first, first + count):
        o = order[j]
        if not enabled[o]:
            continue
        lox, loy, loz, ldx, ldy, ldz = _object_ray(inverse, o, ox, oy, oz, dx, dy, dz)
        if kind[o] == MESH:
            _mesh_any(scene[8], scene[9], scene[10], scene[7][mesh_of[o]], lox, loy, loz, ldx, ldy, ldz, tmin,
                      tmax, ray, (occluded,), stack_node, stack_t)
        else:
            t, nx, ny, nz = shape_hit(kind[o], shape_data, shape_start[o], lox, loy, loz, ldx, ldy, ldz,
                                      tmin, tmax, False)
            occluded[ray] = t != NO_HIT
        if occluded[ray]:
            return tmax, True
    return tmax, False


_top_any = make_traversal(_any_instance_leaf)


@jit_inline
def _occluded_block(scene, origins, directions, tmin, tmax, start, end, occluded):
    top_stack_node = np.empty(MAX_DEPTH, np.int32)
    top_stack_t = np.empty(MAX_DEPTH, np.float64)
    out = (scene, (np.empty(MAX_DEPTH, np.int32), np.empty(MAX_DEPTH, np.float64)), occluded)
    for i in range(start, end):
        occluded[i] = False
        _top_any(scene[0], scene[1], scene[2], 0, origins[i, 0], origins[i, 1], origins[i, 2], directions[i, 0],
                 directions[i, 1], directions[i, 2], tmin, tmax, i, out, top_stack_node, top_stack_t)


@jit
def occluded_serial(scene, origins, directions, tmin, tmax, occluded):
    _occluded_block(scene, origins, directions, tmin, tmax, 0, origins.shape[0], occluded)


@jit_parallel
def occluded_parallel(scene, origins, directions, tmin, tmax, occluded):
    n = origins.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _occluded_block(scene, origins, directions, tmin, tmax, b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK),
                        occluded)


# ------------------------------------------------------------------ all hits


@jit_inline
def _count_instance_leaf(order, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out):
    """Instance leaf test counting every crossing. ``out = (scene, inner, counts)``."""
    scene, inner, counts = out
    enabled = scene[3]
    kind = scene[4]
    mesh_of = scene[5]
    inverse = scene[6]
    shape_start = scene[12]
    shape_data = scene[13]
    stack_node, stack_t = inner
    for j in range(first, first + count):
        o = order[j]
        if not enabled[o]:
            continue
        lox, loy, loz, ldx, ldy, ldz = _object_ray(inverse, o, ox, oy, oz, dx, dy, dz)
        if kind[o] == MESH:
            _mesh_count(scene[8], scene[9], scene[10], scene[7][mesh_of[o]], lox, loy, loz, ldx, ldy, ldz, tmin,
                        tmax, ray, (counts,), stack_node, stack_t)
        else:
            # A closed shape is crossed at most twice (in and out).
            start = tmin
            for _ in range(2):
                t, nx, ny, nz = shape_hit(kind[o], shape_data, shape_start[o], lox, loy, loz, ldx, ldy, ldz,
                                          start, tmax, False)
                if t == NO_HIT:
                    break
                counts[ray] += 1
                start = next_after(t)
    return tmax, False


_top_count = make_traversal(_count_instance_leaf)


@jit_inline
def _count_block(scene, origins, directions, tmin, tmax, start, end, counts):
    top_stack_node = np.empty(MAX_DEPTH, np.int32)
    top_stack_t = np.empty(MAX_DEPTH, np.float64)
    out = (scene, (np.empty(MAX_DEPTH, np.int32), np.empty(MAX_DEPTH, np.float64)), counts)
    for i in range(start, end):
        counts[i] = 0
        _top_count(scene[0], scene[1], scene[2], 0, origins[i, 0], origins[i, 1], origins[i, 2], directions[i, 0],
                   directions[i, 1], directions[i, 2], tmin, tmax, i, out, top_stack_node, top_stack_t)


@jit_parallel
def count_hits_parallel(scene, origins, directions, tmin, tmax, counts):
    n = origins.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _count_block(scene, origins, directions, tmin, tmax, b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK), counts)


@jit_inline
def _collect_instance_leaf(order, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out):
    """Instance leaf test appending every crossing to the ray's segment.

    ``out = (scene, inner, (cursor, rows, ts, us, vs, objects))``.
    """
    scene, inner, collected = out
    enabled = scene[3]
    kind = scene[4]
    mesh_of = scene[5]
    inverse = scene[6]
    shape_start = scene[12]
    shape_data = scene[13]
    stack_node, stack_t = inner
    cursor, rows, ts, us, vs, objects = collected
    for j in range(first, first + count):
        o = order[j]
        if not enabled[o]:
            continue
        lox, loy, loz, ldx, ldy, ldz = _object_ray(inverse, o, ox, oy, oz, dx, dy, dz)
        before = cursor[ray]
        if kind[o] == MESH:
            _mesh_collect(scene[8], scene[9], scene[10], scene[7][mesh_of[o]], lox, loy, loz, ldx, ldy, ldz, tmin,
                          tmax, ray, (cursor, rows, ts, us, vs), stack_node, stack_t)
        else:
            start = tmin
            for _ in range(2):
                t, nx, ny, nz = shape_hit(kind[o], shape_data, shape_start[o], lox, loy, loz, ldx, ldy, ldz,
                                          start, tmax, False)
                if t == NO_HIT:
                    break
                slot = cursor[ray]
                rows[slot] = -1
                ts[slot] = t
                us[slot] = np.nan
                vs[slot] = np.nan
                cursor[ray] = slot + 1
                start = next_after(t)
        for slot in range(before, cursor[ray]):
            objects[slot] = o
    return tmax, False


_top_collect = make_traversal(_collect_instance_leaf)


@jit_inline
def _share_vertex(tris, j, k):
    """Whether packed triangle rows ``j`` and ``k`` have a vertex in common."""
    for a in range(3):
        for b in range(3):
            if (tris[j * 9 + 3 * a] == tris[k * 9 + 3 * b] and tris[j * 9 + 3 * a + 1] == tris[k * 9 + 3 * b + 1]
                    and tris[j * 9 + 3 * a + 2] == tris[k * 9 + 3 * b + 2]):
                return True
    return False


@jit_inline
def _collect_block(scene, origins, directions, tmin, tmax, start, end, starts, cursor, rows, ts, us, vs, objects,
                   keep):
    top_stack_node = np.empty(MAX_DEPTH, np.int32)
    top_stack_t = np.empty(MAX_DEPTH, np.float64)
    out = (scene, (np.empty(MAX_DEPTH, np.int32), np.empty(MAX_DEPTH, np.float64)),
           (cursor, rows, ts, us, vs, objects))
    mesh_of = scene[5]
    inverse = scene[6]
    tris = scene[10]
    mesh_scale = scene[14]
    for i in range(start, end):
        cursor[i] = starts[i]
        _top_collect(scene[0], scene[1], scene[2], 0, origins[i, 0], origins[i, 1], origins[i, 2],
                     directions[i, 0], directions[i, 1], directions[i, 2], tmin, tmax, i, out,
                     top_stack_node, top_stack_t)
        lo = starts[i]
        hi = cursor[i]
        # Insertion sort of this ray's hits by t: segments are short.
        for j in range(lo + 1, hi):
            tj = ts[j]
            rj = rows[j]
            uj = us[j]
            vj = vs[j]
            oj = objects[j]
            m = j - 1
            while m >= lo and ts[m] > tj:
                ts[m + 1] = ts[m]
                rows[m + 1] = rows[m]
                us[m + 1] = us[m]
                vs[m + 1] = vs[m]
                objects[m + 1] = objects[m]
                m -= 1
            ts[m + 1] = tj
            rows[m + 1] = rj
            us[m + 1] = uj
            vs[m + 1] = vj
            objects[m + 1] = oj
        # A ray through an edge or vertex shared by faces of one object meets
        # them at one point: one crossing of the surface, reported once.
        kept = -1
        for j in range(lo, hi):
            keep[j] = True
            o = objects[j]
            if kept >= 0 and objects[kept] == o and rows[j] >= 0 and rows[kept] >= 0:
                lox, loy, loz, ldx, ldy, ldz = _object_ray(inverse, o, 0.0, 0.0, 0.0, directions[i, 0],
                                                           directions[i, 1], directions[i, 2])
                length = math.sqrt(ldx * ldx + ldy * ldy + ldz * ldz)
                if ((ts[j] - ts[kept]) * length <= MERGE_FRACTION * mesh_scale[mesh_of[o]]
                        and _share_vertex(tris, rows[j], rows[kept])):
                    keep[j] = False
                    continue
            kept = j


@jit_parallel
def collect_hits_parallel(scene, origins, directions, tmin, tmax, starts, cursor, rows, ts, us, vs, objects, keep):
    n = origins.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _collect_block(scene, origins, directions, tmin, tmax, b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK), starts,
                       cursor, rows, ts, us, vs, objects, keep)
