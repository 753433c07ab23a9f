"""The live channel (``ws://<host>/scenes/{id}/live``) on the ``websockets`` library.

One WebSocket per client and scene carries hover picks, binary batch picks,
edits and every saved change of the scene (``docs/http-api.md``, "The live
channel"). :class:`AsyncLiveChannel` is the implementation, on asyncio;
:class:`LiveChannel` runs one on an event loop of its own in a thread, for
synchronous code.

The channel keeps the scene's object table (:class:`ObjectTable`) as the
protocol says: it starts from the ``hello``, pages the objects past it over
HTTP, and merges pages and events by version, so that an older event never
undoes a newer page nor an older page a newer event. A ``resync`` (the
service dropped this client's events because it fell too far behind) starts
the table afresh. A dropped connection is opened again (``reconnect``): the
new hello starts the table afresh as a resync does, and the requests still
unanswered are sent again, edits with the same ``id``, which the service
uses as the edit's idempotency key, so a resent edit applies once.
"""

import asyncio
import itertools
import json
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import numpy as np
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from .arrays import PICK_PRIMITIVE_RECORD, PICK_RECORD, BatchHits, as_vectors, pack_rays, records
from .models import AllHits, EditResult, ObjectsPage, PickHit
from .transport import ApiError, RetryPolicy

#: A binary batch frame's first 4 bytes, then the request id as a little-endian uint32.
MAGIC = b"PKB1"
HEADER_BYTES = 8

#: Close codes after which the channel does not reconnect: a wrong key, an unknown or deleted scene.
CLOSE_POLICY = 1008
CLOSE_NO_SCENE = 4404
FINAL_CLOSES = {CLOSE_POLICY: 401, CLOSE_NO_SCENE: 404}


@dataclass
class LiveEvent:
    """A saved change of the scene, as the service pushed it.

    Attributes
    ----------
    kind : {"moved", "changed", "added", "removed", "vertices"}
    objects : list
        Each changed object's JSON (as ``GET /scenes/{id}/objects/{oid}`` answers), or ids for ``removed``.
    version : int
        The scene's edit number the objects are as of.
    mesh : int or None
        The mesh of a ``vertices`` event.
    """

    kind: str
    objects: list
    version: int
    mesh: int | None = None


@dataclass
class Resync:
    """The table started afresh: after the service's ``resync`` (``reason`` "overflow": this client
    fell too far behind and missed events), after a reconnect ("reconnect"), or because the
    application read events too slowly and the channel dropped some of its queue ("local")."""

    version: int
    reason: str


class ObjectTable:
    """The scene's live objects, merged from the hello (or resync), pages and events by version.

    ``objects`` maps each object id to its JSON (a dict, as the service sends it: a million
    objects stay plain dicts). ``version`` is the newest edit number heard.
    """

    def __init__(self):
        self.objects: dict[int, dict] = {}
        self.held: dict[int, int] = {}          # id -> version of what is held (removals too, while paging)
        self.floor = -1                         # the version of the last hello or resync
        self.version = -1
        self.paging = False

    def reset(self, frame: dict) -> None:
        """Start afresh from a ``hello`` or ``resync`` frame."""
        version = frame["version"]
        self.objects = {item["id"]: item for item in frame["objects"]}
        self.held = dict.fromkeys(self.objects, version)
        self.floor = self.version = version
        self.paging = frame.get("objects_next_after") is not None

    def take_page(self, page: dict) -> bool:
        """Merge a page of ``GET /scenes/{id}/objects``; False when it is older than the table
        (ask for it again)."""
        version = page["version"]
        if version < self.floor:
            return False
        for item in page["objects"]:
            if self.held.get(item["id"], -1) < version:
                self.objects[item["id"]] = item
                self.held[item["id"]] = version
        self.version = max(self.version, version)
        return True

    def paged(self) -> None:
        """The paging reached the end: removals need no longer be held."""
        self.paging = False
        self.held = {oid: version for oid, version in self.held.items() if oid in self.objects}

    def apply(self, event: dict) -> None:
        """Merge an ``event`` frame."""
        version = event["version"]
        if event["event"] == "removed":
            for oid in event["objects"]:
                if self.held.get(oid, -1) < version:
                    self.objects.pop(oid, None)
                    if self.paging:
                        self.held[oid] = version
                    else:
                        self.held.pop(oid, None)
        else:
            for item in event["objects"]:
                if self.held.get(item["id"], -1) < version:
                    self.objects[item["id"]] = item
                    self.held[item["id"]] = version
        self.version = max(self.version, version)


