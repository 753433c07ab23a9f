"""Every mesh of a scene in one set of flat arrays, so kernels see plain arrays.

Each mesh's BVH is built on its own (the binned SAH builder, collapsed to
four-wide nodes) and then appended: its node rows are rebased so that child
and triangle indices point into the packed arrays, and its root row is
recorded in ``mesh_root``. Meshes keep their ids; a mesh's vertices can move
(:func:`replace`, for a refit or a rebuild), which makes a new pack, and a
saved pack is reused as long as no mesh is added or moved.

Besides the tree, the pack keeps what answers need and the tree does not:
the vertices and faces as given (snapping, shading normals, texture
coordinates) and each triangle's source polygon, and the alpha-tested
faces' materials and masks (:mod:`bvh.io.materials`, read by :mod:`bvh.queries.alpha`).
"""

from typing import NamedTuple

import numpy as np

from .._jit import MAX_DEPTH
from ..builders.sah import binned_sah_build
from ..builders.config import BuildConfig
from ..queries import alpha as alpha_columns
from ..queries.alpha import FACE_COLUMNS, MATERIAL_COLUMNS
from ..builders.alpha_bounds import build_boxes, opaque_rects, whole_boxes
from ..io.materials import PackedAlpha, alpha_of_rows, pack_mesh_alpha
from ..walk.nodes import CHILD_COUNT, CHILD_FIRST, EMPTY_MIN, MAX_X, MIN_X, WIDTH, aligned_empty, \
    collapse_to_wide, rebase
from ..builders.refit import refit_tree, wide_sah_cost
from ..builders.triangles import prepare_triangles
from ..validation import check_mesh, real_array

#: Arrays of a pack, in the order they are saved.
ARRAY_NAMES = ("nodes", "tris", "face_index", "mesh_root", "mesh_offset", "mesh_scale", "mesh_boxes", "mesh_cost",
               "vertices", "vertex_start", "faces", "face_start", "normals", "has_normals", "uvs", "has_uvs",
               "source_face", "tri_start") + (
    "mesh_alpha_start", "alpha_faces", "alpha_face_material", "alpha_materials", "alpha_texels")

#: The alpha arrays of a pack (added in issue 17): a scene saved before them
#: opens with none (:func:`alpha_defaults`).
ALPHA_ARRAY_NAMES = ARRAY_NAMES[-5:]


#: An instance's world box is the box of its mesh's nodes two four-wide levels
#: down, transformed: for a turned instance it is much tighter than the
#: transformed root box (fewer rays enter the instance to find nothing), and
#: 16 boxes of 8 corners are still cheap to move on every ``set_transform``.
COVER_LEVELS = 2
COVER_BOXES = WIDTH ** COVER_LEVELS


