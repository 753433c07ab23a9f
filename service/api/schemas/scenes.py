"""``/scenes``: creating, listing and reading scenes."""

from typing import Annotated

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
    """``POST /scenes`` as JSON (a file upload is the multipart form instead)."""

    name: Name | None = None
    meshes: Annotated[list[MeshIn], Field(json_schema_extra={"minItems": 1})]

    @field_validator("meshes")
    @classmethod
    def _at_least_one_mesh(cls, meshes: list[MeshIn]) -> list[MeshIn]:
        if not meshes:
            raise ValueError("a scene needs at least one mesh; give one in meshes, or upload a file as "
                             "multipart/form-data")
        return meshes


# ------------------------------------------------------------------ responses

class SceneOut(BaseModel):
    """A scene with its objects."""

    id: str
    name: str | None
    created: str = Field(description="ISO 8601 UTC time of creation")
    objects: list[ObjectOut]
    triangles: int = Field(description="triangles over all live objects, instances counted each")
    bounds: Bounds
    build_ms: float = Field(description="time to read and build the scene when it was created")


class SceneSummary(BaseModel):
    """A scene in ``GET /scenes``: its counts, not its objects."""

    id: str
    name: str | None
    created: str
    object_count: int
    triangles: int
    bounds: Bounds


class SceneList(BaseModel):
    scenes: list[SceneSummary]
