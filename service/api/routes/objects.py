"""``/scenes/{id}/objects``: list a page, add (an inline mesh, an instance, a shape; a file at
``/objects/upload``), change one or a batch (JSON; binary moves at ``/objects.bin``), remove;
``/scenes/{id}/meshes/{mesh}/vertices``: move a mesh's vertices (JSON, or binary at ``vertices.bin``).

Every change is durable before the answer (journaled, or for new meshes a
whole checkpoint: ``service.store``), and queries see it whole or not at all.
"""

from typing import Annotated

import numpy as np
from fastapi import APIRouter, Query, Request, Response
from pydantic import TypeAdapter, ValidationError
from starlette.concurrency import run_in_threadpool

import bvh

from ..bodies import (BINARY_SUFFIX, JSON, MULTIPART, OCTET_STREAM, UPLOAD_SUFFIX, form_file, form_text,
                      parse_json_body, read_body, read_form, require_json, require_media)
from ...queries import editing
from ...queries.building import add_file_meshes, place_file_instances
from ..deps import (BuildSlotsDep, SceneMeshDep, SceneObjectDep, SceneStoreDep, SettingsDep, StoredSceneDep,
                    find_scene, scene_in_memory)
from ..direct_route import DirectRoute
from ...store.edits import Change
from ...store.idempotency import KeyedWrite
from ..idempotency import IdempotencyKeyDep, added_key, once, request_key, with_key_parameter
from ..errors import ClientError, client_errors, refuse_unknown_query, validation_error
from ..limits import BUILDS_BUSY_RESPONSE
from ..openapi import EXAMPLES, body_doc
from ..responses import JSONBytes
from ..schemas import (MAX_OBJECT_ID, WRITE_REFUSALS, ErrorOut, InstanceCreate, Matrix4, MeshObjectCreate,
                       ObjectBatch, ObjectBatchResult, ObjectCreate, ObjectList, ObjectOut, ObjectPage, ObjectUpdate,
                       VerticesIn, VerticesResult)
from ...queries.results import object_json, object_page_json
from ...settings import MAX_PAGE_OBJECTS
from ...store.store import SceneNotFound, SceneStore
from ...queries.uploads import describe, read_upload

router = APIRouter(tags=["objects"])

#: The single-object edit, on a router of its own: see ``service.api.direct_route``.
direct_router = APIRouter(tags=["objects"], route_class=DirectRoute)

OBJECT_ID_SCHEMA = {"type": "integer", "minimum": 0}

OBJECT_CREATE = TypeAdapter(ObjectCreate)
OBJECT_TAGS = frozenset({"mesh", "instance", "shape"})
MATRIX = TypeAdapter(Matrix4)

UPLOAD_FORM = {
    "file": {"type": "string", "format": "binary", "description": "a mesh or scene file"},
    "transform": {"type": "string", "description": "optional 4×4 matrix as JSON (rows), applied on top of "
                                                   "the file's own node transforms"},
}


def _edit(store: SceneStore, scene_id: str, change, prepare=None, keyed: KeyedWrite | None = None):
    """``store.edit`` of an addition with the library's refusals as 422/404 and an unknown scene as 404."""
    def added(objects: list[dict]) -> Change:
        return Change("added", [entry["id"] for entry in objects])

    try:
        with client_errors():
            return store.edit(scene_id, change, prepare, describe=added, keyed=keyed)
    except SceneNotFound as error:
        raise ClientError(404, str(error.args[0])) from None


def _answered(change):
    """``change`` followed by the JSON of the objects it returns the ids of, taken
    inside the same edit: read back after it, a concurrent DELETE may already
    have removed them."""
    def change_and_describe(scene: bvh.Scene) -> list[dict]:
        return [object_json(scene.object(oid)) for oid in change(scene)]
    return change_and_describe