class MeshPack(NamedTuple):
    """Packed meshes; ``K`` meshes, every array read-only.

    Attributes
    ----------
    nodes : (M, 32) float32
        All meshes' four-wide nodes (see :mod:`bvh.walk.nodes`), links rebased.
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
        Boxes covering each mesh (its tree's third level), in mesh
        coordinates: transformed, they bound an instance more tightly than the
        root box.
    mesh_cost : (K,) float64
        SAH cost of each mesh's four-wide tree when it was built
        (``bvh.builders.refit.wide_sah_cost``): a refit's cost is measured against it.
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
    mesh_alpha_start : (K,) int64
        First row of each mesh's faces in the alpha face table, -1 for a
        mesh without alpha-tested faces (see :mod:`bvh.queries.alpha`).
    alpha_faces : (J, 13) float32
        Per face of those meshes: its corners' texture coordinates and vertex
        alphas, and the rectangle of texture space where it may pass the
        alpha test (``bvh.builders.alpha_bounds``).
    alpha_face_material : (J,) int32
        Row of ``alpha_materials`` of each of those faces, -1 for an opaque one.
    alpha_materials : (A, 8) float64
        Alpha-tested materials (``bvh.queries.alpha``'s columns), offsets into ``alpha_texels``.
    alpha_texels : (X,) uint8
        Every material's mask, an 8-bit alpha image, row-major, row 0 at the top.
    """

    nodes: np.ndarray
    tris: np.ndarray
    face_index: np.ndarray
    mesh_root: np.ndarray
    mesh_offset: np.ndarray
    mesh_scale: np.ndarray
    mesh_boxes: np.ndarray
    mesh_cost: np.ndarray
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
    mesh_alpha_start: np.ndarray
    alpha_faces: np.ndarray
    alpha_face_material: np.ndarray
    alpha_materials: np.ndarray
    alpha_texels: np.ndarray

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
        nodes=np.zeros((0, 32), np.float32), tris=np.zeros((0, 9), np.float32), face_index=np.zeros(0, np.int32),
        mesh_root=np.zeros(0, np.int32), mesh_offset=np.zeros((0, 3)), mesh_scale=np.zeros(0),
        mesh_boxes=np.zeros((0, COVER_BOXES, 6)), mesh_cost=np.zeros(0), vertices=np.zeros((0, 3)), vertex_start=zero,
        faces=np.zeros((0, 3), np.int32), face_start=zero.copy(), normals=np.zeros((0, 3), np.float32),
        has_normals=np.zeros(0, bool), uvs=np.zeros((0, 2), np.float32), has_uvs=np.zeros(0, bool),
        source_face=np.zeros(0, np.int32), tri_start=zero.copy(), **alpha_defaults(0)))


def alpha_defaults(mesh_count: int) -> dict:
    """The alpha arrays of ``mesh_count`` meshes none of which is alpha-tested."""
    return dict(mesh_alpha_start=np.full(mesh_count, -1, np.int64),
                alpha_faces=np.zeros((0, FACE_COLUMNS), np.float32), alpha_face_material=np.zeros(0, np.int32),
                alpha_materials=np.zeros((0, MATERIAL_COLUMNS)), alpha_texels=np.zeros(0, np.uint8))


def freeze(pack: tuple) -> tuple:
    """``pack`` (a tuple of arrays: a mesh pack, a line and point pack) made read-only."""
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
    cost: float
    vertices: np.ndarray
    faces: np.ndarray
    normals: np.ndarray | None
    uvs: np.ndarray | None
    source_face: np.ndarray
    alpha: PackedAlpha | None = None


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


def cover_boxes(nodes: np.ndarray) -> np.ndarray:
    """(COVER_BOXES, 6) float64: the boxes of a mesh's four-wide tree (links
    local to it) ``COVER_LEVELS`` levels down, a leaf above that level
    standing for itself; the first repeated to fill the rows."""
    links = nodes.view(np.int32)
    boxes = []
    rows = [0]
    for level in range(COVER_LEVELS):
        deeper = []
        for row in rows:
            for slot in range(WIDTH):
                if nodes[row, MIN_X + slot] == EMPTY_MIN:
                    continue
                child = links[row, CHILD_FIRST + slot]
                if links[row, CHILD_COUNT + slot] == 0 and level + 1 < COVER_LEVELS:
                    deeper.append(child)
                else:
                    boxes.append(nodes[row, [MIN_X + slot + 4 * axis for axis in range(3)]
                                       + [MAX_X + slot + 4 * axis for axis in range(3)]])
        rows = deeper
    boxes = np.array(boxes, np.float64)
    return np.concatenate([boxes, np.repeat(boxes[:1], COVER_BOXES - len(boxes), axis=0)])


