"""Every line set and point set of a scene in one set of flat arrays, beside
the meshes' pack (:mod:`bvh.scene.mesh_pack`), so the pick kernels see plain arrays.

A *line set* is vertices and segments (pairs of vertex indices), a *point
set* is points; either is geometry, placed in the world by objects as a mesh
is (``Scene.add_instance(lines=...)``). Each set gets its own BVH from the
same builder as meshes (:func:`bvh.builder.binned_sah_build` sees only boxes
and centroids: a segment's box is its endpoints', a point's is the point),
collapsed to four-wide nodes. The nodes of every set share one array, their
leaves pointing into ``segments`` (line sets) or ``points`` (point sets).

Coordinates are stored as meshes store theirs: float32, relative to the
set's centring offset (``bvh.triangles.centring_offset``), the offset kept
in float64 and folded into each object's inverse transform. Segments of zero
length are kept: they are picked as points. The arrays as given (float64
vertices, segments) are kept too, for answers and for saving.
"""

from typing import NamedTuple

import numpy as np

from .._jit import MAX_DEPTH
from ..builders.sah import binned_sah_build
from ..builders.config import BuildConfig
from .mesh_pack import COVER_BOXES, cover_boxes
from ..walk.nodes import aligned_empty, collapse_to_wide, rebase
from ..shapes import LINES, POINTS
from ..builders.triangles import centring_offset
from ..validation import MAX_MESH_EXTENT, real_array

#: Arrays of a pack, in the order they are saved (each under ``"lp_" + name``).
ARRAY_NAMES = ("nodes", "segments", "segment_index", "points", "point_index", "set_kind", "set_root", "set_offset",
               "set_boxes", "set_extremes", "vertices", "vertex_start", "edges", "edge_start")

SAVED_PREFIX = "lp_"


class LinePointPack(NamedTuple):
    """Packed line and point sets; ``G`` sets, every array read-only.

    Attributes
    ----------
    nodes : (M, 32) float32
        Every set's four-wide nodes (:mod:`bvh.walk.nodes`), links rebased:
        inner links into ``nodes``, a line set's leaves into ``segments``
        rows, a point set's into ``points`` rows.
    segments : (S, 6) float32
        Every line set's segments ``a, b`` in leaf order, relative to its offset.
    segment_index : (S,) int32
        Index of each packed segment in its set's segments as given.
    points : (P, 3) float32
        Every point set's points in leaf order, relative to its offset.
    point_index : (P,) int32
        Index of each packed point in its set as given.
    set_kind : (G,) int32
        ``bvh.shapes.LINES`` or ``bvh.shapes.POINTS``.
    set_root : (G,) int32
        Node row of each set's root.
    set_offset : (G, 3) float64
        Centring offset subtracted before rounding to float32.
    set_boxes : (G, COVER_BOXES, 6) float64
        Boxes covering each set (its tree two levels down), relative to its
        offset, as ``MeshPack.mesh_boxes``.
    set_extremes : (G, 2, 3) float64
        Exact box of each set's vertices in use, in its own coordinates.
    vertices : (V, 3) float64
        A line set's vertices, a point set's points, as given; set ``g`` owns
        ``vertex_start[g]:vertex_start[g + 1]``.
    edges : (E, 2) int32
        A line set's segments as given (vertex indices local to the set);
        ``edge_start`` as above (empty for a point set).
    """

    nodes: np.ndarray
    segments: np.ndarray
    segment_index: np.ndarray
    points: np.ndarray
    point_index: np.ndarray
    set_kind: np.ndarray
    set_root: np.ndarray
    set_offset: np.ndarray
    set_boxes: np.ndarray
    set_extremes: np.ndarray
    vertices: np.ndarray
    vertex_start: np.ndarray
    edges: np.ndarray
    edge_start: np.ndarray

    @property
    def set_count(self) -> int:
        return int(self.set_root.shape[0])

    def set_vertices(self, g: int) -> np.ndarray:
        return self.vertices[self.vertex_start[g]:self.vertex_start[g + 1]]

    def set_edges(self, g: int) -> np.ndarray:
        return self.edges[self.edge_start[g]:self.edge_start[g + 1]]

    def primitive_counts(self) -> np.ndarray:
        """(G,) int64: segments of each line set, points of each point set."""
        return np.where(self.set_kind == LINES, np.diff(self.edge_start), np.diff(self.vertex_start))


