"""Journaled edits from request bodies, shared by the HTTP routes and the live channel.

Each function checks the body, turns it into a journal record
(:mod:`service.store.edits`), has the store apply and journal it
(:meth:`SceneStore.record`, which returns once the edit is durable), and
answers as the route does.
"""

import numpy as np
from pydantic import TypeAdapter, ValidationError

from ..store import edits
from ..api.bodies import parse_json
from ..api.errors import ClientError, client_errors, validation_error
from ..api.idempotency import once
from ..api.schemas import ObjectBatch
from .results import object_json
from ..store.idempotency import KeyedWrite, RequestKey
from ..store.store import SceneNotFound, SceneStore

OBJECT_BATCH = TypeAdapter(ObjectBatch)
NOT_A_LIST = 'a batch is a JSON list of entries {"id", "transform"?, "pickable"?, "mask"?, "name"?}'

#: One record of a binary batch: int32 object id, then a 3×4 float32 matrix (the
#: affine transform's top three rows, row-major), little-endian, no padding.
BINARY_MOVE = np.dtype([("id", "<i4"), ("rows", "<f4", (3, 4))])

BINARY_BATCH = (f"Records of {BINARY_MOVE.itemsize} bytes, one per object: int32 object id, then 12 float32, "
                "the top three rows of its new 4×4 object-to-world transform, row-major; little-endian, "
                "no header or padding.")


BINARY_VERTICES = ("V×3 little-endian float32: every vertex's new position, in the mesh's own coordinates "
                   "and its vertex order, as many as the mesh has.")


def binary_vertices(body: bytes) -> np.ndarray:
    """(V, 3) float32 vertices of a binary body (:data:`BINARY_VERTICES`)."""
    if not body or len(body) % 12:
        raise ClientError(422, f"binary vertices are 12 bytes each (three float32); got {len(body)} bytes")
    vertices = np.frombuffer(body, "<f4").reshape(-1, 3)
    finite = np.isfinite(vertices).all(axis=1)
    if not finite.all():
        raise ClientError(422, f"vertex {int(np.flatnonzero(~finite)[0])} has a NaN or infinite coordinate")
    return vertices


def _keyed(key: RequestKey | None, status: int, answer=None) -> KeyedWrite | None:
    """What the store records with a keyed edit: its status and how its answer is made
    (``answer(change, view)``: the body, as the caller makes it after)."""
    return None if key is None else KeyedWrite(key, status, answer)


async def _recorded(store: SceneStore, scene_id: str, record, keyed: KeyedWrite | None = None):
    """``store.record_soon`` with the library's refusals as 422/404 and an unknown scene as 404;
    a repeat of a keyed edit raises its first answer (``service.api.idempotency.once``)."""
    try:
        with client_errors():
            return await once(store.record_soon(scene_id, record, keyed))
    except SceneNotFound as error:
        raise ClientError(404, str(error.args[0])) from None


def batch_record(entries: list) -> tuple[edits.Record, list[int]]:
    """The ``objects`` record of validated batch entries (``ObjectBatchUpdate``), and the ids in body order."""
    ids = [entry.id for entry in entries]
    if len(set(ids)) != len(ids):
        seen = set()
        for index, oid in enumerate(ids):
            if oid in seen:
                raise ClientError(422, f"body[{index}]: object {oid} appears twice in the batch")
            seen.add(oid)
    moved = [entry for entry in entries if "transform" in entry.model_fields_set]
    transforms = np.array([entry.transform for entry in moved], np.float64).reshape(-1, 4, 4)
    changes = []
    for entry in entries:
        fields = {name: getattr(entry, name) for name in ("pickable", "mask", "name")
                  if name in entry.model_fields_set}
        if fields:
            changes.append({"id": entry.id, **fields})
    order = ids if changes and moved else None
    return edits.objects_record([entry.id for entry in moved], transforms, changes, order), ids


def _answer(view, change, ids: list[int] | None) -> dict:
    objects = None
    if ids is not None:
        objects = view.objects.json(ids)
    return {"version": view.version, "count": len(change.objects), "objects": objects}


