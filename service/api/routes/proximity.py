"""Proximity and shape queries: ``/scenes/{id}/closest``, ``/sphere-cast``,
``/contains`` and ``/overlap``.

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
from starlette.concurrency import run_in_threadpool

from ..bodies import JSON, OCTET_STREAM, media_type, parse_json_body, require_json, unsupported_media
from ..deps import SceneStoreDep, SettingsDep, find_scene
from ..errors import ClientError, client_errors
from ..openapi import EXAMPLES, body_doc
from .. import limits as response_limits
from ...queries.proximity import (CLOSEST_COLUMNS, POINT_BYTES, SPHERE_COLUMNS, closest_columns, closest_records,
                         contains_records, sphere_columns, sphere_records)
from ..responses import JSON_OPTIONS
from ...queries.picking import RAY_BYTES
from ..schemas import (ClosestRequest, ClosestResult, ContainsRequest, ContainsResult, ErrorOut, OverlapRequest,
                       SelectResult, SphereCastRequest, SphereCastResult)
from ...settings import Settings
from .picks import ALL_BITS, ERRORS, check_binary_rays, check_ray_count, count_rays, off_loop, query_window
from .select import selection_answer

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


# ------------------------------------------------------------------ sphere casts

BINARY_SPHERE_CAST = ("N rays of 24 bytes: ox, oy, oz, dx, dy, dz as little-endian float32; the radius and the "
                      "other options go in the query string. The answer is N records of 44 bytes: float32 t (inf "
                      "on a miss), int32 object (-1), int32 triangle (-1 for a shape or a miss), float32 u, v, "
                      "float32 contact point x, y, z, float32 contact normal x, y, z.")

SPHERE_QUERY_OPTIONS = ("radius", "tmin", "tmax", "mask", "objects", "exclude")


def _sphere_cast(stored, origins, directions, radius, options):
    with client_errors():
        hits, _ = stored.consistent(lambda scene: scene.sphere_cast(origins, directions, radius, **options))
    return hits


def _binary_sphere_cast(stored, data: bytes, radius: float, options: dict) -> bytes:
    rays = np.frombuffer(data, "<f4").reshape(-1, 6).astype(np.float64)
    return sphere_records(_sphere_cast(stored, rays[:, :3], rays[:, 3:], radius, options))


def _json_sphere_cast(stored, body: SphereCastRequest) -> bytes:
    if not body.origins:
        return orjson.dumps({name: [] for name in SPHERE_COLUMNS})
    options = query_window(body.tmin, body.tmax, body.mask, body.objects, body.exclude)
    hits = _sphere_cast(stored, np.array(body.origins, np.float64), np.array(body.directions, np.float64),
                        body.radius, options)
    return orjson.dumps(sphere_columns(hits), option=JSON_OPTIONS)


@router.post("/scenes/{scene_id}/sphere-cast", response_model=SphereCastResult,
             responses={**ERRORS, 415: {"model": ErrorOut},
                        200: {"content": {"application/octet-stream": {"schema": {
                                  "type": "string", "format": "binary",
                                  "description": "for an application/octet-stream body: 44-byte records"}}},
                              "description": "columnar JSON for a JSON body, binary records for a binary body"}},
             openapi_extra=body_doc(SphereCastRequest, binary=BINARY_SPHERE_CAST, examples=EXAMPLES["sphere_cast"]))
async def sphere_cast(
        scene_id: str, request: Request, store: SceneStoreDep, settings: SettingsDep,
        radius: Annotated[float | None, Query(ge=0, allow_inf_nan=False,
                                              description="binary form only, and required there")] = None,
        tmin: Annotated[float, Query(ge=0, allow_inf_nan=False, description="binary form only")] = 0.0,
        tmax: Annotated[float | None, Query(ge=0, allow_inf_nan=False, description="binary form only")] = None,
        mask: Annotated[int | None, Query(ge=0, le=ALL_BITS, description="binary form only")] = None,
        objects: Annotated[list[int] | None, Query(description="binary form only, repeat per id")] = None,
        exclude: Annotated[list[int] | None, Query(description="binary form only, repeat per id")] = None):
    """The first contact of a sphere of ``radius`` swept along each ray: where its centre is
    (``t``), the point it touches and the contact normal. Radius 0 is a ray pick. JSON
    ``origins``, ``directions`` are answered column by column, ``application/octet-stream``
    rays as packed binary records."""
    stored = await find_scene(store, scene_id)
    media = media_type(request)
    if media == OCTET_STREAM:
        if radius is None:
            raise ClientError(422, "a binary sphere cast needs its radius in the query string: ?radius=0.5")
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit():
            check_ray_count(int(declared) // RAY_BYTES, settings)
        data = await request.body()
        check_binary_rays(len(data), settings)
        count = len(data) // RAY_BYTES
        count_rays(request, count)
        return Response(await off_loop(count, _binary_sphere_cast, stored, data, radius,
                                       query_window(tmin, tmax, mask, objects, exclude)),
                        media_type=OCTET_STREAM)
    if media != JSON:
        raise unsupported_media(media, "application/json or application/octet-stream")
    given = [name for name in SPHERE_QUERY_OPTIONS if name in request.query_params]
    if given:
        raise ClientError(422, f"query options ({', '.join(given)}) are for the binary form; "
                               "a JSON query takes its options in the body")
    body = await parse_json_body(SphereCastRequest, await request.body())
    check_ray_count(len(body.origins), settings)
    response_limits.check(response_limits.json_closest(len(body.origins)), settings,
                          f"a JSON sphere cast of {len(body.origins)} rays",
                          ": send fewer rays, or use the binary form (44 bytes per ray)")
    count_rays(request, len(body.origins))
    return Response(await off_loop(len(body.origins), _json_sphere_cast, stored, body), media_type=JSON)


# ------------------------------------------------------------------ containment

BINARY_CONTAINS = ("N points of 12 bytes: x, y, z as little-endian float32; options go in the query string. The "
                   "answer is N records of 8 bytes: int32 object (-1 outside every object), float32 signed "
                   "distance (NaN unless ?signed_distance=true).")

CONTAINS_QUERY_OPTIONS = ("signed_distance", "mask", "objects", "exclude")


def _contains(stored, points: np.ndarray, signed: bool, options: dict):
    """``(objects (N,), signed distances (N,) or None)``."""
    def query(scene):
        inside = scene.contains(points, **options)
        return inside.object, (scene.signed_distance(points, **options) if signed else None)

    with client_errors():
        answer, _ = stored.consistent(query)
    return answer


def _binary_contains(stored, data: bytes, signed: bool, options: dict) -> bytes:
    points = np.frombuffer(data, "<f4").reshape(-1, 3).astype(np.float64)
    return contains_records(*_contains(stored, points, signed, options))


def _json_contains(stored, body: ContainsRequest) -> bytes:
    if not body.points:
        return orjson.dumps({"inside": [], "object": [], "signed_distance": [] if body.signed_distance else None})
    objects, signed = _contains(stored, np.array(body.points, np.float64), body.signed_distance,
                                proximity_options(body.mask, body.objects, body.exclude))
    return orjson.dumps({"inside": objects >= 0, "object": objects, "signed_distance": signed},
                        option=JSON_OPTIONS)


@router.post("/scenes/{scene_id}/contains", response_model=ContainsResult,
             responses={**ERRORS, 415: {"model": ErrorOut},
                        200: {"content": {"application/octet-stream": {"schema": {
                                  "type": "string", "format": "binary",
                                  "description": "for an application/octet-stream body: 8-byte records"}}},
                              "description": "JSON for a JSON body, binary records for a binary body"}},
             openapi_extra=body_doc(ContainsRequest, binary=BINARY_CONTAINS, examples=EXAMPLES["contains"]))
async def contains(
        scene_id: str, request: Request, store: SceneStoreDep, settings: SettingsDep,
        signed_distance: Annotated[bool, Query(description="binary form only")] = False,
        mask: Annotated[int | None, Query(ge=0, le=ALL_BITS, description="binary form only")] = None,
        objects: Annotated[list[int] | None, Query(description="binary form only, repeat per id")] = None,
        exclude: Annotated[list[int] | None, Query(description="binary form only, repeat per id")] = None):
    """Whether each world point lies inside a closed object of the scene (by generalised
    winding number), which object, and on request the signed distance to the nearest surface
    (negative inside)."""
    stored = await find_scene(store, scene_id)
    media = media_type(request)
    if media == OCTET_STREAM:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit():
            check_ray_count(int(declared) // POINT_BYTES, settings, "points")
        data = await request.body()
        count = check_binary_points(len(data), settings)
        count_rays(request, count)
        return Response(await off_loop(count, _binary_contains, stored, data, signed_distance,
                                       proximity_options(mask, objects, exclude)),
                        media_type=OCTET_STREAM)
    if media != JSON:
        raise unsupported_media(media, "application/json or application/octet-stream")
    given = [name for name in CONTAINS_QUERY_OPTIONS if name in request.query_params]
    if given:
        raise ClientError(422, f"query options ({', '.join(given)}) are for the binary form; "
                               "a JSON query takes its options in the body")
    body = await parse_json_body(ContainsRequest, await request.body())
    check_ray_count(len(body.points), settings, "points")
    response_limits.check(response_limits.json_closest(len(body.points)), settings,
                          f"a JSON query of {len(body.points)} points",
                          ": send fewer points, or use the binary form (8 bytes per point)")
    count_rays(request, len(body.points))
    return Response(await off_loop(len(body.points), _json_contains, stored, body), media_type=JSON)


# ------------------------------------------------------------------ overlap

def _region(shape) -> dict:
    """The engine's shape dict of a request's region."""
    return shape.model_dump()


def _overlap(stored, body: OverlapRequest, settings: Settings) -> bytes:
    options = proximity_options(body.mask, body.objects, body.exclude)
    with client_errors():
        selection, view = stored.consistent(lambda scene: scene.overlap(
            _region(body.shape), triangles=body.mode == "triangles", **options))
    return selection_answer(selection, view, body.mode, settings, "an overlap",
                            ": use a smaller region, or mode \"objects\"")


@router.post("/scenes/{scene_id}/overlap", response_model=SelectResult,
             responses={404: {"model": ErrorOut}, 413: {"model": ErrorOut}, 415: {"model": ErrorOut},
                        422: {"model": ErrorOut}},
             openapi_extra=body_doc(OverlapRequest, examples=EXAMPLES["overlap"]))
async def overlap(scene_id: str, request: Request, store: SceneStoreDep, settings: SettingsDep):
    """The objects that touch a solid region of world space (a sphere, an axis-aligned or
    oriented box, a capsule, or a convex region given by half-spaces), exactly on their
    triangles; ``mode: "triangles"`` also lists each object's faces that touch it."""
    stored = await find_scene(store, scene_id)
    require_json(request)
    body = await parse_json_body(OverlapRequest, await request.body())
    # One region may touch the whole scene: always on a worker thread, answer included.
    return Response(await run_in_threadpool(_overlap, stored, body, settings), media_type=JSON)
