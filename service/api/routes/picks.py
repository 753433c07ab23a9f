"""``/scenes/{id}/pick``: one ray, a batch (JSON, or binary at ``/pick/batch.bin``), or camera pixels.

A single ray is traced on the event loop: the serial kernel takes
microseconds, less than handing it to a worker thread would. Batches larger
than ``service.api.dual_form.INLINE_RAYS`` and camera picks run on worker threads (the kernels
release the GIL), so they never hold up other requests.
"""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import TypeAdapter

from .. import limits
from ..bodies import JSON, parse_json, parse_json_body, parse_plain_ray, read_body, require_json
from ..deps import SettingsDep, StoredSceneDep, count_rays, find_scene, scene_in_memory
from ..direct_route import DirectRoute
from ..dual_form import (AS_IN_JSON, JSON_RAYS, RAYS, DistanceQuery, DualForm, FlagQuery, IdsQuery, MaskQuery,
                         TmaxQuery, off_loop)
from ..openapi import EXAMPLES, JSON_FORM_ERRORS, QUERY_ERRORS, binary_form_responses, body_doc
from ..responses import JSONBytes
from ..schemas import (CAMERA_TAGS, AllHitsResult, BatchPickRequest, BatchPickResult, CameraPickRequest,
                       CameraPickResults, PickRequest, PickResult, RecordLayout)
from ...queries.picking import (RECORD_LAYOUTS, binary_batch, camera_pick, json_batch, pick_one,
                                query_options, window)

router = APIRouter(tags=["picks"])

#: The single-ray route, on a router of its own: see ``service.api.direct_route``.
direct_router = APIRouter(tags=["picks"], route_class=DirectRoute)

CAMERA_PICK = TypeAdapter(CameraPickRequest)

BINARY_BATCH = ("N rays of 24 bytes: ox, oy, oz, dx, dy, dz as little-endian float32. The answer is N "
                "records of 32 bytes: float32 t (inf on a miss), int32 object (-1), int32 triangle (-1), "
                "float32 u, float32 v, float32 nx, ny, nz (44 with records=primitive). Options go in the query "
                "string, each as the JSON form's body field of the same name. A segment or "
                "point hit (line_tolerance, point_tolerance) reads as triangle -1 with u, v and the normal NaN.")

QUERY_OPTIONS = ("tmin", "tmax", "cull_backfaces", "mask", "objects", "exclude", "alpha_test", "alpha_cutoff",
                 "line_tolerance", "point_tolerance", "records")

#: How ``/pick/batch`` reads its two forms.
BATCH = DualForm(RAYS, BatchPickRequest, "origins", QUERY_OPTIONS, "batch", JSON_RAYS, "a JSON batch",
                 limits.json_batch, ": send fewer rays, or use the binary form (32 bytes per ray)")

#: Camera pixels (``[0,0],`` at least) beside the list, ``objects``, ``exclude`` and the camera's
#: vectors or matrices (ten arrays at most).
PIXELS = limits.JsonItems("pixels", 6, 1, 13)


@direct_router.post("/scenes/{scene_id}/pick", response_model=PickResult | AllHitsResult, responses=QUERY_ERRORS,
             openapi_extra=body_doc(PickRequest, path_parameters=("scene_id",), examples=EXAMPLES["pick"]))
async def pick(request: Request):
    """The closest hit of one ray (``{"hit": false}`` on a miss); with ``all_hits``, every
    surface the ray crosses, sorted by t."""
    # A DirectRoute: the endpoint takes the request and answers a Response.
    store = request.app.state.store
    scene_id = request.path_params["scene_id"]
    # Awaiting a coroutine costs more than the lookup: only a reload from disk needs one.
    stored = scene_in_memory(store, scene_id) or await find_scene(store, scene_id)
    require_json(request)
    raw = await read_body(request)
    plain = parse_plain_ray(raw)
    if plain is not None:
        count_rays(request, 1)
        origin, direction = plain
        return JSONBytes(pick_one(stored, request.app.state.settings, origin, direction))
    body = parse_json(PickRequest, raw)
    count_rays(request, 1)
    return JSONBytes(pick_one(stored, request.app.state.settings, body.origin, body.direction, window(body),
                              body.cull_backfaces, body.all_hits))


