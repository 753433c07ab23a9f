"""Random overlap shapes and their rounding-proof comparison with the oracle.

Shared by ``tests/test_overlap.py`` and ``bench/overlap.py``. A shape is the
dict ``bvh`` and ``testkit.reference.proximity.overlapping_triangles`` take.
The comparison never depends on rounding: a triangle within ``margin`` of the
shape's boundary could go either way, so the engine's answer must contain
what the oracle finds for the shape shrunk by ``margin`` and lie within what
it finds for the shape grown by ``margin``.
"""

import numpy as np

from testkit.reference.proximity import overlapping_triangles

KINDS = ("sphere", "capsule", "aabb", "obb", "convex")


def _rotation(rng):
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    return q * np.sign(np.diag(r))[None, :]


def random_shape(rng, kind, center, size):
    """A random shape of ``kind`` about ``center`` (3,), about ``size`` across.

    Returns ``(shape, box)``: the dict and a ``(2, 3)`` box that holds the
    shape grown by any margin below ``size * 1e-3``. Some are degenerate on
    purpose: zero radii, a capsule with ``a == b``, flat boxes. A convex
    region is up to five random half-spaces and the six faces of a box,
    shuffled, so it is bounded by that box.
    """
    c = np.asarray(center, np.float64) + rng.uniform(-1.0, 1.0, 3) * size
    pad = size * 1e-3
    if kind in ("sphere", "capsule"):
        r = 0.0 if rng.random() < 0.05 else size * rng.uniform(0.0, 0.4)
        if kind == "sphere":
            return {"kind": "sphere", "center": c, "radius": r}, np.stack([c - r - pad, c + r + pad])
        b = c.copy() if rng.random() < 0.05 else c + rng.normal(size=3) * size * 0.5
        lo, hi = np.minimum(c, b), np.maximum(c, b)
        return {"kind": "capsule", "a": c, "b": b, "radius": r}, np.stack([lo - r - pad, hi + r + pad])
    half = size * rng.uniform(0.0, 0.4, 3)
    if rng.random() < 0.1:
        half[rng.integers(3)] = 0.0
    if kind == "aabb":
        return {"kind": "aabb", "min": c - half, "max": c + half}, np.stack([c - half - pad, c + half + pad])
    axes = _rotation(rng)
    if rng.random() < 0.3:
        axes[2] = -axes[2]
    reach = np.abs(axes).T @ half
    if kind == "obb":
        return ({"kind": "obb", "center": c, "axes": axes, "half_size": half},
                np.stack([c - reach - 2 * pad, c + reach + 2 * pad]))
    half = half + size * 0.1
    reach = np.abs(axes).T @ half
    box = np.concatenate([np.column_stack([axes, half - axes @ c]), np.column_stack([-axes, half + axes @ c])])
    normals = rng.normal(size=(rng.integers(0, 6), 3))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    through = c + rng.normal(size=normals.shape) * size * 0.3
    extra = np.column_stack([normals, -(normals * through).sum(axis=1)])
    planes = np.concatenate([box, extra])[rng.permutation(6 + len(extra))]
    return {"kind": "convex", "planes": planes}, np.stack([c - reach - 2 * pad, c + reach + 2 * pad])


def grown(shape, margin):
    """The shape grown by ``margin`` (shrunk if negative): radii, half sizes
    and plane offsets (unit normals) moved by ``margin``."""
    kind = shape["kind"]
    if kind in ("sphere", "capsule"):
        return {**shape, "radius": shape["radius"] + margin}
    if kind == "aabb":
        return {**shape, "min": np.asarray(shape["min"]) - margin, "max": np.asarray(shape["max"]) + margin}
    if kind == "obb":
        return {**shape, "half_size": np.asarray(shape["half_size"]) + margin}
    planes = np.asarray(shape["planes"], np.float64).reshape(-1, 4)
    unit = planes / np.linalg.norm(planes[:, :3], axis=1, keepdims=True)
    return {**shape, "planes": unit + np.array([0.0, 0.0, 0.0, margin])}


def _oracle(vertices, faces, shape, candidates):
    kind = shape["kind"]
    if kind in ("sphere", "capsule") and shape["radius"] < 0.0:
        return np.zeros(0, np.int64)
    if kind == "aabb" and (np.asarray(shape["min"]) > np.asarray(shape["max"])).any():
        return np.zeros(0, np.int64)
    if kind == "obb" and (np.asarray(shape["half_size"]) < 0.0).any():
        return np.zeros(0, np.int64)
    return candidates[overlapping_triangles(vertices, faces[candidates], shape)]


def face_boxes(vertices, faces):
    """``(F, 2, 3)``: each face's box, for :func:`bracket`'s ``boxes``."""
    corners = vertices[faces]
    return np.stack([corners.min(axis=1), corners.max(axis=1)], axis=1)


def bracket(vertices, faces, shape, margin, box=None, boxes=None):
    """``(sure, possible)``: sorted face indices the oracle finds for the
    shape shrunk and grown by ``margin``; only faces whose box (``boxes``,
    else computed) meets ``box`` (a ``(2, 3)`` bound of the grown shape) are
    given to it."""
    candidates = np.arange(len(faces))
    if box is not None:
        boxes = face_boxes(vertices, faces) if boxes is None else boxes
        keep = ((boxes[:, 1] >= box[0]) & (boxes[:, 0] <= box[1])).all(axis=1)
        candidates = candidates[keep]
    return (_oracle(vertices, faces, grown(shape, -margin), candidates),
            _oracle(vertices, faces, grown(shape, margin), candidates))


def agrees(found, sure, possible) -> bool:
    """Whether the engine's ``found`` holds every sure face and only possible ones."""
    return bool(np.isin(sure, found).all() and np.isin(found, possible).all())