@dataclass
class Pending:
    """A request sent and not yet answered: what to send again after a reconnect, and its future."""

    frame: str | bytes
    future: asyncio.Future
    binary_layout: np.dtype | None = None
    rays: tuple = field(default_factory=tuple)


def live_url(base_url: str, scene_id: str) -> str:
    scheme, rest = base_url.rstrip("/").split("://", 1)
    return f"{'wss' if scheme == 'https' else 'ws'}://{rest}/scenes/{scene_id}/live"


class AsyncLiveChannel:
    """A scene's live channel on asyncio.

    Parameters
    ----------
    base_url : str
        The service's HTTP URL (``ws``/``wss`` is derived from it).
    scene_id : str
    token : str, optional
        Sent as ``Authorization: Bearer <token>`` on the upgrade.
    retry : RetryPolicy, optional
        How often and how long to wait when (re)connecting fails.
    pages : AsyncClient, optional
        Pages the objects past the hello (``objects_page``); one is made from ``base_url`` when not given.
    reconnect : bool
        Open the connection again when it drops, resending what is unanswered.
    max_events : int
        Events kept for :meth:`events` before the oldest are dropped (a :class:`Resync` with reason
        ``"local"`` says so); the table itself is always kept current.
    page_size : int
        Objects per page when paging past the hello.
    **connect_options
        Passed to ``websockets.asyncio.client.connect`` (``max_queue``, ``sock``, ...).
    """

    def __init__(self, base_url: str, scene_id: str, *, token: str | None = None,
                 retry: RetryPolicy | None = None, pages=None, reconnect: bool = True, max_events: int = 10_000,
                 page_size: int = 10_000, **connect_options):
        self.base_url = base_url.rstrip("/")
        self.scene_id = scene_id
        self.url = live_url(base_url, scene_id)
        self.token = token
        self.retry = retry or RetryPolicy()
        self.reconnect = reconnect
        self.page_size = page_size
        self.connect_options = {"max_size": None, **connect_options}
        self._pages = pages
        self._own_pages = pages is None
        self.table = ObjectTable()
        #: The hello's fields but its objects (``scene``, ``version``, ``object_count``, ...).
        self.hello: dict = {}
        self._events: asyncio.Queue = asyncio.Queue(max_events)
        self._ids = itertools.count(1)
        self._pending: dict = {}                 # text request id -> Pending
        self._binary: dict[int, Pending] = {}    # binary request id -> Pending
        self._records = PICK_RECORD
        self._connection: ClientConnection | None = None
        self._reader: asyncio.Task | None = None
        self._pager: asyncio.Task | None = None
        self._reading = asyncio.Event()
        self._reading.set()
        self._complete = asyncio.Event()
        self._changed = asyncio.Condition()
        self._closed = False
        self._failure: BaseException | None = None

    # ------------------------------------------------------------ connection
    async def connect(self) -> "AsyncLiveChannel":
        """Open the WebSocket and read the hello (retrying as ``retry`` says)."""
        if self._pages is None:
            from .client import AsyncClient
            self._pages = AsyncClient(self.base_url, token=self.token, retry=self.retry)
        await self._open()
        self._reader = asyncio.create_task(self._read())
        return self

    async def _open(self) -> None:
        headers = {} if self.token is None else {"Authorization": f"Bearer {self.token}"}
        for attempt in range(self.retry.attempts):
            last = attempt == self.retry.attempts - 1
            try:
                connection = await connect(self.url, additional_headers=headers, **self.connect_options)
                # A socket given to connect over serves the first connection only; a reconnect dials anew.
                self.connect_options.pop("sock", None)
                first = json.loads(await connection.recv())
            except (OSError, InvalidHandshake, asyncio.TimeoutError) as error:
                if last:
                    raise ConnectionError(f"could not open {self.url}: {error}") from error
            except ConnectionClosed as closed:
                status = FINAL_CLOSES.get(closed.rcvd.code if closed.rcvd else None)
                if status is not None or last:
                    raise ApiError(status or 503, closed.rcvd.reason if closed.rcvd else str(closed)) from closed
            else:
                if first.get("type") != "error":
                    break
                await connection.close()
                # 503: the service is starting (close 1013); anything else is final.
                if first["status"] != 503 or last:
                    raise ApiError(first["status"], first["detail"])
            await asyncio.sleep(self.retry.wait(attempt, None))
        self._connection = connection
        self.hello = {key: value for key, value in first.items() if key != "objects"}
        await self._start_table(first)

    async def _start_table(self, frame: dict) -> None:
        self.table.reset(frame)
        if self._pager is not None:
            self._pager.cancel()
        self._complete.clear()
        if self.table.paging:
            self._pager = asyncio.create_task(self._page(frame["objects_next_after"]))
        else:
            self._pager = None
            self._complete.set()
        await self._notify()

    async def _page(self, after: int) -> None:
        """Page the objects past the table's first, merging each page by its version."""
        while after is not None:
            page = await self._pages.objects_page(self.scene_id, after=after, limit=self.page_size)
            answer = page.model_dump() if isinstance(page, ObjectsPage) else page
            if not self.table.take_page(answer):
                continue                      # another worker behind the hello: ask again
            after = answer["next_after"]
            await self._notify()
        self.table.paged()
        self._complete.set()
        await self._notify()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _read(self) -> None:
        while True:
            await self._reading.wait()
            try:
                message = await self._connection.recv()
            except ConnectionClosed as closed:
                if self._closed:
                    return
                code = closed.rcvd.code if closed.rcvd else None
                if code in FINAL_CLOSES or not self.reconnect:
                    self._fail(ApiError(FINAL_CLOSES.get(code, 503),
                                        closed.rcvd.reason if closed.rcvd else "the live channel closed"))
                    return
                try:
                    await self._open()
                except Exception as error:       # noqa: BLE001 - every waiter must hear of it
                    self._fail(error)
                    return
                self._put(Resync(self.table.version, "reconnect"))
                for pending in list(self._pending.values()) + list(self._binary.values()):
                    await self._connection.send(pending.frame)
                continue
            if isinstance(message, bytes):
                self._answer_binary(message)
            else:
                await self._answer_text(json.loads(message))

    def _fail(self, error: BaseException) -> None:
        self._failure = error
        for pending in list(self._pending.values()) + list(self._binary.values()):
            if not pending.future.done():
                pending.future.set_exception(error)
        self._pending.clear()
        self._binary.clear()
        self._put(error)

    async def _answer_text(self, message: dict) -> None:
        kind = message.get("type")
        if kind == "event":
            self.table.apply(message)
            self._put(LiveEvent(message["event"], message["objects"], message["version"], message.get("mesh")))
            await self._notify()
            return
        if kind == "resync":
            await self._start_table(message)
            self._put(Resync(message["version"], "overflow"))
            return
        pending = self._pending.pop(message.get("id"), None)
        if pending is None:
            if kind == "error" and isinstance(message.get("id"), int):
                pending = self._binary.pop(message["id"], None)
            if pending is None:
                return                          # an answer to a request no one waits for
        if pending.future.done():
            return
        if kind == "error":
            pending.future.set_exception(ApiError(message["status"], message["detail"]))
        else:
            pending.future.set_result(message["result"])

    def _answer_binary(self, data: bytes) -> None:
        ident = int.from_bytes(data[4:HEADER_BYTES], "little")
        pending = self._binary.pop(ident, None)
        if pending is None or pending.future.done():
            return
        origins, directions = pending.rays
        try:
            found = records(data[HEADER_BYTES:], pending.binary_layout, len(origins), "a live binary batch")
            pending.future.set_result(BatchHits.from_records(found, origins, directions))
        except ValueError as error:
            pending.future.set_exception(error)

    def _put(self, item) -> None:
        """Queue an event for :meth:`events`; when the application lags, drop the oldest and say so."""
        if self._events.full():
            while not self._events.empty():
                self._events.get_nowait()
            self._events.put_nowait(Resync(self.table.version, "local"))
        self._events.put_nowait(item)

    async def _request(self, message: dict) -> dict:
        if self._failure is not None:
            raise self._failure
        ident = message.setdefault("id", next(self._ids))
        frame = json.dumps(message)
        future = asyncio.get_running_loop().create_future()
        self._pending[ident] = Pending(frame, future)
        try:
            await self._connection.send(frame)
        except ConnectionClosed:
            pass                                # the reader reconnects and sends it again
        return await future

    # ------------------------------------------------------------ requests
    async def pick(self, origin, direction, **options) -> PickHit | AllHits:
        """A pick over the channel (a hover): ``POST /pick``'s body, its answer.

        Parameters
        ----------
        origin, direction : (3,) float
        **options
            ``tmin``, ``tmax``, ``cull_backfaces``, ``mask``, ``objects``, ``exclude``, ``all_hits``, ...
        """
        message = {"type": "pick", "origin": [float(x) for x in origin],
                   "direction": [float(x) for x in direction], **options}
        answer = await self._request(message)
        return AllHits.model_validate(answer) if "hits" in answer else PickHit.model_validate(answer)

    async def edit(self, entries: list[dict], *, id: str | None = None) -> EditResult:
        """Change objects in one edit (``PATCH /scenes/{id}/objects``'s entries), all or nothing.

        ``id`` is the edit's idempotency key: made here when not given, and sent again unchanged
        when the edit is resent after a reconnect.
        """
        entries = [{key: np.asarray(value).tolist() if isinstance(value, np.ndarray) else value
                    for key, value in entry.items()} for entry in entries]
        answer = await self._request({"type": "edit", "id": id or uuid.uuid4().hex, "objects": entries})
        return EditResult.model_validate(answer)

    async def move(self, ids, transforms, *, id: str | None = None) -> EditResult:
        """New transforms, (N, 4, 4), for objects ``ids`` (N,), in one edit."""
        transforms = np.asarray(transforms, dtype=np.float64).reshape(-1, 4, 4)
        return await self.edit([{"id": int(oid), "transform": matrix.tolist()}
                                for oid, matrix in zip(np.asarray(ids).reshape(-1), transforms)], id=id)

    async def batch_options(self, **options) -> dict:
        """Options of the binary batches that follow (``tmin``, ``mask``, ``records``, ...); the
        options now in force."""
        answer = await self._request({"type": "batch_options", **options})
        self._records = PICK_PRIMITIVE_RECORD if answer.get("records") == "primitive" else PICK_RECORD
        return answer

    async def pick_batch(self, origins, directions) -> BatchHits:
        """N rays as one binary frame (float32), with the options of the last :meth:`batch_options`.

        Parameters
        ----------
        origins, directions : (N, 3) float

        Returns
        -------
        BatchHits
        """
        if self._failure is not None:
            raise self._failure
        origins, directions = as_vectors(origins, "origins"), as_vectors(directions, "directions")
        ident = next(self._ids) & 0xFFFFFFFF
        frame = MAGIC + ident.to_bytes(4, "little") + pack_rays(origins, directions)
        future = asyncio.get_running_loop().create_future()
        self._binary[ident] = Pending(frame, future, self._records, (origins, directions))
        try:
            await self._connection.send(frame)
        except ConnectionClosed:
            pass
        return await future

    # ------------------------------------------------------------ the table and the events
    @property
    def objects(self) -> dict[int, dict]:
        """The scene's objects by id, as this channel knows them (see :class:`ObjectTable`)."""
        return self.table.objects

    @property
    def version(self) -> int:
        """The newest edit number heard."""
        return self.table.version

    async def wait_complete(self) -> None:
        """Wait until the objects past the hello (or the last resync) are paged in."""
        await self._complete.wait()

    async def wait_version(self, version: int) -> None:
        """Wait until the table shows edit ``version`` (and every object is paged in)."""
        async with self._changed:
            await self._changed.wait_for(lambda: (self.table.version >= version and self._complete.is_set())
                                         or self._failure is not None)
        if self._failure is not None:
            raise self._failure

    async def next_event(self) -> LiveEvent | Resync:
        """The next event or resync, in the order they came."""
        item = await self._events.get()
        if isinstance(item, BaseException):
            raise item
        return item

    async def events(self) -> AsyncIterator[LiveEvent | Resync]:
        """Events and resyncs as they come (``async for event in channel.events()``)."""
        while True:
            yield await self.next_event()

    def pause(self) -> None:
        """Stop reading from the socket (answers and events wait; the service keeps, coalesces and at
        last drops this client's events, then sends a resync when reading resumes).

        Keep it short: a connection that answers no ping for some 40 s (the server's WebSocket
        ping interval and timeout) is closed by the server, and the channel then reconnects.
        """
        self._reading.clear()

    def resume(self) -> None:
        """Read from the socket again."""
        self._reading.set()

    async def close(self) -> None:
        self._closed = True
        for task in (self._reader, self._pager):
            if task is not None:
                task.cancel()
        if self._connection is not None:
            await self._connection.close()
        if self._own_pages and self._pages is not None:
            await self._pages.close()

    async def __aenter__(self) -> "AsyncLiveChannel":
        if self._connection is None:
            await self.connect()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()


