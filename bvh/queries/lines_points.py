"""Picking lines and points with a tolerance: the leaf tests, the node bound
and the closest-hit kernel of a scene holding line and point sets
(:mod:`bvh.scene.line_point_pack`) beside meshes and shapes.

What a hit is
-------------
A ray ``o + t d``, ``t >= tmin``, *hits* a segment ``a + s (b - a)``,
``s in [0, 1]``, when their closest approach is within the tolerance: with
``(t*, s*)`` minimising the world distance ``|o + t d - a - s (b - a)|`` over
``t >= tmin`` and ``s in [0, 1]``, the distance ``D`` there must satisfy
``D <= tol(t*)`` and ``t* <= tmax``. Among several minimisers (a segment
parallel to the ray) the one of least ``t`` is taken. A point ``p`` is hit
when ``t* = max(tmin, (p - o) . d / d . d)`` gives ``|o + t* d - p| <=
tol(t*)``. The tolerance grows with the distance along the ray::

    tol(t) = tolerance + slope * t * |d|

``tolerance`` in world units, ``slope`` per world unit of distance along
the ray (the tangent of the half angle of the cone about the ray). A world
tolerance is ``slope = 0``. A camera's tolerance in pixels
(:meth:`bvh.camera.Camera.pixel_tolerance`) is a slope for a perspective
camera (``pixels`` times the angle one pixel spans at that ray) and a world
tolerance for an orthographic one (``pixels`` times a pixel's size). Lines
and points have one each. Distances are world distances, also in scaled or
sheared instances: the leaves map their primitives to the world and measure
there, as the sphere cast does (:mod:`bvh.queries.sphere_cast`).

Which hit wins
--------------
Among line and point hits, the least ``t*`` wins; exact ties go to a point
over a segment, then to the smaller distance, the lower object id and the
lower primitive index. A line or point hit ``L`` then competes with the
nearest surface hit ``S`` (triangle or shape, at ``t_s`` with the unit
normal ``n`` at the hit point ``h``, turned to face the ray):

- ``L`` wins if ``t* <= t_s`` (it lies in front of the surface along the ray);
- ``L`` also wins if its nearest point ``p`` (on the segment, or the point)
  lies at most ``tol(t*)`` behind the surface's tangent plane:
  ``(p - h) . n >= -tol(t*)``. That is "equal depth": a line lying on a
  face, an edge of it, or a point on it, is picked over the face, as CAD
  tools draw and pick them, whatever the angle the ray makes with the face
  (a distance along the ray would make the band shrink to nothing at
  grazing angles: a ray landing just short of an edge on a floor passes
  beneath the edge far behind the floor's hit along the ray);
- otherwise ``S`` wins (the line or point is hidden behind the surface).

The bound
---------
A node's box is grown by the tolerance reached at the far end of the search,
as the sphere cast grows it by its radius (:func:`bvh.walk.traversal.visit_swept`):
if a primitive in the box has its closest approach at ``t*`` within
``tol(t*)``, the ray's point ``o + t* d`` lies within ``tol(t*)`` of the
box, hence in the box grown by any radius ``>= tol(t*)`` on every side. The
radius used is ``tol(min(tmax, t_cap))``: ``tmax`` the search's current far
limit, ``t_cap`` the largest ``t*`` any primitive of the scene can have (the
scene's box projected on the ray), which keeps a cone's bound finite before
the first hit. Growing the boxes, rather than testing the ray against boxes
of primitives inflated when built, keeps one tree for every tolerance. A
mesh's tree is not grown (its triangles are exact hits), and is searched up
to the nearer of the nearest surface hit and the nearest line or point hit
(a surface beyond that cannot win); line and point trees up to the nearest
line or point hit (a line far behind a grazed floor may still lie on it).

The walk is the one walk of every scene query
(:func:`bvh.walk.traversal.make_instance_walk`), with a setup that tells each
tree's kind, this module's bound and leaf tests; the triangle and shape
leaves are the closest-hit kernel's own (:mod:`bvh.queries.scene_rays`).
"""

import math
from typing import NamedTuple

import numpy as np
from numba import prange

