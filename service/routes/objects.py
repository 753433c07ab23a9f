"""``/scenes/{id}/objects``: add (a file, an inline mesh, an instance, a shape), change, remove.

Every change is saved before the answer, and queries see it whole or not at
all (``SceneStore.edit``).
"""

import numpy as np
from fastapi import APIRouter, Request, Response
from pydantic import TypeAdapter, ValidationError
from starlette.concurrency import run_in_threadpool

import bvh

from ..bodies import (JSON, MULTIPART, form_file, form_text, media_type, parse_json_body, read_form, require_json,
                      unsupported_media)
from ..building import add_file_meshes, matrix_or_none, place_file_instances
from ..deps import SceneStoreDep, find_scene
from ..errors import ClientError, client_errors, validation_error
from ..openapi import EXAMPLES, body_doc
from ..responses import JSONBytes
from ..schemas import (ErrorOut, InstanceCreate, Matrix4, MeshObjectCreate, ObjectCreate, ObjectList, ObjectOut,
                       ObjectUpdate, ShapeCreate)
from ..serialize import object_json
from ..store import SceneNotFound, SceneStore
from ..uploads import describe, read_upload

router = APIRouter(tags=["objects"])

OBJECT_CREATE = TypeAdapter(ObjectCreate)
OBJECT_TAGS = frozenset({"mesh", "instance", "shape"})
MATRIX = TypeAdapter(Matrix4)

UPLOAD_FORM = {
    "file": {"type": "string", "format": "binary", "description": "a mesh or scene file"},
    "transform": {"type": "string", "description": "optional 4×4 matrix as JSON (rows), applied on top of "
                                                   "the file's own node transforms"},
}


def _edit(store: SceneStore, scene_id: str, change, prepare=None):
    """``store.edit`` with the library's refusals as 422/404 and an unknown scene as 404."""
    try:
        with client_errors():
            return store.edit(scene_id, change, prepare)
    except SceneNotFound as error:
        raise ClientError(404, str(error.args[0])) from None


def _answered(change):
    """``change`` followed by the JSON of the objects it returns the ids of, taken
    inside the same edit: read back after it, a concurrent DELETE may already
    have removed them."""
    def change_and_describe(scene: bvh.Scene) -> list[dict]:
        return [object_json(scene.object(oid)) for oid in change(scene)]
    return change_and_describe


def _add_from_body(body):
    """(prepare, change) for one JSON object addition."""
    transform = matrix_or_none(body.transform)
    mesh_ids = []
    if isinstance(body, MeshObjectCreate):
        def prepare(scene):
            mesh_ids.append(scene.add_mesh(np.asarray(body.vertices, np.float64), np.asarray(body.faces, np.int64),
                                           name=body.name))

        def change(scene):
            return [scene.add_instance(mesh_ids[0], transform, body.name, body.mask, body.pickable)]
        return prepare, change
    if isinstance(body, InstanceCreate):
        def change(scene):
            return [scene.add_instance(body.mesh, transform, body.name, body.mask, body.pickable)]
        return None, change
    assert isinstance(body, ShapeCreate)

    def change(scene):
        return [scene.add_shape(body.shape, transform, body.name, body.mask, body.pickable, **body.parameters())]
    return None, change


@router.post("/scenes/{scene_id}/objects", status_code=201, response_model=ObjectList,
             responses={404: {"model": ErrorOut}, 413: {"model": ErrorOut}, 415: {"model": ErrorOut},
                        422: {"model": ErrorOut}},
             openapi_extra=body_doc(ObjectCreate, multipart=UPLOAD_FORM, examples=EXAMPLES["object"]))
async def add_objects(scene_id: str, request: Request, store: SceneStoreDep):
    """Add objects: every node of an uploaded file (multipart ``file``, optional ``transform``),
    an inline mesh (``vertices``, ``faces``), an instance of an existing mesh (``mesh``), or a
    shape (``shape``). Answers with the new objects."""
    await find_scene(store, scene_id)
    media = media_type(request)
    if media == MULTIPART:
        form = await read_form(request)
        try:
            mesh_file = await read_upload(form_file(form))
            transform_text = form_text(form, "transform")
        finally:
            await form.close()
        transform = None
        if transform_text:
            try:
                transform = np.asarray(MATRIX.validate_json(transform_text), np.float64)
            except ValidationError as error:
                raise ClientError(422, "form field transform: " + validation_error(error).detail) from None
        description = await run_in_threadpool(describe, mesh_file)
        mesh_ids: list[int] = []

        def prepare(scene):
            with client_errors(f"file {mesh_file.filename!r}: "):
                mesh_ids.extend(add_file_meshes(scene, description))

        def change(scene):
            with client_errors(f"file {mesh_file.filename!r}: "):
                return place_file_instances(scene, description, mesh_ids, transform)
    elif media == JSON:
        body = await parse_json_body(OBJECT_CREATE, await request.body(), OBJECT_TAGS)
        prepare, change = _add_from_body(body)
    else:
        raise unsupported_media(media, "application/json, or multipart/form-data with a 'file' part")
    _, objects = await run_in_threadpool(_edit, store, scene_id, _answered(change), prepare)
    return JSONBytes({"objects": objects}, status_code=201)


@router.get("/scenes/{scene_id}/objects/{object_id}", response_model=ObjectOut,
            responses={404: {"model": ErrorOut}})
async def get_object(scene_id: str, object_id: int, store: SceneStoreDep):
    """One object."""
    stored = await find_scene(store, scene_id)
    info = stored.view.objects.get(object_id)
    if info is None:
        raise ClientError(404, f"no object {object_id} in scene {scene_id!r}")
    return JSONBytes(object_json(info))


@router.patch("/scenes/{scene_id}/objects/{object_id}", response_model=ObjectOut,
              responses={404: {"model": ErrorOut}, 422: {"model": ErrorOut}},
              openapi_extra=body_doc(ObjectUpdate, examples=EXAMPLES["update"]))
async def update_object(scene_id: str, object_id: int, request: Request, store: SceneStoreDep):
    """Move an object, rename it, or change its ``pickable`` or ``mask``: all given fields at once."""
    await find_scene(store, scene_id)
    require_json(request)
    body = await parse_json_body(ObjectUpdate, await request.body())
    given = body.model_fields_set
    transform = matrix_or_none(body.transform)

    def change(scene: bvh.Scene):
        # The transform goes first: it is the one change the scene may still
        # refuse (a singular matrix), and then nothing has changed yet.
        if "transform" in given:
            scene.set_transform(object_id, transform)
        if "pickable" in given:
            scene.set_pickable(object_id, body.pickable)
        if "mask" in given:
            scene.set_mask(object_id, body.mask)
        if "name" in given:
            scene.set_name(object_id, body.name)
        # Described inside the edit: read back after it, a concurrent DELETE
        # may already have removed the object.
        return object_json(scene.object(object_id))

    _, changed = await run_in_threadpool(_edit, store, scene_id, change)
    return JSONBytes(changed)


@router.delete("/scenes/{scene_id}/objects/{object_id}", status_code=204, responses={404: {"model": ErrorOut}})
async def delete_object(scene_id: str, object_id: int, store: SceneStoreDep):
    """Remove an object (its id is never reused)."""
    await find_scene(store, scene_id)
    await run_in_threadpool(_edit, store, scene_id, lambda scene: scene.remove(object_id))
    return Response(status_code=204)
