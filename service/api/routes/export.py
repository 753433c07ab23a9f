"""A scene's geometry given back: ``/scenes/{id}/export.glb`` (the whole scene as binary glTF)
and ``/scenes/{id}/meshes/{mesh}/vertices`` and ``.../faces`` (one mesh, as JSON, or packed
binary at ``vertices.bin`` and ``faces.bin``), so that an editor that picks through the service
draws the same geometry.

Large answers stream: their pieces are made on worker threads as the client
reads (:mod:`service.queries.exporting`), and nothing is held but the piece
being sent; a small mesh's answer is made at once.
"""

from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from ..bodies import JSON, OCTET_STREAM
from ..deps import SceneMeshDep, StoredSceneDep
from ..openapi import binary_answer
from ..responses import wants_octet_stream
from ..schemas import ErrorOut, MeshFaces, MeshVertices
from ...queries.exporting import FACE_DTYPE, INLINE_ROWS, VERTEX_DTYPE, mesh_arrays, rows_pieces, scene_glb

router = APIRouter(tags=["export"])

GLB = "model/gltf-binary"

#: Objects written as nodes without geometry (shapes, line and point sets), counted.
WITHOUT_GEOMETRY_HEADER = "X-Objects-Without-Geometry"

#: Headers a cross-origin client must be allowed to read (CORS ``Access-Control-Expose-Headers``).
EXPOSED_HEADERS = (WITHOUT_GEOMETRY_HEADER,)

GLB_DOC = (
    "Binary glTF 2.0. Each mesh a live object places, once, as one triangle primitive (POSITION float32, "
    "indices uint32; a mesh whose vertices are not all float32 values also carries them as float64, in the "
    "buffer view its extras.bvh_pick.vertices_float64 names). Each live object, in id order, a root node: its "
    "name, its object-to-world matrix (float64 JSON numbers, exact; left out when the identity), its mesh, and "
    "extras.bvh_pick {id, name, kind, mask, pickable, mesh} (params instead of mesh for the other kinds). "
    "Shapes (sphere, box, quad, polygon) and line and point sets are nodes without geometry: their extras say "
    "what they are, but no triangles are made of them. Normals, uvs and alpha-tested materials are not "
    "written. scenes[0].extras.bvh_pick holds the scene's id, name, version (its edit number), the object count "
    "and the objects without geometry by kind. Uploaded again (POST /scenes), the file gives the same objects "
    "(names, masks, pickability and float64 vertices from the extras, in id order) and the same picks on them.")

VERTICES_BINARY = ("V×3 little-endian float32 (x, y, z per vertex, in the mesh's vertex order; no header: V is "
                   "the length / 12), the body PUT .../vertices.bin takes. The JSON form (.../vertices) gives the "
                   "float64 values as stored.")
FACES_BINARY = ("F×3 little-endian int32 (three vertex indices per triangle, in the mesh's face order; no header: "
                "F is the length / 12).")


@router.get("/scenes/{scene_id}/export.glb", response_class=Response,
            responses={200: {**binary_answer(GLB_DOC, {GLB: {"schema": {"type": "string", "format": "binary",
                                                                       "description": GLB_DOC}}},
                                             f"the scene as binary glTF (GLB); the same bytes as {OCTET_STREAM} "
                                             f"when Accept asks for that before {GLB}")[200],
                             "headers": {WITHOUT_GEOMETRY_HEADER: {
                                 "schema": {"type": "integer"},
                                 "description": "objects written as nodes without geometry (shapes, line and "
                                                "point sets)"}}},
                       404: {"model": ErrorOut},
                       413: {"model": ErrorOut, "description": "the GLB would pass the 4 GiB a GLB can hold"}})
async def export_scene(stored: StoredSceneDep, request: Request):
    """The scene as binary glTF: its meshes once each, its objects as nodes with their transforms, names and
    ids (``extras.bvh_pick``). Streamed; uploaded again it gives the same picks on its meshes."""
    export = await run_in_threadpool(scene_glb, stored)
    skipped = sum(export.without_geometry.values())
    # A sync iterator: Starlette makes each piece on a worker thread.
    media = OCTET_STREAM if wants_octet_stream(request, GLB) else GLB
    return StreamingResponse(export.pieces(), media_type=media, headers={
        "Content-Length": str(export.size), WITHOUT_GEOMETRY_HEADER: str(skipped),
        "Content-Disposition": f'attachment; filename="{stored.id}.glb"', "Cache-Control": "no-store"})


def _rows_answer(rows, key: str, dtype, binary: bool) -> Response:
    """Rows as JSON ``{key: rows}`` or packed ``dtype``; streamed past :data:`INLINE_ROWS`."""
    media = OCTET_STREAM if binary else JSON
    pieces = rows_pieces(rows, None if binary else key, dtype)
    if rows.shape[0] <= INLINE_ROWS:
        return Response(b"".join(pieces), media_type=media)
    headers = {"Content-Length": str(rows.shape[0] * rows.shape[1] * dtype.itemsize)} if binary else None
    return StreamingResponse(pieces, media_type=media, headers=headers)


@router.get("/scenes/{scene_id}/meshes/{mesh_id}/vertices", response_model=MeshVertices,
            responses={404: {"model": ErrorOut}})
async def get_vertices(scene_mesh: SceneMeshDep):
    """A mesh's vertices, in its own coordinates and vertex order: ``{"vertices": [[x, y, z], ...]}``
    (float64 as stored; ``GET .../vertices.bin`` gives them packed as float32)."""
    vertices, _ = mesh_arrays(scene_mesh.stored, scene_mesh.id)
    return _rows_answer(vertices, "vertices", VERTEX_DTYPE, binary=False)


@router.get("/scenes/{scene_id}/meshes/{mesh_id}/vertices.bin", response_class=Response,
            responses={**binary_answer(VERTICES_BINARY, summary="the vertices, packed"), 404: {"model": ErrorOut}})
async def get_vertices_binary(scene_mesh: SceneMeshDep):
    """A mesh's vertices as packed float32 V×3, in its own coordinates and vertex order."""
    vertices, _ = mesh_arrays(scene_mesh.stored, scene_mesh.id)
    return _rows_answer(vertices, "vertices", VERTEX_DTYPE, binary=True)


@router.get("/scenes/{scene_id}/meshes/{mesh_id}/faces", response_model=MeshFaces,
            responses={404: {"model": ErrorOut}})
async def get_faces(scene_mesh: SceneMeshDep):
    """A mesh's triangles, three vertex indices each: ``{"faces": [[a, b, c], ...]}`` (``GET
    .../faces.bin`` gives them packed as int32)."""
    _, faces = mesh_arrays(scene_mesh.stored, scene_mesh.id)
    return _rows_answer(faces, "faces", FACE_DTYPE, binary=False)


@router.get("/scenes/{scene_id}/meshes/{mesh_id}/faces.bin", response_class=Response,
            responses={**binary_answer(FACES_BINARY, summary="the triangles, packed"), 404: {"model": ErrorOut}})
async def get_faces_binary(scene_mesh: SceneMeshDep):
    """A mesh's triangles as packed int32 F×3, in its face order."""
    _, faces = mesh_arrays(scene_mesh.stored, scene_mesh.id)
    return _rows_answer(faces, "faces", FACE_DTYPE, binary=True)
