"""Proximity and shape queries: ``/scenes/{id}/closest``, ``/sphere-cast``,
``/contains`` (each also packed binary, at ``.bin``) and ``/overlap``.

Same options, limits, errors and authentication as picks: the objects a
query searches are chosen by ``mask``, ``objects`` and ``exclude``; a request
holds at most ``PICK_MAX_RAYS`` points and answers at most
``PICK_MAX_RESPONSE_MB``; small requests run on the event loop, larger ones
on worker threads (the kernels release the GIL).
"""

import math
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from .. import limits
from ..bodies import JSON, parse_json_body, require_json
from ..deps import SettingsDep, StoredSceneDep
from ..dual_form import (AS_IN_JSON, JSON_POINTS, JSON_RAYS, POINTS, RAYS, DistanceQuery, DualForm, FlagQuery,
                         IdsQuery, MaskQuery, TmaxQuery)
from ..openapi import EXAMPLES, JSON_FORM_ERRORS, binary_form_responses, body_doc
from ..schemas import (ClosestRequest, ClosestResult, ContainsRequest, ContainsResult, ErrorOut, OverlapRequest,
                       SelectResult, SphereCastRequest, SphereCastResult)
from ...queries.picking import query_window
from ...queries.proximity import (CLOSEST_RECORD, CONTAINS_RECORD, SPHERE_RECORD, binary_closest, binary_contains,
                                  binary_sphere_cast, json_closest, json_contains, json_sphere_cast,
                                  proximity_options)
from ...queries.selection import overlap as overlap_answer

router = APIRouter(tags=["proximity"])

BINARY_CLOSEST = ("N points of 12 bytes: x, y, z as little-endian float32. The answer is N records of 44 "
                  "bytes: float32 distance (inf when nothing lies within max_distance), int32 object (-1), "
                  "int32 triangle (-1 for a shape or nothing), float32 u, float32 v, float32 point x, y, z, "
                  "float32 normal x, y, z (NaN for nothing). Options go in the query string, each as the JSON "
                  "form's body field of the same name.")

#: How ``/closest`` reads its two forms.
CLOSEST = DualForm(POINTS, ClosestRequest, "points", ("max_distance", "mask", "objects", "exclude"), "query",
                   JSON_POINTS, "a JSON query", limits.json_closest,
                   ": send fewer points, or use the binary form (44 bytes per point)")


@router.post("/scenes/{scene_id}/closest", response_model=ClosestResult, responses=JSON_FORM_ERRORS,
             openapi_extra=body_doc(ClosestRequest, examples=EXAMPLES["closest"]))
async def closest(stored: StoredSceneDep, request: Request, settings: SettingsDep):
    """The nearest surface point of the scene to each world point: its object, face,
    barycentrics, distance and normal. JSON ``points`` are answered column by column
    (``POST .../closest.bin`` takes them packed)."""
    received = await CLOSEST.read_json(request, settings)
    return await received.answer(request, json_closest, stored, received.body)


@router.post("/scenes/{scene_id}/closest.bin", response_class=Response,
             responses=binary_form_responses("N records of 44 bytes"), openapi_extra=body_doc(binary=BINARY_CLOSEST))
async def closest_binary(
        stored: StoredSceneDep, request: Request, settings: SettingsDep,
        max_distance: Annotated[float | None, Query(ge=0, allow_inf_nan=False,
                                                    description=AS_IN_JSON + "; absent: unbounded")] = None,
        mask: MaskQuery = None, objects: IdsQuery = None, exclude: IdsQuery = None):
    """:func:`closest` for ``application/octet-stream`` points (12 bytes each), answered as packed
    binary records."""
    received = await CLOSEST.read_binary(request, settings, CLOSEST_RECORD.itemsize)
    limit = math.inf if max_distance is None else max_distance
    return await received.answer(request, binary_closest, stored, received.data, limit,
                                 proximity_options(mask, objects, exclude))


# ------------------------------------------------------------------ sphere casts

BINARY_SPHERE_CAST = ("N rays of 24 bytes: ox, oy, oz, dx, dy, dz as little-endian float32; the radius and the "
                      "other options go in the query string, each as the JSON form's body field of the same "
                      "name. The answer is N records of 44 bytes: float32 t (inf on a miss), int32 object (-1), "
                      "int32 triangle (-1 for a shape or a miss), float32 u, v, float32 contact point x, y, z, "
                      "float32 contact normal x, y, z.")

#: How ``/sphere-cast`` reads its two forms.
SPHERE_CAST = DualForm(RAYS, SphereCastRequest, "origins", ("radius", "tmin", "tmax", "mask", "objects", "exclude"),
                       "query", JSON_RAYS, "a JSON sphere cast", limits.json_closest,
                       ": send fewer rays, or use the binary form (44 bytes per ray)")