from .._jit import RAY_BLOCK, jit, jit_inline, jit_parallel
from ..walk.borrow import borrowed
from .ray_triangle import HIT_T
from .ray_triangle import hit_record
from .scene_rays import RawHits, closest_mesh_leaf, closest_shape_leaf, finish_closest, keep_hit, start_hit
from ..walk.space import (PICK_DX, PICK_DY, PICK_DZ, PICK_LINE_SLOPE, PICK_LINE_TOL, PICK_POINT_SLOPE,
                          PICK_POINT_TOL, PICK_T_CAP, PICK_TMAX, PICK_TMIN, SWEPT_SLACK, SWEPT_WORLD, TREE_KIND,
                          object_swept_setup, swept_setup, world_offset)
from ..walk.drivers import make_instance_lanes
from ..walk.traversal import make_instance_step, visit_swept

#: Kinds of tree a walk is in, told by the setups (``consts[TREE_KIND]``).
WORLD_TREE, MESH_TREE, LINE_TREE, POINT_TREE = 0, 1, 2, 3

#: Kinds of primitive a scene hit reports (``SceneHits.primitive``).
MISS, TRIANGLE, SHAPE, SEGMENT, POINT = -1, 0, 1, 2, 3

#: Grows the node bound's radius by a few parts in 1e12, as the swept
#: setups do: more than the roundings of the bound.
RADIUS_SLACK = SWEPT_SLACK

#: A parallel ray and segment: ``(d.d)(e.e) - (d.e)^2`` below this fraction
#: of ``(d.d)(e.e)`` (the sine squared of their angle) is treated as zero.
PARALLEL_SINE2 = 1.0e-14

#: Fields of a line or point record (float64): ``t*``, squared distance,
#: object, primitive index in its set as given, ``s`` on the segment (0 for
#: a point), the kind (SEGMENT or POINT), the nearest point ``p`` relative
#: to the ray's world origin, and ``tol(t*)``.
LP_T, LP_D2, LP_OBJECT, LP_INDEX, LP_S, LP_KIND, LP_POINT, LP_TOL = 0, 1, 2, 3, 4, 5, 6, 9
LP_RECORD = 10


class LinePointArrays(NamedTuple):
    """What the pick kernel takes besides a ``bvh.queries.scene_rays.SceneArrays``
    (``Scene._snapshot``), for ``O`` objects, ``K`` meshes, ``G`` sets.

    Attributes
    ----------
    enabled : (O,) bool
        Whether the pick sees each object (line and point objects included).
    walk_kind : (O,) int32
        ``MESH`` for objects with a tree (meshes, line and point sets), else
        the shape's code: what the walk descends into.
    tree_kind : (O,) int32
        ``MESH_TREE``, ``LINE_TREE`` or ``POINT_TREE`` (shapes: ``WORLD_TREE``).
    tree_of : (O,) int32
        Each object's row of ``roots``: its mesh, or ``K`` + its set.
    roots : (K + G,) int32
        Root node rows: meshes' in the mesh nodes, sets' in ``nodes``.
    inverse : (O, 3, 4) float64
        World-to-object maps with each mesh's or set's offset folded in.
    nodes, links : (M * 32,) float32, int32
        The sets' four-wide nodes (:mod:`bvh.scene.line_point_pack`).
    segments : (S * 6,) float32
    segment_index : (S,) int32
    points : (P * 3,) float32
    point_index : (P,) int32
    set_of : (O,) int32
        Set of each line or point object, -1 for others.
    """

    enabled: np.ndarray
    walk_kind: np.ndarray
    tree_kind: np.ndarray
    tree_of: np.ndarray
    roots: np.ndarray
    inverse: np.ndarray
    nodes: np.ndarray
    links: np.ndarray
    segments: np.ndarray
    segment_index: np.ndarray
    points: np.ndarray
    point_index: np.ndarray
    set_of: np.ndarray


# ------------------------------------------------------------------ setups
#
# The query's constants: the swept layout of bvh.walk.space (the ray in the
# tree's space, the factor from world radii to an upper bound of their size
# there, the map from the tree's space to the world), then the tree's kind
# (TREE_KIND). ``inverse`` is the pair ``(inverse, tree_kind)`` of
# LinePointArrays.


