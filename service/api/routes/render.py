"""``/scenes/{id}/render``: the scene through a pinhole camera, as a PNG.

The camera is given in the query string, so an ``<img>`` or a plain ``curl``
can ask for it; vectors are ``x,y,z``, and ``up`` defaults to ``0,0,1`` (z up,
as in the README's examples). Whatever the request left out
(position, target) is filled in to frame the whole scene, and the camera
actually used comes back in the ``X-Camera`` header as the JSON fields of a
``/pick/camera`` body: a client that picks with that camera and the pixel
centre ``[x + 0.5, y + 0.5]`` gets what pixel ``(x, y)`` shows.
"""

import math
from typing import Annotated

import orjson
from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from .. import limits
from ..deps import SettingsDep, StoredSceneDep, count_rays
from ..errors import ClientError, client_errors, refuse_unknown_query
from ..openapi import binary_answer
from ..responses import OCTET_STREAM, wants_octet_stream
from ..schemas import MAX_OBJECT_ID, ErrorOut
from ...queries.picking import ALL_BITS
from ...queries.rendering import encode_png, frame_bounds, render

router = APIRouter(tags=["render"])

#: Largest width or height of a render, in pixels (``PICK_MAX_RAYS`` also caps their product).
MAX_SIDE = 4096

DEFAULT_UP = "0,0,1"
DEFAULT_FOV_Y_DEG = 45.0
DEFAULT_WIDTH = 640
DEFAULT_HEIGHT = 480

#: Most ids ``highlight`` may list: a selection of more is not something to tint one by one.
MAX_HIGHLIGHT = 100_000

QUERY_PARAMETERS = frozenset({"position", "target", "up", "fov_y_deg", "width", "height", "highlight", "mask"})

CAMERA_HEADER = "X-Camera"
PNG = "image/png"


def parse_vector(name: str, text: str) -> tuple[float, float, float]:
    """Three finite numbers from ``"x,y,z"``; 422 naming ``name`` otherwise."""
    parts = text.split(",")
    if len(parts) != 3:
        raise ClientError(422, f"{name} must be three comma-separated numbers x,y,z, got {len(parts)} "
                               f"value{'s' if len(parts) != 1 else ''} in {text[:60]!r}")
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise ClientError(422, f"{name} must be three comma-separated numbers x,y,z, "
                                   f"{part.strip()[:40]!r} is not a number") from None
        if not math.isfinite(value):
            raise ClientError(422, f"{name} must hold finite numbers, got {part.strip()[:40]!r}")
        values.append(value)
    return tuple(values)


def parse_ids(name: str, text: str) -> frozenset[int]:
    """Object ids from ``"1,2,3"`` (empty: none); 422 naming ``name`` otherwise."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if len(parts) > MAX_HIGHLIGHT:
        raise ClientError(422, f"{name} lists {len(parts)} ids; at most {MAX_HIGHLIGHT}")
    for part in parts:
        # isdigit() alone also passes digits such as "²", which int() refuses.
        if not (part.isascii() and part.isdigit()):
            raise ClientError(422, f"{name} must be comma-separated object ids (integers >= 0), "
                                   f"got {part[:40]!r}")
        if int(part) > MAX_OBJECT_ID:
            raise ClientError(422, f"{name}: object id {part[:40]} is out of range (at most {MAX_OBJECT_ID})")
    return frozenset(int(part) for part in parts)


def _render_png(stored, view, mask: int, highlight: frozenset[int]) -> bytes:
    with client_errors():
        image = render(stored, view, mask, highlight)
    return encode_png(image)


@router.get("/scenes/{scene_id}/render", response_class=Response,
            responses={200: {**binary_answer("the PNG's bytes", {PNG: {"schema": {"type": "string",
                                                                                "format": "binary"}}},
                                             f"the image (PNG; the same bytes as {OCTET_STREAM} when Accept asks "
                                             f"for that before {PNG}); the camera used is in the {CAMERA_HEADER} "
                                             f"header")[200],
                             "headers": {CAMERA_HEADER: {"schema": {"type": "string"},
                                                         "description": "the camera as the JSON fields of a "
                                                                        "/pick/camera body"}}},
                       404: {"model": ErrorOut}, 413: {"model": ErrorOut}, 422: {"model": ErrorOut}})
async def render_scene(
        request: Request, stored: StoredSceneDep, settings: SettingsDep,
        position: Annotated[str | None, Query(description="x,y,z of the eye; default: framing the scene",
                                              examples=["0.3,-2,3"])] = None,
        target: Annotated[str | None, Query(description="x,y,z looked at; default: the scene's centre",
                                            examples=["0.3,0.3,0"])] = None,
        up: Annotated[str, Query(description="x,y,z; not parallel to target - position; default z up")] = DEFAULT_UP,
        fov_y_deg: Annotated[float, Query(gt=0, lt=180, allow_inf_nan=False,
                                          description="vertical field of view, degrees")] = DEFAULT_FOV_Y_DEG,
        width: Annotated[int, Query(ge=1, le=MAX_SIDE, examples=[64])] = DEFAULT_WIDTH,
        height: Annotated[int, Query(ge=1, le=MAX_SIDE, examples=[48])] = DEFAULT_HEIGHT,
        highlight: Annotated[str | None, Query(description="object ids to tint, comma-separated; ids of no "
                                                           "live object are ignored", examples=["0,2"])] = None,
        mask: Annotated[int | None, Query(ge=0, le=ALL_BITS, description="only objects whose mask shares a "
                                                                          "bit with this")] = None):
    """The scene through a pinhole camera as a PNG: one ray per pixel centre, each object in its
    own colour shaded by how squarely it faces the camera, misses grey, ``highlight`` ids tinted.
    Position and target default to a view of the whole scene; ``X-Camera`` gives the camera used."""
    refuse_unknown_query(request, QUERY_PARAMETERS)
    up_vector = parse_vector("up", up)
    if not any(up_vector):
        raise ClientError(422, "up must not be the zero vector")
    eye = None if position is None else parse_vector("position", position)
    centre = None if target is None else parse_vector("target", target)
    highlighted = frozenset() if highlight is None else parse_ids("highlight", highlight)
    limits.check_ray_count(width * height, settings, f"pixels ({width}x{height})")
    limits.check(limits.png(width, height), settings, f"a {width}x{height} render", ": ask for a smaller image")
    # A camera the service framed may still be refused (a tiny fov puts the eye too far away): say so.
    with client_errors("" if eye is not None else "with position left out, the framed camera is refused: "):
        view = frame_bounds(stored.view.bounds, up_vector, fov_y_deg, width, height, eye, centre)
        # Built here as well as in the render so that a bad camera is a 422 before any work.
        view.camera()
    count_rays(request, width * height)
    png = await run_in_threadpool(_render_png, stored, view, ALL_BITS if mask is None else mask, highlighted)
    return Response(png, media_type=OCTET_STREAM if wants_octet_stream(request, PNG) else PNG,
                    headers={CAMERA_HEADER: orjson.dumps(view.as_json()).decode(), "Cache-Control": "no-store"})
