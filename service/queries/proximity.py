"""What the proximity queries do (``/scenes/{id}/closest``, ``/sphere-cast``, ``/contains``),
and their answers as the API returns them, built from ``bvh``'s results: columns for JSON,
packed records for the binary form.

Same options as picks: the objects a query searches are chosen by ``mask``,
``objects`` and ``exclude``.
"""

import math

import numpy as np
import orjson

from bvh.hits import SceneClosestPoints

from ..api.errors import client_errors
from ..api.responses import JSON_OPTIONS
from .picking import ALL_BITS, query_window
from .results import columns, packed

#: One binary closest-point record: 44 bytes, little-endian.
CLOSEST_RECORD = np.dtype([("distance", "<f4"), ("object", "<i4"), ("triangle", "<i4"), ("u", "<f4"),
                           ("v", "<f4"), ("point", "<f4", (3,)), ("normal", "<f4", (3,))])
assert CLOSEST_RECORD.itemsize == 44

#: One binary query point: x, y, z as little-endian float32.
POINT_BYTES = 3 * 4

#: The columns of a JSON closest-point answer, in order.
CLOSEST_COLUMNS = ("found", "distance", "object", "mesh", "triangle", "u", "v", "point", "normal")


def closest_columns(nearest: SceneClosestPoints) -> dict:
    """The JSON answer: one list per field, null (or -1) where nothing was found."""
    return columns(nearest, CLOSEST_COLUMNS, found=nearest.object >= 0)


def closest_records(nearest: SceneClosestPoints) -> bytes:
    """The binary answer: N records of :data:`CLOSEST_RECORD`."""
    return packed(CLOSEST_RECORD, nearest)


#: One binary sphere-cast record: 44 bytes, little-endian.
SPHERE_RECORD = np.dtype([("t", "<f4"), ("object", "<i4"), ("triangle", "<i4"), ("u", "<f4"), ("v", "<f4"),
                          ("point", "<f4", (3,)), ("normal", "<f4", (3,))])
assert SPHERE_RECORD.itemsize == 44

#: One binary containment record: 8 bytes, little-endian.
CONTAINS_RECORD = np.dtype([("object", "<i4"), ("signed_distance", "<f4")])

#: The columns of a JSON sphere-cast answer, in order.
SPHERE_COLUMNS = ("hit", "t", "object", "triangle", "u", "v", "point", "normal")


def sphere_columns(hits) -> dict:
    """The JSON sphere-cast answer: one list per field, null (or -1) on a miss."""
    return columns(hits, SPHERE_COLUMNS, hit=hits.object >= 0)


def sphere_records(hits) -> bytes:
    """The binary sphere-cast answer: N records of :data:`SPHERE_RECORD`."""
    return packed(SPHERE_RECORD, hits)


def contains_records(objects: np.ndarray, signed: np.ndarray | None) -> bytes:
    """The binary containment answer: N records of :data:`CONTAINS_RECORD`."""
    return packed(CONTAINS_RECORD, None, object=objects, signed_distance=np.nan if signed is None else signed)


# ------------------------------------------------------------------ queries

def proximity_options(mask: int | None, objects, exclude) -> dict:
    """Keyword arguments choosing the searched objects: null ``mask`` is all bits."""
    return {"mask": ALL_BITS if mask is None else mask, "objects": objects, "exclude": exclude}


def closest(stored, points: np.ndarray, max_distance: float, options: dict):
    """``bvh.SceneClosestPoints`` of ``points`` (N, 3); the library's refusals as 422 and 404."""
    with client_errors():
        nearest, _ = stored.consistent(lambda scene: scene.closest_point(points, max_distance, **options))
    return nearest


def binary_closest(stored, data: bytes, max_distance: float, options: dict) -> bytes:
    """The records of a binary closest-point query (``data``: whole points, checked by the caller)."""
    points = np.frombuffer(data, "<f4").reshape(-1, 3).astype(np.float64)
    return closest_records(closest(stored, points, max_distance, options))


def json_closest(stored, body) -> bytes:
    """The JSON answer of a ``ClosestRequest``: :func:`closest_columns`."""
    if not body.points:
        return orjson.dumps({name: [] for name in CLOSEST_COLUMNS})
    options = proximity_options(body.mask, body.objects, body.exclude)
    limit = math.inf if body.max_distance is None else body.max_distance
    nearest = closest(stored, np.array(body.points, np.float64), limit, options)
    return orjson.dumps(closest_columns(nearest), option=JSON_OPTIONS)


def sphere_cast(stored, origins: np.ndarray, directions: np.ndarray, radius: float, options: dict):
    """``bvh``'s sphere-cast hits of rays ``origins``, ``directions`` (N, 3)."""
    with client_errors():
        hits, _ = stored.consistent(lambda scene: scene.sphere_cast(origins, directions, radius, **options))
    return hits


def binary_sphere_cast(stored, data: bytes, radius: float, options: dict) -> bytes:
    """The records of a binary sphere cast (``data``: whole rays, checked by the caller)."""
    rays = np.frombuffer(data, "<f4").reshape(-1, 6).astype(np.float64)
    return sphere_records(sphere_cast(stored, rays[:, :3], rays[:, 3:], radius, options))


def json_sphere_cast(stored, body) -> bytes:
    """The JSON answer of a ``SphereCastRequest``: :func:`sphere_columns`."""
    if not body.origins:
        return orjson.dumps({name: [] for name in SPHERE_COLUMNS})
    options = query_window(body.tmin, body.tmax, body.mask, body.objects, body.exclude)
    hits = sphere_cast(stored, np.array(body.origins, np.float64), np.array(body.directions, np.float64),
                       body.radius, options)
    return orjson.dumps(sphere_columns(hits), option=JSON_OPTIONS)


def contains(stored, points: np.ndarray, signed: bool, options: dict):
    """``(objects (N,), signed distances (N,) or None)`` of ``points`` (N, 3)."""
    def query(scene):
        inside = scene.contains(points, **options)
        return inside.object, (scene.signed_distance(points, **options) if signed else None)

    with client_errors():
        answer, _ = stored.consistent(query)
    return answer


def binary_contains(stored, data: bytes, signed: bool, options: dict) -> bytes:
    """The records of a binary containment query (``data``: whole points, checked by the caller)."""
    points = np.frombuffer(data, "<f4").reshape(-1, 3).astype(np.float64)
    return contains_records(*contains(stored, points, signed, options))


def json_contains(stored, body) -> bytes:
    """The JSON answer of a ``ContainsRequest``."""
    if not body.points:
        return orjson.dumps({"inside": [], "object": [], "signed_distance": [] if body.signed_distance else None})
    objects, signed = contains(stored, np.array(body.points, np.float64), body.signed_distance,
                               proximity_options(body.mask, body.objects, body.exclude))
    return orjson.dumps({"inside": objects >= 0, "object": objects, "signed_distance": signed},
                        option=JSON_OPTIONS)
