"""Proximity queries: ``/scenes/{id}/closest``.

Same options, limits, errors and authentication as picks: the objects a
query searches are chosen by ``mask``, ``objects`` and ``exclude``; a request
holds at most ``PICK_MAX_RAYS`` points and answers at most
``PICK_MAX_RESPONSE_MB``; small requests run on the event loop, larger ones
on worker threads (the kernels release the GIL).
"""

import math
from typing import Annotated

import numpy as np
import orjson
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from ..bodies import JSON, OCTET_STREAM, media_type, parse_json_body, unsupported_media
from ..deps import SceneStoreDep, SettingsDep, find_scene
from ..errors import ClientError, client_errors
from ..openapi import EXAMPLES, body_doc
from .. import response_limits
from ..proximity import CLOSEST_COLUMNS, POINT_BYTES, closest_columns, closest_records
from ..responses import JSON_OPTIONS
from ..schemas import ClosestRequest, ClosestResult, ErrorOut
from ..settings import Settings
from .picks import ALL_BITS, ERRORS, check_ray_count, count_rays, off_loop

router = APIRouter(tags=["proximity"])

BINARY_CLOSEST = ("N points of 12 bytes: x, y, z as little-endian float32. The answer is N records of 44 "
                  "bytes: float32 distance (inf when nothing lies within max_distance), int32 object (-1), "
                  "int32 triangle (-1 for a shape or nothing), float32 u, float32 v, float32 point x, y, z, "
                  "float32 normal x, y, z (NaN for nothing). Options go in the query string.")

QUERY_OPTIONS = ("max_distance", "mask", "objects", "exclude")


def proximity_options(mask: int | None, objects, exclude) -> dict:
    """Keyword arguments choosing the searched objects: null ``mask`` is all bits."""
    return {"mask": ALL_BITS if mask is None else mask, "objects": objects, "exclude": exclude}


def check_binary_points(size: int, settings: Settings) -> int:
    """The number of points in a binary body of ``size`` bytes; 422 unless whole and some, 413 past the limits."""
    if size % POINT_BYTES:
        raise ClientError(422, f"the binary body has {size} bytes, which is not a whole number of points "
                               f"({POINT_BYTES} bytes each: 3 little-endian float32)")
    if not size:
        raise ClientError(422, "the binary body is empty: send at least one point")
    count = size // POINT_BYTES
    check_ray_count(count, settings, "points")
    response_limits.check(response_limits.binary_closest(count), settings, f"a binary query of {count} points",
                          ": send fewer points per request")
    return count


def _closest(stored, points: np.ndarray, max_distance: float, options: dict):
    with client_errors():
        nearest, _ = stored.consistent(lambda scene: scene.closest_point(points, max_distance, **options))
    return nearest


def _binary_closest(stored, data: bytes, max_distance: float, options: dict) -> bytes:
    points = np.frombuffer(data, "<f4").reshape(-1, 3).astype(np.float64)
    return closest_records(_closest(stored, points, max_distance, options))


def _json_closest(stored, body: ClosestRequest) -> bytes:
    if not body.points:
        return orjson.dumps({name: [] for name in CLOSEST_COLUMNS})
    options = proximity_options(body.mask, body.objects, body.exclude)
    limit = math.inf if body.max_distance is None else body.max_distance
    nearest = _closest(stored, np.array(body.points, np.float64), limit, options)
    return orjson.dumps(closest_columns(nearest), option=JSON_OPTIONS)


@router.post("/scenes/{scene_id}/closest", response_model=ClosestResult,
             responses={**ERRORS, 415: {"model": ErrorOut},
                        200: {"content": {"application/octet-stream": {"schema": {
                                  "type": "string", "format": "binary",
                                  "description": "for an application/octet-stream body: 44-byte records"}}},
                              "description": "columnar JSON for a JSON body, binary records for a binary body"}},
             openapi_extra=body_doc(ClosestRequest, binary=BINARY_CLOSEST, examples=EXAMPLES["closest"]))
async def closest(
        scene_id: str, request: Request, store: SceneStoreDep, settings: SettingsDep,
        max_distance: Annotated[float | None, Query(ge=0, allow_inf_nan=False,
                                                    description="binary form only; unbounded if absent")] = None,
        mask: Annotated[int | None, Query(ge=0, le=ALL_BITS, description="binary form only")] = None,
        objects: Annotated[list[int] | None, Query(description="binary form only, repeat per id")] = None,
        exclude: Annotated[list[int] | None, Query(description="binary form only, repeat per id")] = None):
    """The nearest surface point of the scene to each world point: its object, face,
    barycentrics, distance and normal. JSON ``points`` are answered column by column,
    ``application/octet-stream`` points as packed binary records."""
    stored = await find_scene(store, scene_id)
    media = media_type(request)
    if media == OCTET_STREAM:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit():
            check_ray_count(int(declared) // POINT_BYTES, settings, "points")
        data = await request.body()
        count = check_binary_points(len(data), settings)
        count_rays(request, count)
        limit = math.inf if max_distance is None else max_distance
        return Response(await off_loop(count, _binary_closest, stored, data, limit,
                                       proximity_options(mask, objects, exclude)),
                        media_type=OCTET_STREAM)
    if media != JSON:
        raise unsupported_media(media, "application/json or application/octet-stream")
    given = [name for name in QUERY_OPTIONS if name in request.query_params]
    if given:
        raise ClientError(422, f"query options ({', '.join(given)}) are for the binary form; "
                               "a JSON query takes its options in the body")
    body = await parse_json_body(ClosestRequest, await request.body())
    check_ray_count(len(body.points), settings, "points")
    response_limits.check(response_limits.json_closest(len(body.points)), settings,
                          f"a JSON query of {len(body.points)} points",
                          ": send fewer points, or use the binary form (44 bytes per point)")
    count_rays(request, len(body.points))
    return Response(await off_loop(len(body.points), _json_closest, stored, body), media_type=JSON)
