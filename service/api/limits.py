"""Limits on what one request may ask: rays (``PICK_MAX_RAYS``), and upper bounds on the
size of answers, checked against ``PICK_MAX_RESPONSE_MB``; and on how many uploads
are read and built at once (``PICK_MAX_CONCURRENT_BUILDS``, :class:`BuildSlots`).

A camera pick of four million pixels would answer some 600 MB of JSON, built
in memory first. Each bound here is the largest size the answer can take,
known before the work starts from the number of rays (every number written at
its longest: orjson writes a float64 in at most 24 characters, an int64 in at
most 20), so a request that could overflow the limit is refused with 413
before any ray is traced. An ``all_hits`` pick and a ``triangles`` selection
only know their size after the query; they are checked before serialising.
"""

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

import orjson

from .errors import ClientError
from .openapi import ERROR_DESCRIPTIONS
from .schemas import ErrorOut
from ..settings import MEGABYTE, Settings
from ..store.store import SceneView

#: Seconds a client is told to wait (``Retry-After``) when every build slot is taken.
BUILD_RETRY_AFTER = 2

#: The OpenAPI ``responses`` entry of the upload routes' 503.
BUILDS_BUSY_RESPONSE = {
    "model": ErrorOut,
    "description": ("PICK_MAX_CONCURRENT_BUILDS uploads are being read and built already (nothing was changed), "
                    "or " + ERROR_DESCRIPTIONS[503]),
    "headers": {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds to wait before retrying"}},
}


class BuildSlots:
    """At most ``limit`` uploads (files and inline meshes) read and build at once.

    Reading and building a large file takes seconds and memory; past the
    limit an upload is refused at once with 503 and ``Retry-After``, rather
    than queued behind the others with its body held. Taken and given back on
    the event loop's thread only, so a plain counter is enough.
    """

    def __init__(self, limit: int):
        self.limit = limit
        self.busy = 0

    @contextmanager
    def slot(self):
        """Hold one slot for the block; a :class:`ClientError` 503 when none is free."""
        if self.busy >= self.limit:
            raise ClientError(503, f"{self.busy} uploads are being read and built already, the most at once "
                                   f"(PICK_MAX_CONCURRENT_BUILDS={self.limit}); nothing was changed: retry in "
                                   f"{BUILD_RETRY_AFTER} s", headers={"Retry-After": str(BUILD_RETRY_AFTER)})
        self.busy += 1
        try:
            yield
        finally:
            self.busy -= 1


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


def check_ray_count(count: int, settings: Settings, what: str = "rays", at_least: bool = False) -> None:
    """413 when one request casts ``count`` rays (or pixels, or points: ``what``) over ``PICK_MAX_RAYS``;
    ``at_least``: ``count`` is a lower bound (:class:`JsonItems`)."""
    if count > settings.max_rays:
        raise ClientError(413, f"{'at least ' if at_least else ''}{count} {what} in one request; the limit is "
                               f"{settings.max_rays} (PICK_MAX_RAYS)")


@dataclass(frozen=True)
class JsonItems:
    """How the list of items (rays, points, pixels) of a JSON body shows in its bytes, so that a body
    sure to hold too many is refused before it is parsed (parsing 1.5 M rays takes many seconds).

    Whitespace and long numbers make the bytes of a body no lower bound on its items, but every
    item of a valid body opens the same number of JSON arrays and nothing else in it opens more
    than a few: no field of these requests is a string, and unknown fields are refused, so every
    ``[`` is an array. Counting them (``bytes.count``, some 50 ms for 100 MB) bounds the items
    from below for every body that would pass validation; one that would not is refused either way.
    The scan is skipped when even the most items the length allows are within the limits.

    Attributes
    ----------
    plural : str
        ``"rays"``: how messages name the items.
    least_bytes : int
        Fewest bytes one item takes, its separator included (``[0,0,0],`` is 8): the length of
        the body divided by it bounds the items from above.
    brackets : int
        Arrays one item opens (a ray: its origin and its direction).
    other_brackets : int
        Most arrays the rest of a valid body opens (the lists themselves, ``objects``, ``exclude``,
        a camera's vectors or matrices).
    """

    plural: str
    least_bytes: int
    brackets: int
    other_brackets: int

    def check(self, body: bytes, settings: Settings, answer: Callable[[int], int], what: str,
              advice: str) -> None:
        """413 before parsing when every valid body of these bytes holds more items than
        ``PICK_MAX_RAYS``, or than an answer (``answer(items)`` bytes at most) within
        ``PICK_MAX_RESPONSE_MB`` allows; ``what`` and ``advice`` word the latter as :func:`check`."""
        most = len(body) // self.least_bytes + 1
        if most <= settings.max_rays and answer(most) <= settings.max_response_mb * MEGABYTE:
            return
        least = max(0, body.count(b"[") - self.other_brackets) // self.brackets
        check_ray_count(least, settings, self.plural, at_least=True)
        check(answer(least), settings, f"{what} of at least {least} {self.plural}", advice)


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