@jit_inline
def pick_setup(ox, oy, oz, dx, dy, dz):
    return swept_setup(ox, oy, oz, dx, dy, dz) + (np.int64(WORLD_TREE),)


@jit_inline
def object_pick_setup(inverse, o, ox, oy, oz, dx, dy, dz):
    maps, tree_kind = inverse
    return object_swept_setup(maps, o, ox, oy, oz, dx, dy, dz) + (np.int64(tree_kind[o]),)


# ------------------------------------------------------------------ window
#
# Per-ray values, in place of the walk's tmin (the walk hands them on
# untouched): the pick window of bvh.walk.space (PICK_*), (tmin, tmax, line
# tolerance, line slope * |d|, point tolerance, point slope * |d|, t_cap,
# dx, dy, dz).


@jit_inline
def _window(tmin, tmax, line_tol, line_slope, point_tol, point_slope, box, ox, oy, oz, dx, dy, dz):
    length = math.sqrt(dx * dx + dy * dy + dz * dz)
    reach = 0.0
    for lo, hi, o, d in ((box[0], box[3], ox, dx), (box[1], box[4], oy, dy), (box[2], box[5], oz, dz)):
        reach += max((lo - o) * d, (hi - o) * d)
    t_cap = max(tmin, reach / (dx * dx + dy * dy + dz * dz))
    return (tmin, tmax, line_tol, line_slope * length, point_tol, point_slope * length, t_cap * RADIUS_SLACK,
            dx, dy, dz)


@jit_inline
def _tolerance(window, kind, t):
    if kind == POINT:
        return window[PICK_POINT_TOL] + window[PICK_POINT_SLOPE] * t
    return window[PICK_LINE_TOL] + window[PICK_LINE_SLOPE] * t


@jit_inline
def _surface_limit(out, window):
    # A surface beyond the nearest line or point hit cannot change the
    # answer (that hit wins at t* <= t_s), so surfaces are searched up to it.
    return min(window[PICK_TMAX], min(out[0][HIT_T], out[3][LP_T]))


@jit_inline
def _line_limit(out, window):
    return min(window[PICK_TMAX], out[3][LP_T])


# ------------------------------------------------------------------ bound


@jit_inline
def visit_tolerance(nodes, links, consts, window, tmax, node, sp, stack_first, stack_count, stack_t, ray, out):
    """The node bound of a pick (see the module's notes): ``nodes`` and
    ``links`` are pairs, the first for the top level and meshes, the second
    for line and point sets; ``consts[TREE_KIND]`` says which tree this is.
    The swept bound's window is ``(tmin, radius)``."""
    which = consts[TREE_KIND]
    tmin = window[PICK_TMIN]
    if which == MESH_TREE:
        return visit_swept(nodes[0], links[0], consts, (tmin, 0.0), min(tmax, _surface_limit(out, window)),
                           node, sp, stack_first, stack_count, stack_t, ray, out)
    if which == WORLD_TREE:
        reach = min(tmax, window[PICK_T_CAP])
        radius = max(_tolerance(window, SEGMENT, reach), _tolerance(window, POINT, reach))
        return visit_swept(nodes[0], links[0], consts, (tmin, radius), tmax, node, sp, stack_first,
                           stack_count, stack_t, ray, out)
    limit = min(tmax, _line_limit(out, window))
    radius = _tolerance(window, POINT if which == POINT_TREE else SEGMENT, min(limit, window[PICK_T_CAP]))
    return visit_swept(nodes[1], links[1], consts, (tmin, radius), limit, node, sp, stack_first, stack_count,
                       stack_t, ray, out)


# ------------------------------------------------------------------ closest approach