async def patch_objects(store: SceneStore, scene_id: str, entries: list, key: RequestKey | None = None) -> dict:
    """Apply a JSON batch (a parsed list of dicts, or the raw body as bytes), all or nothing.
    ``key``: its idempotency key (a repeat raises ``ReplayedAnswer``), as for every function here.

    Returns
    -------
    dict
        The ``ObjectBatchResult`` of the route.

    Raises
    ------
    ClientError
    """
    if isinstance(entries, (bytes, bytearray)):
        if entries.lstrip()[:1] not in (b"[", b""):
            raise ClientError(422, NOT_A_LIST)
        parsed = parse_json(OBJECT_BATCH, entries)
    elif not isinstance(entries, list):
        raise ClientError(422, NOT_A_LIST)
    else:
        try:
            parsed = OBJECT_BATCH.validate_python(entries)
        except ValidationError as error:
            raise validation_error(error) from None
    record, ids = batch_record(parsed)
    _, change, view = await _recorded(store, scene_id, record,
                                      _keyed(key, 200, lambda change, view: _answer(view, change, ids)))
    return _answer(view, change, ids)


def binary_record(body: bytes) -> edits.Record:
    """The ``objects`` record of a binary batch (:data:`BINARY_BATCH`)."""
    size = BINARY_MOVE.itemsize
    if not body or len(body) % size:
        raise ClientError(422, f"a binary batch is records of {size} bytes (int32 id, 12 float32); "
                               f"got {len(body)} bytes")
    moves = np.frombuffer(body, BINARY_MOVE)
    ids = moves["id"].astype(np.int64)
    rows = moves["rows"]
    bad = np.flatnonzero(ids < 0)
    if bad.size:
        raise ClientError(422, f"record {bad[0]}: object id {ids[bad[0]]} is negative")
    finite = np.isfinite(rows).all(axis=(1, 2))
    if not finite.all():
        index = int(np.flatnonzero(~finite)[0])
        raise ClientError(422, f"record {index} (object {ids[index]}): the transform has a NaN or infinite entry")
    return edits.objects_record(ids, rows, [])


async def move_objects_binary(store: SceneStore, scene_id: str, body: bytes, key: RequestKey | None = None) -> dict:
    """Apply a binary batch of moves, all or nothing; answers without the objects."""
    record = binary_record(body)
    _, change, view = await _recorded(store, scene_id, record,
                                      _keyed(key, 200, lambda change, view: _answer(view, change, None)))
    return _answer(view, change, None)


async def single_update(store: SceneStore, scene_id: str, object_id: int, body,
                        key: RequestKey | None = None) -> dict:
    """``PATCH /scenes/{id}/objects/{oid}``: the object as it is after the edit."""
    given = body.model_fields_set
    transform = [body.transform] if "transform" in given else []
    fields = {name: getattr(body, name) for name in ("pickable", "mask", "name") if name in given}
    record = edits.objects_record([object_id] * len(transform), np.array(transform, np.float64).reshape(-1, 4, 4),
                                  [{"id": object_id, **fields}] if fields else [])
    _, _, view = await _recorded(store, scene_id, record,
                                 _keyed(key, 200, lambda change, view: object_json(view.objects[object_id])))
    return object_json(view.objects[object_id])


async def remove_object(store: SceneStore, scene_id: str, object_id: int, key: RequestKey | None = None) -> None:
    await _recorded(store, scene_id, edits.remove_record([object_id]), _keyed(key, 204))


async def add_objects(store: SceneStore, scene_id: str, objects: list[dict],
                      key: RequestKey | None = None) -> list[dict]:
    """Add instances of existing meshes and shapes (``service.store.edits`` ``add`` entries);
    the route answers ``{"objects": <these>}``, which is what a keyed one records."""
    _, change, view = await _recorded(
        store, scene_id, edits.add_record(objects),
        _keyed(key, 201, lambda change, view: {"objects": view.objects.json(change.objects)}))
    return view.objects.json(change.objects)


def _vertices_answer(mesh_id: int, count: int):
    def answer(change, view) -> dict:
        return {"version": view.version, "mesh": mesh_id, "vertices": count, "objects": list(change.objects)}
    return answer


async def replace_vertices(store: SceneStore, scene_id: str, mesh_id: int, vertices: np.ndarray,
                           key: RequestKey | None = None) -> dict:
    """``PUT /scenes/{id}/meshes/{mesh}/vertices``."""
    answer = _vertices_answer(mesh_id, int(vertices.shape[0]))
    _, change, view = await _recorded(store, scene_id, edits.vertices_record(mesh_id, vertices),
                                      _keyed(key, 200, answer))
    return answer(change, view)