def build_chunk(vertices, faces, normals=None, uvs=None, source_face=None, config: BuildConfig | None = None,
                alpha=None):
    """Validate a mesh and build its BVH, ready for :func:`append`; ``alpha``
    is its ``bvh.MeshAlpha`` or None.

    Raises
    ------
    ValueError
        On a malformed mesh, a mesh without a face of non-zero area, or
        per-vertex arrays and ``source_face`` of the wrong shape, or a
        malformed ``alpha``.
    """
    vertices, faces = check_mesh(vertices, faces)
    packed_alpha = pack_mesh_alpha(alpha, vertices.shape[0], faces)
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
    boxes, centroids = data.boxes, data.centroids
    if packed_alpha is not None:
        # Shaped for the alpha-tested walks (bvh.builders.alpha_bounds), boxing whole triangles.
        boxes = build_boxes(data.vertices, data.face_index, packed_alpha.faces, packed_alpha.face_material)
        centroids = (boxes[:, :3] + boxes[:, 3:]) * 0.5
    tree = binned_sah_build(boxes, centroids, config)
    if tree.depth >= MAX_DEPTH:
        raise ValueError(f"the builder made a tree of depth {tree.depth}; traversal supports < {MAX_DEPTH}")
    nodes = collapse_to_wide(tree)
    if packed_alpha is not None:
        nodes = whole_boxes(nodes, np.ascontiguousarray(data.vertices[tree.order]))
    boxes = cover_boxes(nodes)
    scale = float(np.linalg.norm(boxes[:, 3:].max(axis=0) - boxes[:, :3].min(axis=0)))
    return MeshChunk(nodes=nodes, tris=np.ascontiguousarray(data.vertices[tree.order]),
                     face_index=np.ascontiguousarray(data.face_index[tree.order]), offset=data.offset, scale=scale,
                     boxes=boxes, cost=wide_cost(nodes, config), vertices=vertices, faces=faces.astype(np.int32),
                     normals=normals, uvs=uvs, source_face=source_face, alpha=packed_alpha)


def aligned_concat(arrays: list[np.ndarray]) -> np.ndarray:
    """The rows of ``arrays`` one after the other, in an array aligned as
    :func:`bvh.walk.nodes.aligned_empty` aligns node rows."""
    total = sum(a.shape[0] for a in arrays)
    out = aligned_empty((total,) + arrays[0].shape[1:], arrays[0].dtype)
    row = 0
    for a in arrays:
        out[row:row + a.shape[0]] = a
        row += a.shape[0]
    return out


def wide_cost(nodes: np.ndarray, config: BuildConfig) -> float:
    """SAH cost of a mesh's four-wide nodes under ``config``'s constants."""
    return wide_sah_cost(nodes, nodes.view(np.int32), config.traversal_cost, config.intersection_cost)


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
        node_parts.append(rebase(chunk.nodes, node_base, tri_base))
        roots.append(np.array([node_base], np.int32))
        node_base += chunk.nodes.shape[0]
        tri_base += chunk.tris.shape[0]
        tri_start.append(tri_base)

    def stacked(field):
        return [getattr(c, field) for c in chunks]

    vertex_counts = [c.vertices.shape[0] for c in chunks]
    face_counts = [c.faces.shape[0] for c in chunks]
    normals = [c.normals if c.normals is not None else np.zeros((c.vertices.shape[0], 3), np.float32)
               for c in chunks]
    uvs = [c.uvs if c.uvs is not None else np.zeros((c.vertices.shape[0], 2), np.float32) for c in chunks]
    alpha = _appended_alpha(pack, chunks)
    return freeze(MeshPack(
        nodes=aligned_concat(node_parts),
        tris=aligned_concat([pack.tris] + stacked("tris")),
        face_index=np.concatenate([pack.face_index] + stacked("face_index")),
        mesh_root=np.concatenate(roots),
        mesh_offset=np.concatenate([pack.mesh_offset, np.stack(stacked("offset"))]),
        mesh_scale=np.concatenate([pack.mesh_scale, np.array(stacked("scale"))]),
        mesh_boxes=np.concatenate([pack.mesh_boxes, np.stack(stacked("boxes"))]),
        mesh_cost=np.concatenate([pack.mesh_cost, np.array(stacked("cost"), np.float64)]),
        vertices=np.concatenate([pack.vertices] + stacked("vertices")),
        vertex_start=np.concatenate([pack.vertex_start, pack.vertex_start[-1] + np.cumsum(vertex_counts)]),
        faces=np.concatenate([pack.faces] + stacked("faces")),
        face_start=np.concatenate([pack.face_start, pack.face_start[-1] + np.cumsum(face_counts)]),
        normals=np.concatenate([pack.normals] + normals),
        has_normals=np.concatenate([pack.has_normals, [c.normals is not None for c in chunks]]).astype(bool),
        uvs=np.concatenate([pack.uvs] + uvs),
        has_uvs=np.concatenate([pack.has_uvs, [c.uvs is not None for c in chunks]]).astype(bool),
        source_face=np.concatenate([pack.source_face] + stacked("source_face")),
        tri_start=np.array(tri_start, np.int64), **alpha))


