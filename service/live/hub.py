"""Change events of scenes, pushed to the clients of the live channel (``/scenes/{id}/live``).

The store calls :meth:`LiveHub.publish` (its ``on_change``) from the thread
that made a durable edit, or from the thread that noticed another worker's
edit in the shared journal. ``publish`` only hands the event to the event
loop (``loop.call_soon_threadsafe``): it never waits for a client, a lock
held by the loop, or the network.

On the loop, each subscriber of the scene (one per live connection) gets the
event in its own :class:`Subscriber`, which never blocks either: the
connection's sender task takes what is pending whenever it can write. A
client that reads slowly only makes its own pending events pile up, and they
pile up in bounded memory:

- up to :data:`KEEP_EVENTS` pending events are sent as published;
- when more arrive before the sender takes them, the client is behind: they
  are coalesced per object (:class:`Window`): the latest object JSON wins, a
  removal wins over everything else, and the events sent for the window all
  carry its newest version;
- when more than ``queue_limit`` events are pending, or the window holds
  more objects (``PICK_LIVE_QUEUE``), they are dropped and the client is
  owed a resync: the sender then sends the object table afresh, current at
  that moment, once (its first ``PICK_INLINE_OBJECTS`` objects, as a hello).

Events of a scene are handed to its subscribers at most once every
``event_interval`` (``PICK_LIVE_EVENT_MS``): one that comes sooner after the
last waits for the interval's end with whatever else comes meanwhile, and
each run of ``moved`` events among them goes out as one (:func:`merged_moves`),
encoded once for every subscriber. With 32 editors dragging at 60 Hz, the
subscribers had been sent some nine frames per interval each, 18,000 a
second, one ``send`` of the WebSocket stack each; now one.
"""

import asyncio
import logging
import math

import orjson
from starlette.concurrency import run_in_threadpool

from ..store.store import SceneNotFound, SceneStore

log = logging.getLogger("service.live")

#: What the store's events say happened.
EVENT_KINDS = frozenset({"moved", "changed", "added", "removed", "vertices"})

#: Pending events a subscriber keeps as published; past this many it is behind, and they are coalesced.
KEEP_EVENTS = 16

#: How often the scenes that have live clients are checked for other workers' edits (seconds).
FOLLOW_SECONDS = 0.02

#: Returned by :meth:`Subscriber.take` when the client fell too far behind: send the table afresh.
RESYNC = object()


def event_frame(event: dict) -> str:
    """The text frame of one event as published: ``{"type": "event", "event": ..., ...}``."""
    return orjson.dumps({"type": "event", **event}, option=orjson.OPT_SERIALIZE_NUMPY).decode()


def merged_moves(events: list[dict]) -> list[dict]:
    """``events`` in their order with each run of ``moved`` events made one:
    each object listed once, with its latest JSON, in the order first seen,
    at the run's newest version (what a client would make of the run)."""
    out = []
    run = None  # the objects of the run of moves that ends ``out``, by id
    for event in events:
        if event["event"] != "moved" or "mesh" in event:
            out.append(event)
            run = None
        elif run is None:
            out.append(event)
            run = {info["id"]: info for info in event["objects"]}
        else:
            run.update((info["id"], info) for info in event["objects"])
            # Versions only grow: the run's newest is its last.
            out[-1] = {"event": "moved", "objects": list(run.values()), "version": event.get("version")}
    return out


def _is_event(event) -> bool:
    """The shape the hub relies on: a known kind, ids for a removal, objects with ids otherwise."""
    if not isinstance(event, dict) or event.get("event") not in EVENT_KINDS:
        return False
    objects = event.get("objects")
    if not isinstance(objects, list):
        return False
    if event["event"] == "removed":
        return all(type(oid) is int for oid in objects)
    return all(isinstance(info, dict) and type(info.get("id")) is int for info in objects)


