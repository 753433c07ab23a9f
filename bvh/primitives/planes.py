"""Which side of a plane a volume lies on (RTR4 §22.10).

The plane is ``normal . x + d = 0``; "in front" is the side the normal points
to (``normal . x + d > 0``). Each test returns, per volume, ``+1`` (entirely
in front), ``-1`` (entirely behind) or ``0`` (the plane cuts or touches it).
A non-unit normal is accepted: the plane ``(normal, d)`` is normalised first.

For boxes only two corners are evaluated: the diagonal whose direction is
most aligned with the normal. Its two ends are the box's nearest and
farthest corners along the normal, so if both are on one side the whole box
is. Vectorised over volumes with numpy: the work per box is a handful of
operations and a kernel would not pay.
"""

import numpy as np

from . import _validate as check


def _plane(normal, d) -> tuple[np.ndarray, float]:
    normal = check.vector3("normal", normal)
    length = float(np.sqrt(normal @ normal))
    if not length > 0.0:
        raise ValueError(f"normal must be a non-zero vector, got {normal.tolist()}")
    d = check.scalar("d", d)
    return normal / length, d / length


def _classify(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Side from the lowest and highest signed distances of each volume."""
    side = np.zeros(low.shape[0], np.int8)
    side[low > 0.0] = 1
    side[high < 0.0] = -1
    return side


def plane_aabb(normal, d, bmin, bmax) -> np.ndarray:
    """Side of each axis-aligned box relative to the plane ``normal . x + d = 0``.

    Parameters
    ----------
    normal : (3,) array_like
        Non-zero; need not be unit.
    d : float
    bmin, bmax : (N, 3) or (3,) array_like
        Box corners, ``bmin <= bmax``.

    Returns
    -------
    (N,) int8
        ``+1`` entirely in front, ``-1`` entirely behind, ``0`` cut or touched.
        A single ``(3,)`` box gives length 1.
    """
    n, d = _plane(normal, d)
    bmin, _ = check.vectors("bmin", bmin)
    bmax, _ = check.vectors("bmax", bmax)
    if bmin.shape != bmax.shape:
        raise ValueError(f"bmin and bmax must have the same shape, got {bmin.shape} and {bmax.shape}")
    bad = (bmin > bmax).any(axis=1)
    if bad.any():
        raise ValueError(f"bmin must be <= bmax on every axis (first violation at row {int(np.flatnonzero(bad)[0])})")
    # The farthest corner along n takes bmax where n is positive, bmin where
    # negative; the nearest corner the opposite: the two ends of a diagonal.
    positive = n >= 0.0
    far = np.where(positive, bmax, bmin)
    near = np.where(positive, bmin, bmax)
    return _classify(near @ n + d, far @ n + d)


def plane_obb(normal, d, center, axes, half_extents) -> np.ndarray:
    """Side of each oriented box relative to the plane ``normal . x + d = 0``.

    Parameters
    ----------
    normal : (3,) array_like
        Non-zero; need not be unit.
    d : float
    center : (N, 3) or (3,) array_like
    axes : (N, 3, 3) or (3, 3) array_like
        Rows are each box's unit axes (orthonormal to 1e-9).
    half_extents : (N, 3) or (3,) array_like
        ``>= 0``.

    Returns
    -------
    (N,) int8
        ``+1`` entirely in front, ``-1`` entirely behind, ``0`` cut or touched.

    Notes
    -----
    The diagonal's half-length along the normal is ``sum_i h_i |n . axis_i|``
    (the two corners ``center +- sum_i sign(n . axis_i) h_i axis_i``).
    """
    n, d = _plane(normal, d)
    center, _ = check.vectors("center", center)
    half, _ = check.vectors("half_extents", half_extents)
    axes = check.real_array("axes", axes)
    if axes.shape == (3, 3):
        axes = axes[None]
    if axes.ndim != 3 or axes.shape[1:] != (3, 3):
        raise ValueError(f"axes must have shape (N, 3, 3) or (3, 3), got {axes.shape}")
    if not np.isfinite(axes).all():
        raise ValueError("axes contain NaN or infinite values")
    count = max(center.shape[0], half.shape[0], axes.shape[0])
    for name, array in (("center", center), ("half_extents", half), ("axes", axes)):
        if array.shape[0] not in (1, count):
            raise ValueError(f"{name} holds {array.shape[0]} boxes where the others hold {count}")
    error = np.abs(axes @ axes.transpose(0, 2, 1) - np.eye(3)).max()
    if error > 1e-9:
        raise ValueError(f"axes must be orthonormal rows (|A A^T - I| = {error:.3g} > 1e-9)")
    if (half < 0.0).any():
        raise ValueError("half_extents must be >= 0")
    reach = (np.abs(axes @ n) * half).sum(axis=1)
    distance = center @ n + d
    return _classify(np.broadcast_to(distance - reach, (count,)), np.broadcast_to(distance + reach, (count,)))


def plane_sphere(normal, d, center, radius) -> np.ndarray:
    """Side of each sphere relative to the plane ``normal . x + d = 0``.

    Parameters
    ----------
    normal : (3,) array_like
        Non-zero; need not be unit.
    d : float
    center : (N, 3) or (3,) array_like
    radius : (N,) array_like or float
        ``>= 0`` (a zero radius tests the centre point).

    Returns
    -------
    (N,) int8
        ``+1`` entirely in front, ``-1`` entirely behind, ``0`` cut or touched
        (RTR4 §22.10: ``|n . c + d| <= r``).
    """
    n, d = _plane(normal, d)
    center, _ = check.vectors("center", center)
    radius = check.real_array("radius", radius).reshape(-1)
    if radius.shape[0] not in (1, center.shape[0]):
        raise ValueError(f"radius holds {radius.shape[0]} values for {center.shape[0]} centres")
    if not np.isfinite(radius).all() or (radius < 0.0).any() or (radius > check.MAX_COORDINATE).any():
        raise ValueError("radius must be finite and >= 0")
    distance = center @ n + d
    radius = np.broadcast_to(radius, distance.shape)
    return _classify(distance - radius, distance + radius)
