"""Query results: plain arrays, one row per ray (or per hit)."""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Hits:
    """Closest hit of each of N rays.

    Attributes
    ----------
    triangle : (N,) int64
        Original face index, -1 on a miss.
    t : (N,) float64
        Ray parameter of the hit, ``point = origin + t * direction`` (the
        direction as given, not normalised); inf on a miss.
    u, v : (N,) float64
        Barycentrics: ``point = (1-u-v)*V[f[0]] + u*V[f[1]] + v*V[f[2]]`` in the
        face's own vertex order; NaN on a miss.
    point : (N, 3) float64
        World-space hit point; NaN on a miss.
    normal : (N, 3) float64
        Unit geometric normal along ``(V1-V0) x (V2-V0)``; NaN on a miss.
    front_face : (N,) bool
        True when the ray meets the side the normal points to
        (``direction . normal < 0``); False on a miss.
    """

    triangle: np.ndarray
    t: np.ndarray
    u: np.ndarray
    v: np.ndarray
    point: np.ndarray
    normal: np.ndarray
    front_face: np.ndarray

    @property
    def hit(self) -> np.ndarray:
        """(N,) bool: which rays hit."""
        return self.triangle >= 0

    def __len__(self) -> int:
        return self.triangle.shape[0]


@dataclass(frozen=True)
class AllHits:
    """Every surface crossing of N rays, flat and sorted by ``(ray, t)``.

    Attributes
    ----------
    ray : (H,) int64
        Index of the ray each hit belongs to.
    t : (H,) float64
    triangle : (H,) int64
        Original face index.
    u, v : (H,) float64
        Barycentrics, as in :class:`Hits`.
    """

    ray: np.ndarray
    t: np.ndarray
    triangle: np.ndarray
    u: np.ndarray
    v: np.ndarray

    def __len__(self) -> int:
        return self.ray.shape[0]