class Window:
    """The events a subscriber has not been sent yet, coalesced per object.

    Attributes
    ----------
    entries : dict of int to (str, dict or None)
        Per object id, in the order first seen: its kind in the window
        (``added``, ``moved``, ``changed``, ``vertices`` or ``removed``) and
        its latest JSON (None once removed).
    meshes : dict of int to dict of int to None
        Per mesh whose vertices changed, the ids of its instances reported.
    events : int
        How many events the window merged.
    version : int or None
        The newest version among them.
    """

    def __init__(self):
        self.entries: dict[int, tuple[str, dict | None]] = {}
        self.meshes: dict[int, dict[int, None]] = {}
        self.events = 0
        self.version: int | None = None

    def add(self, event: dict) -> None:
        """Merge one event."""
        self.events += 1
        version = event.get("version")
        if isinstance(version, int) and (self.version is None or version > self.version):
            self.version = version
        kind = event["event"]
        if kind == "removed":
            for oid in event["objects"]:
                self.entries[oid] = ("removed", None)
            return
        if kind == "vertices":
            instances = self.meshes.setdefault(event.get("mesh"), {})
            for info in event["objects"]:
                instances[info["id"]] = None
        entries = self.entries
        for info in event["objects"]:
            oid = info["id"]
            before = entries.get(oid)
            if before is None:
                entries[oid] = (kind, info)
                continue
            was = before[0]
            if was == "removed":
                # Ids are never reused: nothing brings a removed object back.
                continue
            if was == "added" or kind == "added":
                # The client has not seen it yet: still an addition, of its latest state.
                entries[oid] = ("added", info)
            else:
                entries[oid] = (kind if kind == was else "changed", info)

    @property
    def size(self) -> int:
        """What ``PICK_LIVE_QUEUE`` bounds: events merged or objects held, the larger."""
        return max(self.events, len(self.entries) + len(self.meshes))

    def frames(self) -> list[str]:
        """The window as event frames: ``added``, then one ``vertices`` per mesh, ``moved``,
        ``changed``, ``removed``; empty groups left out, each with the window's newest version."""
        entries = self.entries
        grouped: dict[str, list] = {"added": [], "moved": [], "changed": [], "removed": []}
        for oid, (kind, info) in entries.items():
            if kind == "removed":
                grouped["removed"].append(oid)
            elif kind != "vertices":
                grouped[kind].append(info)
        out = []
        if grouped["added"]:
            out.append(event_frame({"event": "added", "objects": grouped["added"], "version": self.version}))
        for mesh, instances in self.meshes.items():
            alive = [entries[oid][1] for oid in instances if entries[oid][0] != "removed"]
            out.append(event_frame({"event": "vertices", "mesh": mesh, "objects": alive, "version": self.version}))
        for kind in ("moved", "changed"):
            if grouped[kind]:
                out.append(event_frame({"event": kind, "objects": grouped[kind], "version": self.version}))
        if grouped["removed"]:
            out.append(event_frame({"event": "removed", "objects": grouped["removed"], "version": self.version}))
        return out