class SetChunk(NamedTuple):
    """One set, built and ready to append to a pack (links local to it)."""

    kind: int
    nodes: np.ndarray
    primitives: np.ndarray
    index: np.ndarray
    offset: np.ndarray
    boxes: np.ndarray
    extremes: np.ndarray
    vertices: np.ndarray
    edges: np.ndarray


def empty_pack() -> LinePointPack:
    zero = np.zeros(1, np.int64)
    return freeze(LinePointPack(
        nodes=np.zeros((0, 32), np.float32), segments=np.zeros((0, 6), np.float32),
        segment_index=np.zeros(0, np.int32), points=np.zeros((0, 3), np.float32), point_index=np.zeros(0, np.int32),
        set_kind=np.zeros(0, np.int32), set_root=np.zeros(0, np.int32), set_offset=np.zeros((0, 3)),
        set_boxes=np.zeros((0, COVER_BOXES, 6)), set_extremes=np.zeros((0, 2, 3)), vertices=np.zeros((0, 3)),
        vertex_start=zero, edges=np.zeros((0, 2), np.int32), edge_start=zero.copy()))


def freeze(pack: LinePointPack) -> LinePointPack:
    for array in pack:
        array.setflags(write=False)
    return pack


def _coordinates(name: str, value) -> np.ndarray:
    array = real_array(name, value).astype(np.float64)
    if array.ndim != 2 or array.shape[1] != 3 or array.shape[0] == 0:
        raise ValueError(f"{name} must have shape (N, 3), N >= 1, got {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contain NaN or infinite values")
    if np.abs(array).max() > MAX_MESH_EXTENT:
        raise ValueError(f"{name} must lie within {MAX_MESH_EXTENT:g} of the origin (float32 bounds)")
    return array


def check_lines(vertices, segments) -> tuple[np.ndarray, np.ndarray]:
    """``(vertices (V, 3) float64, segments (E, 2) int64)`` checked.

    Raises
    ------
    ValueError
        On a malformed array, non-finite or out-of-range coordinates, no
        segment, or a segment index outside ``[0, V)``, saying which.
    """
    vertices = _coordinates("vertices", vertices)
    pairs = real_array("segments", segments)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.shape[0] == 0:
        raise ValueError(f"segments must have shape (E, 2), E >= 1, got {pairs.shape}")
    if pairs.dtype == bool or pairs.dtype.kind not in "iu":
        raise ValueError(f"segments must be integer vertex indices, got {pairs.dtype}")
    pairs = pairs.astype(np.int64)
    bad = (pairs < 0) | (pairs >= vertices.shape[0])
    if bad.any():
        row = int(np.argmax(bad.any(axis=1)))
        raise ValueError(f"segment {row} refers to vertex {int(pairs[row][bad[row]][0])}, outside "
                         f"[0, {vertices.shape[0]})")
    return vertices, pairs


def check_points(points) -> np.ndarray:
    """``(P, 3) float64`` checked as :func:`check_lines` checks vertices."""
    return _coordinates("points", points)


def _build(kind: int, corners: np.ndarray, lo: np.ndarray, hi: np.ndarray, offset: np.ndarray, vertices, edges,
           config: BuildConfig) -> SetChunk:
    """Build the tree of primitives whose float32 coordinates are ``corners
    (N, 3 * k)`` (k = 2 endpoints or 1 point)."""
    wide = corners.astype(np.float64).reshape(corners.shape[0], -1, 3)
    boxes = np.concatenate([wide.min(axis=1), wide.max(axis=1)], axis=1)
    tree = binned_sah_build(boxes, (boxes[:, :3] + boxes[:, 3:]) * 0.5, config)
    if tree.depth >= MAX_DEPTH:
        raise ValueError(f"the builder made a tree of depth {tree.depth}; traversal supports < {MAX_DEPTH}")
    nodes = collapse_to_wide(tree)
    return SetChunk(kind=kind, nodes=nodes, primitives=np.ascontiguousarray(corners[tree.order]),
                    index=np.ascontiguousarray(tree.order.astype(np.int32)), offset=offset, boxes=cover_boxes(nodes),
                    extremes=np.stack([lo, hi]), vertices=vertices, edges=edges)


def build_lines(vertices, segments, config: BuildConfig | None = None) -> SetChunk:
    """Validate a line set (:func:`check_lines`) and build its BVH."""
    vertices, segments = check_lines(vertices, segments)
    used = vertices[np.unique(segments)]
    lo, hi = used.min(axis=0), used.max(axis=0)
    offset = centring_offset(lo, hi)
    corners = (vertices[segments.reshape(-1)] - offset).astype(np.float32).reshape(-1, 6)
    return _build(LINES, corners, lo, hi, offset, vertices, segments.astype(np.int32), config or BuildConfig())