RECORDS_DOC = ("`surface`, 32-byte records (float32 t, int32 object, int32 triangle, float32 u, v, nx, ny, nz); "
               "`primitive`, 44-byte records, the same then int32 primitive (0 triangle, 1 shape, 2 segment, "
               "3 point, -1 miss), int32 index (the segment's or the point's, else -1) and float32 s (the "
               "segment's parameter at the hit, else NaN)")


@router.post("/scenes/{scene_id}/pick/batch", response_model=BatchPickResult, responses=JSON_FORM_ERRORS,
             openapi_extra=body_doc(BatchPickRequest, examples=EXAMPLES["batch"]))
async def pick_batch(stored: StoredSceneDep, request: Request, settings: SettingsDep):
    """Many rays at once, JSON ``origins`` and ``directions``, answered column by column
    (``POST .../pick/batch.bin`` takes them packed)."""
    received = await BATCH.read_json(request, settings)
    return await received.answer(request, json_batch, stored, received.body)


@router.post("/scenes/{scene_id}/pick/batch.bin", response_class=Response,
             responses=binary_form_responses("N records of 32 bytes, 44 with records=primitive"),
             openapi_extra=body_doc(binary=BINARY_BATCH))
async def pick_batch_binary(
        stored: StoredSceneDep, request: Request, settings: SettingsDep,
        tmin: DistanceQuery = 0.0, tmax: TmaxQuery = None, cull_backfaces: FlagQuery = False,
        mask: MaskQuery = None, objects: IdsQuery = None, exclude: IdsQuery = None, alpha_test: FlagQuery = True,
        alpha_cutoff: Annotated[float, Query(ge=0, le=1, allow_inf_nan=False, description=AS_IN_JSON)] = 0.5,
        line_tolerance: DistanceQuery = 0.0, point_tolerance: DistanceQuery = 0.0,
        records: Annotated[RecordLayout, Query(description=RECORDS_DOC)] = "surface"):
    """Many rays at once as ``application/octet-stream`` (24 bytes each), answered as packed binary
    records: the form for large batches (``POST .../pick/batch`` takes JSON)."""
    layout = RECORD_LAYOUTS[records]
    received = await BATCH.read_binary(request, settings, layout.itemsize)
    options = query_options(tmin, tmax, mask, objects, exclude, alpha_test, alpha_cutoff, line_tolerance,
                            point_tolerance)
    return await received.answer(request, binary_batch, stored, received.data, cull_backfaces, options, layout)


@router.post("/scenes/{scene_id}/pick/camera", response_model=CameraPickResults, responses=QUERY_ERRORS,
             openapi_extra=body_doc(CameraPickRequest, examples=EXAMPLES["camera"]))
async def pick_camera(stored: StoredSceneDep, request: Request, settings: SettingsDep):
    """One pick per pixel of a camera (pinhole fields, or OpenGL ``view`` and ``projection``);
    each result carries its world ray (unit direction, so ``t`` is the distance). Pixels lie
    within the image: ``0 <= x <= width``, ``0 <= y <= height``."""
    require_json(request)
    raw = await request.body()
    PIXELS.check(raw, settings, lambda pixels: limits.camera_pick(pixels, stored.view), "a camera pick",
                 ": send fewer pixels per request")
    body = await parse_json_body(CAMERA_PICK, raw, CAMERA_TAGS)
    limits.check_ray_count(len(body.pixels), settings, "pixels")
    limits.check(limits.camera_pick(len(body.pixels), stored.view), settings,
                 f"a camera pick of {len(body.pixels)} pixels", ": send fewer pixels per request")
    count_rays(request, len(body.pixels))
    return Response(await off_loop(len(body.pixels), camera_pick, stored, body), media_type=JSON)