def _placement(body) -> dict:
    """An ``add`` journal entry (``service.store.edits``) of an instance or a shape."""
    entry = {"transform": body.transform, "name": body.name, "mask": body.mask, "pickable": body.pickable}
    if isinstance(body, InstanceCreate):
        return {"mesh": body.mesh, **entry}
    return {"shape": body.shape, "params": body.parameters(), **entry}


def _mesh_addition(body: MeshObjectCreate):
    """(prepare, change) of an inline mesh and its one instance."""
    mesh_ids = []

    def prepare(scene):
        mesh_ids.append(scene.add_mesh(np.asarray(body.vertices, np.float64), np.asarray(body.faces, np.int64),
                                       name=body.name))

    def change(scene):
        transform = None if body.transform is None else np.asarray(body.transform, np.float64)
        return [scene.add_instance(mesh_ids[0], transform, body.name, body.mask, body.pickable)]
    return prepare, change


ADD_REFUSALS = {404: {"model": ErrorOut}, 413: {"model": ErrorOut}, 415: {"model": ErrorOut},
                422: {"model": ErrorOut}, **WRITE_REFUSALS, 503: BUILDS_BUSY_RESPONSE}


@router.post("/scenes/{scene_id}/objects", status_code=201, response_model=ObjectList, responses=ADD_REFUSALS,
             openapi_extra=body_doc(ObjectCreate, examples=EXAMPLES["object"]))
async def add_objects(stored: StoredSceneDep, request: Request, store: SceneStoreDep, slots: BuildSlotsDep,
                      key: IdempotencyKeyDep):
    """Add an object: an inline mesh (``vertices``, ``faces``), an instance of an existing mesh
    (``mesh``), or a shape (``shape``); ``POST .../objects/upload`` adds a file's. Answers with
    the new objects. At most ``PICK_MAX_CONCURRENT_BUILDS`` inline meshes and files are built at
    once; past that, a 503."""
    scene_id = stored.id
    require_media(request, JSON, MULTIPART, UPLOAD_SUFFIX)
    raw = await request.body()
    body = await parse_json_body(OBJECT_CREATE, raw, OBJECT_TAGS)
    if not isinstance(body, MeshObjectCreate):
        # No new mesh: a journal record, not a checkpoint.
        return JSONBytes({"objects": await editing.add_objects(store, scene_id, [_placement(body)], key)},
                         status_code=201)
    prepare, change = _mesh_addition(body)
    with slots.slot():
        _, objects = await once(run_in_threadpool(_edit, store, scene_id, _answered(change), prepare,
                                                  added_key(key, raw)))
    return JSONBytes({"objects": objects}, status_code=201)


@router.post("/scenes/{scene_id}/objects/upload", status_code=201, response_model=ObjectList,
             responses=ADD_REFUSALS, openapi_extra=body_doc(multipart=UPLOAD_FORM))
async def upload_objects(stored: StoredSceneDep, request: Request, store: SceneStoreDep, settings: SettingsDep,
                         slots: BuildSlotsDep, key: IdempotencyKeyDep):
    """Add every node of an uploaded file (multipart ``file``, optional ``transform``) as objects.
    Answers with the new objects. At most ``PICK_MAX_CONCURRENT_BUILDS`` files and inline meshes
    are read and built at once; past that, a 503."""
    scene_id = stored.id
    require_media(request, MULTIPART, JSON, UPLOAD_SUFFIX)
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
    mesh_ids: list[int] = []

    def prepare(scene):
        with client_errors(f"file {mesh_file.filename!r}: "):
            mesh_ids.extend(add_file_meshes(scene, description))

    def change(scene):
        with client_errors(f"file {mesh_file.filename!r}: "):
            return place_file_instances(scene, description, mesh_ids, transform)

    # One slot for reading and building both.
    with slots.slot():
        description = await run_in_threadpool(describe, mesh_file, settings)
        keyed = added_key(key, mesh_file.filename, mesh_file.content, transform_text or "")
        _, objects = await once(run_in_threadpool(_edit, store, scene_id, _answered(change), prepare, keyed))
    # Rendered off the event loop: a file's objects may be hundreds of thousands.
    return await run_in_threadpool(JSONBytes, {"objects": objects}, 201)


