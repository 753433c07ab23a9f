"""``/scenes/{id}/closest``, ``/sphere-cast``, ``/contains`` and ``/overlap``."""

from typing import Annotated, Literal, Union

from pydantic import BaseModel, Field, model_validator

from .fields import Flag, Mask, ObjectId, RequestModel, Row4, Vec3


# ------------------------------------------------------------------ requests

class ProximityOptions(RequestModel):
    """Which objects a proximity query searches, chosen as picks choose them."""

    mask: Mask | None = Field(None, description="only objects whose mask shares a bit with this one")
    objects: list[ObjectId] | None = Field(None, description="only these objects")
    exclude: list[ObjectId] | None = Field(None, description="never these objects")


class ClosestRequest(ProximityOptions):
    """World points whose nearest surface point is wanted, as JSON; ``POST .../closest.bin`` takes
    them packed, the fast form."""

    points: list[Vec3]
    max_distance: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0)] | None = Field(
        None, description="search radius in world units; null: unbounded")


class SphereCastRequest(ProximityOptions):
    """Spheres swept along rays, as JSON; ``POST .../sphere-cast.bin`` takes them packed, the fast form."""

    origins: list[Vec3]
    directions: list[Vec3]
    radius: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0)] = Field(
        description="the sphere's radius in world units; 0 casts plain rays")
    tmin: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0)] = 0.0
    tmax: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0)] | None = Field(
        None, description="null: unbounded")

    @model_validator(mode="after")
    def _rays(self):
        if len(self.origins) != len(self.directions):
            raise ValueError(f"origins and directions must have the same length, "
                             f"got {len(self.origins)} and {len(self.directions)}")
        if self.tmax is not None and self.tmax < self.tmin:
            raise ValueError(f"tmax ({self.tmax}) must not be less than tmin ({self.tmin})")
        return self


class ContainsRequest(ProximityOptions):
    """World points to classify inside or outside the scene's closed objects."""

    points: list[Vec3]
    signed_distance: Flag = Field(False, description="also answer each point's signed distance to the "
                                                     "nearest surface (negative inside)")


class SphereRegion(RequestModel):
    kind: Literal["sphere"]
    center: Vec3
    radius: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0)]


class BoxRegion(RequestModel):
    """An axis-aligned box."""

    kind: Literal["aabb"]
    min: Vec3
    max: Vec3


class OrientedBoxRegion(RequestModel):
    """A box of half-sizes ``half_size`` along the orthonormal ``axes`` (rows) about ``center``."""

    kind: Literal["obb"]
    center: Vec3
    axes: Annotated[list[Vec3], Field(min_length=3, max_length=3)]
    half_size: Vec3


class CapsuleRegion(RequestModel):
    """The points within ``radius`` of the segment ``a``–``b``."""

    kind: Literal["capsule"]
    a: Vec3
    b: Vec3
    radius: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0)]


class ConvexRegion(RequestModel):
    """The intersection of half-spaces: rows ``(nx, ny, nz, d)``, a point ``x`` inside when
    ``n . x + d >= 0`` for every row (a camera frustum has six)."""

    kind: Literal["convex"]
    planes: list[Row4]


Region = Annotated[Union[SphereRegion, BoxRegion, OrientedBoxRegion, CapsuleRegion, ConvexRegion],
                   Field(discriminator="kind")]


class OverlapRequest(ProximityOptions):
    """A solid region of world space; what of the scene touches it."""

    shape: Region
    mode: Literal["objects", "triangles"] = Field("objects", description="\"triangles\" also lists each "
                                                                         "object's faces that touch the region")


# ------------------------------------------------------------------ responses

class ClosestResult(BaseModel):
    """Columnar results, one entry per point; a point with no surface within
    ``max_distance`` holds null (or -1 for indices)."""

    found: list[bool]
    distance: list[float | None] = Field(description="world distance to the nearest surface point")
    object: list[int] = Field(description="-1: nothing within max_distance")
    mesh: list[int] = Field(description="-1 for a shape or nothing")
    triangle: list[int] = Field(description="face index in the mesh; -1 for a shape or nothing")
    u: list[float | None] = Field(description="barycentrics of the point in its face: "
                                              "point = (1-u-v) V0 + u V1 + v V2")
    v: list[float | None]
    point: list[list[float | None]] = Field(description="the nearest surface point, world space")
    normal: list[list[float | None]] = Field(description="unit world geometric normal of the face or shape")


class SphereCastResult(BaseModel):
    """Columnar results, one entry per cast; a miss holds null (or -1 for indices)."""

    hit: list[bool]
    t: list[float | None] = Field(description="ray parameter of the first contact: the sphere's centre is then "
                                              "origin + t * direction")
    object: list[int] = Field(description="-1 on a miss")
    triangle: list[int] = Field(description="-1 on a miss or a shape")
    u: list[float | None] = Field(description="barycentrics of the contact point in its face")
    v: list[float | None]
    point: list[list[float | None]] = Field(description="the contact point on the surface, world space")
    normal: list[list[float | None]] = Field(description="unit contact normal, from the surface towards the "
                                                         "sphere's centre")


class ContainsResult(BaseModel):
    """One entry per point."""

    inside: list[bool]
    object: list[int] = Field(description="an object containing the point; -1 outside every object")
    signed_distance: list[float | None] | None = Field(
        None, description="with signed_distance: the distance to the nearest surface, negative inside")
