"""A scene saved to a directory and opened again (``Scene.save``, ``Scene.open``).

The directory is one ``.npy`` per array and a JSON manifest written last
(:mod:`bvh.io.persistence`). Arrays are named by a token of the part they
belong to (the mesh pack, the line and point sets, the object table), so a
save after an edit rewrites only the parts that changed. Opening checks that
the arrays and the manifest agree, and brings saves of older formats up to
date (their trees rebuilt, alpha rectangles made), which the next save writes.
"""

import json
import logging
import uuid
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

from ..builders.config import BuildConfig
from ..io import persistence
from ..walk.nodes import ROW
from ..queries import alpha as alpha_columns
from ..shapes import KIND_NAMES, LINES, MESH, POINTS, make_shape
from . import line_point_pack
from .checks import check_annotations
from .line_sets import LineSets
from .mesh_pack import (ALPHA_ARRAY_NAMES, ARRAY_NAMES, MeshPack, alpha_defaults, append, build_chunk, check_alpha,
                        empty_pack, freeze, mesh_inputs, with_opaque_rects)
from .meshes import MeshRegistry
from .objects import ObjectTable
from .top_level import TopLevel, finite_boxes

_log = logging.getLogger("bvh")

#: The object table's arrays, as saved.
OBJECT_ARRAYS = ("object_kind", "object_mesh", "object_transform", "object_mask", "object_pickable",
                 "shape_start", "shape_data")
#: What placing the objects computes from those, saved since 2026-12 so that
#: opening a million objects does not compute it again.
PLACED_ARRAYS = ("object_inverse", "object_bounds", "object_reported")
#: The top-level tree of the saved objects, when the save could take it.
TOP_LEVEL_ARRAYS = ("top_nodes", "top_order")


class SceneSaving:
    """Saving and opening of :class:`bvh.Scene`, and the annotations a save
    carries; over the scene's parts (``_meshes``, ``_line_sets``,
    ``_objects``), its lock and its save lock."""

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
        given = None if annotations is None else check_annotations(annotations)
        with self._save_lock:
            with self._lock:
                captured = capture(self._meshes, self._line_sets, self._objects,
                                   self._annotations if given is None else given, self._versions.saved_top())
            write(directory, captured)
            if given is not None:
                # Given ones become the scene's; its own are left as they are now: an edit
                # annotated while the save ran (the journal's next number) must not be undone.
                with self._lock:
                    self._annotations = given

    @classmethod
    def open(cls, directory, verify: bool = True) -> "SceneSaving":
        """Open a scene saved with :meth:`save`, its mesh arrays memory-mapped
        read-only, so processes opening the same directory share one copy.

        Raises
        ------
        ValueError
            When the directory is missing, damaged, or of another format version.
        """
        return open_saved(directory, verify, cls._from_arrays)

    @classmethod
    def _from_arrays(cls, metadata: dict, arrays: dict, renew_pack: bool = False) -> "SceneSaving":
        """A scene of a save's manifest and arrays (:func:`bvh.scene.saving.restore`);
        ``renew_pack``: its mesh pack is new, so the next save writes it."""
        scene = cls()
        scene._annotations = restore(scene._meshes, scene._line_sets, scene._objects, metadata, arrays)
        objects = scene._objects
        scene._versions.prebuilt = saved_top_level(arrays, objects.bounds[:objects.count], objects.live())
        if renew_pack:
            scene._meshes.token = uuid.uuid4().hex
        return scene


class Captured(NamedTuple):
    """A scene's state at the moment a save took it: ``arrays`` and their
    ``tokens`` for :func:`bvh.io.persistence.write_arrays`, and the lists
    and tokens the manifest holds."""

    arrays: dict
    tokens: dict
    mesh_names: list
    mesh_keys: dict
    object_names: list
    params: list
    pack_token: str
    objects_token: str
    annotations: dict
    set_names: list
    lp_token: str


def capture(meshes: MeshRegistry, line_sets: LineSets, objects: ObjectTable, annotations: dict,
            top: TopLevel | None) -> Captured:
    """The scene's state for a save (call with the scene's lock held): copies
    of the object arrays; the packs themselves, which are never changed in
    place (a change replaces them); ``top``, the top-level tree of the
    objects as they are, if the scene has it."""
    arrays, tokens = meshes.saved()
    lp_arrays, lp_tokens = line_sets.saved()
    object_arrays, object_names, params = objects.saved()
    arrays.update(lp_arrays)
    arrays.update(object_arrays)
    tokens.update(lp_tokens)
    tokens.update({name: objects.token for name in OBJECT_ARRAYS + PLACED_ARRAYS})
    if top is not None:
        arrays.update(top_nodes=top.nodes, top_order=top.order)
        # The tree of these objects at this token: a refit to the same boxes gives it bit for bit.
        tokens.update({name: objects.token for name in TOP_LEVEL_ARRAYS})
    return Captured(arrays, tokens, list(meshes.names), dict(meshes.keys), object_names, params,
                    meshes.token, objects.token, annotations, list(line_sets.names), line_sets.token)


