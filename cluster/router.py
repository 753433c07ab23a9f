"""Scene affinity: the Serve request router that sends a scene's requests to the replicas holding it.

Ray Serve's model multiplexing routes by ``serve_multiplexed_model_id``, a
header that curl, the viewer and editors do not send. This router (Serve's
``RequestRouter`` extension point, an alpha API: ``request_router_config`` of
the deployment, see ``cluster/serve.yaml``) finds the scene id itself in the
request's path (``/scenes/{id}/...``, HTTP and the live channel's WebSocket
alike), makes it the request's multiplexed model id, and ranks the replicas:

1. the replicas that hold the scene (reported by their multiplexed loader,
   ``cluster.serve_app``, or sent the scene by this router in the last
   :data:`STICKY_SECONDS`, before their report arrives), least loaded first;
2. only when every holder is saturated (``max_ongoing_requests`` in flight),
   and only while fewer than :data:`MAX_HOLDERS` replicas hold it: the
   replica holding the fewest scenes;
3. a scene nobody holds goes to the replica holding the fewest scenes; within
   :data:`CREATION_SECONDS` of a ``POST /scenes`` it first waits (at most
   :data:`REPORT_WAIT_SECONDS`) for a replica's report that it holds it: a
   scene is held by the replica that created it, whose report may still be
   on its way.

Serve picks within a rank by queue length and falls through to the next rank
when a whole rank is saturated; with :data:`MAX_HOLDERS` holders there is no
next rank, and the request waits (with Serve's backoff) for one of them, so
a hot scene is held by two replicas, never three while those two live.

Requests naming no scene (``/health``, ``/scenes``, uploads) go to the least
loaded replica. The header ``x-pick-replica: <replica id>`` sends a request
to that replica when it runs (``GET /cluster/replica`` tells a replica's id):
the tests use it to edit a scene through a replica other than the one a live
client is connected to.

Private parts of Ray Serve it reads, pinned by the ``cluster`` extra's
version range and checked by ``tests/test_cluster.py``: the proxy's request
argument (a pickled ``StreamingHTTPRequest`` whose ``asgi_scope`` holds the
path and headers) and the ``MultiplexMixin``'s map of model ids to replicas.
"""

import asyncio
import logging
import pickle
import random
import re
import time

from ray.serve.request_router import MultiplexMixin, PendingRequest, RequestRouter, RunningReplica

log = logging.getLogger("ray.serve")

#: ``/scenes/{id}`` at the start of a path: the scene a request is about.
SCENE_PATH = re.compile(r"/scenes/([0-9a-f]{32})(?:/|$)")

#: Replicas a scene is spread over under load (the issue's bar: at most two).
MAX_HOLDERS = 2

#: How long this router counts a replica as holding a scene it sent there,
#: before the replica's own report reaches it (reports travel every 0.1 s
#: through Serve's controller; this leaves a wide margin).
STICKY_SECONDS = 5.0

#: How long after this router sent a ``POST /scenes`` a scene nobody is known to hold may be
#: that new scene, whose creator's report is still on its way (pushed every 0.1 s through
#: Serve's controller); such a request waits up to :data:`REPORT_WAIT_SECONDS` for it, rather
#: than open the scene on a second replica, whose first edit would then race the creator's.
CREATION_SECONDS = 1.0
REPORT_WAIT_SECONDS = 0.5

#: The header that names the replica a request must go to.
REPLICA_HEADER = b"x-pick-replica"


def request_scope(pending_request: PendingRequest | None) -> dict | None:
    """The ASGI scope of an HTTP or WebSocket request from Serve's proxy, None for anything else.

    The proxy sends the request to the replica as a pickled
    ``StreamingHTTPRequest`` (bytes, so that Ray does not pickle it again);
    a ``DeploymentHandle`` caller may pass the object itself.
    """
    if pending_request is None or not pending_request.args:
        return None
    argument = pending_request.args[0]
    if isinstance(argument, (bytes, bytearray)):
        try:
            argument = pickle.loads(argument)
        except Exception:
            return None
    scope = getattr(argument, "asgi_scope", None)
    return scope if isinstance(scope, dict) else None


def scene_of(scope: dict | None) -> str | None:
    """The scene id in the request's path, None when it names no scene."""
    if scope is None:
        return None
    found = SCENE_PATH.match(scope.get("path", ""))
    return found.group(1) if found else None


