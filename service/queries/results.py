"""What the routes answer with, in the forms more than one kind of query shares: scenes and
objects as JSON, and query results as packed binary records (:func:`packed`). Each kind of
answer is made in its query's module (``picking``, ``proximity``, ``selection``)."""

from collections.abc import Iterator
from itertools import islice

import numpy as np
import orjson

import bvh

from ..api.responses import JSON_OPTIONS

#: Objects rendered per piece of :func:`scene_json_pieces` (some 150 KB of JSON).
PIECE_OBJECTS = 512


def bounds_json(bounds: np.ndarray) -> list | None:
    """``[[min], [max]]``, or None for an empty or unbounded box."""
    return bounds.tolist() if np.isfinite(bounds).all() else None


def object_json(info: bvh.ObjectInfo) -> dict:
    return {
        "id": info.id,
        "name": info.name,
        "kind": info.kind,
        "mesh": info.mesh,
        "triangles": info.triangles,
        "transform": info.transform.tolist(),
        "bounds": bounds_json(info.bounds),
        "mask": info.mask,
        "pickable": info.pickable,
        "params": {key: np.asarray(value).tolist() for key, value in info.params.items()},
    }


def scene_json(stored) -> dict:
    """A ``service.store.StoredScene`` with its objects (``SceneOut``)."""
    view = stored.view
    return {**_scene_head(stored), "objects": [object_json(info) for info in view.objects.values()],
            "triangles": view.triangles, "bounds": bounds_json(view.bounds), "build_ms": stored.build_ms}


def scene_json_pieces(stored) -> Iterator[bytes]:
    """:func:`scene_json` rendered a few hundred objects at a time: the same bytes as
    ``orjson.dumps(scene_json(stored))``, in pieces.

    A scene of 300,000 objects answers some 90 MB of JSON, seconds of work:
    in one ``orjson.dumps`` call the interpreter lock is held throughout (and
    the event loop then has one 90 MB write to push); piece by piece, a
    streamed answer's pieces are made on worker threads as the client reads.
    """
    view = stored.view
    yield orjson.dumps(_scene_head(stored))[:-1] + b',"objects":['
    # From the view's rows (``ObjectTable.json``), making and keeping no ObjectInfo per object.
    ids = iter(list(view.objects))
    separator = b""
    while piece := list(islice(ids, PIECE_OBJECTS)):
        yield separator + orjson.dumps(view.objects.json(piece), option=JSON_OPTIONS)[1:-1]
        separator = b","
    tail = {"triangles": view.triangles, "bounds": bounds_json(view.bounds), "build_ms": stored.build_ms}
    yield b"]," + orjson.dumps(tail, option=JSON_OPTIONS)[1:]


def scene_summary_json(stored) -> dict:
    """A ``service.store.StoredScene`` with its counts (``SceneSummary``)."""
    view = stored.view
    return {**_scene_head(stored), "object_count": len(view.objects), "triangles": view.triangles,
            "bounds": bounds_json(view.bounds)}


def _scene_head(stored) -> dict:
    return {"id": stored.id, "name": stored.name, "created": stored.created, "state": stored.state,
            "reason": stored.reason}


def columns(source, names: tuple[str, ...], **given) -> dict:
    """A columnar JSON answer: each of ``names``, in order, from ``given`` when given there, else
    the attribute of ``source`` of its name (numpy arrays, which the response renders as lists)."""
    return {name: given[name] if name in given else getattr(source, name) for name in names}


def packed(layout: np.dtype, source, **columns) -> bytes:
    """Records of ``layout`` (a structured little-endian dtype), one per row: each field from
    ``columns`` when given there, else the attribute of ``source`` of its name."""
    first = columns[layout.names[0]] if layout.names[0] in columns else getattr(source, layout.names[0])
    records = np.empty(len(first), layout)
    for name in layout.names:
        records[name] = columns[name] if name in columns else getattr(source, name)
    return records.tobytes()