def write(directory, captured: Captured) -> None:
    """Write a captured state to ``directory`` (without the scene's lock)."""
    names, params = captured.object_names, captured.params
    metadata = {
        "mesh_names": captured.mesh_names,
        "mesh_keys": captured.mesh_keys,
        # Only the objects that have a name, and the shapes' parameters: a
        # million unnamed instances make no million entries of JSON.
        "named_objects": [[k, names[k]] for k in range(len(names)) if names[k] is not None],
        "shape_objects": [[k, dict(params[k])] for k in range(len(params)) if params[k]],
        "pack_token": captured.pack_token,
        "objects_token": captured.objects_token,
        "annotations": captured.annotations,
        "set_names": captured.set_names,
        "lp_token": captured.lp_token,
    }
    persistence.write_arrays(Path(directory), captured.arrays, metadata, captured.tokens)


def open_saved(directory, verify: bool, restore: Callable[[dict, dict, bool], object]):
    """``Scene.open``: the scene ``restore(metadata, arrays, renew_pack)``
    makes of a saved directory's manifest and arrays, brought up to the
    current format first (``renew_pack`` then: the next save writes the
    mesh pack anew).

    Raises
    ------
    ValueError
        When the directory is missing, damaged, or of another format version.
    """
    saved = persistence.read_saved(Path(directory), verify=verify)
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
        if saved.version < persistence.FORMAT_VERSION:
            arrays = _rebuilt_trees(arrays)
            _log.info("scene directory %s was saved in format version %d: its %d meshes' trees were rebuilt "
                      "(the next save writes version %d)", directory, saved.version,
                      arrays["mesh_root"].shape[0], persistence.FORMAT_VERSION)
        # New trees or alpha rows: the next save must write them, not reuse the old files.
        return restore(saved.metadata, arrays, saved.version < persistence.FORMAT_VERSION or converted)
    except (KeyError, IndexError, TypeError, ValueError) as error:
        raise ValueError(f"scene directory {directory} is damaged: {error}") from None


def restore(meshes: MeshRegistry, line_sets: LineSets, objects: ObjectTable, metadata: dict, arrays: dict) -> dict:
    """Fill a new scene's parts from a save's ``metadata`` and ``arrays``;
    returns the save's annotations.

    Raises
    ------
    ValueError, KeyError, IndexError, TypeError
        Where the arrays and the manifest disagree, saying which.
    """
    missing = [name for name in ARRAY_NAMES + OBJECT_ARRAYS if name not in arrays]
    if missing:
        raise ValueError(f"array {missing[0]!r} is missing")
    pack = freeze(MeshPack(**{name: np.asarray(arrays[name]) for name in ARRAY_NAMES}))
    check_alpha(pack)
    token = str(metadata["pack_token"])
    mesh_names = list(metadata["mesh_names"])
    meshes.restore(pack, mesh_names, {str(k): int(m) for k, m in metadata["mesh_keys"].items()}, token)
    if len(mesh_names) != pack.mesh_count:
        raise ValueError(f"{len(mesh_names)} mesh names for {pack.mesh_count} meshes")
    kind = np.array(arrays["object_kind"], np.int32)
    n = kind.shape[0]
    names, params = _object_names_and_params(metadata, n)
    mesh_of = np.array(arrays["object_mesh"], np.int32)
    objects.restore(kind, mesh_of, np.array(arrays["object_transform"], np.float64),
                    np.array(arrays["object_mask"], np.uint32), np.array(arrays["object_pickable"], bool), names,
                    params)
    starts = np.asarray(arrays["shape_start"], np.int64)
    shape_data = np.asarray(arrays["shape_data"], np.float64)
    live = objects.live()
    on_mesh = live[kind[live] == MESH]
    outside = (mesh_of[on_mesh] < 0) | (mesh_of[on_mesh] >= pack.mesh_count)
    if outside.any():
        oid = int(on_mesh[np.argmax(outside)])
        raise ValueError(f"object {oid} refers to mesh {mesh_of[oid]}, which is not there")
    lp_pack = line_point_pack.from_saved(arrays)
    line_sets.restore(lp_pack, list(metadata.get("set_names", [])), str(metadata.get("lp_token", line_sets.token)))
    curves = (kind == LINES) | (kind == POINTS)
    for oid in live[curves[live]].tolist():
        g = int(mesh_of[oid])
        if not 0 <= g < lp_pack.set_count or lp_pack.set_kind[g] != kind[oid]:
            raise ValueError(f"object {oid} refers to {KIND_NAMES[int(kind[oid])]} set {g}, which is not there")
        objects.shape_box[oid] = line_sets.box(g)
    for oid in live[(kind[live] != MESH) & ~curves[live]].tolist():
        _, data, _, local = make_shape(KIND_NAMES[int(kind[oid])], **params[oid])
        stored = shape_data[starts[oid]:starts[oid] + data.shape[0]]
        if stored.shape != data.shape or not np.array_equal(stored, data):
            raise ValueError(f"shape data of object {oid} does not match its parameters")
        objects.shape_data[oid] = data
        objects.shape_box[oid] = local
    placed = None
    if all(name in arrays for name in PLACED_ARRAYS):
        placed = tuple(np.asarray(arrays[name]) for name in PLACED_ARRAYS)
        if any(array.shape != shape for array, shape in zip(placed, ((n, 3, 4), (n, 2, 3), (n, 2, 3)))):
            raise ValueError(f"the placed objects' arrays do not have {n} rows")
    objects.place_restored(pack, placed)
    annotations = metadata.get("annotations", {})
    if not isinstance(annotations, dict):
        raise ValueError(f"annotations must be a dict, got {type(annotations).__name__}")
    objects.token = str(metadata["objects_token"])
    return annotations


