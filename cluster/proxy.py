"""What Serve's HTTP proxy answers when a replica is lost under a request: 503 with Retry-After.

When the replica a request was sent to dies before answering (``kill -9``,
its node lost), Serve's proxy returns without an answer and uvicorn answers
500 "Internal Server Error". The app itself never answers 500
(a client's request never kills it, and a server fault is a bug), so a 500
at the proxy means the request met a failure of the cluster, not of the
request: this middleware, which Serve runs in its proxy
(``RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH=cluster.proxy:middlewares``, set
by ``cluster/local.py`` and ``cluster/kuberay.yaml``), turns it into 503 with
``Retry-After: 1`` in the service's own words, and the client retries; Serve
has by then routed the scene to a live replica.
"""

import orjson
from starlette.middleware import Middleware

#: What a client is told, with ``Retry-After``.
REPLICA_LOST = "the replica serving this request stopped before answering; retry shortly"

RETRY_AFTER_SECONDS = 1


class ReplicaLost:
    """Pure ASGI middleware: a 500 from the proxy, or no answer at all, becomes a 503 with ``Retry-After``."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = replaced = False

        async def refuse():
            body = orjson.dumps({"detail": REPLICA_LOST})
            await send({"type": "http.response.start", "status": 503,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode()),
                                    (b"retry-after", str(RETRY_AFTER_SECONDS).encode())]})
            await send({"type": "http.response.body", "body": body})

        async def guarded(message):
            nonlocal started, replaced
            if message["type"] == "http.response.start":
                started = True
                if message["status"] == 500:
                    replaced = True
                    await refuse()
                    return
            if not replaced:
                await send(message)

        try:
            await self.app(scope, receive, guarded)
        except Exception:
            if started:
                raise
            await refuse()
            return
        if not started:
            # The proxy returns without answering when the replica died under the request
            # (ray.serve._private.http_util.send_http_response_on_exception sends nothing for
            # a 500); uvicorn would then answer 500 itself, past this middleware.
            await refuse()


def middlewares() -> list:
    """The proxy's middlewares (Serve calls this at the proxy's start)."""
    return [Middleware(ReplicaLost)]