class Subscriber:
    """One live connection's pending events: filled by the hub, emptied by the connection's sender.

    Only ever touched on the event loop. :meth:`offer` never blocks; the
    memory it holds is bounded by ``queue_limit`` (see the module notes).
    """

    def __init__(self, scene_id: str, queue_limit: int, stored=None):
        self.scene_id = scene_id
        self.queue_limit = queue_limit
        #: The ``StoredScene`` its last table came from: a reopened scene replaces it, without events.
        self.stored = stored
        # Pending events as published, each with its frame (encoded once for every subscriber).
        self._events: list[tuple[dict, str]] = []
        self._window: Window | None = None
        self._resync = False
        self._pending = asyncio.Event()
        #: Resyncs owed so far (for tests and logs).
        self.resyncs = 0
        #: The version of the last object table sent (hello, resync): events up to it are in it.
        self.floor: int | None = None

    def offer(self, event: dict, frame: str) -> None:
        """Add a published event (on the loop; never blocks)."""
        if self._resync:
            # The table sent with the resync is read when it is sent: it will hold this change.
            return
        version = event.get("version")
        if self.floor is not None and type(version) is int and version <= self.floor:
            # The store announces an edit after publishing its view: a table sent in between
            # already holds it.
            return
        if self._window is None and len(self._events) < KEEP_EVENTS:
            self._events.append((event, frame))
            behind = len(self._events)
        else:
            if self._window is None:
                self._window = Window()
                for kept, _ in self._events:
                    self._window.add(kept)
                self._events.clear()
            self._window.add(event)
            behind = self._window.size
        if behind > self.queue_limit:
            self._events.clear()
            self._window = None
            self._resync = True
            self.resyncs += 1
            log.info("a live client of scene %s fell more than %d events behind: it will be sent the object table "
                     "instead", self.scene_id, self.queue_limit)
        self._pending.set()

    def owe_resync(self) -> None:
        """Send the table afresh next, in place of what is pending (on the loop)."""
        self._events.clear()
        self._window = None
        if not self._resync:
            self._resync = True
            self.resyncs += 1
        self._pending.set()

    async def take(self):
        """Wait for something to send: a list of text frames, or :data:`RESYNC`."""
        await self._pending.wait()
        self._pending.clear()
        if self._resync:
            self._resync = False
            return RESYNC
        if self._window is not None:
            frames = self._window.frames()
            self._window = None
            return frames
        frames = [frame for _, frame in self._events]
        self._events.clear()
        return frames


