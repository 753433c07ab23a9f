"""Typed answers of the JSON routes, as pydantic v2 models.

Every model allows fields it does not name (``extra="allow"``): a newer
service of the same API version may add fields, and this client keeps them
(``model.model_extra``) rather than failing. Columnar batch answers are not
here: they come back as numpy arrays (:mod:`bvh_pick_client.arrays`).
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Answer(BaseModel):
    """The base of every answer model: unknown fields are kept, not refused."""

    model_config = ConfigDict(extra="allow")


class SceneObject(Answer):
    """One placed object of a scene (``GET /scenes/{id}/objects/{oid}``)."""

    id: int
    name: str | None = None
    kind: str
    mesh: int | None = None
    triangles: int = 0
    transform: list[list[float]] = Field(description="4 x 4 object-to-world matrix, row-major")
    bounds: list[list[float]] = Field(description="[[xmin, ymin, zmin], [xmax, ymax, zmax]] in world space")
    mask: int
    pickable: bool
    params: dict = Field(default_factory=dict)


class SceneSummary(Answer):
    """A scene as ``GET /scenes`` lists it: its counts, not its objects."""

    id: str
    name: str | None = None
    created: str
    object_count: int
    triangles: int
    bounds: list[list[float]]
    state: Literal["ok", "damaged"] = "ok"
    reason: str | None = None


class Scene(SceneSummary):
    """A scene with its first objects (at most the service's ``PICK_INLINE_OBJECTS``).

    ``objects_next_after`` is not None when more objects follow: page them with
    ``Client.objects_page`` or read them all with ``Client.all_objects``.
    """

    objects: list[SceneObject]
    objects_next_after: int | None = None
    build_ms: float | None = None


class ObjectsPage(Answer):
    """A page of a scene's objects in ascending id order, as of the scene's edit ``version``."""

    objects: list[SceneObject]
    next_after: int | None
    object_count: int
    version: int


class ObjectList(Answer):
    """The objects an addition created."""

    objects: list[SceneObject]


class PickObject(Answer):
    id: int
    name: str | None = None


class NearestVertex(Answer):
    index: int
    point: list[float]


class SegmentHit(Answer):
    index: int
    s: float


class PickHit(Answer):
    """The closest hit of one ray; only ``hit`` (False) on a miss.

    ``point = origin + t * direction``; ``distance = t * |direction|``.
    ``barycentric`` is ``[1 - u - v, u, v]``. Segment and point hits
    (``primitive``) carry ``segment`` / ``point_index`` and no triangle.
    """

    hit: bool
    primitive: Literal["triangle", "shape", "segment", "point"] | None = None
    set: int | None = None
    segment: SegmentHit | None = None
    point_index: int | None = None
    ray_distance: float | None = None
    t: float | None = None
    distance: float | None = None
    point: list[float] | None = None
    object: PickObject | None = None
    mesh: int | None = None
    triangle: int | None = None
    barycentric: list[float] | None = None
    normal: list[float] | None = None
    shading_normal: list[float] | None = None
    uv: list[float] | None = None
    front_face: bool | None = None
    nearest_vertex: NearestVertex | None = None
    nearest_edge: list[int] | None = None


class AllHits(Answer):
    """Every surface one ray crosses, sorted by t (``all_hits=True``)."""

    hits: list[PickHit]


class CameraRay(Answer):
    origin: list[float]
    direction: list[float]


class CameraPickHit(PickHit):
    """A camera pick's hit, with the world ray of its pixel (unit direction)."""

    ray: CameraRay


class SelectedObject(Answer):
    id: int
    name: str | None = None
    triangles: list[int] | None = None


class Selection(Answer):
    """What a rectangle, lasso or overlap selects: objects, and in ``triangles`` mode their faces."""

    objects: list[SelectedObject]


class EditResult(Answer):
    """A batch edit's answer, durable when answered: the scene's edit ``version`` after it,
    how many objects changed, and (JSON edits) the changed objects as they are now."""

    version: int
    count: int
    objects: list[SceneObject] | None = None


class VerticesResult(Answer):
    """A mesh's vertices replaced: the new ``version``, the mesh, its vertex count and the
    ids of the objects showing it."""

    version: int
    mesh: int
    vertices: int
    objects: list[int]
