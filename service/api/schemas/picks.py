"""``/scenes/{id}/pick`` and ``/pick/batch``: one ray, many rays."""

from typing import Annotated, Literal

from pydantic import BaseModel, Field, model_validator

from .fields import AlphaCutoff, Flag, Mask, ObjectId, RequestModel, Vec3, nonzero


# ------------------------------------------------------------------ requests

class PickOptions(RequestModel):
    """Options shared by every pick."""

    tmin: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0)] = 0.0
    tmax: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0)] | None = Field(
        None, description="null: unbounded")
    cull_backfaces: Flag = False
    mask: Mask | None = Field(None, description="only objects whose mask shares a bit with this one")
    objects: list[ObjectId] | None = Field(None, description="only these objects")
    exclude: list[ObjectId] | None = Field(None, description="never these objects")
    alpha_test: Flag = Field(True, description="let rays through the transparent texels of alpha-tested faces "
                                                "(glTF materials whose alphaMode is MASK or BLEND)")
    alpha_cutoff: AlphaCutoff = Field(0.5, description="the cutoff of BLEND materials: a hit whose alpha is below "
                                                       "it passes through (MASK materials use their alphaCutoff)")
    line_tolerance: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0)] = Field(
        0.0, description="world units: how near a ray must pass to a segment of a line object to pick it "
                         "(its closest approach); a line or point in front of a surface, or lying on it "
                         "(within the tolerance of its plane), is picked over it")
    point_tolerance: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0)] = Field(
        0.0, description="world units: how near a ray must pass to a point of a point object to pick it")

    @model_validator(mode="after")
    def _window(self):
        if self.tmax is not None and self.tmax < self.tmin:
            raise ValueError(f"tmax ({self.tmax}) must not be less than tmin ({self.tmin})")
        return self


class PickRequest(PickOptions):
    """One ray: ``point = origin + t * direction`` (direction need not be unit)."""

    origin: Vec3
    direction: Vec3
    all_hits: Flag = False

    @model_validator(mode="after")
    def _direction_nonzero(self):
        nonzero("direction", self.direction)
        return self


class BatchPickRequest(PickOptions):
    """Many rays at once, as JSON; ``POST /scenes/{id}/pick/batch.bin`` takes them packed, the fast form."""

    origins: list[Vec3]
    directions: list[Vec3]

    @model_validator(mode="after")
    def _same_length(self):
        if len(self.origins) != len(self.directions):
            raise ValueError(f"origins and directions must have the same length, "
                             f"got {len(self.origins)} and {len(self.directions)}")
        return self


#: The binary batch answers' record layouts (``service.queries.picking.RECORD_LAYOUTS``): ``surface``, 32
#: bytes a ray; ``primitive``, 44 bytes, with what was hit.
RecordLayout = Literal["surface", "primitive"]


# ------------------------------------------------------------------ responses

Primitive = Literal["triangle", "shape", "segment", "point"]


class NearestVertex(BaseModel):
    index: int = Field(description="index into the mesh's vertices")
    point: list[float] = Field(description="the vertex in world space")


class PickObject(BaseModel):
    id: int
    name: str | None


class SegmentHit(BaseModel):
    index: int = Field(description="the segment's index in its line set, as added")
    s: float = Field(description="where on it: a + s (b - a), s in [0, 1]")


class PickResult(BaseModel):
    """The closest hit of one ray; only ``hit`` when it misses. A segment or point hit
    (``primitive``) has ``t`` at the ray's closest approach, ``point`` on the segment (or the
    point itself) ``ray_distance`` away from the ray, and no triangle, normal or uv."""

    hit: bool
    primitive: Primitive | None = Field(None, description="what was hit")
    set: int | None = Field(None, description="the line or point set of a segment or point hit")
    segment: SegmentHit | None = None
    point_index: int | None = Field(None, description="index of the point hit in its point set")
    ray_distance: float | None = Field(None, description="distance from the ray of the segment's or point's "
                                                         "nearest point; 0 for surfaces")
    t: float | None = Field(None, description="parametric, along the direction as given")
    distance: float | None = Field(None, description="t · |direction|")
    point: list[float] | None = None
    object: PickObject | None = None
    mesh: int | None = Field(None, description="null for shapes")
    triangle: int | None = Field(None, description="face index in the mesh, null for shapes")
    barycentric: list[float] | None = Field(None, description="[w0, w1, w2] = [1-u-v, u, v]; null for shapes")
    normal: list[float] | None = Field(None, description="unit geometric normal, world space")
    shading_normal: list[float] | None = None
    uv: list[float] | None = Field(None, description="texture coordinates, null when the mesh has none")
    front_face: bool | None = None
    nearest_vertex: NearestVertex | None = Field(None, description="of the hit triangle, for snapping")
    nearest_edge: list[int] | None = Field(None, description="[i, j] vertex indices of the hit triangle's "
                                                             "edge nearest the point")


class AllHitsResult(BaseModel):
    """Every surface the ray crosses, sorted by t."""

    hits: list[PickResult]


class BatchPickResult(BaseModel):
    """Columnar results, one entry per ray; misses hold null (or -1 for indices)."""

    hit: list[bool]
    t: list[float | None]
    object: list[int] = Field(description="-1 on a miss")
    triangle: list[int] = Field(description="-1 on a miss or a shape")
    u: list[float | None]
    v: list[float | None]
    point: list[list[float | None]]
    normal: list[list[float | None]]
    primitive: list[int] = Field(description="0 triangle, 1 shape, 2 segment, 3 point; -1 on a miss")
    segment: list[int] = Field(description="segment index in its line set; -1 for other hits and misses")
    s: list[float | None] = Field(description="where on the segment hit, in [0, 1]")
    point_index: list[int] = Field(description="point index in its point set; -1 for other hits and misses")
