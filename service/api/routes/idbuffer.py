"""``/scenes/{id}/idbuffer``: what every pixel of a camera's image shows, as binary planes.

The GPU-picking method without a GPU (Real-Time Rendering §22.1): a client
fetches the ID buffer once while its camera is still and answers hovers and
clicks from it locally. The body is planar, little-endian, with no header
(the layout is in the response headers and :data:`LAYOUT`), so a browser
reads each plane with one typed-array view and numpy with one ``frombuffer``.

Compression is done here, with the standard library's gzip, rather than by
Starlette's ``GZipMiddleware``: the middleware wraps the whole app (it would
also deflate every small pick answer, adding latency where there is nothing
to gain), and it compresses on the event loop, where 25 MB of a 1080p buffer
would stall every other request; here it runs on the worker thread, at
level 1 (ID buffers are long runs of equal ids, which the fastest level
already shrinks several times over).
"""

import gzip

import numpy as np
from fastapi import APIRouter, Request, Response
from pydantic import TypeAdapter
from starlette.concurrency import run_in_threadpool

from .. import limits
from ..bodies import parse_json_body, require_json
from ..deps import SettingsDep, StoredSceneDep, count_rays
from ..errors import ClientError, client_errors
from ..openapi import EXAMPLES, body_doc
from ..schemas import CAMERA_TAGS, ErrorOut, IdBufferRequest
from ...queries.picking import make_camera, query_window

router = APIRouter(tags=["idbuffer"])

IDBUFFER = TypeAdapter(IdBufferRequest)

#: gzip level: the fastest; see the module notes.
GZIP_LEVEL = 1

#: Each plane's name, element type and components, in the order they follow each other.
PLANES = (("object", "int32", 1), ("triangle", "int32", 1), ("depth", "float32", 1),
          ("barycentric", "float32", 2), ("normal", "float16", 3))
BYTES = {"int32": 4, "float32": 4, "float16": 2}

LAYOUT = (
    "Planar and little-endian, no header: for P = width × height pixels in row-major order (pixel (x, y) at "
    "index y × width + x, (0, 0) the top left), one plane after the other: object int32 × P (-1: the pixel's "
    "ray misses), triangle int32 × P (face index in its mesh; -1 for a shape or a miss), depth float32 × P "
    "(distance from the camera's eye, or its near plane for an orthographic camera, along the unit ray through "
    "the pixel's centre: a /pick/camera result's t for [x + 0.5, y + 0.5]; +inf on a miss); then, when asked "
    "for, barycentric float32 × 2 × P (u, v per pixel, interleaved: the hit is (1 - u - v) V0 + u V1 + v V2; "
    "NaN for a shape or a miss) and normal float16 × 3 × P (unit world geometric normal, x, y, z interleaved; "
    "NaN on a miss). The normal plane comes last so that every 4-byte plane starts at a multiple of 4 bytes. "
    "Headers: X-Idbuffer-Width, X-Idbuffer-Height, X-Idbuffer-Fields (the planes present, in order, as "
    "name:type or name:typexN, e.g. object:int32,triangle:int32,depth:float32,normal:float16x3). With "
    "Accept-Encoding: gzip the body is gzip-compressed (Content-Encoding: gzip).")

#: Headers a cross-origin client must be allowed to read (CORS ``Access-Control-Expose-Headers``).
EXPOSED_HEADERS = ("X-Idbuffer-Width", "X-Idbuffer-Height", "X-Idbuffer-Fields")

HEADERS = {
    "X-Idbuffer-Width": {"schema": {"type": "integer"}, "description": "image width in pixels"},
    "X-Idbuffer-Height": {"schema": {"type": "integer"}, "description": "image height in pixels"},
    "X-Idbuffer-Fields": {"schema": {"type": "string"},
                          "description": "the planes in order, e.g. object:int32,triangle:int32,depth:float32"},
    "Content-Encoding": {"schema": {"type": "string", "enum": ["gzip"]},
                         "description": "present when the request's Accept-Encoding took gzip"},
}


def planes_asked(normal: bool, barycentric: bool) -> list[tuple[str, str, int]]:
    """The planes of an answer, in order."""
    wanted = {"object", "triangle", "depth"} | ({"normal"} if normal else set()) | (
        {"barycentric"} if barycentric else set())
    return [plane for plane in PLANES if plane[0] in wanted]


