"""Errors as JSON ``{"detail": "..."}`` that say what was wrong.

``bvh`` refuses bad input with ``ValueError`` (422 here) and unknown ids with
``bvh.UnknownIdError`` (404); :func:`client_errors` maps those around each
call into ``bvh``, so a ``ValueError`` from a bug elsewhere still surfaces as
a 500 instead of being blamed on the client. Anything unexpected becomes a
500 with a log line and the traceback; the server keeps serving.
"""

import logging
from contextlib import contextmanager

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

import bvh

from .responses import JSONBytes

log = logging.getLogger("service")

#: Longest rendering of a refused value quoted back in a message.
QUOTE_LIMIT = 40


class ClientError(HTTPException):
    """An HTTP error caused by the request, with a message for the client."""

    def __init__(self, status_code: int, detail: str, headers: dict | None = None):
        super().__init__(status_code=status_code, detail=detail, headers=headers)


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


async def http_error(request: Request, error: StarletteHTTPException):
    return JSONBytes({"detail": error.detail}, status_code=error.status_code, headers=getattr(error, "headers", None))


async def _request_validation_error(request: Request, error: RequestValidationError):
    return JSONBytes({"detail": describe_validation_errors(list(error.errors()))}, status_code=422)


async def _unexpected_error(request: Request, error: Exception):
    log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=error)
    return JSONBytes({"detail": "internal server error"}, status_code=500)


def install_error_handlers(app: FastAPI) -> None:
    """JSON errors everywhere, readable 422s, and a logged 500 for the unexpected."""
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, _request_validation_error)
    app.add_exception_handler(Exception, _unexpected_error)
