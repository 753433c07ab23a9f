"""Request and response bodies of the HTTP API (pydantic v2).

Request models are strict: a vector component must be a JSON number (not a
string such as ``"1.5"`` or ``"NaN"``, not ``true``) and finite, unknown
fields are refused, and every list has the length it needs. Response models
describe what the routes return; the hot routes build their JSON themselves
(``service.api.responses``) and these models document it in the OpenAPI schema.

Matrices are 4×4 nested lists of rows (row-major, the mathematical rows): an
affine transform has its translation in the last column and ``[0, 0, 0, 1]``
as its last row; camera ``view`` and ``projection`` follow OpenGL's
conventions, written as rows.
"""

from typing import Annotated, Literal, Union

from pydantic import (BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, ValidationInfo,
                      field_validator, model_validator)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import InitErrorDetails, PydanticCustomError

#: A finite JSON number; integers are accepted, strings and booleans are not.
Number = Annotated[float, Field(strict=True, allow_inf_nan=False)]
PositiveNumber = Annotated[float, Field(strict=True, allow_inf_nan=False, gt=0)]
#: The largest index the engine takes: meshes and vertices are counted in int32.
MAX_INDEX = 2 ** 31 - 1
Index = Annotated[int, Field(strict=True, ge=0, le=MAX_INDEX)]
Flag = Annotated[bool, Field(strict=True)]
Mask = Annotated[int, Field(strict=True, ge=0, le=0xFFFFFFFF)]
AlphaCutoff = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=1)]
Vec2 = Annotated[list[Number], Field(min_length=2, max_length=2)]
Vec3 = Annotated[list[Number], Field(min_length=3, max_length=3)]
Row4 = Annotated[list[Number], Field(min_length=4, max_length=4)]
Matrix4 = Annotated[list[Row4], Field(min_length=4, max_length=4,
                                      description="4×4 matrix as a list of its rows")]
Face = Annotated[list[Index], Field(min_length=3, max_length=3)]
#: The largest object id a request may name: ids are stored as int64.
MAX_OBJECT_ID = 2 ** 63 - 1
ObjectId = Annotated[int, Field(strict=True, ge=0, le=MAX_OBJECT_ID)]
Name = Annotated[str, Field(max_length=256)]
Bounds = Annotated[list[list[float]] | None,
                   Field(description="[[xmin, ymin, zmin], [xmax, ymax, zmax]] in world space; null when empty")]


class RequestModel(BaseModel):
    """Base of every request body: unknown fields are an error, not ignored."""

    model_config = ConfigDict(extra="forbid")


# ------------------------------------------------------------------ scenes

def faces_within_vertices(faces: list[list[int]], info: ValidationInfo) -> list[list[int]]:
    """Refuse a face index with no vertex, as ``faces[3][1]: vertex 7 does not
    exist, the mesh has 5 vertices (0..4)`` located at that index."""
    vertices = info.data.get("vertices")
    if vertices is None or not faces or max(map(max, faces)) < len(vertices):
        return faces
    count = len(vertices)
    row, column = next((row, column) for row, face in enumerate(faces)
                       for column, index in enumerate(face) if index >= count)
    index = faces[row][column]
    error = PydanticCustomError("vertex_index", "vertex {index} does not exist, the mesh has {count} vertices "
                                                "(0..{last})", {"index": index, "count": count, "last": count - 1})
    raise ValidationError.from_exception_data("faces", [InitErrorDetails(type=error, loc=(row, column),
                                                                         input=index)])


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


# ------------------------------------------------------------------ objects

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


def _object_kind(body) -> str | None:
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
    Discriminator(_object_kind, custom_error_type="object_kind",
                  custom_error_message="give an inline mesh (vertices and faces), an instance of an "
                                       "existing mesh (mesh), or a shape (shape); or upload a file "
                                       "as multipart/form-data"),
]


def _left_out_only(schema: dict) -> None:
    """The JSON schema of an optional field that cannot be null: its type without the null choice.

    The field's default None stands for "not given"; null itself is refused
    (by the model's validator), so the schema must not offer it.
    """
    schema.pop("default", None)
    choices = schema.pop("anyOf", [])
    for choice in choices:
        if choice.get("type") != "null":
            schema.update(choice)


class ObjectUpdate(RequestModel):
    """``PATCH`` of an object: only the fields given change (``name: null`` clears the name;
    the other fields cannot be null)."""

    # An empty body is refused ("nothing to change"): the schema says so.
    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    transform: Matrix4 | None = Field(None, json_schema_extra=_left_out_only)
    pickable: Flag | None = Field(None, json_schema_extra=_left_out_only)
    mask: Mask | None = Field(None, json_schema_extra=_left_out_only)
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


class ObjectBatchResult(BaseModel):
    """What a batch edit changed, durable when answered."""

    version: int = Field(description="the scene's edit number after this edit; change events carry it too")
    count: int = Field(description="objects changed")
    objects: list[ObjectOut] | None = Field(
        description="the changed objects as they are now; null for a binary batch")


class VerticesIn(RequestModel):
    """A mesh's new vertex positions, in its own coordinates: as many as it has, in the same order."""

    vertices: Annotated[list[Vec3], Field(min_length=1)]


class VerticesResult(BaseModel):
    """A mesh's vertices replaced (its tree refitted), durable when answered."""

    version: int
    mesh: int
    vertices: int
    objects: list[int] = Field(description="the ids of the objects that show this mesh")


class ObjectList(BaseModel):
    """The objects an upload or an addition created."""

    objects: list[ObjectOut]


# ------------------------------------------------------------------ picks

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


def _nonzero(name: str, vector: list[float]) -> None:
    if not any(vector):
        raise ValueError(f"{name} must not be the zero vector")