@jit_inline
def segment_approach(ax, ay, az, bx, by, bz, dx, dy, dz, tmin):
    """Closest approach of the ray ``t d``, ``t >= tmin`` (its origin at 0)
    and the segment ``a + s (b - a)``, ``s in [0, 1]``: ``(t, s, px, py, pz,
    d2)``, ``p`` the segment's nearest point and ``d2`` the squared distance.

    The minimum of a convex quadratic over ``[tmin, inf) x [0, 1]``
    (Ericson, *Real-Time Collision Detection*, §5.1.9): ``s`` of the two
    lines' closest points, clamped to the segment, then ``t`` for it,
    clamped to ``tmin``, and ``s`` again for a clamped ``t``. Parallel (and
    zero-length) segments take the ``s`` of least ``t``: every ``s`` is as
    near, and the nearest along the ray is the hit. At an end of the
    segment, ``p`` is the stored endpoint and ``t`` is computed from it
    alone, so segments sharing a vertex tie exactly there.
    """
    ex, ey, ez = bx - ax, by - ay, bz - az
    aa = dx * dx + dy * dy + dz * dz
    b = dx * ex + dy * ey + dz * ez
    c = ex * ex + ey * ey + ez * ez
    da = dx * ax + dy * ay + dz * az
    ea = ex * ax + ey * ay + ez * az
    denom = aa * c - b * b
    if c == 0.0:
        s = 0.0
    elif denom > PARALLEL_SINE2 * aa * c:
        s = min(max((b * da - aa * ea) / denom, 0.0), 1.0)
    else:
        s = 0.0 if b >= 0.0 else 1.0
    if s <= 0.0:
        px, py, pz = ax, ay, az
        t = da / aa
    elif s >= 1.0:
        px, py, pz = bx, by, bz
        t = (dx * bx + dy * by + dz * bz) / aa
    else:
        px, py, pz = ax + s * ex, ay + s * ey, az + s * ez
        t = (da + s * b) / aa
    if t < tmin:
        t = tmin
        s = 0.0 if c == 0.0 else min(max((tmin * b - ea) / c, 0.0), 1.0)
        if s <= 0.0:
            px, py, pz = ax, ay, az
        elif s >= 1.0:
            px, py, pz = bx, by, bz
        else:
            px, py, pz = ax + s * ex, ay + s * ey, az + s * ez
    gx, gy, gz = t * dx - px, t * dy - py, t * dz - pz
    return t, s, px, py, pz, gx * gx + gy * gy + gz * gz


@jit_inline
def point_approach(px, py, pz, dx, dy, dz, tmin):
    """Closest approach of the ray ``t d``, ``t >= tmin``, to ``p``: ``(t, d2)``."""
    t = max(tmin, (dx * px + dy * py + dz * pz) / (dx * dx + dy * dy + dz * dz))
    gx, gy, gz = t * dx - px, t * dy - py, t * dz - pz
    return t, gx * gx + gy * gy + gz * gz


@jit_inline
def _better(record, t, kind, d2, obj, index):
    """Whether a hit beats the record: least ``t``, then a point over a
    segment, least distance, lowest object, lowest index."""
    if t != record[LP_T]:
        return t < record[LP_T]
    if kind != record[LP_KIND]:
        return kind == POINT
    if d2 != record[LP_D2]:
        return d2 < record[LP_D2]
    if obj != record[LP_OBJECT]:
        return obj < record[LP_OBJECT]
    return index < record[LP_INDEX]


@jit_inline
def _keep(record, window, t, s, kind, d2, obj, index, px, py, pz):
    tol = _tolerance(window, kind, t)
    if t > window[PICK_TMAX] or d2 > tol * tol or not _better(record, t, kind, d2, np.float64(obj), index):
        return
    record[LP_T] = t
    record[LP_D2] = d2
    record[LP_OBJECT] = obj
    record[LP_INDEX] = index
    record[LP_S] = s
    record[LP_KIND] = kind
    record[LP_POINT] = px
    record[LP_POINT + 1] = py
    record[LP_POINT + 2] = pz
    record[LP_TOL] = tol