@router.post("/scenes/{scene_id}/sphere-cast", response_model=SphereCastResult, responses=JSON_FORM_ERRORS,
             openapi_extra=body_doc(SphereCastRequest, examples=EXAMPLES["sphere_cast"]))
async def sphere_cast(stored: StoredSceneDep, request: Request, settings: SettingsDep):
    """The first contact of a sphere of ``radius`` swept along each ray: where its centre is
    (``t``), the point it touches and the contact normal. Radius 0 is a ray pick. JSON
    ``origins``, ``directions`` are answered column by column (``POST .../sphere-cast.bin``
    takes them packed)."""
    received = await SPHERE_CAST.read_json(request, settings)
    return await received.answer(request, json_sphere_cast, stored, received.body)


@router.post("/scenes/{scene_id}/sphere-cast.bin", response_class=Response,
             responses=binary_form_responses("N records of 44 bytes"),
             openapi_extra=body_doc(binary=BINARY_SPHERE_CAST))
async def sphere_cast_binary(
        stored: StoredSceneDep, request: Request, settings: SettingsDep,
        radius: Annotated[float, Query(ge=0, allow_inf_nan=False, description="the sphere's radius")],
        tmin: DistanceQuery = 0.0, tmax: TmaxQuery = None,
        mask: MaskQuery = None, objects: IdsQuery = None, exclude: IdsQuery = None):
    """:func:`sphere_cast` for ``application/octet-stream`` rays (24 bytes each), answered as packed
    binary records."""
    received = await SPHERE_CAST.read_binary(request, settings, SPHERE_RECORD.itemsize)
    return await received.answer(request, binary_sphere_cast, stored, received.data, radius,
                                 query_window(tmin, tmax, mask, objects, exclude))


# ------------------------------------------------------------------ containment

BINARY_CONTAINS = ("N points of 12 bytes: x, y, z as little-endian float32; options go in the query string, each "
                   "as the JSON form's body field of the same name. The answer is N records of 8 bytes: int32 "
                   "object (-1 outside every object), float32 signed distance (NaN unless ?signed_distance=true).")

#: How ``/contains`` reads its two forms.
CONTAINS = DualForm(POINTS, ContainsRequest, "points", ("signed_distance", "mask", "objects", "exclude"), "query",
                    JSON_POINTS, "a JSON query", limits.json_closest,
                    ": send fewer points, or use the binary form (8 bytes per point)")


@router.post("/scenes/{scene_id}/contains", response_model=ContainsResult, responses=JSON_FORM_ERRORS,
             openapi_extra=body_doc(ContainsRequest, examples=EXAMPLES["contains"]))
async def contains(stored: StoredSceneDep, request: Request, settings: SettingsDep):
    """Whether each world point lies inside a closed object of the scene (by generalised
    winding number), which object, and on request the signed distance to the nearest surface
    (negative inside). ``POST .../contains.bin`` takes the points packed."""
    received = await CONTAINS.read_json(request, settings)
    return await received.answer(request, json_contains, stored, received.body)


@router.post("/scenes/{scene_id}/contains.bin", response_class=Response,
             responses=binary_form_responses("N records of 8 bytes"), openapi_extra=body_doc(binary=BINARY_CONTAINS))
async def contains_binary(
        stored: StoredSceneDep, request: Request, settings: SettingsDep,
        signed_distance: FlagQuery = False,
        mask: MaskQuery = None, objects: IdsQuery = None, exclude: IdsQuery = None):
    """:func:`contains` for ``application/octet-stream`` points (12 bytes each), answered as packed
    binary records."""
    received = await CONTAINS.read_binary(request, settings, CONTAINS_RECORD.itemsize)
    return await received.answer(request, binary_contains, stored, received.data, signed_distance,
                                 proximity_options(mask, objects, exclude))


# ------------------------------------------------------------------ overlap

@router.post("/scenes/{scene_id}/overlap", response_model=SelectResult,
             responses={404: {"model": ErrorOut}, 413: {"model": ErrorOut}, 415: {"model": ErrorOut},
                        422: {"model": ErrorOut}},
             openapi_extra=body_doc(OverlapRequest, examples=EXAMPLES["overlap"]))
async def overlap(stored: StoredSceneDep, request: Request, settings: SettingsDep):
    """The objects that touch a solid region of world space (a sphere, an axis-aligned or
    oriented box, a capsule, or a convex region given by half-spaces), exactly on their
    triangles; ``mode: "triangles"`` also lists each object's faces that touch it."""
    require_json(request)
    body = await parse_json_body(OverlapRequest, await request.body())
    # One region may touch the whole scene: always on a worker thread, answer included.
    return Response(await run_in_threadpool(overlap_answer, stored, body, settings), media_type=JSON)