class PickRequest(PickOptions):
    """One ray: ``point = origin + t * direction`` (direction need not be unit)."""

    origin: Vec3
    direction: Vec3
    all_hits: Flag = False

    @model_validator(mode="after")
    def _direction_nonzero(self):
        _nonzero("direction", self.direction)
        return self


class NearestVertex(BaseModel):
    index: int = Field(description="index into the mesh's vertices")
    point: list[float] = Field(description="the vertex in world space")


class PickObject(BaseModel):
    id: int
    name: str | None


Primitive = Literal["triangle", "shape", "segment", "point"]


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


class BatchPickRequest(PickOptions):
    """Many rays at once, as JSON; ``application/octet-stream`` is the fast form."""

    origins: list[Vec3]
    directions: list[Vec3]

    @model_validator(mode="after")
    def _same_length(self):
        if len(self.origins) != len(self.directions):
            raise ValueError(f"origins and directions must have the same length, "
                             f"got {len(self.origins)} and {len(self.directions)}")
        return self


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



# ------------------------------------------------------------------ proximity

class ProximityOptions(RequestModel):
    """Which objects a proximity query searches, chosen as picks choose them."""

    mask: Mask | None = Field(None, description="only objects whose mask shares a bit with this one")
    objects: list[ObjectId] | None = Field(None, description="only these objects")
    exclude: list[ObjectId] | None = Field(None, description="never these objects")


class ClosestRequest(ProximityOptions):
    """World points whose nearest surface point is wanted, as JSON;
    ``application/octet-stream`` is the fast form."""

    points: list[Vec3]
    max_distance: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0)] | None = Field(
        None, description="search radius in world units; null: unbounded")


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


class SphereCastRequest(ProximityOptions):
    """Spheres swept along rays, as JSON; ``application/octet-stream`` is the fast form."""

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


class ContainsRequest(ProximityOptions):
    """World points to classify inside or outside the scene's closed objects."""

    points: list[Vec3]
    signed_distance: Flag = Field(False, description="also answer each point's signed distance to the "
                                                     "nearest surface (negative inside)")


class ContainsResult(BaseModel):
    """One entry per point."""

    inside: list[bool]
    object: list[int] = Field(description="an object containing the point; -1 outside every object")
    signed_distance: list[float | None] | None = Field(
        None, description="with signed_distance: the distance to the nearest surface, negative inside")


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

# ------------------------------------------------------------------ cameras

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


#: The tags of the camera unions (:func:`_camera_kind`), which a refusal's location leaves out.
CAMERA_TAGS = frozenset({"pinhole", "matrices"})


def _camera_kind(body) -> str | None:
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
                     Discriminator(_camera_kind)]


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


class Ray(BaseModel):
    origin: list[float]
    direction: list[float] = Field(description="unit length")


class CameraPickResult(PickResult):
    ray: Ray


class CameraPickResults(BaseModel):
    results: list[CameraPickResult] = Field(description="one per pixel, in the order given")


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
                              json_schema_extra=_left_out_only)
    polygon: Polygon | None = Field(None, description=POLYGON_DOC, json_schema_extra=_left_out_only)
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


class SelectedObject(BaseModel):
    id: int
    name: str | None
    triangles: list[int] | None = Field(None, description="the object's mesh faces inside the frustum "
                                                          "(\"triangles\" mode only)")


class SelectResult(BaseModel):
    objects: list[SelectedObject]


# ------------------------------------------------------------------ service

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
    waiting_for: str | SkipJsonSchema[None] = Field(None, json_schema_extra=_left_out_only,
                                                    description="Only while starting: what start-up is doing.")
    compiling: str | SkipJsonSchema[None] = Field(
        None, json_schema_extra=_left_out_only,
        description="Only once ready, while kernels still compile in the background: which.")


class ErrorOut(BaseModel):
    """Every error: what was wrong, in words."""

    detail: str


# ------------------------------------------------------------------ the live channel

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


class EditMessage(RequestModel):
    """Object edits: the entries of the ``PATCH /scenes/{id}/objects`` body, applied as that route does."""

    type: Literal["edit"]
    id: MessageId = None
    objects: ObjectBatch = Field(description="the PATCH /scenes/{id}/objects body")


#: The binary batch answers' record layouts (``service.picking.RECORD_LAYOUTS``): ``surface``, 32
#: bytes a ray; ``primitive``, 44 bytes, with what was hit.
RecordLayout = Literal["surface", "primitive"]


class BatchOptionsMessage(PickOptions):
    """Options of the binary batch frames that follow on this connection, until the next such
    message (before any: none, as a binary ``/pick/batch`` without query options)."""

    type: Literal["batch_options"]
    id: MessageId = None
    records: RecordLayout = Field(
        "surface", description="the answers' records: `surface`, 32 bytes each; `primitive`, 44 bytes each, "
                               "with what was hit (see `records` of POST /scenes/{id}/pick/batch)")


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


class HelloMessage(BaseModel):
    """The server's first message: the scene and its object table, as of ``version``."""

    type: Literal["hello"]
    scene: str
    version: int = Field(description="the scene's edit number the table is as of")
    objects: list[ObjectOut]


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
    mesh: int | SkipJsonSchema[None] = Field(None, json_schema_extra=_left_out_only,
                                             description="vertices only: the mesh whose vertices moved")
    version: int = Field(description="the scene's edit number after this change (moves sent as one event: "
                                     "after the last of them)")


class ResyncMessage(BaseModel):
    """Sent instead of events to a client that fell too far behind (``PICK_LIVE_QUEUE``)."""

    type: Literal["resync"]
    version: int = Field(description="the scene's edit number the table is as of")
    objects: list[ObjectOut] = Field(description="the whole object table, as GET /scenes/{id} lists it")
