"""The messages of the live channel (``/scenes/{id}/live``): the client's, then the server's."""

from typing import Annotated, Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from .fields import RequestModel, left_out_only
from .objects import ObjectBatch, ObjectBatchResult, ObjectOut
from .picks import AllHitsResult, PickOptions, PickRequest, PickResult, RecordLayout


# ------------------------------------------------------------------ requests

#: A request's ``id`` on the live channel: any JSON scalar, echoed in its answer.
MessageId = Annotated[str | int | float | bool | None,
                      Field(description="any JSON scalar (string, number, boolean, null), echoed in the answer")]


class AuthMessage(RequestModel):
    """The first message, when ``PICK_API_KEY`` is set and the upgrade carried no
    ``Authorization: Bearer <key>`` header (browsers cannot set one)."""

    type: Literal["auth"]
    key: str


class PickMessage(PickRequest):
    """A one-ray pick: the body of ``POST /scenes/{id}/pick`` plus ``type`` and ``id``."""

    type: Literal["pick"]
    id: MessageId = None


#: An edit's ``id``: a string one is also the edit's idempotency key (``service.api.idempotency``).
EditId = Annotated[str | int | float | bool | None,
                   Field(description="any JSON scalar, echoed in the answer; a string (1 to 200 printable ASCII "
                                     "characters) is also the edit's idempotency key, as the Idempotency-Key header "
                                     "of PATCH /scenes/{id}/objects: the same edit sent again with it (after a "
                                     "reconnect, say) is applied once and answered with the first answer")]


class EditMessage(RequestModel):
    """Object edits: the entries of the ``PATCH /scenes/{id}/objects`` body, applied as that route does."""

    type: Literal["edit"]
    id: EditId = None
    objects: ObjectBatch = Field(description="the PATCH /scenes/{id}/objects body")


class BatchOptionsMessage(PickOptions):
    """Options of the binary batch frames that follow on this connection, until the next such
    message (before any: none, as a binary ``/pick/batch`` without query options)."""

    type: Literal["batch_options"]
    id: MessageId = None
    records: RecordLayout = Field(
        "surface", description="the answers' records: `surface`, 32 bytes each; `primitive`, 44 bytes each, "
                               "with what was hit (see `records` of POST /scenes/{id}/pick/batch)")


# ------------------------------------------------------------------ responses

class BatchOptionsOut(BaseModel):
    """The binary batch options now in force."""

    tmin: float
    tmax: float | None
    cull_backfaces: bool
    mask: int | None
    objects: list[int] | None
    exclude: list[int] | None
    alpha_test: bool
    alpha_cutoff: float
    line_tolerance: float
    point_tolerance: float
    records: RecordLayout


#: What a hello and a resync say of the table past the objects they list.
OBJECT_COUNT = Field(ge=0, description="the scene's live objects as of `version`")
OBJECTS_NEXT_AFTER = Field(ge=0, description="the last id listed when more objects follow: page them with GET "
                                             "/scenes/{id}/objects?after=<it>, keeping per object the newest of "
                                             "pages and events by version; null when all are listed")
TABLE_OBJECTS = Field(description="the first PICK_INLINE_OBJECTS objects by id as of `version`, as GET "
                                  "/scenes/{id} inlines them")


class HelloMessage(BaseModel):
    """The server's first message: the scene and the first of its objects, as of ``version``."""

    type: Literal["hello"]
    scene: str
    version: int = Field(description="the scene's edit number the table is as of")
    object_count: int = OBJECT_COUNT
    objects_next_after: int | None = OBJECTS_NEXT_AFTER
    objects: list[ObjectOut] = TABLE_OBJECTS


class PickAnswer(BaseModel):
    type: Literal["pick"]
    id: MessageId
    result: PickResult | AllHitsResult = Field(description="exactly what POST /scenes/{id}/pick answers")


class EditAnswer(BaseModel):
    type: Literal["edit"]
    id: MessageId
    result: ObjectBatchResult = Field(description="exactly what PATCH /scenes/{id}/objects answers")


class BatchOptionsAnswer(BaseModel):
    type: Literal["batch_options"]
    id: MessageId
    result: BatchOptionsOut


class ErrorMessage(BaseModel):
    """A refused message (the connection stays open), or the reason given before a close."""

    type: Literal["error"]
    id: MessageId = Field(description="the refused request's id (a binary frame's: its header's); "
                                      "null when it could not be read")
    status: int = Field(description="the HTTP status the same refusal has over HTTP")
    detail: str


class EventMessage(BaseModel):
    """A change of the scene, pushed to every client of it."""

    type: Literal["event"]
    event: Literal["moved", "changed", "added", "removed", "vertices"]
    objects: list[ObjectOut] | list[int] = Field(description="ids for removed; otherwise each object's JSON as "
                                                             "GET /scenes/{id}/objects/{oid} answers")
    mesh: int | SkipJsonSchema[None] = Field(None, json_schema_extra=left_out_only,
                                             description="vertices only: the mesh whose vertices moved")
    version: int = Field(description="the scene's edit number after this change (moves sent as one event: "
                                     "after the last of them)")


class ResyncMessage(BaseModel):
    """Sent instead of events to a client that fell too far behind (``PICK_LIVE_QUEUE``): the table
    afresh, as a hello gives it."""

    type: Literal["resync"]
    version: int = Field(description="the scene's edit number the table is as of")
    object_count: int = OBJECT_COUNT
    objects_next_after: int | None = OBJECTS_NEXT_AFTER
    objects: list[ObjectOut] = TABLE_OBJECTS
