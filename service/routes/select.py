"""``/scenes/{id}/select``: what a camera's pixel rectangle encloses (marquee selection)."""

import numpy as np
import orjson
from fastapi import APIRouter, Request, Response
from pydantic import TypeAdapter
from starlette.concurrency import run_in_threadpool

from ..bodies import parse_json_body, require_json
from ..deps import SceneStoreDep, find_scene
from .. import response_limits
from ..errors import ClientError, client_errors
from ..openapi import EXAMPLES, body_doc
from ..schemas import ErrorOut, SelectRequest, SelectResult
from .picks import ALL_BITS, make_camera

router = APIRouter(tags=["select"])

SELECT = TypeAdapter(SelectRequest)
CAMERA_TAGS = frozenset({"pinhole", "matrices"})


def check_rect_overlaps_image(rect: list[float], width: int, height: int) -> None:
    """422 when the rectangle ``[x0, y0, x1, y1]`` (corners in either order) lies wholly
    outside the image ``[0, width] x [0, height]``."""
    left, right = sorted(rect[0::2])
    top, bottom = sorted(rect[1::2])
    if right <= 0 or left >= width or bottom <= 0 or top >= height:
        raise ClientError(422, f"rect {list(rect)} lies wholly outside the {width}x{height} image: "
                               f"it must overlap [0, {width}] x [0, {height}]")


def _select(stored, body, settings) -> bytes:
    camera = make_camera(body)
    check_rect_overlaps_image(body.rect, camera.width, camera.height)
    with client_errors():
        planes = camera.frustum(np.array(body.rect, np.float64))
        selection, view = stored.consistent(lambda scene: scene.select(
            planes, mode=body.mode, mask=ALL_BITS if body.mask is None else body.mask, objects=body.objects,
            exclude=body.exclude, containment=body.containment))
    return selection_answer(selection, view, body.mode, settings, "a selection",
                            ": select a smaller rect, or in mode \"objects\"")


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
    """Objects inside or crossing the frustum of a pixel rectangle ``rect`` = [x0, y0, x1, y1]
    (culled by world boxes, then exact on triangles); ``mode: "triangles"`` also lists each
    object's triangles inside it. ``rect`` takes two opposite corners in either order (a drag
    from any corner: [x1, y1, x0, y0] selects the same); it must overlap the image.
    ``containment: "window"`` takes only what lies entirely inside the frustum (CAD tools'
    left-to-right marquee), ``"crossing"`` (the default) what it touches."""
    stored = await find_scene(store, scene_id)
    require_json(request)
    body = await parse_json_body(SELECT, await request.body(), CAMERA_TAGS)
    # The answer is serialised on the worker thread too: a marquee over a big mesh lists many triangles.
    return Response(await run_in_threadpool(_select, stored, body, request.app.state.settings),
                    media_type="application/json")
