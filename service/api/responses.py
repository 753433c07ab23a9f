"""A JSON response rendered by orjson (several times faster than the standard
encoder on pick results, and NaN or infinity become ``null`` instead of
invalid JSON), and how a request asks for plain bytes."""

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse

#: Bytes: what a binary form sends and answers, and what generated clients read any body as.
OCTET_STREAM = "application/octet-stream"

JSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY


class JSONBytes(JSONResponse):
    """``application/json`` rendered with orjson (numpy arrays and scalars allowed).

    A ``JSONResponse``: FastAPI documents a route's ``response_model`` as the
    body only for JSON response classes, so the app's default class must be one.
    """

    media_type = "application/json"

    def render(self, content) -> bytes:
        return orjson.dumps(content, option=JSON_OPTIONS)


def wants_octet_stream(request: Request, usual: str) -> bool:
    """Whether the request's ``Accept`` names ``application/octet-stream`` before ``usual`` (the
    media type the route answers by default, e.g. ``image/png``), and not with ``q=0``.

    A route whose usual answer is a media type client generators do not know
    (a PNG, a GLB) also declares ``application/octet-stream``, which they read
    as bytes; the bytes are the same either way.
    """
    for part in request.headers.get("accept", "").split(","):
        media, *parameters = [piece.replace(" ", "").lower() for piece in part.split(";")]
        weights = [parameter[2:] for parameter in parameters if parameter.startswith("q=")]
        if weights and weights[0].strip("0.") == "" and weights[0][:1] == "0":
            continue                    # q=0, q=0.0, ...: "not this one"
        if media == OCTET_STREAM:
            return True
        if media == usual:
            return False
    return False
