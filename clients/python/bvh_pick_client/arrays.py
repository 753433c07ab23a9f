"""Batch answers as numpy arrays, from either wire form.

A batch goes over the wire as JSON columns (small batches) or as packed
little-endian binary records (the ``.bin`` operations, large batches); both
arrive here as the same dataclass of numpy arrays, so a caller never sees
which form was used. The binary form carries float32, the JSON form float64:
the arrays are float64 either way, and the two agree to float32 precision.

Sentinels, the same for both forms: a miss has ``object == -1`` and
``triangle == -1``, ``t`` (``distance``) ``inf`` and NaN in ``u``, ``v``,
``point`` and ``normal``; a shape's hit has ``triangle == -1`` and NaN
``u``, ``v``. Test ``hit`` (``object >= 0``), not ``t``.
"""

from dataclasses import dataclass

import numpy as np

#: A binary ray: ox, oy, oz, dx, dy, dz as little-endian float32 (24 bytes).
RAY = np.dtype("<f4")

#: ``pick/batch.bin``'s 32-byte record.
PICK_RECORD = np.dtype([("t", "<f4"), ("object", "<i4"), ("triangle", "<i4"), ("u", "<f4"), ("v", "<f4"),
                        ("normal", "<f4", (3,))])
#: ``pick/batch.bin?records=primitive``'s 44-byte record: :data:`PICK_RECORD`, then what was hit.
PICK_PRIMITIVE_RECORD = np.dtype(PICK_RECORD.descr + [("primitive", "<i4"), ("index", "<i4"), ("s", "<f4")])
#: ``closest.bin``'s 44-byte record.
CLOSEST_RECORD = np.dtype([("distance", "<f4"), ("object", "<i4"), ("triangle", "<i4"), ("u", "<f4"),
                           ("v", "<f4"), ("point", "<f4", (3,)), ("normal", "<f4", (3,))])
#: ``sphere-cast.bin``'s 44-byte record.
SPHERE_RECORD = np.dtype([("t", "<f4"), ("object", "<i4"), ("triangle", "<i4"), ("u", "<f4"), ("v", "<f4"),
                          ("point", "<f4", (3,)), ("normal", "<f4", (3,))])
#: ``contains.bin``'s 8-byte record.
CONTAINS_RECORD = np.dtype([("object", "<i4"), ("signed_distance", "<f4")])
#: ``objects.bin``'s 52-byte move: the object id and the top three rows of its new transform.
MOVE_RECORD = np.dtype([("id", "<i4"), ("rows", "<f4", (3, 4))])

assert (PICK_RECORD.itemsize, PICK_PRIMITIVE_RECORD.itemsize, CLOSEST_RECORD.itemsize, SPHERE_RECORD.itemsize,
        CONTAINS_RECORD.itemsize, MOVE_RECORD.itemsize) == (32, 44, 44, 44, 8, 52)

#: ``primitive`` codes of :class:`BatchHits`.
PRIMITIVES = {0: "triangle", 1: "shape", 2: "segment", 3: "point", -1: None}


def as_vectors(values, name: str) -> np.ndarray:
    """``values`` as a C-contiguous float64 array of shape (N, 3); a ValueError otherwise."""
    array = np.ascontiguousarray(values, dtype=np.float64)
    if array.ndim == 1 and array.shape[0] == 3:
        array = array[None, :]
    if array.ndim != 2 or array.shape[1] != 3:
        raise ValueError(f"{name} must have shape (N, 3), got {array.shape}")
    return array


def pack_rays(origins: np.ndarray, directions: np.ndarray) -> bytes:
    """Rays as the binary body: (N, 6) little-endian float32."""
    return np.hstack([origins, directions]).astype(RAY).tobytes()


def pack_points(points: np.ndarray) -> bytes:
    """Points as the binary body: (N, 3) little-endian float32."""
    return points.astype(RAY).tobytes()


def records(data: bytes, layout: np.dtype, count: int, what: str) -> np.ndarray:
    """``count`` records of ``layout`` from a binary answer; a ValueError on a short one."""
    if len(data) != count * layout.itemsize:
        raise ValueError(f"{what}: expected {count} records of {layout.itemsize} bytes, got {len(data)} bytes")
    return np.frombuffer(data, layout, count)


