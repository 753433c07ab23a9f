"""Typed dependencies: settings, the scene store, a scene by id, the request's token's grant
(tokens, their scopes and scenes are checked by ``service.api.auth.TokenAuth``).

Every route that reads a scene takes it as :data:`StoredSceneDep` (or
:data:`SceneObjectDep`, :data:`SceneMeshDep` when its path names an object or a
mesh too: one dependency reads every path parameter, so they are documented in
the path's order). The :class:`~service.api.direct_route.DirectRoute` s, which
FastAPI's dependency solver never sees, and the live channel look the scene up
with :func:`scene_in_memory` and :func:`find_scene` themselves.
"""

import asyncio
import time
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from .auth import GRANT, Grant
from .errors import ClientError
from .limits import BuildSlots
from ..settings import Settings
from ..store.store import SceneNotFound, SceneStore, StoredScene


# Dependencies are coroutines: FastAPI runs a plain function on a worker
# thread, which costs more than everything these do.
async def get_settings(request: Request) -> Settings:
    """The settings the app was created with."""
    return request.app.state.settings


async def get_store(request: Request) -> SceneStore:
    """The app's scene store."""
    return request.app.state.store


def count_rays(request, count: int) -> None:
    """Count ``count`` rays cast for ``request`` in ``/metrics``."""
    request.app.state.metrics.count_rays(count)


async def get_build_slots(request: Request) -> BuildSlots:
    """The app's slots for uploads being read and built (``PICK_MAX_CONCURRENT_BUILDS``)."""
    return request.app.state.build_slots


async def get_grant(request: Request) -> Grant | None:
    """What the request's token may do (scopes, scenes); None when the service needs no token."""
    return request.scope.get(GRANT)


SettingsDep = Annotated[Settings, Depends(get_settings)]
GrantDep = Annotated[Grant | None, Depends(get_grant)]
BuildSlotsDep = Annotated[BuildSlots, Depends(get_build_slots)]
SceneStoreDep = Annotated[SceneStore, Depends(get_store)]

#: How long a request that arrives during start-up waits for it before a 503.
READY_WAIT_SECONDS = 10.0


async def wait_until_ready(store: SceneStore) -> None:
    """Hold a request that arrives while start-up still opens the scenes.

    With several workers, ``/ready`` may answer from one that is ready while
    a request lands on another that is not: waiting here, rather than
    refusing at once, keeps that invisible to clients.

    Raises
    ------
    ClientError
        503 when start-up takes longer than :data:`READY_WAIT_SECONDS`.
    """
    deadline = time.monotonic() + READY_WAIT_SECONDS
    while not store.ready:
        if time.monotonic() >= deadline:
            # waiting_for is start-up's own account, as /ready gives it.
            raise ClientError(503, f"the service is still starting: {store.waiting_for}; retry shortly",
                              headers={"Retry-After": "1"})
        await asyncio.sleep(0.02)


def scene_in_memory(store: SceneStore, scene_id: str) -> StoredScene | None:
    """The scene when it is in memory and current, None when it must be read from disk.

    Raises
    ------
    ClientError
        404 for an unknown (or malformed) id.
    """
    if not store.ready:
        return None
    try:
        return store.get(scene_id, reload=False)
    except SceneNotFound as error:
        raise ClientError(404, str(error.args[0])) from None


async def find_scene(store: SceneStore, scene_id: str) -> StoredScene:
    """The scene with this id, read from disk on a worker thread when another process changed it.

    Raises
    ------
    ClientError
        404 for an unknown (or malformed) id, 503 before start-up has opened the scenes.
    """
    await wait_until_ready(store)
    stored = scene_in_memory(store, scene_id)
    if stored is None:
        try:
            stored = await run_in_threadpool(store.get, scene_id)
        except SceneNotFound as error:
            raise ClientError(404, str(error.args[0])) from None
    return stored


async def ready_store(store: SceneStoreDep) -> SceneStore:
    """The store, once start-up has opened the scenes (:func:`wait_until_ready`)."""
    await wait_until_ready(store)
    return store


async def scene_from_path(scene_id: str, store: SceneStoreDep) -> StoredScene:
    """The scene of the path's ``scene_id`` (:func:`find_scene`)."""
    return await find_scene(store, scene_id)


@dataclass(frozen=True)
class ScenePart:
    """A scene and the id of an object or a mesh in it, as the path names them."""

    stored: StoredScene
    id: int


async def object_from_path(scene_id: str, object_id: int, store: SceneStoreDep) -> ScenePart:
    """The scene of the path's ``scene_id`` and its ``object_id`` (not looked up: the route does)."""
    return ScenePart(await find_scene(store, scene_id), object_id)


async def mesh_from_path(scene_id: str, mesh_id: int, store: SceneStoreDep) -> ScenePart:
    """The scene of the path's ``scene_id`` and its ``mesh_id`` (not looked up: the route does)."""
    return ScenePart(await find_scene(store, scene_id), mesh_id)


ReadyStoreDep = Annotated[SceneStore, Depends(ready_store)]
StoredSceneDep = Annotated[StoredScene, Depends(scene_from_path)]
SceneObjectDep = Annotated[ScenePart, Depends(object_from_path)]
SceneMeshDep = Annotated[ScenePart, Depends(mesh_from_path)]
