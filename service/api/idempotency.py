"""The ``Idempotency-Key`` header of every write: one typed dependency, and a repeat answered with the first answer.

A write (POST, PATCH, PUT, DELETE) may carry ``Idempotency-Key`` (1 to 200
printable ASCII characters). The store records the key with the write
(:mod:`service.store.idempotency`: in the edit's journal record, in a new
scene's ``service.json``); a repeat within ``PICK_IDEMPOTENCY_RETENTION_S``
is not applied again and is answered with the first answer, the same status
and body, plus ``Idempotent-Replayed: true``; the same key with another
request is a 422. The key's scope is the scene (a create: every scene).

How each kind of write is made exactly once:

- edits of a scene (objects added, changed, removed; vertices; meshes and
  files added to a scene): the key is looked up and recorded under the
  scene's locks, in the same journal record or checkpoint as the edit, so a
  retry that arrives while the first is in flight waits for it and answers
  its answer, on any worker or replica that follows the journal;
- ``POST /scenes`` and ``POST /scenes/upload``: the new scene's id is made
  from the key, so a retry finds the scene the first made and answers it
  (as it is now, status 201) instead of making a second;
- ``DELETE /scenes/{id}``: deleting is idempotent by its state; a repeat
  answers 404, as a delete of any missing scene does (a delete leaves no
  record to remember its key in);
- queries sent by POST (picks and the like) change nothing: the header is
  accepted and a repeat is simply answered again.
"""

from typing import Annotated

import orjson
from fastapi import Depends, Header, Request

from .errors import REPLAYED_HEADER, ClientError, ReplayedAnswer
from ..store.idempotency import MAX_KEY_LENGTH, KeyedWrite, KeyReused, Replayed, RequestKey, key_problem

HEADER = "Idempotency-Key"

KEY_DESCRIPTION = ("A key of the client's (1 to 200 printable ASCII characters, e.g. a UUID) that makes a "
                   "retried write apply once: a repeat within the retention window (24 h by default) is not "
                   "applied again and is answered with the first answer (same status and body) and the header "
                   "`Idempotent-Replayed: true`; the same key with a different request is refused with 422.")


def checked_key(key: str | None, request: Request) -> RequestKey | None:
    """The request's key and operation (None without the header).

    Raises
    ------
    ClientError
        400 for a key that is empty, too long or not printable ASCII.
    """
    if key is None:
        return None
    problem = key_problem(key)
    if problem is not None:
        raise ClientError(400, f"{HEADER}: {problem}")
    route = request.scope.get("route")
    path = getattr(route, "path", request.url.path)
    return RequestKey(key, f"{request.method} {path}")


async def idempotency_key(
        request: Request,
        key: Annotated[str, Header(
            alias=HEADER, description=KEY_DESCRIPTION,
            json_schema_extra={"minLength": 1, "maxLength": MAX_KEY_LENGTH, "pattern": "^[\\x20-\\x7e]+$"})] = None,
) -> RequestKey | None:
    """The ``Idempotency-Key`` of a write (see :func:`checked_key`)."""
    return checked_key(key, request)


#: The ``Idempotency-Key`` header of a write route, checked, with the route's operation.
IdempotencyKeyDep = Annotated[RequestKey | None, Depends(idempotency_key)]

#: The header as the OpenAPI documents it (for routes FastAPI's dependency solver never sees).
KEY_PARAMETER = {"name": HEADER, "in": "header", "required": False, "description": KEY_DESCRIPTION,
                 "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH,
                            "pattern": "^[\\x20-\\x7e]+$", "title": HEADER, "description": KEY_DESCRIPTION}}


def request_key(request: Request) -> RequestKey | None:
    """:data:`IdempotencyKeyDep` for a ``DirectRoute``, which FastAPI's dependency solver never sees."""
    return checked_key(request.headers.get(HEADER), request)


#: The operation of the live channel's edits (``service.live``): their keys are a scene's as the routes' are.
LIVE_EDIT = "live edit"


def live_edit_key(ident) -> RequestKey | None:
    """The idempotency key of a live-channel edit: its ``id`` when that is a string.

    Raises
    ------
    ClientError
        400 for a string id that cannot be a key.
    """
    if not isinstance(ident, str):
        return None
    problem = key_problem(ident)
    if problem is not None:
        raise ClientError(400, f"id: a string id is the edit's idempotency key, and it {problem}")
    return RequestKey(ident, LIVE_EDIT)


def replay(replayed: Replayed, answer: bytes | None = None) -> ClientError:
    """The answer to a repeat: the first answer as recorded (``answer``: the body to send
    instead, for a create, whose answer is the scene as it is now)."""
    entry = replayed.entry
    if answer is not None:
        return ReplayedAnswer(entry.status, answer)
    if not entry.kept:
        return ClientError(409, f"this write was already made under idempotency key {entry.key[:80]!r} "
                               f"(edit {entry.seq}); its answer was too large to keep: read the scene for its result",
                          headers={REPLAYED_HEADER: "true"})
    return ReplayedAnswer(entry.status, b"" if entry.answer is None else orjson.dumps(entry.answer))


def added_key(key: RequestKey | None, *parts) -> KeyedWrite | None:
    """What the store records with an addition saved as a checkpoint (``SceneStore.edit``):
    201 and ``{"objects": ...}``, the request told apart by ``parts`` (its body)."""
    if key is None:
        return None
    return KeyedWrite(key, 201, lambda objects, _: {"objects": objects}, digest=key.digest(*parts))


def created_key(key: RequestKey | None, *parts) -> KeyedWrite | None:
    """What the store records with a new scene (``SceneStore.create``), told apart by ``parts``."""
    return None if key is None else KeyedWrite(key, 201, digest=key.digest(*parts))


def with_key_parameter(extra: dict) -> dict:
    """``openapi_extra`` of a ``DirectRoute`` with the ``Idempotency-Key`` header, as
    :data:`IdempotencyKeyDep` documents it on the other routes."""
    return {**extra, "parameters": [*extra.get("parameters", ()), KEY_PARAMETER]}


async def once(call, scene_answer=None):
    """Await ``call`` (a write of the store); a repeat of a keyed write becomes its
    first answer (:class:`ReplayedAnswer`, once the first is durable), a key
    reused with another request a 422.

    Parameters
    ----------
    call : awaitable
    scene_answer : async callable(scene_id) -> bytes, optional
        For a create: the answer, made from the scene the first made.

    Raises
    ------
    ReplayedAnswer, ClientError
    """
    try:
        return await call
    except Replayed as replayed:
        if replayed.writer is not None:
            # The first is this process's and may still be committing: its answer waits for that.
            await replayed.writer.durable(replayed.entry.seq)
        body = None
        if replayed.scene_id is not None and scene_answer is not None:
            body = await scene_answer(replayed.scene_id)
        raise replay(replayed, body) from None
    except KeyReused as error:
        raise ClientError(422, str(error)) from None
