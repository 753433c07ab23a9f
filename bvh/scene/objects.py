"""The scene's objects as one columnar table: each object a row of arrays
(kind, mesh or set, transform and its inverse, mask, pickability, world
boxes), its name and shape parameters beside them.

An object places a mesh, a line or point set, or an analytic shape in the
world with an affine transform. Its world box is what the top level is built
over: the box of its mesh's cover boxes (or its shape's box) under the
transform (:func:`bvh.builders.placement.transformed_boxes`), padded as
float32 nodes need; the box reported to callers is the exact one where the
transform allows (:func:`reported_bounds`).
"""

import uuid
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..builders.placement import place_moves, transformed_boxes
from ..shapes import KIND_NAMES, MESH, REMOVED
from ..validation import MAX_MESH_EXTENT
from .checks import (MAX_CONDITION, EntryError, InstanceArrays, UnknownIdError, check_mesh_range, check_transform,
                     is_index)
from .mesh_pack import MeshPack
from .meshes import MeshRegistry
from .recycling import frozen

#: Moves of up to this many objects try one compiled call first (an editor's drag; see
#: ``placement.place_moves``): numpy's fixed cost per call outweighs their arithmetic.
FAST_MOVES = 256

OUT_OF_RANGE = (f"transform places the object beyond {MAX_MESH_EXTENT:g} from the origin, "
                "more than float32 bounds can hold")


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


