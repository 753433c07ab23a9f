"""A scene: instanced meshes and analytic shapes under a two-level BVH.

Meshes are geometry, built once (issue 2's BVH) and packed together
(:mod:`bvh.scene.mesh_pack`); objects place a mesh or a shape in the world with an
affine transform. The top level is a BVH over the objects' world boxes,
rebuilt from those boxes alone when objects change (time proportional to the
number of objects, no mesh tree is touched); a ray goes into each candidate
object's space through its inverse transform (:mod:`bvh.queries.scene_rays`).

Concurrency: queries run on an immutable *snapshot* of the scene's arrays,
taken when the scene last changed, so a query sees the scene before or after
an edit, never half of one, and never waits for an edit to finish. Edits are
serialised by a lock.
"""

import hashlib
import json
import logging
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..queries import (
    alpha as alpha_columns,
    closest_point as closest_point_kernels,
    lines_points,
    overlap as overlap_kernels,
    scene_rays as scene_kernels,
    sphere_cast as sphere_cast_kernels,
    winding,
)
from . import line_point_pack
from ..queries.scene_rays import SceneArrays
from .._jit import FAR, SERIAL_BATCH
from ..builders.sah import binned_sah_build
from ..queries.frustum import (BLOCK, INSIDE, OUTSIDE, all_triangles_within_frustum, any_triangle_in_frustum,
                      boxes_in_frustum, check_planes, objects_meet_frustum, planes_to_object_space,
                      triangles_in_frustum, triangles_within_frustum)
from ..queries.idbuffer import IdBuffer, missed as id_buffer_missed, trace as trace_id_buffer
from ..queries.interpolation import interpolate
from ..builders.config import BuildConfig
from ..hits import (SceneAllHits, SceneClosestPoints, SceneContains, SceneHits, SceneSphereHits, Selection, dot_rows,
                   face_normals, unit_rows)
from .mesh_pack import ARRAY_NAMES, MeshPack, append, build_chunk, empty_pack, freeze, mesh_inputs, refit_chunk, \
    replace
from .mesh_pack import ALPHA_ARRAY_NAMES, alpha_defaults, check_alpha, mesh_alpha, with_opaque_rects
from ..builders.alpha_bounds import tight_nodes
from ..io.materials import DEFAULT_CUTOFF, MeshAlpha
from ..builders.refit import check_refit_vertices, refit_top_level
from ..walk.nodes import CHILD_COUNT, CHILD_FIRST, MAX_X, MIN_X, ROW, WIDTH, aligned_empty, collapse_to_wide
from ..builders.placement import place_moves, transformed_boxes as _transformed_boxes
from ..queries.point_order import coherent_order
from ..shapes import BOX, KIND_NAMES, LINES, MESH, POINTS, POLYGON, QUAD, REMOVED, SPHERE, make_shape
from ..validation import (MAX_MESH_EXTENT, check_max_distance, check_mesh, check_points, check_radius, check_rays,
                         check_window, real_array)

_log = logging.getLogger("bvh")

#: A mesh whose refitted tree costs more than this times its cost when built
#: (SAH, ``bvh.refit.wide_sah_cost``) is rebuilt in the background, the
#: refitted tree answering until the new one is ready. Refitted trees of
#: moderate deformations stay near 1.0-1.2 (measured on the bunny:
#: ``bench.refit``); past about 1.5 the overlap of boxes grown by the motion
#: costs more per pick than a rebuild costs once. The scene's top level
#: follows the same rule: when only transforms, masks, pickability or names
#: changed, the next snapshot refits the top-level tree to the objects' new
#: boxes, and builds it anew (on the snapshot's thread: it costs milliseconds
#: for 10,000 objects) once the refitted tree costs more than this times its
#: cost when built (:meth:`Scene.top_level_cost_ratio`).
REBUILD_RATIO = 1.5

#: The query mask that enables every object.
ALL_BITS = 0xFFFFFFFF

#: One object per top-level leaf: a leaf test costs a whole mesh traversal,
#: so the SAH would rarely pay for sharing one.
TOP_LEVEL_CONFIG = BuildConfig(max_leaf_size=1, min_leaf_size=1)

#: Transforms whose linear part is closer than this (relative condition
#: number) to singular are refused: their inverse would be mostly rounding.
MAX_CONDITION = 1.0e12
#: Moves of up to this many objects try one compiled call first (an editor's drag; see
#: ``placement.place_moves``): numpy's fixed cost per call outweighs their arithmetic.
FAST_MOVES = 256

FORMAT_NAME = "bvh-scene"

#: Largest ``annotations`` a save takes, as compact JSON: they ride in the
#: manifest, which every open reads and parses whole.
MAX_ANNOTATION_BYTES = 65536

_OBJECT_ARRAYS = ("object_kind", "object_mesh", "object_transform", "object_mask", "object_pickable",
                  "shape_start", "shape_data")


class UnknownIdError(LookupError):
    """An object or mesh id that is not (or no longer) in the scene."""


@dataclass(frozen=True)
class ObjectInfo:
    """One object of a scene, as :attr:`Scene.objects` lists it.

    ``bounds`` is the object's ``(2, 3)`` world box: exact (the extremes of
    its mesh's vertices or its shape, transformed, with no float32 widening)
    for a transform that maps axes to axes (translation, scale, mirroring,
    axis swaps); for a turned object the tighter of the transformed exact box
    and the box the top level uses, so still a bound. ``triangles`` is 0 for shapes;
    ``params`` holds a shape's parameters (``{}`` for a mesh instance).
    """

    id: int
    name: str | None
    kind: str
    mesh: int | None
    transform: np.ndarray
    bounds: np.ndarray
    mask: int
    pickable: bool
    triangles: int
    params: dict = field(default_factory=dict)


class ObjectRows(NamedTuple):
    """The live objects of a scene as arrays (:meth:`Scene.object_rows`), row ``i`` for object ``ids[i]``."""

    ids: np.ndarray
    kind: np.ndarray
    mesh: np.ndarray
    transform: np.ndarray
    bounds: np.ndarray
    mask: np.ndarray
    pickable: np.ndarray
    triangles: np.ndarray
    names: list
    params: list

    def info(self, row: int) -> ObjectInfo:
        """Row ``row`` as an :class:`ObjectInfo`."""
        kind = int(self.kind[row])
        return ObjectInfo(id=int(self.ids[row]), name=self.names[row], kind=KIND_NAMES[kind],
                          mesh=int(self.mesh[row]) if kind == MESH else None, transform=self.transform[row].copy(),
                          bounds=self.bounds[row].copy(), mask=int(self.mask[row]),
                          pickable=bool(self.pickable[row]), triangles=int(self.triangles[row]),
                          params=dict(self.params[row]))


@dataclass(frozen=True)
class MeshInfo:
    """One mesh of a scene: counts and its box in its own coordinates."""

    id: int
    name: str | None
    triangles: int
    vertices: int
    bounds: np.ndarray
    has_normals: bool
    has_uvs: bool
    alpha_tested: bool = False