def saved_top_level(arrays: dict, bounds: np.ndarray, live: np.ndarray) -> TopLevel | None:
    """The saved top-level tree of objects whose world boxes are ``bounds
    (O, 2, 3)``, when the save has one and it is theirs: it holds each of
    ``live``'s objects with a finite box once, and refitting all of it to
    ``bounds`` gives it bit for bit. None otherwise (the scene builds one)."""
    if not all(name in arrays for name in TOP_LEVEL_ARRAYS):
        return None
    nodes, order = np.asarray(arrays["top_nodes"]), np.asarray(arrays["top_order"])
    finite, _ = finite_boxes(bounds, live)
    try:
        if nodes.dtype != np.float32 or nodes.ndim != 2 or nodes.shape[1] != ROW or order.dtype != np.int32 \
                or not np.array_equal(np.sort(order), finite):
            raise ValueError("its objects are not the scene's")
        top = TopLevel(nodes, order, bounds.shape[0])
        if finite.size and not top.holds(finite):
            raise ValueError("its leaves miss objects")
        if not top.fits(bounds, finite):
            raise ValueError("its boxes are not the objects' boxes")
    except (ValueError, IndexError) as error:
        _log.warning("the saved top-level tree was not used (%s): it is built anew", error)
        return None
    return top


def _object_names_and_params(metadata: dict, n: int) -> tuple[list, list]:
    """The ``n`` objects' names and shape parameters from a save's manifest:
    listed for every object (saves before 2026-12), or for those that have
    them."""
    if "object_names" in metadata:
        names = list(metadata["object_names"])
        params = [dict(p) for p in metadata["shape_params"]]
        if not len(names) == len(params) == n:
            raise ValueError(f"the object table has {n} rows but {len(names)} names")
        return names, params
    names, params = [None] * n, [{}] * n
    for column, entries, convert in ((names, metadata["named_objects"], str),
                                     (params, metadata["shape_objects"], dict)):
        for oid, value in entries:
            if not isinstance(oid, int) or not 0 <= oid < n:
                raise ValueError(f"the manifest names object {oid!r} of {n}")
            column[oid] = convert(value)
    return names, params


def _rebuilt_trees(arrays: dict) -> dict:
    """``arrays`` of a format-1 save (binary trees) with the mesh pack built
    anew from the meshes' vertices and faces, as format 2 holds it."""
    saved = MeshPack(**{name: np.asarray(arrays[name]) for name in ARRAY_NAMES if name != "mesh_cost"},
                     mesh_cost=np.zeros(arrays["mesh_root"].shape[0]))
    chunks = [build_chunk(config=BuildConfig(), **mesh_inputs(saved, mesh)) for mesh in range(saved.mesh_count)]
    pack = append(empty_pack(), chunks)
    return {**arrays, **{name: getattr(pack, name) for name in ARRAY_NAMES}}