def _appended_alpha(pack: MeshPack, chunks: list[MeshChunk]) -> dict:
    """The alpha arrays of ``pack`` followed by ``chunks``' (material rows
    and texel offsets rebased)."""
    starts = [pack.mesh_alpha_start]
    faces, face_material = [pack.alpha_faces], [pack.alpha_face_material]
    materials, texels = [pack.alpha_materials], [pack.alpha_texels]
    face_base, material_base, texel_base = (pack.alpha_faces.shape[0], pack.alpha_materials.shape[0],
                                            pack.alpha_texels.shape[0])
    for chunk in chunks:
        alpha = chunk.alpha
        if alpha is None:
            starts.append(np.array([-1], np.int64))
            continue
        starts.append(np.array([face_base], np.int64))
        faces.append(alpha.faces)
        face_material.append(np.where(alpha.face_material >= 0, alpha.face_material + material_base, -1)
                             .astype(np.int32))
        rows = alpha.materials.copy()
        rows[:, alpha_columns.OFFSET] += texel_base
        materials.append(rows)
        texels.append(alpha.texels)
        face_base += alpha.faces.shape[0]
        material_base += rows.shape[0]
        texel_base += alpha.texels.shape[0]
    return dict(mesh_alpha_start=np.concatenate(starts), alpha_faces=np.concatenate(faces),
                alpha_face_material=np.concatenate(face_material), alpha_materials=np.concatenate(materials),
                alpha_texels=np.concatenate(texels))


def check_alpha(pack: MeshPack) -> None:
    """Refuse alpha arrays (of a saved scene) that would make the kernels
    read outside them: every index and texel range must lie within its array.

    Raises
    ------
    ValueError
        Naming the first array that does not fit.
    """
    faces, materials, texels = pack.alpha_faces, pack.alpha_materials, pack.alpha_texels
    start = pack.mesh_alpha_start
    if start.shape != (pack.mesh_count,) or start.dtype.kind != "i":
        raise ValueError(f"mesh_alpha_start must be ({pack.mesh_count},) integers, got {start.shape} {start.dtype}")
    if faces.ndim != 2 or faces.shape[1] != FACE_COLUMNS or materials.ndim != 2 \
            or materials.shape[1] != MATERIAL_COLUMNS or texels.ndim != 1 or texels.dtype != np.uint8 \
            or pack.alpha_face_material.shape != (faces.shape[0],):
        raise ValueError("the alpha arrays do not have their shapes")
    tested = start >= 0
    ends = start[tested] + np.diff(pack.face_start)[tested]
    if ends.size and ends.max() > faces.shape[0]:
        raise ValueError("mesh_alpha_start points past the alpha faces")
    if not np.isfinite(faces).all():
        raise ValueError("alpha_faces hold NaN or infinite values")
    material = pack.alpha_face_material
    if material.size and (material.min() < -1 or material.max() >= materials.shape[0]):
        raise ValueError("alpha_face_material refers to a material that is not there")
    if materials.shape[0]:
        placed = materials[:, [alpha_columns.OFFSET, alpha_columns.WIDTH, alpha_columns.HEIGHT]]
        offset, width, height = placed.T
        # Whole numbers, an image of at least one texel (or none), inside the texels.
        if not (np.isfinite(materials).all() and (np.floor(placed) == placed).all() and (offset >= 0).all()
                and (width >= 0).all() and ((width == 0) | (height > 0)).all()
                and (offset + width * height <= texels.shape[0]).all()):
            raise ValueError("an alpha material's mask lies outside alpha_texels")


