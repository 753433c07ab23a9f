"""Pure ASGI middleware (no per-request task or copy, unlike ``BaseHTTPMiddleware``)."""

import time

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import ClientError
from ..ops.metrics import Metrics
from ..settings import MEGABYTE


class BodyTooLarge(ClientError):
    def __init__(self, limit_mb: float):
        super().__init__(413, f"the request body is larger than the limit of {limit_mb:g} MiB (PICK_MAX_UPLOAD_MB)")


class BodyLimit:
    """Refuse request bodies over ``limit_mb`` MiB while they are read, not after.

    A declared ``Content-Length`` over the limit is answered 413 at once; a
    body that turns out longer (chunked uploads) raises :class:`BodyTooLarge`
    from ``receive`` as soon as the limit is crossed, which the app's error
    handler turns into the same 413.
    """

    def __init__(self, app: ASGIApp, limit_mb: float):
        self.app = app
        self.limit_mb = limit_mb
        self.limit = int(limit_mb * MEGABYTE)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length":
                if value.isdigit() and int(value) > self.limit:
                    await send_json(send, 413, BodyTooLarge(self.limit_mb).detail)
                    return
                break
        received = 0
        limit = self.limit
        limit_mb = self.limit_mb

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit_mb)
            return message

        await self.app(scope, limited_receive, send)


async def send_json(send: Send, status: int, detail: str, headers: list | None = None) -> None:
    body = orjson.dumps({"detail": detail})
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())] + (headers or [])})
    await send({"type": "http.response.body", "body": body})


class RequestMetrics:
    """Count and time every request by method, route template (``/scenes/{scene_id}/pick``) and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            route = scope.get("route")
            # Unmatched paths share one label, so a scan of random URLs cannot grow the metrics.
            # path_format: the template without convertors ("/scenes/{scene_id}", not "{scene_id:item}").
            template = getattr(route, "path_format", None) or "unmatched"
            self.metrics.observe(scope["method"], template, status, time.perf_counter() - start)


async def refuse_websocket(receive: Receive, send: Send, status: int, detail: str) -> None:
    """Accept a WebSocket, say why it is refused in an ``error`` message (with the HTTP ``status``
    of the same refusal), and close it with 1008 (policy violation).

    Closing before the accept would answer the upgrade with a bare 403, which
    a browser reports without the reason.
    """
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.send",
                "text": orjson.dumps({"type": "error", "id": None, "status": status, "detail": detail}).decode()})
    await send({"type": "websocket.close", "code": 1008, "reason": detail.encode()[:123].decode(errors="ignore")})
