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
