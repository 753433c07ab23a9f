"""Which boxes and triangles lie in a convex region given by half-spaces.

A region is ``planes (P, 4)``: rows ``(nx, ny, nz, d)``, the point ``x``
inside when ``n . x + d >= 0`` for every row (points on a plane are inside).
:meth:`bvh.camera.Camera.frustum` makes the frustum of a marquee rectangle in
this form; no particular number of planes or order is assumed, and
``P = 0`` is all of space. The wrappers normalise each row to a unit normal
before any kernel sees it, so the kernels' sign tests mean the same for
planes given at any scale.

A selection tests object boxes first (:func:`boxes_in_frustum`: cheap and
conservative), then the triangles of the objects whose boxes cross the
region, in each object's own space (:func:`planes_to_object_space`), so that
no vertex is transformed. Two questions, as in CAD tools' crossing and window
selections: which triangles *meet* the region (:func:`triangles_in_frustum`,
a point in common is enough) and which lie *within* it
(:func:`triangles_within_frustum`, every point inside; the region is convex,
so a triangle is within exactly when its three vertices are).
"""

import numpy as np
from numba import prange

from .._jit import jit, jit_inline, jit_parallel
from ..primitives import _validate as check

#: Boxes, or triangles, per parallel task; fewer than this many in all run
#: on the calling thread, where waking the thread pool would cost more.
BLOCK = 2048

#: Objects per parallel task of :func:`objects_meet_frustum`.
OBJECT_BLOCK = 64

#: Box classes of :func:`boxes_in_frustum`.
OUTSIDE = 0
CROSSING = 1
INSIDE = 2


# -------------------------------------------------------------------- boxes


@jit_inline
def _box_class(bounds, i, planes):
    """``OUTSIDE``, ``CROSSING`` or ``INSIDE`` for box ``i`` (the p/n-vertex test)."""
    result = 2
    for p in range(planes.shape[0]):
        d = planes[p, 3]
        # The corner farthest along n (the "positive vertex") is the box's
        # most inside point for this plane: if it is outside, all of it is.
        far = d
        near = d
        for axis in range(3):
            n = planes[p, axis]
            lo = bounds[i, 0, axis]
            hi = bounds[i, 1, axis]
            far += n * (hi if n >= 0.0 else lo)
            near += n * (lo if n >= 0.0 else hi)
        if far < 0.0:
            return 0
        if near < 0.0:
            result = 1
    return result


@jit
def boxes_in_frustum_serial(bounds, planes, out):
    """Class of each box into ``out (N,) int8``; ``bounds (N, 2, 3)`` float64."""
    for i in range(bounds.shape[0]):
        out[i] = _box_class(bounds, i, planes)


