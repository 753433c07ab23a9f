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

One module per resource, each with its request models first and its response models
after them; every name is importable from here.
"""

from .fields import (MAX_INDEX, MAX_OBJECT_ID, AlphaCutoff, Bounds, Face, Flag, Index, Mask, Matrix4, Name, Number,
                     ObjectId, PositiveNumber, RequestModel, Row4, Vec2, Vec3, faces_within_vertices, left_out_only,
                     nonzero)
from .objects import (InstanceCreate, MeshFaces, MeshObjectCreate, MeshVertices, ObjectBatch, ObjectBatchResult,
                      ObjectBatchUpdate, ObjectCreate, ObjectList, ObjectOut, ObjectPage, ObjectUpdate, PlacementIn,
                      ShapeCreate, VerticesIn, VerticesResult, object_kind)
from .scenes import MeshIn, SceneCreate, SceneList, SceneOut, SceneSummary
from .picks import (AllHitsResult, BatchPickRequest, BatchPickResult, NearestVertex, PickObject, PickOptions,
                    PickRequest, PickResult, Primitive, RecordLayout, SegmentHit)
from .cameras import (CAMERA_TAGS, MAX_SAMPLES, POLYGON_DOC, CameraPickOptions, CameraPickRequest, CameraPickResult,
                      CameraPickResults, Containment, IdBufferOptions, IdBufferRequest, MatrixCamera, MatrixIdBuffer,
                      MatrixPick, MatrixSelect, PinholeCamera, PinholeIdBuffer, PinholePick, PinholeSelect,
                      PixelTolerance, Pixels, Polygon, Ray, Rect, SelectMode, SelectOptions, SelectRequest,
                      SelectResult, SelectedObject, camera_kind, camera_union)
from .proximity import (BoxRegion, CapsuleRegion, ClosestRequest, ClosestResult, ContainsRequest, ContainsResult,
                        ConvexRegion, OrientedBoxRegion, OverlapRequest, ProximityOptions, Region, SphereCastRequest,
                        SphereCastResult, SphereRegion)
from .service import DISK_FULL, READ_ONLY, WRITE_REFUSALS, ErrorOut, Health, Readiness
from .live import (AuthMessage, BatchOptionsAnswer, BatchOptionsMessage, BatchOptionsOut, EditAnswer, EditMessage,
                   ErrorMessage, EventMessage, HelloMessage, MessageId, PickAnswer, PickMessage, ResyncMessage)
