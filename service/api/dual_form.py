"""The one request helper of the routes that read items in two forms.

``/pick/batch``, ``/closest``, ``/sphere-cast`` and ``/contains`` take JSON
(items and options in the body); their ``.bin`` siblings take packed binary
items (``application/octet-stream``: rays or points as little-endian
float32, the options in the query string) and answer packed records. Two
operations, so that generated clients know what each sends and receives;
one reading: either way the request is refused before its body is read where
``Content-Length`` already tells it is too large, then checked whole (whole
items, at least one, at most ``PICK_MAX_RAYS``, an answer within
``PICK_MAX_RESPONSE_MB``), counted in ``/metrics``, and answered by a
function run on a worker thread (the kernels release the GIL) unless it is
so small that the thread hop would cost more than the work
(:func:`off_loop`). The live channel's binary frames are checked by the
same :class:`BinaryItems`.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Query
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from . import limits
from .bodies import BINARY_SUFFIX, JSON, OCTET_STREAM, parse_json_body, require_media
from .deps import count_rays
from .errors import ClientError
from ..queries.picking import ALL_BITS, RAY_BYTES
from ..queries.proximity import POINT_BYTES
from ..settings import Settings

# The binary form's options, as the query string gives them (a JSON body gives them in the body).
# Their defaults are stated in the descriptions, not the schema (``service.api.openapi``): a
# generated client leaves an option out unless it is given.
AS_IN_JSON = "as the JSON form's body field of the same name"
FlagQuery = Annotated[bool, Query(description=AS_IN_JSON)]
DistanceQuery = Annotated[float, Query(ge=0, allow_inf_nan=False, description=AS_IN_JSON)]
TmaxQuery = Annotated[float | None, Query(ge=0, allow_inf_nan=False, description=AS_IN_JSON + "; absent: unbounded")]
MaskQuery = Annotated[int | None, Query(ge=0, le=ALL_BITS, description=AS_IN_JSON + "; absent: every object")]
IdsQuery = Annotated[list[int] | None, Query(description=AS_IN_JSON + ", repeated per id")]

#: Requests of up to this many rays (or points) are answered on the event loop.
INLINE_RAYS = 64


async def off_loop(rays: int, function, *args):
    """``function(*args)``: on a worker thread (the kernels release the GIL), unless
    ``rays`` is so small that the thread hop would cost more than the work."""
    if rays <= INLINE_RAYS:
        return function(*args)
    return await run_in_threadpool(function, *args)


@dataclass(frozen=True)
class BinaryItems:
    """The items of a binary body: each ``size`` bytes of little-endian float32.

    Attributes
    ----------
    size : int
        Bytes of one item.
    name, plural : str
        ``"ray"``, ``"rays"``: how messages name them.
    layout : str
        What one item holds, in words (``"6 little-endian float32"``).
    what : str
        How a 413 names the request (``"a binary batch"``).
    """

    size: int
    name: str
    plural: str
    layout: str
    what: str

    def count(self, size: int, settings: Settings, record_bytes: int, where: str = "the binary body") -> int:
        """The number of items in ``size`` bytes; 422 unless they are whole and at least one, 413
        past ``PICK_MAX_RAYS`` or an answer of ``record_bytes`` per item past ``PICK_MAX_RESPONSE_MB``.

        Parameters
        ----------
        where : str
            Where the items were, in words: ``"the binary body"``, the live channel's binary frame.
        """
        if size % self.size:
            raise ClientError(422, f"{where} has {size} bytes, which is not a whole number of {self.plural} "
                                   f"({self.size} bytes each: {self.layout})")
        if not size:
            raise ClientError(422, f"{where} is empty: send at least one {self.name}")
        count = size // self.size
        self.check(count, settings, record_bytes)
        return count

    def check(self, count: int, settings: Settings, record_bytes: int) -> None:
        """413 when ``count`` items are more than ``PICK_MAX_RAYS``, or their answer of
        ``record_bytes`` each more than ``PICK_MAX_RESPONSE_MB``."""
        limits.check_ray_count(count, settings, self.plural)
        limits.check(limits.binary(count, record_bytes), settings, f"{self.what} of {count} {self.plural}",
                     f": send fewer {self.plural} per request")


#: Rays of ``/pick/batch`` and ``/sphere-cast``: ox, oy, oz, dx, dy, dz.
RAYS = BinaryItems(RAY_BYTES, "ray", "rays", "6 little-endian float32", "a binary batch")
#: Points of ``/closest`` and ``/contains``: x, y, z.
POINTS = BinaryItems(POINT_BYTES, "point", "points", "3 little-endian float32", "a binary query")

#: JSON rays (``"origins"`` and ``"directions"``: ``[0,0,0],`` in each at least), in a body whose
#: other arrays are at most the two lists, ``objects`` and ``exclude``.
JSON_RAYS = limits.JsonItems("rays", 16, 2, 4)
#: JSON points (``"points"``: ``[0,0,0],`` at least), beside the list, ``objects`` and ``exclude``.
JSON_POINTS = limits.JsonItems("points", 8, 1, 3)


@dataclass(frozen=True)
class DualForm:
    """How one route reads its two forms.

    Attributes
    ----------
    items : BinaryItems
        The binary form's items.
    model : type
        The JSON form's body.
    field : str
        The body's list of items (``"origins"``, ``"points"``).
    query_options : tuple of str
        The binary form's options: a JSON body given any of them is refused (422).
    noun : str
        What a JSON body is called in that refusal (``"batch"``, ``"query"``).
    json_items : limits.JsonItems
        How the JSON form's items show in its bytes, for a refusal before parsing.
    json_what : str
        How a 413 names a JSON request (``"a JSON batch"``).
    json_answer : callable ``(items) -> int``
        Upper bound on the JSON answer's bytes (``service.api.limits``).
    json_advice : str
        What a 413 of a JSON request advises.
    """

    items: BinaryItems
    model: type
    field: str
    query_options: tuple[str, ...]
    noun: str
    json_items: limits.JsonItems
    json_what: str
    json_answer: Callable[[int], int]
    json_advice: str

    async def read_binary(self, request: Request, settings: Settings, record_bytes: int) -> "Received":
        """The binary form's items (the ``.bin`` route), checked against every limit.

        Parameters
        ----------
        record_bytes : int
            Bytes per item of the binary answer.

        Raises
        ------
        ClientError
            415 for another content type (naming the JSON route for JSON); 422 for a body that is
            not whole items; 413 past the limits.
        """
        require_media(request, OCTET_STREAM, JSON, BINARY_SUFFIX)
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit():
            self.items.check(int(declared) // self.items.size, settings, record_bytes)
        data = await request.body()
        return Received(self.items.count(len(data), settings, record_bytes), data, None)

    async def read_json(self, request: Request, settings: Settings) -> "Received":
        """The JSON form's body, checked against every limit.

        Raises
        ------
        ClientError
            415 for another content type (naming the ``.bin`` route for binary items); 422 for
            query options (the binary form's) or an invalid body; 413 past the limits.
        """
        require_media(request, JSON, OCTET_STREAM, BINARY_SUFFIX)
        given = [name for name in self.query_options if name in request.query_params]
        if given:
            raise ClientError(422, f"query options ({', '.join(given)}) are for the binary form, "
                                   f"{request.method} {request.url.path}{BINARY_SUFFIX}; "
                                   f"a JSON {self.noun} takes its options in the body")
        raw = await request.body()
        self.json_items.check(raw, settings, self.json_answer, self.json_what, self.json_advice)
        body = await parse_json_body(self.model, raw)
        count = len(getattr(body, self.field))
        limits.check_ray_count(count, settings, self.items.plural)
        limits.check(self.json_answer(count), settings, f"{self.json_what} of {count} {self.items.plural}",
                     self.json_advice)
        return Received(count, None, body)


@dataclass(frozen=True)
class Received:
    """A dual-form request's items, read and checked: ``data`` (binary) or ``body`` (JSON)."""

    count: int
    data: bytes | None
    body: object | None

    @property
    def binary(self) -> bool:
        return self.data is not None

    async def answer(self, request: Request, function, *args) -> Response:
        """Count the items in ``/metrics`` and answer ``function(*args)`` (:func:`off_loop`): packed
        records for a binary request, JSON for a JSON one."""
        count_rays(request, self.count)
        return Response(await off_loop(self.count, function, *args),
                        media_type=OCTET_STREAM if self.binary else JSON)
