"""Limits on what one request may ask: rays (``PICK_MAX_RAYS``), and upper bounds on the
size of answers, checked against ``PICK_MAX_RESPONSE_MB``.

A camera pick of four million pixels would answer some 600 MB of JSON, built
in memory first. Each bound here is the largest size the answer can take,
known before the work starts from the number of rays (every number written at
its longest: orjson writes a float64 in at most 24 characters, an int64 in at
most 20), so a request that could overflow the limit is refused with 413
before any ray is traced. An ``all_hits`` pick and a ``triangles`` selection
only know their size after the query; they are checked before serialising.
"""

import orjson

from .errors import ClientError
from ..settings import MEGABYTE, Settings
from ..store.store import SceneView

#: The longest float orjson writes (24 bytes) and the longest int64 (20 bytes).
LONGEST_FLOAT = -2.2250738585072014e-308
LONGEST_INT = -(2**63)

#: A JSON string takes at most this many bytes per character of its text:
#: a control character is escaped as ``\\u00XX``.
BYTES_PER_NAME_CHARACTER = 6

#: PNG bytes beyond the raw pixels: signature, chunk headers and zlib's
#: framing, generously; fast deflate never grows data by more than 0.1 %.
PNG_OVERHEAD_BYTES = 4096


def _longest_hit() -> dict:
    """A pick result with every field present and every number at its longest (name empty)."""
    three = [LONGEST_FLOAT] * 3
    return {"hit": True, "t": LONGEST_FLOAT, "distance": LONGEST_FLOAT, "point": three,
            "object": {"id": LONGEST_INT, "name": ""}, "mesh": LONGEST_INT, "triangle": LONGEST_INT,
            "barycentric": three, "normal": three, "shading_normal": three, "uv": [LONGEST_FLOAT] * 2,
            "front_face": False, "nearest_vertex": {"index": LONGEST_INT, "point": three},
            "nearest_edge": [LONGEST_INT, LONGEST_INT]}


def _per_item(make) -> tuple[int, int]:
    """``(bytes per item, fixed bytes)`` of the JSON of ``make(n)``, from n = 1 and n = 2."""
    one, two = len(orjson.dumps(make(1))), len(orjson.dumps(make(2)))
    return two - one, 2 * one - two


#: A pick result (``hits`` of ``all_hits``), the name excluded.
HIT_BYTES, HITS_FIXED_BYTES = _per_item(lambda n: {"hits": [_longest_hit()] * n})

#: A camera pick result with its ray, the name excluded.
CAMERA_RESULT_BYTES, CAMERA_FIXED_BYTES = _per_item(lambda n: {"results": [
    {**_longest_hit(), "ray": {"origin": [LONGEST_FLOAT] * 3, "direction": [LONGEST_FLOAT] * 3}}] * n})

#: One ray of a JSON batch answer (a value in every column).
BATCH_RAY_BYTES, BATCH_FIXED_BYTES = _per_item(lambda n: {
    "hit": [False] * n, "t": [LONGEST_FLOAT] * n, "object": [LONGEST_INT] * n, "triangle": [LONGEST_INT] * n,
    "u": [LONGEST_FLOAT] * n, "v": [LONGEST_FLOAT] * n, "point": [[LONGEST_FLOAT] * 3] * n,
    "normal": [[LONGEST_FLOAT] * 3] * n})

#: One point of a JSON closest-point answer (a value in every column).
CLOSEST_POINT_BYTES, CLOSEST_FIXED_BYTES = _per_item(lambda n: {
    "found": [False] * n, "distance": [LONGEST_FLOAT] * n, "object": [LONGEST_INT] * n,
    "mesh": [LONGEST_INT] * n, "triangle": [LONGEST_INT] * n, "u": [LONGEST_FLOAT] * n,
    "v": [LONGEST_FLOAT] * n, "point": [[LONGEST_FLOAT] * 3] * n, "normal": [[LONGEST_FLOAT] * 3] * n})

#: One selected object, the name and its triangles excluded.
SELECTED_BYTES, SELECTION_FIXED_BYTES = _per_item(lambda n: {"objects": [
    {"id": LONGEST_INT, "name": "", "triangles": None}] * n})


def longest_name_bytes(view: SceneView) -> int:
    """Most bytes one object's name can take in JSON, in the scene state ``view``."""
    return BYTES_PER_NAME_CHARACTER * view.objects.longest_name


def check_ray_count(count: int, settings: Settings, what: str = "rays") -> None:
    """413 when one request casts ``count`` rays (or pixels, or points: ``what``) over ``PICK_MAX_RAYS``."""
    if count > settings.max_rays:
        raise ClientError(413, f"{count} {what} in one request; the limit is {settings.max_rays} (PICK_MAX_RAYS)")


def check(size: int, settings: Settings, what: str, advice: str = "") -> None:
    """413 when an answer of up to ``size`` bytes exceeds ``PICK_MAX_RESPONSE_MB``.

    ``what`` words the answer (``"a camera pick of 5 pixels"``) and ``advice``
    what to do instead.
    """
    limit = settings.max_response_mb * MEGABYTE
    if size > limit:
        shown = f"{size / MEGABYTE:,.1f} MiB" if size >= MEGABYTE / 10 else f"{size:,} bytes"
        raise ClientError(413, f"{what} could answer up to {shown}; the limit is "
                               f"{settings.max_response_mb:g} MiB (PICK_MAX_RESPONSE_MB){advice}")


def camera_pick(pixels: int, view: SceneView) -> int:
    """Largest JSON answer of a camera pick of ``pixels`` pixels."""
    return CAMERA_FIXED_BYTES + pixels * (CAMERA_RESULT_BYTES + longest_name_bytes(view))


def json_batch(rays: int) -> int:
    """Largest JSON batch answer of ``rays`` rays."""
    return BATCH_FIXED_BYTES + rays * BATCH_RAY_BYTES


def json_closest(points: int) -> int:
    """Largest JSON closest-point answer of ``points`` points."""
    return CLOSEST_FIXED_BYTES + points * CLOSEST_POINT_BYTES


def binary(items: int, record_bytes: int) -> int:
    """A binary answer of ``items`` records of ``record_bytes`` each (``service.queries``' ``*_RECORD``)."""
    return items * record_bytes


def all_hits(hits: int, view: SceneView) -> int:
    """Largest JSON answer of an ``all_hits`` pick that crossed ``hits`` surfaces."""
    return HITS_FIXED_BYTES + hits * (HIT_BYTES + longest_name_bytes(view))


def selection(objects: int, triangles: int, largest_index: int, view: SceneView) -> int:
    """Largest JSON answer of a selection of ``objects`` objects listing ``triangles``
    triangle indices of at most ``largest_index``."""
    return (SELECTION_FIXED_BYTES + objects * (SELECTED_BYTES + longest_name_bytes(view))
            + triangles * (len(str(largest_index)) + 1))


def png(width: int, height: int) -> int:
    """Largest PNG of a ``width`` x ``height`` RGB image (a filter byte per row, raw at worst)."""
    raw = height * (3 * width + 1)
    return raw + raw // 1000 + PNG_OVERHEAD_BYTES
