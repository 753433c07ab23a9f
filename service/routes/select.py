"""``/scenes/{id}/select``: what a camera's pixel rectangle encloses (marquee selection)."""

import numpy as np
import orjson
from fastapi import APIRouter, Request, Response
from pydantic import TypeAdapter
from starlette.concurrency import run_in_threadpool

from ..bodies import parse_json_body
from ..deps import SceneStoreDep, find_scene
from ..errors import client_errors
from ..openapi import body_doc
from ..schemas import ErrorOut, SelectRequest, SelectResult
from .picks import ALL_BITS, make_camera

router = APIRouter(tags=["select"])

SELECT = TypeAdapter(SelectRequest)
CAMERA_TAGS = frozenset({"pinhole", "matrices"})


def _select(stored, body) -> bytes:
    camera = make_camera(body)
    with client_errors():
        planes = camera.frustum(np.array(body.rect, np.float64))
        selection, view = stored.consistent(lambda scene: scene.select(
            planes, mode=body.mode, mask=ALL_BITS if body.mask is None else body.mask, objects=body.objects,
            exclude=body.exclude))
    objects = selection.object.tolist()
    if body.mode == "objects":
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
             responses={404: {"model": ErrorOut}, 422: {"model": ErrorOut}}, openapi_extra=body_doc(SelectRequest))
async def select(scene_id: str, request: Request, store: SceneStoreDep):
    """Objects inside or crossing the frustum of a pixel rectangle ``rect`` = [x0, y0, x1, y1]
    (culled by world boxes, then exact on triangles); ``mode: "triangles"`` also lists each
    object's triangles inside it."""
    stored = await find_scene(store, scene_id)
    body = await parse_json_body(SELECT, await request.body(), CAMERA_TAGS)
    # The answer is serialised on the worker thread too: a marquee over a big mesh lists many triangles.
    return Response(await run_in_threadpool(_select, stored, body), media_type="application/json")
