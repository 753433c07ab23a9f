"""The scene's argument checks: transforms, names, masks, ids, alpha options,
line and point tolerances, annotations.

Each takes what a caller passed and returns it in the form the scene keeps
(float64 matrices, plain ints and bools), or raises ``ValueError`` (or
:class:`UnknownIdError`) in words that name the argument. The common case
of the per-pick checks (plain numbers) is tested first without numpy, whose
per-call cost was most of a one-ray pick.
"""

import json
from typing import NamedTuple

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
    ids = check_id_array("object_ids", object_ids)
    count = ids.shape[0]
    matrices = real_array("transforms", transforms).astype(np.float64)
    if count == 0 and matrices.size == 0:
        return np.zeros(0, np.int64), np.zeros((0, 4, 4))
    if matrices.ndim != 3 or matrices.shape[1:] not in ((4, 4), (3, 4)) or matrices.shape[0] != count:
        raise ValueError(f"transforms must have shape ({count}, 4, 4) or ({count}, 3, 4), one matrix per "
                         f"object id, got {matrices.shape}")
    if matrices.shape[1] == 3:
        matrices = np.concatenate([matrices, np.broadcast_to([0.0, 0.0, 0.0, 1.0], (count, 1, 4))], axis=1)
    return ids, matrices


def check_id_array(name: str, object_ids) -> np.ndarray:
    """(K,) int64: the object ids ``name`` of ``Scene.set_transforms`` or
    ``Scene.remove_many``, their shape and type checked (-1 for an unsigned
    id beyond int64, no object either); whether they are objects is the
    table's to say."""
    try:
        ids = np.asarray(object_ids)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be a list of integer object ids: {error}") from None
    if ids.ndim != 1 or (ids.size and (ids.dtype == bool or ids.dtype.kind not in "iu")):
        raise ValueError(f"{name} must be a 1-D list of integer object ids, got shape {ids.shape} "
                         f"of {ids.dtype}")
    if ids.dtype.kind == "u":
        # Beyond int64 is no object either; -1 says so without wrapping around.
        ids = np.where(ids > np.iinfo(np.int64).max, -1, ids.astype(np.int64, casting="unsafe"))
    return ids.astype(np.int64)


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


def matrix_problems(matrices: np.ndarray) -> np.ndarray:
    """(K,) bool: which of ``matrices (K, 4, 4)`` :func:`check_transform`
    refuses (NaN or infinity, last row not ``0 0 0 1``, singular or
    ill-conditioned), by the same tests, vectorised.

    The SVD runs only on the matrices :func:`clearly_invertible` leaves
    undecided (at a million matrices it took seconds; the bound, a few
    passes over the array)."""
    finite = np.isfinite(matrices).all(axis=(1, 2))
    safe = np.where(finite[:, None, None], matrices, np.eye(4)) if not finite.all() else matrices
    not_affine = np.abs(safe[:, 3] - (0.0, 0.0, 0.0, 1.0)).max(axis=1) > 1e-12
    undecided = np.flatnonzero(~clearly_invertible(safe[:, :3, :3]))
    ill = np.zeros(matrices.shape[0], bool)
    if undecided.size:
        singular = np.linalg.svd(safe[undecided, :3, :3], compute_uv=False)
        ill[undecided] = ~(singular[:, -1] > singular[:, 0] / MAX_CONDITION)
    return ~finite | not_affine | ill


def clearly_invertible(linear: np.ndarray) -> np.ndarray:
    """(K,) bool: whether the finite ``linear (K, 3, 3)`` parts pass
    :data:`MAX_CONDITION` by a bound that needs no SVD, vectorised.

    ``sigma_max <= |A|_F`` and ``sigma_1 sigma_2 sigma_3 = |det A|``, so
    ``sigma_max / sigma_min <= |A|_F^3 / |det A|``: rotations and scales meet
    it with a wide margin, and half the limit absorbs the rounding of the
    determinant (the test ``bvh.builders.placement`` makes of a move, in
    numpy). False leaves the matrix to the SVD, which decides.
    """
    a = linear
    frobenius = np.einsum("kij,kij->k", a, a)
    det = (a[:, 0, 0] * (a[:, 1, 1] * a[:, 2, 2] - a[:, 1, 2] * a[:, 2, 1])
           - a[:, 0, 1] * (a[:, 1, 0] * a[:, 2, 2] - a[:, 1, 2] * a[:, 2, 0])
           + a[:, 0, 2] * (a[:, 1, 0] * a[:, 2, 1] - a[:, 1, 1] * a[:, 2, 0]))
    return frobenius * np.sqrt(frobenius) < 0.5 * MAX_CONDITION * np.abs(det)


class InstanceArrays(NamedTuple):
    """``Scene.add_instances``' arguments, checked (:func:`check_instance_arrays`)."""

    #: (N,) int64, or one int for every object (in the scene's range or not: checked with its lock held).
    mesh_ids: "np.ndarray | int"
    #: (N, 4, 4) float64, finite, affine (last row exactly ``0 0 0 1``), invertible.
    transforms: np.ndarray
    #: N names (str or None), or None for no names.
    names: list | None
    #: (N,) uint32 and (N,) bool.
    masks: np.ndarray
    pickable: np.ndarray


