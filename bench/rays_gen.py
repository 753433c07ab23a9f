"""Ray sets for the benchmark, identical for every engine."""

from __future__ import annotations

import math

import numpy as np


def random_pick_rays(bounds: np.ndarray, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Origins uniform on the sphere of radius = bounding-box diagonal around
    the box centre, each aimed at a uniform random point inside the box.
    Directions are normalised (float64, C-contiguous)."""
    rng = np.random.default_rng(seed)
    lo, hi = bounds
    centre = 0.5 * (lo + hi)
    diag = float(np.linalg.norm(hi - lo))
    on_sphere = rng.normal(size=(n, 3))
    on_sphere /= np.linalg.norm(on_sphere, axis=1)[:, None]
    origins = centre + diag * on_sphere
    targets = lo + rng.random((n, 3)) * (hi - lo)
    directions = targets - origins
    directions /= np.linalg.norm(directions, axis=1)[:, None]
    return np.ascontiguousarray(origins), np.ascontiguousarray(directions)


def camera_rays(
    bounds: np.ndarray,
    width: int = 512,
    height: int = 512,
    fov_y_deg: float = 45.0,
    view_dir=(0.45, 0.35, 1.0),
) -> tuple[np.ndarray, np.ndarray]:
    """A pinhole camera 1.5 bounding-box diagonals from the box centre, looking
    at the centre, ``fov_y_deg`` vertical field of view; one ray per pixel
    centre in row-major order (coherent). Unit directions, float64."""
    lo, hi = bounds
    centre = 0.5 * (lo + hi)
    diag = float(np.linalg.norm(hi - lo))
    back = np.asarray(view_dir, dtype=np.float64)
    back /= np.linalg.norm(back)
    eye = centre + 1.5 * diag * back
    forward = -back
    up_hint = np.array([0.0, 1.0, 0.0])
    right = np.cross(forward, up_hint)
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    half_h = math.tan(math.radians(fov_y_deg) / 2)
    half_w = half_h * width / height
    ys = (1.0 - 2.0 * (np.arange(height) + 0.5) / height) * half_h  # top row first
    xs = (2.0 * (np.arange(width) + 0.5) / width - 1.0) * half_w
    py, px = np.meshgrid(ys, xs, indexing="ij")  # row-major: x varies fastest
    directions = forward + px.reshape(-1, 1) * right + py.reshape(-1, 1) * up
    directions /= np.linalg.norm(directions, axis=1)[:, None]
    origins = np.broadcast_to(eye, directions.shape)
    return np.ascontiguousarray(origins), np.ascontiguousarray(directions)
