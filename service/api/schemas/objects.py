"""``/scenes/{id}/objects`` and ``/scenes/{id}/meshes/{mesh}/vertices``: adding, changing and
removing objects, moving a mesh's vertices."""

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from .fields import (Bounds, Face, Flag, Index, Mask, Matrix4, Name, ObjectId, PositiveNumber, RequestModel, Vec3,
                     faces_within_vertices, left_out_only)


# ------------------------------------------------------------------ requests

class PlacementIn(RequestModel):
    """Fields every new object may set."""

    name: Name | None = None
    transform: Matrix4 | None = None
    mask: Mask = 0xFFFFFFFF
    pickable: Flag = True


class MeshObjectCreate(PlacementIn):
    """A new mesh given inline, and one object placing it."""

    vertices: Annotated[list[Vec3], Field(min_length=3)]
    faces: Annotated[list[Face], Field(min_length=1)]

    _faces_within_vertices = field_validator("faces")(faces_within_vertices)


class InstanceCreate(PlacementIn):
    """A new object placing a mesh the scene already has."""

    mesh: Index


class ShapeCreate(PlacementIn):
    """An analytic shape: ``sphere`` (``radius``), ``box`` (``size`` [x, y, z]),
    ``quad`` (``size`` [x, y], local z = 0 plane) or ``polygon`` (``vertices``,
    a planar outline of at least 3 points)."""

    shape: Literal["sphere", "box", "quad", "polygon"]
    radius: PositiveNumber | None = None
    size: Annotated[list[PositiveNumber], Field(min_length=2, max_length=3)] | None = None
    vertices: Annotated[list[Vec3], Field(min_length=3)] | None = None

    @model_validator(mode="after")
    def _parameters_fit_the_shape(self):
        allowed = {"sphere": {"radius"}, "box": {"size"}, "quad": {"size"}, "polygon": {"vertices"}}[self.shape]
        given = {name for name in ("radius", "size", "vertices") if getattr(self, name) is not None}
        if given - allowed:
            raise ValueError(f"a {self.shape} takes {', '.join(sorted(allowed))}, "
                             f"not {', '.join(sorted(given - allowed))}")
        if self.shape == "polygon" and self.vertices is None:
            raise ValueError("a polygon needs vertices: its planar outline, at least 3 points")
        if self.size is not None and len(self.size) != (3 if self.shape == "box" else 2):
            raise ValueError(f"size of a {self.shape} has {3 if self.shape == 'box' else 2} numbers, "
                             f"got {len(self.size)}")
        return self

    def parameters(self) -> dict:
        """The shape's keyword arguments for ``Scene.add_shape``."""
        return {name: getattr(self, name) for name in ("radius", "size", "vertices") if getattr(self, name) is not None}


def object_kind(body) -> str | None:
    if isinstance(body, dict):
        if "shape" in body:
            return "shape"
        if "faces" in body:
            return "mesh"
        if "mesh" in body:
            return "instance"
    return None


ObjectCreate = Annotated[
    Union[Annotated[MeshObjectCreate, Tag("mesh")],
          Annotated[InstanceCreate, Tag("instance")],
          Annotated[ShapeCreate, Tag("shape")]],
    Discriminator(object_kind, custom_error_type="object_kind",
                  custom_error_message="give an inline mesh (vertices and faces), an instance of an "
                                       "existing mesh (mesh), or a shape (shape); or upload a file "
                                       "to POST /scenes/{id}/objects/upload"),
]


class ObjectUpdate(RequestModel):
    """``PATCH`` of an object: only the fields given change (``name: null`` clears the name;
    the other fields cannot be null)."""

    # An empty body is refused ("nothing to change"): the schema says so.
    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    transform: Matrix4 | None = Field(None, json_schema_extra=left_out_only)
    pickable: Flag | None = Field(None, json_schema_extra=left_out_only)
    mask: Mask | None = Field(None, json_schema_extra=left_out_only)
    name: Name | None = None

    @model_validator(mode="after")
    def _something_to_change(self):
        if not self.model_fields_set:
            raise ValueError("nothing to change: give transform, pickable, mask or name")
        for field in ("transform", "pickable", "mask"):
            if field in self.model_fields_set and getattr(self, field) is None:
                raise ValueError(f"{field} cannot be null")
        return self


class ObjectBatchUpdate(ObjectUpdate):
    """One entry of a batch ``PATCH /scenes/{id}/objects``: the object's ``id`` and what changes."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 2})

    id: ObjectId

    @model_validator(mode="after")
    def _a_change_besides_the_id(self):
        if self.model_fields_set == {"id"}:
            raise ValueError("nothing to change: give transform, pickable, mask or name")
        return self


#: The body of a batch ``PATCH /scenes/{id}/objects``.
ObjectBatch = Annotated[list[ObjectBatchUpdate], Field(min_length=1, max_length=1_000_000)]


class VerticesIn(RequestModel):
    """A mesh's new vertex positions, in its own coordinates: as many as it has, in the same order."""

    vertices: Annotated[list[Vec3], Field(min_length=1)]


# ------------------------------------------------------------------ responses

class ObjectOut(BaseModel):
    """One placed object of a scene."""

    id: int
    name: str | None
    kind: Literal["mesh", "sphere", "box", "quad", "polygon", "lines", "points"]
    mesh: int | None = Field(description="mesh id for mesh instances, null for shapes")
    triangles: int
    transform: list[list[float]]
    bounds: Bounds
    mask: int
    pickable: bool
    params: dict = Field(description="shape parameters ({} for meshes; {\"lines\": set} or {\"points\": set} "
                                     "for line and point objects)")


class ObjectList(BaseModel):
    """The objects an upload or an addition created."""

    objects: list[ObjectOut]


class ObjectPage(BaseModel):
    """A page of a scene's objects (``GET /scenes/{id}/objects``), in ascending id order."""

    objects: list[ObjectOut] = Field(description="the first `limit` live objects whose id is above `after`")
    next_after: int | None = Field(
        ge=0, description="the last id of this page, to pass as after= for the next; null when no live object "
                          "follows (objects added later get larger ids, so ask again from here to see them)")
    object_count: int = Field(ge=0, description="live objects in the scene now, on every page")
    version: int = Field(ge=0, description="the scene's edit number this page is as of: it shows every edit up to "
                                           "this one and none after (as edit answers and live events number them)")


class ObjectBatchResult(BaseModel):
    """What a batch edit changed, durable when answered."""

    version: int = Field(description="the scene's edit number after this edit; change events carry it too")
    count: int = Field(description="objects changed")
    objects: list[ObjectOut] | None = Field(
        description="the changed objects as they are now; null for a binary batch")


class VerticesResult(BaseModel):
    """A mesh's vertices replaced (its tree refitted), durable when answered."""

    version: int
    mesh: int
    vertices: int
    objects: list[int] = Field(description="the ids of the objects that show this mesh")


class MeshVertices(BaseModel):
    """A mesh's vertices in its own coordinates, in its vertex order, float64 as stored: the body
    ``PUT .../vertices`` takes."""

    vertices: list[list[float]] = Field(description="V rows [x, y, z]")


class MeshFaces(BaseModel):
    """A mesh's triangles, each three indices into its vertices, in its face order."""

    faces: list[list[int]] = Field(description="F rows [a, b, c]")