def check_instance_arrays(mesh_ids, transforms, names=None, masks=None, pickable=None) -> InstanceArrays:
    """``Scene.add_instances``' arguments checked as :meth:`Scene.add_instance`
    checks one object's, vectorised; a refused entry is named by its index,
    ``"transforms[3]: transform contains NaN or infinite values"``.

    Raises
    ------
    ValueError
        On arrays of the wrong shape or type, or the first refused entry.
    """
    matrices = real_array("transforms", transforms).astype(np.float64)
    if matrices.ndim != 3 or matrices.shape[1:] not in ((4, 4), (3, 4)):
        raise ValueError(f"transforms must have shape (N, 4, 4) or (N, 3, 4), one matrix per object, "
                         f"got {matrices.shape}")
    count = matrices.shape[0]
    if matrices.shape[1] == 3:
        matrices = np.concatenate([matrices, np.broadcast_to([0.0, 0.0, 0.0, 1.0], (count, 1, 4))], axis=1)
    problems = matrix_problems(matrices)
    if problems.any():
        entry = int(np.argmax(problems))
        try:
            check_transform(matrices[entry])
        except ValueError as error:
            raise EntryError("transforms", entry, str(error)) from None
        raise EntryError("transforms", entry, "transform is not invertible: its 3x3 part is singular")
    matrices[:, 3] = (0.0, 0.0, 0.0, 1.0)
    return InstanceArrays(_mesh_ids(mesh_ids, count), matrices, _names(names, count),
                          _masks(masks, count), _pickable(pickable, count))


def check_mesh_range(mesh_ids, mesh_count: int) -> None:
    """Refuse ``InstanceArrays.mesh_ids`` naming a mesh not among the scene's ``mesh_count``."""
    if np.ndim(mesh_ids) == 0:
        if not 0 <= mesh_ids < mesh_count:
            raise UnknownIdError(f"no mesh {mesh_ids} in this scene")
        return
    outside = (mesh_ids < 0) | (mesh_ids >= mesh_count)
    if outside.any():
        entry = int(np.argmax(outside))
        raise UnknownIdError(f"mesh_ids[{entry}]: no mesh {int(mesh_ids[entry])} in this scene")


def _mesh_ids(mesh_ids, count: int):
    array = np.asarray(mesh_ids)
    if array.ndim == 0 and array.dtype != bool and array.dtype.kind in "iu":
        # One mesh for every object (unsigned beyond int64: no mesh either).
        return int(array) if array.dtype.kind == "i" or int(array) <= np.iinfo(np.int64).max else -1
    if array.ndim != 1 or array.shape[0] != count or (array.size and (array.dtype == bool
                                                                      or array.dtype.kind not in "iu")):
        raise ValueError(f"mesh_ids must be one integer mesh id or one per transform ({count}), got shape "
                         f"{array.shape} of {array.dtype}")
    if array.dtype.kind == "u":
        # Beyond int64 is no mesh either; -1 says so without wrapping around.
        return np.where(array > np.iinfo(np.int64).max, -1, array.astype(np.int64, casting="unsafe"))
    return array.astype(np.int64)


def _names(names, count: int) -> list | None:
    if names is None:
        return None
    if isinstance(names, str):
        raise ValueError(f"names must be a list of {count} names (str or None), got a string")
    names = names.tolist() if isinstance(names, np.ndarray) else list(names)
    if len(names) != count:
        raise ValueError(f"names must have one name per transform ({count}), got {len(names)}")
    # A name's type is checked one by one: the one per-object loop of the checks.
    for entry, name in enumerate(names):
        if name is not None and type(name) is not str:
            try:
                check_name(name)
            except ValueError as error:
                raise EntryError("names", entry, str(error)) from None
    return names


def _masks(masks, count: int) -> np.ndarray:
    if masks is None:
        return np.full(count, ALL_BITS, np.uint32)
    if np.ndim(masks) == 0:
        return np.full(count, check_mask(masks.item() if isinstance(masks, np.ndarray) else masks), np.uint32)
    array = np.asarray(masks)
    if array.ndim != 1 or array.shape[0] != count:
        raise ValueError(f"masks must be one mask or one per transform ({count}), got shape {array.shape}")
    bad = np.ones(count, bool) if array.dtype == bool or array.dtype.kind not in "iu" \
        else (array < 0) | (array > ALL_BITS)
    if bad.any():
        entry = int(np.argmax(bad))
        raise EntryError("masks", entry, f"mask must be an integer in [0, 0xFFFFFFFF], got {array[entry]!r}")
    return array.astype(np.uint32)


def _pickable(pickable, count: int) -> np.ndarray:
    if pickable is None:
        return np.ones(count, bool)
    if np.ndim(pickable) == 0:
        return np.full(count, check_pickable(pickable.item() if isinstance(pickable, np.ndarray) else pickable),
                       bool)
    array = np.asarray(pickable)
    if array.ndim != 1 or array.shape[0] != count:
        raise ValueError(f"pickable must be one flag or one per transform ({count}), got shape {array.shape}")
    if array.dtype != bool and count:
        raise ValueError(f"pickable[0]: pickable must be true or false, got {array[0]!r}")
    return array.astype(bool)


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