def with_opaque_rects(arrays: dict) -> dict:
    """The arrays of a scene saved before ``bvh.builders.alpha_bounds``, whose alpha
    faces have no rectangles (9 columns): checked as :func:`check_alpha`
    checks them, then given their rectangles.

    Raises
    ------
    ValueError
        As :func:`check_alpha`.
    """
    faces = np.asarray(arrays["alpha_faces"], np.float32)
    if faces.ndim != 2 or faces.shape[1] != alpha_columns.S_LO:
        raise ValueError("the alpha arrays do not have their shapes")
    padded = np.concatenate([faces, np.zeros((faces.shape[0], FACE_COLUMNS - alpha_columns.S_LO), np.float32)],
                            axis=1)
    pack = MeshPack(**{name: np.asarray(arrays[name]) for name in ARRAY_NAMES if name != "alpha_faces"},
                    alpha_faces=padded)
    check_alpha(pack)
    padded[:, alpha_columns.S_LO:] = opaque_rects(faces, pack.alpha_face_material, pack.alpha_materials,
                                                  pack.alpha_texels)
    return {**arrays, "alpha_faces": padded}


def mesh_alpha(pack: MeshPack, mesh: int):
    """Mesh ``mesh``'s alpha as a ``bvh.MeshAlpha`` (its tested materials,
    faces' corners' texture coordinates and vertex alphas), or None: what
    ``Scene.add_scene`` copies."""
    start = int(pack.mesh_alpha_start[mesh])
    if start < 0:
        return None
    faces = pack.mesh_faces(mesh)
    rows = slice(start, start + faces.shape[0])
    return alpha_of_rows(pack.alpha_faces[rows], pack.alpha_face_material[rows], pack.alpha_materials,
                         pack.alpha_texels, faces, int(pack.vertex_start[mesh + 1] - pack.vertex_start[mesh]))


def mesh_inputs(pack: MeshPack, mesh: int) -> dict:
    """What :func:`build_chunk` needs to build mesh ``mesh`` of ``pack`` again:
    ``vertices, faces, normals, uvs, source_face``."""
    vertex_rows = slice(pack.vertex_start[mesh], pack.vertex_start[mesh + 1])
    face_rows = slice(pack.face_start[mesh], pack.face_start[mesh + 1])
    return dict(vertices=np.array(pack.vertices[vertex_rows]), faces=np.array(pack.faces[face_rows]),
                normals=np.array(pack.normals[vertex_rows]) if pack.has_normals[mesh] else None,
                uvs=np.array(pack.uvs[vertex_rows]) if pack.has_uvs[mesh] else None,
                source_face=np.array(pack.source_face[face_rows]))


def _node_rows(pack: MeshPack, mesh: int) -> slice:
    end = pack.mesh_root[mesh + 1] if mesh + 1 < pack.mesh_count else pack.nodes.shape[0]
    return slice(int(pack.mesh_root[mesh]), int(end))


