"""``/scenes``: create from inline meshes (or a file, at ``/scenes/upload``), list, read, delete."""

import time

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

import bvh

from ..bodies import JSON, MULTIPART, UPLOAD_SUFFIX, form_file, form_text, parse_json_body, read_form, require_media
from ...queries.building import add_file_meshes, add_inline_meshes, place_file_instances, place_inline_meshes
from ..deps import BuildSlotsDep, ReadyStoreDep, SettingsDep, StoredSceneDep
from ..errors import ClientError, client_errors
from ..idempotency import IdempotencyKeyDep, created_key, once
from ..limits import BUILDS_BUSY_RESPONSE
from ..openapi import EXAMPLES, body_doc
from ..responses import JSONBytes
from ..schemas import DISK_FULL, READ_ONLY, ErrorOut, SceneCreate, SceneList, SceneOut
from ...queries.results import scene_json, scene_summary_json
from ...settings import Settings
from ...store.idempotency import KeyedWrite
from ...store.store import SceneNotFound, SceneStore
from ...queries.uploads import MeshFile, describe, read_upload, upload_stem

router = APIRouter(tags=["scenes"])

NAME_LIMIT = 256

UPLOAD_FORM = {
    "file": {"type": "string", "format": "binary", "description": "a mesh or scene file (.obj, .ply, .stl, .glb, "
                                                                  ".gltf, .off, ...)"},
    "name": {"type": "string", "description": "the scene's name (default: the file's name)"},
}


def _check_name(name: str | None) -> str | None:
    if name is not None and len(name) > NAME_LIMIT:
        raise ClientError(422, f"name: at most {NAME_LIMIT} characters, got {len(name)}")
    return name


def _create_from_file(store: SceneStore, mesh_file: MeshFile, name: str | None, settings: Settings,
                      keyed: KeyedWrite | None = None):
    start = time.perf_counter()
    description = describe(mesh_file, settings, name)
    scene = bvh.Scene()
    with client_errors(f"file {mesh_file.filename!r}: "):
        place_file_instances(scene, description, add_file_meshes(scene, description))
    return store.create(scene, name, (time.perf_counter() - start) * 1e3, keyed)


def _create_from_meshes(store: SceneStore, body: SceneCreate, keyed: KeyedWrite | None = None):
    start = time.perf_counter()
    scene = bvh.Scene()
    with client_errors():
        place_inline_meshes(scene, body.meshes, add_inline_meshes(scene, body.meshes))
    return store.create(scene, body.name, (time.perf_counter() - start) * 1e3, keyed)


def _replayed_answer(store: SceneStore, settings: Settings):
    """The answer to a repeated create: the scene it made, as it is now."""
    async def answer(scene_id: str) -> bytes:
        return (await run_in_threadpool(lambda: _scene_answer(store.get(scene_id), settings))).body
    return answer


def _scene_answer(stored, settings: Settings, status_code: int = 200) -> Response:
    """A scene's JSON with its first ``PICK_INLINE_OBJECTS`` objects (10,000 objects are
    some 3 MB of JSON and tens of milliseconds of work: the routes call this on a worker thread)."""
    return JSONBytes(scene_json(stored, settings.inline_objects), status_code=status_code)


CREATE_REFUSALS = {413: {"model": ErrorOut}, 415: {"model": ErrorOut}, 422: {"model": ErrorOut}, **DISK_FULL,
                   503: BUILDS_BUSY_RESPONSE}


@router.post("/scenes", status_code=201, response_model=SceneOut, responses=CREATE_REFUSALS,
             openapi_extra=body_doc(SceneCreate, examples=EXAMPLES["scene"]))
async def create_scene(request: Request, store: ReadyStoreDep, settings: SettingsDep, slots: BuildSlotsDep,
                       key: IdempotencyKeyDep):
    """Create a scene from inline meshes (``POST /scenes/upload`` makes one from a file). The scene
    is saved before the answer, which is ``GET /scenes/{id}``'s (its first ``PICK_INLINE_OBJECTS``
    objects). At most ``PICK_MAX_CONCURRENT_BUILDS`` scenes are built at once; past that, a 503."""
    require_media(request, JSON, MULTIPART, UPLOAD_SUFFIX)
    raw = await request.body()
    body = await parse_json_body(SceneCreate, raw)
    keyed = created_key(key, raw)
    answer = _replayed_answer(store, settings)
    if keyed is not None:
        # A repeat answers before building anything.
        await once(run_in_threadpool(store.created, keyed), answer)
    with slots.slot():
        stored = await once(run_in_threadpool(_create_from_meshes, store, body, keyed), answer)
    return await run_in_threadpool(_scene_answer, stored, settings, 201)


@router.post("/scenes/upload", status_code=201, response_model=SceneOut, responses=CREATE_REFUSALS,
             openapi_extra=body_doc(multipart=UPLOAD_FORM))
async def upload_scene(request: Request, store: ReadyStoreDep, settings: SettingsDep, slots: BuildSlotsDep,
                       key: IdempotencyKeyDep):
    """Create a scene from an uploaded file (multipart ``file``, optional ``name``). The scene is
    saved before the answer, which is ``GET /scenes/{id}``'s (its first ``PICK_INLINE_OBJECTS``
    objects). At most ``PICK_MAX_CONCURRENT_BUILDS`` uploads are read and built at once; past
    that, a 503."""
    require_media(request, MULTIPART, JSON, UPLOAD_SUFFIX)
    form = await read_form(request)
    try:
        mesh_file = await read_upload(form_file(form))
        name = _check_name(form_text(form, "name")) or upload_stem(mesh_file.filename) or None
    finally:
        await form.close()
    keyed = created_key(key, mesh_file.filename, mesh_file.content, name or "")
    answer = _replayed_answer(store, settings)
    if keyed is not None:
        await once(run_in_threadpool(store.created, keyed), answer)
    with slots.slot():
        stored = await once(run_in_threadpool(_create_from_file, store, mesh_file, name, settings, keyed), answer)
    return await run_in_threadpool(_scene_answer, stored, settings, 201)


@router.get("/scenes", response_model=SceneList)
async def list_scenes(store: ReadyStoreDep):
    """Every scene, oldest first, with counts (not objects)."""
    scenes = await run_in_threadpool(store.list)
    return JSONBytes({"scenes": [scene_summary_json(stored) for stored in scenes]})


@router.get("/scenes/{scene_id}", response_model=SceneOut, responses={404: {"model": ErrorOut}})
async def get_scene(stored: StoredSceneDep, settings: SettingsDep):
    """One scene with its objects, the first ``PICK_INLINE_OBJECTS`` (10,000 by default) by id.
    ``object_count`` says how many it has; when that is more, ``objects_next_after`` is the last id
    listed, and ``GET /scenes/{id}/objects?after=<it>`` pages through the rest (null: all are listed)."""
    return await run_in_threadpool(_scene_answer, stored, settings)


@router.delete("/scenes/{scene_id}", status_code=204, responses={404: {"model": ErrorOut}, **READ_ONLY})
async def delete_scene(scene_id: str, store: ReadyStoreDep, key: IdempotencyKeyDep):
    """Delete a scene, from memory and disk. A repeat answers 404, keyed or not: the scene is gone."""
    del key  # Idempotent by its state (service.api.idempotency).
    try:
        await run_in_threadpool(store.delete, scene_id)
    except SceneNotFound as error:
        raise ClientError(404, str(error.args[0])) from None
    return Response(status_code=204)
