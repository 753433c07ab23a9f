"""Reading request bodies: JSON validated in one pass, multipart forms, content types."""

import math

import orjson
from pydantic import TypeAdapter, ValidationError
from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request

from .errors import ClientError, validation_error
from .responses import OCTET_STREAM

JSON = "application/json"
MULTIPART = "multipart/form-data"
FORM_URLENCODED = "application/x-www-form-urlencoded"

#: Largest non-file field of a multipart form (a name, a transform).
MAX_FORM_FIELD_BYTES = 64 * 1024

#: Integers up to this size convert to float64 exactly.
EXACT_INTEGER = 2 ** 53


def media_type(request: Request) -> str | None:
    """The request's media type without parameters, lower case; None when it has no ``Content-Type``.

    A body without a ``Content-Type`` is not taken for JSON: HTTP leaves its
    type unknown, and the route that also reads binary rays could not tell
    the two apart.
    """
    value = request.headers.get("content-type")
    if value == JSON:
        return JSON
    if not value:
        return None
    return value.split(";", 1)[0].strip().lower()


#: The path suffix of the route that reads a JSON route's binary form (``/pick/batch.bin``).
BINARY_SUFFIX = ".bin"
#: The path suffix of the route that reads a JSON route's file form (``/scenes/upload``).
UPLOAD_SUFFIX = "/upload"


def require_json(request: Request) -> None:
    """Refuse (415) a body not declared ``application/json``: a header check, nothing read.

    Raises
    ------
    ClientError
        415 saying to send ``Content-Type: application/json``.
    """
    media = media_type(request)
    if media != JSON:
        raise unsupported_media(media, JSON)


def require_media(request: Request, accepted: str, sibling_media: str, sibling_suffix: str) -> None:
    """Refuse (415) a body not declared ``accepted``: a header check, nothing read.

    Each form of a route that once read two (JSON and binary rays, JSON and a
    file) has its own operation, so that generated clients know what they
    send; a body of the other form is told which route reads it.

    Parameters
    ----------
    sibling_media : str
        The media type of the other form.
    sibling_suffix : str
        How the other form's path differs: this path with the suffix added
        (the JSON route's sibling), or without it when this path ends with it
        (the ``.bin`` or ``/upload`` route's sibling).

    Raises
    ------
    ClientError
        415 naming the route that reads ``sibling_media``, or saying to send ``accepted``.
    """
    media = media_type(request)
    if media == accepted:
        return
    if media != sibling_media:
        raise unsupported_media(media, accepted)
    path = request.url.path
    sibling = path.removesuffix(sibling_suffix) if path.endswith(sibling_suffix) else path + sibling_suffix
    raise ClientError(415, f"this route reads {accepted}: send {media} to {request.method} {sibling}")


async def read_body(request: Request) -> bytes:
    """The whole request body.

    ``Request.body`` goes through an async generator; a body that arrives in
    one message (every small JSON request) is read here with one ``receive``.

    Raises
    ------
    ClientDisconnect
        When the client hangs up before the body is whole (``service.api.errors.client_hung_up``).
    """
    message = await request.receive()
    if message["type"] != "http.request":
        return await request.body()
    chunk = message.get("body", b"")
    if not message.get("more_body", False):
        return chunk
    chunks = [chunk]
    while True:
        message = await request.receive()
        if message["type"] != "http.request":
            raise ClientDisconnect()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


#: JSON bodies larger than this are validated on a worker thread, not the event loop.
INLINE_PARSE_BYTES = 64 * 1024


async def parse_json_body(model, body: bytes, union_tags: frozenset = frozenset()):
    """:func:`parse_json`, on a worker thread for a large body (a mesh, a big batch)."""
    if len(body) <= INLINE_PARSE_BYTES:
        return parse_json(model, body, union_tags)
    return await run_in_threadpool(parse_json, model, body, union_tags)


def parse_json(model, body: bytes, union_tags: frozenset = frozenset()):
    """Validate a JSON body against a model (or a ``TypeAdapter``) straight from the bytes.

    Raises
    ------
    ClientError
        422 listing what is wrong, for invalid JSON as for invalid values.
    """
    try:
        if isinstance(model, TypeAdapter):
            return model.validate_json(body)
        return model.model_validate_json(body)
    except ValidationError as error:
        raise validation_error(error, union_tags) from None


async def read_form(request: Request) -> FormData:
    """The multipart form; a malformed one is a 422."""
    try:
        return await request.form(max_files=1, max_fields=8, max_part_size=MAX_FORM_FIELD_BYTES)
    except StarletteHTTPException as error:
        if error.status_code == 413:
            raise
        raise ClientError(422, f"the multipart body cannot be read: {error.detail}") from None


def form_file(form: FormData) -> UploadFile:
    upload = form.get("file")
    if not isinstance(upload, UploadFile):
        raise ClientError(422, "the multipart body needs a 'file' part holding the mesh file")
    return upload


def form_text(form: FormData, name: str) -> str | None:
    value = form.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ClientError(422, f"form field {name!r} must be text, not a file")
    return value


def unsupported_media(media: str | None, accepted: str) -> ClientError:
    """415 for a body of type ``media`` (None: no ``Content-Type``), saying what the route reads.

    Parameters
    ----------
    accepted : str
        The media types the route reads, in words, e.g. ``"application/json"``.
    """
    if media is None:
        problem = "the request has no Content-Type header"
    else:
        problem = f"unsupported content type {media!r}"
    hint = ""
    if media == FORM_URLENCODED:
        # What curl -d sends unless told otherwise.
        hint = " (with curl, add -H 'Content-Type: application/json' to -d)"
    return ClientError(415, f"{problem}: send Content-Type: {accepted}{hint}")


def _plain_vector(value) -> bool:
    """A list of three finite JSON numbers (not booleans, not huge integers)."""
    if type(value) is not list or len(value) != 3:
        return False
    for component in value:
        kind = type(component)
        if not ((kind is float and math.isfinite(component))
                or (kind is int and -EXACT_INTEGER <= component <= EXACT_INTEGER)):
            return False
    return True


def parse_plain_ray(body: bytes) -> tuple[list, list] | None:
    """``(origin, direction)`` of the common one-ray pick body, ``{"origin": [..], "direction": [..]}``
    with plain finite numbers and a non-zero direction; None for anything else.

    The hover pick is the hottest request and this is its usual body: read
    with orjson and a few checks, it skips half the cost of the model's pass.
    Anything else (options, strings, NaN, errors) goes through the model, which
    accepts everything this accepts and explains what it refuses.
    """
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if type(data) is not dict or len(data) != 2:
        return None
    return plain_ray(data)


def plain_ray(data: dict) -> tuple[list, list] | None:
    """``(origin, direction)`` of a decoded pick body when both are plain (see :func:`parse_plain_ray`),
    None otherwise; the caller checks that ``data`` holds no other field."""
    origin = data.get("origin")
    direction = data.get("direction")
    if not (_plain_vector(origin) and _plain_vector(direction)) or not any(direction):
        return None
    return origin, direction
