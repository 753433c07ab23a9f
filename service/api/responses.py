"""A JSON response rendered by orjson: several times faster than the standard
encoder on pick results, and NaN or infinity become ``null`` instead of
invalid JSON."""

import orjson
from starlette.responses import JSONResponse

JSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY


class JSONBytes(JSONResponse):
    """``application/json`` rendered with orjson (numpy arrays and scalars allowed).

    A ``JSONResponse``: FastAPI documents a route's ``response_model`` as the
    body only for JSON response classes, so the app's default class must be one.
    """

    media_type = "application/json"

    def render(self, content) -> bytes:
        return orjson.dumps(content, option=JSON_OPTIONS)