@jit_inline
def _segment_leaf(segments, segment_index, first, count, consts, window, record, obj):
    world = consts[SWEPT_WORLD]
    dx, dy, dz = window[PICK_DX], window[PICK_DY], window[PICK_DZ]
    for k in range(first, first + count):
        base = k * 6
        ax = np.float64(segments[np.uint64(base)])
        ay = np.float64(segments[np.uint64(base + 1)])
        az = np.float64(segments[np.uint64(base + 2)])
        bx = np.float64(segments[np.uint64(base + 3)])
        by = np.float64(segments[np.uint64(base + 4)])
        bz = np.float64(segments[np.uint64(base + 5)])
        # Measured from its lexicographically lower end, so that a segment
        # and its reverse (a duplicate edge drawn both ways) round alike and
        # tie exactly, leaving the choice to the lower index.
        reverse = ax > bx or (ax == bx and (ay > by or (ay == by and az > bz)))
        if reverse:
            ax, ay, az, bx, by, bz = bx, by, bz, ax, ay, az
        pax, pay, paz = world_offset(world, ax, ay, az)
        pbx, pby, pbz = world_offset(world, bx, by, bz)
        t, s, px, py, pz, d2 = segment_approach(pax, pay, paz, pbx, pby, pbz, dx, dy, dz, window[PICK_TMIN])
        if reverse:
            s = 1.0 - s
        _keep(record, window, t, s, SEGMENT, d2, obj, np.float64(segment_index[k]), px, py, pz)


@jit_inline
def _point_leaf(points, point_index, first, count, consts, window, record, obj):
    world = consts[SWEPT_WORLD]
    dx, dy, dz = window[PICK_DX], window[PICK_DY], window[PICK_DZ]
    for k in range(first, first + count):
        base = k * 3
        px, py, pz = world_offset(world, np.float64(points[np.uint64(base)]),
                                  np.float64(points[np.uint64(base + 1)]), np.float64(points[np.uint64(base + 2)]))
        t, d2 = point_approach(px, py, pz, dx, dy, dz, window[PICK_TMIN])
        _keep(record, window, t, 0.0, POINT, d2, obj, np.float64(point_index[k]), px, py, pz)


# ------------------------------------------------------------------ leaves
#
# ``out = (hit, cull, alpha, record)``: the closest-hit kernel's hit record,
# culling flag and alpha-test tuple (surfaces: ``bvh.queries.alpha``), and the line
# or point record. Each leaf returns
# the walk's far limit: the farther of the two searches'.


@jit_inline
def _walk_limit(out, window):
    return max(_surface_limit(out, window), _line_limit(out, window))


@jit_inline
def _pick_tree_leaf(geometry, first, count, consts, window, tmax, ray, out, obj):
    tris, segments, segment_index, points, point_index = geometry
    which = consts[TREE_KIND]
    if which == MESH_TREE:
        closest_mesh_leaf(tris, first, count, consts, window[PICK_TMIN], _surface_limit(out, window), ray,
                          (out[0], out[1], out[2]), obj)
    elif which == LINE_TREE:
        _segment_leaf(segments, segment_index, first, count, consts, window, out[3], obj)
    else:
        _point_leaf(points, point_index, first, count, consts, window, out[3], obj)
    return _walk_limit(out, window), False


@jit_inline
def _pick_shape_leaf(kind, shape_data, start, consts, window, tmax, ray, out, obj):
    closest_shape_leaf(kind, shape_data, start, consts, window[PICK_TMIN], _surface_limit(out, window), ray,
                       (out[0], out[1], out[2]), obj)
    return _walk_limit(out, window), False


_pick_step = make_instance_step(_pick_tree_leaf, _pick_shape_leaf, pick_setup, object_pick_setup, visit_tolerance)


# ------------------------------------------------------------------ kernel


@jit_inline
def _line_wins(record, t_surface, normal, i, dx, dy, dz):
    """The rule between the line or point record and the surface hit at
    ``t_surface`` with unit world ``normal[i]`` (see the module's notes)."""
    if record[LP_OBJECT] < 0.0:
        return False
    if not t_surface < np.inf or record[LP_T] <= t_surface:
        return True
    nx, ny, nz = normal[i, 0], normal[i, 1], normal[i, 2]
    if nx * dx + ny * dy + nz * dz > 0.0:
        nx, ny, nz = -nx, -ny, -nz
    hx, hy, hz = t_surface * dx, t_surface * dy, t_surface * dz
    depth = ((record[LP_POINT] - hx) * nx + (record[LP_POINT + 1] - hy) * ny
             + (record[LP_POINT + 2] - hz) * nz)
    return depth >= -record[LP_TOL]


