"""Triangle data for the leaves: centred, float32, degenerate faces removed."""

from typing import NamedTuple

import numpy as np

from ._jit import jit, jit_inline


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


@jit
def used_bounds(vertices, faces):
    """``(lo, hi)``, the (3,) corners of the box of the vertices ``faces`` use.

    One pass without gathering a ``(3F, 3)`` copy of the corners, which for a
    million faces took a fifth of a second.
    """
    lo = np.empty(3)
    hi = np.empty(3)
    for axis in range(3):
        lo[axis] = vertices[faces[0, 0], axis]
        hi[axis] = lo[axis]
    for f in range(faces.shape[0]):
        for corner in range(3):
            row = faces[f, corner]
            for axis in range(3):
                x = vertices[row, axis]
                lo[axis] = min(lo[axis], x)
                hi[axis] = max(hi[axis], x)
    return lo, hi


@jit_inline
def is_zero_area(corners, row):
    """Whether the cross product of a row's float32 edges, computed exactly in
    float64 (differences of float32 values are exact there), is the zero
    vector: such a face is never hit, so the tree leaves it out."""
    e1x = np.float64(corners[row, 3]) - np.float64(corners[row, 0])
    e1y = np.float64(corners[row, 4]) - np.float64(corners[row, 1])
    e1z = np.float64(corners[row, 5]) - np.float64(corners[row, 2])
    e2x = np.float64(corners[row, 6]) - np.float64(corners[row, 0])
    e2y = np.float64(corners[row, 7]) - np.float64(corners[row, 1])
    e2z = np.float64(corners[row, 8]) - np.float64(corners[row, 2])
    return e1y * e2z - e1z * e2y == 0.0 and e1z * e2x - e1x * e2z == 0.0 and e1x * e2y - e1y * e2x == 0.0


@jit
def _corner_rows(local, faces):
    """``(corners, kept)``: each face's float32 corners as a row of 9, and the
    indices of the faces whose exact float64 edge cross product is nonzero."""
    n = faces.shape[0]
    corners = np.empty((n, 9), np.float32)
    kept = np.empty(n, np.int64)
    count = 0
    for f in range(n):
        for corner in range(3):
            row = faces[f, corner]
            for axis in range(3):
                corners[f, 3 * corner + axis] = local[row, axis]
        if not is_zero_area(corners, f):
            kept[count] = f
            count += 1
    return corners, kept[:count]


@jit
def _boxes_and_centroids(corners):
    """Exact float64 bounds ``(T, 6)`` and box centres ``(T, 3)`` of corner rows."""
    n = corners.shape[0]
    boxes = np.empty((n, 6))
    centroids = np.empty((n, 3))
    for f in range(n):
        for axis in range(3):
            a = np.float64(corners[f, axis])
            b = np.float64(corners[f, 3 + axis])
            c = np.float64(corners[f, 6 + axis])
            lo = min(a, min(b, c))
            hi = max(a, max(b, c))
            boxes[f, axis] = lo
            boxes[f, 3 + axis] = hi
            centroids[f, axis] = (lo + hi) * 0.5
    return boxes, centroids


def prepare_triangles(vertices: np.ndarray, faces: np.ndarray) -> TriangleData:
    """Centre, round to float32 and drop zero-area faces.

    A face is zero-area when the cross product of its float32 edges, computed
    exactly in float64, is the zero vector: such a face can never be hit
    (the Möller–Trumbore determinant is zero for every ray), so it is left out
    of the tree instead of being tested.

    Parameters
    ----------
    vertices : (V, 3) float64, finite
    faces : (F, 3) int64, indices in ``[0, V)``, F >= 1
    """
    offset = _centring_offset(*used_bounds(vertices, faces))
    # Only used vertices must fit float32 (check_mesh); an unused one may overflow to inf, harmlessly.
    with np.errstate(over="ignore"):
        local = (vertices - offset).astype(np.float32)
    corners, kept = _corner_rows(local, faces)
    if kept.shape[0] < corners.shape[0]:
        corners = corners[kept]
    boxes, centroids = _boxes_and_centroids(corners)
    return TriangleData(
        offset=offset,
        vertices=corners,
        face_index=kept.astype(np.int32),
        boxes=boxes,
        centroids=centroids,
    )
