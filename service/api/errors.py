"""Errors as JSON ``{"detail": "..."}`` that say what was wrong.

``bvh`` refuses bad input with ``ValueError`` (422 here) and unknown ids with
``bvh.UnknownIdError`` (404); :func:`client_errors` maps those around each
call into ``bvh``, so a ``ValueError`` from a bug elsewhere still surfaces as
a 500 instead of being blamed on the client. Anything unexpected becomes a
500 with a log line and the traceback; the server keeps serving.

A client that hangs up before its body is read (Starlette's
``ClientDisconnect``) is the client's doing, not an error of the server: it
is logged at INFO and counted in ``/metrics`` with status :data:`CLIENT_CLOSED`
(nginx's 499), an answer nobody receives.
"""

import logging
import re
from contextlib import contextmanager

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.staticfiles import StaticFiles

import bvh

from .responses import JSONBytes
from ..store.errors import SceneReadOnly, StorageFull

log = logging.getLogger("service")

#: Longest rendering of a refused value quoted back in a message.
QUOTE_LIMIT = 40

#: The status counted for a request whose client hung up before its body was read (nginx's
#: "client closed request"); never sent, since nobody is there to read it.
CLIENT_CLOSED = 499


class ClientError(HTTPException):
    """An HTTP error caused by the request, with a message for the client."""

    def __init__(self, status_code: int, detail: str, headers: dict | None = None):
        super().__init__(status_code=status_code, detail=detail, headers=headers)


#: The header on the answer to a repeated write (``service.api.idempotency``).
REPLAYED_HEADER = "Idempotent-Replayed"


class ReplayedAnswer(ClientError):
    """The first answer of a write repeated under its idempotency key (``service.api.idempotency``):
    sent as it was, plus ``Idempotent-Replayed: true``."""

    def __init__(self, status_code: int, body: bytes):
        super().__init__(status_code, "replayed", headers={REPLAYED_HEADER: "true"})
        self.body = body

    def response(self) -> Response:
        if self.status_code == 204:
            return Response(status_code=204, headers=self.headers)
        return Response(self.body, status_code=self.status_code, headers=self.headers, media_type="application/json")


#: Seconds a client is told to wait (``Retry-After``) after a 503 of the object store.
STORE_RETRY_AFTER = 2


class StoreUnavailable(ClientError):
    """The object store (``PICK_STORE=s3://...``) did not answer within its bounded retries: 503.

    Parameters
    ----------
    location : str
        ``s3://bucket/prefix``.
    what : str
        The request that failed (``create scenes/<id>/journal/...``).
    error : Exception
        The last failure.
    """

    def __init__(self, location: str, what: str, error: Exception):
        self.cause = error
        first_line = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
        super().__init__(503, f"the object store {location} is not answering ({what}: {first_line}); "
                              f"retry in a few seconds", headers={"Retry-After": str(STORE_RETRY_AFTER)})


class EditNotConfirmed(ClientError):
    """An edit whose journal segment could not be written while the object store is unreachable: 503."""

    def __init__(self, location: str, seconds: float):
        super().__init__(503, f"the object store {location} did not answer for {seconds:g} s: this edit is not "
                              f"confirmed (it is applied here and is kept if the store comes back; read the "
                              f"scene before repeating it)", headers={"Retry-After": str(STORE_RETRY_AFTER)})


class EditConflict(ClientError):
    """Another replica wrote the same journal sequence number first: this edit was dropped (503)."""

    def __init__(self, seq: int):
        self.seq = seq
        super().__init__(503, f"another replica changed the scene at the same moment (journal record {seq}): "
                              f"nothing of this edit was kept; retry it", headers={"Retry-After": "0"})


@contextmanager
def client_errors(what: str = ""):
    """Turn ``bvh``'s refusals inside the block into 422 (bad input) or 404 (unknown id).

    Parameters
    ----------
    what : str
        Prefixed to the message, e.g. ``"file: "``, when the library's own
        message would not say which part of the request it is about.
    """
    try:
        yield
    except bvh.UnknownIdError as error:
        raise ClientError(404, what + _message(error)) from error
    except ValueError as error:
        raise ClientError(422, what + _message(error)) from error
    except (SceneReadOnly, StorageFull) as error:
        raise store_refusal(error) from error


def refuse_unknown_query(request: Request, known: frozenset[str]) -> None:
    """422 naming the query parameters of ``request`` outside ``known``: a misspelt one
    (``?afer=``) would otherwise be ignored, and the answer silently be another's."""
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        raise ClientError(422, f"unknown query parameter{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)} "
                               f"(known: {', '.join(sorted(known))})")


def store_refusal(error: Exception) -> ClientError:
    """The store's refusals of a write: a damaged scene is read-only (409), a full disk 507."""
    if isinstance(error, StorageFull):
        return ClientError(507, error.strerror)
    return ClientError(409, str(error))


def _message(error: Exception) -> str:
    # KeyError subclasses (LookupError) quote their message; str() of the first arg does not.
    return str(error.args[0]) if error.args else type(error).__name__


def _location(loc: tuple) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part in ("body", "query", "path", "header") and not text:
            continue
        else:
            text += ("." if text else "") + str(part)
    return text


def _quote(value) -> str:
    text = repr(value)
    return text if len(text) <= QUOTE_LIMIT else text[:QUOTE_LIMIT - 3] + "..."


