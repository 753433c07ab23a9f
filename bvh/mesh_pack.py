"""Every mesh of a scene in one set of flat arrays, so kernels see plain arrays.

Each mesh's BVH is built on its own (issue 2's builder) and then appended:
its node rows are rebased so that child and triangle indices point into the
packed arrays, and its root row is recorded in ``mesh_root``. Node blocks
keep an even length, so sibling pairs stay on even rows (one cache line).
The pack only grows: meshes are immutable once added, objects refer to them
by id, and a saved pack is reused as long as no mesh is added.

Besides the tree, the pack keeps what answers need and the tree does not:
the vertices and faces as given (snapping, shading normals, texture
coordinates) and each triangle's source polygon.
"""

from typing import NamedTuple

import numpy as np

from ._jit import MAX_DEPTH
from .builder import binned_sah_build
from .config import BuildConfig
from .node_layout import COUNT, FIRST, aligned_empty, pack_nodes
from .triangles import prepare_triangles
from .validation import check_mesh, real_array

#: Arrays of a pack, in the order they are saved.
ARRAY_NAMES = ("nodes", "tris", "face_index", "mesh_root", "mesh_offset", "mesh_scale", "mesh_boxes",
               "vertices", "vertex_start", "faces", "face_start", "normals", "has_normals", "uvs", "has_uvs",
               "source_face", "tri_start")


#: An instance's world box is the box of its mesh's nodes this many levels
#: down, transformed: for a turned instance it is much tighter than the
#: transformed root box (fewer rays enter the instance to find nothing), and
#: 16 boxes of 8 corners are still cheap to move on every ``set_transform``.
COVER_LEVELS = 4
COVER_BOXES = 2 ** COVER_LEVELS


class MeshPack(NamedTuple):
    """Packed meshes; ``K`` meshes, every array read-only.

    Attributes
    ----------
    nodes : (M, 8) float32
        All meshes' 32-byte nodes (see :mod:`bvh.node_layout`), links rebased.
    tris : (T, 9) float32
        All meshes' triangles in leaf order, each relative to its mesh's offset.
    face_index : (T,) int32
        Face index, within its own mesh, of each packed triangle.
    mesh_root : (K,) int32
        Row of each mesh's root node.
    mesh_offset : (K, 3) float64
        Centring offset subtracted from each mesh before rounding to float32.
    mesh_scale : (K,) float64
        Diagonal of each mesh's box.
    mesh_boxes : (K, COVER_BOXES, 6) float64
        Boxes covering each mesh (its tree's fourth level), in mesh
        coordinates: transformed, they bound an instance more tightly than the
        root box.
    vertices : (V, 3) float64
        All meshes' vertices as given; mesh ``k`` owns ``vertex_start[k]:vertex_start[k+1]``.
    faces : (F, 3) int32
        All meshes' faces, indices local to their mesh; ``face_start`` as above.
    normals : (V, 3) float32
        Vertex normals (zeros for meshes without: ``has_normals``).
    uvs : (V, 2) float32
        Texture coordinates (zeros for meshes without: ``has_uvs``).
    source_face : (F,) int32
        Index of the source polygon each face was cut from.
    tri_start : (K + 1,) int64
        Packed triangle rows of each mesh.
    """

    nodes: np.ndarray
    tris: np.ndarray
    face_index: np.ndarray
    mesh_root: np.ndarray
    mesh_offset: np.ndarray
    mesh_scale: np.ndarray
    mesh_boxes: np.ndarray
    vertices: np.ndarray
    vertex_start: np.ndarray
    faces: np.ndarray
    face_start: np.ndarray
    normals: np.ndarray
    has_normals: np.ndarray
    uvs: np.ndarray
    has_uvs: np.ndarray
    source_face: np.ndarray
    tri_start: np.ndarray

    @property
    def mesh_count(self) -> int:
        return int(self.mesh_root.shape[0])

    def mesh_vertices(self, mesh: int) -> np.ndarray:
        return self.vertices[self.vertex_start[mesh]:self.vertex_start[mesh + 1]]

    def mesh_faces(self, mesh: int) -> np.ndarray:
        return self.faces[self.face_start[mesh]:self.face_start[mesh + 1]]

    def triangle_counts(self) -> np.ndarray:
        """(K,) int64: faces of each mesh as added."""
        return np.diff(self.face_start)


