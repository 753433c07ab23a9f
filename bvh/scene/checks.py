"""The scene's argument checks: transforms, names, masks, ids, alpha options,
line and point tolerances, annotations.

Each takes what a caller passed and returns it in the form the scene keeps
(float64 matrices, plain ints and bools), or raises ``ValueError`` (or
:class:`UnknownIdError`) in words that name the argument. The common case
of the per-pick checks (plain numbers) is tested first without numpy, whose
per-call cost was most of a one-ray pick.
"""

import json

import numpy as np

from ..validation import real_array

#: The query mask that enables every object.
ALL_BITS = 0xFFFFFFFF

#: Transforms whose linear part is closer than this (relative condition
#: number) to singular are refused: their inverse would be mostly rounding.
MAX_CONDITION = 1.0e12

#: Largest ``annotations`` a save takes, as compact JSON: they ride in the
#: manifest, which every open reads and parses whole.
MAX_ANNOTATION_BYTES = 65536


class UnknownIdError(LookupError):
    """An object or mesh id that is not (or no longer) in the scene."""


def is_index(value, count: int) -> bool:
    """Whether ``value`` is an integer (not a bool) in ``[0, count)``."""
    return not isinstance(value, bool) and isinstance(value, (int, np.integer)) and 0 <= value < count