#: Objects a page of ``GET /scenes/{id}/objects`` lists when ``limit`` is left out.
DEFAULT_PAGE_OBJECTS = 1000
PAGE_PARAMETERS = frozenset({"after", "limit"})


def _page_answer(view, after: int | None, limit: int) -> JSONBytes:
    return JSONBytes(object_page_json(view, after, limit))


@router.get("/scenes/{scene_id}/objects", response_model=ObjectPage,
            responses={404: {"model": ErrorOut}, 422: {"model": ErrorOut}})
async def list_objects(
        request: Request, stored: StoredSceneDep,
        after: Annotated[int | None, Query(
            ge=0, le=MAX_OBJECT_ID, examples=[999],
            description="list the objects whose id is above this (a previous page's next_after); "
                        "left out: from the first")] = None,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE_OBJECTS,
                                    description="most objects on the page")] = DEFAULT_PAGE_OBJECTS):
    """A page of the scene's live objects in ascending id order: the first ``limit`` whose id is
    above ``after``. ``next_after`` is the ``after`` of the next page (null: this is the last).

    Ids only grow (a new object gets a larger id than every object before it, and a removed
    object's id is never reused), so paging from the first page to ``next_after: null`` lists
    every object that lived when it started and still lives, each once, in id order, however
    the scene is edited meanwhile: an object removed before its page is reached is left out,
    one added meanwhile is listed when its page comes. Each page is made in time that grows with
    the page, not with the scene (a binary search over the ids).

    ``version`` is the scene's edit number the page is as of: a client that also hears the
    live channel's events keeps, per object, whichever of the page's row and the events is
    newer (see the live channel's protocol)."""
    refuse_unknown_query(request, PAGE_PARAMETERS)
    return await run_in_threadpool(_page_answer, stored.view, after, limit)


@router.get("/scenes/{scene_id}/objects/{object_id}", response_model=ObjectOut,
            responses={404: {"model": ErrorOut}})
async def get_object(scene_object: SceneObjectDep):
    """One object."""
    info = scene_object.stored.view.objects.get(scene_object.id)
    if info is None:
        raise ClientError(404, f"no object {scene_object.id} in scene {scene_object.stored.id!r}")
    return JSONBytes(object_json(info))


def path_object_id(request: Request) -> int:
    """The ``object_id`` path parameter of a :class:`DirectRoute`, checked as FastAPI would."""
    text = request.path_params["object_id"]
    # isdigit() alone also passes digits such as "¹", which int() refuses.
    if not (text.isascii() and text.isdigit()):
        raise ClientError(422, f"object_id: Input should be a valid integer, got {text!r}")
    return int(text)


@direct_router.patch("/scenes/{scene_id}/objects/{object_id}", response_model=ObjectOut,
                     responses={404: {"model": ErrorOut}, 422: {"model": ErrorOut}, **WRITE_REFUSALS},
                     openapi_extra=with_key_parameter(body_doc(
                         ObjectUpdate, examples=EXAMPLES["update"],
                         path_parameters=("scene_id", ("object_id", OBJECT_ID_SCHEMA)))))
async def update_object(request: Request):
    """Move an object, rename it, or change its ``pickable`` or ``mask``: all given fields at once."""
    # A DirectRoute (an editor drags objects at mouse rate): the endpoint takes the request.
    store = request.app.state.store
    scene_id = request.path_params["scene_id"]
    stored = scene_in_memory(store, scene_id) or await find_scene(store, scene_id)
    object_id = path_object_id(request)
    require_json(request)
    body = await parse_json_body(ObjectUpdate, await read_body(request))
    return JSONBytes(await editing.single_update(store, stored.id, object_id, body, request_key(request)))


