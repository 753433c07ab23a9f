"""A connection of the live channel (``/scenes/{id}/live``): picks, edits and the scene's
change events over one WebSocket.

The protocol is :data:`PROTOCOL` (also in the OpenAPI document, on the
``GET`` of this path). Requests of one connection are handled one after the
other, in the order they arrive: each answer follows the previous one, and a
pick sent after an edit sees the edit. Events are pushed by a second task of
the connection (see ``service.live``), between answers.

The hot path is the one-ray pick: the message is read with orjson and, when
it is the usual ``{"type", "id", "origin", "direction"}`` with plain numbers,
traced without a pass of the pydantic model, as ``POST /pick`` does; anything
else is validated by the same model as the HTTP body (plus ``type`` and
``id``), so the refusals read the same.
"""

import asyncio
import logging
import math
import secrets

import orjson
import pydantic_core
from fastapi import WebSocket
from starlette.concurrency import run_in_threadpool
from starlette.websockets import WebSocketDisconnect, WebSocketDisconnected

from ..api.bodies import INLINE_PARSE_BYTES, parse_json, parse_json_body, plain_ray
from ..api.deps import find_scene, scene_in_memory
from ..api.errors import ReplayedAnswer
from ..api.idempotency import live_edit_key
from ..api.dual_form import RAYS, off_loop
from ..api.errors import ClientError
from ..api.middleware import KEY_CHECKED
from ..api.responses import JSON_OPTIONS
from ..api.schemas import BatchOptionsMessage, EditMessage, PickMessage
from ..queries.editing import patch_objects
from ..queries.picking import DEFAULT_WINDOW, RAY_BYTES, RECORD, RECORD_LAYOUTS, binary_batch, pick_one, window
from .hub import KEEP_EVENTS, RESYNC, Subscriber

log = logging.getLogger("service.live")

#: The live channel's path.
PATH = "/scenes/{scene_id}/live"

#: The first 4 bytes of a binary batch frame and of its answer ("pick batch", version 1).
MAGIC = b"PKB1"
#: MAGIC, then the request id as a little-endian uint32.
HEADER_BYTES = 8

#: The fields of an edit message (:class:`~service.api.schemas.EditMessage`).
EDIT_FIELDS = frozenset(EditMessage.model_fields)

#: How long a connection that must send the key in its first message may take to send it.
AUTH_SECONDS = 10.0

#: Close codes: the key is missing or wrong (RFC 6455's policy violation).
CLOSE_POLICY = 1008
#: The service is still starting (RFC 6455's "try again later").
CLOSE_TRY_LATER = 1013
#: No such scene, or it was deleted while connected (an application code, as HTTP's 404).
CLOSE_NO_SCENE = 4404
#: A close frame's reason holds at most 123 bytes.
REASON_BYTES = 123

