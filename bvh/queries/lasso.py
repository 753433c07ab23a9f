"""Lasso selection: which triangles a camera's pixel polygon encloses.

A lasso is a closed polygon of pixel coordinates (concave allowed); its
region in the world is every point in front of the camera, between its near
and far planes, whose image falls inside the polygon. The region is not
convex, so :mod:`bvh.queries.frustum`'s half-spaces cannot hold it; a selection culls
with the frustum of the polygon's bounding rectangle (:attr:`Lasso.planes`)
and then tests each remaining triangle exactly, in two dimensions:

1. the triangle's vertices go to clip space by one ``(4, 4)`` matrix
   (object to world to clip), in float64;
2. it is clipped against the near (``z + w >= 0``) and far (``w - z >= 0``)
   planes in homogeneous coordinates (Sutherland and Hodgman 1974), as the
   rectangle's frustum clips it: what lies behind the near plane is not
   selectable. Clipping leaves a convex polygon of at most five vertices,
   all with ``w > 0``, which the perspective division maps to a convex
   polygon (a projective map keeps lines and, in front of the eye, convexity);
3. that convex outline ``Q`` is compared with the lasso ``P`` in normalised
   device coordinates. *Crossing*: ``Q`` and ``P`` have a point in common:
   a vertex of ``Q`` inside ``P``, the first vertex of ``P`` inside ``Q``
   (``P`` wholly inside ``Q``), or an edge of one crossing an edge of the
   other. *Window*: the triangle is not clipped at all, its three projected
   vertices are inside ``P`` and no edge of ``P`` meets an edge of the
   triangle (so no part of ``P``'s outside reaches in).

Inside ``P`` is the even-odd rule (a point is inside when a ray from it
crosses the outline an odd number of times), with the half-open crossing
test of W. R. Franklin's PNPOLY; a lasso that crosses itself therefore
selects what its odd-covered parts cover. Points exactly on the outline can
go either way, as for pixel centres on a rasteriser's edge.

:func:`pixels_in_polygon` lists the pixels whose centres the same rule puts
inside, for visible-only selection (one ray per pixel).
"""

import math

import numpy as np
from numba import prange

from .._jit import jit, jit_inline, jit_parallel
from ..camera import MAX_PIXEL, Camera
from .frustum import clip_polygon

#: Faces per parallel task, as in :mod:`bvh.queries.frustum`.
BLOCK = 2048

#: Most points a lasso may have: a freehand stroke sampled at every pointer
#: event rarely has more than a few hundred.
MAX_POINTS = 10_000

#: Room for a triangle clipped by the near and far planes. Each plane adds
#: at most one vertex to a convex polygon (5), but rounding may leave the
#: quadrilateral of the first cut a sliver the second crosses four times:
#: a clip keeps its vertices on the inside and adds one per sign change,
#: at most 2 + 4 for four vertices, so 6 rows are never overrun.
_CLIPPED = 6


# ------------------------------------------------------------------ kernels


@jit_inline
def _crossing(polygon, i, j, y):
    """Whether the edge from corner ``j`` to corner ``i`` of ``polygon`` crosses
    the line at height ``y`` by PNPOLY's rule (a corner at ``y`` is below
    it), and the crossing's ``x``: ``(crosses, x)``."""
    xi = polygon[i, 0]
    yi = polygon[i, 1]
    xj = polygon[j, 0]
    yj = polygon[j, 1]
    if (yi > y) != (yj > y):
        return True, (xj - xi) * (y - yi) / (yj - yi) + xi
    return False, 0.0


@jit_inline
def _inside(polygon, x, y):
    """Whether ``(x, y)`` is inside ``polygon (n, 2)`` by the even-odd rule (PNPOLY)."""
    n = polygon.shape[0]
    inside = False
    j = n - 1
    for i in range(n):
        crosses, at = _crossing(polygon, i, j, y)
        if crosses and x < at:
            inside = not inside
        j = i
    return inside