def refit_chunk(pack: MeshPack, mesh: int, vertices: np.ndarray) -> tuple[MeshChunk, float, np.ndarray]:
    """Mesh ``mesh`` of ``pack`` refitted to new ``vertices`` (see :mod:`bvh.builders.refit`).

    Parameters
    ----------
    vertices : (V, 3) float64
        From ``bvh.builders.refit.check_refit_vertices``, one row per vertex of the mesh.

    Returns
    -------
    chunk : MeshChunk
        The refitted mesh, links local to it, ``cost`` its cost when built.
    cost : float
        SAH cost of the refitted tree.
    box : (2, 3) float64
        The exact box of the vertices the mesh's faces use.

    Raises
    ------
    ValueError
        As ``bvh.builders.refit.refit_tree``.
    """
    inputs = mesh_inputs(pack, mesh)
    faces = inputs["faces"]
    tri_rows = slice(int(pack.tri_start[mesh]), int(pack.tri_start[mesh + 1]))
    face_index = np.array(pack.face_index[tri_rows])
    dropped = np.ones(faces.shape[0], bool)
    dropped[face_index] = False
    used = np.zeros(vertices.shape[0], bool)
    used[faces] = True
    nodes = rebase(pack.nodes[_node_rows(pack, mesh)], -int(pack.mesh_root[mesh]), -int(pack.tri_start[mesh]))
    nodes, triangles, offset, lo, hi = refit_tree(vertices, used, faces[face_index], faces[dropped], nodes)
    boxes = cover_boxes(nodes)
    scale = float(np.linalg.norm(boxes[:, 3:].max(axis=0) - boxes[:, :3].min(axis=0)))
    config = BuildConfig()
    chunk = MeshChunk(nodes=nodes, tris=triangles, face_index=face_index, offset=offset, scale=scale, boxes=boxes,
                      cost=float(pack.mesh_cost[mesh]), vertices=vertices, faces=faces, normals=inputs["normals"],
                      uvs=inputs["uvs"], source_face=inputs["source_face"])
    return chunk, wide_cost(nodes, config), np.stack([lo, hi])


def replace(pack: MeshPack, mesh: int, chunk: MeshChunk) -> MeshPack:
    """A new pack with mesh ``mesh``'s tree, triangles and vertices those of
    ``chunk`` (the same vertex and face count: a refit or a rebuild)."""
    node_rows = _node_rows(pack, mesh)
    tri_rows = slice(int(pack.tri_start[mesh]), int(pack.tri_start[mesh + 1]))
    node_shift = chunk.nodes.shape[0] - (node_rows.stop - node_rows.start)
    tri_shift = chunk.tris.shape[0] - (tri_rows.stop - tri_rows.start)
    nodes = aligned_concat([pack.nodes[:node_rows.start],
                             rebase(chunk.nodes, node_rows.start, tri_rows.start),
                             rebase(pack.nodes[node_rows.stop:], node_shift, tri_shift)])
    tris = aligned_concat([pack.tris[:tri_rows.start], chunk.tris, pack.tris[tri_rows.stop:]])
    later = np.arange(pack.mesh_count) > mesh
    vertices = np.array(pack.vertices)
    vertices[pack.vertex_start[mesh]:pack.vertex_start[mesh + 1]] = chunk.vertices

    def one_row(array, value):
        copy = np.array(array)
        copy[mesh] = value
        return copy

    return freeze(pack._replace(
        nodes=nodes, tris=tris,
        face_index=np.concatenate([pack.face_index[:tri_rows.start], chunk.face_index,
                                   pack.face_index[tri_rows.stop:]]),
        mesh_root=(pack.mesh_root + np.where(later, node_shift, 0)).astype(np.int32),
        mesh_offset=one_row(pack.mesh_offset, chunk.offset), mesh_scale=one_row(pack.mesh_scale, chunk.scale),
        mesh_boxes=one_row(pack.mesh_boxes, chunk.boxes), mesh_cost=one_row(pack.mesh_cost, chunk.cost),
        vertices=vertices,
        tri_start=pack.tri_start + np.concatenate([[0], np.where(later, tri_shift, 0)]).astype(np.int64)))
