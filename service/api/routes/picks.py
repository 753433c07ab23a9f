"""``/scenes/{id}/pick``: one ray, a batch (JSON or binary), or camera pixels.

A single ray is traced on the event loop: the serial kernel takes
microseconds, less than handing it to a worker thread would. Batches larger
than ``INLINE_RAYS`` and camera picks run on worker threads (the kernels
release the GIL), so they never hold up other requests.
"""

import math
from typing import Annotated

import numpy as np
import orjson
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import TypeAdapter
from starlette.concurrency import run_in_threadpool

from bvh.camera import Camera

from ..bodies import (JSON, OCTET_STREAM, media_type, parse_json, parse_json_body, parse_plain_ray, read_body,
                      require_json, unsupported_media)
from ..deps import SceneStoreDep, SettingsDep, find_scene, scene_in_memory
from ..direct_route import DirectRoute
from ..errors import ClientError, client_errors
from ..openapi import EXAMPLES, body_doc
from .. import limits as response_limits
from ...queries.picking import (RAY_BYTES, RECORD, RECORD_LAYOUTS, all_hit_results, batch_columns, batch_records, results,
                       single_result)
from ..responses import JSON_OPTIONS, JSONBytes
from ..schemas import (AllHitsResult, BatchPickRequest, BatchPickResult, CameraPickRequest, CameraPickResults,
                       ErrorOut, MatrixCamera, PickOptions, PickRequest, PickResult, RecordLayout)
from ...settings import Settings

router = APIRouter(tags=["picks"])

#: The single-ray route, on a router of its own: see ``service.api.direct_route``.
direct_router = APIRouter(tags=["picks"], route_class=DirectRoute)

#: Batches up to this many rays are traced on the event loop (see the module notes).
INLINE_RAYS = 64

ALL_BITS = 0xFFFFFFFF
CAMERA_PICK = TypeAdapter(CameraPickRequest)
CAMERA_TAGS = frozenset({"pinhole", "matrices"})

BINARY_BATCH = ("N rays of 24 bytes: ox, oy, oz, dx, dy, dz as little-endian float32. The answer is N "
                "records of 32 bytes: float32 t (inf on a miss), int32 object (-1), int32 triangle (-1), "
                "float32 u, float32 v, float32 nx, ny, nz. Options go in the query string. A segment or "
                "point hit (line_tolerance, point_tolerance) reads as triangle -1 with u, v and the normal NaN.")

ERRORS = {404: {"model": ErrorOut}, 413: {"model": ErrorOut}, 422: {"model": ErrorOut}}


#: ``Scene.intersect``'s tolerances for line and point objects, which only a closest-hit pick takes.
TOLERANCES = ("line_tolerance", "point_tolerance", "line_slope", "point_slope")


def window(options: PickOptions) -> dict:
    """Keyword arguments of ``Scene.intersect`` from a request's options."""
    found = {**query_window(options.tmin, options.tmax, options.mask, options.objects, options.exclude),
             **alpha_options(options.alpha_test, options.alpha_cutoff)}
    if options.line_tolerance:
        found["line_tolerance"] = options.line_tolerance
    if options.point_tolerance:
        found["point_tolerance"] = options.point_tolerance
    return found


def surface_window(options: dict) -> dict:
    """``options`` without the line and point tolerances, for queries that skip lines and points."""
    return {name: value for name, value in options.items() if name not in TOLERANCES}


def alpha_options(alpha_test: bool, alpha_cutoff: float) -> dict:
    """The alpha-test keyword arguments of ``Scene.intersect`` (``bvh.queries.alpha``)."""
    return {"alpha_test": alpha_test, "alpha_cutoff": alpha_cutoff}


def query_window(tmin: float, tmax: float | None, mask: int | None, objects, exclude) -> dict:
    """Keyword arguments of ``Scene.intersect``: null ``tmax`` is unbounded, null ``mask`` all bits."""
    if tmax is not None and tmax < tmin:
        raise ClientError(422, f"tmax ({tmax}) must not be less than tmin ({tmin})")
    return {"tmin": tmin, "tmax": math.inf if tmax is None else tmax, "mask": ALL_BITS if mask is None else mask,
            "objects": objects, "exclude": exclude}