class _PickScene(NamedTuple):
    """A scene as a pick's walk sees it (:func:`bvh.walk.traversal.make_instance_step`'s
    fields): pairs of node arrays (meshes' and the top level's first, line
    and point sets' second, see :func:`visit_tolerance`), every tree's
    geometry (:func:`_pick_tree_leaf`), and :class:`LinePointArrays`'
    objects, trees and maps."""

    top_nodes: tuple
    top_links: tuple
    top_order: np.ndarray
    enabled: np.ndarray
    kind: np.ndarray
    mesh_of: np.ndarray
    inverse: tuple
    mesh_root: np.ndarray
    nodes: tuple
    links: tuple
    tris: tuple
    shape_start: np.ndarray
    shape_data: np.ndarray


class _PickBlock(NamedTuple):
    """What the two lanes of a pick share (:func:`bvh.walk.drivers.make_instance_lanes`)."""

    scene: _PickScene
    origins: np.ndarray
    directions: np.ndarray
    tolerances: np.ndarray
    box: np.ndarray
    tmin: float
    tmax: float
    cull: bool
    alpha: tuple
    records: np.ndarray
    raw: RawHits


@jit_inline
def _begin_pick(block, hit, i):
    """Ray ``i``'s records emptied; its constants, window (:func:`_window`)
    and ``out``."""
    record = block.records[i]
    start_hit(hit)
    record[LP_T] = np.inf
    record[LP_OBJECT] = -1.0
    record[LP_KIND] = -1.0
    origins, directions, tolerances = block.origins, block.directions, block.tolerances
    ox, oy, oz = origins[i, 0], origins[i, 1], origins[i, 2]
    dx, dy, dz = directions[i, 0], directions[i, 1], directions[i, 2]
    window = _window(block.tmin, block.tmax, tolerances[i, 0], tolerances[i, 1], tolerances[i, 2], tolerances[i, 3],
                     block.box, ox, oy, oz, dx, dy, dz)
    return pick_setup(ox, oy, oz, dx, dy, dz), window, (hit, block.cull, block.alpha, record)


@jit_inline
def _finish_pick(block, hit, i):
    raw = block.raw
    keep_hit(hit, i, raw.object, raw.row, raw.t, raw.u, raw.v, raw.normal)


_pick_lanes = make_instance_lanes(_pick_step, _begin_pick, _finish_pick)


@jit
def _pick_block(scene, lp, alpha, origins, directions, tolerances, box, tmin, tmax, cull, start, end, hit_object, hit_row,
                hit_t, hit_u, hit_v, hit_normal, records, out_object, out_mesh, out_triangle, t, u, v, point, normal,
                front_face, primitive, out_set, segment, s, point_index, distance):
    if start >= end:
        return
    scene, lp, alpha, origins, directions, tolerances, box, records = borrowed(
        (scene, lp, alpha, origins, directions, tolerances, box, records))
    raw = borrowed(RawHits(hit_object, hit_row, hit_t, hit_u, hit_v, hit_normal))
    walked = _PickScene((scene.top_nodes, scene.top_nodes), (scene.top_links, scene.top_links), scene.top_order,
                        lp.enabled, lp.walk_kind, lp.tree_of, (lp.inverse, lp.tree_kind), lp.roots,
                        (scene.nodes, lp.nodes), (scene.links, lp.links),
                        (scene.tris, lp.segments, lp.segment_index, lp.points, lp.point_index), scene.shape_start,
                        scene.shape_data)
    # Two rays in turns, a step each, as the closest-hit block walks them
    # (bvh.queries.scene_rays.closest_hits_block).
    _pick_lanes(_PickBlock(walked, origins, directions, tolerances, box, tmin, tmax, cull, alpha, records, raw),
                hit_record(), hit_record(), start, end)
    finish_closest(start, end, 0, scene.kind, scene.mesh_of, scene.inverse, scene.tris, scene.face_index, origins,
                   directions, raw.object, raw.row, raw.t, raw.u, raw.v, raw.normal, out_object, out_mesh,
                   out_triangle, t, u, v, point, normal, front_face)
    set_of = lp.set_of
    for i in range(start, end):
        record = records[i]
        o = out_object[i]
        primitive[i] = MISS if o < 0 else (TRIANGLE if out_mesh[i] >= 0 else SHAPE)
        out_set[i] = -1
        segment[i] = -1
        point_index[i] = -1
        s[i] = np.nan
        distance[i] = np.nan if o < 0 else 0.0
        dx, dy, dz = directions[i, 0], directions[i, 1], directions[i, 2]
        if not _line_wins(record, t[i], normal, i, dx, dy, dz):
            continue
        o = np.int64(record[LP_OBJECT])
        kind = np.int64(record[LP_KIND])
        out_object[i] = o
        out_mesh[i] = -1
        out_triangle[i] = -1
        out_set[i] = set_of[o]
        primitive[i] = kind
        if kind == SEGMENT:
            segment[i] = np.int64(record[LP_INDEX])
            s[i] = record[LP_S]
        else:
            point_index[i] = np.int64(record[LP_INDEX])
        t[i] = record[LP_T]
        u[i] = np.nan
        v[i] = np.nan
        distance[i] = math.sqrt(record[LP_D2])
        for c in range(3):
            point[i, c] = origins[i, c] + record[LP_POINT + c]
            normal[i, c] = np.nan
        front_face[i] = False


