"""An immutable snapshot of a scene: the arrays queries read, as the kernels take them.

Queries run on the snapshot taken when the scene last changed, so a query
sees the scene before or after an edit, never half of one, and never waits
for an edit to finish (:mod:`bvh.scene.versions` decides when a new one is
made).
"""

import numpy as np

from ..queries import alpha as alpha_columns, lines_points
from ..queries.scene_rays import SceneArrays
from ..shapes import LINES, MESH, POINTS, REMOVED
from .mesh_pack import MeshPack
from .recycling import Recycled, frozen
from .top_level import TopLevel


class Snapshot(Recycled):
    """Immutable arrays of the scene at one moment, as the kernels take them.

    Built whole (:meth:`__init__`, which builds the top-level tree over the
    objects' boxes) or derived from the previous snapshot when only
    transforms, masks or pickability changed (:meth:`updated`, which refits
    that tree).

    Attributes
    ----------
    pack, lp_pack : MeshPack, LinePointPack
        The meshes and the line and point sets.
    kind, mesh_of, transform, mask, pickable, bounds
        The object table's columns (``(O,)``, ``(O, 4, 4)``, ``(O, 2, 3)``
        world boxes as the top level uses them).
    inverse : (O, 3, 4) float64
        World-to-object maps, each mesh's centring offset folded in.
    enabled : (O,) bool
        Objects every query but a pick sees (live, pickable, a mask bit set,
        no line or point object); ``pick_enabled`` with those.
    top : TopLevel
        The top-level tree.
    arrays : SceneArrays
        What the kernels take.
    """

    def __init__(self, pack: MeshPack, lp_pack, tight_nodes, kind, mesh_of, transform, inverse, mask, pickable,
                 bounds, shape_start, shape_data, top: TopLevel | None = None):
        self.pack = pack
        self.lp_pack = lp_pack
        self.kind = kind
        self.mesh_of = mesh_of
        self._spares = {}
        self.transform = frozen(transform)
        self.mask = frozen(mask)
        self.pickable = frozen(pickable)
        self.bounds = frozen(bounds)
        # Each shape's parameters (see bvh.shapes), for the exact window test of a selection.
        self.shape_start = shape_start
        self.shape_data = shape_data
        live = kind != REMOVED
        self.live = np.flatnonzero(live)
        # Line and point objects answer only picks (bvh.queries.lines_points): every
        # other query's kernels never see them enabled.
        self.line_points = live & ((kind == LINES) | (kind == POINTS))
        self.has_line_points = bool(self.line_points.any())
        self.pick_enabled = frozen(live & pickable & (mask != 0))
        self.enabled = frozen(self.pick_enabled & ~self.line_points)
        self._lp_arrays = None
        self.inverse = frozen(_folded_inverse(pack, kind, mesh_of, inverse))
        # A tree given (a scene just opened has its saved one) or built.
        self.top = TopLevel.build(bounds, self.live) if top is None else top
        self.traceable = self.top.traceable
        self.interpolates = bool(pack.has_normals.any() or pack.has_uvs.any())
        nodes = pack.nodes
        self.arrays = SceneArrays(
            top_nodes=self.top.nodes.reshape(-1), top_links=self.top.nodes.view(np.int32).reshape(-1),
            top_order=self.top.order, enabled=self.enabled, kind=frozen(kind), mesh_of=frozen(mesh_of),
            inverse=self.inverse, mesh_root=pack.mesh_root, nodes=nodes.reshape(-1),
            links=nodes.view(np.int32).reshape(-1), tris=pack.tris.reshape(-1), face_index=pack.face_index,
            shape_start=frozen(shape_start), shape_data=frozen(shape_data), mesh_scale=pack.mesh_scale)
        self.has_alpha = bool((pack.mesh_alpha_start >= 0).any())
        self.has_blend = bool((pack.alpha_materials[:, alpha_columns.MODE] == alpha_columns.BLEND).any())
        #: The nodes alpha-tested walks read (``bvh.builders.alpha_bounds``), when ``has_alpha``.
        self.tight_nodes = tight_nodes if self.has_alpha else None
        self.alpha_arrays = (self.arrays.mesh_of, pack.face_index, pack.mesh_alpha_start, pack.alpha_faces,
                             pack.alpha_face_material, pack.alpha_materials, pack.alpha_texels)

    def updated(self, table, moved: np.ndarray, flagged: np.ndarray, top: TopLevel | None = None,
                top_moved: np.ndarray | None = None) -> "Snapshot | None":
        """This snapshot with objects ``moved`` given new transforms and
        boxes and objects ``flagged`` new masks or pickability, the top-level
        tree refitted, not rebuilt; None when that cannot be (an object moved
        in or out of the tree).

        Parameters
        ----------
        table : bvh.scene.objects.ObjectTable
            The scene's objects; only rows ``moved`` and ``flagged`` of its
            ``kind``, ``mesh_of``, ``transform``, ``inverse``, ``mask``,
            ``pickable`` and ``bounds`` are read.
        moved, flagged : (M,), (F,) int64
            Live objects, sorted, without repeats.
        top : TopLevel, optional
            A tree built in the background from the boxes of an earlier
            snapshot, to refit and answer from instead of this one's: its
            objects ``top_moved`` (sorted, a superset of ``moved``) moved since.

        Notes
        -----
        Cost: O(M) numpy work on the moved objects' rows, their leaf slots
        and their ancestors, when the arrays this snapshot replaced in its
        parent are no longer read (:mod:`bvh.scene.recycling`); else a copy
        (``memcpy``) of the per-object arrays that changed and of the
        top-level nodes first.
        """
        snap = object.__new__(Snapshot)
        snap.__dict__.update(self.__dict__)
        snap._lp_arrays = None
        snap._spares = {}
        arrays = {}
        if flagged.size:
            kind, mask, pickable = table.kind[flagged], table.mask[flagged], table.pickable[flagged]
            snap.mask = _patched(self.mask, flagged, mask)
            snap.pickable = _patched(self.pickable, flagged, pickable)
            snap.pick_enabled = _patched(self.pick_enabled, flagged, (kind != REMOVED) & pickable & (mask != 0))
            snap.enabled = arrays["enabled"] = _patched(self.enabled, flagged,
                                                        snap.pick_enabled[flagged] & ~self.line_points[flagged])
        if moved.size:
            if not self.top.holds(moved) or not np.isfinite(table.bounds[moved]).all():
                return None
            snap.transform = self._replaced(snap, "transform", moved, table.transform[moved])
            snap.bounds = self._replaced(snap, "bounds", moved, table.bounds[moved])
            snap.inverse = arrays["inverse"] = self._replaced(
                snap, "inverse", moved,
                _folded_inverse(self.pack, table.kind[moved], table.mesh_of[moved], table.inverse[moved]))
        if top is not None:
            snap.top = top.refitted(snap.bounds, top_moved) if top_moved.size else top
        elif moved.size:
            snap.top = self.top.refitted(snap.bounds, moved)
        if snap.top is not self.top:
            nodes = snap.top.nodes
            arrays.update(top_nodes=nodes.reshape(-1), top_links=nodes.view(np.int32).reshape(-1),
                          top_order=snap.top.order)
        snap.arrays = self.arrays._replace(**arrays)
        return snap

    def spare_all(self) -> None:
        """:meth:`Recycled.spare` of the arrays a move writes: this snapshot's
        per-object ones and its top level's."""
        self.spare("transform", "bounds", "inverse")
        self.top.spare("nodes", "cost_terms")

    def with_enabled(self, enabled: np.ndarray) -> SceneArrays:
        if enabled is self.enabled:
            return self.arrays
        return self.arrays._replace(enabled=enabled)

    def alpha(self, alpha_test: bool, alpha_cutoff: float) -> tuple:
        """The alpha-tested leaf tests' tuple for a query (``bvh.queries.alpha.ALPHA_FIELDS``):
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
        """The pick kernel's :class:`bvh.queries.lines_points.LinePointArrays` and the
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
                enabled=self.pick_enabled, walk_kind=frozen(np.where(curves, MESH, kind).astype(np.int32)),
                tree_kind=frozen(tree_kind), tree_of=frozen(tree_of.astype(np.int32)),
                roots=frozen(np.concatenate([pack.mesh_root, lp.set_root]).astype(np.int32)),
                inverse=frozen(inverse), nodes=lp.nodes.reshape(-1), links=lp.nodes.view(np.int32).reshape(-1),
                segments=lp.segments.reshape(-1), segment_index=lp.segment_index, points=lp.points.reshape(-1),
                point_index=lp.point_index, set_of=frozen(np.where(curves, self.mesh_of, -1).astype(np.int32))),
                box)
        return self._lp_arrays


def _patched(array: np.ndarray, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """A read-only copy of ``array`` with ``rows`` set to ``values``."""
    copy = array.copy()
    copy[rows] = values
    return frozen(copy)


def _folded_inverse(pack: MeshPack, kind: np.ndarray, mesh_of: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """(O, 3, 4) copy of the world-to-object maps ``inverse`` with each mesh's
    float32 centring offset folded into the translation: the kernels take
    object-space rays relative to it."""
    folded = inverse.copy()
    on_mesh = kind == MESH
    if on_mesh.all():
        # Instances only (a placement of many): no rows to gather or scatter.
        folded[:, :, 3] -= pack.mesh_offset[mesh_of]
    else:
        meshes = np.flatnonzero(on_mesh)
        folded[meshes, :, 3] -= pack.mesh_offset[mesh_of[meshes]]
    return folded