#: ``query_window`` of a pick that sets no option.
DEFAULT_WINDOW = query_window(0.0, None, None, None, None)


def check_ray_count(count: int, settings: Settings, what: str = "rays") -> None:
    if count > settings.max_rays:
        raise ClientError(413, f"{count} {what} in one request; the limit is {settings.max_rays} (PICK_MAX_RAYS)")


def count_rays(request: Request, count: int) -> None:
    request.app.state.metrics.count_rays(count)


@direct_router.post("/scenes/{scene_id}/pick", response_model=PickResult | AllHitsResult, responses=ERRORS,
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


def pick_one(stored, settings: Settings, origin_list: list, direction_list: list, options: dict = DEFAULT_WINDOW,
             cull_backfaces: bool = False, all_hits: bool = False) -> dict:
    """The answer of a one-ray pick, as ``POST /scenes/{id}/pick`` sends it (also the live channel's).

    Parameters
    ----------
    stored : StoredScene
    settings : Settings
        For the answer limit of an ``all_hits`` pick.
    origin_list, direction_list : list of 3 float
        Validated: finite, the direction not zero.
    options : dict
        :func:`query_window`'s keyword arguments.

    Raises
    ------
    ClientError
        422 or 404 for what the scene refuses (unknown object filters, origins out of range), 413
        for an ``all_hits`` answer over ``PICK_MAX_RESPONSE_MB``.
    """
    origin = np.array(origin_list, np.float64)
    direction = np.array(direction_list, np.float64)
    if all_hits:
        with client_errors():
            every, view = stored.consistent(
                lambda scene: scene.intersect_all(origin, direction, **surface_window(options)))
        # Only the query tells how many surfaces the ray crosses: checked before the answer is built.
        crossed = every.t.shape[0]
        response_limits.check(response_limits.all_hits(crossed, view), settings,
                              f"an all_hits pick crossing {crossed} surfaces",
                              ": narrow it with tmin and tmax, mask, objects or exclude")
        return {"hits": all_hit_results(stored, view, every, math.hypot(*direction_list))}
    with client_errors():
        hits, view = stored.consistent(
            lambda scene: scene.intersect(origin, direction, cull_backfaces=cull_backfaces, **options))
    return single_result(stored, view, hits, math.hypot(*direction_list))


def _trace(stored, origins, directions, cull_backfaces, options):
    with client_errors():
        return stored.consistent(lambda scene: scene.intersect(origins, directions, cull_backfaces=cull_backfaces,
                                                               **options))


async def off_loop(rays: int, function, *args):
    """``function(*args)``: on a worker thread (the kernels release the GIL), unless
    ``rays`` is so small that the thread hop would cost more than the work."""
    if rays <= INLINE_RAYS:
        return function(*args)
    return await run_in_threadpool(function, *args)


QUERY_OPTIONS = ("tmin", "tmax", "cull_backfaces", "mask", "objects", "exclude", "alpha_test", "alpha_cutoff",
                 "line_tolerance", "point_tolerance", "records")

RECORDS_DOC = ("binary form only: `surface`, 32-byte records (float32 t, int32 object, int32 triangle, float32 u, "
               "v, nx, ny, nz); `primitive`, 44-byte records, the same then int32 primitive (0 triangle, 1 shape, "
               "2 segment, 3 point, -1 miss), int32 index (the segment's or the point's, else -1) and float32 s "
               "(the segment's parameter at the hit, else NaN)")


@router.post("/scenes/{scene_id}/pick/batch", response_model=BatchPickResult,
             responses={**ERRORS, 415: {"model": ErrorOut},
                        200: {"content": {"application/octet-stream": {"schema": {
                                  "type": "string", "format": "binary",
                                  "description": "for an application/octet-stream body: 32-byte records, "
                                                 "44-byte with records=primitive"}}},
                              "description": "columnar JSON for a JSON body, binary records for a binary body"}},
             openapi_extra=body_doc(BatchPickRequest, binary=BINARY_BATCH, examples=EXAMPLES["batch"]))
async def pick_batch(
        scene_id: str, request: Request, store: SceneStoreDep, settings: SettingsDep,
        tmin: Annotated[float, Query(ge=0, allow_inf_nan=False, description="binary form only")] = 0.0,
        tmax: Annotated[float | None, Query(ge=0, allow_inf_nan=False, description="binary form only")] = None,
        cull_backfaces: Annotated[bool, Query(description="binary form only")] = False,
        mask: Annotated[int | None, Query(ge=0, le=ALL_BITS, description="binary form only")] = None,
        objects: Annotated[list[int] | None, Query(description="binary form only, repeat per id")] = None,
        exclude: Annotated[list[int] | None, Query(description="binary form only, repeat per id")] = None,
        alpha_test: Annotated[bool, Query(description="binary form only")] = True,
        alpha_cutoff: Annotated[float, Query(ge=0, le=1, allow_inf_nan=False, description="binary form only")] = 0.5,
        line_tolerance: Annotated[float, Query(ge=0, allow_inf_nan=False, description="binary form only")] = 0.0,
        point_tolerance: Annotated[float, Query(ge=0, allow_inf_nan=False, description="binary form only")] = 0.0,
        records: Annotated[RecordLayout, Query(description=RECORDS_DOC)] = "surface"):
    """Many rays at once: JSON ``origins`` and ``directions`` answered column by column, or
    ``application/octet-stream`` rays answered as packed binary records."""
    stored = await find_scene(store, scene_id)
    media = media_type(request)
    if media == OCTET_STREAM:
        declared = request.headers.get("content-length")
        layout = RECORD_LAYOUTS[records]
        if declared is not None and declared.isdigit():
            check_ray_count(int(declared) // RAY_BYTES, settings)
            check_binary_answer(int(declared) // RAY_BYTES, settings, layout)
        data = await request.body()
        check_binary_rays(len(data), settings, layout=layout)
        options = {**query_window(tmin, tmax, mask, objects, exclude), **alpha_options(alpha_test, alpha_cutoff)}
        if line_tolerance:
            options["line_tolerance"] = line_tolerance
        if point_tolerance:
            options["point_tolerance"] = point_tolerance
        count = len(data) // RAY_BYTES
        count_rays(request, count)
        return Response(await off_loop(count, binary_batch, stored, data, cull_backfaces, options, layout),
                        media_type=OCTET_STREAM)
    if media != JSON:
        raise unsupported_media(media, "application/json or application/octet-stream")
    given = [name for name in QUERY_OPTIONS if name in request.query_params]
    if given:
        raise ClientError(422, f"query options ({', '.join(given)}) are for the binary form; "
                               "a JSON batch takes its options in the body")
    body = await parse_json_body(BatchPickRequest, await request.body())
    check_ray_count(len(body.origins), settings)
    response_limits.check(response_limits.json_batch(len(body.origins)), settings,
                          f"a JSON batch of {len(body.origins)} rays",
                          ": send fewer rays, or use the binary form (32 bytes per ray)")
    count_rays(request, len(body.origins))
    return Response(await off_loop(len(body.origins), _json_batch, stored, body), media_type=JSON)


def check_binary_rays(size: int, settings: Settings, what: str = "the binary body", layout: np.dtype = RECORD) -> None:
    """Refuse binary rays of ``size`` bytes that are not whole rays, none, or too many (422, 413).

    Parameters
    ----------
    what : str
        Where the rays were, in words: ``"the binary body"`` of ``/pick/batch``, the live
        channel's binary frame.
    """
    if size % RAY_BYTES:
        raise ClientError(422, f"{what} has {size} bytes, which is not a whole number of rays "
                               f"({RAY_BYTES} bytes each: 6 little-endian float32)")
    if not size:
        raise ClientError(422, f"{what} is empty: send at least one ray")
    check_ray_count(size // RAY_BYTES, settings)
    check_binary_answer(size // RAY_BYTES, settings, layout)


def check_binary_answer(count: int, settings: Settings, layout: np.dtype = RECORD) -> None:
    """413 when the binary answer of ``count`` rays of ``layout`` would exceed ``PICK_MAX_RESPONSE_MB``."""
    response_limits.check(response_limits.binary_batch(count, layout.itemsize), settings,
                          f"a binary batch of {count} rays", ": send fewer rays per request")


def binary_batch(stored, data: bytes, cull_backfaces: bool, options: dict, layout: np.dtype = RECORD) -> bytes:
    """The records of a binary batch (``data``: whole rays, checked by :func:`check_binary_rays`), each
    of ``layout`` (``service.picking.RECORD_LAYOUTS``)."""
    rays = np.frombuffer(data, "<f4").reshape(-1, 6).astype(np.float64)
    hits, _ = _trace(stored, rays[:, :3], rays[:, 3:], cull_backfaces, options)
    return batch_records(hits, layout)


def _json_batch(stored, body: BatchPickRequest) -> bytes:
    if not body.origins:
        return orjson.dumps({name: [] for name in ("hit", "t", "object", "triangle", "u", "v", "point", "normal",
                                                   "primitive", "segment", "s", "point_index")})
    hits, _ = _trace(stored, np.array(body.origins, np.float64), np.array(body.directions, np.float64),
                     body.cull_backfaces, window(body))
    return orjson.dumps(batch_columns(hits), option=JSON_OPTIONS)


def make_camera(body) -> Camera:
    """A ``bvh.camera.Camera`` from a request's pinhole fields or matrices; 422 when invalid."""
    with client_errors():
        if isinstance(body, MatrixCamera):
            return Camera.from_matrices(np.array(body.view, np.float64), np.array(body.projection, np.float64),
                                        body.width, body.height)
        return Camera.pinhole(body.position, body.target, body.up, body.fov_y_deg, body.width, body.height)


def check_pixels_inside(pixels: np.ndarray, width: int, height: int) -> None:
    """422 naming the first of ``pixels (N, 2)`` outside the image ``[0, width] x [0, height]``."""
    outside = (pixels < 0.0).any(axis=1) | (pixels[:, 0] > width) | (pixels[:, 1] > height)
    if outside.any():
        row = int(np.flatnonzero(outside)[0])
        x, y = pixels[row].tolist()
        raise ClientError(422, f"pixels[{row}] = [{x!r}, {y!r}] lies outside the {width}x{height} image: "
                               f"x must be within [0, {width}] and y within [0, {height}]")


def _camera_pick(stored, body):
    camera = make_camera(body)
    pixels = np.array(body.pixels, np.float64)
    check_pixels_inside(pixels, camera.width, camera.height)
    options = window(body)
    with client_errors():
        origins, directions = camera.rays(pixels)
        # Pixel tolerances: a cone (perspective) or a width (orthographic) per ray, added to the world ones.
        for kind, pixels_wide in (("line", body.line_pixels), ("point", body.point_pixels)):
            if pixels_wide:
                world, slope = camera.pixel_tolerance(pixels, pixels_wide)
                options[f"{kind}_tolerance"] = options.get(f"{kind}_tolerance", 0.0) + world
                options[f"{kind}_slope"] = slope
    hits, view = _trace(stored, origins, directions, body.cull_backfaces, options)
    picked = results(stored, view, hits, np.ones(origins.shape[0]))
    for result, origin, direction in zip(picked, origins.tolist(), directions.tolist()):
        result["ray"] = {"origin": origin, "direction": direction}
    return orjson.dumps({"results": picked}, option=JSON_OPTIONS)


@router.post("/scenes/{scene_id}/pick/camera", response_model=CameraPickResults, responses=ERRORS,
             openapi_extra=body_doc(CameraPickRequest, examples=EXAMPLES["camera"]))
async def pick_camera(scene_id: str, request: Request, store: SceneStoreDep, settings: SettingsDep):
    """One pick per pixel of a camera (pinhole fields, or OpenGL ``view`` and ``projection``);
    each result carries its world ray (unit direction, so ``t`` is the distance). Pixels lie
    within the image: ``0 <= x <= width``, ``0 <= y <= height``."""
    stored = await find_scene(store, scene_id)
    require_json(request)
    body = await parse_json_body(CAMERA_PICK, await request.body(), CAMERA_TAGS)
    check_ray_count(len(body.pixels), settings, "pixels")
    response_limits.check(response_limits.camera_pick(len(body.pixels), stored.view), settings,
                          f"a camera pick of {len(body.pixels)} pixels",
                          ": send fewer pixels per request")
    count_rays(request, len(body.pixels))
    return Response(await off_loop(len(body.pixels), _camera_pick, stored, body), media_type=JSON)