@jit
def pick_serial(scene, lp, alpha, origins, directions, tolerances, box, tmin, tmax, cull, out_object, out_mesh,
                out_triangle, t, u, v, point, normal, front_face, primitive, out_set, segment, s, point_index,
                distance):
    """:func:`pick_parallel` on the calling thread, for a few rays."""
    n = origins.shape[0]
    _pick_block(scene, lp, alpha, origins, directions, tolerances, box, tmin, tmax, cull, np.int64(0), n,
                np.empty(n, np.int32), np.empty(n, np.int32), np.empty(n), np.empty(n), np.empty(n),
                np.empty(3 * n), np.empty((n, LP_RECORD)), out_object, out_mesh, out_triangle, t, u, v, point,
                normal, front_face, primitive, out_set, segment, s, point_index, distance)


@jit_parallel
def pick_parallel(scene, lp, alpha, origins, directions, tolerances, box, tmin, tmax, cull, out_object, out_mesh,
                  out_triangle, t, u, v, point, normal, front_face, primitive, out_set, segment, s, point_index,
                  distance):
    """Closest hit of each ray among triangles, shapes, segments and points.

    ``scene`` is a ``bvh.queries.scene_rays.SceneArrays``, ``lp`` a
    :class:`LinePointArrays`, ``alpha`` the alpha test's tuple
    (``Scene._snapshot().alpha``: transparent texels let rays through to
    what is behind, as in the closest-hit kernel); ``tolerances (N, 4)`` each ray's line
    tolerance, line slope, point tolerance and point slope; ``box (6,)`` the
    scene's world box (for ``t_cap``); ``tmax`` finite. Writes what
    ``bvh.queries.scene_rays.closest_hits_parallel`` writes, and per ray the kind
    of primitive (``MISS`` .. ``POINT``), the set, the segment and its ``s``,
    the point, and the distance of closest approach (0 for a surface).
    """
    n = origins.shape[0]
    hit_object = np.empty(n, np.int32)
    hit_row = np.empty(n, np.int32)
    hit_t = np.empty(n)
    hit_u = np.empty(n)
    hit_v = np.empty(n)
    hit_normal = np.empty(3 * n)
    records = np.empty((n, LP_RECORD))
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _pick_block(scene, lp, alpha, origins, directions, tolerances, box, tmin, tmax, cull, b * RAY_BLOCK,
                    min(n, (b + 1) * RAY_BLOCK), hit_object, hit_row, hit_t, hit_u, hit_v, hit_normal, records,
                    out_object, out_mesh, out_triangle, t, u, v, point, normal, front_face, primitive, out_set,
                    segment, s, point_index, distance)