def describe_validation_errors(errors: list[dict], union_tags: frozenset = frozenset()) -> str:
    """One readable line per problem: ``origin[2]: Input should be a valid number, got 'NaN'``.

    ``union_tags`` are the tags of a tagged union that was validated: pydantic
    puts the chosen member's tag first in each location, which means nothing
    to a client.
    """
    lines = []
    for error in errors[:10]:
        loc = tuple(error.get("loc", ()))
        if loc and loc[0] in union_tags:
            loc = loc[1:]
        where = _location(loc)
        message = error.get("msg", "invalid")
        if message.startswith("Value error, "):
            message = message[len("Value error, "):]
        if error.get("type") in ("float_type", "int_type", "bool_type", "string_type", "finite_number",
                                 "float_parsing", "int_parsing", "literal_error", "greater_than",
                                 "greater_than_equal", "less_than", "less_than_equal", "int_from_float"):
            message += f", got {_quote(error.get('input'))}"
        if error.get("type") == "json_invalid":
            message = "the request body is not valid JSON: " + str(error.get("ctx", {}).get("error", message))
            where = ""
        if error.get("type") == "extra_forbidden":
            message = "unknown field"
        lines.append(f"{where}: {message}" if where else message)
    if len(errors) > 10:
        lines.append(f"... and {len(errors) - 10} more problems")
    return "; ".join(lines)


def validation_error(error: ValidationError, union_tags: frozenset = frozenset()) -> ClientError:
    """422 for a pydantic error raised while validating a body by hand."""
    return ClientError(422, describe_validation_errors(error.errors(include_url=False), union_tags))


def _route_path(scope) -> str:
    """The path the router matches: the request's path without the app's mount point.

    Inside a mount of the app's own (the static files under ``/docs/static``), Starlette has
    added the mount's path to ``root_path``; ``app_root_path`` keeps the app's."""
    path, root = scope["path"], scope.get("app_root_path", scope.get("root_path", ""))
    return path[len(root):] if root and path.startswith(root) else path


#: What a mounted ``StaticFiles`` answers (``/docs/static/...``); any other method gets its 405.
STATIC_FILE_METHODS = frozenset({"GET", "HEAD"})


def method_table(routes) -> list[tuple[re.Pattern, frozenset[str]]]:
    """``(path regex, methods)`` of each route that has both, for :func:`allowed_methods`.

    Parameters
    ----------
    routes : iterable of routes
        Every route of the app, from each router it includes (at no prefix); a mount
        of static files counts as a route of ``GET`` and ``HEAD`` under its path.
    """
    table = []
    for route in routes:
        methods = getattr(route, "methods", None)
        if methods is None and isinstance(getattr(route, "app", None), StaticFiles):
            methods = STATIC_FILE_METHODS
        if getattr(route, "path_regex", None) is not None and methods:
            table.append((route.path_regex, frozenset(methods)))
    return table


def allowed_methods(request: Request) -> list[str]:
    """Every method some route of the app answers on the request's path, OPTIONS included.

    Starlette's own 405 names the methods of the one route it matched first,
    while a path such as ``/scenes/{scene_id}`` is served by several routes
    (``GET`` and ``DELETE``): this gathers them all, from the table the app
    keeps in ``app.state.method_table`` (see :func:`method_table`).
    """
    path = _route_path(request.scope)
    methods = {"OPTIONS"}
    for path_regex, route_methods in request.app.state.method_table:
        if path_regex.match(path):
            methods.update(route_methods)
    return sorted(methods)


def method_not_allowed(request: Request) -> Response:
    """405 with every method the path takes in ``Allow``; an ``OPTIONS`` request gets the
    list itself (204)."""
    methods = allowed_methods(request)
    headers = {"Allow": ", ".join(methods)}
    if request.method == "OPTIONS":
        return Response(status_code=204, headers=headers)
    return JSONBytes({"detail": f"{request.method} is not a method of {request.url.path}: "
                                f"it takes {', '.join(methods)}"}, status_code=405, headers=headers)


async def http_error(request: Request, error: StarletteHTTPException):
    if isinstance(error, ReplayedAnswer):
        return error.response()
    if error.status_code == 405:
        return method_not_allowed(request)
    detail = error.detail
    if error.status_code == 404 and not isinstance(error, ClientError):
        # The router's own 404, for a path no route serves (its detail is the bare status phrase).
        detail = f"no route {request.url.path[:80]!r}: /docs lists the API"
    return JSONBytes({"detail": detail}, status_code=error.status_code, headers=getattr(error, "headers", None))


async def _request_validation_error(request: Request, error: RequestValidationError):
    return JSONBytes({"detail": describe_validation_errors(list(error.errors()))}, status_code=422)


async def client_hung_up(request: Request, error: ClientDisconnect) -> Response:
    """The client closed the connection before its request was read: an INFO line, and
    :data:`CLIENT_CLOSED` for the request metrics."""
    log.info("the client hung up on %s %s before its body was read", request.method, request.url.path)
    return Response(status_code=CLIENT_CLOSED)


async def _store_refusal(request: Request, error: Exception):
    refusal = store_refusal(error)
    return JSONBytes({"detail": refusal.detail}, status_code=refusal.status_code)


async def _unexpected_error(request: Request, error: Exception):
    log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=error)
    return JSONBytes({"detail": "internal server error"}, status_code=500)


def install_error_handlers(app: FastAPI) -> None:
    """JSON errors everywhere, readable 422s, and a logged 500 for the unexpected."""
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, _request_validation_error)
    app.add_exception_handler(ClientDisconnect, client_hung_up)
    app.add_exception_handler(SceneReadOnly, _store_refusal)
    app.add_exception_handler(StorageFull, _store_refusal)
    app.add_exception_handler(Exception, _unexpected_error)
