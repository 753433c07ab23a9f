"""The service's own answers: ``/health``, ``/ready``, and every error."""

from typing import Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from .fields import left_out_only


class Health(BaseModel):
    status: Literal["ok"]


class Readiness(BaseModel):
    """Whether the service serves scene requests yet (``/ready``).

    ``waiting_for`` (while starting) says what start-up is doing, e.g.
    ``"compiling kernels (step 2 of 10: batch picks); a first start compiles
    for about 35 s on 2 idle cores, later starts take about 2 s"``; ``compiling`` (once ready)
    what still compiles in the background: a request that needs one of those
    kernels waits for it.
    """

    status: Literal["ready", "starting"]
    scenes: int = Field(ge=0, description="Scenes open in this process.")
    # Left out of the body rather than null: the schema says string.
    waiting_for: str | SkipJsonSchema[None] = Field(None, json_schema_extra=left_out_only,
                                                    description="Only while starting: what start-up is doing.")
    compiling: str | SkipJsonSchema[None] = Field(
        None, json_schema_extra=left_out_only,
        description="Only once ready, while kernels still compile in the background: which.")


class ErrorOut(BaseModel):
    """Every error: what was wrong, in words."""

    detail: str


#: What a write answers when the store refuses it (``service.api.errors.store_refusal``).
DISK_FULL = {507: {"model": ErrorOut, "description": "The disk of the scene store is full: nothing was changed."}}
READ_ONLY = {409: {"model": ErrorOut, "description": "The scene is damaged and read-only: nothing was changed."}}
WRITE_REFUSALS = {**READ_ONLY, **DISK_FULL}