@jit_inline
def _orient(ax, ay, bx, by, cx, cy):
    """Twice the signed area of ``abc``: > 0 counter-clockwise."""
    return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)


@jit_inline
def _segments_meet(ax, ay, bx, by, cx, cy, dx, dy):
    """Whether the closed segments ``ab`` and ``cd`` have a point in common."""
    d1 = _orient(cx, cy, dx, dy, ax, ay)
    d2 = _orient(cx, cy, dx, dy, bx, by)
    d3 = _orient(ax, ay, bx, by, cx, cy)
    d4 = _orient(ax, ay, bx, by, dx, dy)
    if ((d1 > 0.0 and d2 < 0.0) or (d1 < 0.0 and d2 > 0.0)) and ((d3 > 0.0 and d4 < 0.0) or (d3 < 0.0 and d4 > 0.0)):
        return True
    # Collinear touching: an end of one segment on the other.
    if d1 == 0.0 and min(cx, dx) <= ax <= max(cx, dx) and min(cy, dy) <= ay <= max(cy, dy):
        return True
    if d2 == 0.0 and min(cx, dx) <= bx <= max(cx, dx) and min(cy, dy) <= by <= max(cy, dy):
        return True
    if d3 == 0.0 and min(ax, bx) <= cx <= max(ax, bx) and min(ay, by) <= cy <= max(ay, by):
        return True
    if d4 == 0.0 and min(ax, bx) <= dx <= max(ax, bx) and min(ay, by) <= dy <= max(ay, by):
        return True
    return False


@jit_inline
def _inside_convex(outline, count, x, y):
    """Whether ``(x, y)`` lies in the convex polygon ``outline[:count]`` (either
    orientation; on the boundary counts). A polygon of fewer than three
    distinct corners (a segment or a point) contains nothing here: the edge
    tests find what touches it."""
    positive = False
    negative = False
    for k in range(count):
        m = k + 1 if k + 1 < count else 0
        side = _orient(outline[k, 0], outline[k, 1], outline[m, 0], outline[m, 1], x, y)
        if side > 0.0:
            positive = True
        elif side < 0.0:
            negative = True
    return positive != negative


@jit_inline
def _face_test(vertices, faces, f, matrix, polygon, box, window, clip, other, outline, dist):
    """Whether face ``f`` meets (``window`` False) or lies within (True) the lasso.

    ``matrix (4, 4)``: the face's space to sign-normalised clip space;
    ``polygon (n, 2)``: the lasso in NDC; ``box (4,)``: its bounds
    ``xmin, ymin, xmax, ymax``; ``clip``, ``other (6, 4)``, ``outline (6, 2)``
    and ``dist (6,)`` are scratch.
    """
    for corner in range(3):
        v = faces[f, corner]
        x = vertices[v, 0]
        y = vertices[v, 1]
        z = vertices[v, 2]
        for r in range(4):
            clip[corner, r] = matrix[r, 0] * x + matrix[r, 1] * y + matrix[r, 2] * z + matrix[r, 3]
    count = 3
    # Near (z + w >= 0), then far (w - z >= 0): Sutherland-Hodgman in clip space.
    for plane in range(2):
        sign = 1.0 if plane == 0 else -1.0
        outside = False
        for j in range(count):
            dist[j] = sign * clip[j, 2] + clip[j, 3]
            if dist[j] < 0.0:
                outside = True
        if not outside:
            continue
        if window:
            return False
        kept = clip_polygon(clip, count, dist, other)
        if kept == 0:
            return False
        clip, other = other, clip
        count = kept
    xmin = np.inf
    xmax = -np.inf
    ymin = np.inf
    ymax = -np.inf
    for j in range(count):
        x = clip[j, 0] / clip[j, 3]
        y = clip[j, 1] / clip[j, 3]
        outline[j, 0] = x
        outline[j, 1] = y
        xmin = min(xmin, x)
        xmax = max(xmax, x)
        ymin = min(ymin, y)
        ymax = max(ymax, y)
    if xmax < box[0] or xmin > box[2] or ymax < box[1] or ymin > box[3]:
        return False
    if window:
        for j in range(count):
            if not _inside(polygon, outline[j, 0], outline[j, 1]):
                return False
    else:
        for j in range(count):
            if _inside(polygon, outline[j, 0], outline[j, 1]):
                return True
        if _inside_convex(outline, count, polygon[0, 0], polygon[0, 1]):
            return True
    # The edges: for a crossing, any edge pair that meets is a point in
    # common; for a window, one means the outline leaves the lasso.
    n = polygon.shape[0]
    previous = n - 1
    for i in range(n):
        px = polygon[previous, 0]
        py = polygon[previous, 1]
        qx = polygon[i, 0]
        qy = polygon[i, 1]
        previous = i
        if max(px, qx) < xmin or min(px, qx) > xmax or max(py, qy) < ymin or min(py, qy) > ymax:
            continue
        for k in range(count):
            m = k + 1 if k + 1 < count else 0
            if _segments_meet(px, py, qx, qy, outline[k, 0], outline[k, 1], outline[m, 0], outline[m, 1]):
                return not window
    return window


