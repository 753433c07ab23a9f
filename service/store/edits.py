"""Edits as journal records: each kind made by a route, applied by :func:`apply`.

The same :func:`apply` runs when an edit is made, when a scene is opened
(replaying the journal past its checkpoint) and when another worker's edit
is followed, so the three cannot drift apart. Every kind checks everything
before it changes anything: a refused record leaves the scene as it was.

Kinds and their contents:

``objects``
    ``moved`` (K,) int64 object ids and ``transforms`` (K, 4, 4) float64 or
    (K, 3, 4) float32 arrays; ``changes``: a list of ``{"id", "pickable"?,
    "mask"?, "name"?}``; ``order``: every id in the client's order, for messages.
``add``
    ``objects``: a list of ``{"mesh": id}`` or ``{"shape": kind, "params": {...}}``
    with ``transform`` (4×4 rows or null), ``name``, ``mask``, ``pickable``;
    ``ids``: the ids they get (checked on replay).
``remove``
    ``ids``: the objects to remove.
``vertices``
    ``mesh``: a mesh id; ``vertices`` (V, 3) array, the same count as before.
"""

from dataclasses import dataclass

import numpy as np

import bvh

from bvh.shapes import MESH

from .journal import Record

OBJECTS = "objects"
ADD = "add"
REMOVE = "remove"
VERTICES = "vertices"
#: The kind of a journal file's first record, whose seq is the checkpoint the file continues.
BASE = "base"


@dataclass(frozen=True)
class Change:
    """What an applied record changed, for the object table and the change event.

    Attributes
    ----------
    event : str
        ``moved``, ``changed``, ``added``, ``removed`` or ``vertices``.
    objects : list of int
        The objects whose entries changed (for ``removed``: the removed ones).
    mesh : int or None
        For ``vertices``: the mesh.
    """

    event: str
    objects: list
    mesh: int | None = None


def _check_ids(scene: bvh.Scene, ids, what: str) -> list[int]:
    seen = set()
    checked = []
    for index, oid in enumerate(ids):
        if oid in seen:
            raise ValueError(f"{what}[{index}]: object {oid} appears twice")
        seen.add(oid)
        if not scene.has_object(oid):
            raise bvh.UnknownIdError(f"{what}[{index}]: no object {oid} in this scene")
        checked.append(int(oid))
    return checked


def _apply_objects(scene: bvh.Scene, record: Record) -> Change:
    moved = record.arrays.get("moved", np.zeros(0, np.int64))
    changes = record.fields.get("changes", [])
    changed_ids = [entry["id"] for entry in changes]
    # Checked before anything changes, in the order the client sent them:
    # set_transforms refuses a bad matrix before it moves anything, and the
    # other fields cannot be refused.
    # Moves alone are checked by set_transforms, which names the entry; an
    # edit of one object is refused as the single-object routes always were.
    order = record.fields.get("order") or moved.tolist() + changed_ids
    if len(order) == 1 or changed_ids:
        for index, oid in enumerate(order):
            if not scene.has_object(oid):
                where = "" if len(order) == 1 else f"entry {index}: "
                raise bvh.UnknownIdError(f"{where}no object {oid} in this scene")
    with scene.batch(answering=False):
        if moved.shape[0]:
            scene.set_transforms(moved, record.arrays["transforms"])
        for entry in changes:
            oid = entry["id"]
            if "pickable" in entry:
                scene.set_pickable(oid, entry["pickable"])
            if "mask" in entry:
                scene.set_mask(oid, entry["mask"])
            if "name" in entry:
                scene.set_name(oid, entry["name"])
    touched = list(dict.fromkeys(moved.tolist() + changed_ids))
    return Change("changed" if changes else "moved", touched)


def _apply_add(scene: bvh.Scene, record: Record) -> Change:
    expected = record.fields["ids"]
    with scene.batch(answering=False):
        added = []
        for entry in record.fields["objects"]:
            transform = None if entry.get("transform") is None else np.asarray(entry["transform"], np.float64)
            common = dict(transform=transform, name=entry.get("name"), mask=entry.get("mask", 0xFFFFFFFF),
                          pickable=entry.get("pickable", True))
            if "mesh" in entry:
                added.append(scene.add_instance(entry["mesh"], **common))
            else:
                added.append(scene.add_shape(entry["shape"], **common, **entry.get("params", {})))
    if expected is not None and added != expected:
        raise ValueError(f"the journal's added objects got ids {added}, not {expected}")
    return Change("added", added)


