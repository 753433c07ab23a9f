"""Triangle data for the leaves: centred, float32, degenerate faces removed."""

from contextlib import contextmanager
from typing import NamedTuple

import numba
import numpy as np
from numba import prange

from .._jit import jit_inline, jit_parallel
from .boxes import EMPTY_BOX, point_box, union, write_box


class TriangleData(NamedTuple):
    """Triangles ready for building and intersecting.

    Attributes
    ----------
    offset : (3,) float64
        The mesh's bounding-box centre, or zero (see ``centring_offset``), subtracted from every vertex before the
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


def centring_offset(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
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


#: Meshes of fewer faces than this are prepared on the calling thread
#: alone: a parallel pass first waits for every worker to wake, which can
#: take longer than the work.
PARALLEL_PREPARE = 100_000

#: Faces per task of the parallel passes.
CHUNK = 16_384


@contextmanager
def _one_thread_below(faces: int):
    """Run the parallel passes of a mesh of fewer than
    :data:`PARALLEL_PREPARE` faces on the calling thread alone (numba's
    thread count is a per-thread setting, restored on exit)."""
    threads = numba.get_num_threads()
    if faces < PARALLEL_PREPARE:
        numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(threads)


@jit_parallel
def _used_bounds(vertices, faces, partial):
    """Box of the vertices ``faces`` use, as ``(lo, hi)`` rows of ``partial``,
    one per chunk of faces (the caller reduces them): one pass, without
    gathering a ``(3F, 3)`` copy of the corners."""
    n = faces.shape[0]
    chunks = partial.shape[0]
    for chunk in prange(chunks):
        bounds = EMPTY_BOX
        for f in range(chunk * n // chunks, (chunk + 1) * n // chunks):
            for corner in range(3):
                row = faces[f, corner]
                bounds = union(bounds, point_box(vertices[row, 0], vertices[row, 1], vertices[row, 2]))
        write_box(bounds, partial[chunk], 0)


def used_bounds(vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)``, the (3,) corners of the box of the vertices ``faces`` use.

    Parameters
    ----------
    vertices : (V, 3) float64
    faces : (F, 3) int64, indices in ``[0, V)``, F >= 1
    """
    partial = np.empty(((faces.shape[0] + CHUNK - 1) // CHUNK, 6))
    with _one_thread_below(faces.shape[0]):
        _used_bounds(vertices, faces, partial)
    return partial[:, :3].min(axis=0), partial[:, 3:].max(axis=0)


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


@jit_parallel
def _triangle_rows(vertices, offset, faces, corners, boxes, centroids, zero_area):
    """Fill, for every face, its row of ``corners`` (float32, relative to
    ``offset``), its exact float64 bounds in ``boxes``, their centre in
    ``centroids``, and ``zero_area`` (see :func:`is_zero_area`); returns
    the number of zero-area faces."""
    n = faces.shape[0]
    chunks = (n + CHUNK - 1) // CHUNK
    dropped = 0
    for chunk in prange(chunks):
        for f in range(chunk * CHUNK, min(n, (chunk + 1) * CHUNK)):
            for corner in range(3):
                row = faces[f, corner]
                for axis in range(3):
                    # The float64 difference rounded once, as numpy's
                    # (vertices - offset).astype(np.float32) rounds it.
                    corners[f, 3 * corner + axis] = np.float32(vertices[row, axis] - offset[axis])
            for axis in range(3):
                a = np.float64(corners[f, axis])
                b = np.float64(corners[f, 3 + axis])
                c = np.float64(corners[f, 6 + axis])
                lo = min(a, min(b, c))
                hi = max(a, max(b, c))
                boxes[f, axis] = lo
                boxes[f, 3 + axis] = hi
                centroids[f, axis] = (lo + hi) * 0.5
            zero_area[f] = is_zero_area(corners, f)
            if zero_area[f]:
                dropped += 1
    return dropped


def prepare_triangles(vertices: np.ndarray, faces: np.ndarray) -> TriangleData:
    """Centre, round to float32 and drop zero-area faces.

    A face is zero-area when the cross product of its float32 edges, computed
    exactly in float64, is the zero vector: such a face can never be hit
    (the Möller–Trumbore determinant is zero for every ray), so it is left out
    of the tree instead of being tested.

    Meshes of :data:`PARALLEL_PREPARE` faces or more are prepared on all of
    numba's threads, to the same result.

    Parameters
    ----------
    vertices : (V, 3) float64, finite
    faces : (F, 3) int64, indices in ``[0, V)``, F >= 1
    """
    offset = centring_offset(*used_bounds(vertices, faces))
    n = faces.shape[0]
    # Allocated by numpy, which asks Linux for huge pages, rather than in the
    # kernel: faulting in 4 KiB pages costs more than filling them.
    corners = np.empty((n, 9), np.float32)
    boxes = np.empty((n, 6))
    centroids = np.empty((n, 3))
    zero_area = np.empty(n, np.bool_)
    with _one_thread_below(n):
        dropped = _triangle_rows(vertices, offset, faces, corners, boxes, centroids, zero_area)
    if dropped:
        kept = np.flatnonzero(~zero_area)
        corners, boxes, centroids = corners[kept], boxes[kept], centroids[kept]
        face_index = kept.astype(np.int32)
    else:
        face_index = np.arange(n, dtype=np.int32)
    return TriangleData(
        offset=offset,
        vertices=corners,
        face_index=face_index,
        boxes=boxes,
        centroids=centroids,
    )