@router.delete("/scenes/{scene_id}/objects/{object_id}", status_code=204,
               responses={404: {"model": ErrorOut}, **WRITE_REFUSALS})
async def delete_object(scene_object: SceneObjectDep, store: SceneStoreDep, key: IdempotencyKeyDep):
    """Remove an object (its id is never reused)."""
    await editing.remove_object(store, scene_object.stored.id, scene_object.id, key)
    return Response(status_code=204)


BATCH_REFUSALS = {404: {"model": ErrorOut}, 413: {"model": ErrorOut}, 415: {"model": ErrorOut},
                  422: {"model": ErrorOut}, **WRITE_REFUSALS}


@router.patch("/scenes/{scene_id}/objects", response_model=ObjectBatchResult, responses=BATCH_REFUSALS,
              openapi_extra=body_doc(ObjectBatch, examples=EXAMPLES["batch_update"]))
async def update_objects(stored: StoredSceneDep, request: Request, store: SceneStoreDep, key: IdempotencyKeyDep):
    """Change many objects at once, all or nothing: one edit, one journal record, one change for
    queries. A list of ``{"id", "transform"?, "pickable"?, "mask"?, "name"?}``; ``PATCH
    .../objects.bin`` takes moves packed, for animation-rate updates of thousands of objects.
    A refused entry (unknown id, singular matrix, an id twice) refuses the whole batch."""
    require_media(request, JSON, OCTET_STREAM, BINARY_SUFFIX)
    return JSONBytes(await editing.patch_objects(store, stored.id, await read_body(request), key))


@router.patch("/scenes/{scene_id}/objects.bin", response_model=ObjectBatchResult, responses=BATCH_REFUSALS,
              openapi_extra=body_doc(binary=editing.BINARY_BATCH))
async def move_objects(stored: StoredSceneDep, request: Request, store: SceneStoreDep, key: IdempotencyKeyDep):
    """Move many objects at once from packed records (``application/octet-stream``), all or nothing,
    as ``PATCH .../objects`` does; the answer's ``objects`` is null."""
    require_media(request, OCTET_STREAM, JSON, BINARY_SUFFIX)
    return JSONBytes(await editing.move_objects_binary(store, stored.id, await read_body(request), key))


@router.put("/scenes/{scene_id}/meshes/{mesh_id}/vertices", response_model=VerticesResult, responses=BATCH_REFUSALS,
            openapi_extra=body_doc(VerticesIn, examples=EXAMPLES["vertices"]))
async def replace_vertices(scene_mesh: SceneMeshDep, request: Request, store: SceneStoreDep,
                           key: IdempotencyKeyDep):
    """Move a mesh's vertices (same count, same faces): its tree is refitted, every object that shows
    it follows. JSON ``{"vertices": [[x, y, z], ...]}``; ``PUT .../vertices.bin`` takes them packed."""
    require_media(request, JSON, OCTET_STREAM, BINARY_SUFFIX)
    body = await parse_json_body(VerticesIn, await read_body(request))
    vertices = np.asarray(body.vertices, np.float64).reshape(-1, 3)
    return JSONBytes(await editing.replace_vertices(store, scene_mesh.stored.id, scene_mesh.id, vertices, key))


@router.put("/scenes/{scene_id}/meshes/{mesh_id}/vertices.bin", response_model=VerticesResult,
            responses=BATCH_REFUSALS, openapi_extra=body_doc(binary=editing.BINARY_VERTICES))
async def replace_vertices_binary(scene_mesh: SceneMeshDep, request: Request, store: SceneStoreDep,
                                  key: IdempotencyKeyDep):
    """:func:`replace_vertices` from packed float32 ``V×3`` (``application/octet-stream``)."""
    require_media(request, OCTET_STREAM, JSON, BINARY_SUFFIX)
    vertices = editing.binary_vertices(await read_body(request))
    return JSONBytes(await editing.replace_vertices(store, scene_mesh.stored.id, scene_mesh.id, vertices, key))