def _column(values, fill: float = np.nan) -> np.ndarray:
    """A JSON column with nulls as a float64 array (nulls become ``fill``)."""
    return np.array([fill if value is None else value for value in values], dtype=np.float64)


def _rows(values) -> np.ndarray:
    """A JSON column of [x, y, z] rows, nulls as NaN, as (N, 3) float64."""
    if not values:
        return np.zeros((0, 3))
    return np.array([[np.nan if x is None else x for x in row] for row in values], dtype=np.float64)


def _ints(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int32).reshape(-1)


def surface_from_json(answer: dict) -> dict:
    """The columns every surface answer has (``object``, ``triangle``, ``u``, ``v``, ``point``,
    ``normal``) from its JSON form, as arrays."""
    return dict(object=_ints(answer["object"]), triangle=_ints(answer["triangle"]), u=_column(answer["u"]),
                v=_column(answer["v"]), point=_rows(answer["point"]), normal=_rows(answer["normal"]))


def surface_from_records(found: np.ndarray) -> dict:
    """The same columns from binary records that carry the point (closest, sphere-cast)."""
    return dict(object=found["object"].astype(np.int32), triangle=found["triangle"].astype(np.int32),
                u=found["u"].astype(np.float64), v=found["v"].astype(np.float64),
                point=found["point"].astype(np.float64), normal=found["normal"].astype(np.float64))


@dataclass
class BatchHits:
    """The closest hit of each of N rays.

    Attributes
    ----------
    hit : (N,) bool
        Whether the ray hit anything.
    t : (N,) float64
        Parametric distance along the direction as given; ``inf`` on a miss.
    object : (N,) int32
        Object id; -1 on a miss.
    triangle : (N,) int32
        Face index in the object's mesh; -1 on a miss, a shape, a segment or a point.
    u, v : (N,) float64
        Barycentrics of the hit on its triangle; NaN otherwise.
    point : (N, 3) float64
        The hit point (from the binary form: ``origin + t * direction``, computed here); NaN on a miss.
    normal : (N, 3) float64
        Unit geometric normal in world space; NaN on a miss and for segments and points.
    primitive : (N,) int32 or None
        0 triangle, 1 shape, 2 segment, 3 point, -1 miss (:data:`PRIMITIVES`); None from a binary
        batch with ``records="surface"``.
    index : (N,) int32 or None
        The segment's or point's index in its set, else -1; None as ``primitive``.
    s : (N,) float64 or None
        Where on the segment hit, in [0, 1], else NaN; None as ``primitive``.
    """

    hit: np.ndarray
    t: np.ndarray
    object: np.ndarray
    triangle: np.ndarray
    u: np.ndarray
    v: np.ndarray
    point: np.ndarray
    normal: np.ndarray
    primitive: np.ndarray | None = None
    index: np.ndarray | None = None
    s: np.ndarray | None = None

    @classmethod
    def from_json(cls, answer: dict) -> "BatchHits":
        segment, point_index = _ints(answer["segment"]), _ints(answer["point_index"])
        return cls(hit=np.asarray(answer["hit"], dtype=bool).reshape(-1), t=_column(answer["t"], np.inf),
                   primitive=_ints(answer["primitive"]), index=np.where(segment >= 0, segment, point_index),
                   s=_column(answer["s"]), **surface_from_json(answer))

    @classmethod
    def from_records(cls, found: np.ndarray, origins: np.ndarray, directions: np.ndarray) -> "BatchHits":
        hit = found["object"] >= 0
        t = found["t"].astype(np.float64)
        point = np.where(hit[:, None], origins + np.where(hit, t, 0.0)[:, None] * directions, np.nan)
        extra = {}
        if "primitive" in found.dtype.names:
            extra = dict(primitive=found["primitive"].astype(np.int32), index=found["index"].astype(np.int32),
                         s=found["s"].astype(np.float64))
        return cls(hit=hit, t=t, object=found["object"].astype(np.int32),
                   triangle=found["triangle"].astype(np.int32), u=found["u"].astype(np.float64),
                   v=found["v"].astype(np.float64), point=point, normal=found["normal"].astype(np.float64), **extra)


