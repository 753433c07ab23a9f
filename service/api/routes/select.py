"""``/scenes/{id}/select``: what a camera's pixel rectangle (marquee) or polygon (lasso)
encloses, or with ``visible_only`` what it shows there."""

import numpy as np
import orjson
from fastapi import APIRouter, Request, Response
from pydantic import TypeAdapter
from starlette.concurrency import run_in_threadpool

from ..bodies import parse_json_body, require_json
from ..deps import SceneStoreDep, find_scene
from .. import limits as response_limits
from ..errors import ClientError, client_errors
from ..openapi import EXAMPLES, body_doc
from bvh.hits import Selection
from bvh.queries.lasso import Lasso, pixels_in_polygon, rect_pixel_ranges, rect_pixels

from ..schemas import MAX_SAMPLES, ErrorOut, SelectRequest, SelectResult
from .picks import ALL_BITS, count_rays, make_camera

router = APIRouter(tags=["select"])

SELECT = TypeAdapter(SelectRequest)
CAMERA_TAGS = frozenset({"pinhole", "matrices"})


def check_rect_overlaps_image(rect: list[float], width: int, height: int, what: str = "") -> None:
    """422 when the rectangle ``[x0, y0, x1, y1]`` (corners in either order) lies wholly
    outside the image ``[0, width] x [0, height]``; ``what`` names it (default: the rect)."""
    left, right = sorted(rect[0::2])
    top, bottom = sorted(rect[1::2])
    if right <= 0 or left >= width or bottom <= 0 or top >= height:
        raise ClientError(422, f"{what or f'rect {list(rect)}'} lies wholly outside the {width}x{height} image: "
                               f"it must overlap [0, {width}] x [0, {height}]")


def region_pixels(body, camera, lasso, settings) -> np.ndarray:
    """``(M, 2)`` ``[column, row]`` of the pixels a visible-only selection casts through: those
    whose centres lie in the rect or polygon, every ``samples``-th; 413 past ``PICK_MAX_RAYS``,
    counted on the region's bounding box before any pixel is listed."""
    bounds = body.rect if lasso is None else [*lasso.polygon.min(axis=0), *lasso.polygon.max(axis=0)]
    columns, rows = rect_pixel_ranges(bounds, camera.width, camera.height, body.samples)
    count = len(columns) * len(rows)
    if count > settings.max_rays:
        # The smallest stride that brings the box's samples within the limit, if one the schema takes does.
        stride = body.samples
        while stride <= MAX_SAMPLES:
            stride += 1
            columns, rows = rect_pixel_ranges(bounds, camera.width, camera.height, stride)
            if len(columns) * len(rows) <= settings.max_rays:
                break
        region = "rect" if lasso is None else "polygon's bounding box"
        advice = f"set samples to {stride} or more, or select a smaller region" if stride <= MAX_SAMPLES \
            else "select a smaller region"
        raise ClientError(413, f"visible_only casts a ray per pixel: the {region} holds {count} pixels at samples "
                               f"{body.samples}; the limit is {settings.max_rays} rays (PICK_MAX_RAYS): {advice}")
    if lasso is None:
        return rect_pixels(bounds, camera.width, camera.height, body.samples)
    return pixels_in_polygon(lasso.polygon, camera.width, camera.height, body.samples)


def _common(first: Selection, second: Selection) -> Selection:
    """The rows of ``first`` that ``second`` has too (pairs of object and triangle)."""
    keys = first.object * (2 ** 32) + (first.triangle + 1)
    keep = np.isin(keys, second.object * (2 ** 32) + (second.triangle + 1))
    return Selection(first.object[keep], first.triangle[keep])


