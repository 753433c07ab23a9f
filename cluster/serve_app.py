"""The service as a Ray Serve deployment: the same FastAPI app, one process per replica.

``cluster/serve.yaml`` deploys :data:`app` (``serve run cluster/serve.yaml``,
or ``python -m cluster.local up``). Each replica builds the app with
``service.app.create_app`` from the ``PICK_*`` environment the deployment's
``runtime_env`` sets, and Serve's FastAPI ingress runs it, WebSockets (the
live channel) included, with its lifespan (start-up, warm-up, shutdown).

Scenes per replica are bounded with LRU eviction by Serve's model
multiplexing keyed by scene id: every request whose path names a scene
(``/scenes/{id}/...``) passes through the replica's multiplexed loader
(:meth:`PickService.hold_scene`) before the app sees it. A hit marks the
scene most recently used; a miss opens the scene and, past
``PICK_SCENES_PER_REPLICA`` scenes, evicts the least recently used one
(:meth:`LoadedScene.__del__` calls ``SceneStore.evict``: its pending edits
made durable, then dropped from memory).

Which replica a request reaches is HAProxy's choice (Serve's HAProxy ingress,
``cluster/local.py``): a hash of the path's first two segments, so every
request for ``/scenes/{id}/...`` reaches the same replica while the replicas
stay the same. A scene is held by at most two replicas: that one, and the one
that answered its ``POST /scenes`` or ``/scenes/upload`` (any path without a scene id hashes
to one replica) until its LRU lets it go.

``GET /cluster/replica`` answers, from the replica that receives it, its
Serve replica id, node, process id, the scenes it holds (least recently used
first), how many times it loaded each and how many requests naming each it
answered: the tests and ``bench/cluster.py`` ask each replica at its own port
(``cluster.local.Cluster.replicas``) and measure affinity with it.
"""

import logging
import os
import re
from collections import Counter

import orjson
import ray
from ray import serve
from starlette.concurrency import run_in_threadpool

from service.app import create_app
from service.settings import get_settings
from service.store.store import SCENE_ID, SceneNotFound

log = logging.getLogger("service.cluster")

#: Scenes one replica holds in memory at most (``PICK_SCENES_PER_REPLICA``); read at import,
#: in the replica's process, where the deployment's runtime_env has set it.
SCENES_PER_REPLICA = int(os.environ.get("PICK_SCENES_PER_REPLICA", "16"))

SCENE_PATH = re.compile(r"/scenes/([^/]+)")

REPLICA_PATH = "/cluster/replica"

#: The routes that create a scene: from inline meshes, and from a file.
CREATING_PATHS = frozenset({"/scenes", "/scenes/upload"})

#: The start of a created scene's answer (``SceneOut``: the id comes first).
CREATED_ID = re.compile(rb'\{"id":"([0-9a-f]{32})"')


class LoadedScene:
    """What the multiplexed loader keeps for a scene: evicting it evicts the scene from the store.

    Serve calls ``__del__`` (on a worker thread) when the LRU evicts the
    scene; garbage collection may call it again later, which does nothing.
    """

    def __init__(self, store, scene_id: str):
        self.store = store
        self.scene_id = scene_id
        self.evicted = False

    def __del__(self):
        if self.evicted:
            return
        self.evicted = True
        evict = getattr(self.store, "evict", None)
        if evict is None:
            # The embedded store before the S3 mode: every replica maps the
            # same files, so holding a scene costs little; nothing to drop.
            return
        try:
            evict(self.scene_id)
        except Exception:
            log.exception("evicting scene %s failed", self.scene_id)


class SceneAffinity:
    """Pure ASGI middleware: each request naming a scene goes through the replica's loader first."""

    def __init__(self, app, service: "PickService"):
        self.app = app
        self.service = service

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            path = scope["path"]
            if path == REPLICA_PATH and scope["type"] == "http":
                await self.service.describe(send)
                return
            if path in CREATING_PATHS and scope.get("method") == "POST":
                await self.creating(scope, receive, send)
                return
            found = SCENE_PATH.match(path)
            if found is not None and SCENE_ID.fullmatch(found.group(1)):
                self.service.requests[found.group(1)] += 1
                try:
                    await self.service.hold_scene(found.group(1))
                except SceneNotFound:
                    pass  # the app answers 404 in its own words
        await self.app(scope, receive, send)

    async def creating(self, scope, receive, send) -> None:
        """``POST /scenes`` or ``/scenes/upload``: a scene created here is in this replica's memory: hold
        it like any other, before the answer's last byte, so that the LRU bounds it."""
        created = None

        async def watch(message):
            nonlocal created
            if message["type"] == "http.response.start" and message["status"] == 201:
                created = b""
            elif message["type"] == "http.response.body" and created is not None:
                if len(created) < 256:
                    created += message.get("body", b"")
                found = None if message.get("more_body") else CREATED_ID.match(created)
                if found is not None:
                    try:
                        await self.service.hold_scene(found.group(1).decode())
                    except SceneNotFound:
                        pass  # deleted at once by another request
            await send(message)

        await self.app(scope, receive, watch)


@serve.deployment
@serve.ingress()
class PickService:
    """One replica: the app, its scene store, and the scenes it holds."""

    def __init__(self):
        self.replica_id = serve.get_replica_context().replica_id.unique_id
        settings = get_settings()
        if str(getattr(settings, "store", "") or "").startswith("s3://"):
            # In the object store's mode data_dir is this process's cache: one per replica,
            # however many replicas share a machine.
            settings = settings.model_copy(update={"data_dir": settings.data_dir / self.replica_id})
        self.pick_app = create_app(settings)
        self.store = self.pick_app.state.store
        self.loads: Counter = Counter()
        #: Requests naming each scene that reached this replica.
        self.requests: Counter = Counter()

    def __serve_build_asgi_app__(self):
        return SceneAffinity(self.pick_app, self)

    @serve.multiplexed(max_num_models_per_replica=SCENES_PER_REPLICA)
    async def hold_scene(self, scene_id: str) -> LoadedScene:
        """Open a scene in this replica (Serve's multiplexed loader, keyed by scene id).

        Raises
        ------
        SceneNotFound
            No such scene: nothing is held, the request is answered 404.
        """
        # Until start-up has opened the saved scenes, the app holds the request (or answers 503).
        if self.store.ready:
            await run_in_threadpool(self.store.get, scene_id)
        self.loads[scene_id] += 1
        return LoadedScene(self.store, scene_id)

    def held(self) -> list[str]:
        """Scene ids in this replica's LRU, least recently used first."""
        # Where serve.multiplexed keeps its LRU on the instance (ray/serve/api.py).
        wrapper = getattr(self, "__serve_multiplex_wrapper", None)
        return list(wrapper.models) if wrapper is not None else []

    async def describe(self, send) -> None:
        """Answer ``GET /cluster/replica``."""
        body = orjson.dumps({
            "replica": self.replica_id,
            "node": ray.get_runtime_context().get_node_id(),
            "pid": os.getpid(),
            "scenes": self.held(),
            "loads": dict(self.loads),
            "requests": dict(self.requests),
            "scenes_per_replica": SCENES_PER_REPLICA,
        })
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


#: The application ``cluster/serve.yaml`` imports.
app = PickService.bind()
