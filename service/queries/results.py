"""What the routes answer with, in the forms more than one kind of query shares: scenes and
objects as JSON, and query results as packed binary records (:func:`packed`). Each kind of
answer is made in its query's module (``picking``, ``proximity``, ``selection``)."""

import numpy as np

import bvh


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


def scene_json(stored, inline: int) -> dict:
    """A ``service.store.StoredScene`` with its first ``inline`` (at least 1) objects by id (``SceneOut``)."""
    view = stored.view
    page = object_page_json(view, None, inline)
    return {**_scene_head(stored), "objects": page["objects"], "object_count": page["object_count"],
            "objects_next_after": page["next_after"], "triangles": view.triangles, "bounds": bounds_json(view.bounds),
            "build_ms": stored.build_ms}


def object_page_json(view, after: int | None, limit: int) -> dict:
    """A page of the object table of ``view`` (``service.store.scenes.SceneView``) as ``ObjectPage``:
    the first ``limit`` (at least 1) live objects above ``after``, in id order, as of ``view.version``."""
    objects = view.objects
    ids, next_after = objects.page(after, limit)
    return {"objects": objects.json(ids), "next_after": next_after, "object_count": len(objects),
            "version": view.version}


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