def _apply_remove(scene: bvh.Scene, record: Record) -> Change:
    ids = record.fields["ids"]
    with scene.batch(answering=False):
        checked = _check_ids(scene, ids, "ids")
        for oid in checked:
            scene.remove(oid)
    return Change("removed", checked)


def _apply_vertices(scene: bvh.Scene, record: Record) -> Change:
    mesh = record.fields["mesh"]
    scene.update_mesh(mesh, record.arrays["vertices"])
    rows = scene.object_rows()
    return Change("vertices", rows.ids[(rows.kind == MESH) & (rows.mesh == mesh)].tolist(), mesh)


_APPLY = {OBJECTS: _apply_objects, ADD: _apply_add, REMOVE: _apply_remove, VERTICES: _apply_vertices}


def apply(scene: bvh.Scene, record: Record) -> Change:
    """Apply one record to ``scene`` as one change for queries.

    Raises
    ------
    bvh.UnknownIdError, ValueError
        The record does not fit the scene; nothing has changed.
    """
    try:
        applier = _APPLY[record.kind]
    except KeyError:
        raise ValueError(f"unknown journal record kind {record.kind!r}") from None
    return applier(scene, record)


def folded(records: list[Record]) -> list[Record]:
    """``records`` with each run of consecutive ``objects`` records merged into one
    (the last transform and the last of each field per object win), for a
    replay: applying the merged record leaves the scene as applying the run
    one by one would, at the cost of one edit instead of thousands. The
    merged record keeps the ``seq`` of the last of its run."""
    out: list[Record] = []
    run: list[Record] = []

    def flush():
        if len(run) == 1:
            out.append(run[0])
        elif run:
            moved, transforms = _last_moves(run)
            fields: dict[int, dict] = {}
            for record in run:
                for entry in record.fields.get("changes", []):
                    fields.setdefault(entry["id"], {}).update({k: v for k, v in entry.items() if k != "id"})
            merged = objects_record(moved, transforms, [{"id": oid, **values} for oid, values in fields.items()])
            merged.seq = run[-1].seq
            out.append(merged)
        run.clear()

    for record in records:
        if record.kind == OBJECTS:
            run.append(record)
        else:
            flush()
            out.append(record)
    flush()
    return out


def _last_moves(run: list[Record]) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, transforms)``: each object moved in ``run``, in the order first
    moved, with its last transform as a (4, 4) float64 matrix (a record's rows
    are (4, 4) or (3, 4), as set_transforms reads them). In numpy: a crash
    during a drag leaves thousands of records to fold before ``/ready``."""
    ids, matrices = [np.zeros(0, np.int64)], [np.zeros((0, 4, 4))]
    for record in run:
        moved = record.arrays.get("moved")
        if moved is None or not len(moved):
            continue
        rows = np.asarray(record.arrays["transforms"], np.float64)
        matrix = np.tile(np.eye(4), (len(moved), 1, 1))
        matrix[:, :rows.shape[1]] = rows
        ids.append(np.asarray(moved, np.int64))
        matrices.append(matrix)
    ids, matrices = np.concatenate(ids), np.concatenate(matrices)
    unique, first = np.unique(ids, return_index=True)
    _, from_end = np.unique(ids[::-1], return_index=True)
    order = np.argsort(first)
    return unique[order], matrices[len(ids) - 1 - from_end[order]]


def objects_record(moved, transforms, changes: list[dict], order: list[int] | None = None) -> Record:
    """An ``objects`` record (``seq`` is set when it is appended)."""
    fields = {"changes": changes}
    if order is not None:
        fields["order"] = order
    return Record(seq=0, kind=OBJECTS, fields=fields,
                  arrays={"moved": np.asarray(moved, np.int64), "transforms": transforms})


def add_record(objects: list[dict], ids: list[int] | None = None) -> Record:
    return Record(seq=0, kind=ADD, fields={"objects": objects, "ids": ids})


def remove_record(ids: list[int]) -> Record:
    return Record(seq=0, kind=REMOVE, fields={"ids": ids})


def vertices_record(mesh: int, vertices: np.ndarray) -> Record:
    return Record(seq=0, kind=VERTICES, fields={"mesh": mesh}, arrays={"vertices": vertices})
