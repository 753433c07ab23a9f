"""``/scenes``: creating, listing and reading scenes."""

from typing import Annotated, Literal

from pydantic import BaseModel, Field, field_validator

from .fields import Bounds, Face, Matrix4, Name, RequestModel, Vec3, faces_within_vertices
from .objects import ObjectOut


# ------------------------------------------------------------------ requests

class MeshIn(RequestModel):
    """An inline triangle mesh, placed once."""

    name: Name | None = None
    vertices: Annotated[list[Vec3], Field(min_length=3)]
    faces: Annotated[list[Face], Field(min_length=1)]
    transform: Matrix4 | None = None

    _faces_within_vertices = field_validator("faces")(faces_within_vertices)


class SceneCreate(RequestModel):
    """``POST /scenes``: inline meshes (a file is uploaded to ``POST /scenes/upload`` instead)."""

    name: Name | None = None
    meshes: Annotated[list[MeshIn], Field(json_schema_extra={"minItems": 1})]

    @field_validator("meshes")
    @classmethod
    def _at_least_one_mesh(cls, meshes: list[MeshIn]) -> list[MeshIn]:
        if not meshes:
            raise ValueError("a scene needs at least one mesh; give one in meshes, or upload a file to "
                             "POST /scenes/upload")
        return meshes


# ------------------------------------------------------------------ responses

SceneState = Literal["ok", "damaged"]
STATE_DOC = ("``damaged``: its journal is damaged (found when it was opened); it is served read-only with the "
             "edits before the damage, and every write is refused with 409 until an operator repairs it")
REASON_DOC = "for a damaged scene, where and how its journal is damaged (the file, the byte offset, the records after)"


class SceneOut(BaseModel):
    """A scene with its first objects: all of them up to ``PICK_INLINE_OBJECTS`` (10,000 by
    default); past that, ``objects_next_after`` says where ``GET /scenes/{id}/objects`` goes on."""

    id: str
    name: str | None
    created: str = Field(description="ISO 8601 UTC time of creation")
    objects: list[ObjectOut] = Field(description="the live objects in ascending id order, at most "
                                                 "PICK_INLINE_OBJECTS of them (the first)")
    object_count: int = Field(ge=0, description="live objects in the scene, listed here or not")
    objects_next_after: int | None = Field(
        ge=0, description="null when objects lists every live object; else the last id listed, to pass as "
                          "after= to GET /scenes/{id}/objects for the rest")
    triangles: int = Field(description="triangles over all live objects, instances counted each")
    bounds: Bounds
    build_ms: float = Field(description="time to read and build the scene when it was created")
    state: SceneState = Field(description=STATE_DOC)
    reason: str | None = Field(description=REASON_DOC)


class SceneSummary(BaseModel):
    """A scene in ``GET /scenes``: its counts, not its objects."""

    id: str
    name: str | None
    created: str
    object_count: int
    triangles: int
    bounds: Bounds
    state: SceneState = Field(description=STATE_DOC)
    reason: str | None = Field(description=REASON_DOC)


class SceneList(BaseModel):
    scenes: list[SceneSummary]