def empty_pack() -> MeshPack:
    zero = np.zeros(1, np.int64)
    return freeze(MeshPack(
        nodes=np.zeros((0, 8), np.float32), tris=np.zeros((0, 9), np.float32), face_index=np.zeros(0, np.int32),
        mesh_root=np.zeros(0, np.int32), mesh_offset=np.zeros((0, 3)), mesh_scale=np.zeros(0),
        mesh_boxes=np.zeros((0, COVER_BOXES, 6)), vertices=np.zeros((0, 3)), vertex_start=zero,
        faces=np.zeros((0, 3), np.int32), face_start=zero.copy(), normals=np.zeros((0, 3), np.float32),
        has_normals=np.zeros(0, bool), uvs=np.zeros((0, 2), np.float32), has_uvs=np.zeros(0, bool),
        source_face=np.zeros(0, np.int32), tri_start=zero.copy()))


def freeze(pack: MeshPack) -> MeshPack:
    for array in pack:
        array.setflags(write=False)
    return pack


class MeshChunk(NamedTuple):
    """One mesh, built and ready to append to a pack (links local to the mesh)."""

    nodes: np.ndarray
    tris: np.ndarray
    face_index: np.ndarray
    offset: np.ndarray
    scale: float
    boxes: np.ndarray
    vertices: np.ndarray
    faces: np.ndarray
    normals: np.ndarray | None
    uvs: np.ndarray | None
    source_face: np.ndarray


def _per_vertex(name: str, value, rows: int, width: int) -> np.ndarray | None:
    if value is None:
        return None
    array = real_array(name, value)
    if array.shape != (rows, width):
        raise ValueError(f"{name} must have shape ({rows}, {width}), one row per vertex, got {array.shape}")
    array = array.astype(np.float64)
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contain NaN or infinite values")
    return array.astype(np.float32)


def _cover_boxes(nodes: np.ndarray) -> np.ndarray:
    """(COVER_BOXES, 6) float64: the boxes of the tree's fourth level (or the
    nearest level above where the tree is shallower), the first repeated to
    fill the rows."""
    links = nodes.view(np.int32)
    rows = [0]
    for _ in range(COVER_LEVELS):
        deeper = []
        for row in rows:
            if links[row, COUNT] == 0:
                deeper += [links[row, FIRST], links[row, FIRST] + 1]
            else:
                deeper.append(row)
        rows = deeper
    boxes = nodes[rows, :6].astype(np.float64)
    return np.concatenate([boxes, np.repeat(boxes[:1], COVER_BOXES - len(rows), axis=0)])


def build_chunk(vertices, faces, normals=None, uvs=None, source_face=None, config: BuildConfig | None = None):
    """Validate a mesh and build its BVH, ready for :func:`append`.

    Raises
    ------
    ValueError
        On a malformed mesh, a mesh without a face of non-zero area, or
        per-vertex arrays and ``source_face`` of the wrong shape.
    """
    vertices, faces = check_mesh(vertices, faces)
    normals = _per_vertex("normals", normals, vertices.shape[0], 3)
    uvs = _per_vertex("uvs", uvs, vertices.shape[0], 2)
    if source_face is None:
        source_face = np.arange(faces.shape[0], dtype=np.int32)
    else:
        source_face = real_array("source_face", source_face)
        if source_face.shape != (faces.shape[0],) or source_face.dtype.kind not in "iu":
            raise ValueError(f"source_face must be ({faces.shape[0]},) integers, one per face, "
                             f"got {source_face.shape} {source_face.dtype}")
        source_face = source_face.astype(np.int32)
    data = prepare_triangles(vertices, faces)
    if data.face_index.shape[0] == 0:
        raise ValueError(f"the mesh has no triangle of non-zero area (all {faces.shape[0]} faces are degenerate)")
    config = config or BuildConfig()
    tree = binned_sah_build(data.boxes, data.centroids, config)
    if tree.depth >= MAX_DEPTH:
        raise ValueError(f"the builder made a tree of depth {tree.depth}; traversal supports < {MAX_DEPTH}")
    nodes = pack_nodes(tree)
    if nodes.shape[0] % 2:
        nodes = np.concatenate([nodes, np.zeros((1, 8), np.float32)])
    boxes = _cover_boxes(nodes)
    scale = float(np.linalg.norm(boxes[:, 3:].max(axis=0) - boxes[:, :3].min(axis=0)))
    return MeshChunk(nodes=nodes, tris=np.ascontiguousarray(data.vertices[tree.order]),
                     face_index=np.ascontiguousarray(data.face_index[tree.order]), offset=data.offset, scale=scale,
                     boxes=boxes, vertices=vertices, faces=faces.astype(np.int32), normals=normals, uvs=uvs,
                     source_face=source_face)


