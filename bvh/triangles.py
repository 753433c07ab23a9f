"""Triangle data for the leaves: centred, float32, degenerate faces removed."""

from typing import NamedTuple

import numpy as np


class TriangleData(NamedTuple):
    """Triangles ready for building and intersecting.

    Attributes
    ----------
    offset : (3,) float64
        The mesh's bounding-box centre, or zero (see ``_centring_offset``), subtracted from every vertex before the
        cast to float32 so that a mesh far from the origin keeps its precision.
        Rays are moved by ``-offset`` before traversal.
    vertices : (T, 9) float32
        ``v0, v1, v2`` of each non-degenerate face, in the face's own vertex
        order, relative to ``offset``.
    face_index : (T,) int32
        The original face index of each row.
    boxes : (T, 6) float64
        Bounds of each triangle (exact: they are float32 values).
    centroids : (T, 3) float64
        Box centres, what the builder bins.
    """

    offset: np.ndarray
    vertices: np.ndarray
    face_index: np.ndarray
    boxes: np.ndarray
    centroids: np.ndarray


def _centring_offset(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """What to subtract from the vertices before rounding them to float32.

    A mesh far from the origin relative to its size is moved to around the
    origin, so that float32 keeps ~7 digits of the mesh itself rather than of
    its distance from the origin. A mesh within a couple of its sizes from the
    origin is left in place: centring would win at most two bits, and leaving
    it keeps vertices that are float32 values to begin with exact.
    """
    centre = (lo + hi) * 0.5
    extent = float(np.max(hi - lo))
    if np.max(np.abs(centre)) <= 2.0 * extent:
        return np.zeros(3)
    return centre


def prepare_triangles(vertices: np.ndarray, faces: np.ndarray) -> TriangleData:
    """Centre, round to float32 and drop zero-area faces.

    A face is zero-area when the cross product of its float32 edges, computed
    exactly in float64, is the zero vector: such a face can never be hit
    (the Möller–Trumbore determinant is zero for every ray), so it is left out
    of the tree instead of being tested.

    Parameters
    ----------
    vertices : (V, 3) float64, finite
    faces : (F, 3) integer, indices in ``[0, V)``
    """
    used = vertices[faces.ravel()]
    offset = _centring_offset(used.min(axis=0), used.max(axis=0))
    local = (vertices - offset).astype(np.float32)
    corners = local[faces]
    exact = corners.astype(np.float64)
    normal = np.cross(exact[:, 1] - exact[:, 0], exact[:, 2] - exact[:, 0])
    keep = np.flatnonzero(np.any(normal != 0.0, axis=1))
    corners = corners[keep]
    exact = exact[keep]
    boxes = np.concatenate([exact.min(axis=1), exact.max(axis=1)], axis=1)
    centroids = (boxes[:, :3] + boxes[:, 3:]) * 0.5
    return TriangleData(
        offset=offset,
        vertices=np.ascontiguousarray(corners.reshape(-1, 9)),
        face_index=keep.astype(np.int32),
        boxes=boxes,
        centroids=centroids,
    )
