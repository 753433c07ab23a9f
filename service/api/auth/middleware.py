"""The middleware that checks every request's token and scope, before any routing."""

from starlette.types import ASGIApp, Receive, Scope as AsgiScope, Send

from .tokens import TokenRefused, TokenVerifier
from ..middleware import refuse_websocket, send_json

#: Where :class:`TokenAuth` leaves a request's :class:`~service.api.auth.tokens.Grant` in its ASGI
#: scope (``request.scope[GRANT]``); absent when the service needs no token, and on a WebSocket whose
#: upgrade carried none (the live channel then reads the token from its first message).
GRANT = "pick.grant"

#: The answer's header on a 401 (RFC 6750).
CHALLENGE = [(b"www-authenticate", b'Bearer realm="pick"')]


def bearer_token(scope: AsgiScope) -> tuple[bool, str | None]:
    """Whether the request has an ``Authorization`` header, and its bearer token (None when it
    has none or another scheme)."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = value.partition(b" ")
            if scheme.lower() == b"bearer":
                return True, token.strip().decode("latin-1")
            return True, None
    return False, None


class TokenAuth:
    """With a key, a secret or a JWKS set, every other route needs ``Authorization: Bearer <token>``
    whose scope and scenes allow the request (``service.api.auth.scopes``).

    A middleware rather than a route dependency: it covers every route,
    present and future, in one place (the scope comes from the method and the
    path, :func:`~service.api.auth.scopes.required_scope`), and costs a header
    scan and a dictionary look-up (verified tokens are cached) instead of a
    pass of FastAPI's dependency solver on each pick.

    A missing, wrong, expired or foreign-signed token is answered 401 with
    ``WWW-Authenticate``; a good one without the scope or scene, 403 naming
    it. A WebSocket upgrade is accepted, told why in an ``error`` message and
    closed with 1008 instead (a browser can read the reason); one with no
    ``Authorization`` header goes on, since browsers cannot set that header:
    the live channel then reads the token from its first message.

    Parameters
    ----------
    app : ASGI app
    verifier : TokenVerifier
    open_paths : frozenset of str
        Paths that answer without a token (the app chooses them: see
        ``service.app.open_paths``).
    """

    def __init__(self, app: ASGIApp, verifier: TokenVerifier, open_paths: frozenset[str]):
        self.app = app
        self.verifier = verifier
        self.open_paths = open_paths

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan" or (kind == "http" and scope["path"] in self.open_paths):
            await self.app(scope, receive, send)
            return
        present, token = bearer_token(scope)
        if token is None:
            if kind == "websocket" and not present:
                await self.app(scope, receive, send)
                return
            await self.refuse(kind, receive, send, 401, "missing API key or token: send 'Authorization: Bearer "
                                                        "<key or token>'")
            return
        try:
            grant = await self.verifier.verify(token)
        except TokenRefused as refused:
            await self.refuse(kind, receive, send, 401, refused.detail)
            return
        refusal = grant.refusal("GET" if kind == "websocket" else scope["method"], scope["path"])
        if refusal is not None:
            await self.refuse(kind, receive, send, 403, refusal)
            return
        scope[GRANT] = grant
        await self.app(scope, receive, send)

    @staticmethod
    async def refuse(kind: str, receive: Receive, send: Send, status: int, detail: str) -> None:
        if kind == "websocket":
            await refuse_websocket(receive, send, status, detail)
        else:
            await send_json(send, status, detail, CHALLENGE if status == 401 else None)
