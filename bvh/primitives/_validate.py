"""Checks at the boundary of ``bvh.primitives``.

Every refusal is a ``ValueError`` that names the argument and says what is
wrong, before any kernel sees the data. Accepted arrays come back as
C-contiguous float64, the only thing the kernels take.

Coordinates are bounded by ``MAX_COORDINATE`` so that the squared and cubed
quantities the tests form (``|l|^2`` of the ray/sphere test, ``|n|^2`` of a
triangle's normal, the 4x4 triangle matrix of the segment test) stay finite
in float64: the kernels then never meet inf or NaN, only the sentinel ``FAR``.
"""

import numpy as np

from .. import validation
from .._jit import FAR

#: Largest accepted magnitude of any coordinate, radius or extent.
MAX_COORDINATE = 1.0e50

#: Directions shorter than this are refused as zero (the mesh queries' limit).
MIN_DIRECTION_LENGTH = validation.MIN_DIRECTION_LENGTH


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def real_array(name: str, value) -> np.ndarray:
    """``value`` as a float64 array; refuses strings, objects, complex, bool."""
    return np.ascontiguousarray(validation.real_array(name, value), dtype=np.float64)


def finite(name: str, array: np.ndarray) -> None:
    """Refuse NaN, inf and values beyond ``MAX_COORDINATE``, naming the first bad row."""
    if array.size == 0:
        return
    # Fast path: one min and one max over the whole array (NaN propagates
    # through both); the per-row search runs only to word the refusal.
    low = array.min()
    high = array.max()
    if np.isfinite(low) and np.isfinite(high) and -MAX_COORDINATE <= low and high <= MAX_COORDINATE:
        return
    rows = array.shape[0] if array.ndim > 1 else array.size
    flat = array.reshape(rows, array.size // rows)
    ok = np.isfinite(flat).all(axis=1)
    if not ok.all():
        raise ValueError(f"{name} contain NaN or infinite values (first at row {_first(~ok)})")
    big = (np.abs(flat) > MAX_COORDINATE).any(axis=1)
    raise ValueError(
        f"{name} hold a value beyond +-{MAX_COORDINATE:g} (first at row {_first(big)}); "
        "rescale the scene"
    )


def vectors(name: str, value, *, allow_single: bool = True) -> tuple[np.ndarray, bool]:
    """``value`` as ``(N, 3)`` float64; returns ``(array, was_single)``.

    A single vector of shape ``(3,)`` becomes ``(1, 3)`` when ``allow_single``.
    """
    array = real_array(name, value)
    single = False
    if allow_single and array.ndim == 1 and array.shape[0] == 3:
        array = array[None, :]
        single = True
    if array.ndim != 2 or array.shape[1] != 3:
        expected = "(N, 3) or (3,)" if allow_single else "(N, 3)"
        raise ValueError(f"{name} must have shape {expected}, got {array.shape}")
    finite(name, array)
    return array, single


def vector3(name: str, value) -> np.ndarray:
    """One finite 3-vector as a ``(3,)`` float64 array."""
    array = real_array(name, value)
    if array.shape != (3,):
        raise ValueError(f"{name} must have shape (3,), got {array.shape}")
    finite(name, array[None, :])
    return array


def scalar(name: str, value, *, positive: bool = False, nonnegative: bool = False) -> float:
    """One finite real number, optionally > 0 or >= 0."""
    array = real_array(name, value)
    if array.ndim != 0 and array.shape != (1,):
        raise ValueError(f"{name} must be a single number, got shape {array.shape}")
    number = float(array.reshape(-1)[0])
    if not np.isfinite(number) or abs(number) > MAX_COORDINATE:
        raise ValueError(f"{name} must be finite and within +-{MAX_COORDINATE:g}, got {number!r}")
    if positive and not number > 0.0:
        raise ValueError(f"{name} must be > 0, got {number!r}")
    if nonnegative and not number >= 0.0:
        raise ValueError(f"{name} must be >= 0, got {number!r}")
    return number


def unit(name: str, value) -> np.ndarray:
    """A non-zero 3-vector, normalised."""
    vector = vector3(name, value)
    length = float(np.sqrt(vector @ vector))
    if not length > 0.0:
        raise ValueError(f"{name} must be a non-zero vector, got {vector.tolist()}")
    return vector / length


def rays(origins, directions) -> tuple[np.ndarray, np.ndarray]:
    """A batch of rays as ``(N, 3)`` float64 origins and directions.

    Either argument may be a single ``(3,)`` vector, which is repeated to match
    the other (one eye, many directions; or many origins, one direction).
    Directions need not be unit but must be at least ``MIN_DIRECTION_LENGTH``.
    """
    origins, _ = vectors("origins", origins)
    directions, _ = vectors("directions", directions)
    n_o, n_d = origins.shape[0], directions.shape[0]
    if n_o != n_d:
        if n_o == 1:
            origins = np.ascontiguousarray(np.broadcast_to(origins, directions.shape))
        elif n_d == 1:
            directions = np.ascontiguousarray(np.broadcast_to(directions, origins.shape))
        else:
            raise ValueError(f"origins and directions hold different numbers of rays: {n_o} and {n_d}")
    if directions.shape[0] == 0:
        return origins, directions
    # The mesh queries' checks: same messages, same minimum direction length.
    return validation.check_rays(origins, directions)


def window(tmin, tmax) -> tuple[float, float]:
    """The ray interval ``[tmin, tmax]``; ``tmax`` may be inf, which becomes ``FAR``."""
    tmin, tmax = validation.check_window(tmin, tmax)
    return tmin, min(tmax, FAR)


def far_to_inf(t: np.ndarray) -> np.ndarray:
    """Replace the kernels' ``FAR`` sentinel by ``np.inf``, in place."""
    t[t >= FAR] = np.inf
    return t