def check_transform(transform) -> np.ndarray:
    """A ``(4, 4)`` float64 copy of an affine, invertible, finite
    object-to-world ``transform`` (identity for None), its last row made
    exactly ``0 0 0 1``."""
    if transform is None:
        return np.eye(4)
    matrix = real_array("transform", transform).astype(np.float64)
    if matrix.shape != (4, 4):
        raise ValueError(f"transform must be a 4x4 matrix, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("transform contains NaN or infinite values")
    if np.abs(matrix[3] - (0.0, 0.0, 0.0, 1.0)).max() > 1e-12:
        raise ValueError(f"transform must be affine: its last row must be [0, 0, 0, 1], got {matrix[3].tolist()}")
    matrix[3] = (0.0, 0.0, 0.0, 1.0)
    linear = matrix[:3, :3]
    singular = np.linalg.svd(linear, compute_uv=False)
    if not singular[-1] > singular[0] / MAX_CONDITION:
        raise ValueError(f"transform is not invertible: its 3x3 part is singular "
                         f"(singular values {', '.join(f'{s:.3g}' for s in singular)})")
    return matrix


def check_transform_batch(object_ids, transforms) -> tuple[np.ndarray, np.ndarray]:
    """``(ids (K,) int64, matrices (K, 4, 4) float64)`` of
    ``Scene.set_transforms``' arguments, their shapes and types checked, the
    matrices a copy (``(K, 3, 4)`` rows completed by ``0 0 0 1``); their
    values are checked by :func:`matrix_problems`."""
    try:
        ids = np.asarray(object_ids)
    except (TypeError, ValueError) as error:
        raise ValueError(f"object_ids must be a list of integer object ids: {error}") from None
    if ids.ndim != 1 or (ids.size and (ids.dtype == bool or ids.dtype.kind not in "iu")):
        raise ValueError(f"object_ids must be a 1-D list of integer object ids, got shape {ids.shape} "
                         f"of {ids.dtype}")
    count = ids.shape[0]
    matrices = real_array("transforms", transforms).astype(np.float64)
    if count == 0 and matrices.size == 0:
        return np.zeros(0, np.int64), np.zeros((0, 4, 4))
    if matrices.ndim != 3 or matrices.shape[1:] not in ((4, 4), (3, 4)) or matrices.shape[0] != count:
        raise ValueError(f"transforms must have shape ({count}, 4, 4) or ({count}, 3, 4), one matrix per "
                         f"object id, got {matrices.shape}")
    if matrices.shape[1] == 3:
        matrices = np.concatenate([matrices, np.broadcast_to([0.0, 0.0, 0.0, 1.0], (count, 1, 4))], axis=1)
    if ids.dtype.kind == "u":
        # Beyond int64 is no object either; -1 says so without wrapping around.
        ids = np.where(ids > np.iinfo(np.int64).max, -1, ids.astype(np.int64, casting="unsafe"))
    return ids.astype(np.int64), matrices


class EntryError(ValueError):
    """A refused entry of a batch: ``"transforms[3]: <reason>"``.

    Attributes
    ----------
    index : int
        The entry.
    reason : str
        What is wrong with it, without the entry's name.
    """

    def __init__(self, batch: str, index: int, reason: str):
        super().__init__(f"{batch}[{index}]: {reason}")
        self.index = index
        self.reason = reason


def check_instances(mesh_ids, transforms, names) -> tuple[np.ndarray, np.ndarray, list]:
    """``(meshes (K,) int64, matrices (K, 4, 4) float64 copy, names)`` of
    ``Scene.add_instances``' arguments, their shapes and types checked (the
    matrices' values are checked by :func:`matrix_problems`)."""
    meshes = np.asarray(mesh_ids)
    if meshes.ndim != 1 or (meshes.size and (meshes.dtype == bool or meshes.dtype.kind not in "iu")):
        raise ValueError(f"mesh_ids must be a 1-D list of integer mesh ids, got shape {meshes.shape} of {meshes.dtype}")
    count = meshes.shape[0]
    matrices = real_array("transforms", transforms).astype(np.float64)
    if count == 0 and matrices.size == 0:
        matrices = np.zeros((0, 4, 4))
    if matrices.shape != (count, 4, 4):
        raise ValueError(f"transforms must have shape ({count}, 4, 4), one matrix per mesh id, got {matrices.shape}")
    names = [None] * count if names is None else list(names)
    if len(names) != count:
        raise ValueError(f"names must hold one name per mesh id ({count}), got {len(names)}")
    for index, name in enumerate(names):
        if name is not None and not isinstance(name, str):
            raise EntryError("names", index, f"name must be a string or None, got {type(name).__name__}")
    return meshes.astype(np.int64), matrices, names


def matrix_problems(matrices: np.ndarray) -> np.ndarray:
    """(K,) bool: which of ``matrices (K, 4, 4)`` :func:`check_transform`
    refuses (NaN or infinity, last row not ``0 0 0 1``, singular or
    ill-conditioned), by the same tests, vectorised."""
    finite = np.isfinite(matrices).all(axis=(1, 2))
    safe = np.where(finite[:, None, None], matrices, np.eye(4))
    not_affine = np.abs(safe[:, 3] - (0.0, 0.0, 0.0, 1.0)).max(axis=1) > 1e-12
    singular = np.linalg.svd(safe[:, :3, :3], compute_uv=False) if safe.shape[0] else np.ones((0, 3))
    ill = ~(singular[:, -1] > singular[:, 0] / MAX_CONDITION)
    return ~finite | not_affine | ill


def check_mask(mask) -> int:
    if isinstance(mask, bool) or not isinstance(mask, (int, np.integer)) or not 0 <= int(mask) <= ALL_BITS:
        raise ValueError(f"mask must be an integer in [0, 0xFFFFFFFF], got {mask!r}")
    return int(mask)


def check_name(name) -> str | None:
    if name is not None and not isinstance(name, str):
        raise ValueError(f"name must be a string or None, got {type(name).__name__}")
    return name


def check_pickable(pickable) -> bool:
    if not isinstance(pickable, (bool, np.bool_)):
        raise ValueError(f"pickable must be true or false, got {pickable!r}")
    return bool(pickable)


def check_query_ids(kind: np.ndarray, removed: int, name: str, ids) -> np.ndarray:
    """(K,) int64: a query's ``objects`` or ``exclude`` list (``name``), each
    a live object of the object kinds ``kind (O,)`` (``removed`` marks a
    removed one)."""
    try:
        array = np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids)
    except TypeError:
        raise ValueError(f"{name} must be a list of object ids, got {ids!r}") from None
    if array.size == 0:
        return np.zeros(0, np.int64)
    if array.dtype == bool or array.dtype.kind not in "iu" or array.ndim != 1:
        raise ValueError(f"{name} must be a list of integer object ids, got {ids!r}")
    bad = (array < 0) | (array >= kind.shape[0])
    bad[~bad] = kind[array[~bad]] == removed
    if bad.any():
        raise UnknownIdError(f"no object {int(array[bad][0])} in this scene")
    return array.astype(np.int64)


