"""Scenes and objects as the JSON the routes answer with."""

import numpy as np

import bvh

from ..store.store import StoredScene


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


def scene_json(stored: StoredScene) -> dict:
    view = stored.view
    return {
        "id": stored.id,
        "name": stored.name,
        "created": stored.created,
        "objects": [object_json(info) for info in view.objects.values()],
        "triangles": view.triangles,
        "bounds": bounds_json(view.bounds),
        "build_ms": stored.build_ms,
    }


def scene_summary_json(stored: StoredScene) -> dict:
    view = stored.view
    return {
        "id": stored.id,
        "name": stored.name,
        "created": stored.created,
        "object_count": len(view.objects),
        "triangles": view.triangles,
        "bounds": bounds_json(view.bounds),
    }