@dataclass
class ClosestPoints:
    """The nearest surface point to each of N points.

    Attributes
    ----------
    found : (N,) bool
        Whether a surface lies within ``max_distance``.
    distance : (N,) float64
        Distance to it; ``inf`` when none was found.
    object, triangle : (N,) int32
        Its object and face; -1 when none was found (``triangle`` also -1 on a shape).
    u, v : (N,) float64
        Barycentrics on the triangle; NaN otherwise.
    point, normal : (N, 3) float64
        The surface point and the unit normal there; NaN when none was found.
    mesh : (N,) int32 or None
        The object's mesh (-1 for shapes and misses); None from the binary form, which does not carry it.
    """

    found: np.ndarray
    distance: np.ndarray
    object: np.ndarray
    triangle: np.ndarray
    u: np.ndarray
    v: np.ndarray
    point: np.ndarray
    normal: np.ndarray
    mesh: np.ndarray | None = None

    @classmethod
    def from_json(cls, answer: dict) -> "ClosestPoints":
        return cls(found=np.asarray(answer["found"], dtype=bool).reshape(-1),
                   distance=_column(answer["distance"], np.inf), mesh=_ints(answer["mesh"]),
                   **surface_from_json(answer))

    @classmethod
    def from_records(cls, found: np.ndarray) -> "ClosestPoints":
        hit = found["object"] >= 0
        return cls(found=hit, distance=np.where(hit, found["distance"].astype(np.float64), np.inf),
                   **surface_from_records(found))


@dataclass
class SphereHits:
    """Where each of N spheres, swept along its ray, first touches a surface.

    Attributes
    ----------
    hit : (N,) bool
    t : (N,) float64
        The sphere's centre at contact is ``origin + t * direction``; ``inf`` on a miss.
    object, triangle : (N,) int32
        -1 on a miss (``triangle`` also -1 on a shape).
    u, v : (N,) float64
        Barycentrics of the contact on its triangle; NaN otherwise.
    point : (N, 3) float64
        The contact point on the surface; NaN on a miss.
    normal : (N, 3) float64
        The surface's unit normal there; NaN on a miss.
    """

    hit: np.ndarray
    t: np.ndarray
    object: np.ndarray
    triangle: np.ndarray
    u: np.ndarray
    v: np.ndarray
    point: np.ndarray
    normal: np.ndarray

    @classmethod
    def from_json(cls, answer: dict) -> "SphereHits":
        return cls(hit=np.asarray(answer["hit"], dtype=bool).reshape(-1), t=_column(answer["t"], np.inf),
                   **surface_from_json(answer))

    @classmethod
    def from_records(cls, found: np.ndarray) -> "SphereHits":
        hit = found["object"] >= 0
        return cls(hit=hit, t=np.where(hit, found["t"].astype(np.float64), np.inf), **surface_from_records(found))


@dataclass
class Containment:
    """Inside or outside the scene's closed objects, for each of N points.

    Attributes
    ----------
    inside : (N,) bool
    object : (N,) int32
        An object containing the point; -1 when outside all.
    signed_distance : (N,) float64 or None
        Distance to the nearest surface, negative inside; None unless asked for
        (``signed_distance=True``).
    """

    inside: np.ndarray
    object: np.ndarray
    signed_distance: np.ndarray | None = None

    @classmethod
    def from_json(cls, answer: dict) -> "Containment":
        distances = answer.get("signed_distance")
        return cls(inside=np.asarray(answer["inside"], dtype=bool).reshape(-1), object=_ints(answer["object"]),
                   signed_distance=None if distances is None else _column(distances))

    @classmethod
    def from_records(cls, found: np.ndarray, signed_distance: bool) -> "Containment":
        return cls(inside=found["object"] >= 0, object=found["object"].astype(np.int32),
                   signed_distance=found["signed_distance"].astype(np.float64) if signed_distance else None)


def pack_moves(ids, transforms) -> bytes:
    """Moves as the binary batch edit: (N,) ids and (N, 4, 4) or (N, 3, 4) transforms, as
    :data:`MOVE_RECORD` records."""
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    transforms = np.asarray(transforms, dtype=np.float64)
    if transforms.ndim != 3 or transforms.shape[0] != len(ids) or transforms.shape[1:] not in ((4, 4), (3, 4)):
        raise ValueError(f"transforms must have shape (N, 4, 4) or (N, 3, 4) with N = {len(ids)} ids, "
                         f"got {transforms.shape}")
    moves = np.empty(len(ids), MOVE_RECORD)
    moves["id"] = ids
    moves["rows"] = transforms[:, :3, :]
    return moves.tobytes()