@jit_parallel
def boxes_in_frustum_parallel(bounds, planes, out):
    """:func:`boxes_in_frustum_serial` over blocks of ``BLOCK`` boxes."""
    n = bounds.shape[0]
    for b in prange((n + BLOCK - 1) // BLOCK):
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            out[i] = _box_class(bounds, i, planes)


# ---------------------------------------------------------------- triangles


@jit_inline
def _clip_scratch(n_planes):
    """The scratch of :func:`triangle_inside` for ``n_planes`` planes:
    ``(cuts, poly, other, dist)``, allocated once per task, not per triangle."""
    return (np.empty(n_planes, np.bool_), np.empty((3 + n_planes, 3)), np.empty((3 + n_planes, 3)),
            np.empty(3 + n_planes))


@jit_inline
def clip_polygon(poly, count, dist, other):
    """One step of Sutherland-Hodgman clipping: the part of the convex
    polygon ``poly[:count]`` (rows of any width: points, or homogeneous
    points) where an affine function whose values at its vertices are
    ``dist[:count]`` is ``>= 0``, into ``other``. Returns its vertex count,
    or -1 when it does not fit in ``other``."""
    kept = 0
    previous = count - 1
    capacity = other.shape[0]
    for j in range(count):
        d_prev = dist[previous]
        d_this = dist[j]
        if (d_prev >= 0.0) != (d_this >= 0.0):
            if kept == capacity:
                return -1
            # The edge crosses the plane: one end is >= 0, the other < 0,
            # so d_prev - d_this is non-zero and s lies in [0, 1].
            s = d_prev / (d_prev - d_this)
            for k in range(poly.shape[1]):
                other[kept, k] = poly[previous, k] + s * (poly[j, k] - poly[previous, k])
            kept += 1
        if d_this >= 0.0:
            if kept == capacity:
                return -1
            for k in range(poly.shape[1]):
                other[kept, k] = poly[j, k]
            kept += 1
        previous = j
    return kept


@jit_inline
def triangle_inside(vertices, faces, f, planes, cuts, poly, other, dist):
    """Whether triangle ``f`` has a point inside every plane.

    ``cuts (P,) bool``, ``poly`` and ``other (3 + P, 3)`` and ``dist (3 + P,)``
    are scratch: clipping a triangle by ``P`` planes leaves a convex polygon
    of at most ``3 + P`` vertices (each plane adds at most one).
    """
    a = faces[f, 0]
    b = faces[f, 1]
    c = faces[f, 2]
    n_planes = planes.shape[0]
    all_inside = True
    for p in range(n_planes):
        nx = planes[p, 0]
        ny = planes[p, 1]
        nz = planes[p, 2]
        d = planes[p, 3]
        da = nx * vertices[a, 0] + ny * vertices[a, 1] + nz * vertices[a, 2] + d
        db = nx * vertices[b, 0] + ny * vertices[b, 1] + nz * vertices[b, 2] + d
        dc = nx * vertices[c, 0] + ny * vertices[c, 1] + nz * vertices[c, 2] + d
        if da < 0.0 and db < 0.0 and dc < 0.0:
            return False
        # A plane that all three vertices satisfy holds the whole triangle,
        # and so every polygon clipped from it: clipping needs only the others.
        cut = da < 0.0 or db < 0.0 or dc < 0.0
        cuts[p] = cut
        if cut:
            all_inside = False
    if all_inside:
        return True

    # Vertices outside different planes can still leave part of the triangle
    # inside all of them (a large triangle across the frustum): clip it
    # against each cutting plane in turn (Sutherland-Hodgman).
    for k in range(3):
        poly[0, k] = vertices[a, k]
        poly[1, k] = vertices[b, k]
        poly[2, k] = vertices[c, k]
    count = 3
    for p in range(n_planes):
        if not cuts[p]:
            continue
        nx = planes[p, 0]
        ny = planes[p, 1]
        nz = planes[p, 2]
        d = planes[p, 3]
        any_outside = False
        for j in range(count):
            dist[j] = nx * poly[j, 0] + ny * poly[j, 1] + nz * poly[j, 2] + d
            if dist[j] < 0.0:
                any_outside = True
        if not any_outside:
            continue
        kept = clip_polygon(poly, count, dist, other)
        if kept < 0:
            # A convex polygon gains at most one vertex per plane, but
            # rounding can leave a sliver clipped earlier slightly
            # non-convex, which a plane through it may cut more often.
            # Such a sliver lies within rounding of the planes: it counts
            # as inside, and the fixed buffers are never overrun.
            return True
        if kept == 0:
            return False
        poly, other = other, poly
        count = kept
    return True


@jit
def triangles_in_frustum_serial(vertices, faces, planes, out):
    """Exact test of every face into ``out (F,) bool``.

    ``vertices (V, 3)`` float64, ``faces (F, 3)`` int64 (valid indices),
    ``planes (P, 4)`` float64.
    """
    n_planes = planes.shape[0]
    cuts, poly, other, dist = _clip_scratch(n_planes)
    for f in range(faces.shape[0]):
        out[f] = triangle_inside(vertices, faces, f, planes, cuts, poly, other, dist)


@jit_parallel
def triangles_in_frustum_parallel(vertices, faces, planes, out):
    """:func:`triangles_in_frustum_serial` over blocks of ``BLOCK`` faces,
    each with its own scratch, allocated once per block."""
    n = faces.shape[0]
    n_planes = planes.shape[0]
    for block in prange((n + BLOCK - 1) // BLOCK):
        cuts, poly, other, dist = _clip_scratch(n_planes)
        for f in range(block * BLOCK, min(n, (block + 1) * BLOCK)):
            out[f] = triangle_inside(vertices, faces, f, planes, cuts, poly, other, dist)


@jit
def any_triangle_in_frustum_serial(vertices, faces, planes):
    """Whether any face has a point inside; stops at the first that does."""
    n_planes = planes.shape[0]
    cuts, poly, other, dist = _clip_scratch(n_planes)
    for f in range(faces.shape[0]):
        if triangle_inside(vertices, faces, f, planes, cuts, poly, other, dist):
            return True
    return False


@jit_parallel
def any_triangle_in_frustum_parallel(vertices, faces, planes, found):
    """Set ``found[0]`` when any face has a point inside.

    Blocks that start after another has found one skip their work; the flag
    is only ever set, so the unsynchronised read can only delay the skip.
    """
    n = faces.shape[0]
    n_planes = planes.shape[0]
    for block in prange((n + BLOCK - 1) // BLOCK):
        if found[0]:
            continue
        cuts, poly, other, dist = _clip_scratch(n_planes)
        for f in range(block * BLOCK, min(n, (block + 1) * BLOCK)):
            if triangle_inside(vertices, faces, f, planes, cuts, poly, other, dist):
                found[0] = True
                break


# ------------------------------------------------------- triangles within


@jit_inline
def _triangle_within(vertices, faces, f, planes):
    """Whether the three vertices of triangle ``f`` are inside every plane."""
    for p in range(planes.shape[0]):
        nx = planes[p, 0]
        ny = planes[p, 1]
        nz = planes[p, 2]
        d = planes[p, 3]
        for corner in range(3):
            v = faces[f, corner]
            if nx * vertices[v, 0] + ny * vertices[v, 1] + nz * vertices[v, 2] + d < 0.0:
                return False
    return True


@jit
def triangles_within_frustum_serial(vertices, faces, planes, out):
    """Whether each face lies within the region, into ``out (F,) bool``."""
    for f in range(faces.shape[0]):
        out[f] = _triangle_within(vertices, faces, f, planes)


@jit_parallel
def triangles_within_frustum_parallel(vertices, faces, planes, out):
    """:func:`triangles_within_frustum_serial` over blocks of ``BLOCK`` faces."""
    n = faces.shape[0]
    for block in prange((n + BLOCK - 1) // BLOCK):
        for f in range(block * BLOCK, min(n, (block + 1) * BLOCK)):
            out[f] = _triangle_within(vertices, faces, f, planes)


@jit
def all_triangles_within_frustum_serial(vertices, faces, planes):
    """Whether every face lies within the region; stops at the first that does not."""
    for f in range(faces.shape[0]):
        if not _triangle_within(vertices, faces, f, planes):
            return False
    return True


@jit_parallel
def all_triangles_within_frustum_parallel(vertices, faces, planes, outside):
    """Set ``outside[0]`` when some face is not within the region.

    As in :func:`any_triangle_in_frustum_parallel`, blocks that start after
    another has found one skip their work.
    """
    n = faces.shape[0]
    for block in prange((n + BLOCK - 1) // BLOCK):
        if outside[0]:
            continue
        for f in range(block * BLOCK, min(n, (block + 1) * BLOCK)):
            if not _triangle_within(vertices, faces, f, planes):
                outside[0] = True
                break


# ------------------------------------------------------- many objects


@jit_inline
def _object_meets(vertices, faces, planes, window, cuts, poly, other, dist):
    """Whether one mesh meets the region: every face within it (``window``)
    or some face with a point inside it; stops as soon as it knows."""
    for f in range(faces.shape[0]):
        if window:
            if not _triangle_within(vertices, faces, f, planes):
                return False
        elif triangle_inside(vertices, faces, f, planes, cuts, poly, other, dist):
            return True
    return window


@jit_parallel
def objects_meet_frustum(vertices, vertex_start, faces, face_start, meshes, planes, window, out):
    """For each object ``k`` of a selection, whether its mesh meets the
    region, into ``out (K,) bool``: ``meshes (K,)`` the object's mesh (rows
    ``vertex_start[m]:vertex_start[m + 1]`` of the packed ``vertices`` and
    ``face_start[m]:face_start[m + 1]`` of ``faces``, local indices) and
    ``planes (K, P, 4)`` the region in the object's space.

    One call for every object a selection has to look into, instead of one
    call (and its checks) per object: a rectangle over a city of small
    objects crosses thousands of boxes. Blocks of ``OBJECT_BLOCK`` objects,
    each with its own clipping scratch.
    """
    count = meshes.shape[0]
    n_planes = planes.shape[1]
    for block in prange((count + OBJECT_BLOCK - 1) // OBJECT_BLOCK):
        cuts, poly, other, dist = _clip_scratch(n_planes)
        for k in range(block * OBJECT_BLOCK, min(count, (block + 1) * OBJECT_BLOCK)):
            mesh = meshes[k]
            out[k] = _object_meets(vertices[vertex_start[mesh]:vertex_start[mesh + 1]],
                                   faces[face_start[mesh]:face_start[mesh + 1]], planes[k], window, cuts, poly,
                                   other, dist)


# ----------------------------------------------------------------- wrappers


def check_planes(planes) -> np.ndarray:
    """Validate half-spaces; returns them as ``(P, 4)`` float64 with unit normals.

    A single ``(4,)`` plane becomes ``(1, 4)``; ``(0, 4)`` (all of space) is
    accepted.
    """
    array = check.real_array("planes", planes)
    if array.ndim == 1 and array.shape[0] == 4:
        array = array[None, :]
    if array.ndim != 2 or array.shape[1] != 4:
        raise ValueError(f"planes must have shape (P, 4) or (4,), got {array.shape}")
    check.finite("planes", array)
    # hypot: squares of normals near 1e-160 and below would underflow to 0.
    lengths = np.hypot(np.hypot(array[:, 0], array[:, 1]), array[:, 2])
    zero = ~(lengths > 0.0)
    if zero.any():
        row = int(np.flatnonzero(zero)[0])
        raise ValueError(f"planes must have non-zero normals (nx, ny, nz): row {row} is {array[row].tolist()}")
    with np.errstate(over="ignore"):
        unit = array / lengths[:, None]
    if not np.isfinite(unit).all():
        row = int(np.flatnonzero(~np.isfinite(unit).all(axis=1))[0])
        raise ValueError(f"planes row {row} has a normal too short for its offset d: {array[row].tolist()}")
    return np.ascontiguousarray(unit)


def _bounds(bounds) -> np.ndarray:
    array = check.real_array("bounds", bounds)
    if array.shape == (2, 3):
        array = array[None]
    if array.ndim != 3 or array.shape[1:] != (2, 3):
        raise ValueError(f"bounds must have shape (N, 2, 3) or (2, 3) (min and max corners), got {array.shape}")
    check.finite("bounds", array.reshape(array.shape[0], 6))
    inverted = (array[:, 0] > array[:, 1]).any(axis=1)
    if inverted.any():
        row = int(np.flatnonzero(inverted)[0])
        raise ValueError(f"bounds must have min <= max on every axis (first violation at box {row})")
    return array


def _triangles(vertices, faces) -> tuple[np.ndarray, np.ndarray]:
    vertices = check.real_array("vertices", vertices)
    if vertices.ndim != 2 or vertices.shape[1] != 3:
        raise ValueError(f"vertices must have shape (V, 3), got {vertices.shape}")
    check.finite("vertices", vertices)
    faces = np.asarray(faces)
    if faces.dtype == bool or faces.dtype.kind not in "iu":
        raise ValueError(f"faces must be an array of integers, got dtype {faces.dtype}")
    if faces.ndim != 2 or faces.shape[1] != 3:
        raise ValueError(f"faces must have shape (F, 3), got {faces.shape}")
    if faces.size:
        low, high = int(faces.min()), int(faces.max())
        if low < 0:
            raise ValueError(f"faces hold a negative vertex index {low}")
        if high >= vertices.shape[0]:
            raise ValueError(f"faces refer to vertex {high} but there are only {vertices.shape[0]} vertices")
    return vertices, np.ascontiguousarray(faces, dtype=np.int64)


def boxes_in_frustum(bounds, planes) -> np.ndarray:
    """Classify axis-aligned boxes against a convex region.

    Parameters
    ----------
    bounds : (N, 2, 3) or (2, 3) array_like
        Each box's min and max corners, finite, ``min <= max``.
    planes : (P, 4) or (4,) array_like
        Inward half-spaces ``n . x + d >= 0`` (any non-zero normal length).

    Returns
    -------
    (N,) int8
        ``OUTSIDE`` (0): entirely outside some plane, so outside the region.
        ``INSIDE`` (2): entirely inside every plane, so inside the region.
        ``CROSSING`` (1): neither; the box may or may not meet the region.

    Notes
    -----
    The test looks at one plane at a time (the box's corner farthest along
    each normal). It is conservative: a box near an edge or corner of the
    region can be outside it while no single plane has it entirely outside,
    and is then ``CROSSING``. Never the other way: ``OUTSIDE`` and ``INSIDE``
    are certain. The exact answer comes from the triangles inside such boxes.
    """
    bounds = _bounds(bounds)
    planes = check_planes(planes)
    out = np.empty(bounds.shape[0], np.int8)
    kernel = boxes_in_frustum_serial if bounds.shape[0] <= BLOCK else boxes_in_frustum_parallel
    kernel(bounds, planes, out)
    return out


def _each_triangle(serial, parallel, vertices, faces, planes) -> np.ndarray:
    """A per-triangle test's answer ``(F,) bool``: the inputs checked, the
    serial kernel for up to ``BLOCK`` faces, else the parallel one."""
    vertices, faces = _triangles(vertices, faces)
    planes = check_planes(planes)
    out = np.empty(faces.shape[0], np.bool_)
    (serial if faces.shape[0] <= BLOCK else parallel)(vertices, faces, planes, out)
    return out


def _some_triangle(serial, parallel, vertices, faces, planes, stop_when=True) -> bool:
    """Whether some triangle's test gives ``stop_when``: the serial kernel
    answers that itself (it returns ``stop_when`` at the first such face),
    the parallel one raises a flag."""
    vertices, faces = _triangles(vertices, faces)
    planes = check_planes(planes)
    if faces.shape[0] <= BLOCK:
        return bool(serial(vertices, faces, planes)) == stop_when
    flag = np.zeros(1, np.bool_)
    parallel(vertices, faces, planes, flag)
    return bool(flag[0])


def triangles_in_frustum(vertices, faces, planes) -> np.ndarray:
    """Which triangles have a point inside a convex region (exact).

    Parameters
    ----------
    vertices : (V, 3) array_like
        Finite.
    faces : (F, 3) array_like of int
        Vertex indices; ``F = 0`` gives an empty answer.
    planes : (P, 4) or (4,) array_like
        Inward half-spaces ``n . x + d >= 0`` (any non-zero normal length).

    Returns
    -------
    (F,) bool
        True when the triangle and the region share a point: a triangle
        crossing the region with every vertex outside counts, as does one that
        only touches a plane (points on a plane are inside). Degenerate
        triangles (segments, points) are tested as what they are.

    Notes
    -----
    Each triangle is accepted at once when its three vertices are inside
    every plane and rejected when they are all outside one; any other is
    clipped against the planes that cut it (Sutherland-Hodgman) and kept when
    something remains. Exact but for the rounding of the clipped polygon's
    vertices, which matters only for a triangle that meets the region in a
    point or a sliver within about 1e-15 of the region's size.

    See Also
    --------
    triangles_within_frustum : triangles that lie entirely inside the region.
    """
    return _each_triangle(triangles_in_frustum_serial, triangles_in_frustum_parallel, vertices, faces, planes)


def any_triangle_in_frustum(vertices, faces, planes) -> bool:
    """Whether any triangle has a point inside a convex region (exact).

    The same test and arguments as :func:`triangles_in_frustum`, stopping at
    the first triangle inside: an object selection needs no more. ``False``
    for ``F = 0``.
    """
    return _some_triangle(any_triangle_in_frustum_serial, any_triangle_in_frustum_parallel, vertices, faces, planes)


def triangles_within_frustum(vertices, faces, planes) -> np.ndarray:
    """Which triangles lie entirely inside a convex region (exact).

    Parameters
    ----------
    vertices, faces, planes
        As for :func:`triangles_in_frustum`.

    Returns
    -------
    (F,) bool
        True when every point of the triangle is inside every plane (points
        on a plane are inside). The region is convex, so that is when its
        three vertices are: the test is three signed distances per plane,
        exact but for the rounding of each distance.

    See Also
    --------
    triangles_in_frustum : triangles that merely meet the region.
    """
    return _each_triangle(triangles_within_frustum_serial, triangles_within_frustum_parallel, vertices, faces, planes)


def all_triangles_within_frustum(vertices, faces, planes) -> bool:
    """Whether every triangle lies entirely inside a convex region (exact).

    The same test and arguments as :func:`triangles_within_frustum`, stopping
    at the first triangle that is not within: a window selection of an object
    needs no more. Only the vertices that faces use count. ``True`` for
    ``F = 0`` (nothing lies outside).
    """
    return not _some_triangle(all_triangles_within_frustum_serial, all_triangles_within_frustum_parallel, vertices,
                              faces, planes, stop_when=False)


def planes_to_object_space(planes, transform) -> np.ndarray:
    """Half-spaces in world space re-expressed in an object's own space.

    Parameters
    ----------
    planes : (P, 4) or (4,) array_like
        World half-spaces ``n . x + d >= 0``.
    transform : (4, 4) or (K, 4, 4) array_like
        Object to world, affine (last row ``0 0 0 1``) and invertible:
        ``world = A @ local + b``. Mirroring, shear and non-uniform scale are
        fine.

    Returns
    -------
    (P, 4) float64, or (K, P, 4) for K transforms
        The same half-spaces for local points: ``n . (A x + b) + d >= 0`` is
        ``(A^T n) . x + (n . b + d) >= 0``, renormalised to unit normals, so a
        local point is inside exactly when its world image is, and the rows
        are signed distances in local units.
    """
    planes = check_planes(planes)
    transforms = check.real_array("transform", transform)
    single = transforms.shape == (4, 4)
    if single:
        transforms = transforms[None]
    if transforms.ndim != 3 or transforms.shape[1:] != (4, 4):
        raise ValueError(f"transform must have shape (4, 4) or (K, 4, 4), got {transforms.shape}")
    if not np.isfinite(transforms).all():
        raise ValueError("transform contains NaN or infinite values")
    if transforms.shape[0] == 0:
        return np.empty((0, planes.shape[0], 4))
    if np.abs(transforms).max() > check.MAX_COORDINATE:
        raise ValueError(f"transform holds a value beyond +-{check.MAX_COORDINATE:g}")
    bottom = transforms[:, 3]
    not_affine = np.abs(bottom - np.array([0.0, 0.0, 0.0, 1.0])).max(axis=1) > 1.0e-12
    if not_affine.any():
        row = int(np.flatnonzero(not_affine)[0])
        raise ValueError(f"transform must be affine, its last row 0 0 0 1; got {bottom[row].tolist()}"
                         + ("" if single else f" (transform {row})"))
    # Relative to the size of A, so that a uniformly tiny scale still counts.
    scale = np.abs(transforms[:, :3, :3]).max(axis=(1, 2))
    singular = ~(np.abs(np.linalg.det(transforms[:, :3, :3])) > 1.0e-12 * scale ** 3)
    if singular.any():
        row = int(np.flatnonzero(singular)[0])
        raise ValueError("transform must be invertible (it flattens space)" + ("" if single else f" (transform {row})"))
    # Row vectors: the plane (n, d) applied to local homogeneous points.
    local = planes[None, :, :] @ transforms
    lengths = np.sqrt((local[:, :, :3] ** 2).sum(axis=2))
    local /= lengths[:, :, None]
    return local[0] if single else local


__all__ = [
    "BLOCK",
    "CROSSING",
    "INSIDE",
    "OUTSIDE",
    "all_triangles_within_frustum",
    "any_triangle_in_frustum",
    "boxes_in_frustum",
    "check_planes",
    "planes_to_object_space",
    "triangles_in_frustum",
    "triangles_within_frustum",
]