class LiveHub:
    """Every live subscriber of one app, by scene; the store's ``on_change`` is :meth:`publish`.

    Parameters
    ----------
    queue_limit : int
        ``PICK_LIVE_QUEUE``: events or objects one subscriber may have
        pending before it is owed a resync.
    event_interval : float
        ``PICK_LIVE_EVENT_MS`` in seconds: the least time between two
        hand-outs of a scene's events to its subscribers.
    """

    def __init__(self, queue_limit: int, event_interval: float = 0.0):
        self.queue_limit = queue_limit
        self.event_interval = event_interval
        self._loop: asyncio.AbstractEventLoop | None = None
        self._subscribers: dict[str, set[Subscriber]] = {}
        # Per scene: when its events were last handed out, and those waiting for the interval's end.
        self._handed_out: dict[str, float] = {}
        self._waiting: dict[str, list[dict]] = {}
        self._following: asyncio.Task | None = None

    def start(self, loop: asyncio.AbstractEventLoop, store: SceneStore) -> None:
        """Deliver events on ``loop`` from now on, and follow the other workers' edits of the
        scenes that have subscribers (the app's lifespan calls this, on the loop)."""
        self._loop = loop
        self._following = loop.create_task(self._follow(store))

    def stop(self) -> None:
        """Drop events from now on: the loop is going away."""
        self._loop = None
        if self._following is not None:
            self._following.cancel()

    async def _follow(self, store: SceneStore) -> None:
        """Bring the subscribed scenes up to date every :data:`FOLLOW_SECONDS`.

        The store reads another worker's journaled edits, and announces them,
        when a request of this process asks for the scene; a worker whose
        only clients are listening would never ask. The check is the store's
        own (a shared token, a ``stat`` when it changed); reading the records
        happens on a worker thread.
        """
        while True:
            await asyncio.sleep(FOLLOW_SECONDS)
            try:
                stale = []
                for scene_id in list(self._subscribers):
                    try:
                        stored = store.get(scene_id, reload=False)
                    except SceneNotFound:
                        # Its connections close at their next request, or their next resync.
                        continue
                    if stored is None:
                        stale.append(scene_id)
                    else:
                        self._check_reopened(scene_id, stored)
                if stale:
                    for scene_id, stored in await run_in_threadpool(_bring_up_to_date, store, stale):
                        self._check_reopened(scene_id, stored)
            except Exception:
                log.exception("following the other workers' edits failed; trying again")

    def _check_reopened(self, scene_id: str, stored) -> None:
        # A scene reopened from its checkpoint (another worker's journal restarted past
        # this one's position) changes without events: its subscribers get the table.
        for subscriber in self._subscribers.get(scene_id, ()):
            if subscriber.stored is not None and subscriber.stored is not stored:
                subscriber.owe_resync()

    def listened(self, scene_id: str) -> bool:
        """Whether the scene has subscribers (the store makes no events for one that has none)."""
        return bool(self._subscribers.get(scene_id))

    def publish(self, scene_id: str, event: dict) -> None:
        """Hand a change event to the loop, from any thread; returns at once.

        Parameters
        ----------
        scene_id : str
        event : dict
            ``{"event": "moved" | "changed" | "added" | "removed" | "vertices",
            "objects": [...], "version": n}`` (``"mesh"`` too for ``vertices``);
            not changed here, and not to be changed by the caller afterwards.
        """
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._deliver, scene_id, event)
        except RuntimeError:
            # The loop closed between the check and the call (shutdown): nobody is listening.
            pass

    def _deliver(self, scene_id: str, event: dict) -> None:
        if not _is_event(event):
            log.error("dropping a malformed change event of scene %s: %.200r", scene_id, event)
            return
        loop = self._loop
        if loop is None or not self._subscribers.get(scene_id):
            return
        waiting = self._waiting.get(scene_id)
        if waiting is not None:
            waiting.append(event)
            return
        now = loop.time()
        due = self._handed_out.get(scene_id, -math.inf) + self.event_interval
        if now >= due:
            self._handed_out[scene_id] = now
            self._hand_out(scene_id, [event])
        else:
            self._waiting[scene_id] = [event]
            loop.call_at(due, self._hand_out_waiting, scene_id)

    def _hand_out_waiting(self, scene_id: str) -> None:
        events = self._waiting.pop(scene_id, None)
        if events and self._loop is not None:
            self._handed_out[scene_id] = self._loop.time()
            self._hand_out(scene_id, merged_moves(events))

    def _hand_out(self, scene_id: str, events: list[dict]) -> None:
        subscribers = self._subscribers.get(scene_id)
        if not subscribers:
            return
        for event in events:
            # Encoded once for all subscribers: fan-out costs one send each, not one encoding each.
            frame = event_frame(event)
            for subscriber in subscribers:
                subscriber.offer(event, frame)

    def subscribe(self, scene_id: str, stored=None) -> Subscriber:
        """A new subscriber of the scene's events (on the loop); ``stored``: the scene its
        first table comes from."""
        subscriber = Subscriber(scene_id, self.queue_limit, stored)
        self._subscribers.setdefault(scene_id, set()).add(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        subscribers = self._subscribers.get(subscriber.scene_id)
        if subscribers is not None:
            subscribers.discard(subscriber)
            if not subscribers:
                del self._subscribers[subscriber.scene_id]
                self._handed_out.pop(subscriber.scene_id, None)
                self._waiting.pop(subscriber.scene_id, None)

    def subscribers(self, scene_id: str) -> list[Subscriber]:
        """The scene's subscribers now (on the loop)."""
        return list(self._subscribers.get(scene_id, ()))


def _bring_up_to_date(store: SceneStore, scene_ids: list[str]) -> list[tuple[str, object]]:
    """``store.get`` of each scene (on a worker thread): the ones still there, up to date."""
    found = []
    for scene_id in scene_ids:
        try:
            found.append((scene_id, store.get(scene_id)))
        except SceneNotFound:
            continue
        except (OSError, ValueError) as error:
            log.error("scene %s could not be brought up to date for its live clients: %s", scene_id, error)
    return found
