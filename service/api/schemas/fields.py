"""Field types and the base of request models, shared by every resource."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo
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


def nonzero(name: str, vector: list[float]) -> None:
    if not any(vector):
        raise ValueError(f"{name} must not be the zero vector")


def left_out_only(schema: dict) -> None:
    """The JSON schema of an optional field that cannot be null: its type without the null choice.

    The field's default None stands for "not given"; null itself is refused
    (by the model's validator), so the schema must not offer it.
    """
    schema.pop("default", None)
    choices = schema.pop("anyOf", [])
    for choice in choices:
        if choice.get("type") != "null":
            schema.update(choice)
