"""Proximity answers as the API returns them, built from ``bvh``'s results:
columns for JSON, packed records for the binary form."""

import numpy as np

from bvh.hits import SceneClosestPoints

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
    return {
        "found": nearest.object >= 0,
        "distance": nearest.distance,
        "object": nearest.object,
        "mesh": nearest.mesh,
        "triangle": nearest.triangle,
        "u": nearest.u,
        "v": nearest.v,
        "point": nearest.point,
        "normal": nearest.normal,
    }


def closest_records(nearest: SceneClosestPoints) -> bytes:
    """The binary answer: N records of :data:`CLOSEST_RECORD`."""
    records = np.empty(nearest.object.shape[0], CLOSEST_RECORD)
    records["distance"] = nearest.distance
    records["object"] = nearest.object
    records["triangle"] = nearest.triangle
    records["u"] = nearest.u
    records["v"] = nearest.v
    records["point"] = nearest.point
    records["normal"] = nearest.normal
    return records.tobytes()


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
    return {"hit": hits.object >= 0, "t": hits.t, "object": hits.object, "triangle": hits.triangle,
            "u": hits.u, "v": hits.v, "point": hits.point, "normal": hits.normal}


def sphere_records(hits) -> bytes:
    """The binary sphere-cast answer: N records of :data:`SPHERE_RECORD`."""
    records = np.empty(hits.object.shape[0], SPHERE_RECORD)
    for name in SPHERE_RECORD.names:
        records[name] = getattr(hits, name)
    return records.tobytes()


def contains_records(objects: np.ndarray, signed: np.ndarray | None) -> bytes:
    """The binary containment answer: N records of :data:`CONTAINS_RECORD`."""
    records = np.empty(objects.shape[0], CONTAINS_RECORD)
    records["object"] = objects
    records["signed_distance"] = np.nan if signed is None else signed
    return records.tobytes()