def check_alpha_options(alpha_test, alpha_cutoff) -> tuple[bool, float]:
    """``(alpha_test, alpha_cutoff)`` of a query, validated."""
    if type(alpha_test) is bool and type(alpha_cutoff) is float and 0.0 <= alpha_cutoff <= 1.0:
        # The common case, checked first: a click's pick should not pay for the rest.
        return alpha_test, alpha_cutoff
    if not isinstance(alpha_test, (bool, np.bool_)):
        raise ValueError(f"alpha_test must be True or False, got {alpha_test!r}")
    if isinstance(alpha_cutoff, bool) or not isinstance(alpha_cutoff, (int, float, np.integer, np.floating)) \
            or not 0.0 <= float(alpha_cutoff) <= 1.0:
        raise ValueError(f"alpha_cutoff must be a number in [0, 1], got {alpha_cutoff!r}")
    return bool(alpha_test), float(alpha_cutoff)


def check_tolerances(n: int, line_tolerance, line_slope, point_tolerance, point_slope) -> np.ndarray | tuple:
    """Each ray's line tolerance, line slope, point tolerance and point
    slope, each given as one number or one per ray, finite and ``>= 0``; a
    slope below 1 (a cone of half angle under 45 degrees). Returns the four
    numbers as a tuple when each is one number (:func:`tolerance_rows` makes
    the rows only if a pick needs them), else an (N, 4) float64 array."""
    named = (("line_tolerance", line_tolerance), ("line_slope", line_slope),
             ("point_tolerance", point_tolerance), ("point_slope", point_slope))
    if all(type(value) in (float, int) and 0.0 <= value < float("inf") and (value < 1.0 or not name.endswith("slope"))
           for name, value in named):
        # Plain valid numbers, as every pick without a per-ray tolerance has:
        # checked without numpy, whose per-call costs were most of a one-ray pick.
        return (line_tolerance, line_slope, point_tolerance, point_slope)
    columns = []
    for name, value in named:
        array = real_array(name, value).astype(np.float64)
        if array.ndim > 1 or (array.ndim == 1 and array.shape[0] != n):
            raise ValueError(f"{name} must be one number or one per ray ({n}), got shape {array.shape}")
        if not (np.isfinite(array).all() and (array >= 0.0).all()):
            raise ValueError(f"{name} must be finite and >= 0")
        if name.endswith("slope") and not (array < 1.0).all():
            raise ValueError(f"{name} must be below 1 (a cone of half angle under 45 degrees)")
        columns.append(np.broadcast_to(array, (n,)))
    return np.ascontiguousarray(np.stack(columns, axis=1)) if n else np.zeros((0, 4))


def tolerance_rows(n: int, tolerances) -> np.ndarray:
    """(N, 4) float64 rows of :func:`check_tolerances`' answer."""
    if type(tolerances) is not tuple:
        return tolerances
    rows = np.empty((n, 4))
    rows[:] = tolerances
    return rows


def check_selection_options(mode, containment="crossing") -> bool:
    """Whether a selection's ``containment`` is ``"window"``, ``mode`` and
    ``containment`` checked."""
    if mode not in ("objects", "triangles"):
        raise ValueError(f"mode must be 'objects' or 'triangles', got {mode!r}")
    if containment not in ("crossing", "window"):
        raise ValueError(f"containment must be 'crossing' or 'window', got {containment!r}")
    return containment == "window"


def check_select_planes(planes) -> np.ndarray:
    """(P, 4) float64 world half-spaces of ``Scene.select``, ``P >= 1``, finite."""
    if planes is None:
        raise ValueError("select needs planes, or a lasso")
    planes = real_array("planes", planes).astype(np.float64)
    if planes.ndim != 2 or planes.shape[1] != 4 or planes.shape[0] == 0:
        raise ValueError(f"planes must have shape (P, 4), P >= 1, got {planes.shape}")
    if not np.isfinite(planes).all():
        raise ValueError("planes contain NaN or infinite values")
    return planes


def check_annotations(annotations) -> dict:
    """A JSON copy of ``annotations`` (``{}`` for None), checked for ``Scene.save``."""
    if annotations is None:
        return {}
    if not isinstance(annotations, dict):
        raise ValueError(f"annotations must be a dict, got {type(annotations).__name__}")
    if not all(isinstance(key, str) for key in annotations):
        raise ValueError("annotations must have string keys")
    try:
        text = json.dumps(annotations, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as error:
        raise ValueError(f"annotations must be JSON data: {error}") from None
    if len(text.encode()) > MAX_ANNOTATION_BYTES:
        raise ValueError(f"annotations take {len(text.encode())} bytes as JSON, more than "
                         f"{MAX_ANNOTATION_BYTES}")
    return json.loads(text)
