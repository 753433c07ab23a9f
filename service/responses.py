"""A JSON response rendered by orjson: several times faster than the standard
encoder on pick results, and NaN or infinity become ``null`` instead of
invalid JSON."""

import orjson
from starlette.responses import Response

JSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY


class JSONBytes(Response):
    """``application/json`` rendered with orjson (numpy arrays and scalars allowed)."""

    media_type = "application/json"

    def render(self, content) -> bytes:
        return orjson.dumps(content, option=JSON_OPTIONS)