def fields_header(planes) -> str:
    return ",".join(f"{name}:{kind}" + (f"x{count}" if count > 1 else "") for name, kind, count in planes)


def pixel_bytes(planes) -> int:
    return sum(BYTES[kind] * count for _, kind, count in planes)


def accepts_gzip(header: str | None) -> bool:
    """Whether an ``Accept-Encoding`` header takes gzip (RFC 9110 §12.5.3): named, or ``*``,
    with a quality above 0."""
    if not header:
        return False
    named = {}
    for item in header.split(","):
        coding, _, parameters = item.strip().partition(";")
        quality = 1.0
        for parameter in parameters.split(";"):
            key, _, value = parameter.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        named[coding.strip().lower()] = quality
    for coding in ("gzip", "x-gzip"):
        if coding in named:
            return named[coding] > 0.0
    return named.get("*", 0.0) > 0.0


def _id_buffer(stored, body, compress: bool) -> bytes:
    camera = make_camera(body)
    options = query_window(body.tmin, body.tmax, body.mask, body.objects, body.exclude)
    with client_errors():
        buffer, _ = stored.consistent(lambda scene: scene.id_buffer(
            camera, cull_backfaces=body.cull_backfaces, normals=body.normal, barycentrics=body.barycentric,
            alpha_test=body.alpha_test, alpha_cutoff=body.alpha_cutoff, **options))
    parts = [buffer.object.astype("<i4", copy=False), buffer.triangle.astype("<i4", copy=False),
             buffer.depth.astype("<f4", copy=False)]
    if body.barycentric:
        parts.append(buffer.barycentric.astype("<f4", copy=False))
    if body.normal:
        parts.append(buffer.normal.astype("<f2", copy=False))
    data = b"".join(np.ascontiguousarray(part).data for part in parts)
    return gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0) if compress else data


@router.post("/scenes/{scene_id}/idbuffer", response_class=Response,
             responses={200: {"content": {"application/octet-stream": {"schema": {
                                  "type": "string", "format": "binary", "description": LAYOUT}}},
                              "description": "the ID buffer's planes; see the layout", "headers": HEADERS},
                        404: {"model": ErrorOut}, 413: {"model": ErrorOut}, 422: {"model": ErrorOut}},
             openapi_extra=body_doc(IdBufferRequest, examples=EXAMPLES["idbuffer"]))
async def id_buffer(stored: StoredSceneDep, request: Request, settings: SettingsDep):
    """What every pixel of a camera's image shows (the ID buffer of GPU picking, traced): per
    pixel the object and triangle hit through its centre and the depth, optionally the normal and
    barycentrics, as binary planes (layout in the 200 answer's description and headers). A hover
    over a still camera is then a look-up: pixel (x, y) answers what /pick/camera answers for
    [x + 0.5, y + 0.5]. Send ``Accept-Encoding: gzip`` for a compressed body."""
    require_json(request)
    body = await parse_json_body(IDBUFFER, await request.body(), CAMERA_TAGS)
    pixels = body.width * body.height
    size = f"{body.width}x{body.height}"
    if pixels > settings.max_idbuffer_pixels:
        raise ClientError(413, f"a {size} ID buffer has {pixels} pixels; the limit is "
                               f"{settings.max_idbuffer_pixels} (PICK_MAX_IDBUFFER_PIXELS): ask for a smaller image")
    planes = planes_asked(body.normal, body.barycentric)
    limits.check(pixels * pixel_bytes(planes), settings, f"a {size} ID buffer",
                 ": ask for a smaller image, or leave out normal and barycentric")
    compress = accepts_gzip(request.headers.get("accept-encoding"))
    count_rays(request, pixels)
    data = await run_in_threadpool(_id_buffer, stored, body, compress)
    headers = {"X-Idbuffer-Width": str(body.width), "X-Idbuffer-Height": str(body.height),
               "X-Idbuffer-Fields": fields_header(planes), "Vary": "Accept-Encoding", "Cache-Control": "no-store"}
    if compress:
        headers["Content-Encoding"] = "gzip"
    return Response(data, media_type="application/octet-stream", headers=headers)


__all__ = ["LAYOUT", "accepts_gzip", "router"]
