"""``/scenes/{id}/select``: what a camera's pixel rectangle (marquee) or polygon (lasso)
encloses, or with ``visible_only`` what it shows there."""

from fastapi import APIRouter, Request, Response
from pydantic import TypeAdapter
from starlette.concurrency import run_in_threadpool

from ..bodies import parse_json_body, require_json
from ..deps import SettingsDep, StoredSceneDep, count_rays
from ..openapi import EXAMPLES, body_doc
from ..schemas import CAMERA_TAGS, ErrorOut, SelectRequest, SelectResult
from ...queries.selection import select as select_answer

router = APIRouter(tags=["select"])

SELECT = TypeAdapter(SelectRequest)


@router.post("/scenes/{scene_id}/select", response_model=SelectResult,
             responses={404: {"model": ErrorOut}, 413: {"model": ErrorOut}, 422: {"model": ErrorOut}},
             openapi_extra=body_doc(SelectRequest, examples=EXAMPLES["select"]))
async def select(stored: StoredSceneDep, request: Request, settings: SettingsDep):
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
    require_json(request)
    body = await parse_json_body(SELECT, await request.body(), CAMERA_TAGS)
    # The answer is serialised on the worker thread too: a marquee over a big mesh lists many triangles.
    answer, rays = await run_in_threadpool(select_answer, stored, body, settings)
    if rays:
        count_rays(request, rays)
    return Response(answer, media_type="application/json")