def build_points(points, config: BuildConfig | None = None) -> SetChunk:
    """Validate a point set (:func:`check_points`) and build its BVH."""
    points = check_points(points)
    lo, hi = points.min(axis=0), points.max(axis=0)
    offset = centring_offset(lo, hi)
    corners = (points - offset).astype(np.float32)
    return _build(POINTS, corners, lo, hi, offset, points, np.zeros((0, 2), np.int32), config or BuildConfig())


def _aligned_concat(arrays: list[np.ndarray]) -> np.ndarray:
    total = sum(a.shape[0] for a in arrays)
    out = aligned_empty((total,) + arrays[0].shape[1:], arrays[0].dtype)
    row = 0
    for a in arrays:
        out[row:row + a.shape[0]] = a
        row += a.shape[0]
    return out


def append(pack: LinePointPack, chunks: list[SetChunk]) -> LinePointPack:
    """A new pack holding ``pack``'s sets followed by ``chunks`` (ids continue)."""
    if not chunks:
        return pack
    node_parts, roots = [pack.nodes], [pack.set_root]
    segment_parts, segment_index = [pack.segments], [pack.segment_index]
    point_parts, point_index = [pack.points], [pack.point_index]
    node_base = pack.nodes.shape[0]
    segment_base = pack.segments.shape[0]
    point_base = pack.points.shape[0]
    for chunk in chunks:
        if chunk.kind == LINES:
            node_parts.append(rebase(chunk.nodes, node_base, segment_base))
            segment_parts.append(chunk.primitives)
            segment_index.append(chunk.index)
            segment_base += chunk.primitives.shape[0]
        else:
            node_parts.append(rebase(chunk.nodes, node_base, point_base))
            point_parts.append(chunk.primitives)
            point_index.append(chunk.index)
            point_base += chunk.primitives.shape[0]
        roots.append(np.array([node_base], np.int32))
        node_base += chunk.nodes.shape[0]
    return freeze(LinePointPack(
        nodes=_aligned_concat(node_parts), segments=_aligned_concat(segment_parts),
        segment_index=np.concatenate(segment_index), points=_aligned_concat(point_parts),
        point_index=np.concatenate(point_index),
        set_kind=np.concatenate([pack.set_kind, np.array([c.kind for c in chunks], np.int32)]),
        set_root=np.concatenate(roots),
        set_offset=np.concatenate([pack.set_offset, np.stack([c.offset for c in chunks])]),
        set_boxes=np.concatenate([pack.set_boxes, np.stack([c.boxes for c in chunks])]),
        set_extremes=np.concatenate([pack.set_extremes, np.stack([c.extremes for c in chunks])]),
        vertices=np.concatenate([pack.vertices] + [c.vertices for c in chunks]),
        vertex_start=np.concatenate([pack.vertex_start,
                                     pack.vertex_start[-1] + np.cumsum([c.vertices.shape[0] for c in chunks])]),
        edges=np.concatenate([pack.edges] + [c.edges for c in chunks]),
        edge_start=np.concatenate([pack.edge_start,
                                   pack.edge_start[-1] + np.cumsum([c.edges.shape[0] for c in chunks])])))


def from_saved(arrays: dict) -> LinePointPack:
    """The pack saved in ``arrays`` (names with :data:`SAVED_PREFIX`); an
    empty pack for a save made before line and point sets existed."""
    if not any(SAVED_PREFIX + name in arrays for name in ARRAY_NAMES):
        return empty_pack()
    missing = [name for name in ARRAY_NAMES if SAVED_PREFIX + name not in arrays]
    if missing:
        raise ValueError(f"array {SAVED_PREFIX + missing[0]!r} is missing")
    pack = LinePointPack(**{name: np.asarray(arrays[SAVED_PREFIX + name]) for name in ARRAY_NAMES})
    if not (pack.set_kind.shape == pack.set_root.shape == (pack.set_offset.shape[0],)
            and pack.vertex_start.shape == pack.edge_start.shape == (pack.set_count + 1,)):
        raise ValueError("the line and point sets' arrays disagree on the number of sets")
    return freeze(pack)


def saved_arrays(pack: LinePointPack) -> dict:
    """``{"lp_" + name: array}`` of ``pack``, for ``bvh.persistence.write_arrays``."""
    return {SAVED_PREFIX + name: getattr(pack, name) for name in ARRAY_NAMES}