def pinned_replica(scope: dict | None) -> str | None:
    """The replica id the ``x-pick-replica`` header names, None without it."""
    if scope is None:
        return None
    for name, value in scope.get("headers", ()):
        if name == REPLICA_HEADER:
            return value.decode("latin-1").strip()
    return None


class SceneRouter(MultiplexMixin, RequestRouter):
    """Routes each request for a scene to the replicas that hold it (see the module notes)."""

    def initialize_state(self, max_holders: int = MAX_HOLDERS, sticky_seconds: float = STICKY_SECONDS, **kwargs):
        self.max_holders = max_holders
        self.sticky_seconds = sticky_seconds
        #: Per scene, the replicas this router sent it to and when (monotonic seconds).
        self._sent: dict[str, dict] = {}
        #: ``internal_request_id`` of each ``POST /scenes`` being routed, and when the last was sent.
        self._creating: set = set()
        self._created_at = -float("inf")

    def _holders(self, scene: str, live: dict) -> list[RunningReplica]:
        """The live replicas holding ``scene``: reported, or sent it within ``sticky_seconds``."""
        now = time.monotonic()
        held = set(self._multiplexed_model_id_to_replica_ids.get(scene, ()))
        sent = self._sent.get(scene)
        if sent:
            for replica_id, when in list(sent.items()):
                if now - when > self.sticky_seconds or replica_id not in live:
                    del sent[replica_id]
                else:
                    held.add(replica_id)
            if not sent:
                del self._sent[scene]
        return [live[replica_id] for replica_id in held if replica_id in live]

    def _scene_counts(self, replicas: list[RunningReplica]) -> dict:
        """Scenes each replica holds, as reported or recently sent."""
        counts = {replica.replica_id: set(replica.multiplexed_model_ids) for replica in replicas}
        for scene, sent in self._sent.items():
            for replica_id in sent:
                if replica_id in counts:
                    counts[replica_id].add(scene)
        return {replica_id: len(scenes) for replica_id, scenes in counts.items()}

    async def choose_replicas(self, candidate_replicas: list[RunningReplica],
                              pending_request: PendingRequest | None = None) -> list[list[RunningReplica]]:
        if pending_request is not None:
            # Without it Serve retries a saturated rank at once, in a busy loop.
            pending_request.routing_context.should_backoff = True
        scope = request_scope(pending_request)
        pinned = pinned_replica(scope)
        if pinned is not None:
            chosen = [replica for replica in candidate_replicas if replica.replica_id.unique_id == pinned]
            if chosen:
                return [chosen]
        scene = scene_of(scope)
        if scene is None:
            if scope is not None and scope.get("path") == "/scenes" and scope.get("method") == "POST":
                self._creating.add(pending_request.metadata.internal_request_id)
            # Shuffled: among equally idle replicas Serve takes the first.
            anyone = list(candidate_replicas)
            random.shuffle(anyone)
            return [anyone]
        pending_request.metadata.multiplexed_model_id = scene
        live = {replica.replica_id: replica for replica in candidate_replicas}
        holders = self._holders(scene, live)
        if not holders and time.monotonic() - self._created_at < CREATION_SECONDS:
            holders = await self._await_report(scene, live)
        if len(holders) >= self.max_holders:
            return [holders]
        counts = self._scene_counts(candidate_replicas)
        others = sorted((replica for replica in candidate_replicas if replica not in holders),
                        key=lambda replica: counts[replica.replica_id])
        if not others:
            return [holders]
        fewest = [replica for replica in others if counts[replica.replica_id] == counts[others[0].replica_id]]
        if holders:
            # A second holder only when the holders are saturated: the next rank.
            return [holders, fewest]
        return [fewest, [replica for replica in others if replica not in fewest]]

    async def _await_report(self, scene: str, live: dict) -> list[RunningReplica]:
        """The holders of a scene perhaps just created, once its creator's report arrives (or none)."""
        deadline = time.monotonic() + REPORT_WAIT_SECONDS
        while time.monotonic() < deadline:
            await asyncio.sleep(0.01)
            held = self._multiplexed_model_id_to_replica_ids.get(scene, ())
            holders = [live[replica_id] for replica_id in held if replica_id in live]
            if holders:
                return holders
        return []

    def on_request_routed(self, pending_request: PendingRequest, replica_id, result) -> None:
        scene = pending_request.metadata.multiplexed_model_id
        if scene:
            self._sent.setdefault(scene, {})[replica_id] = time.monotonic()
        elif self._creating:
            request_id = pending_request.metadata.internal_request_id
            if request_id in self._creating:
                self._creating.discard(request_id)
                self._created_at = time.monotonic()
