"""Checks at the boundary of the library: every refusal is a ValueError that
says what is wrong, before any kernel sees the data."""

import math

import numpy as np

from ._jit import jit
from .builders.triangles import used_bounds

#: Directions shorter than this are refused as too short to trace: their
#: slab distances would leave the range the traversal's safe reciprocal keeps
#: finite, and the parametric ``t`` of a hit (distance / length) the range of
#: the kernels' finite sentinel ``FAR``.
MIN_DIRECTION_LENGTH = 1.0e-150

#: Ray origins farther than this from the world origin are refused: slab
#: distances multiply them by reciprocal directions up to 1e200.
MAX_ORIGIN = 1.0e30

#: Meshes whose coordinates span more than this cannot be held in float32.
MAX_MESH_EXTENT = 1.0e37


def real_array(name: str, value) -> np.ndarray:
    """``value`` as a numpy array of real numbers (not bool, strings, objects, complex)."""
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{name} must be an array of numbers: {error}") from None
    # Kind "b" (bool) is not in "iuf": no separate test for it.
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be an array of real numbers, got dtype {array.dtype}")
    return array


def _first_bad_row(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def as_vectors(name: str, value) -> np.ndarray:
    """``value`` as a C-contiguous ``(N, 3)`` float64 array of finite numbers.

    A single vector of shape ``(3,)`` becomes ``(1, 3)``.
    """
    array = real_array(name, value)
    if array.ndim == 1 and array.shape[0] == 3:
        array = array[None, :]
    if array.ndim != 2 or array.shape[1] != 3:
        raise ValueError(f"{name} must have shape (N, 3) or (3,), got {array.shape}")
    array = np.ascontiguousarray(array, dtype=np.float64)
    finite = np.isfinite(array).all(axis=1)
    if not finite.all():
        raise ValueError(f"{name} contain NaN or infinite values (first at row {_first_bad_row(~finite)})")
    return array


@jit
def _first_bad_ray(origins, directions, min_length, max_origin):
    """``(kind, row)`` of the first bad ray: kind 0 none, 1 non-finite origin,
    2 non-finite direction, 3 direction shorter than ``min_length``, 4 origin
    coordinate beyond ``max_origin``.

    One pass in a kernel: numpy's reductions along the short axis of an
    ``(N, 3)`` array cost more than tracing the rays.
    """
    for i in range(origins.shape[0]):
        for c in range(3):
            if not math.isfinite(origins[i, c]):
                return 1, i
            if abs(origins[i, c]) > max_origin:
                return 4, i
        for c in range(3):
            if not math.isfinite(directions[i, c]):
                return 2, i
        # The length is at least the largest component; only then is the
        # (slow) hypot needed, not a sum of squares, which underflows to 0.
        largest = max(abs(directions[i, 0]), abs(directions[i, 1]), abs(directions[i, 2]))
        if largest < min_length and (
                math.hypot(math.hypot(directions[i, 0], directions[i, 1]), directions[i, 2]) < min_length):
            return 3, i
    return 0, -1


def _as_ray_array(name: str, value) -> np.ndarray:
    array = real_array(name, value)
    if array.ndim == 1 and array.shape[0] == 3:
        array = array[None, :]
    if array.ndim != 2 or array.shape[1] != 3:
        raise ValueError(f"{name} must have shape (N, 3) or (3,), got {array.shape}")
    return np.ascontiguousarray(array, dtype=np.float64)


def _ray_batch(origins, directions):
    """Both arrays as ``(N, 3)`` float64 of as many rows, and the first bad
    ray: ``(origins, directions, kind, row)`` (see ``_first_bad_ray``)."""
    origins = _as_ray_array("origins", origins)
    directions = _as_ray_array("directions", directions)
    if origins.shape[0] != directions.shape[0]:
        raise ValueError(
            f"origins and directions hold different numbers of rays: {origins.shape[0]} and {directions.shape[0]}"
        )
    kind, row = _first_bad_ray(origins, directions, MIN_DIRECTION_LENGTH, MAX_ORIGIN)
    return origins, directions, kind, row


def check_rays(origins, directions) -> tuple[np.ndarray, np.ndarray]:
    """Validate a batch of rays; returns ``(origins, directions)`` as ``(N, 3)`` float64."""
    origins, directions, kind, row = _ray_batch(origins, directions)
    if kind == 1:
        raise ValueError(f"origins contain NaN or infinite values (first at row {row})")
    if kind == 2:
        raise ValueError(f"directions contain NaN or infinite values (first at row {row})")
    if kind == 3:
        length = math.hypot(math.hypot(directions[row, 0], directions[row, 1]), directions[row, 2])
        if length == 0.0:
            raise ValueError(f"directions must be non-zero: row {row} has length 0")
        raise ValueError(f"direction row {row} is too short to trace: length {length:.3g}, "
                         f"the shortest accepted is {MIN_DIRECTION_LENGTH:g}")
    if kind == 4:
        raise ValueError(f"origins must lie within {MAX_ORIGIN:g} of the world origin (row {row})")
    return origins, directions


def check_rays_allowing_zero(origins, directions) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """:func:`check_rays`, but a direction too short to trace (zero, or
    shorter than :data:`MIN_DIRECTION_LENGTH`) is not refused: such a ray
    goes nowhere, so it hits nothing, as trimesh and Embree answer.

    Returns
    -------
    origins, directions : (N, 3) float64
    traceable : (N,) bool or None
        Which rays have a direction long enough to trace; None when all do
        (the common case, which then costs no extra pass).
    """
    origins, directions, kind, row = _ray_batch(origins, directions)
    if kind == 0:
        return origins, directions, None
    # Some ray is bad: look again with short directions allowed (a minimum
    # length of 0 is never undercut), which reports any other fault.
    kind, row = _first_bad_ray(origins, directions, 0.0, MAX_ORIGIN)
    if kind == 1:
        raise ValueError(f"origins contain NaN or infinite values (first at row {row})")
    if kind == 2:
        raise ValueError(f"directions contain NaN or infinite values (first at row {row})")
    if kind == 4:
        raise ValueError(f"origins must lie within {MAX_ORIGIN:g} of the world origin (row {row})")
    length = np.hypot(np.hypot(directions[:, 0], directions[:, 1]), directions[:, 2])
    return origins, directions, length >= MIN_DIRECTION_LENGTH


def check_points(points) -> np.ndarray:
    """Query points as a C-contiguous ``(N, 3)`` float64 array: finite, and
    within ``MAX_ORIGIN`` of the world origin, as ray origins are."""
    array = as_vectors("points", points)
    far = np.abs(array).max(axis=1) > MAX_ORIGIN if array.shape[0] else np.zeros(0, bool)
    if far.any():
        raise ValueError(f"points must lie within {MAX_ORIGIN:g} of the world origin (row {_first_bad_row(far)})")
    return array


def check_max_distance(max_distance) -> float:
    """A search radius: a number ``>= 0``, inf for no limit."""
    try:
        value = float(max_distance)
    except (TypeError, ValueError):
        raise ValueError(f"max_distance must be a number, got {max_distance!r}") from None
    if not value >= 0.0:
        raise ValueError(f"max_distance must be a number >= 0 (inf for no limit), got {max_distance!r}")
    return value


def check_radius(radius, n: int) -> np.ndarray:
    """A sphere cast's radius: one number, or one per ray (``(N,)``), each
    finite and ``>= 0``; returns ``(N,)`` float64."""
    array = real_array("radius", radius)
    if array.ndim == 0:
        array = np.full(n, array, np.float64)
    elif array.shape != (n,):
        raise ValueError(f"radius must be one number or one per ray, shape ({n},), got shape {array.shape}")
    array = np.ascontiguousarray(array, dtype=np.float64)
    finite = np.isfinite(array)
    if not finite.all():
        row = _first_bad_row(~finite)
        raise ValueError(f"radius must be finite, got {float(array[row])!r} (row {row})")
    negative = array < 0.0
    if negative.any():
        row = _first_bad_row(negative)
        raise ValueError(f"radius must be >= 0, got {float(array[row])!r} (row {row})")
    return array


def check_window(tmin, tmax, allow_negative_tmin: bool = False) -> tuple[float, float]:
    """Validate the ray interval ``[tmin, tmax]``; ``tmax`` may be inf, and
    ``tmin`` negative where the query accepts hits behind the origin."""
    try:
        tmin = float(tmin)
        tmax = float(tmax)
    except (TypeError, ValueError):
        raise ValueError(f"tmin and tmax must be numbers, got {tmin!r} and {tmax!r}") from None
    if allow_negative_tmin:
        if not math.isfinite(tmin):
            raise ValueError(f"tmin must be a finite number, got {tmin!r}")
    elif not (math.isfinite(tmin) and tmin >= 0.0):
        raise ValueError(f"tmin must be a finite number >= 0, got {tmin!r}")
    if math.isnan(tmax) or tmax < tmin:
        raise ValueError(f"tmax must be a number >= tmin ({tmin!r}), got {tmax!r}")
    return tmin, tmax


def check_mesh(vertices, faces, allow_empty: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Validate a triangle mesh; returns ``(vertices (V, 3) float64, faces (F, 3) int64)``.

    An empty mesh (no vertices, or no faces) is refused unless ``allow_empty``.
    """
    vertices = real_array("vertices", vertices)
    if vertices.ndim == 1 and vertices.shape[0] == 0 and allow_empty:
        vertices = vertices.reshape(0, 3)
    if vertices.ndim != 2 or vertices.shape[1] != 3:
        raise ValueError(f"vertices must have shape (V, 3), got {vertices.shape}")
    if vertices.shape[0] == 0 and not allow_empty:
        raise ValueError("the mesh is empty: vertices has no rows")
    vertices = np.ascontiguousarray(vertices, dtype=np.float64)
    finite = np.isfinite(vertices).all(axis=1)
    if not finite.all():
        raise ValueError(f"vertices contain NaN or infinite values (first at row {_first_bad_row(~finite)})")

    faces = np.asarray(faces)
    if allow_empty and faces.shape in ((0,), (0, 3)):
        # An empty list has dtype float and shape (0,): no faces, whatever its type.
        faces = np.zeros((0, 3), np.int64)
    if faces.dtype == bool or faces.dtype.kind not in "iu":
        raise ValueError(f"faces must be an array of integers, got dtype {faces.dtype}")
    if faces.ndim != 2 or faces.shape[1] != 3:
        raise ValueError(f"faces must have shape (F, 3), got {faces.shape}")
    if faces.shape[0] == 0:
        if not allow_empty:
            raise ValueError("the mesh is empty: faces has no rows")
        return vertices, faces
    faces = np.ascontiguousarray(faces, dtype=np.int64)
    negative = (faces < 0).any(axis=1)
    if negative.any():
        row = _first_bad_row(negative)
        raise ValueError(f"faces hold a negative vertex index {faces[row].min()} (face {row})")
    beyond = (faces >= vertices.shape[0]).any(axis=1)
    if beyond.any():
        row = _first_bad_row(beyond)
        raise ValueError(
            f"faces refer to vertex {faces[row].max()} but there are only {vertices.shape[0]} vertices (face {row})"
        )
    lo, hi = used_bounds(vertices, faces)
    extent = float((hi - lo).max())
    if extent > MAX_MESH_EXTENT:
        raise ValueError(f"vertex coordinates span {extent:g}, more than float32 can hold ({MAX_MESH_EXTENT:g})")
    return vertices, faces