class ObjectTable:
    """Every object of a scene, removed ones included (ids are never reused).

    Rows ``[0, count)`` of the arrays are objects, the rest capacity.
    Every method runs with the scene's lock held.

    Attributes
    ----------
    kind : (C,) int32
        ``MESH``, ``LINES``, ``POINTS``, a shape's code, or ``REMOVED``.
    mesh_of : (C,) int32
        A mesh object's mesh, a line or point object's set; -1 for shapes.
    transform, inverse : (C, 4, 4), (C, 3, 4) float64
        Object to world, world to object.
    mask : (C,) uint32
    pickable : (C,) bool
    bounds, reported : (C, 2, 3) float64
        World boxes as the top level uses them, and as :class:`ObjectInfo`
        reports them.
    names, params, shape_data : lists of ``count``
        Each object's name, its shape's parameters (a dict), its shape's
        data (see :mod:`bvh.shapes`; None for meshes, sets and removed objects).
    shape_box : dict
        Object-space box ``(2, 3)`` of each live shape, line or point object.
    token : str or None
        Names the saved object arrays; None once they changed since (the
        next save draws one).
    """

    def __init__(self, meshes: MeshRegistry):
        self._meshes = meshes
        self.count = 0
        self.live_count = 0
        self.kind = np.full(0, REMOVED, np.int32)
        self.mesh_of = np.zeros(0, np.int32)
        self.transform = np.zeros((0, 4, 4))
        self.inverse = np.zeros((0, 3, 4))
        self.mask = np.zeros(0, np.uint32)
        self.pickable = np.zeros(0, bool)
        self.bounds = np.zeros((0, 2, 3))
        self.reported = np.zeros((0, 2, 3))
        self.names: list[str | None] = []
        self.params: list[dict] = []
        self.shape_data: list[np.ndarray | None] = []
        self.shape_box: dict[int, np.ndarray] = {}
        #: ``shape_table()``'s answer, dropped when a shape is added or removed.
        self._shape_cache: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.token = uuid.uuid4().hex

    # ------------------------------------------------------------- reading
    def check_id(self, object_id) -> int:
        if not is_index(object_id, self.count) or self.kind[object_id] == REMOVED:
            raise UnknownIdError(f"no object {object_id!r} in this scene")
        return int(object_id)

    def live(self) -> np.ndarray:
        """(L,) int64: the live objects' ids, ascending."""
        return np.flatnonzero(self.kind[:self.count] != REMOVED)

    def info(self, oid: int, counts: np.ndarray) -> ObjectInfo:
        """Object ``oid`` as an :class:`ObjectInfo`; ``counts`` are the meshes' triangle counts."""
        kind = int(self.kind[oid])
        mesh = int(self.mesh_of[oid]) if kind == MESH else None
        return ObjectInfo(id=oid, name=self.names[oid], kind=KIND_NAMES[kind], mesh=mesh,
                          transform=self.transform[oid].copy(), bounds=self.reported[oid].copy(),
                          mask=int(self.mask[oid]), pickable=bool(self.pickable[oid]),
                          triangles=int(counts[mesh]) if mesh is not None else 0, params=dict(self.params[oid]))

    def rows(self, counts: np.ndarray) -> ObjectRows:
        """The live objects as arrays (copies); ``counts`` as for :meth:`info`."""
        live = self.live()
        kind = self.kind[live]
        mesh = self.mesh_of[live]
        triangles = np.where(kind == MESH, counts[np.where(kind == MESH, mesh, 0)] if counts.size else 0, 0)
        return ObjectRows(ids=live, kind=kind, mesh=mesh, transform=self.transform[live],
                          bounds=self.reported[live], mask=self.mask[live], pickable=self.pickable[live],
                          triangles=triangles, names=[self.names[i] for i in live.tolist()],
                          params=[self.params[i] for i in live.tolist()])

    def triangle_count(self, counts: np.ndarray) -> int:
        """Triangles over all live mesh objects, counting each instance."""
        on_mesh = self.kind[:self.count] == MESH
        return int(counts[self.mesh_of[:self.count][on_mesh]].sum())

    def world_box(self) -> np.ndarray:
        """``Scene.bounds``: the box of the live objects' reported boxes."""
        boxes = self.reported[:self.count][self.kind[:self.count] != REMOVED]
        if boxes.shape[0] == 0:
            return np.full((2, 3), np.nan)
        return np.stack([boxes[:, 0].min(axis=0), boxes[:, 1].max(axis=0)])

    def shape_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every shape's parameters in one array: ``(start (O,) int64, length
        (O,) int64, data (S,) float64)``, zero lengths for meshes and removed
        objects. Cached: only adding or removing a shape changes the data;
        objects added after the cache was made are meshes, appended here
        with zero lengths."""
        if self._shape_cache is None:
            # Every live object with data is in shape_box: a loop over the shapes, not over the objects.
            holders = sorted(oid for oid in self.shape_box if self.shape_data[oid] is not None)
            lengths = np.zeros(self.count, np.int64)
            lengths[holders] = [self.shape_data[oid].shape[0] for oid in holders]
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if lengths.size else lengths
            parts = [self.shape_data[oid] for oid in holders]
            data = np.concatenate(parts).astype(np.float64) if parts else np.zeros(0)
            self._shape_cache = (frozen(starts), frozen(lengths), frozen(data))
        starts, lengths, data = self._shape_cache
        if starts.shape[0] < self.count:
            extra = self.count - starts.shape[0]
            starts = frozen(np.concatenate([starts, np.full(extra, data.shape[0], np.int64)]))
            lengths = frozen(np.concatenate([lengths, np.zeros(extra, np.int64)]))
            self._shape_cache = (starts, lengths, data)
        return self._shape_cache

    # ---------------------------------------------------------- placement
    def placed_bounds(self, pack: MeshPack, meshes: np.ndarray, objects, transforms: np.ndarray,
                      shape_boxes=None) -> tuple[np.ndarray, np.ndarray]:
        """``(cover, reported)`` (K, 2, 3) world boxes of objects: the padded
        ones the top level uses and the exact ones :class:`ObjectInfo` reports.

        Parameters
        ----------
        pack : MeshPack
        meshes : (K,) int
            Each object's mesh, or -1 for a shape.
        objects : (K,) int or None
            The objects, whose shapes' boxes are kept; None with ``shape_boxes``.
        transforms : (K, 4, 4) float64
        shape_boxes : (K, 2, 3) float64, optional
            Object-space boxes of shapes not placed yet (rows of meshes ignored).

        Notes
        -----
        Vectorised over objects; a world box out of float32 range is
        returned as it is (see :func:`out_of_range`), the caller refuses it.
        """
        meshes = np.asarray(meshes, np.int64)
        count = meshes.shape[0]
        on_mesh = np.flatnonzero(meshes >= 0)
        if on_mesh.size == count and count:
            # Instances only (a placement of many): no rows to gather or scatter.
            return self.placed_instances(pack, meshes, transforms)
        cover = np.empty((count, 2, 3))
        reported = np.empty((count, 2, 3))
        if on_mesh.size:
            cover[on_mesh], reported[on_mesh] = self.placed_instances(pack, meshes[on_mesh], transforms[on_mesh])
        shapes = np.flatnonzero(meshes < 0)
        if shapes.size:
            local = shape_boxes[shapes] if shape_boxes is not None \
                else np.stack([self.shape_box[int(oid)] for oid in np.asarray(objects)[shapes]])
            placed = transforms[shapes]
            cover[shapes] = transformed_boxes(placed, local.reshape(-1, 1, 6))
            reported[shapes] = reported_bounds(placed, local, cover[shapes])
        return cover, reported

    def placed_instances(self, pack: MeshPack, meshes: np.ndarray, transforms: np.ndarray) -> tuple:
        """:meth:`placed_bounds` of instances of meshes ``meshes (K,)`` (ids
        of ``pack``) under ``transforms (K, 4, 4)``: each mesh's boxes are
        read where they are, not gathered per object."""
        node_boxes, exact_boxes = self._meshes.placement_boxes(pack)
        cover = transformed_boxes(transforms, node_boxes, meshes)
        return cover, reported_bounds(transforms, exact_boxes, cover, meshes)

    def placed_one(self, pack: MeshPack, mesh: int, oid, transform: np.ndarray, shape_box=None):
        """:meth:`placed_bounds` of one object, ``(cover, reported)`` (2, 3);
        ValueError when it leaves the float32 range."""
        cover, reported = self.placed_bounds(pack, np.array([mesh]), None if oid is None else np.array([oid]),
                                             transform[None], None if shape_box is None else shape_box[None])
        if out_of_range(cover)[0]:
            raise ValueError(OUT_OF_RANGE)
        return cover[0], reported[0]

    def mesh_or_shape(self, ids: np.ndarray) -> np.ndarray:
        """(K,) each of objects ``ids``' mesh, -1 for a shape, line or point object."""
        return np.where(self.kind[ids] == MESH, self.mesh_of[ids], -1)

    # ------------------------------------------------------------ editing
    def add(self, kind: int, mesh_of: int, transform, mask: int, pickable: bool, name, shape_data, params,
            bounds, shape_box=None) -> int:
        """A new object; ``bounds`` is the ``(cover, reported)`` pair of
        :meth:`placed_one`, ``shape_box`` a shape's, line or point set's box."""
        oid = self.count
        self._reserve(oid + 1)
        self.kind[oid] = kind
        self.mesh_of[oid] = mesh_of
        self.transform[oid] = transform
        self.inverse[oid] = affine_inverses(transform[None])[0]
        self.mask[oid] = mask
        self.pickable[oid] = pickable
        self.bounds[oid], self.reported[oid] = bounds
        self.names.append(name)
        self.shape_data.append(shape_data)
        self.params.append(params)
        self.count += 1
        self.live_count += 1
        if shape_data is not None:
            self._shape_cache = None
        if shape_box is not None:
            self.shape_box[oid] = shape_box
        return oid

    def add_instances(self, pack: MeshPack, checked: InstanceArrays, inverses: np.ndarray) -> np.ndarray:
        """``Scene.add_instances``: new mesh instances, appended to the
        columns in one go; returns their ids ``(N,) int64``.

        Parameters
        ----------
        pack : MeshPack
            The committed meshes.
        checked : InstanceArrays
            The arguments as :func:`bvh.scene.checks.check_instance_arrays` gives them.
        inverses : (N, 3, 4) float64
            :func:`affine_inverses` of ``checked.transforms``.

        Raises
        ------
        UnknownIdError, ValueError
            For the first mesh id not in the scene, then the first object
            placed beyond float32's range; nothing is added then.
        """
        check_mesh_range(checked.mesh_ids, len(self._meshes.names))
        matrices = checked.transforms
        n = matrices.shape[0]
        meshes = np.full(n, checked.mesh_ids, np.int64) if np.ndim(checked.mesh_ids) == 0 else checked.mesh_ids
        cover, reported = self.placed_instances(pack, meshes, matrices)
        beyond = out_of_range(cover)
        if beyond.any():
            raise EntryError("transforms", int(np.argmax(beyond)), OUT_OF_RANGE)
        first = self.count
        self._reserve(first + n)
        rows = slice(first, first + n)
        self.kind[rows] = MESH
        self.mesh_of[rows] = meshes
        self.transform[rows] = matrices
        self.inverse[rows] = inverses
        self.mask[rows] = checked.masks
        self.pickable[rows] = checked.pickable
        self.bounds[rows] = cover
        self.reported[rows] = reported
        self.names.extend([None] * n if checked.names is None else checked.names)
        self.shape_data.extend([None] * n)
        # A mesh instance's params are an empty dict, never changed: one serves them all.
        self.params.extend([{}] * n)
        self.count += n
        self.live_count += n
        return np.arange(first, first + n, dtype=np.int64)

    def _reserve(self, rows: int) -> None:
        """Room for ``rows`` objects in the columns (doubling, so that adding
        objects one by one costs amortised O(1) each)."""
        if rows <= self.kind.shape[0]:
            return
        capacity = max(16, 2 * self.kind.shape[0], rows)
        count = self.count

        def grown(array, fill):
            out = np.full((capacity,) + array.shape[1:], fill, array.dtype)
            out[:count] = array[:count]
            return out

        self.kind = grown(self.kind, REMOVED)
        self.mesh_of = grown(self.mesh_of, -1)
        self.transform = grown(self.transform, 0.0)
        self.inverse = grown(self.inverse, 0.0)
        self.mask = grown(self.mask, 0)
        self.pickable = grown(self.pickable, False)
        self.bounds = grown(self.bounds, np.nan)
        self.reported = grown(self.reported, np.nan)

    def fast_moves(self, ids: np.ndarray, matrices: np.ndarray) -> tuple | None:
        """``(cover, reported)`` of a few moves placed in one compiled call
        (:func:`bvh.builders.placement.place_moves`), or None when there are
        too many, or any is refused (:meth:`checked_moves` then says why)."""
        if not 0 < ids.shape[0] <= FAST_MOVES:
            return None
        pack = self._meshes.committed()
        node_boxes, exact_boxes = self._meshes.placement_boxes(pack)
        return place_moves(ids, matrices, self.count, self.kind, self.mesh_of, MESH, node_boxes, exact_boxes,
                           MAX_CONDITION, MAX_MESH_EXTENT)

    def checked_moves(self, ids: np.ndarray, matrices: np.ndarray, matrix_problem: np.ndarray) -> tuple:
        """``(cover, reported)`` of moves of objects ``ids (K,)`` to
        ``matrices (K, 4, 4)`` (``matrix_problem (K,)``: which of them
        :func:`bvh.scene.checks.matrix_problems` refuses).

        Raises
        ------
        UnknownIdError, ValueError
            For the first refused entry: an id that is no live object, an id
            given twice, a refused matrix, a box beyond float32's range.
        """
        unknown, repeated = self.refused_ids(ids)
        usable = ~(unknown | repeated | matrix_problem)
        good = np.flatnonzero(usable)
        cover, reported = self.placed_bounds(self._meshes.committed(), self.mesh_or_shape(ids[good]), ids[good],
                                             matrices[good])
        beyond = np.zeros(ids.shape[0], bool)
        beyond[good] = out_of_range(cover)
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
                raise ValueError(f"{where}: {OUT_OF_RANGE}")
            try:
                check_transform(matrices[entry])
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
            raise ValueError(f"{where}: transform is not invertible: its 3x3 part is singular")
        return cover, reported

    def move(self, ids: np.ndarray, matrices: np.ndarray, cover: np.ndarray, reported: np.ndarray) -> None:
        """Give objects ``ids (K,)`` new ``matrices (K, 4, 4)`` and their
        boxes (``(K, 2, 3)`` each, from :meth:`placed_bounds`), checked already."""
        self.transform[ids] = matrices
        self.inverse[ids] = affine_inverses(matrices)
        self.bounds[ids] = cover
        self.reported[ids] = reported

    def follow(self, mesh: int, pack: MeshPack) -> None:
        """New boxes for the instances of mesh ``mesh``, whose vertices moved in ``pack``."""
        instances = np.flatnonzero((self.kind[:self.count] == MESH) & (self.mesh_of[:self.count] == mesh))
        self.bounds[instances], self.reported[instances] = self.placed_bounds(
            pack, self.mesh_of[instances], instances, self.transform[instances])

    def refused_ids(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(unknown, repeated)`` (K,) bool: which of ``ids (K,) int64`` are
        no live object, and which repeat an earlier entry."""
        unknown = (ids < 0) | (ids >= self.count)
        unknown[~unknown] = self.kind[ids[~unknown]] == REMOVED
        known = np.where(unknown, 0, ids)
        repeated = np.zeros(ids.shape[0], bool)
        order = np.argsort(known, kind="stable")
        repeated[order[1:]] = (known[order[1:]] == known[order[:-1]]) & ~unknown[order[1:]]
        return unknown, repeated

    def remove(self, oid: int) -> None:
        self.remove_rows(np.array([oid]))

    def remove_many(self, ids: np.ndarray) -> None:
        """``Scene.remove_many``: remove live objects ``ids (K,) int64``, all or nothing.

        Raises
        ------
        UnknownIdError, ValueError
            For the first entry that is no live object, or repeats an
            earlier one (``"ids[3]: no object 9 in this scene"``); nothing
            is removed then.
        """
        unknown, repeated = self.refused_ids(ids)
        bad = unknown | repeated
        if bad.any():
            entry = int(np.argmax(bad))
            oid = int(ids[entry])
            if unknown[entry]:
                raise UnknownIdError(f"ids[{entry}]: no object {oid} in this scene")
            earlier = int(np.flatnonzero(ids[:entry] == oid)[0])
            raise ValueError(f"ids[{entry}]: object {oid} is given twice (also ids[{earlier}])")
        self.remove_rows(ids)

    def remove_rows(self, ids: np.ndarray) -> None:
        """Remove live objects ``ids (K,)``, distinct, checked already."""
        others = ids[self.kind[ids] != MESH]
        if others.size:
            self._shape_cache = None
            # Shapes, line and point objects: few, each with its own data.
            for oid in others.tolist():
                self.shape_box.pop(oid, None)
                self.shape_data[oid] = None
        self.kind[ids] = REMOVED
        self.live_count -= ids.shape[0]

    # --------------------------------------------------------------- saving
    def saved(self) -> tuple[dict, list, list]:
        """``(arrays, names, params)`` of the table as a save
        writes it (copies; names are replaced, never changed in place, and
        params dicts are never changed after an add), and a new :attr:`token`
        drawn if the arrays changed since it was last drawn."""
        n = self.count
        starts, _, shape_data = self.shape_table()
        if self.token is None:
            self.token = uuid.uuid4().hex
        arrays = dict(object_kind=self.kind[:n].copy(), object_mesh=self.mesh_of[:n].copy(),
                      object_transform=self.transform[:n].copy(), object_mask=self.mask[:n].copy(),
                      object_pickable=self.pickable[:n].copy(), shape_start=starts, shape_data=shape_data,
                      object_inverse=self.inverse[:n].copy(), object_bounds=self.bounds[:n].copy(),
                      object_reported=self.reported[:n].copy())
        return arrays, list(self.names), list(self.params)

    def restore(self, kind, mesh_of, transform, mask, pickable, names: list, params: list) -> None:
        """Make saved columns this table's (a scene being opened); the
        shapes' data and boxes are set next, then :meth:`place_restored`."""
        n = kind.shape[0]
        self.kind, self.mesh_of, self.transform, self.mask, self.pickable = kind, mesh_of, transform, mask, pickable
        self.inverse = np.zeros((n, 3, 4))
        self.bounds = np.full((n, 2, 3), np.nan)
        self.reported = np.full((n, 2, 3), np.nan)
        self.names, self.params, self.shape_data = names, params, [None] * n
        self.count = n
        self.live_count = int((kind != REMOVED).sum())

    def place_restored(self, pack: MeshPack, placed: tuple | None = None) -> None:
        """Inverses and world boxes of every live object of a restored table:
        ``placed``, ``(inverse, bounds, reported)`` as :meth:`saved` wrote
        them (what placing computes from the saved transforms, to the last
        bit; a million objects' inverses take a second to compute), else
        computed."""
        live = self.live()
        if placed is not None:
            self.inverse, self.bounds, self.reported = (np.array(a, np.float64) for a in placed)
        if live.size:
            if placed is None:
                self.inverse[live] = affine_inverses(self.transform[live])
                self.bounds[live], self.reported[live] = self.placed_bounds(pack, self.mesh_or_shape(live), live,
                                                                            self.transform[live])
            beyond = out_of_range(self.bounds[live])
            if beyond.any():
                raise ValueError(f"object {int(live[np.argmax(beyond)])}: {OUT_OF_RANGE}")


def affine_inverses(matrices: np.ndarray) -> np.ndarray:
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


def out_of_range(cover: np.ndarray) -> np.ndarray:
    """(K,) bool: world boxes ``cover (K, 2, 3)`` beyond what float32 nodes hold (or NaN)."""
    return ~(np.abs(cover).max(axis=(1, 2)) < MAX_MESH_EXTENT)


def reported_bounds(transforms: np.ndarray, boxes: np.ndarray, cover: np.ndarray,
                    which: np.ndarray | None = None) -> np.ndarray:
    """(K, 2, 3) world boxes of objects as :class:`ObjectInfo` reports them.

    Parameters
    ----------
    transforms : (K, 4, 4) float64
    boxes : (K, 2, 3) or (U, 2, 3) float64
        The exact object-space boxes (of the mesh's vertices, or the shape's),
        one per object, or per owner with ``which``.
    cover : (K, 2, 3) float64
        The world boxes the top level uses (``transformed_boxes`` of the
        node boxes): padded by float32 steps, so they read ``-2.8e-45``
        where an object starts at 0.
    which : (K,) int, optional
        Whose box each object has (the instances of a mesh share it).

    Notes
    -----
    Each world coordinate of a corner is one product per axis plus the
    translation, in float64, so a transform that maps axes to axes gives the
    transformed extremes exactly. Turned, the box of the turned box is looser
    than ``cover`` (the box of sixteen turned node boxes): each side takes
    the tighter of the two, both bounds of the object.
    """
    exact = transformed_boxes(transforms, boxes.reshape(-1, 1, 6), which)
    np.maximum(exact[:, 0], cover[:, 0], out=exact[:, 0])
    np.minimum(exact[:, 1], cover[:, 1], out=exact[:, 1])
    # Adding 0.0 turns a mirrored -0.0 into 0.0.
    exact += 0.0
    return exact