@jit
def faces_in_lasso_serial(vertices, faces, matrix, polygon, box, window, out):
    """:func:`_face_test` of every face into ``out (F,) bool``.

    ``vertices (V, 3)`` float64, ``faces (F, 3)`` int64 (valid indices).
    """
    clip = np.empty((_CLIPPED, 4))
    other = np.empty((_CLIPPED, 4))
    outline = np.empty((_CLIPPED, 2))
    dist = np.empty(_CLIPPED)
    for f in range(faces.shape[0]):
        out[f] = _face_test(vertices, faces, f, matrix, polygon, box, window, clip, other, outline, dist)


@jit_parallel
def faces_in_lasso_parallel(vertices, faces, matrix, polygon, box, window, out):
    """:func:`faces_in_lasso_serial` over blocks of ``BLOCK`` faces, scratch per block."""
    n = faces.shape[0]
    for block in prange((n + BLOCK - 1) // BLOCK):
        clip = np.empty((_CLIPPED, 4))
        other = np.empty((_CLIPPED, 4))
        outline = np.empty((_CLIPPED, 2))
        dist = np.empty(_CLIPPED)
        for f in range(block * BLOCK, min(n, (block + 1) * BLOCK)):
            out[f] = _face_test(vertices, faces, f, matrix, polygon, box, window, clip, other, outline, dist)


@jit
def _polygon_pixels(polygon, width, height, stride, crossings, out):
    """Pixels ``[x, y]`` whose centres lie inside ``polygon (n, 2)`` (pixels), on
    the grid of every ``stride``-th column and row, into ``out``; returns how
    many. ``crossings (n,)`` is scratch.

    Row by row: the outline's crossings of the row's centre line, sorted,
    bound the runs inside (an odd number of crossings to the right of a point
    is a span ``[x_2k, x_2k+1)``), with PNPOLY's crossing rule and formula,
    so a pixel is listed exactly when :func:`_inside` takes its centre.
    """
    n = polygon.shape[0]
    ymin = polygon[0, 1]
    ymax = polygon[0, 1]
    for i in range(n):
        ymin = min(ymin, polygon[i, 1])
        ymax = max(ymax, polygon[i, 1])
    first = max(0, int(math.floor(ymin - 0.5)))
    first += (stride - first % stride) % stride
    found = 0
    for row in range(first, height, stride):
        y = row + 0.5
        if y > ymax:
            break
        m = 0
        j = n - 1
        for i in range(n):
            crosses, at = _crossing(polygon, i, j, y)
            if crosses:
                crossings[m] = at
                m += 1
            j = i
        crossings[:m].sort()
        for k in range(0, m - 1, 2):
            # Columns c with x_2k <= c + 0.5 < x_2k+1, on the stride's grid.
            low = max(0, int(math.ceil(crossings[k] - 0.5)))
            low += (stride - low % stride) % stride
            for column in range(low, width, stride):
                if not column + 0.5 < crossings[k + 1]:
                    break
                out[found, 0] = column
                out[found, 1] = row
                found += 1
    return found


# ----------------------------------------------------------------- wrappers


def check_polygon(polygon) -> np.ndarray:
    """Validate a lasso of pixel coordinates; returns it as ``(n, 2)`` float64.

    A last point equal to the first (an explicitly closed outline) is
    dropped. Raises ValueError, in words a client can act on, for fewer than
    three points, coordinates that are not finite or beyond ``+-MAX_PIXEL``,
    more than ``MAX_POINTS`` points, and an outline that encloses no area.
    """
    try:
        array = np.asarray(polygon, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("polygon must be a list of [x, y] pixel coordinates") from None
    if array.ndim != 2 or array.shape[1] != 2:
        raise ValueError(f"polygon must be a list of [x, y] pixel coordinates (shape (n, 2)), got shape "
                         f"{array.shape}")
    if not np.isfinite(array).all():
        row = int(np.flatnonzero(~np.isfinite(array).all(axis=1))[0])
        raise ValueError(f"polygon[{row}] is not a finite point: {array[row].tolist()}")
    if array.size and np.abs(array).max() > MAX_PIXEL:
        raise ValueError(f"polygon points must be pixel coordinates within +-{MAX_PIXEL:g}")
    if array.shape[0] > 1 and np.array_equal(array[0], array[-1]):
        array = array[:-1]
    if array.shape[0] < 3:
        raise ValueError(f"polygon needs at least 3 distinct points to enclose anything, got {array.shape[0]}")
    if array.shape[0] > MAX_POINTS:
        raise ValueError(f"polygon has {array.shape[0]} points; at most {MAX_POINTS}")
    # Enclosed area by the even-odd rule is zero exactly when every edge pair
    # cancels; the shoelace sum and the bounding box catch the evident cases
    # (all points on one line, or one point): those select nothing.
    low = array.min(axis=0)
    high = array.max(axis=0)
    x, y = array[:, 0] - low[0], array[:, 1] - low[1]
    shoelace = float(np.dot(x, np.roll(y, -1)) - np.dot(np.roll(x, -1), y))
    if not (high > low).all() or shoelace == 0.0:
        raise ValueError("polygon encloses no area: its points lie on one line")
    return np.ascontiguousarray(array)


class Lasso:
    """A camera's pixel polygon, ready to select with.

    Parameters
    ----------
    camera : bvh.camera.Camera
    polygon : (n, 2) array_like
        Pixel coordinates of the outline, in order (see :func:`check_polygon`);
        may reach outside the image.

    Attributes
    ----------
    camera : Camera
    polygon : (n, 2) float64
        The outline in pixels, as validated.
    planes : (P, 4) float64
        The frustum of the outline's bounding rectangle
        (:meth:`Camera.frustum`): what lies outside it lies outside the lasso.
    ndc : (n, 2) float64
        The outline in normalised device coordinates.
    """

    def __init__(self, camera: Camera, polygon):
        self.camera = camera
        self.polygon = check_polygon(polygon)
        low = self.polygon.min(axis=0)
        high = self.polygon.max(axis=0)
        self.planes = camera.frustum([low[0], low[1], high[0], high[1]])
        x = 2.0 * self.polygon[:, 0] / camera.width - 1.0
        y = 1.0 - 2.0 * self.polygon[:, 1] / camera.height
        self.ndc = np.ascontiguousarray(np.stack([x, y], axis=1))
        self._box = np.array([x.min(), y.min(), x.max(), y.max()])
        self._clip = camera.clip_matrix

    def faces(self, vertices, faces, transform=None, window=False) -> np.ndarray:
        """Which faces meet (or, with ``window``, lie within) the lasso's region.

        Parameters
        ----------
        vertices : (V, 3) float
            In the faces' own space, finite.
        faces : (F, 3) int
            Valid vertex indices.
        transform : (4, 4) float, optional
            That space to the world (an object's transform); default identity.
        window : bool

        Returns
        -------
        (F,) bool
        """
        vertices = np.ascontiguousarray(vertices, dtype=np.float64)
        faces = np.ascontiguousarray(faces, dtype=np.int64)
        matrix = self._clip if transform is None else self._clip @ np.asarray(transform, np.float64)
        matrix = np.ascontiguousarray(matrix)
        out = np.empty(faces.shape[0], np.bool_)
        kernel = faces_in_lasso_parallel if faces.shape[0] > BLOCK else faces_in_lasso_serial
        kernel(vertices, faces, matrix, self.ndc, self._box, bool(window), out)
        return out

    def near_point(self) -> np.ndarray:
        """``(3,)`` world point on the near plane under the outline's first
        point: inside every solid that holds the whole region."""
        x, y = self.ndc[0]
        homogeneous = np.linalg.solve(self._clip, np.array([x, y, -1.0, 1.0]))
        return homogeneous[:3] / homogeneous[3]

    def pixels(self, stride: int = 1) -> np.ndarray:
        """The pixels of the camera's image whose centres lie inside the outline.

        Parameters
        ----------
        stride : int
            Only every ``stride``-th column and row, counted from the image's
            top left pixel (columns and rows that are multiples of ``stride``).

        Returns
        -------
        (M, 2) int64
            ``[column, row]``, row by row, each row left to right.
        """
        return pixels_in_polygon(self.polygon, self.camera.width, self.camera.height, stride)


def pixels_in_polygon(polygon, width: int, height: int, stride: int = 1) -> np.ndarray:
    """Pixels of a ``width`` x ``height`` image whose centres lie inside
    ``polygon`` (even-odd rule, as the lasso's selection), every ``stride``-th
    column and row; ``(M, 2)`` int64 ``[column, row]`` in row-major order."""
    polygon = np.ascontiguousarray(polygon, dtype=np.float64)
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < 1:
        raise ValueError(f"stride must be an integer >= 1, got {stride!r}")
    low = np.floor(polygon.min(axis=0))
    high = np.ceil(polygon.max(axis=0))
    columns = int(min(width, max(0.0, high[0] - low[0] + 1)) + stride - 1) // stride + 1
    rows = int(min(height, max(0.0, high[1] - low[1] + 1)) + stride - 1) // stride + 1
    out = np.empty((columns * rows, 2), np.int64)
    found = _polygon_pixels(polygon, np.int64(width), np.int64(height), np.int64(stride),
                            np.empty(polygon.shape[0]), out)
    return out[:found].copy()


def rect_pixel_ranges(rect, width: int, height: int, stride: int = 1) -> tuple[range, range]:
    """The columns and rows of a ``width`` x ``height`` image whose centres lie
    in the rectangle ``[x0, y0, x1, y1]`` (corners in any order, edges
    included), every ``stride``-th counted from the top left pixel."""
    left, right = sorted(float(value) for value in rect[0::2])
    top, bottom = sorted(float(value) for value in rect[1::2])

    def span(low, high, size):
        first = max(0, math.ceil(low - 0.5))
        first += (stride - first % stride) % stride
        last = min(size - 1, math.floor(high - 0.5))
        return range(first, last + 1, stride) if last >= first else range(0)

    return span(left, right, width), span(top, bottom, height)


def rect_pixels(rect, width: int, height: int, stride: int = 1) -> np.ndarray:
    """:func:`rect_pixel_ranges` as ``(M, 2)`` int64 ``[column, row]``, row-major."""
    columns, rows = rect_pixel_ranges(rect, width, height, stride)
    grid_rows, grid_columns = np.meshgrid(np.array(rows, np.int64), np.array(columns, np.int64), indexing="ij")
    return np.stack([grid_columns.ravel(), grid_rows.ravel()], axis=1)


__all__ = ["BLOCK", "Lasso", "MAX_POINTS", "check_polygon", "pixels_in_polygon", "rect_pixel_ranges", "rect_pixels"]