class _Snapshot:
    """Immutable arrays of the scene at one moment, as the kernels take them.

    Built whole (:meth:`__init__`, which builds the top-level tree over the
    objects' boxes) or derived from the previous snapshot when only
    transforms, masks or pickability changed (:meth:`updated`, which refits
    that tree). Either way it keeps, besides the kernels' arrays, what a
    refit needs: where each object's leaf slot is (``leaf_row``,
    ``leaf_slot``), each node row's parent slot and depth, and the tree's
    SAH cost now and when built.
    """

    def __init__(self, pack: MeshPack, kind, mesh_of, transform, inverse, mask, pickable, bounds, shape_start,
                 shape_data):
        self.pack = pack
        self.kind = kind
        self.mesh_of = mesh_of
        self._spares = {}
        self.transform = _frozen(transform)
        self.mask = _frozen(mask)
        self.pickable = _frozen(pickable)
        self.bounds = _frozen(bounds)
        # Each shape's parameters (see bvh.shapes), for the exact window test of a selection.
        self.shape_start = shape_start
        self.shape_data = shape_data
        live = kind != REMOVED
        self.live = np.flatnonzero(live)
        # Line and point objects answer only picks (bvh.queries.lines_points): every
        # other query's kernels never see them enabled.
        self.line_points = live & ((kind == LINES) | (kind == POINTS))
        self.has_line_points = bool(self.line_points.any())
        self.pick_enabled = _frozen(live & pickable & (mask != 0))
        self.enabled = _frozen(self.pick_enabled & ~self.line_points)
        self.lp_pack = None
        self._lp_arrays = None
        self.inverse = _frozen(_folded_inverse(pack, kind, mesh_of, inverse))
        finite = self.live[np.isfinite(bounds[self.live]).all(axis=(1, 2))]
        if finite.size:
            boxes = bounds[finite].reshape(-1, 6)
            tree = binned_sah_build(boxes, (boxes[:, :3] + boxes[:, 3:]) * 0.5, TOP_LEVEL_CONFIG)
            top_nodes = collapse_to_wide(tree)
            top_order = finite[tree.order].astype(np.int32)
        else:
            top_nodes = np.zeros((1, ROW), np.float32)
            top_order = np.zeros(0, np.int32)
        self.traceable = finite.size > 0
        self.interpolates = bool(pack.has_normals.any() or pack.has_uvs.any())
        self.top_nodes = _frozen(top_nodes)
        self._index_top_level(kind.shape[0], top_order)
        self.top_cost_terms = _slot_costs(top_nodes, np.arange(top_nodes.shape[0]))
        self.top_cost = _top_cost(top_nodes, self.top_cost_terms)
        self.top_cost_built = self.top_cost
        nodes = pack.nodes
        self.arrays = SceneArrays(
            top_nodes=top_nodes.reshape(-1), top_links=top_nodes.view(np.int32).reshape(-1),
            top_order=_frozen(top_order), enabled=self.enabled, kind=_frozen(kind), mesh_of=_frozen(mesh_of),
            inverse=self.inverse, mesh_root=pack.mesh_root, nodes=nodes.reshape(-1),
            links=nodes.view(np.int32).reshape(-1), tris=pack.tris.reshape(-1), face_index=pack.face_index,
            shape_start=_frozen(shape_start), shape_data=_frozen(shape_data), mesh_scale=pack.mesh_scale)
        self.has_alpha = bool((pack.mesh_alpha_start >= 0).any())
        self.has_blend = bool((pack.alpha_materials[:, alpha_columns.MODE] == alpha_columns.BLEND).any())
        #: The nodes alpha-tested walks read (``bvh.builders.alpha_bounds``), set by
        #: ``Scene._next_snapshot`` when ``has_alpha``.
        self.tight_nodes = None
        self.alpha_arrays = (self.arrays.mesh_of, pack.face_index, pack.mesh_alpha_start, pack.alpha_faces,
                             pack.alpha_face_material, pack.alpha_materials, pack.alpha_texels)

    def _index_top_level(self, objects: int, top_order: np.ndarray) -> None:
        """Where each object's leaf slot and each row's parent slot are, and
        each row's depth, from the links of ``self.top_nodes``."""
        links = self.top_nodes.view(np.int32)
        rows = links.shape[0]
        first = links[:, CHILD_FIRST:CHILD_FIRST + WIDTH]
        count = links[:, CHILD_COUNT:CHILD_COUNT + WIDTH]
        # Row 0 is the root and nobody's child, so first > 0 marks an inner slot.
        parent_row, parent_slot = np.nonzero((count == 0) & (first > 0))
        children = first[parent_row, parent_slot]
        self.row_parent = np.full(rows, -1, np.int64)
        self.row_parent[children] = parent_row
        self.row_parent_slot = np.zeros(rows, np.int64)
        self.row_parent_slot[children] = parent_slot
        # Rows are numbered depth first, each after its parent: one pass in
        # row order sets every depth from its parent's.
        self.row_depth = np.zeros(rows, np.int64)
        level = np.zeros(1, np.int64)
        depth = 0
        while level.size:
            self.row_depth[level] = depth
            is_parent = np.isin(parent_row, level)
            level = children[is_parent]
            depth += 1
        self.top_depth = depth - 1
        leaf_row, leaf_slot = np.nonzero(count > 0)
        sizes = count[leaf_row, leaf_slot]
        # Every object of a leaf: its row of top_order, leaf by leaf.
        positions = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes) \
            + np.repeat(first[leaf_row, leaf_slot], sizes)
        self.leaf_row = np.full(objects, -1, np.int64)
        self.leaf_row[top_order[positions]] = np.repeat(leaf_row, sizes)
        self.leaf_slot = np.zeros(objects, np.int64)
        self.leaf_slot[top_order[positions]] = np.repeat(leaf_slot, sizes)

    def updated(self, kind, mesh_of, transform, inverse, mask, pickable, bounds, moved: np.ndarray,
                flagged: np.ndarray) -> "_Snapshot | None":
        """This snapshot with objects ``moved`` given new transforms and
        boxes and objects ``flagged`` new masks or pickability, the top-level
        tree refitted, not rebuilt; None when that cannot be (an object moved
        in or out of the tree, or the refitted tree passed ``REBUILD_RATIO``).

        Parameters
        ----------
        kind, mesh_of, transform, inverse, mask, pickable, bounds
            The scene's arrays (``(O,)``, ``(O, 4, 4)``, ``(O, 3, 4)``,
            ``(O, 2, 3)``); only rows ``moved`` and ``flagged`` are read.
        moved, flagged : (M,), (F,) int64
            Live objects, sorted, without repeats.

        Notes
        -----
        Cost: O(M) numpy work on the moved objects' rows, their leaf slots
        and their ancestors, when the arrays this snapshot replaced in its
        parent are no longer read (:meth:`_writable`); else a copy
        (``memcpy``) of the per-object arrays that changed and of the
        top-level nodes first.
        """
        snap = object.__new__(_Snapshot)
        snap.__dict__.update(self.__dict__)
        snap._lp_arrays = None
        snap._spares = {}
        arrays = {}
        if flagged.size:
            snap.mask = _patched(self.mask, flagged, mask[flagged])
            snap.pickable = _patched(self.pickable, flagged, pickable[flagged])
            snap.pick_enabled = _patched(
                self.pick_enabled, flagged, (kind[flagged] != REMOVED) & pickable[flagged] & (mask[flagged] != 0))
            snap.enabled = arrays["enabled"] = _patched(self.enabled, flagged,
                                                        snap.pick_enabled[flagged] & ~self.line_points[flagged])
        if moved.size:
            if (self.leaf_row[moved] < 0).any() or not np.isfinite(bounds[moved]).all():
                return None
            snap.transform = self._replaced(snap, "transform", moved, transform[moved])
            snap.bounds = self._replaced(snap, "bounds", moved, bounds[moved])
            snap.inverse = arrays["inverse"] = self._replaced(
                snap, "inverse", moved, _folded_inverse(self.pack, kind[moved], mesh_of[moved], inverse[moved]))
            nodes = self._writable("top_nodes")
            written = np.zeros(nodes.shape[0], np.bool_)
            refit_top_level(nodes, nodes.view(np.int32), self.arrays.top_order, snap.bounds, self.leaf_row[moved],
                            self.leaf_slot[moved], self.row_parent, self.row_parent_slot, self.row_depth, written)
            changed = np.flatnonzero(written)
            snap.top_cost_terms = self._replaced(snap, "top_cost_terms", changed, _slot_costs(nodes, changed))
            snap.top_cost = _top_cost(nodes, snap.top_cost_terms)
            if snap.top_cost > REBUILD_RATIO * self.top_cost_built:
                return None
            snap.top_nodes = _frozen(nodes)
            snap._spares["top_nodes"] = (self.top_nodes, changed)
            arrays.update(top_nodes=nodes.reshape(-1), top_links=nodes.view(np.int32).reshape(-1))
        snap.arrays = self.arrays._replace(**arrays)
        return snap

    def _writable(self, name: str) -> np.ndarray:
        """A writable array holding what this snapshot's array ``name`` holds.

        It is the array this snapshot replaced in its parent, brought up to
        date in the rows where the two differ, when nothing references it
        (or any view of its memory) any more: no query still reads the
        parent, so an edit costs O(moved objects), not O(objects), as editors
        dragging at 60 Hz need. Otherwise a new copy. CPython's reference
        counts decide it, under the scene's lock; a query holds the snapshot
        it reads from, and with it every array of it, until it returns.
        """
        current = getattr(self, name)
        spare, rows = self._spares.pop(name, (None, None))
        # The references to spare: this frame's and getrefcount's argument;
        # to the memory's owner when spare is a view (an aligned node array;
        # numpy points every view of a view at the owner): spare's ``base``
        # and the argument.
        if spare is not None and sys.getrefcount(spare) == 2 and (
                spare.base is None or sys.getrefcount(spare.base) == 2):
            spare.setflags(write=True)
            if 8 * rows.shape[0] > current.shape[0]:
                # Most rows differ (a batch moved most objects): one memcpy beats gathering them.
                np.copyto(spare, current)
            else:
                spare[rows] = current[rows]
            return spare
        if name == "top_nodes":
            copy = aligned_empty(current.shape, current.dtype)
            copy[:] = current
            return copy
        return current.copy()

    def _replaced(self, child: "_Snapshot", name: str, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
        """The read-only array ``name`` of ``child``: this snapshot's with
        ``rows`` set to ``values`` (:meth:`_writable`); this snapshot's own is
        kept as the child's spare."""
        array = self._writable(name)
        array[rows] = values
        child._spares[name] = (getattr(self, name), rows)
        return _frozen(array)

    def with_enabled(self, enabled: np.ndarray) -> SceneArrays:
        if enabled is self.enabled:
            return self.arrays
        return self.arrays._replace(enabled=enabled)

    def alpha(self, alpha_test: bool, alpha_cutoff: float) -> tuple:
        """The alpha-tested leaf tests' tuple for a query (``bvh.alpha.ALPHA_FIELDS``):
        testing off when the query turns it off or no face is alpha-tested."""
        return (alpha_test and self.has_alpha, alpha_cutoff) + self.alpha_arrays

    def traced(self, arrays: SceneArrays, alpha_test: bool, alpha_cutoff: float) -> tuple[SceneArrays, tuple]:
        """``(arrays, alpha)`` a ray query walks: ``arrays`` (this snapshot's,
        filtered) with the boxes of ``bvh.builders.alpha_bounds`` when the query tests
        alpha, and its :meth:`alpha` tuple. A ``BLEND`` face passes everywhere
        under a cutoff of 0, which those boxes do not bound."""
        alpha = self.alpha(alpha_test, alpha_cutoff)
        if alpha[0] and (alpha_cutoff > 0.0 or not self.has_blend):
            arrays = arrays._replace(nodes=self.tight_nodes.reshape(-1))
        return arrays, alpha

    def line_point_arrays(self) -> tuple[lines_points.LinePointArrays, np.ndarray]:
        """The pick kernel's :class:`bvh.lines_points.LinePointArrays` and the
        world box ``(6,)`` of the live objects (made on the first pick)."""
        if self._lp_arrays is None:
            lp, pack, kind = self.lp_pack, self.pack, self.kind
            curves = self.line_points
            sets = np.where(curves, self.mesh_of, 0)
            inverse = self.inverse.copy()
            inverse[curves, :, 3] -= lp.set_offset[sets[curves]]
            tree_kind = np.select([kind == MESH, kind == LINES, kind == POINTS],
                                  [lines_points.MESH_TREE, lines_points.LINE_TREE, lines_points.POINT_TREE],
                                  lines_points.WORLD_TREE).astype(np.int32)
            tree_of = np.where(kind == MESH, self.mesh_of, np.where(curves, pack.mesh_count + sets, 0))
            finite = self.live[np.isfinite(self.bounds[self.live]).all(axis=(1, 2))]
            boxes = self.bounds[finite]
            box = np.concatenate([boxes[:, 0].min(axis=0), boxes[:, 1].max(axis=0)]) if finite.size \
                else np.zeros(6)
            # Padded outwards far beyond rounding: the box only caps the cone's bound.
            box = box + np.repeat([-1.0, 1.0], 3) * (1.0e-9 * np.abs(box).max() + 1.0e-30)
            self._lp_arrays = (lines_points.LinePointArrays(
                enabled=self.pick_enabled, walk_kind=_frozen(np.where(curves, MESH, kind).astype(np.int32)),
                tree_kind=_frozen(tree_kind), tree_of=_frozen(tree_of.astype(np.int32)),
                roots=_frozen(np.concatenate([pack.mesh_root, lp.set_root]).astype(np.int32)),
                inverse=_frozen(inverse), nodes=lp.nodes.reshape(-1), links=lp.nodes.view(np.int32).reshape(-1),
                segments=lp.segments.reshape(-1), segment_index=lp.segment_index, points=lp.points.reshape(-1),
                point_index=lp.point_index, set_of=_frozen(np.where(curves, self.mesh_of, -1).astype(np.int32))),
                box)
        return self._lp_arrays


#: Edits recorded since the last snapshot past which their object lists are
#: merged into one (:func:`_pending`).
PENDING_LIMIT = 1024


def _pending(lists: list[np.ndarray], objects: np.ndarray) -> list[np.ndarray]:
    """``lists`` of objects edited since the last snapshot with ``objects``
    added; merged into one sorted list once they are more than
    :data:`PENDING_LIMIT`, so that a stream of edits with no query between
    them (a script moving objects for an hour) holds at most one entry per
    object, not one per edit."""
    lists.append(objects)
    if len(lists) > PENDING_LIMIT:
        return [np.unique(np.concatenate(lists))]
    return lists


def _patched(array: np.ndarray, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """A read-only copy of ``array`` with ``rows`` set to ``values``."""
    copy = array.copy()
    copy[rows] = values
    return _frozen(copy)


def _folded_inverse(pack: MeshPack, kind: np.ndarray, mesh_of: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """(O, 3, 4) copy of the world-to-object maps ``inverse`` with each mesh's
    float32 centring offset folded into the translation: the kernels take
    object-space rays relative to it."""
    folded = inverse.copy()
    meshes = np.flatnonzero(kind == MESH)
    folded[meshes, :, 3] -= pack.mesh_offset[mesh_of[meshes]]
    return folded


def _slot_costs(nodes: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(R,) float64: each of ``rows``' share of the SAH sum of
    ``bvh.refit.wide_sah_cost`` (area of each used slot times the top
    level's traversal cost, or its intersection cost per object of a leaf),
    before the division by the root's area."""
    lo = nodes[rows, MIN_X:MAX_X].astype(np.float64).reshape(-1, 3, WIDTH)
    hi = nodes[rows, MAX_X:CHILD_FIRST].astype(np.float64).reshape(-1, 3, WIDTH)
    size = hi - lo
    area = size[:, 0] * size[:, 1] + size[:, 1] * size[:, 2] + size[:, 2] * size[:, 0]
    links = nodes.view(np.int32)
    first = links[rows, CHILD_FIRST:CHILD_FIRST + WIDTH]
    count = links[rows, CHILD_COUNT:CHILD_COUNT + WIDTH]
    weight = np.where(count > 0, TOP_LEVEL_CONFIG.intersection_cost * count,
                      np.where(first > 0, TOP_LEVEL_CONFIG.traversal_cost, 0.0))
    return (area * weight).sum(axis=1)


def _top_cost(nodes: np.ndarray, terms: np.ndarray) -> float:
    """SAH cost of the top-level tree ``nodes``, as ``bvh.refit.wide_sah_cost``
    defines it, from its rows' :func:`_slot_costs`."""
    total = float(terms.sum())
    if total == 0.0:
        return 0.0
    size = nodes[0, MAX_X:CHILD_FIRST].reshape(3, WIDTH).max(axis=1).astype(np.float64) \
        - nodes[0, MIN_X:MAX_X].reshape(3, WIDTH).min(axis=1)
    return TOP_LEVEL_CONFIG.traversal_cost + total / (size[0] * size[1] + size[1] * size[2] + size[2] * size[0])


def _scene_misses(n: int) -> tuple:
    """``object, mesh, triangle, t, u, v, point, normal, front_face`` of n misses."""
    none = np.full(n, -1, np.int64)
    return (none, none.copy(), none.copy(), np.full(n, np.inf), np.full(n, np.nan), np.full(n, np.nan),
            np.full((n, 3), np.nan), np.full((n, 3), np.nan), np.zeros(n, np.bool_))


def _surface_kinds(objects: np.ndarray, meshes: np.ndarray) -> tuple:
    """``primitive, set, segment, s, point_index, distance`` of surface hits
    and misses, as :class:`SceneHits` has them."""
    n = objects.shape[0]
    missed = objects < 0
    # TRIANGLE is 0 and SHAPE 1: a hit's kind is whether it has no mesh (fewer
    # numpy calls than nested wheres, which showed in a one-ray pick's time).
    primitive = (meshes < 0).view(np.int8)
    primitive[missed] = lines_points.MISS
    none = np.full((3, n), -1, np.int64)
    return (primitive, none[0], none[1], np.full(n, np.nan), none[2], np.where(missed, np.nan, 0.0))


def _check_tolerances(n: int, line_tolerance, line_slope, point_tolerance, point_slope) -> np.ndarray | tuple:
    """Each ray's line tolerance, line slope, point tolerance and point
    slope, each given as one number or one per ray, finite and ``>= 0``; a
    slope below 1 (a cone of half angle under 45 degrees). Returns the four
    numbers as a tuple when each is one number (:func:`_tolerance_rows` makes
    the rows only if a pick needs them), else an (N, 4) float64 array."""
    named = (("line_tolerance", line_tolerance), ("line_slope", line_slope),
             ("point_tolerance", point_tolerance), ("point_slope", point_slope))
    if all(type(value) in (float, int) and 0.0 <= value < float("inf") and (value < 1.0 or not name.endswith("slope"))
           for name, value in named):
        # Plain valid numbers, as every pick without a per-ray tolerance has:
        # checked without numpy, whose per-call costs were most of a one-ray pick.
        return (line_tolerance, line_slope, point_tolerance, point_slope)
    columns = []
    for name, value in named:
        array = real_array(name, value).astype(np.float64)
        if array.ndim > 1 or (array.ndim == 1 and array.shape[0] != n):
            raise ValueError(f"{name} must be one number or one per ray ({n}), got shape {array.shape}")
        if not (np.isfinite(array).all() and (array >= 0.0).all()):
            raise ValueError(f"{name} must be finite and >= 0")
        if name.endswith("slope") and not (array < 1.0).all():
            raise ValueError(f"{name} must be below 1 (a cone of half angle under 45 degrees)")
        columns.append(np.broadcast_to(array, (n,)))
    return np.ascontiguousarray(np.stack(columns, axis=1)) if n else np.zeros((0, 4))


def _tolerance_rows(n: int, tolerances) -> np.ndarray:
    """(N, 4) float64 rows of :func:`_check_tolerances`' answer."""
    if type(tolerances) is not tuple:
        return tolerances
    rows = np.empty((n, 4))
    rows[:] = tolerances
    return rows


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


def _check_transform(transform) -> np.ndarray:
    if transform is None:
        return np.eye(4)
    matrix = real_array("transform", transform).astype(np.float64)
    if matrix.shape != (4, 4):
        raise ValueError(f"transform must be a 4x4 matrix, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("transform contains NaN or infinite values")
    if np.abs(matrix[3] - (0.0, 0.0, 0.0, 1.0)).max() > 1e-12:
        raise ValueError(f"transform must be affine: its last row must be [0, 0, 0, 1], got {matrix[3].tolist()}")
    matrix[3] = (0.0, 0.0, 0.0, 1.0)
    linear = matrix[:3, :3]
    singular = np.linalg.svd(linear, compute_uv=False)
    if not singular[-1] > singular[0] / MAX_CONDITION:
        raise ValueError(f"transform is not invertible: its 3x3 part is singular "
                         f"(singular values {', '.join(f'{s:.3g}' for s in singular)})")
    return matrix


def _check_transform_batch(object_ids, transforms) -> tuple[np.ndarray, np.ndarray]:
    """``(ids (K,) int64, matrices (K, 4, 4) float64)`` of
    :meth:`Scene.set_transforms`' arguments, their shapes and types
    checked, the matrices a copy (``(K, 3, 4)`` rows completed by ``0 0 0
    1``); their values are checked by :func:`_matrix_problems`."""
    try:
        ids = np.asarray(object_ids)
    except (TypeError, ValueError) as error:
        raise ValueError(f"object_ids must be a list of integer object ids: {error}") from None
    if ids.ndim != 1 or (ids.size and (ids.dtype == bool or ids.dtype.kind not in "iu")):
        raise ValueError(f"object_ids must be a 1-D list of integer object ids, got shape {ids.shape} "
                         f"of {ids.dtype}")
    count = ids.shape[0]
    matrices = real_array("transforms", transforms).astype(np.float64)
    if count == 0 and matrices.size == 0:
        return np.zeros(0, np.int64), np.zeros((0, 4, 4))
    if matrices.ndim != 3 or matrices.shape[1:] not in ((4, 4), (3, 4)) or matrices.shape[0] != count:
        raise ValueError(f"transforms must have shape ({count}, 4, 4) or ({count}, 3, 4), one matrix per "
                         f"object id, got {matrices.shape}")
    if matrices.shape[1] == 3:
        matrices = np.concatenate([matrices, np.broadcast_to([0.0, 0.0, 0.0, 1.0], (count, 1, 4))], axis=1)
    if ids.dtype.kind == "u":
        # Beyond int64 is no object either; -1 says so without wrapping around.
        ids = np.where(ids > np.iinfo(np.int64).max, -1, ids.astype(np.int64, casting="unsafe"))
    return ids.astype(np.int64), matrices


def _matrix_problems(matrices: np.ndarray) -> np.ndarray:
    """(K,) bool: which of ``matrices (K, 4, 4)`` :func:`_check_transform`
    refuses (NaN or infinity, last row not ``0 0 0 1``, singular or
    ill-conditioned), by the same tests, vectorised."""
    finite = np.isfinite(matrices).all(axis=(1, 2))
    safe = np.where(finite[:, None, None], matrices, np.eye(4))
    not_affine = np.abs(safe[:, 3] - (0.0, 0.0, 0.0, 1.0)).max(axis=1) > 1e-12
    singular = np.linalg.svd(safe[:, :3, :3], compute_uv=False) if safe.shape[0] else np.ones((0, 3))
    ill = ~(singular[:, -1] > singular[:, 0] / MAX_CONDITION)
    return ~finite | not_affine | ill


def _check_annotations(annotations) -> dict:
    """A JSON copy of ``annotations`` (``{}`` for None), checked for :meth:`Scene.save`."""
    if annotations is None:
        return {}
    if not isinstance(annotations, dict):
        raise ValueError(f"annotations must be a dict, got {type(annotations).__name__}")
    if not all(isinstance(key, str) for key in annotations):
        raise ValueError("annotations must have string keys")
    try:
        text = json.dumps(annotations, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as error:
        raise ValueError(f"annotations must be JSON data: {error}") from None
    if len(text.encode()) > MAX_ANNOTATION_BYTES:
        raise ValueError(f"annotations take {len(text.encode())} bytes as JSON, more than "
                         f"{MAX_ANNOTATION_BYTES}")
    return json.loads(text)


def _check_alpha_options(alpha_test, alpha_cutoff) -> tuple[bool, float]:
    """``(alpha_test, alpha_cutoff)`` of a query, validated."""
    if type(alpha_test) is bool and type(alpha_cutoff) is float and 0.0 <= alpha_cutoff <= 1.0:
        # The common case, checked first: a click's pick should not pay for the rest.
        return alpha_test, alpha_cutoff
    if not isinstance(alpha_test, (bool, np.bool_)):
        raise ValueError(f"alpha_test must be True or False, got {alpha_test!r}")
    if isinstance(alpha_cutoff, bool) or not isinstance(alpha_cutoff, (int, float, np.integer, np.floating)) \
            or not 0.0 <= float(alpha_cutoff) <= 1.0:
        raise ValueError(f"alpha_cutoff must be a number in [0, 1], got {alpha_cutoff!r}")
    return bool(alpha_test), float(alpha_cutoff)


def _check_mask(mask) -> int:
    if isinstance(mask, bool) or not isinstance(mask, (int, np.integer)) or not 0 <= int(mask) <= ALL_BITS:
        raise ValueError(f"mask must be an integer in [0, 0xFFFFFFFF], got {mask!r}")
    return int(mask)


def _check_name(name) -> str | None:
    if name is not None and not isinstance(name, str):
        raise ValueError(f"name must be a string or None, got {type(name).__name__}")
    return name


def _affine_inverses(matrices: np.ndarray) -> np.ndarray:
    """(K, 3, 4): the world-to-object maps of affine ``matrices (K, 4, 4)``.

    One routine for one object and for many, element by element in a fixed
    order, so that an object placed alone and one placed in a batch get the
    same inverse to the last bit (``@`` on a stack may sum in another order
    than on one matrix).
    """
    linear_inv = np.linalg.inv(matrices[:, :3, :3])
    shift = matrices[:, :3, 3]
    translation = -(linear_inv[:, :, 0] * shift[:, 0:1] + linear_inv[:, :, 1] * shift[:, 1:2]
                    + linear_inv[:, :, 2] * shift[:, 2:3])
    return np.concatenate([linear_inv, translation[:, :, None]], axis=2)


def _apply_linear(matrices: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """(H, 3) products ``matrices (H, 3, 3) @ vectors (H, 3)``, summed
    ``x + y + z`` in that order as the kernels sum them (``einsum`` or
    ``@`` may round otherwise)."""
    return (matrices[:, :, 0] * vectors[:, 0:1] + matrices[:, :, 1] * vectors[:, 1:2]
            + matrices[:, :, 2] * vectors[:, 2:3])


def _normals_to_world(linear_inverse: np.ndarray, local: np.ndarray) -> np.ndarray:
    """(H, 3) world normals (not unit) of object-space normals ``local (H, 3)``.

    Through the inverse transpose, i.e. the transpose of the linear part of
    the world-to-object map ``linear_inverse (H, 3, 3)``, which keeps outward
    outward under mirroring.
    """
    return _apply_linear(linear_inverse.transpose(0, 2, 1), local)


def _shape_normals(snap: "_Snapshot", objects: np.ndarray, origins: np.ndarray, directions: np.ndarray,
                   t: np.ndarray) -> np.ndarray:
    """(H, 3) outward object-space normals (not unit) of shape hits.

    Parameters
    ----------
    objects : (H,) int64
        Shape objects hit.
    origins, directions : (H, 3) float64
        The world rays.
    t : (H,) float64
        Where each ray meets its shape.

    Notes
    -----
    The all-hits kernel keeps no normal, so these are taken again from the
    object-space hit point, as :func:`bvh.shapes.shape_hit` takes them: a
    sphere's point itself, a box's face axis (the coordinate furthest out
    relative to its half size, which at an edge picks one of the two faces),
    +z for a quad, a polygon's plane normal.
    """
    inverse = snap.inverse[objects]
    # The ray in object space, as bvh.scene_kernels._object_ray maps it.
    local_origin = _apply_linear(inverse[:, :, :3], origins) + inverse[:, :, 3]
    local_direction = _apply_linear(inverse[:, :, :3], directions)
    local_point = local_origin + t[:, None] * local_direction
    kinds = snap.kind[objects]
    normal = np.zeros((objects.shape[0], 3))
    starts = snap.shape_start[objects]
    data = snap.shape_data
    sphere = kinds == SPHERE
    normal[sphere] = local_point[sphere]
    box = np.flatnonzero(kinds == BOX)
    if box.size:
        half = data[starts[box, None] + np.arange(3)]
        axis = np.argmax(np.abs(local_point[box]) / half, axis=1)
        normal[box, axis] = np.where(local_point[box, axis] < 0.0, -1.0, 1.0)
    normal[kinds == QUAD, 2] = 1.0
    polygon = np.flatnonzero(kinds == POLYGON)
    if polygon.size:
        normal[polygon] = data[starts[polygon, None] + np.arange(3, 6)]
    return normal


def _box_corners(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(..., 8, 3) corners of boxes ``lo, hi (..., 3)``."""
    pick = np.array([[(c >> k) & 1 for k in range(3)] for c in range(8)], bool)
    return np.where(pick, hi[..., None, :], lo[..., None, :])


def _out_of_range(cover: np.ndarray) -> np.ndarray:
    """(K,) bool: world boxes ``cover (K, 2, 3)`` beyond what float32 nodes hold (or NaN)."""
    return ~(np.abs(cover).max(axis=(1, 2)) < MAX_MESH_EXTENT)


_OUT_OF_RANGE = (f"transform places the object beyond {MAX_MESH_EXTENT:g} from the origin, "
                 "more than float32 bounds can hold")


def _world_bounds(transform: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """(2, 3) world box of the object-space ``boxes (B, 6)`` under ``transform``.

    Raises ValueError when the box leaves the range the float32 top-level
    nodes can hold.
    """
    bounds = _transformed_boxes(transform[None], boxes[None])
    if _out_of_range(bounds)[0]:
        raise ValueError(_OUT_OF_RANGE)
    return bounds[0]


def _shape_within(kind: int, data: np.ndarray, transform: np.ndarray, planes: np.ndarray) -> bool:
    """Whether a shape lies entirely inside a convex region (exact).

    Parameters
    ----------
    kind : int
        ``SPHERE``, ``BOX``, ``QUAD`` or ``POLYGON``.
    data : (K,) float64
        ``shape_data`` from the shape's start on (see :mod:`bvh.shapes`);
        what follows the shape's own parameters is ignored.
    transform : (4, 4) float64
        Object to world.
    planes : (P, 4) float64
        World half-spaces ``n . x + d >= 0``.

    Notes
    -----
    The test runs in the shape's own space, where the planes have unit
    normals (:func:`bvh.frustum.planes_to_object_space`), so each row's value
    is a signed distance: a sphere of radius ``r`` about the origin (an
    ellipsoid in the world) is inside when every plane's ``d >= r``; a box or
    a quad when all its corners are; a polygon when all its vertices are, as
    the pick sees them (the outline projected onto the polygon's plane).
    """
    local = planes_to_object_space(planes, transform)
    if kind == SPHERE:
        return bool((local[:, 3] >= data[0]).all())
    if kind in (BOX, QUAD):
        # Half sizes: three for a box, two for a quad, which lies in z = 0.
        half = np.zeros(3)
        sides = 3 if kind == BOX else 2
        half[:sides] = data[:sides]
        return bool(boxes_in_frustum(np.stack([-half, half]), local)[0] == INSIDE)
    point, normal, drop, count = data[:3], data[3:6], int(data[6]), int(data[7])
    keep = [axis for axis in range(3) if axis != drop]
    vertices = np.empty((count, 3))
    vertices[:, keep[0]] = data[8:8 + count]
    vertices[:, keep[1]] = data[8 + count:8 + 2 * count]
    # On the plane through point with that normal: the coordinate the crossings test drops.
    vertices[:, drop] = point[drop] - (normal[keep[0]] * (vertices[:, keep[0]] - point[keep[0]])
                                       + normal[keep[1]] * (vertices[:, keep[1]] - point[keep[1]])) / normal[drop]
    # A fan over the outline uses every vertex: within the region exactly when all vertices are.
    fan = np.stack([np.zeros(count - 2, np.int64), np.arange(1, count - 1), np.arange(2, count)], axis=1)
    return all_triangles_within_frustum(vertices, fan, local)


#: The twelve triangles of a box's surface, over the corners of :func:`_box_corners`
#: (corner ``c`` takes the high side on axis ``k`` when bit ``k`` of ``c`` is set).
_BOX_FACES = np.array([[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
                       [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]], np.int64)


def _shape_in_lasso(lasso, kind: int, data: np.ndarray, transform: np.ndarray, bounds: np.ndarray,
                    window: bool) -> bool:
    """Whether a shape meets (or, with ``window``, lies within) a lasso's region.

    Boxes and quads are their surfaces' triangles in their own space, exact;
    a solid box also meets the region when it holds the whole region (then
    it holds the near-plane point under the outline's first point). Spheres
    and polygons are judged by their world boxes ``bounds (2, 3)``: a
    crossing when the box meets the region (conservative), a window when the
    box lies within it (conservative the other way).
    """
    if kind == QUAD:
        half = np.array([data[0], data[1], 0.0])
        corners = np.array([[-half[0], -half[1], 0.0], [half[0], -half[1], 0.0], [-half[0], half[1], 0.0],
                            [half[0], half[1], 0.0]])
        hit = lasso.faces(corners, np.array([[0, 1, 2], [1, 3, 2]], np.int64), transform, window)
        return bool(hit.all() if window else hit.any())
    if kind == BOX:
        low, high, matrix = -np.asarray(data[:3], np.float64), np.asarray(data[:3], np.float64), transform
    else:
        low, high, matrix = bounds[0], bounds[1], None
    hit = lasso.faces(_box_corners(low, high), _BOX_FACES, matrix, window)
    if window:
        return bool(hit.all())
    if hit.any():
        return True
    point = lasso.near_point()
    if matrix is not None:
        point = np.linalg.solve(matrix[:3, :3], point - matrix[:3, 3])
    return bool(((low <= point) & (point <= high)).all())


def _reported_bounds(transforms: np.ndarray, boxes: np.ndarray, cover: np.ndarray) -> np.ndarray:
    """(K, 2, 3) world boxes of objects as :class:`ObjectInfo` reports them.

    Parameters
    ----------
    transforms : (K, 4, 4) float64
    boxes : (K, 2, 3) float64
        The exact object-space boxes (of the mesh's vertices, or the shape's).
    cover : (K, 2, 3) float64
        The world boxes the top level uses (:func:`_transformed_boxes` of
        the node boxes): padded by float32 steps, so they read ``-2.8e-45``
        where an object starts at 0.

    Notes
    -----
    Each world coordinate of a corner is one product per axis plus the
    translation, in float64, so a transform that maps axes to axes gives the
    transformed extremes exactly. Turned, the box of the turned box is looser
    than ``cover`` (the box of sixteen turned node boxes): each side takes
    the tighter of the two, both bounds of the object.
    """
    exact = _transformed_boxes(transforms, boxes.reshape(-1, 1, 6))
    lo = np.maximum(exact[:, 0], cover[:, 0])
    hi = np.minimum(exact[:, 1], cover[:, 1])
    # Adding 0.0 turns a mirrored -0.0 into 0.0.
    return np.stack([lo, hi], axis=1) + 0.0


def _selection(chosen_objects: list, chosen_triangles: list) -> "Selection":
    """A :class:`Selection` of the per-object arrays a selection gathered."""
    if not chosen_objects:
        return Selection(np.zeros(0, np.int64), np.zeros(0, np.int64))
    return Selection(np.concatenate(chosen_objects).astype(np.int64),
                     np.concatenate(chosen_triangles).astype(np.int64))


def _rebuilt_trees(arrays: dict) -> dict:
    """``arrays`` of a format-1 save (binary trees) with the mesh pack built
    anew from the meshes' vertices and faces, as format 2 holds it."""
    saved = MeshPack(**{name: np.asarray(arrays[name]) for name in ARRAY_NAMES if name != "mesh_cost"},
                     mesh_cost=np.zeros(arrays["mesh_root"].shape[0]))
    chunks = [build_chunk(config=BuildConfig(), **mesh_inputs(saved, mesh)) for mesh in range(saved.mesh_count)]
    pack = append(empty_pack(), chunks)
    return {**arrays, **{name: getattr(pack, name) for name in ARRAY_NAMES}}


class Scene:
    """Meshes and shapes placed in a world, ready for ray picking.

    >>> scene = bvh.Scene()
    >>> bunny = scene.add_mesh(vertices, faces, name="bunny")
    >>> left = scene.add_instance(bunny, transform=np.eye(4), name="left")
    >>> ball = scene.add_shape("sphere", radius=0.5, name="ball")
    >>> hits = scene.intersect(origins, directions)
    >>> hits.object, hits.triangle, hits.point, hits.normal
    """

    def __init__(self):
        self._lock = threading.RLock()
        self._pack = empty_pack()
        self._pending = []
        self._mesh_names: list[str | None] = []
        self._mesh_keys: dict[str, int] = {}
        self._pack_token = uuid.uuid4().hex
        self._count = 0
        self._kind = np.full(0, REMOVED, np.int32)
        self._mesh_of = np.zeros(0, np.int32)
        self._transform = np.zeros((0, 4, 4))
        self._inverse = np.zeros((0, 3, 4))
        self._mask = np.zeros(0, np.uint32)
        self._pickable = np.zeros(0, bool)
        self._bounds = np.zeros((0, 2, 3))
        self._reported = np.zeros((0, 2, 3))
        self._mesh_extremes: dict[int, np.ndarray] = {}
        #: ``(pack, node_boxes (M, B, 6), exact_boxes (M, 1, 6))`` for :func:`place_moves`.
        self._placement: tuple | None = None
        self._names: list[str | None] = []
        self._shape_data: list[np.ndarray] = []
        self._params: list[dict] = []
        self._objects_token = uuid.uuid4().hex
        self._snap: _Snapshot | None = None
        #: ``(pack, bvh.alpha_bounds.tight_nodes(pack))`` of the last pack with alpha-tested faces.
        self._tight: tuple | None = None
        # Per thread: the snapshot its queries answer from inside ``pinned``.
        self._pins = threading.local()
        self._batching = 0
        self._stale = False
        #: Per mesh: refits so far (a rebuild started before the latest one
        #: is stale), SAH cost over the cost when built, running rebuilds.
        self._mesh_moves: dict[int, int] = {}
        self._mesh_cost_ratio: dict[int, float] = {}
        self._rebuilds: dict[int, threading.Thread] = {}
        self._live_count = 0
        #: Object-space box of each shape object (meshes' come from the pack).
        self._shape_box: dict[int, np.ndarray] = {}
        #: ``_shape_table()``'s answer, dropped when a shape is added or removed.
        self._shape_cache: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        #: What changed since ``_base``, the last snapshot made: objects
        #: moved, objects whose mask or pickability changed (arrays of ids,
        #: repeats allowed), and whether anything else did (an object added
        #: or removed, a mesh changed), which makes the next snapshot build
        #: the top level anew rather than refit it.
        self._base: _Snapshot | None = None
        self._moved: list[np.ndarray] = []
        self._flagged: list[np.ndarray] = []
        self._restructured = True
        self._top_builds = 0
        #: Serialises saves, so that two saves to one directory write in the
        #: order they captured the scene; held without ``_lock`` while writing.
        self._save_lock = threading.Lock()
        self._annotations: dict = {}
        #: ``(pack, dipoles)``: the winding number's per-node data of every
        #: packed tree (``bvh.queries.winding``), made on the first inside/outside
        #: query after the meshes change, never saved.
        self._dipole_cache = None
        #: Line and point sets (bvh.scene.line_point_pack), as meshes are kept.
        self._lp_pack = line_point_pack.empty_pack()
        self._lp_pending = []
        self._set_names: list[str | None] = []
        self._set_kinds: list[int] = []
        self._lp_token = uuid.uuid4().hex

    # ------------------------------------------------------------- meshes
    def add_mesh(self, vertices, faces, normals=None, uvs=None, name=None, source_face=None, alpha=None,
                 **build_options) -> int:
        """Add a triangle mesh (geometry only; place it with :meth:`add_instance`).

        Parameters
        ----------
        vertices : (V, 3) float
        faces : (F, 3) int
        normals : (V, 3) float, optional
            Vertex normals, interpolated into ``SceneHits.shading_normal``.
        uvs : (V, 2) float, optional
            Texture coordinates, interpolated into ``SceneHits.uv``.
        name : str, optional
        source_face : (F,) int, optional
            For each face, the polygon of the source file it was cut from.
        alpha : bvh.MeshAlpha, optional
            Alpha-tested materials of the faces (glTF ``MASK`` and ``BLEND``):
            rays pass through their transparent texels (see :mod:`bvh.queries.alpha`).
        **build_options
            Fields of :class:`bvh.BuildConfig`.

        Returns
        -------
        int
            The mesh id. Adding the same arrays again returns the same id and
            reuses the BVH already built.
        """
        name = _check_name(name)
        config = BuildConfig.from_options(**build_options)
        checked_vertices, checked_faces = check_mesh(vertices, faces)
        key = hashlib.blake2b(digest_size=16)
        alpha_parts = alpha.key_parts() if isinstance(alpha, MeshAlpha) else []
        for part in (checked_vertices, checked_faces, normals, uvs, source_face, repr(config), *alpha_parts):
            key.update(b"|" if part is None else np.ascontiguousarray(part).tobytes() if not isinstance(part, str)
                       else part.encode())
        digest = key.hexdigest()
        with self._lock:
            if digest in self._mesh_keys:
                return self._mesh_keys[digest]
        chunk = build_chunk(checked_vertices, checked_faces, normals, uvs, source_face, config, alpha)
        with self._lock:
            if digest in self._mesh_keys:
                return self._mesh_keys[digest]
            mesh_id = len(self._mesh_names)
            self._pending.append(chunk)
            self._mesh_names.append(name)
            self._mesh_keys[digest] = mesh_id
            return mesh_id

    def _committed_pack(self) -> MeshPack:
        """The pack with every added mesh in it (call with the lock held)."""
        if self._pending:
            self._pack = append(self._pack, self._pending)
            self._pending = []
            self._pack_token = uuid.uuid4().hex
        return self._pack

    def _check_mesh_id(self, mesh_id) -> int:
        if isinstance(mesh_id, bool) or not isinstance(mesh_id, (int, np.integer)) \
                or not 0 <= mesh_id < len(self._mesh_names):
            raise UnknownIdError(f"no mesh {mesh_id!r} in this scene")
        return int(mesh_id)

    @property
    def meshes(self) -> list[MeshInfo]:
        """Every mesh, in id order."""
        with self._lock:
            pack = self._committed_pack()
            counts = pack.triangle_counts()
            return [MeshInfo(id=k, name=self._mesh_names[k], triangles=int(counts[k]),
                             vertices=int(pack.vertex_start[k + 1] - pack.vertex_start[k]),
                             bounds=self._mesh_box(pack, k).copy(),
                             has_normals=bool(pack.has_normals[k]), has_uvs=bool(pack.has_uvs[k]),
                             alpha_tested=bool(pack.mesh_alpha_start[k] >= 0))
                    for k in range(pack.mesh_count)]

    def update_mesh(self, mesh_id, vertices) -> None:
        """Move mesh ``mesh_id``'s vertices, keeping its faces: a refit.

        The mesh's tree keeps its topology and its boxes are recomputed
        bottom-up (:mod:`bvh.builders.refit`); every instance of the mesh follows, and
        queries on other threads see the old mesh or the new one, never a
        mix. When the refitted tree's SAH cost passes ``REBUILD_RATIO``
        times its cost when built, the mesh is built anew on a background
        thread, the refitted tree answering until the new one replaces it
        (:meth:`wait_for_rebuilds`). Like any edit, the change is saved by
        the next :meth:`save`.

        Parameters
        ----------
        mesh_id : int
        vertices : (V, 3) float, finite
            New positions of all the mesh's vertices, in the same order.

        Raises
        ------
        UnknownIdError
            For a mesh id not in the scene.
        ValueError
            On a malformed array, another vertex count, non-finite
            coordinates, a span float32 cannot hold, or a change of which
            faces are zero-area (add the new shape as a new mesh), saying
            which; the mesh is left as it was.
        """
        with self._lock:
            mesh = self._check_mesh_id(mesh_id)
            pack = self._committed_pack()
            count = int(pack.vertex_start[mesh + 1] - pack.vertex_start[mesh])
            vertices = check_refit_vertices(vertices, count)
            chunk, cost, box = refit_chunk(pack, mesh, vertices)
            self._install_mesh(mesh, replace(pack, mesh, chunk), box)
            self._mesh_moves[mesh] = self._mesh_moves.get(mesh, 0) + 1
            built = float(pack.mesh_cost[mesh])
            ratio = cost / built if built > 0.0 else 1.0
            self._mesh_cost_ratio[mesh] = ratio
            if ratio > REBUILD_RATIO and mesh not in self._rebuilds:
                rebuild = threading.Thread(target=self._rebuild_mesh, args=(mesh,), name=f"bvh-rebuild-{mesh}",
                                           daemon=True)
                self._rebuilds[mesh] = rebuild
                rebuild.start()

    def mesh_cost_ratio(self, mesh_id) -> float:
        """SAH cost of mesh ``mesh_id``'s tree over its cost when built: 1.0
        until a refit (:meth:`update_mesh`), back to 1.0 after a rebuild."""
        with self._lock:
            return self._mesh_cost_ratio.get(self._check_mesh_id(mesh_id), 1.0)

    def wait_for_rebuilds(self, timeout: float | None = None) -> bool:
        """Wait until no mesh is being rebuilt; False if ``timeout`` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                running = list(self._rebuilds.values())
            if not running:
                return True
            for thread in running:
                thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
                if thread.is_alive():
                    return False

    def _install_mesh(self, mesh: int, pack: MeshPack, box: np.ndarray) -> None:
        """Make ``pack``, in which mesh ``mesh`` moved, the scene's; its
        instances' boxes follow. Call with the lock held."""
        self._pack = pack
        self._pack_token = uuid.uuid4().hex
        self._mesh_extremes[mesh] = box
        # The arrays as added are no longer this mesh's: adding them again is a new mesh.
        self._mesh_keys = {key: value for key, value in self._mesh_keys.items() if value != mesh}
        instances = np.flatnonzero((self._kind[:self._count] == MESH) & (self._mesh_of[:self._count] == mesh))
        self._bounds[instances], self._reported[instances] = self._placed_bounds(
            pack, self._mesh_of[instances], instances, self._transform[instances])
        self._changed()

    def _rebuild_mesh(self, mesh: int) -> None:
        """Build mesh ``mesh`` anew from its current vertices and install it,
        unless it moved again meanwhile (then build again from those)."""
        try:
            while True:
                with self._lock:
                    moves = self._mesh_moves.get(mesh, 0)
                    inputs = mesh_inputs(self._committed_pack(), mesh)
                chunk = build_chunk(config=BuildConfig(), **inputs)
                with self._lock:
                    if self._mesh_moves.get(mesh, 0) != moves \
                            and self._mesh_cost_ratio.get(mesh, 1.0) > REBUILD_RATIO:
                        continue
                    pack = self._committed_pack()
                    # Refits keep the zero-area faces and a build agrees; should
                    # they ever differ, the refitted tree stays.
                    if self._mesh_moves.get(mesh, 0) == moves and \
                            chunk.face_index.shape[0] == pack.tri_start[mesh + 1] - pack.tri_start[mesh]:
                        self._install_mesh(mesh, replace(pack, mesh, chunk), self._mesh_extremes[mesh])
                        _log.info("mesh %d rebuilt: refits had made its tree %.2f times as costly as built", mesh,
                                  self._mesh_cost_ratio.get(mesh, 1.0))
                        self._mesh_cost_ratio[mesh] = 1.0
                    # Deregistered under the same lock as the last check, so
                    # that a refit after it starts a rebuild of its own.
                    self._rebuilds.pop(mesh, None)
                    return
        except Exception:
            _log.exception("rebuilding mesh %d failed; its refitted tree keeps answering", mesh)
            with self._lock:
                if self._rebuilds.get(mesh) is threading.current_thread():
                    self._rebuilds.pop(mesh)

    def _mesh_arrays(self, mesh_id):
        with self._lock:
            mesh_id = self._check_mesh_id(mesh_id)
            return self._committed_pack(), mesh_id

    def mesh_vertices(self, mesh_id) -> np.ndarray:
        """(V, 3) float64: the mesh's vertices as added (read-only)."""
        pack, mesh_id = self._mesh_arrays(mesh_id)
        return pack.mesh_vertices(mesh_id)

    def mesh_faces(self, mesh_id) -> np.ndarray:
        """(F, 3) int32: the mesh's faces as added (a read-only view)."""
        pack, mesh_id = self._mesh_arrays(mesh_id)
        return pack.mesh_faces(mesh_id)

    def source_face(self, mesh_id) -> np.ndarray:
        """(F,) int64: the source polygon of each face of the mesh."""
        pack, mesh_id = self._mesh_arrays(mesh_id)
        return pack.source_face[pack.face_start[mesh_id]:pack.face_start[mesh_id + 1]].astype(np.int64)

    # -------------------------------------------------- line and point sets
    def add_lines(self, vertices, segments, name=None) -> int:
        """Add a set of line segments (geometry only; place it with
        ``add_instance(lines=id)``), picked with a tolerance by
        :meth:`intersect` (see :mod:`bvh.queries.lines_points`).

        Parameters
        ----------
        vertices : (V, 3) float
        segments : (E, 2) int
            Each segment's two vertex indices; a segment of zero length is a point.
        name : str, optional

        Returns
        -------
        int
            The set's id, shared by line and point sets.
        """
        name = _check_name(name)
        return self._add_set(line_point_pack.build_lines(vertices, segments), name)

    def add_points(self, points, name=None) -> int:
        """Add a set of points (a point cloud; place it with
        ``add_instance(points=id)``), picked with a tolerance by :meth:`intersect`.

        Parameters
        ----------
        points : (P, 3) float
        name : str, optional

        Returns
        -------
        int
            The set's id, shared by line and point sets.
        """
        name = _check_name(name)
        return self._add_set(line_point_pack.build_points(points), name)

    def _add_set(self, chunk, name) -> int:
        with self._lock:
            set_id = len(self._set_names)
            self._lp_pending.append(chunk)
            self._set_names.append(name)
            self._set_kinds.append(chunk.kind)
            return set_id

    def _committed_lp(self):
        """The line and point pack with every added set in it (lock held)."""
        if self._lp_pending:
            self._lp_pack = line_point_pack.append(self._lp_pack, self._lp_pending)
            self._lp_pending = []
            self._lp_token = uuid.uuid4().hex
        return self._lp_pack

    def _check_set_id(self, set_id, kind: int) -> int:
        word = KIND_NAMES[kind]
        if isinstance(set_id, bool) or not isinstance(set_id, (int, np.integer)) \
                or not 0 <= set_id < len(self._set_names):
            raise UnknownIdError(f"no {word} set {set_id!r} in this scene")
        if self._set_kinds[set_id] != kind:
            raise ValueError(f"set {set_id} is a {KIND_NAMES[self._set_kinds[set_id]]} set, not a {word} set")
        return int(set_id)

    @property
    def line_point_sets(self) -> list[dict]:
        """Every line and point set, in id order: ``{"id", "name", "kind"
        ("lines" or "points"), "count" (segments or points), "bounds"}``."""
        with self._lock:
            pack = self._committed_lp()
            counts = pack.primitive_counts()
            return [{"id": g, "name": self._set_names[g], "kind": KIND_NAMES[self._set_kinds[g]],
                     "count": int(counts[g]), "bounds": pack.set_extremes[g].copy()} for g in range(pack.set_count)]

    def set_vertices(self, set_id) -> np.ndarray:
        """(V, 3) float64: a line set's vertices or a point set's points, as added."""
        with self._lock:
            pack = self._committed_lp()
            if isinstance(set_id, bool) or not isinstance(set_id, (int, np.integer)) \
                    or not 0 <= set_id < pack.set_count:
                raise UnknownIdError(f"no line or point set {set_id!r} in this scene")
            return pack.set_vertices(int(set_id))

    def set_segments(self, set_id) -> np.ndarray:
        """(E, 2) int32: a line set's segments as added."""
        with self._lock:
            g = self._check_set_id(set_id, LINES)
            return self._committed_lp().set_edges(g)

    def _set_box(self, g: int) -> np.ndarray:
        """(2, 3) box of set ``g``'s nodes in its own coordinates: its float32
        primitives with the nodes' padding, so a bound (lock held)."""
        pack = self._committed_lp()
        boxes = pack.set_boxes[g]
        return np.stack([boxes[:, :3].min(axis=0), boxes[:, 3:].max(axis=0)]) + pack.set_offset[g]

    # ------------------------------------------------------------ objects
    def _mesh_box(self, pack: MeshPack, mesh: int) -> np.ndarray:
        """(2, 3) exact box of the vertices mesh ``mesh``'s faces use, in its
        own coordinates (cached: meshes never change)."""
        box = self._mesh_extremes.get(mesh)
        if box is None:
            vertices = pack.mesh_vertices(mesh)
            used = np.zeros(vertices.shape[0], bool)
            used[pack.mesh_faces(mesh).reshape(-1)] = True
            box = np.stack([vertices[used].min(axis=0), vertices[used].max(axis=0)])
            self._mesh_extremes[mesh] = box
        return box

    def _placed_bounds(self, pack: MeshPack, meshes: np.ndarray, objects, transforms: np.ndarray,
                       shape_boxes=None) -> tuple[np.ndarray, np.ndarray]:
        """``(cover, reported)`` (K, 2, 3) world boxes of objects: the padded
        ones the top level uses and the exact ones :class:`ObjectInfo` reports.

        Parameters
        ----------
        pack : MeshPack
        meshes : (K,) int
            Each object's mesh, or -1 for a shape.
        objects : (K,) int or None
            The objects, whose shapes' boxes are cached; None with ``shape_boxes``.
        transforms : (K, 4, 4) float64
        shape_boxes : (K, 2, 3) float64, optional
            Object-space boxes of shapes not placed yet (rows of meshes ignored).

        Notes
        -----
        Vectorised over objects; a world box out of float32 range is
        returned as it is (see :func:`_out_of_range`), the caller refuses it.
        """
        meshes = np.asarray(meshes, np.int64)
        count = meshes.shape[0]
        cover = np.empty((count, 2, 3))
        reported = np.empty((count, 2, 3))
        on_mesh = np.flatnonzero(meshes >= 0)
        if on_mesh.size:
            used, which = np.unique(meshes[on_mesh], return_inverse=True)
            node_boxes = pack.mesh_boxes[used] + np.tile(pack.mesh_offset[used], 2)[:, None, :]
            exact = np.stack([self._mesh_box(pack, int(mesh)) for mesh in used])
            placed = transforms[on_mesh]
            cover[on_mesh] = _transformed_boxes(placed, node_boxes, which)
            reported[on_mesh] = _reported_bounds(placed, exact[which], cover[on_mesh])
        shapes = np.flatnonzero(meshes < 0)
        if shapes.size:
            local = shape_boxes[shapes] if shape_boxes is not None \
                else np.stack([self._shape_box[int(oid)] for oid in np.asarray(objects)[shapes]])
            placed = transforms[shapes]
            cover[shapes] = _transformed_boxes(placed, local.reshape(-1, 1, 6))
            reported[shapes] = _reported_bounds(placed, local, cover[shapes])
        return cover, reported

    def _placed_one(self, pack: MeshPack, mesh: int, oid, transform: np.ndarray, shape_box=None):
        """:meth:`_placed_bounds` of one object, ``(cover, reported)`` (2, 3);
        ValueError when it leaves the float32 range."""
        cover, reported = self._placed_bounds(pack, np.array([mesh]), None if oid is None else np.array([oid]),
                                              transform[None], None if shape_box is None else shape_box[None])
        if _out_of_range(cover)[0]:
            raise ValueError(_OUT_OF_RANGE)
        return cover[0], reported[0]

    def _new_slot(self, kind, mesh_of, transform, mask, pickable, name, shape_data, params, bounds) -> int:
        """A new object; ``bounds`` is the ``(cover, reported)`` pair of :meth:`_placed_bounds`."""
        oid = self._count
        if oid == self._kind.shape[0]:
            capacity = max(16, 2 * oid)

            def grown(array, fill):
                out = np.full((capacity,) + array.shape[1:], fill, array.dtype)
                out[:oid] = array
                return out

            self._kind = grown(self._kind, REMOVED)
            self._mesh_of = grown(self._mesh_of, -1)
            self._transform = grown(self._transform, 0.0)
            self._inverse = grown(self._inverse, 0.0)
            self._mask = grown(self._mask, 0)
            self._pickable = grown(self._pickable, False)
            self._bounds = grown(self._bounds, np.nan)
            self._reported = grown(self._reported, np.nan)
        self._kind[oid] = kind
        self._mesh_of[oid] = mesh_of
        self._transform[oid] = transform
        self._inverse[oid] = _affine_inverses(transform[None])[0]
        self._mask[oid] = mask
        self._pickable[oid] = pickable
        self._bounds[oid], self._reported[oid] = bounds
        self._names.append(name)
        self._shape_data.append(shape_data)
        self._params.append(params)
        self._count += 1
        self._live_count += 1
        if shape_data is not None:
            self._shape_cache = None
        self._changed()
        return oid

    @contextmanager
    def batch(self, answering: bool = True):
        """Make several edits one change: until the block ends, queries keep
        answering from the scene as it was before it, and other editors wait.

        ``answering=False``, for a block that takes a moment: queries that
        find the scene changed since their last snapshot wait for the block
        to end (and see its change) instead, so the block need not bring
        their snapshot up to date first; in a stream of small edits with no
        query between them, the top level is then refitted once, not once
        per edit.

        >>> with scene.batch():
        ...     scene.set_transform(a, m)
        ...     scene.remove(b)
        """
        with self._lock:
            if answering:
                self._current_snapshot()
            self._batching += 1
            try:
                yield self
            finally:
                self._batching -= 1
                if self._batching == 0 and self._stale:
                    self._stale = False
                    self._snap = None

    def _changed(self, moved=None, flagged=None):
        """Record an edit (call with the lock held): objects ``moved`` (new
        transforms and boxes), objects ``flagged`` (new mask or
        pickability), or, with neither, one the top level cannot follow by a
        refit (an object added or removed, a mesh changed)."""
        # A new token is drawn by the next save: a random draw costs a
        # system call, more than the rest of a one-object move.
        self._objects_token = None
        if moved is not None:
            self._moved = _pending(self._moved, moved)
        elif flagged is not None:
            self._flagged = _pending(self._flagged, flagged)
        else:
            self._restructured = True
        if self._batching:
            self._stale = True
        else:
            self._snap = None

    def add_instance(self, mesh_id=None, transform=None, name=None, mask=ALL_BITS, pickable=True, *, lines=None,
                     points=None) -> int:
        """Place mesh ``mesh_id`` in the world; returns the new object's id.

        ``transform`` is a ``(4, 4)`` affine object-to-world matrix (identity
        by default): any invertible one, non-uniform scale and mirroring
        included. Objects with ``pickable=False``, or whose ``mask`` shares no
        bit with a query's, are skipped by queries.

        ``lines=id`` or ``points=id`` (in place of ``mesh_id``) places a line
        or point set of :meth:`add_lines` or :meth:`add_points` instead: an
        object of kind ``"lines"`` or ``"points"``, whose ``params`` name
        the set.
        """
        given = [value is not None for value in (mesh_id, lines, points)]
        if sum(given) != 1:
            raise ValueError("add_instance places one thing: give a mesh id, or lines=id, or points=id")
        transform = _check_transform(transform)
        name = _check_name(name)
        mask = _check_mask(mask)
        if mesh_id is None:
            kind = LINES if lines is not None else POINTS
            with self._lock:
                g = self._check_set_id(lines if lines is not None else points, kind)
                box = self._set_box(g)
                oid = self._new_slot(kind, g, transform, mask, bool(pickable), name, None, {KIND_NAMES[kind]: g},
                                     self._placed_one(self._pack, -1, None, transform, box))
                self._shape_box[oid] = box
                return oid
        with self._lock:
            mesh_id = self._check_mesh_id(mesh_id)
            bounds = self._placed_one(self._committed_pack(), mesh_id, None, transform)
            return self._new_slot(MESH, mesh_id, transform, mask, bool(pickable), name, None, {}, bounds)

    def add_shape(self, kind, transform=None, name=None, mask=ALL_BITS, pickable=True, **params) -> int:
        """Place an analytic shape (``sphere``, ``box``, ``quad``, ``polygon``; see
        :mod:`bvh.shapes` for their parameters); returns the new object's id."""
        code, data, params, local = make_shape(kind, **params)
        transform = _check_transform(transform)
        name = _check_name(name)
        mask = _check_mask(mask)
        with self._lock:
            oid = self._new_slot(code, -1, transform, mask, bool(pickable), name, data, params,
                                 self._placed_one(self._pack, -1, None, transform, local))
            self._shape_box[oid] = local
            return oid

    def add_scene(self, other: "Scene", transform=None) -> list[int]:
        """Copy ``other``'s live objects (and the meshes they use) into this scene.

        ``transform`` is applied on top of each object's own. Returns the new
        object ids in ``other``'s object order.
        """
        transform = _check_transform(transform)
        added = []
        mesh_map: dict[int, int] = {}
        for info in other.objects:
            placed = transform @ info.transform
            if info.kind == "mesh":
                if info.mesh not in mesh_map:
                    pack = other._mesh_arrays(info.mesh)[0]
                    k = info.mesh
                    vertex_rows = slice(pack.vertex_start[k], pack.vertex_start[k + 1])
                    mesh_map[info.mesh] = self.add_mesh(
                        pack.mesh_vertices(k), pack.mesh_faces(k),
                        normals=pack.normals[vertex_rows] if pack.has_normals[k] else None,
                        uvs=pack.uvs[vertex_rows] if pack.has_uvs[k] else None,
                        name=other._mesh_names[k], source_face=other.source_face(k), alpha=mesh_alpha(pack, k))
                added.append(self.add_instance(mesh_map[info.mesh], placed, info.name, info.mask, info.pickable))
            elif info.kind in ("lines", "points"):
                g = info.params[info.kind]
                key = (info.kind, g)
                if key not in mesh_map:
                    with other._lock:
                        pack = other._committed_lp()
                        vertices, edges = pack.set_vertices(g), pack.set_edges(g)
                        set_name = other._set_names[g]
                    mesh_map[key] = self.add_lines(vertices, edges, set_name) if info.kind == "lines" \
                        else self.add_points(vertices, set_name)
                added.append(self.add_instance(None, placed, info.name, info.mask, info.pickable,
                                               **{info.kind: mesh_map[key]}))
            else:
                added.append(self.add_shape(info.kind, placed, info.name, info.mask, info.pickable, **info.params))
        return added

    def _check_object_id(self, object_id) -> int:
        if isinstance(object_id, bool) or not isinstance(object_id, (int, np.integer)) \
                or not 0 <= object_id < self._count or self._kind[object_id] == REMOVED:
            raise UnknownIdError(f"no object {object_id!r} in this scene")
        return int(object_id)

    def set_transform(self, object_id, transform) -> None:
        """Move an object: its new ``(4, 4)`` object-to-world transform."""
        transform = _check_transform(transform)
        with self._lock:
            oid = self._check_object_id(object_id)
            mesh = int(self._mesh_of[oid]) if self._kind[oid] == MESH else -1
            bounds = self._placed_one(self._committed_pack(), mesh, oid, transform)
            self._move(np.array([oid]), transform[None], *(bound[None] for bound in bounds))

    def set_transforms(self, object_ids, transforms) -> None:
        """Move many objects as one edit, all or nothing.

        Parameters
        ----------
        object_ids : (K,) int
            Live objects, each at most once.
        transforms : (K, 4, 4) or (K, 3, 4) float
            Each object's new object-to-world transform: affine matrices, or
            their first three rows. Each is checked as :meth:`set_transform`
            checks one.

        Raises
        ------
        UnknownIdError
            When an id is not a live object of the scene.
        ValueError
            On arrays of the wrong shape or type, an id given twice, or a
            refused matrix (NaN or infinity, last row not ``0 0 0 1``,
            singular or ill-conditioned, placing the object beyond float32's
            range). Either error names the first bad entry and its object,
            ``"transforms[3] (object 17): ..."``; the scene is then unchanged.

        Notes
        -----
        Queries see all of the moves or none (as with :meth:`batch`), and
        the next query refits the top level rather than rebuilding it.
        Vectorised: 10,000 moves cost milliseconds.
        """
        ids, matrices = _check_transform_batch(object_ids, transforms)
        with self._lock:
            if 0 < ids.shape[0] <= FAST_MOVES:
                pack = self._committed_pack()
                node_boxes, exact_boxes = self._placement_boxes(pack)
                placed = place_moves(ids, matrices, self._count, self._kind, self._mesh_of, MESH, node_boxes,
                                     exact_boxes, MAX_CONDITION, MAX_MESH_EXTENT)
                if placed is not None:
                    matrices[:, 3] = (0.0, 0.0, 0.0, 1.0)
                    self._move(ids, matrices, *placed)
                    return
        matrix_problem = _matrix_problems(matrices)
        with self._lock:
            n = self._count
            unknown = (ids < 0) | (ids >= n)
            unknown[~unknown] = self._kind[ids[~unknown]] == REMOVED
            known = np.where(unknown, 0, ids)
            repeated = np.zeros(ids.shape[0], bool)
            order = np.argsort(known, kind="stable")
            repeated[order[1:]] = (known[order[1:]] == known[order[:-1]]) & ~unknown[order[1:]]
            usable = ~(unknown | repeated | matrix_problem)
            good = np.flatnonzero(usable)
            meshes = np.where(self._kind[ids[good]] == MESH, self._mesh_of[ids[good]], -1)
            cover, reported = self._placed_bounds(self._committed_pack(), meshes, ids[good], matrices[good])
            beyond = np.zeros(ids.shape[0], bool)
            beyond[good] = _out_of_range(cover)
            bad = ~usable | beyond
            if bad.any():
                entry = int(np.argmax(bad))
                oid = int(ids[entry])
                where = f"transforms[{entry}] (object {oid})"
                if unknown[entry]:
                    raise UnknownIdError(f"{where}: no object {oid} in this scene")
                if repeated[entry]:
                    earlier = int(np.flatnonzero(ids[:entry] == oid)[0])
                    raise ValueError(f"{where}: object {oid} is given twice (also transforms[{earlier}])")
                if beyond[entry]:
                    raise ValueError(f"{where}: {_OUT_OF_RANGE}")
                try:
                    _check_transform(matrices[entry])
                except ValueError as error:
                    raise ValueError(f"{where}: {error}") from None
                raise ValueError(f"{where}: transform is not invertible: its 3x3 part is singular")
            if ids.size:
                matrices[:, 3] = (0.0, 0.0, 0.0, 1.0)
                self._move(ids, matrices, cover, reported)

    def _placement_boxes(self, pack: MeshPack) -> tuple[np.ndarray, np.ndarray]:
        """``(node_boxes (M, B, 6), exact_boxes (M, 1, 6))``: every mesh's
        cover boxes in its own coordinates and the exact box of its
        vertices, as :meth:`_placed_bounds` places them (made again when the
        pack changes). Call with the lock held."""
        if self._placement is None or self._placement[0] is not pack:
            count = pack.mesh_count
            node_boxes = pack.mesh_boxes + np.tile(pack.mesh_offset, 2)[:, None, :]
            exact = np.stack([self._mesh_box(pack, mesh) for mesh in range(count)]) if count \
                else np.zeros((0, 2, 3))
            self._placement = (pack, np.ascontiguousarray(node_boxes), exact.reshape(-1, 1, 6))
        return self._placement[1:]

    def _move(self, ids: np.ndarray, matrices: np.ndarray, cover: np.ndarray, reported: np.ndarray) -> None:
        """Give objects ``ids (K,)`` new ``matrices (K, 4, 4)`` and their
        boxes (``(K, 2, 3)`` each, from :meth:`_placed_bounds`), checked
        already; call with the lock held."""
        self._transform[ids] = matrices
        self._inverse[ids] = _affine_inverses(matrices)
        self._bounds[ids] = cover
        self._reported[ids] = reported
        self._changed(moved=ids)

    def set_pickable(self, object_id, pickable: bool) -> None:
        """Whether queries may hit the object."""
        if not isinstance(pickable, (bool, np.bool_)):
            raise ValueError(f"pickable must be true or false, got {pickable!r}")
        with self._lock:
            oid = self._check_object_id(object_id)
            self._pickable[oid] = bool(pickable)
            self._changed(flagged=np.array([oid]))

    def set_mask(self, object_id, mask) -> None:
        """The object's mask: a query hits it only if their masks share a bit."""
        mask = _check_mask(mask)
        with self._lock:
            oid = self._check_object_id(object_id)
            self._mask[oid] = mask
            self._changed(flagged=np.array([oid]))

    def set_name(self, object_id, name) -> None:
        name = _check_name(name)
        with self._lock:
            oid = self._check_object_id(object_id)
            # Names live in the saved manifest, not in the arrays or a
            # snapshot: nothing else to mark.
            self._names[oid] = name

    def remove(self, object_id) -> None:
        """Remove an object; its id is never reused. Its mesh stays in the scene."""
        with self._lock:
            oid = self._check_object_id(object_id)
            if self._kind[oid] != MESH:
                self._shape_cache = None
                self._shape_box.pop(oid, None)
            self._kind[oid] = REMOVED
            self._shape_data[oid] = None
            self._live_count -= 1
            self._changed()

    def _info(self, oid: int, counts: np.ndarray) -> ObjectInfo:
        kind = int(self._kind[oid])
        mesh = int(self._mesh_of[oid]) if kind == MESH else None
        return ObjectInfo(id=oid, name=self._names[oid], kind=KIND_NAMES[kind], mesh=mesh,
                          transform=self._transform[oid].copy(), bounds=self._reported[oid].copy(),
                          mask=int(self._mask[oid]), pickable=bool(self._pickable[oid]),
                          triangles=int(counts[mesh]) if mesh is not None else 0, params=dict(self._params[oid]))

    @property
    def objects(self) -> list[ObjectInfo]:
        """Every live object, in id order."""
        with self._lock:
            counts = self._committed_pack().triangle_counts()
            return [self._info(oid, counts) for oid in np.flatnonzero(self._kind[:self._count] != REMOVED)]

    def has_object(self, object_id) -> bool:
        """Whether ``object_id`` is a live object of the scene."""
        try:
            self._check_object_id(object_id)
        except UnknownIdError:
            return False
        return True

    def object(self, object_id) -> ObjectInfo:
        """One object; :class:`UnknownIdError` if there is none with this id."""
        with self._lock:
            oid = self._check_object_id(object_id)
            return self._info(oid, self._committed_pack().triangle_counts())

    def __len__(self) -> int:
        return self._live_count

    @property
    def triangle_count(self) -> int:
        """Triangles over all live objects, counting each instance."""
        with self._lock:
            counts = self._committed_pack().triangle_counts()
            live = (self._kind[:self._count] == MESH)
            return int(counts[self._mesh_of[:self._count][live]].sum())

    @property
    def bounds(self) -> np.ndarray:
        """(2, 3) float64: world box of the live objects (their boxes as
        :class:`ObjectInfo` reports them); NaN when there are none."""
        with self._lock:
            boxes = self._reported[:self._count][self._kind[:self._count] != REMOVED]
            if boxes.shape[0] == 0:
                return np.full((2, 3), np.nan)
            return np.stack([boxes[:, 0].min(axis=0), boxes[:, 1].max(axis=0)])

    def object_rows(self) -> "ObjectRows":
        """The live objects as arrays, copied at one moment: what :attr:`objects`
        gives, without making an :class:`ObjectInfo` per object."""
        with self._lock:
            n = self._count
            live = np.flatnonzero(self._kind[:n] != REMOVED)
            counts = self._committed_pack().triangle_counts()
            kind = self._kind[live]
            mesh = self._mesh_of[live]
            triangles = np.where(kind == MESH, counts[np.where(kind == MESH, mesh, 0)] if counts.size else 0, 0)
            return ObjectRows(ids=live, kind=kind, mesh=mesh, transform=self._transform[live],
                              bounds=self._reported[live], mask=self._mask[live], pickable=self._pickable[live],
                              triangles=triangles, names=[self._names[i] for i in live.tolist()],
                              params=[self._params[i] for i in live.tolist()])

    @contextmanager
    def pinned(self, read=None):
        """Answer every query made on this thread inside the block from the
        scene as it is when the block begins, while other threads go on
        editing it; the block gets the result of ``read()``.

        ``read`` (optional) is called with the scene's lock held, at the
        moment the state is taken, so what it reads matches the queries'
        answers: a service reads the object table its edits publish inside
        :meth:`batch`. A query that takes a while on a scene edited a
        thousand times a second needs no retries and holds up no edit.

        >>> with scene.pinned(lambda: table_version) as version:
        ...     hits = scene.intersect(origins, directions)  # the scene at ``version``
        """
        with self._lock:
            snap = self._current_snapshot()
            value = read() if read is not None else None
        outer = getattr(self._pins, "snapshot", None)
        self._pins.snapshot = snap
        try:
            yield value
        finally:
            self._pins.snapshot = outer

    # ----------------------------------------------------------- snapshot
    def _snapshot(self) -> _Snapshot:
        """What queries answer from: this thread's pinned snapshot (see
        :meth:`pinned`), else the scene as it is now."""
        pinned = getattr(self._pins, "snapshot", None)
        return self._current_snapshot() if pinned is None else pinned

    def _current_snapshot(self) -> _Snapshot:
        snap = self._snap
        if snap is not None:
            return snap
        with self._lock:
            if self._snap is None:
                self._snap = self._base = self._next_snapshot()
                self._moved = []
                self._flagged = []
                self._restructured = False
            return self._snap

    def _next_snapshot(self) -> _Snapshot:
        """A snapshot of the scene as it is (call with the lock held): the
        last one with the objects moved since refitted in (O(moved) but for
        copies of the arrays), or a whole new one after any other change."""
        n = self._count
        pack = self._committed_pack()
        lp_pack = self._committed_lp()
        base = self._base
        if base is not None and not self._restructured and base.pack is pack and base.kind.shape[0] == n:
            moved = np.unique(np.concatenate(self._moved)) if self._moved else np.zeros(0, np.int64)
            flagged = np.unique(np.concatenate(self._flagged)) if self._flagged else np.zeros(0, np.int64)
            snap = base.updated(self._kind, self._mesh_of, self._transform, self._inverse, self._mask,
                                self._pickable, self._bounds, moved, flagged)
            if snap is not None:
                snap.lp_pack = lp_pack
                return snap
            _log.info("top level of %d objects rebuilt: refits had made it more than %.2f times as costly as built",
                      n, REBUILD_RATIO)
        starts, _, shape_data = self._shape_table()
        # Kernels index shape_data even when no object is a shape.
        shape_data = shape_data if shape_data.size else np.zeros(1)
        self._top_builds += 1
        snap = _Snapshot(pack, self._kind[:n].copy(), self._mesh_of[:n].copy(), self._transform[:n].copy(),
                         self._inverse[:n].copy(), self._mask[:n].copy(), self._pickable[:n].copy(),
                         self._bounds[:n].copy(), starts.astype(np.int32), shape_data)
        snap.lp_pack = lp_pack
        if snap.has_alpha:
            if self._tight is None or self._tight[0] is not pack:
                self._tight = (pack, _frozen(tight_nodes(pack)))
            snap.tight_nodes = self._tight[1]
        return snap

    def top_level_cost_ratio(self) -> float:
        """SAH cost (``bvh.refit.wide_sah_cost``) of the top-level tree the
        scene's queries use now over its cost when it was last built: 1.0
        after a build, moved by refits (see ``REBUILD_RATIO``, past which
        the next query builds it anew)."""
        snap = self._snapshot()
        return snap.top_cost / snap.top_cost_built if snap.top_cost_built > 0.0 else 1.0

    @property
    def top_level_builds(self) -> int:
        """How many times the top-level tree was built whole (not refitted)
        since the scene was made or opened."""
        return self._top_builds

    def _shape_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every shape's parameters in one array: ``(start (O,) int64, length
        (O,) int64, data (S,) float64)``, zero lengths for meshes and removed
        objects. Cached: only adding or removing a shape changes the data;
        objects added after the cache was made are meshes, appended here
        with zero lengths."""
        if self._shape_cache is None:
            lengths = np.array([0 if data is None else data.shape[0] for data in self._shape_data[:self._count]],
                               np.int64)
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if lengths.size else lengths
            parts = [data for data in self._shape_data[:self._count] if data is not None]
            data = np.concatenate(parts).astype(np.float64) if parts else np.zeros(0)
            self._shape_cache = (_frozen(starts), _frozen(lengths), _frozen(data))
        starts, lengths, data = self._shape_cache
        if starts.shape[0] < self._count:
            extra = self._count - starts.shape[0]
            starts = _frozen(np.concatenate([starts, np.full(extra, data.shape[0], np.int64)]))
            lengths = _frozen(np.concatenate([lengths, np.zeros(extra, np.int64)]))
            self._shape_cache = (starts, lengths, data)
        return self._shape_cache

    def _query_ids(self, snap: _Snapshot, name: str, ids) -> np.ndarray:
        try:
            array = np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids)
        except TypeError:
            raise ValueError(f"{name} must be a list of object ids, got {ids!r}") from None
        if array.size == 0:
            return np.zeros(0, np.int64)
        if array.dtype == bool or array.dtype.kind not in "iu" or array.ndim != 1:
            raise ValueError(f"{name} must be a list of integer object ids, got {ids!r}")
        bad = (array < 0) | (array >= snap.kind.shape[0])
        bad[~bad] = snap.kind[array[~bad]] == REMOVED
        if bad.any():
            raise UnknownIdError(f"no object {int(array[bad][0])} in this scene")
        return array.astype(np.int64)

    def _enabled(self, snap: _Snapshot, mask, objects, exclude, base=None) -> np.ndarray:
        base = snap.enabled if base is None else base
        if objects is None and exclude is None and type(mask) is int and mask == ALL_BITS:
            # No filter: the common case, and a click's pick should not pay for the checks.
            return base
        mask = _check_mask(mask)
        if mask == ALL_BITS and objects is None and exclude is None:
            return base
        enabled = base & ((snap.mask & np.uint32(mask)) != 0)
        if objects is not None:
            only = np.zeros_like(enabled)
            only[self._query_ids(snap, "objects", objects)] = True
            enabled &= only
        if exclude is not None:
            enabled[self._query_ids(snap, "exclude", exclude)] = False
        return _frozen(enabled)

    # ------------------------------------------------------------ queries
    def intersect(self, origins, directions, tmin=0.0, tmax=np.inf, mask=ALL_BITS, cull_backfaces=False,
                  objects=None, exclude=None, alpha_test=True, alpha_cutoff=DEFAULT_CUTOFF, line_tolerance=0.0,
                  point_tolerance=0.0, line_slope=0.0, point_slope=0.0) -> SceneHits:
        """Closest hit of each ray in ``[tmin, tmax]``.

        Parameters
        ----------
        origins, directions : (N, 3) or (3,) float
            World rays ``origin + t * direction``; directions need not be unit.
        tmin, tmax : float
            The window of ``t`` searched, ``0 <= tmin <= tmax``; tmax may be inf.
        mask : int
            Only objects whose mask shares a bit with this are hit.
        cull_backfaces : bool
            Ignore surfaces whose normal points along the ray.
        objects, exclude : iterable of int, optional
            Consider only these objects; skip these objects.
        alpha_test : bool
            Let rays through the transparent texels of alpha-tested faces
            (glTF ``MASK`` and ``BLEND`` materials, :mod:`bvh.queries.alpha`).
        alpha_cutoff : float
            The cutoff of ``BLEND`` materials, in ``[0, 1]``: alpha below it
            is transparent (``MASK`` materials use their own ``alphaCutoff``).
        line_tolerance, point_tolerance : float or (N,) float
            How near (world units) a ray must pass to a segment or a point of
            a line or point object to hit it, ``>= 0``.
        line_slope, point_slope : float or (N,) float
            Tolerance added per unit of distance along the ray (a cone):
            ``tol(t) = tolerance + slope * t * |direction|``; a camera's pixel
            tolerance is one (:meth:`bvh.camera.Camera.pixel_tolerance`).
            See :mod:`bvh.queries.lines_points` for what a line or point hit is and
            how it competes with a surface behind or under it.

        Returns
        -------
        SceneHits
            Arrays of length N; ``object`` is -1 and ``t`` inf on a miss.
            ``primitive`` says what was hit; a segment's hit gives its
            ``segment`` and ``s``, a point's its ``point_index``.
        """
        origins, directions = check_rays(origins, directions)
        tmin, tmax = check_window(tmin, tmax)
        alpha_test, alpha_cutoff = _check_alpha_options(alpha_test, alpha_cutoff)
        n = origins.shape[0]
        tolerances = _check_tolerances(n, line_tolerance, line_slope, point_tolerance, point_slope)
        snap = self._snapshot()
        if snap.has_line_points:
            return self._pick(snap, origins, directions, tmin, tmax, mask, objects, exclude, cull_backfaces,
                              tolerances, alpha_test, alpha_cutoff)
        enabled = self._enabled(snap, mask, objects, exclude)
        if not snap.traceable:
            misses = _scene_misses(n)
            return SceneHits(*misses[:8], misses[7].copy(), np.full((n, 2), np.nan), misses[8],
                             *_surface_kinds(misses[0], misses[1]))
        # The kernel writes every output of every ray, misses included. Rows
        # of one allocation per dtype: for a click's single ray, allocations
        # cost as much as the traversal.
        out_object, out_mesh, out_triangle = np.empty((3, n), np.int64)
        t, u, v = np.empty((3, n))
        point, normal = np.empty((2, n, 3))
        front_face = np.empty(n, np.bool_)
        scene, alpha = snap.traced(snap.with_enabled(enabled), alpha_test, alpha_cutoff)
        tmax = min(tmax, FAR)
        cull_backfaces = bool(cull_backfaces)
        if n <= SERIAL_BATCH:
            scene_kernels.closest_hits_serial(scene, alpha, origins, directions, tmin, tmax, cull_backfaces, out_object,
                                              out_mesh, out_triangle, t, u, v, point, normal, front_face)
        else:
            scene_kernels.closest_hits_parallel(scene, alpha, origins, directions, tmin, tmax, cull_backfaces,
                                                out_object, out_mesh, out_triangle, t, u, v, point, normal,
                                                front_face)
        shading_normal, uv = self._interpolate(snap, out_object, out_mesh, out_triangle, u, v, normal)
        return SceneHits(out_object, out_mesh, out_triangle, t, u, v, point, normal, shading_normal, uv, front_face,
                         *_surface_kinds(out_object, out_mesh))

    def _pick(self, snap: _Snapshot, origins, directions, tmin, tmax, mask, objects, exclude, cull_backfaces,
              tolerances, alpha_test, alpha_cutoff) -> SceneHits:
        """:meth:`intersect` of a scene holding line or point objects: one
        walk over surfaces, segments and points (:mod:`bvh.queries.lines_points`)."""
        lp, box = snap.line_point_arrays()
        lp = lp._replace(enabled=self._enabled(snap, mask, objects, exclude, snap.pick_enabled))
        n = origins.shape[0]
        out_object, out_mesh, out_triangle, out_set, segment, point_index = np.empty((6, n), np.int64)
        t, u, v, s, distance = np.empty((5, n))
        point, normal = np.empty((2, n, 3))
        front_face = np.empty(n, np.bool_)
        primitive = np.empty(n, np.int8)
        kernel = lines_points.pick_serial if n <= SERIAL_BATCH else lines_points.pick_parallel
        arrays, alpha = snap.traced(snap.arrays, alpha_test, alpha_cutoff)
        kernel(arrays, lp, alpha, origins, directions, _tolerance_rows(n, tolerances), box, tmin,
               min(tmax, FAR), bool(cull_backfaces), out_object, out_mesh, out_triangle, t, u, v, point, normal,
               front_face, primitive, out_set, segment, s, point_index, distance)
        shading_normal, uv = self._interpolate(snap, out_object, out_mesh, out_triangle, u, v, normal)
        return SceneHits(out_object, out_mesh, out_triangle, t, u, v, point, normal, shading_normal, uv, front_face,
                         primitive, out_set, segment, s, point_index, distance)

    @staticmethod
    def _interpolate(snap: _Snapshot, objects, meshes, triangles, u, v, normal):
        """Shading normals and texture coordinates of mesh hits, by barycentrics
        (:func:`bvh.interpolation.interpolate`)."""
        if not snap.interpolates:
            # empty and fill: np.full costs four times as much for a click's one row.
            uv = np.empty((objects.shape[0], 2))
            uv.fill(np.nan)
            return normal.copy(), uv
        return interpolate(snap.pack, snap.inverse, objects, meshes, triangles, u, v, normal)

    def closest_point(self, points, max_distance=np.inf, mask=ALL_BITS, objects=None,
                      exclude=None) -> SceneClosestPoints:
        """Nearest surface point of the scene to each world point.

        Branch and bound over the top level and each mesh's tree, nearest box
        first (:mod:`bvh.queries.closest_point`). Distances are world distances, also
        in non-uniformly scaled or sheared instances: their triangles are
        measured in the world, and their trees searched with a lower bound.
        Shapes answer too: a sphere (an ellipsoid under a non-uniform scale),
        a box's six faces, a quad, a polygon.

        Parameters
        ----------
        points : (N, 3) or (3,) float
            World query points.
        max_distance : float
            Search radius in world units (inf: no limit).
        mask, objects, exclude
            Which objects are searched, as in :meth:`intersect`.

        Returns
        -------
        SceneClosestPoints
            Arrays of length N; ``object`` is -1 and ``distance`` inf for a
            point with nothing within ``max_distance``.
        """
        points = check_points(points)
        limit = min(check_max_distance(max_distance), FAR ** 0.5) ** 2  # a huge limit squared would overflow
        snap = self._snapshot()
        enabled = self._enabled(snap, mask, objects, exclude)
        n = points.shape[0]
        objects_out = np.full(n, -1, np.int64)
        rows = np.full(n, -1, np.int32)
        d2, u, v = np.empty((3, n))
        nearest, normal = np.empty((2, n, 3))
        if snap.traceable and n > 0:
            kernel = closest_point_kernels.scene_closest_points_serial if n <= SERIAL_BATCH \
                else closest_point_kernels.scene_closest_points
            kernel(snap.with_enabled(enabled), points, limit, coherent_order(points), objects_out, rows, d2, u, v,
                   nearest, normal)
        found = objects_out >= 0
        on_mesh = found & (rows >= 0)
        mesh = np.full(n, -1, np.int64)
        triangle = np.full(n, -1, np.int64)
        mesh[on_mesh] = snap.mesh_of[objects_out[on_mesh]]
        packed = rows[on_mesh]
        triangle[on_mesh] = snap.arrays.face_index[packed]
        distance = np.where(found, np.sqrt(np.where(found, d2, 0.0)), np.inf)
        nearest[~found] = np.nan
        normal[~found] = np.nan
        u = np.where(on_mesh, u, np.nan)
        v = np.where(on_mesh, v, np.nan)
        if on_mesh.any():
            local = face_normals(snap.arrays.tris.reshape(-1, 9)[packed])
            linear_inv = snap.inverse[objects_out[on_mesh], :, :3]
            with np.errstate(invalid="ignore", divide="ignore"):
                normal[on_mesh] = unit_rows(np.einsum("nji,nj->ni", linear_inv, local))
        shading_normal, uv = self._interpolate(snap, objects_out, mesh, triangle, u, v, normal)
        return SceneClosestPoints(objects_out, mesh, triangle, nearest, distance, u, v, normal, shading_normal, uv)

    def sphere_cast(self, origins, directions, radius, tmin=0.0, tmax=np.inf, mask=ALL_BITS, objects=None,
                    exclude=None) -> SceneSphereHits:
        """First contact of a sphere of ``radius`` swept along each world ray.

        The sphere's centre moves along ``origin + t * direction``; the
        result is the smallest ``t`` in ``[tmin, tmax]`` at which it touches
        a surface (``tmin`` if it already does). The same walk as
        :meth:`intersect`, with boxes grown by the radius (by an upper bound
        of its size in each object's space), and the leaves testing the
        sphere against each triangle mapped to the world
        (:mod:`bvh.queries.sphere_cast`): distances are world distances, also in
        non-uniformly scaled or sheared instances. Shapes answer too: a
        sphere (exact under a rotation and uniform scale; an ellipsoid
        otherwise, by conservative advancement, see
        ``bvh.sphere_cast._swept_ellipsoid``), a box, a quad, a polygon.

        Parameters
        ----------
        origins, directions : (N, 3) or (3,) float
            The centre's world path; directions need not be unit.
        radius : float or (N,) float
            World radius, finite and ``>= 0``, one for all or one per ray.
        tmin, tmax : float
            The window of ``t`` searched, ``0 <= tmin <= tmax``; tmax may be inf.
        mask, objects, exclude
            Which objects are touched, as in :meth:`intersect`.

        Returns
        -------
        SceneSphereHits
            Arrays of length N; ``object`` is -1 and ``t`` inf on a miss.
        """
        origins, directions = check_rays(origins, directions)
        tmin, tmax = check_window(tmin, tmax)
        n = origins.shape[0]
        radius = check_radius(radius, n)
        snap = self._snapshot()
        enabled = self._enabled(snap, mask, objects, exclude)
        objects_out = np.full(n, -1, np.int64)
        rows = np.full(n, -1, np.int32)
        t = np.full(n, np.inf)
        u, v = np.full((2, n), np.nan)
        point, center, normal = np.full((3, n, 3), np.nan)
        if snap.traceable and n > 0:
            kernel = sphere_cast_kernels.scene_sphere_casts_serial if n <= SERIAL_BATCH \
                else sphere_cast_kernels.scene_sphere_casts
            kernel(snap.with_enabled(enabled), origins, directions, radius, tmin, min(tmax, FAR), objects_out, rows,
                   t, u, v, point, center, normal)
        on_mesh = (objects_out >= 0) & (rows >= 0)
        mesh = np.full(n, -1, np.int64)
        triangle = np.full(n, -1, np.int64)
        mesh[on_mesh] = snap.mesh_of[objects_out[on_mesh]]
        triangle[on_mesh] = snap.arrays.face_index[rows[on_mesh]]
        return SceneSphereHits(objects_out, mesh, triangle, t, point, center, normal, u, v)
    def _dipoles(self, pack: MeshPack) -> np.ndarray:
        """The dipole data of every tree of ``pack`` (:mod:`bvh.queries.winding`),
        one pass over the packed rows; kept until the meshes change, which
        makes a new pack. Derived data, so not saved: a scene opened from
        disk makes it on its first inside/outside query."""
        cached = self._dipole_cache
        if cached is not None and cached[0] is pack:
            return cached[1]
        dipoles = winding.dipole_rows(pack.nodes, pack.tris)
        if dipoles.shape[0] == 0:
            dipoles = np.zeros(1)
        self._dipole_cache = (pack, dipoles)
        return dipoles

    def contains(self, points, mask=ALL_BITS, objects=None, exclude=None) -> SceneContains:
        """Which object, if any, holds each world point.

        Each object whose world box holds the point answers in its own
        space, where an affine map keeps inside and outside: a mesh by its
        winding number (``MeshBVH.contains``, the same in a scaled, sheared
        or mirrored instance: a mirror turns the surface inside out in the
        world, not in the object), a sphere or a box exactly; quads and
        polygons are open and hold nothing. See :class:`SceneContains` for
        the rule among several objects and for open meshes.

        Parameters
        ----------
        points : (N, 3) or (3,) float
            World points.
        mask, objects, exclude
            Which objects are searched, as in :meth:`intersect`.

        Returns
        -------
        SceneContains
        """
        points = check_points(points)
        snap = self._snapshot()
        enabled = self._enabled(snap, mask, objects, exclude)
        n = points.shape[0]
        found = np.full(n, -1, np.int64)
        if snap.traceable and n > 0:
            dipoles = self._dipoles(snap.pack)
            kernel = winding.scene_contains_serial if n <= SERIAL_BATCH else winding.scene_contains
            kernel(snap.with_enabled(enabled), dipoles, points, np.empty(n), np.empty(n), found)
        return SceneContains(found >= 0, found)

    def signed_distance(self, points, max_distance=np.inf, mask=ALL_BITS, objects=None,
                        exclude=None) -> np.ndarray:
        """World distance from each point to the nearest searched surface
        (:meth:`closest_point`), negative inside any searched object
        (:meth:`contains`).

        Parameters
        ----------
        points : (N, 3) or (3,) float
        max_distance : float
            Search radius in world units (inf: no limit); beyond it the
            answer is inf, or -inf inside.
        mask, objects, exclude
            Which objects are searched, as in :meth:`intersect`.

        Returns
        -------
        (N,) float64
        """
        points = check_points(points)
        distance = self.closest_point(points, max_distance, mask, objects, exclude).distance
        inside = self.contains(points, mask, objects, exclude).inside
        return np.where(inside, -distance, distance)

    def occluded(self, origins, directions, tmin=0.0, tmax=np.inf, mask=ALL_BITS, objects=None,
                 exclude=None, alpha_test=True, alpha_cutoff=DEFAULT_CUTOFF) -> np.ndarray:
        """Whether anything lies on each ray within ``[tmin, tmax]`` (any hit, early exit);
        the options as :meth:`intersect`'s.

        Returns
        -------
        (N,) bool
        """
        origins, directions = check_rays(origins, directions)
        tmin, tmax = check_window(tmin, tmax)
        alpha_test, alpha_cutoff = _check_alpha_options(alpha_test, alpha_cutoff)
        snap = self._snapshot()
        enabled = self._enabled(snap, mask, objects, exclude)
        occluded = np.zeros(origins.shape[0], np.bool_)
        if snap.traceable:
            kernel = scene_kernels.occluded_serial if origins.shape[0] <= SERIAL_BATCH \
                else scene_kernels.occluded_parallel
            kernel(*snap.traced(snap.with_enabled(enabled), alpha_test, alpha_cutoff), origins, directions, tmin,
                   min(tmax, FAR), occluded)
        return occluded

    def intersect_all(self, origins, directions, tmin=0.0, tmax=np.inf, mask=ALL_BITS, objects=None,
                      exclude=None, alpha_test=True, alpha_cutoff=DEFAULT_CUTOFF) -> SceneAllHits:
        """Every surface crossing of each ray within ``[tmin, tmax]`` (the
        options as :meth:`intersect`'s: transparent texels are not crossings).

        A ray through an edge or vertex shared by faces of one object crosses
        the surface once and is reported once. Shapes report each crossing (a
        ray through a sphere: two).

        Returns
        -------
        SceneAllHits
            Flat arrays sorted by ``(ray, t)``; each hit's point, normals,
            texture coordinates and side as :meth:`intersect` gives them.
        """
        origins, directions = check_rays(origins, directions)
        tmin, tmax = check_window(tmin, tmax)
        alpha_test, alpha_cutoff = _check_alpha_options(alpha_test, alpha_cutoff)
        snap = self._snapshot()
        enabled = self._enabled(snap, mask, objects, exclude)
        n = origins.shape[0]
        if not snap.traceable:
            none = np.zeros(0, np.int64)
            return SceneAllHits(none, np.zeros(0), none, none, none, np.zeros(0), np.zeros(0), np.zeros((0, 3)),
                                np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 2)), np.zeros(0, np.bool_))
        arrays, alpha = snap.traced(snap.with_enabled(enabled), alpha_test, alpha_cutoff)
        tmax = min(tmax, FAR)
        counts = np.empty(n, np.int64)
        scene_kernels.count_hits_parallel(arrays, alpha, origins, directions, tmin, tmax, counts)
        starts = np.zeros(n, np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        total = int(counts.sum())
        rows = np.empty(total, np.int32)
        t = np.empty(total)
        u = np.empty(total)
        v = np.empty(total)
        objects_hit = np.empty(total, np.int32)
        keep = np.empty(total, np.bool_)
        cursor = np.empty(n, np.int64)
        scene_kernels.collect_hits_parallel(arrays, alpha, origins, directions, tmin, tmax, starts, cursor, rows, t, u,
                                            v, objects_hit, keep)
        ray = np.repeat(np.arange(n, dtype=np.int64), counts)[keep]
        rows = rows[keep]
        objects_hit = objects_hit[keep].astype(np.int64)
        on_mesh = rows >= 0
        mesh = np.where(on_mesh, snap.mesh_of[objects_hit], -1).astype(np.int64)
        triangle = np.full(rows.shape[0], -1, np.int64)
        triangle[on_mesh] = snap.pack.face_index[rows[on_mesh]]
        t = t[keep]
        u = u[keep]
        v = v[keep]
        u[on_mesh] = np.clip(u[on_mesh], 0.0, 1.0)
        v[on_mesh] = np.minimum(np.clip(v[on_mesh], 0.0, 1.0), 1.0 - u[on_mesh])
        # Point, normal and side of each hit, computed as the closest-hit
        # kernel computes them, so a ray's first crossing matches intersect;
        # shading normals and texture coordinates as intersect interpolates them.
        ray_origins = origins[ray]
        ray_directions = directions[ray]
        point = ray_origins + t[:, None] * ray_directions
        local_normal = np.empty((rows.shape[0], 3))
        local_normal[on_mesh] = face_normals(snap.pack.tris[rows[on_mesh]])
        on_shape = np.flatnonzero(~on_mesh)
        if on_shape.size:
            local_normal[on_shape] = _shape_normals(snap, objects_hit[on_shape], ray_origins[on_shape],
                                                    ray_directions[on_shape], t[on_shape])
        world_normal = _normals_to_world(snap.inverse[objects_hit, :, :3], local_normal)
        normal = unit_rows(world_normal)
        front_face = dot_rows(world_normal, ray_directions) < 0.0
        shading_normal, uv = self._interpolate(snap, objects_hit, mesh, triangle, u, v, normal)
        return SceneAllHits(ray, t, objects_hit, mesh, triangle, u, v, point, normal, shading_normal, uv, front_face)

    def select(self, planes=None, mode="objects", mask=ALL_BITS, objects=None, exclude=None,
               containment="crossing", lasso=None) -> Selection:
        """Objects (or their triangles) that meet, or lie within, a convex region
        or a camera's lasso.

        Parameters
        ----------
        planes : (P, 4) float, optional
            World half-spaces ``n . x + d >= 0`` whose intersection is the
            region: a camera's frustum (see :meth:`bvh.camera.Camera.frustum`).
            Default, with ``lasso``: the frustum of its bounding rectangle.
        mode : "objects" or "triangles"
        mask, objects, exclude
            As for :meth:`intersect`; objects that are not pickable are skipped.
        containment : "crossing" or "window"
            As the two marquees of CAD tools: ``"crossing"`` takes what meets
            the region (a point in common is enough), ``"window"`` only what
            lies entirely inside it: an object when all its triangles do, and
            in ``"triangles"`` mode only the triangles that do.
        lasso : bvh.lasso.Lasso, optional
            A camera's pixel polygon: the region is what lies between the
            camera's near and far planes and projects inside the polygon
            (:mod:`bvh.queries.lasso`), culled by ``planes``.

        Returns
        -------
        Selection
            Objects are culled by their world boxes (a box outside the region
            leaves its object out, a box inside takes it whole), then meshes
            are tested exactly, triangle by triangle (for a window, every
            vertex a face uses must be inside). Shapes: for a crossing, judged
            by their world boxes, a conservative answer; for a window, exactly
            (see :func:`_shape_within`). With a lasso, no box is taken whole
            (the region is not convex): every triangle of a mesh whose box
            crosses the bounding frustum is tested; boxes and quads are tested
            exactly as their surfaces' triangles (a box also when the region
            lies wholly inside it), spheres and polygons by their world boxes
            (for a window, conservatively: only when the world box is within).
        """
        if mode not in ("objects", "triangles"):
            raise ValueError(f"mode must be 'objects' or 'triangles', got {mode!r}")
        if containment not in ("crossing", "window"):
            raise ValueError(f"containment must be 'crossing' or 'window', got {containment!r}")
        window = containment == "window"
        if lasso is not None:
            return self._select_lasso(lasso, lasso.planes if planes is None else planes, mode, mask, objects,
                                      exclude, window)
        if planes is None:
            raise ValueError("select needs planes, or a lasso")
        planes = real_array("planes", planes).astype(np.float64)
        if planes.ndim != 2 or planes.shape[1] != 4 or planes.shape[0] == 0:
            raise ValueError(f"planes must have shape (P, 4), P >= 1, got {planes.shape}")
        if not np.isfinite(planes).all():
            raise ValueError("planes contain NaN or infinite values")
        snap, seen = self._objects_in_frustum(planes, mask, objects, exclude)
        whole_object = np.array([-1])
        chosen_objects = []
        chosen_triangles = []
        pack = snap.pack
        met = self._small_meshes_meeting(snap, seen, planes, window) if mode == "objects" else {}
        for oid, box in seen:
            kind = int(snap.kind[oid])
            if kind != MESH:
                start = int(snap.shape_start[oid])
                if not window or box == INSIDE or _shape_within(
                        kind, snap.shape_data[start:], snap.transform[oid], planes):
                    chosen_objects.append(np.array([oid]))
                    chosen_triangles.append(whole_object)
                continue
            if (box == INSIDE and mode == "objects") or met.get(oid, False):
                chosen_objects.append(np.array([oid]))
                chosen_triangles.append(whole_object)
                continue
            if oid in met:
                continue
            mesh = int(snap.mesh_of[oid])
            vertices = pack.mesh_vertices(mesh)
            faces = pack.mesh_faces(mesh)
            local = planes_to_object_space(planes, snap.transform[oid])
            if mode == "objects":
                taken = all_triangles_within_frustum if window else any_triangle_in_frustum
                if taken(vertices, faces, local):
                    chosen_objects.append(np.array([oid]))
                    chosen_triangles.append(whole_object)
            else:
                if box == INSIDE:
                    hit = np.ones(faces.shape[0], bool)
                else:
                    hit = (triangles_within_frustum if window else triangles_in_frustum)(vertices, faces, local)
                found = np.flatnonzero(hit)
                chosen_objects.append(np.full(found.shape[0], oid))
                chosen_triangles.append(found)
        return _selection(chosen_objects, chosen_triangles)

    @staticmethod
    def _small_meshes_meeting(snap, seen, planes, window) -> dict:
        """``{object id: bool}``: whether each mesh object of ``seen`` whose box
        crosses the region, and whose mesh has at most ``BLOCK`` faces, has a
        face in it (every face, for a ``window``), from one kernel call over
        all of them. Larger meshes are left out: the per-mesh tests split
        their faces between the threads."""
        oids = np.array([oid for oid, box in seen if box != INSIDE], np.int64)
        if not oids.size:
            return {}
        oids = oids[snap.kind[oids] == MESH]
        meshes = snap.mesh_of[oids].astype(np.int64)
        pack = snap.pack
        small = np.diff(pack.face_start)[meshes] <= BLOCK
        oids, meshes = oids[small], meshes[small]
        if not oids.size:
            return {}
        local = planes_to_object_space(planes, snap.transform[oids])
        met = np.empty(oids.size, np.bool_)
        objects_meet_frustum(pack.vertices, pack.vertex_start, pack.faces, pack.face_start, meshes,
                             np.ascontiguousarray(local), window, met)
        return dict(zip(oids.tolist(), met.tolist()))

    def _objects_in_frustum(self, planes, mask, objects, exclude) -> tuple:
        """``(snapshot, [(object id, box state), ...])``: the enabled objects
        with finite bounds whose world box is not wholly outside ``planes``
        (state ``INSIDE`` or ``CROSSING`` of :func:`boxes_in_frustum`)."""
        snap = self._snapshot()
        candidates = np.flatnonzero(self._enabled(snap, mask, objects, exclude))
        candidates = candidates[np.isfinite(snap.bounds[candidates]).all(axis=(1, 2))]
        if not candidates.size:
            return snap, []
        state = boxes_in_frustum(snap.bounds[candidates], planes)
        return snap, [(oid, box) for oid, box in zip(candidates.tolist(), state.tolist()) if box != OUTSIDE]

    def _select_lasso(self, lasso, planes, mode, mask, objects, exclude, window) -> Selection:
        """:meth:`select` with a lasso (see there)."""
        planes = check_planes(planes)
        snap, seen = self._objects_in_frustum(planes, mask, objects, exclude)
        chosen_objects = []
        chosen_triangles = []
        pack = snap.pack
        for oid, box in seen:
            kind = int(snap.kind[oid])
            if kind != MESH:
                if _shape_in_lasso(lasso, kind, snap.shape_data[int(snap.shape_start[oid]):], snap.transform[oid],
                                   snap.bounds[oid], window):
                    chosen_objects.append(np.array([oid]))
                    chosen_triangles.append(np.array([-1]))
                continue
            mesh = int(snap.mesh_of[oid])
            hit = lasso.faces(pack.mesh_vertices(mesh), pack.mesh_faces(mesh), snap.transform[oid], window)
            if mode == "objects":
                if hit.all() if window else hit.any():
                    chosen_objects.append(np.array([oid]))
                    chosen_triangles.append(np.array([-1]))
            else:
                found = np.flatnonzero(hit)
                chosen_objects.append(np.full(found.shape[0], oid))
                chosen_triangles.append(found)
        return _selection(chosen_objects, chosen_triangles)

    def select_visible(self, camera, pixels, mode="objects", mask=ALL_BITS, objects=None,
                       exclude=None, alpha_test=True, alpha_cutoff=0.5) -> Selection:
        """What a camera sees through some of its pixels: one closest-hit ray
        per pixel (visible-only selection, as an ID render would answer it).

        Parameters
        ----------
        camera : bvh.camera.Camera
        pixels : (M, 2) int
            ``[column, row]`` of each pixel; the ray goes through its centre
            (``[column + 0.5, row + 0.5]``, as :meth:`id_buffer` casts).
        mode : "objects" or "triangles"
        mask, objects, exclude, alpha_test, alpha_cutoff
            As for :meth:`intersect`.

        Returns
        -------
        Selection
            Each object hit once, ascending; in ``"triangles"`` mode each
            (object, face) hit once (shapes once, with -1).
        """
        if mode not in ("objects", "triangles"):
            raise ValueError(f"mode must be 'objects' or 'triangles', got {mode!r}")
        pixels = np.asarray(pixels)
        if pixels.shape[0] == 0:
            return Selection(np.zeros(0, np.int64), np.zeros(0, np.int64))
        hits = self.intersect(*camera.rays(pixels + 0.5), mask=mask, objects=objects, exclude=exclude,
                              alpha_test=alpha_test, alpha_cutoff=alpha_cutoff)
        seen = hits.object >= 0
        if mode == "objects":
            chosen = np.unique(hits.object[seen])
            return Selection(chosen, np.full(chosen.shape[0], -1, np.int64))
        pairs = np.unique(np.stack([hits.object[seen], hits.triangle[seen]], axis=1), axis=0)
        return Selection(pairs[:, 0].copy(), pairs[:, 1].copy())

    def id_buffer(self, camera, mask=ALL_BITS, objects=None, exclude=None, cull_backfaces=False, tmin=0.0,
                  tmax=np.inf, normals=False, barycentrics=False, alpha_test=True, alpha_cutoff=0.5) -> IdBuffer:
        """What each pixel of ``camera``'s image shows (:mod:`bvh.queries.idbuffer`).

        Parameters
        ----------
        camera : bvh.camera.Camera
        mask, objects, exclude, cull_backfaces, tmin, tmax, alpha_test, alpha_cutoff
            As for :meth:`intersect`: a transparent texel lets the pixel's ray through.
        normals, barycentrics : bool
            Also fill :attr:`IdBuffer.normal` and :attr:`IdBuffer.barycentric`.

        Returns
        -------
        IdBuffer
            Pixel ``(x, y)`` (row ``y * width + x``) holds the closest hit of
            the ray through ``[x + 0.5, y + 0.5]``: what :meth:`intersect`
            answers for ``camera.rays`` of that pixel centre.
        """
        tmin, tmax = check_window(tmin, tmax)
        alpha_test, alpha_cutoff = _check_alpha_options(alpha_test, alpha_cutoff)
        snap = self._snapshot()
        enabled = self._enabled(snap, mask, objects, exclude)
        if not snap.traceable:
            return id_buffer_missed(camera, normals, barycentrics)
        return trace_id_buffer(*snap.traced(snap.with_enabled(enabled), alpha_test, alpha_cutoff), camera, tmin,
                               min(tmax, FAR), cull_backfaces, normals, barycentrics)

    def overlap(self, shape, triangles=False, mask=ALL_BITS, objects=None, exclude=None) -> Selection:
        """Objects (or their triangles) that have a point in common with a
        closed solid given in the world.

        One walk of the scene (:mod:`bvh.queries.overlap`): the top level and each
        mesh's tree with a conservative shape/box bound, the triangles with
        an exact float64 test. Boxes and convex regions are tested in each
        object's space (half-spaces map exactly); spheres and capsules in the
        world, on the triangles mapped there, so that a non-uniformly scaled
        or sheared instance is measured exactly. Shape objects are their
        surfaces: a box's and a quad's triangles, a convex polygon's fan of
        triangles, a sphere's (an ellipsoid's) surface, exactly.

        Parameters
        ----------
        shape : dict
            As for :meth:`bvh.MeshBVH.overlap`, in world coordinates.
        triangles : bool
            Report each touching triangle (as :meth:`select` does with
            ``mode="triangles"``) rather than each object once.
        mask, objects, exclude
            Which objects are searched, as in :meth:`intersect`.

        Returns
        -------
        Selection
            Object ids ascending; with ``triangles``, one row per touching
            face (ascending within its object) and shapes once with -1, else
            -1 for every object.

        Raises
        ------
        ValueError
            On a malformed shape; and when the query reaches a polygon
            object whose outline is not convex (tested by its fan of
            triangles, which covers only convex outlines): exclude it.
        """
        record = overlap_kernels.shape_record(shape)
        snap = self._snapshot()
        enabled = self._enabled(snap, mask, objects, exclude)
        none = np.zeros(0, np.int64)
        if not snap.traceable:
            return Selection(none, none.copy())
        rows, found, not_convex = overlap_kernels.scene_pairs(snap.with_enabled(enabled), record)
        if not_convex >= 0:
            raise ValueError(f"object {not_convex} is a polygon whose outline is not convex: overlap tests "
                             "polygons as a fan of triangles, which covers only convex outlines; "
                             f"leave it out with exclude=[{not_convex}]")
        found = found.astype(np.int64)
        if not triangles:
            chosen = np.unique(found)
            return Selection(chosen, np.full(chosen.shape[0], -1, np.int64))
        face = np.full(rows.shape[0], -1, np.int64)
        on_mesh = rows >= 0
        face[on_mesh] = snap.arrays.face_index[rows[on_mesh]]
        order = np.lexsort((face, found))
        return Selection(found[order], face[order])

    # -------------------------------------------------------- persistence
    @property
    def annotations(self) -> dict:
        """The annotations :meth:`save` writes by default: those of the save this
        scene was opened from or last saved with, as :meth:`annotate` changed
        them since (a copy; ``{}`` when none, as for saves older than them)."""
        with self._lock:
            return json.loads(json.dumps(self._annotations))

    def annotate(self, key: str, value) -> None:
        """Set one annotation (small JSON data), saved by the next :meth:`save`
        with the state of the moment it captures: set it under :meth:`batch`
        with the edit it describes, and a save holds both or neither."""
        with self._lock:
            self._annotations = {**self._annotations, key: value}

    def save(self, directory, annotations: dict | None = None) -> None:
        """Write the scene to ``directory`` (created if missing), crash-safely.

        One ``.npy`` per array and a JSON manifest written last (see
        :mod:`bvh.io.persistence`); saving again after an edit rewrites only the
        object table, not the meshes.

        Parameters
        ----------
        directory : str or os.PathLike
        annotations : dict, optional
            Small JSON data of the caller's (at most ``MAX_ANNOTATION_BYTES``
            as JSON), written in the same manifest as the arrays, so it is
            saved atomically with them (a journal position, say);
            :meth:`open` gives it back as :attr:`annotations`. None saves the
            scene's own :attr:`annotations`, taken with the rest of the state.

        Raises
        ------
        ValueError
            When ``annotations`` is not a dict with string keys that JSON can
            hold, or is too large; nothing is written.

        Notes
        -----
        The scene's lock is held only while the state is captured (copies
        of the object arrays; the mesh pack is never changed in place, a
        change replaces it); files are written without it, so queries and
        edits go on during a save. Saves of one scene are serialised, in the
        order they captured it, so the directory ends with the latest.
        """
        from ..io.persistence import write_arrays

        given = None if annotations is None else _check_annotations(annotations)
        with self._save_lock:
            with self._lock:
                annotations = self._annotations if given is None else given
                pack = self._committed_pack()
                n = self._count
                starts, lengths, shape_data = self._shape_table()
                arrays = {name: getattr(pack, name) for name in ARRAY_NAMES}
                lp_arrays = line_point_pack.saved_arrays(self._committed_lp())
                arrays.update(lp_arrays)
                arrays.update(object_kind=self._kind[:n].copy(), object_mesh=self._mesh_of[:n].copy(),
                              object_transform=self._transform[:n].copy(), object_mask=self._mask[:n].copy(),
                              object_pickable=self._pickable[:n].copy(), shape_start=starts,
                              shape_data=shape_data)
                if self._objects_token is None:
                    self._objects_token = uuid.uuid4().hex
                tokens = {name: self._pack_token for name in ARRAY_NAMES}
                tokens.update({name: self._lp_token for name in lp_arrays})
                set_names = list(self._set_names)
                lp_token = self._lp_token
                tokens.update({name: self._objects_token for name in _OBJECT_ARRAYS})
                # Lists are copied (names are replaced, never changed in
                # place; params dicts are never changed after an add).
                mesh_names = list(self._mesh_names)
                mesh_keys = dict(self._mesh_keys)
                object_names = list(self._names)
                params = list(self._params)
                pack_token, objects_token = self._pack_token, self._objects_token
            metadata = {
                "mesh_names": mesh_names,
                "mesh_keys": mesh_keys,
                "object_names": object_names,
                "shape_params": [dict(p) for p in params],
                "shape_lengths": lengths.tolist(),
                "pack_token": pack_token,
                "objects_token": objects_token,
                "annotations": annotations,
                "set_names": set_names,
                "lp_token": lp_token,
            }
            write_arrays(Path(directory), arrays, metadata, tokens)
            if given is not None:
                # Given ones become the scene's; its own are left as they are now: an edit
                # annotated while the save ran (the journal's next number) must not be undone.
                with self._lock:
                    self._annotations = given

    @classmethod
    def open(cls, directory, verify: bool = True) -> "Scene":
        """Open a scene saved with :meth:`save`, its mesh arrays memory-mapped
        read-only, so processes opening the same directory share one copy.

        Raises
        ------
        ValueError
            When the directory is missing, damaged, or of another format version.
        """
        from ..io.persistence import FORMAT_VERSION, read_saved

        saved = read_saved(Path(directory), verify=verify)
        arrays = saved.arrays
        if not any(name in arrays for name in ALPHA_ARRAY_NAMES) and "mesh_root" in arrays:
            # Saved before alpha-tested materials (issue 17): no mesh has any.
            arrays = {**arrays, **alpha_defaults(np.asarray(arrays["mesh_root"]).shape[0])}
        converted = False
        try:
            faces = arrays.get("alpha_faces")
            if faces is not None and np.ndim(faces) == 2 and np.shape(faces)[1] == alpha_columns.S_LO:
                # Saved before the alpha-tested walks' tighter boxes (bvh.builders.alpha_bounds).
                arrays = with_opaque_rects(arrays)
                converted = True
                _log.info("scene directory %s was saved without the alpha-tested faces' rectangles: they were "
                          "made on opening (the next save writes them)", directory)
            if saved.version < FORMAT_VERSION:
                arrays = _rebuilt_trees(arrays)
                _log.info("scene directory %s was saved in format version %d: its %d meshes' trees were rebuilt "
                          "(the next save writes version %d)", directory, saved.version,
                          arrays["mesh_root"].shape[0], FORMAT_VERSION)
            scene = cls._from_arrays(saved.metadata, arrays)
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise ValueError(f"scene directory {directory} is damaged: {error}") from None
        if saved.version < FORMAT_VERSION or converted:
            # New trees or alpha rows: the next save must write them, not reuse the old files.
            scene._pack_token = uuid.uuid4().hex
        return scene

    @classmethod
    def _from_arrays(cls, metadata: dict, arrays: dict) -> "Scene":
        missing = [name for name in ARRAY_NAMES + _OBJECT_ARRAYS if name not in arrays]
        if missing:
            raise ValueError(f"array {missing[0]!r} is missing")
        pack = freeze(MeshPack(**{name: np.asarray(arrays[name]) for name in ARRAY_NAMES}))
        check_alpha(pack)
        scene = cls()
        scene._pack = pack
        scene._pack_token = str(metadata["pack_token"])
        scene._mesh_names = list(metadata["mesh_names"])
        scene._mesh_keys = {str(k): int(m) for k, m in metadata["mesh_keys"].items()}
        if len(scene._mesh_names) != pack.mesh_count:
            raise ValueError(f"{len(scene._mesh_names)} mesh names for {pack.mesh_count} meshes")
        kind = np.array(arrays["object_kind"], np.int32)
        n = kind.shape[0]
        names = list(metadata["object_names"])
        params = [dict(p) for p in metadata["shape_params"]]
        lengths = np.asarray(metadata["shape_lengths"], np.int64)
        if not len(names) == len(params) == lengths.shape[0] == n:
            raise ValueError(f"the object table has {n} rows but {len(names)} names")
        transform = np.array(arrays["object_transform"], np.float64)
        mesh_of = np.array(arrays["object_mesh"], np.int32)
        starts = np.asarray(arrays["shape_start"], np.int64)
        shape_data = np.asarray(arrays["shape_data"], np.float64)
        scene._kind = kind
        scene._mesh_of = mesh_of
        scene._transform = transform
        scene._inverse = np.zeros((n, 3, 4))
        scene._mask = np.array(arrays["object_mask"], np.uint32)
        scene._pickable = np.array(arrays["object_pickable"], bool)
        scene._bounds = np.full((n, 2, 3), np.nan)
        scene._reported = np.full((n, 2, 3), np.nan)
        scene._names = names
        scene._params = params
        scene._shape_data = [None] * n
        scene._count = n
        live = np.flatnonzero(kind != REMOVED)
        scene._live_count = int(live.size)
        on_mesh = live[kind[live] == MESH]
        outside = (mesh_of[on_mesh] < 0) | (mesh_of[on_mesh] >= pack.mesh_count)
        if outside.any():
            oid = int(on_mesh[np.argmax(outside)])
            raise ValueError(f"object {oid} refers to mesh {mesh_of[oid]}, which is not there")
        lp_pack = line_point_pack.from_saved(arrays)
        scene._lp_pack = lp_pack
        scene._set_names = list(metadata.get("set_names", []))
        scene._set_kinds = lp_pack.set_kind.tolist()
        if len(scene._set_names) != lp_pack.set_count:
            raise ValueError(f"{len(scene._set_names)} set names for {lp_pack.set_count} line and point sets")
        curves = (kind == LINES) | (kind == POINTS)
        for oid in live[curves[live]].tolist():
            g = int(mesh_of[oid])
            if not 0 <= g < lp_pack.set_count or lp_pack.set_kind[g] != kind[oid]:
                raise ValueError(f"object {oid} refers to {KIND_NAMES[int(kind[oid])]} set {g}, which is not there")
            scene._shape_box[oid] = scene._set_box(g)
        for oid in live[(kind[live] != MESH) & ~curves[live]].tolist():
            code, data, _, local = make_shape(KIND_NAMES[int(kind[oid])], **params[oid])
            stored = shape_data[starts[oid]:starts[oid] + lengths[oid]]
            if stored.shape != data.shape or not np.array_equal(stored, data):
                raise ValueError(f"shape data of object {oid} does not match its parameters")
            scene._shape_data[oid] = data
            scene._shape_box[oid] = local
        if live.size:
            scene._inverse[live] = _affine_inverses(transform[live])
            meshes = np.where(kind[live] == MESH, mesh_of[live], -1)
            scene._bounds[live], scene._reported[live] = scene._placed_bounds(pack, meshes, live, transform[live])
            beyond = _out_of_range(scene._bounds[live])
            if beyond.any():
                raise ValueError(f"object {int(live[np.argmax(beyond)])}: {_OUT_OF_RANGE}")
        annotations = metadata.get("annotations", {})
        if not isinstance(annotations, dict):
            raise ValueError(f"annotations must be a dict, got {type(annotations).__name__}")
        scene._annotations = annotations
        scene._objects_token = str(metadata["objects_token"])
        scene._lp_token = str(metadata.get("lp_token", scene._lp_token))
        return scene