PROTOCOL = f"""\
**A WebSocket**: open `ws://<host>/scenes/{{scene_id}}/live` (this GET with `Upgrade: websocket`);
as a plain HTTP GET it answers 426 (or 404 for an unknown scene).

**Auth**, when `PICK_API_KEY` is set: `Authorization: Bearer <key>` on the upgrade, or (browsers cannot
set that header) the first message `{{"type": "auth", "key": "<key>"}}` within {AUTH_SECONDS:g} s. A wrong
or missing key: an `error` message (status 401) saying so, then close code {CLOSE_POLICY}.

**On connect** the server sends `hello`: the scene id, its `version` (the scene's edit number, as edit answers
and events carry it), `object_count` (its live objects) and `objects`, the first `PICK_INLINE_OBJECTS` (10,000
by default) objects by id as of `version` (as `GET /scenes/{{id}}` inlines them); `objects_next_after` is the
last id listed when more follow, null when all are listed. An unknown scene: an `error` (404), then close
code {CLOSE_NO_SCENE} with the reason; the same when the scene is deleted while connected. During
start-up: an `error` (503), then close code {CLOSE_TRY_LATER}.

**The objects past the hello**, when `objects_next_after` is not null: page them over HTTP, `GET
/scenes/{{id}}/objects?after=<objects_next_after>`, then on along each page's `next_after` until it is null.
The pages are read after the hello while its events keep coming here, so they may be newer than the
hello, and an event may arrive before or after the page that already shows it. Each page answer says the
`version` it is as of, as each event does (an event's objects are as they were at its version, a merged or
coalesced event's too). Keep, per object id, the version of what is held of it: take an
object's JSON from a page (at the page's `version`) or an event (at the event's), and a `removed` event's
removal, only when that version is above the one held (equal versions show the same state). A removal is
held as such until the paging ends, so that a page older than it does not bring the object back; an object
missing from a page is not a removal (its `removed` event comes, or came). A page whose `version` is below the
hello's (another worker that has not seen that edit yet) is asked again. Paged to the end, the table is the
scene as of the newest version heard, and the events keep it so.

**Requests** (text frames, JSON objects), answered in the order they arrive, each answer echoing the
request's `id` (any JSON scalar, optional, null when absent):

- `{{"type": "pick", "id": ..., <the POST /scenes/{{id}}/pick body: origin, direction, tmin, tmax,
  cull_backfaces, mask, objects, exclude, alpha_test, alpha_cutoff, all_hits>}}` → `{{"type": "pick", "id": ...,
  "result": <exactly what POST /scenes/{{id}}/pick answers>}}`
- `{{"type": "edit", "id": ..., "objects": [<entries of the PATCH /scenes/{{id}}/objects body>]}}` →
  `{{"type": "edit", "id": ..., "result": <what that PATCH answers: {{"version", "count", "objects"}}>}}`;
  a string `id` is also the edit's idempotency key, as that PATCH's `Idempotency-Key` header: the same edit
  sent again with it (on this connection or another, after a reconnect) is applied once, and answered with
  the first answer
- `{{"type": "batch_options", "id": ..., <tmin, tmax, cull_backfaces, mask, objects, exclude, alpha_test,
  alpha_cutoff, line_tolerance, point_tolerance, records>}}` → `{{"type": "batch_options", "id": ...,
  "result": <the options now in force>}}`: the options of the binary batches that follow on this connection
  (until the next such message; before any, none are set).

**Binary batches** (binary frames): an {HEADER_BYTES}-byte header, the 4 bytes `{MAGIC.decode()}` and the
request id as a little-endian uint32, then the rays of the binary `POST /scenes/{{id}}/pick/batch` body
(N × {RAY_BYTES} bytes: ox, oy, oz, dx, dy, dz as little-endian float32). The answer is a binary frame: the
same header, then N records of 32 bytes as that route answers (float32 t, int32 object, int32 triangle,
float32 u, v, nx, ny, nz; a miss has object = triangle = -1), or of 44 bytes after `"records": "primitive"`
(the same, then int32 primitive, int32 index and float32 s, as that route's `records=primitive`).

**Errors**: a refused message is answered `{{"type": "error", "id": ..., "status": <the HTTP status of the
same refusal>, "detail": "..."}}` in its turn, and the connection stays open (a binary frame's id is its
header's; null when the message could not be read that far). Frames over the server's size limit
(`PICK_MAX_UPLOAD_MB`) close the connection (1009).

**Events**, pushed between answers: `{{"type": "event", "event": "moved" | "changed" | "added" | "removed" |
"vertices", "objects": [...], "version": n}}` after every saved edit of the scene, by any worker:
`objects` holds each object's JSON (as GET /scenes/{{id}}/objects/{{oid}} answers) or, for `removed`, ids;
`vertices` also has `mesh`, and its objects are the mesh's instances with their new bounds. A scene's
events go out at most once every `PICK_LIVE_EVENT_MS` (16 ms): those that come sooner wait for the
interval's end, and each run of `moved` events among them comes as one (each object once, its latest JSON,
the run's newest version); other kinds keep their order. A client
more than {KEEP_EVENTS} events behind has its waiting events coalesced per object (the latest JSON; removed
wins; all sent with the newest version; order: added, vertices, moved, changed, removed); more than
`PICK_LIVE_QUEUE` events behind (or objects held), it is sent `{{"type": "resync", "version": n, "object_count":
n, "objects_next_after": ..., "objects": [...]}}` instead, once it reads again: the table as of `version`, its
first objects and cursor as in `hello`. The client starts its table afresh from it, as from a hello (what it
held, and the pages it had asked for, are dropped), and pages the rest the same way, no page older than it.
Every event sent has a `version` above the last table's (hello's or resync's): an event of an edit
the table already shows is not sent.
"""


