"""Requests that take a camera: ``/pick/camera``, ``/select``, ``/idbuffer``."""

from typing import Annotated, Literal, Union

from pydantic import BaseModel, Discriminator, Field, Tag, model_validator

from .fields import Flag, Mask, Matrix4, Number, ObjectId, RequestModel, Vec2, Vec3, left_out_only
from .picks import PickOptions, PickResult


# ------------------------------------------------------------------ requests

class PinholeCamera(RequestModel):
    """A perspective camera looking from ``position`` at ``target``."""

    position: Vec3
    target: Vec3
    up: Vec3
    fov_y_deg: Annotated[float, Field(strict=True, allow_inf_nan=False, gt=0, lt=180)]
    width: Annotated[int, Field(strict=True, ge=1)]
    height: Annotated[int, Field(strict=True, ge=1)]


class MatrixCamera(RequestModel):
    """A camera given by OpenGL view and projection matrices (as rows)."""

    view: Matrix4
    projection: Matrix4
    width: Annotated[int, Field(strict=True, ge=1)]
    height: Annotated[int, Field(strict=True, ge=1)]


#: The tags of the camera unions (:func:`camera_kind`), which a refusal's location leaves out.
CAMERA_TAGS = frozenset({"pinhole", "matrices"})


def camera_kind(body) -> str | None:
    if isinstance(body, dict):
        return "matrices" if ("view" in body or "projection" in body) else "pinhole"
    if isinstance(body, MatrixCamera):
        return "matrices"
    if isinstance(body, PinholeCamera):
        return "pinhole"
    return None


def camera_union(pinhole: type, matrices: type):
    """The body of a route that takes a camera either way: ``pinhole`` fields or OpenGL ``matrices``."""
    return Annotated[Union[Annotated[pinhole, Tag("pinhole")], Annotated[matrices, Tag("matrices")]],
                     Discriminator(camera_kind)]


Pixels = Annotated[list[Vec2], Field(min_length=1, description="[[x, y], ...]: (0, 0) is the top-left "
                                                                "corner, pixel centres at +0.5")]
PixelTolerance = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=1000)]


class CameraPickOptions(PickOptions):
    line_pixels: PixelTolerance = Field(
        0.0, description="pixels: a tolerance for lines that grows with the distance (a cone about each ray, "
                         "about this many pixels wide on screen; see bvh.Camera.pixel_tolerance), added to "
                         "line_tolerance")
    point_pixels: PixelTolerance = Field(0.0, description="pixels, as line_pixels, for points")


class PinholePick(PinholeCamera, CameraPickOptions):
    pixels: Pixels


class MatrixPick(MatrixCamera, CameraPickOptions):
    pixels: Pixels


CameraPickRequest = camera_union(PinholePick, MatrixPick)
Rect = Annotated[list[Number], Field(min_length=4, max_length=4, description="[x0, y0, x1, y1] in pixels")]
Polygon = list[Vec2]
POLYGON_DOC = ("lasso: [[x, y], ...] pixel points of a closed outline in order (concave allowed; at least 3 "
               "points, at most 10,000; a last point equal to the first is dropped); inside is the even-odd rule, "
               "so a self-crossing stroke takes the parts it loops around once")
SelectMode = Literal["objects", "triangles"]
Containment = Literal["crossing", "window"]
#: Most pixels between two samples of a visible-only selection, in each direction.
MAX_SAMPLES = 4096


class SelectOptions(RequestModel):
    rect: Rect | None = Field(None, description="a marquee: two opposite corners; give rect or polygon",
                              json_schema_extra=left_out_only)
    polygon: Polygon | None = Field(None, description=POLYGON_DOC, json_schema_extra=left_out_only)
    mode: SelectMode = "objects"
    containment: Containment = Field(
        "crossing", description="as CAD tools' marquees: \"crossing\" takes what the region touches, "
                                "\"window\" only what lies entirely inside it (every triangle of an object; in "
                                "\"triangles\" mode, each triangle listed)")
    visible_only: Flag = Field(
        False, description="only what is seen: one ray through the centre of every pixel of the region (the "
                           "pixels whose centres lie in the rect or polygon, within the image), the objects (and "
                           "in \"triangles\" mode the triangles) they hit, each once; with containment "
                           "\"window\", of those only what also lies entirely inside the region")
    samples: Annotated[int, Field(strict=True, ge=1, le=MAX_SAMPLES)] = Field(
        1, description="visible_only: cast through every samples-th pixel column and row (those whose index is a "
                       "multiple of samples), for large regions; 1 is every pixel")
    mask: Mask | None = None
    objects: list[ObjectId] | None = None
    exclude: list[ObjectId] | None = None

    @model_validator(mode="after")
    def _one_region(self):
        for name in ("rect", "polygon"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} must not be null: leave it out, and give the other")
        if (self.rect is None) == (self.polygon is None):
            raise ValueError("give the region as rect [x0, y0, x1, y1] or as polygon [[x, y], ...]"
                             + (", not both" if self.rect is not None else ""))
        if self.samples != 1 and not self.visible_only:
            raise ValueError("samples is the stride of visible_only's rays: set visible_only to true, or leave "
                             "samples out")
        return self


class PinholeSelect(PinholeCamera, SelectOptions):
    pass


class MatrixSelect(MatrixCamera, SelectOptions):
    pass


SelectRequest = camera_union(PinholeSelect, MatrixSelect)


class IdBufferOptions(PickOptions):
    normal: Flag = Field(False, description="add the plane of unit world geometric normals (float16 x 3)")
    barycentric: Flag = Field(False, description="add the plane of barycentrics u, v (float32 x 2)")


class PinholeIdBuffer(PinholeCamera, IdBufferOptions):
    pass


class MatrixIdBuffer(MatrixCamera, IdBufferOptions):
    pass


IdBufferRequest = camera_union(PinholeIdBuffer, MatrixIdBuffer)


# ------------------------------------------------------------------ responses

class Ray(BaseModel):
    origin: list[float]
    direction: list[float] = Field(description="unit length")


class CameraPickResult(PickResult):
    ray: Ray


class CameraPickResults(BaseModel):
    results: list[CameraPickResult] = Field(description="one per pixel, in the order given")


class SelectedObject(BaseModel):
    id: int
    name: str | None
    triangles: list[int] | None = Field(None, description="the object's mesh faces inside the frustum "
                                                          "(\"triangles\" mode only)")


class SelectResult(BaseModel):
    objects: list[SelectedObject]
