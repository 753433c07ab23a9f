"""Batch query kernels over a mesh BVH: closest hit, any hit, all hits.

Every kernel walks the four-wide tree (:mod:`bvh.walk.traversal`); the
closest-hit kernel walks two rays in turns. Each query has a serial kernel
(one ray or a few: no thread-pool wake-up) and a parallel one that
``prange``s over blocks of ``RAY_BLOCK`` rays, each block
with its own fixed-size traversal stack, allocated once per block and never
inside the per-ray loop. Kernels take plain arrays; the Python wrappers in
``mesh_bvh`` validate inputs and shape results.
"""

import math
from typing import NamedTuple

import numpy as np
from numba import prange

from .._jit import RAY_BLOCK, jit, jit_inline, jit_parallel
from .ray_triangle import (HIT_ROW, HIT_T, HIT_U, HIT_V, any_hit_leaf, closest_hit_leaf, collect_hits_leaf,
                           count_hits_leaf, hit_record, share_vertex, sort_hits, triangle_edges,
                           write_miss)
from ..walk.borrow import borrowed
from ..walk.drivers import make_tree_lanes
from ..walk.space import ray_setup
from ..walk.traversal import make_step, make_traversal, new_stack

_closest_step = make_step(closest_hit_leaf)
_collect_traversal = make_traversal(collect_hits_leaf)


@jit_inline
def _keep(hit, i, rows, t, u, v):
    """Ray ``i``'s hit record into the per-ray arrays."""
    rows[i] = np.int32(hit[HIT_ROW])
    t[i] = hit[HIT_T]
    u[i] = hit[HIT_U]
    v[i] = hit[HIT_V]


@jit_inline
def _finish_closest(start, end, tris, face_index, origins, directions, rows, triangle, t, u, v, point, normal,
                    front_face):
    """For each ray ``i`` of ``start:end``, turn its hit row (``rows[i]``, -1
    for none) and its ``t, u, v`` into the outputs; ``tris`` is the flat
    ``(T * 9,)`` triangle array. The loop is here, not in the caller: numba
    counts a reference to every array handed to an inlined function, on
    every call."""
    for i in range(start, end):
        k = rows[i]
        if k < 0:
            triangle[i] = -1
            write_miss(i, t, u, v, point, normal)
            front_face[i] = False
            continue
        triangle[i] = face_index[k]
        # Clamp the barycentrics EDGE_TOLERANCE may have let slightly outside.
        ui = min(max(u[i], 0.0), 1.0)
        vi = min(max(v[i], 0.0), 1.0 - ui)
        u[i] = ui
        v[i] = vi
        for c in range(3):
            point[i, c] = origins[i, c] + t[i] * directions[i, c]
        ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z = triangle_edges(tris, k)
        nx = e1y * e2z - e1z * e2y
        ny = e1z * e2x - e1x * e2z
        nz = e1x * e2y - e1y * e2x
        inv_len = 1.0 / math.sqrt(nx * nx + ny * ny + nz * nz)
        normal[i, 0] = nx * inv_len
        normal[i, 1] = ny * inv_len
        normal[i, 2] = nz * inv_len
        front_face[i] = nx * directions[i, 0] + ny * directions[i, 1] + nz * directions[i, 2] < 0.0


class _ClosestBlock(NamedTuple):
    """What the two lanes of a closest-hit block share
    (:func:`bvh.walk.drivers.make_tree_lanes`): the flat tree, the
    mesh's centring offset, the rays and their window, and the per-ray
    outputs the walk fills."""

    nodes: np.ndarray
    links: np.ndarray
    tris: np.ndarray
    offset: np.ndarray
    origins: np.ndarray
    directions: np.ndarray
    tmin: float
    tmax: float
    cull: bool
    rows: np.ndarray
    t: np.ndarray
    u: np.ndarray
    v: np.ndarray


@jit_inline
def _begin_closest(block, hit, i):
    """Ray ``i``'s slab constants in the mesh's centred frame, its ``tmin``
    and ``out`` (``closest_hit_leaf``'s), no hit yet in ``hit``."""
    hit[HIT_ROW] = -1.0
    offset, origins, directions = block.offset, block.origins, block.directions
    consts = ray_setup(origins[i, 0] - offset[0], origins[i, 1] - offset[1], origins[i, 2] - offset[2],
                       directions[i, 0], directions[i, 1], directions[i, 2])
    return consts, block.tmin, (hit, block.cull)


@jit_inline
def _finish_ray(block, hit, i):
    _keep(hit, i, block.rows, block.t, block.u, block.v)


_closest_lanes = make_tree_lanes(_closest_step, _begin_closest, _finish_ray)


@jit
def _closest_block(nodes, links, tris, face_index, offset, origins, directions, tmin, tmax, cull,
                   start, end, rows, triangle, t, u, v, point, normal, front_face):
    if start >= end:
        return
    flat_tris = tris.reshape(tris.size)
    block = borrowed(_ClosestBlock(nodes.reshape(nodes.size), links.reshape(links.size), flat_tris, offset, origins,
                                   directions, tmin, tmax, cull, rows, t, u, v))
    # Two rays in turns, a step each (bvh.walk.drivers).
    _closest_lanes(block, hit_record(), hit_record(), start, end)
    # A second pass: inside the walk's loop the output arrays would crowd
    # the registers the walk needs (measured: 20% of the rate on camera rays).
    _finish_closest(start, end, flat_tris, face_index, origins, directions, rows, triangle, t, u, v, point, normal,
                    front_face)


