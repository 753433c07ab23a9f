"""A scene given back: the whole of it as a GLB (:mod:`bvh.io.glb_writer`), and one
mesh's vertices or faces as JSON or packed binary.

Every answer is made from one view of the scene (``StoredScene.view``: the
object table and mesh arrays an edit publishes, never changed after), so
edits landing while a large export streams change nothing of it. The
routes stream the pieces, each made on a worker thread as the client reads;
nothing holds more than a block of rows, or of a large scene's objects,
rendered at once (a GLB keeps at most ``KEPT_NODE_BYTES`` of its nodes'
JSON from measuring them: :mod:`bvh.io.glb_writer`).
"""

from collections.abc import Iterator
from itertools import islice

import numpy as np
import orjson

from bvh.io.glb_writer import ROWS_PER_PIECE, ExportMesh, GlbExport, GlbTooLarge

from ..api.errors import ClientError
from ..api.responses import JSON_OPTIONS

#: Objects rendered per piece of a streamed answer (some 150 KB of JSON).
PIECE_OBJECTS = 512

#: The binary forms: rows of little-endian float32 (vertices) and int32 (faces), no header.
VERTEX_DTYPE, FACE_DTYPE = np.dtype("<f4"), np.dtype("<i4")

#: Rows a vertices or faces answer renders at once on the event loop; larger ones stream.
INLINE_ROWS = 4096


def mesh_arrays(stored, mesh_id: int) -> tuple[np.ndarray, np.ndarray]:
    """``(vertices (V, 3) float64, faces (F, 3) int32)`` of a mesh of the scene's current view.

    Raises
    ------
    ClientError
        404 for a mesh the scene does not have.
    """
    found = stored.view.mesh_arrays.get(mesh_id)
    if found is None:
        raise ClientError(404, f"no mesh {mesh_id} in scene {stored.id!r}")
    return found


def rows_pieces(rows: np.ndarray, key: str | None, dtype: np.dtype) -> Iterator[bytes]:
    """``rows`` as ``{"<key>": [[...], ...]}`` (``key`` given) or packed ``dtype`` (``key`` None),
    :data:`ROWS_PER_PIECE` rows at a time: JSON numbers exact (float64), binary ones as ``dtype``."""
    if key is not None:
        yield b'{"' + key.encode() + b'":['
    for start in range(0, rows.shape[0], ROWS_PER_PIECE):
        block = rows[start:start + ROWS_PER_PIECE]
        if key is None:
            yield np.ascontiguousarray(block, dtype).tobytes()
        else:
            text = orjson.dumps(np.ascontiguousarray(block), option=JSON_OPTIONS)[1:-1]
            yield (b"," if start else b"") + text
    if key is not None:
        yield b"]}"


def scene_glb(stored) -> GlbExport:
    """The GLB of the scene's current view (measured: the nodes rendered once; run on a worker thread).

    Raises
    ------
    ClientError
        413 when the GLB would pass the 4 GiB a GLB can hold.
    """
    view = stored.view
    ids = list(view.objects)
    names = {info.id: info.name for info in stored.scene.meshes}

    def mesh(mesh_id: int) -> ExportMesh:
        return ExportMesh(mesh_id, names.get(mesh_id), *view.mesh_arrays[mesh_id])

    def blocks():
        pieces = iter(ids)
        while piece := list(islice(pieces, PIECE_OBJECTS)):
            yield view.objects.json(piece)

    try:
        return GlbExport(mesh, blocks, {"scene": stored.id, "name": stored.name, "version": view.version},
                         dumps=_dumps)
    except GlbTooLarge as error:
        raise ClientError(413, f"scene {stored.id!r} cannot be exported: {error}") from None


def _dumps(value) -> bytes:
    return orjson.dumps(value, option=JSON_OPTIONS)