class SceneGone(Exception):
    """The connection's scene is unknown or was deleted: the connection closes."""

    def __init__(self, error: ClientError):
        super().__init__(error.detail)
        self.error = error
        #: The id of the request that found the scene gone, echoed in the error before the close.
        self.ident = None


def _dumps(message: dict) -> str:
    return orjson.dumps(message, option=JSON_OPTIONS).decode()


def error_frame(ident, status: int, detail: str) -> str:
    return _dumps({"type": "error", "id": ident, "status": status, "detail": detail})


def _is_scalar(value) -> bool:
    kind = type(value)
    return value is None or kind is str or kind is int or kind is bool or (kind is float and math.isfinite(value))


def _decode(text: str):
    """A text frame as JSON; NaN and infinities are read (the model then refuses them in words)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        # orjson refuses NaN and 1e999 outright; pydantic's reader takes them, so a pick says
        # "origin[2]: Input should be a finite number" as POST /pick does.
        return pydantic_core.from_json(text, allow_inf_nan=True)
    except ValueError as error:
        raise ClientError(422, f"the message is not valid JSON: {error}") from None


def table_frame(view, limit: int, **head) -> str:
    """A ``hello`` or ``resync`` frame: ``head``'s fields, then the view's ``version``,
    ``object_count``, ``objects_next_after`` and ``objects``, the first ``limit`` objects of the
    table as of that edit (serialized once per view: ``ObjectTable.head_json``). Its size and the
    time to make it grow with ``limit``, not with the scene."""
    objects = view.objects
    text, next_after = objects.head_json(limit)
    head = {**head, "version": view.version, "object_count": len(objects), "objects_next_after": next_after}
    return _dumps(head)[:-1] + ',"objects":' + text + "}"


def _reason(detail: str) -> str:
    encoded = detail.encode()
    if len(encoded) <= REASON_BYTES:
        return detail
    return encoded[:REASON_BYTES - 3].decode(errors="ignore") + "..."


class LiveSession:
    """One connection: authenticate, say hello, answer requests in order, push events."""

    def __init__(self, websocket: WebSocket, scene_id: str):
        state = websocket.app.state
        self.websocket = websocket
        self.scene_id = scene_id
        self.store = state.store
        self.settings = state.settings
        self.metrics = state.metrics
        self.hub = state.live_hub
        self.batch_cull = False
        self.batch_window = DEFAULT_WINDOW
        self.batch_options = {"tmin": 0.0, "tmax": None, "cull_backfaces": False, "mask": None, "objects": None,
                              "exclude": None, "alpha_test": True, "alpha_cutoff": 0.5, "line_tolerance": 0.0,
                              "point_tolerance": 0.0, "records": "surface"}
        self.batch_layout = RECORD
        # Answers and pushed events come from two tasks: one frame at a time.
        self.sending = asyncio.Lock()

    async def run(self) -> None:
        await self.websocket.accept()
        try:
            if not await self.authenticate():
                return
            stored = await self.open_scene()
            if stored is None:
                return
            subscriber = self.hub.subscribe(self.scene_id, stored)
            try:
                # Subscribed and read with no await between: every event delivered later is
                # either already in this table or sent after it.
                view = stored.view
                subscriber.floor = view.version
                # Made off the loop: the first of a view's hellos serializes up to PICK_INLINE_OBJECTS
                # objects, too long to hold up the other connections' picks and edits.
                hello = await run_in_threadpool(table_frame, view, self.settings.inline_objects, type="hello",
                                                scene=self.scene_id)
                await self.send_text(hello)
                pusher = asyncio.create_task(self.push(subscriber))
                try:
                    await self.serve()
                finally:
                    pusher.cancel()
            finally:
                self.hub.unsubscribe(subscriber)
        except (WebSocketDisconnect, WebSocketDisconnected):
            pass
        except SceneGone as gone:
            await self.refuse(CLOSE_NO_SCENE, gone.error.status_code, gone.error.detail, gone.ident)

    # ------------------------------------------------------------ connection
    async def send_text(self, text: str) -> None:
        async with self.sending:
            await self.websocket.send({"type": "websocket.send", "text": text})

    async def send_bytes(self, data: bytes) -> None:
        async with self.sending:
            await self.websocket.send({"type": "websocket.send", "bytes": data})

    async def refuse(self, code: int, status: int, detail: str, ident=None) -> None:
        """Say why in an ``error`` message, then close with ``code``."""
        try:
            await self.send_text(error_frame(ident, status, detail))
            async with self.sending:
                await self.websocket.close(code, _reason(detail))
        except (WebSocketDisconnect, WebSocketDisconnected):
            pass

    async def authenticate(self) -> bool:
        """True when no key is needed, the upgrade carried it, or the first message does."""
        if self.settings.api_key is None or self.websocket.scope.get(KEY_CHECKED):
            return True
        try:
            message = await asyncio.wait_for(self.websocket.receive(), AUTH_SECONDS)
        except TimeoutError:
            await self.refuse(CLOSE_POLICY, 401, f"no auth message within {AUTH_SECONDS:g} s: send "
                                                 '{"type": "auth", "key": "<key>"} first')
            return False
        if message["type"] == "websocket.disconnect":
            return False
        data = None
        if message.get("text") is not None:
            try:
                data = orjson.loads(message["text"])
            except orjson.JSONDecodeError:
                pass
        if not isinstance(data, dict) or data.get("type") != "auth":
            await self.refuse(CLOSE_POLICY, 401, 'missing API key: the first message must be {"type": "auth", '
                                                 '"key": "<key>"}, or the upgrade must carry '
                                                 "'Authorization: Bearer <key>'")
            return False
        key = data.get("key")
        if not isinstance(key, str):
            await self.refuse(CLOSE_POLICY, 401, 'missing API key: the auth message needs "key", the key as a string')
            return False
        # compare_digest takes as long for a wrong key as for a right one.
        if not secrets.compare_digest(key.encode(), self.settings.api_key.get_secret_value().encode()):
            await self.refuse(CLOSE_POLICY, 401, "wrong API key")
            return False
        return True

    async def open_scene(self):
        try:
            return await find_scene(self.store, self.scene_id)
        except ClientError as error:
            code = CLOSE_NO_SCENE if error.status_code == 404 else CLOSE_TRY_LATER
            await self.refuse(code, error.status_code, error.detail)
            return None

    async def scene(self):
        """The scene, current; :class:`SceneGone` once it is deleted."""
        try:
            return scene_in_memory(self.store, self.scene_id) or await find_scene(self.store, self.scene_id)
        except ClientError as error:
            if error.status_code == 404:
                raise SceneGone(error) from None
            raise

    async def push(self, subscriber: Subscriber) -> None:
        """Send the scene's events as they come, until cancelled or disconnected."""
        try:
            while True:
                pending = await subscriber.take()
                if pending is RESYNC:
                    stored = await self.scene()
                    view = stored.view
                    subscriber.floor = view.version
                    subscriber.stored = stored
                    pending = [await run_in_threadpool(table_frame, view, self.settings.inline_objects,
                                                       type="resync")]
                for frame in pending:
                    await self.send_text(frame)
        except (WebSocketDisconnect, WebSocketDisconnected):
            return
        except SceneGone as gone:
            await self.refuse(CLOSE_NO_SCENE, gone.error.status_code, gone.error.detail)
        except Exception:
            # Only this connection's events stop; its requests are still answered.
            log.exception("pushing the events of scene %s to a live client failed", self.scene_id)

    # ------------------------------------------------------------ requests
    async def serve(self) -> None:
        receive = self.websocket.receive
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if text is not None:
                await self.send_text(await self.answer(self.on_text, text, "a live message"))
                continue
            answer = await self.answer(self.on_binary, message.get("bytes") or b"", "a live binary batch")
            if type(answer) is str:
                await self.send_text(answer)
            else:
                await self.send_bytes(answer)

    async def answer(self, handle, message, what: str) -> str | bytes:
        """``await handle(message, request)``, or an ``error`` frame when it refuses the message or
        fails; ``handle`` sets ``request["id"]`` as soon as it knows the request's id, which the
        error echoes. :class:`SceneGone` passes, with that id."""
        request = {"id": None}
        try:
            return await handle(message, request)
        except ClientError as error:
            return error_frame(request["id"], error.status_code, error.detail)
        except SceneGone as gone:
            gone.ident = request["id"]
            raise
        except Exception:
            log.exception("%s on scene %s failed", what, self.scene_id)
            return error_frame(request["id"], 500, "internal server error")

    async def on_text(self, text: str, request: dict) -> str:
        """The answer to one text frame."""
        data = await run_in_threadpool(_decode, text) if len(text) > INLINE_PARSE_BYTES else _decode(text)
        if type(data) is not dict:
            raise ClientError(422, 'a message is a JSON object with a "type": pick, edit or batch_options')
        ident = data.get("id")
        if not _is_scalar(ident):
            raise ClientError(422, "id: must be a JSON scalar (a string, a finite number, true, false or "
                                   "null), echoed in the answer")
        request["id"] = ident
        kind = data.get("type")
        if kind == "pick":
            return await self.pick(data, text, ident)
        if kind == "batch_options":
            return await self.set_batch_options(text, ident)
        if kind == "edit":
            return await self.edit(data, ident)
        if kind == "auth":
            raise ClientError(422, "auth is only the first message, when the upgrade carried no key; "
                                   "this connection needs none now")
        if kind is None:
            raise ClientError(422, 'a message needs a "type": pick, edit or batch_options')
        shown = repr(kind) if len(repr(kind)) <= 40 else repr(kind)[:37] + "..."
        raise ClientError(422, f"unknown message type {shown}: send pick, edit or batch_options "
                               "(binary frames are batch picks)")

    async def pick(self, data: dict, text: str, ident) -> str:
        stored = await self.scene()
        plain = plain_ray(data) if len(data) == (4 if "id" in data else 3) else None
        if plain is not None:
            self.metrics.count_rays(1)
            result = pick_one(stored, self.settings, *plain)
        else:
            body = await parse_json_body(PickMessage, text)
            self.metrics.count_rays(1)
            result = pick_one(stored, self.settings, body.origin, body.direction, window(body), body.cull_backfaces,
                              body.all_hits)
        return _dumps({"type": "pick", "id": ident, "result": result})

    async def set_batch_options(self, text: str, ident) -> str:
        body = parse_json(BatchOptionsMessage, text)
        self.batch_window = window(body)
        self.batch_cull = body.cull_backfaces
        self.batch_layout = RECORD_LAYOUTS[body.records]
        self.batch_options = body.model_dump(exclude={"type", "id"})
        return _dumps({"type": "batch_options", "id": ident, "result": self.batch_options})

    async def edit(self, data: dict, ident) -> str:
        # The entries are patch_objects' to check, in the words of PATCH /scenes/{id}/objects.
        for name in data:
            if name not in EDIT_FIELDS:
                raise ClientError(422, f"{name}: unknown field")
        if "objects" not in data:
            raise ClientError(422, "objects: Field required")
        await self.scene()
        try:
            result = await patch_objects(self.store, self.scene_id, data["objects"], live_edit_key(ident))
        except ReplayedAnswer as replayed:
            # The first answer, as it was sent then.
            result = orjson.loads(replayed.body)
        return _dumps({"type": "edit", "id": ident, "result": result})

    async def on_binary(self, data: bytes, request: dict) -> bytes:
        """The records of a binary batch frame, behind its header."""
        if len(data) < HEADER_BYTES or data[:4] != MAGIC:
            raise ClientError(422, f"a binary frame starts with an {HEADER_BYTES}-byte header: the 4 bytes "
                                   f"{MAGIC.decode()!r} and the request id as a little-endian uint32; "
                                   f"this one starts with {bytes(data[:4])!r}")
        request["id"] = int.from_bytes(data[4:HEADER_BYTES], "little")
        stored = await self.scene()
        rays = memoryview(data)[HEADER_BYTES:]
        count = RAYS.count(len(rays), self.settings, self.batch_layout.itemsize,
                           f"the binary frame's rays (after its {HEADER_BYTES}-byte header)")
        self.metrics.count_rays(count)
        records = await off_loop(count, binary_batch, stored, rays, self.batch_cull, self.batch_window,
                                 self.batch_layout)
        return data[:HEADER_BYTES] + records