def _select(stored, body, settings) -> tuple[bytes, int]:
    """The answer, and how many rays it cast."""
    camera = make_camera(body)
    lasso = None
    with client_errors():
        if body.polygon is not None:
            lasso = Lasso(camera, body.polygon)
    if lasso is None:
        check_rect_overlaps_image(body.rect, camera.width, camera.height)
    else:
        box = [*lasso.polygon.min(axis=0).tolist(), *lasso.polygon.max(axis=0).tolist()]
        check_rect_overlaps_image(box, camera.width, camera.height, f"the polygon (bounding box {box})")
    filters = {"mask": ALL_BITS if body.mask is None else body.mask, "objects": body.objects,
               "exclude": body.exclude}
    pixels = region_pixels(body, camera, lasso, settings) if body.visible_only else None

    def query(scene):
        if lasso is None:
            geometric = lambda: scene.select(camera.frustum(np.array(body.rect, np.float64)), mode=body.mode,
                                             containment=body.containment, **filters)
        else:
            geometric = lambda: scene.select(mode=body.mode, containment=body.containment, lasso=lasso, **filters)
        if pixels is None:
            return geometric()
        seen = scene.select_visible(camera, pixels, mode=body.mode, **filters)
        return seen if body.containment == "crossing" else _common(seen, geometric())

    with client_errors():
        selection, view = stored.consistent(query)
    where = "rect" if lasso is None else "polygon"
    return selection_answer(selection, view, body.mode, settings, "a selection",
                            f": select a smaller {where}, or in mode \"objects\""), 0 if pixels is None else len(pixels)


def selection_answer(selection, view, mode: str, settings, what: str, advice: str) -> bytes:
    """The JSON answer of a ``bvh.Selection``: objects, and in ``"triangles"`` mode each
    mesh object's faces (``null`` for shapes); 413 past ``PICK_MAX_RESPONSE_MB``, worded
    with ``what`` and ``advice``."""
    # Only the query tells how much is selected: checked before the answer is built.
    listed = selection.triangle[selection.triangle >= 0]
    selected = np.unique(selection.object).size
    response_limits.check(
        response_limits.selection(selected, listed.size, int(listed.max()) if listed.size else 0, view),
        settings, f"{what} of {selected} objects and {listed.size} triangles", advice)
    objects = selection.object.tolist()
    if mode == "objects":
        chosen = [{"id": oid, "name": view.objects[oid].name, "triangles": None} for oid in objects]
        return orjson.dumps({"objects": chosen})
    chosen = []
    boundaries = np.flatnonzero(np.diff(selection.object)) + 1
    for group in np.split(np.arange(len(objects)), boundaries) if objects else []:
        oid = objects[group[0]]
        triangles = selection.triangle[group]
        chosen.append({"id": oid, "name": view.objects[oid].name,
                       "triangles": triangles[triangles >= 0].tolist() if view.objects[oid].kind == "mesh" else None})
    return orjson.dumps({"objects": chosen})


@router.post("/scenes/{scene_id}/select", response_model=SelectResult,
             responses={404: {"model": ErrorOut}, 413: {"model": ErrorOut}, 422: {"model": ErrorOut}},
             openapi_extra=body_doc(SelectRequest, examples=EXAMPLES["select"]))
async def select(scene_id: str, request: Request, store: SceneStoreDep):
    """Objects inside or crossing the region of a pixel rectangle ``rect`` = [x0, y0, x1, y1]
    (a marquee) or polygon ``polygon`` = [[x, y], ...] (a lasso, concave allowed), culled by world
    boxes, then exact on triangles; ``mode: "triangles"`` also lists each object's triangles
    inside it. ``rect`` takes two opposite corners in either order (a drag from any corner:
    [x1, y1, x0, y0] selects the same); the rect, or the polygon's bounding box, must overlap the
    image. The region is what lies between the camera's near and far planes and projects into the
    rect or polygon; a triangle that crosses the near plane counts by its part in front of it.
    ``containment: "window"`` takes only what lies entirely inside it (CAD tools' left-to-right
    marquee), ``"crossing"`` (the default) what it touches. Shapes: with a rect, a crossing is
    judged by their world boxes, a window exactly; with a polygon, boxes and quads are exact (their
    faces), spheres and polygon shapes judged by their world boxes both ways (conservatively).
    ``visible_only: true`` takes only what is seen: one ray through the centre of each pixel of
    the region (every ``samples``-th column and row), each object (or triangle) hit once."""
    stored = await find_scene(store, scene_id)
    require_json(request)
    body = await parse_json_body(SELECT, await request.body(), CAMERA_TAGS)
    # The answer is serialised on the worker thread too: a marquee over a big mesh lists many triangles.
    answer, rays = await run_in_threadpool(_select, stored, body, request.app.state.settings)
    if rays:
        count_rays(request, rays)
    return Response(answer, media_type="application/json")