def _aligned_concat(arrays: list[np.ndarray]) -> np.ndarray:
    total = sum(a.shape[0] for a in arrays)
    out = aligned_empty((total,) + arrays[0].shape[1:], arrays[0].dtype)
    row = 0
    for a in arrays:
        out[row:row + a.shape[0]] = a
        row += a.shape[0]
    return out


def append(pack: MeshPack, chunks: list[MeshChunk]) -> MeshPack:
    """A new pack holding ``pack``'s meshes followed by ``chunks`` (ids continue)."""
    if not chunks:
        return pack
    node_parts = [pack.nodes]
    roots = [pack.mesh_root]
    node_base = pack.nodes.shape[0]
    tri_base = pack.tris.shape[0]
    tri_start = list(pack.tri_start)
    for chunk in chunks:
        nodes = chunk.nodes.copy()
        links = nodes.view(np.int32)
        # Inner nodes point at node rows, leaves at triangle rows; the pad
        # rows (count 0, first 0) are never visited and may point anywhere.
        inner = links[:, COUNT] == 0
        links[:, FIRST] += np.where(inner, node_base, tri_base).astype(np.int32)
        node_parts.append(nodes)
        roots.append(np.array([node_base], np.int32))
        node_base += nodes.shape[0]
        tri_base += chunk.tris.shape[0]
        tri_start.append(tri_base)

    def stacked(field):
        return [getattr(c, field) for c in chunks]

    vertex_counts = [c.vertices.shape[0] for c in chunks]
    face_counts = [c.faces.shape[0] for c in chunks]
    normals = [c.normals if c.normals is not None else np.zeros((c.vertices.shape[0], 3), np.float32)
               for c in chunks]
    uvs = [c.uvs if c.uvs is not None else np.zeros((c.vertices.shape[0], 2), np.float32) for c in chunks]
    return freeze(MeshPack(
        nodes=_aligned_concat(node_parts),
        tris=_aligned_concat([pack.tris] + stacked("tris")),
        face_index=np.concatenate([pack.face_index] + stacked("face_index")),
        mesh_root=np.concatenate(roots),
        mesh_offset=np.concatenate([pack.mesh_offset, np.stack(stacked("offset"))]),
        mesh_scale=np.concatenate([pack.mesh_scale, np.array(stacked("scale"))]),
        mesh_boxes=np.concatenate([pack.mesh_boxes, np.stack(stacked("boxes"))]),
        vertices=np.concatenate([pack.vertices] + stacked("vertices")),
        vertex_start=np.concatenate([pack.vertex_start, pack.vertex_start[-1] + np.cumsum(vertex_counts)]),
        faces=np.concatenate([pack.faces] + stacked("faces")),
        face_start=np.concatenate([pack.face_start, pack.face_start[-1] + np.cumsum(face_counts)]),
        normals=np.concatenate([pack.normals] + normals),
        has_normals=np.concatenate([pack.has_normals, [c.normals is not None for c in chunks]]).astype(bool),
        uvs=np.concatenate([pack.uvs] + uvs),
        has_uvs=np.concatenate([pack.has_uvs, [c.uvs is not None for c in chunks]]).astype(bool),
        source_face=np.concatenate([pack.source_face] + stacked("source_face")),
        tri_start=np.array(tri_start, np.int64)))