@jit
def closest_hits_serial(nodes, links, tris, face_index, offset, origins, directions, tmin, tmax, cull,
                        rows, triangle, t, u, v, point, normal, front_face):
    _closest_block(nodes, links, tris, face_index, offset, origins, directions, tmin, tmax, cull,
                   np.int64(0), origins.shape[0], rows, triangle, t, u, v, point, normal, front_face)


@jit_parallel
def closest_hits_parallel(nodes, links, tris, face_index, offset, origins, directions, tmin, tmax, cull,
                          rows, triangle, t, u, v, point, normal, front_face):
    n = origins.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _closest_block(nodes, links, tris, face_index, offset, origins, directions, tmin, tmax, cull,
                       b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK), rows, triangle, t, u, v, point,
                       normal, front_face)


def _make_answer_rays(traversal, empty):
    """The block loop of a query with one answer per ray, which its leaf
    test writes (``occluded``, hit counts): each ray's answer set to
    ``empty``, then its walk by ``traversal`` (:func:`make_traversal` of the
    leaf test). Inlined into the block kernels, as the walk is."""

    @jit_inline
    def answer_rays(nodes, links, tris, offset, origins, directions, tmin, tmax, start, end, answers):
        stack_first, stack_count, stack_t = new_stack()
        flat_nodes = nodes.reshape(nodes.size)
        flat_links = links.reshape(links.size)
        flat_tris = tris.reshape(tris.size)
        out = (answers,)
        for i in range(start, end):
            answers[i] = empty
            traversal(flat_nodes, flat_links, flat_tris, 0, origins[i, 0] - offset[0], origins[i, 1] - offset[1],
                      origins[i, 2] - offset[2], directions[i, 0], directions[i, 1], directions[i, 2],
                      tmin, tmax, i, out, stack_first, stack_count, stack_t)

    return answer_rays


_occluded_rays = _make_answer_rays(make_traversal(any_hit_leaf), False)
_count_rays = _make_answer_rays(make_traversal(count_hits_leaf), 0)


@jit
def _occluded_block(nodes, links, tris, offset, origins, directions, tmin, tmax, start, end, occluded):
    _occluded_rays(nodes, links, tris, offset, origins, directions, tmin, tmax, start, end, occluded)


@jit
def occluded_serial(nodes, links, tris, offset, origins, directions, tmin, tmax, occluded):
    _occluded_block(nodes, links, tris, offset, origins, directions, tmin, tmax, np.int64(0), origins.shape[0],
                    occluded)


@jit_parallel
def occluded_parallel(nodes, links, tris, offset, origins, directions, tmin, tmax, occluded):
    n = origins.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _occluded_block(nodes, links, tris, offset, origins, directions, tmin, tmax,
                        b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK), occluded)


@jit
def _count_block(nodes, links, tris, offset, origins, directions, tmin, tmax, start, end, counts):
    _count_rays(nodes, links, tris, offset, origins, directions, tmin, tmax, start, end, counts)


@jit_parallel
def count_hits_parallel(nodes, links, tris, offset, origins, directions, tmin, tmax, counts):
    n = origins.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _count_block(nodes, links, tris, offset, origins, directions, tmin, tmax,
                     b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK), counts)


@jit
def _collect_block(nodes, links, tris, offset, origins, directions, tmin, tmax, start, end,
                   starts, cursor, rows, ts, us, vs, keep, merge_length, max_hits):
    stack_first, stack_count, stack_t = new_stack()
    flat_nodes = nodes.reshape(nodes.size)
    flat_links = links.reshape(links.size)
    flat_tris = tris.reshape(tris.size)
    out = (cursor, rows, ts, us, vs)
    for i in range(start, end):
        cursor[i] = starts[i]
        _collect_traversal(flat_nodes, flat_links, flat_tris, 0, origins[i, 0] - offset[0], origins[i, 1] - offset[1],
                 origins[i, 2] - offset[2], directions[i, 0], directions[i, 1], directions[i, 2],
                 tmin, tmax, i, out, stack_first, stack_count, stack_t)
        lo = starts[i]
        hi = cursor[i]
        sort_hits(lo, hi, ts, (rows, us, vs))
        # A ray through a shared edge or vertex meets the faces around it at
        # the same point: one crossing of the surface, reported once. Of the
        # crossings, the first max_hits (nearest first) are kept.
        length = math.sqrt(directions[i, 0] ** 2 + directions[i, 1] ** 2 + directions[i, 2] ** 2)
        kept = -1
        crossings = 0
        for j in range(lo, hi):
            keep[j] = True
            if (kept >= 0 and (ts[j] - ts[kept]) * length <= merge_length
                    and share_vertex(flat_tris, rows[j], rows[kept])):
                keep[j] = False
            else:
                kept = j
                crossings += 1
                if crossings > max_hits:
                    keep[j] = False


@jit_parallel
def collect_hits_parallel(nodes, links, tris, offset, origins, directions, tmin, tmax, starts, cursor,
                          rows, ts, us, vs, keep, merge_length, max_hits):
    """Every hit of each ray in ``[tmin, tmax]`` into its segment
    ``starts[i]:starts[i] + counts[i]`` (``count_hits_parallel``), sorted by
    ``t``; ``keep`` marks the first hit of each crossing of the surface,
    nearest first, up to ``max_hits`` crossings per ray (int64)."""
    n = origins.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _collect_block(nodes, links, tris, offset, origins, directions, tmin, tmax,
                       b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK), starts, cursor, rows, ts, us, vs,
                       keep, merge_length, max_hits)
