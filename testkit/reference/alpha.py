"""Slow float64 brute force of alpha-tested picking: every ray against every
world triangle (Möller–Trumbore in float64), each candidate kept or let
through by the texel rule ``bvh.queries.alpha`` documents, written again here from
the glTF and OpenGL specifications, sharing no code with ``bvh``.

Triangles are the records of ``testkit.scenes.alpha._truth``: ``(node, face,
corners (3, 3), texcoords (3, 2) or None, vertex alphas (3,), material dict
or None)``.
"""

import math

import numpy as np

#: The kernels' barycentric slack (bvh.queries.ray_triangle.EDGE_TOLERANCE): a ray
#: through the diagonal of a quad meets one of its halves here as there.
EDGE_SLACK = 1.0e-9

REPEAT, CLAMP_TO_EDGE, MIRRORED_REPEAT = 10497, 33071, 33648


def wrapped(i: int, size: int, mode: int) -> int:
    """OpenGL 4.6 §8.14.2, table 8.20, for nearest filtering."""
    if mode == CLAMP_TO_EDGE:
        return min(max(i, 0), size - 1)
    if mode == MIRRORED_REPEAT:
        a = i % (2 * size) - size
        mirror = a if a >= 0 else -(1 + a)
        return size - 1 - mirror
    return i % size


def alpha_at(record, u: float, v: float) -> float:
    """The alpha of a hit at barycentrics ``(u, v)`` on a triangle record."""
    _, _, _, st, alphas, material = record
    u = min(max(u, 0.0), 1.0)
    v = min(max(v, 0.0), 1.0 - u)
    w = 1.0 - u - v
    alpha = 1.0
    mask = material.get("mask")
    if mask is not None and np.asarray(mask).min() < 255:
        height, width = np.asarray(mask).shape
        s = w * st[0, 0] + u * st[1, 0] + v * st[2, 0]
        t = w * st[0, 1] + u * st[1, 1] + v * st[2, 1]
        column = wrapped(math.floor(s * width), width, material.get("wrapS", REPEAT))
        row = wrapped(math.floor(t * height), height, material.get("wrapT", REPEAT))
        alpha = int(np.asarray(mask)[row, column]) / 255.0
    alpha = alpha * material.get("factor", 1.0)
    if alphas[0] == alphas[1] == alphas[2]:
        return alpha * alphas[0]
    return alpha * (w * alphas[0] + u * alphas[1] + v * alphas[2])


def _opaque_here(record, u, v, alpha_test: bool, blend_cutoff: float) -> bool:
    material = record[5]
    if not alpha_test or material is None:
        return True
    cutoff = material.get("alphaCutoff", 0.5) if material["alphaMode"] == "MASK" else blend_cutoff
    return alpha_at(record, u, v) >= cutoff


def _moller_trumbore(corners, origin, direction):
    v0, v1, v2 = corners
    e1, e2 = v1 - v0, v2 - v0
    p = np.cross(direction, e2)
    det = float(np.dot(e1, p))
    if det == 0.0:
        return None
    s = origin - v0
    u = float(np.dot(s, p)) / det
    q = np.cross(s, e1)
    v = float(np.dot(direction, q)) / det
    t = float(np.dot(e2, q)) / det
    if u < -EDGE_SLACK or v < -EDGE_SLACK or u + v > 1.0 + EDGE_SLACK:
        return None
    return t, u, v


def trace(records, origins, directions, tmin=0.0, tmax=np.inf, alpha_test=True, blend_cutoff=0.5):
    """Every ray's alpha-tested crossings: for ray ``i`` a list of ``(t, node,
    face)`` sorted by t, transparent texels left out."""
    answers = []
    for origin, direction in zip(np.asarray(origins, np.float64), np.asarray(directions, np.float64)):
        crossings = []
        for record in records:
            found = _moller_trumbore(record[2], origin, direction)
            if found is None:
                continue
            t, u, v = found
            if tmin <= t <= tmax and _opaque_here(record, u, v, alpha_test, blend_cutoff):
                crossings.append((t, record[0], record[1]))
        answers.append(sorted(crossings))
    return answers


def closest_nodes(answers) -> np.ndarray:
    """Node of each ray's nearest crossing, -1 for none."""
    return np.array([crossings[0][1] if crossings else -1 for crossings in answers], np.int64)


def distinct_crossings(answers) -> np.ndarray:
    """Crossings of each ray counted once per (node, depth): a ray through a
    quad's diagonal meets both halves at one point, one crossing."""
    return np.array([len({(node, round(t, 9)) for t, node, _ in crossings}) for crossings in answers], np.int64)