class LiveChannel:
    """A scene's live channel for synchronous code: an :class:`AsyncLiveChannel` on an event loop
    of its own, in a daemon thread. Its methods block until answered (``timeout`` seconds at most).

    Make one with ``Client.live(scene_id)`` or :meth:`open`.
    """

    def __init__(self, channel: AsyncLiveChannel, loop: asyncio.AbstractEventLoop, thread: threading.Thread,
                 timeout: float):
        self.channel = channel
        self.loop = loop
        self.thread = thread
        self.timeout = timeout

    @classmethod
    def open(cls, base_url: str, scene_id: str, *, timeout: float = 60.0, **options) -> "LiveChannel":
        """Connect (hello read) on a new loop thread; ``options`` as :class:`AsyncLiveChannel`'s."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name=f"bvh-pick-live-{scene_id[:8]}", daemon=True)
        thread.start()

        async def make():
            return await AsyncLiveChannel(base_url, scene_id, **options).connect()

        try:
            channel = asyncio.run_coroutine_threadsafe(make(), loop).result(timeout)
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            raise
        return cls(channel, loop, thread, timeout)

    def _call(self, coroutine, timeout: float | None = None):
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(timeout or self.timeout)
        except TimeoutError:
            # Cancelled, so that a late answer (an event taken off the queue) is not lost.
            future.cancel()
            raise

    def pick(self, origin, direction, **options) -> PickHit | AllHits:
        """See :meth:`AsyncLiveChannel.pick`."""
        return self._call(self.channel.pick(origin, direction, **options))

    def edit(self, entries: list[dict], *, id: str | None = None) -> EditResult:
        """See :meth:`AsyncLiveChannel.edit`."""
        return self._call(self.channel.edit(entries, id=id))

    def move(self, ids, transforms, *, id: str | None = None) -> EditResult:
        """See :meth:`AsyncLiveChannel.move`."""
        return self._call(self.channel.move(ids, transforms, id=id))

    def batch_options(self, **options) -> dict:
        """See :meth:`AsyncLiveChannel.batch_options`."""
        return self._call(self.channel.batch_options(**options))

    def pick_batch(self, origins, directions) -> BatchHits:
        """See :meth:`AsyncLiveChannel.pick_batch`."""
        return self._call(self.channel.pick_batch(origins, directions))

    @property
    def objects(self) -> dict[int, dict]:
        """A copy of the channel's object table (made on its loop)."""
        async def copy():
            return dict(self.channel.objects)
        return self._call(copy())

    @property
    def version(self) -> int:
        return self.channel.version

    @property
    def hello(self) -> dict:
        return self.channel.hello

    def wait_version(self, version: int, timeout: float | None = None) -> None:
        """Block until the table shows edit ``version`` and is paged in."""
        self._call(self.channel.wait_version(version), timeout)

    def wait_complete(self, timeout: float | None = None) -> None:
        self._call(self.channel.wait_complete(), timeout)

    def next_event(self, timeout: float | None = None) -> LiveEvent | Resync:
        """The next event or resync; ``TimeoutError`` when none comes within ``timeout``."""
        return self._call(self.channel.next_event(), timeout)

    def events(self, timeout: float | None = None) -> Iterator[LiveEvent | Resync]:
        """Events as they come, until none comes within ``timeout``."""
        while True:
            try:
                yield self.next_event(timeout)
            except TimeoutError:
                return

    def pause(self) -> None:
        """See :meth:`AsyncLiveChannel.pause`."""
        self.loop.call_soon_threadsafe(self.channel.pause)

    def resume(self) -> None:
        self.loop.call_soon_threadsafe(self.channel.resume)

    def close(self) -> None:
        try:
            self._call(self.channel.close())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(self.timeout)

    def __enter__(self) -> "LiveChannel":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
