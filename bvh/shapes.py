"""Analytic shapes a scene can hold beside meshes: their parameters, bounds
and the per-ray test the scene traversal calls in object space.

Each shape lives in its own object space and is placed by its object's
transform, so only a canonical form is needed:

- ``sphere``: radius ``radius`` (default 1) about the origin;
- ``box``: sides ``size = (sx, sy, sz)`` (default 1, 1, 1), centred on the origin;
- ``quad``: a finite plane of sides ``size = (sx, sy)`` (default 1, 1) in the
  ``z = 0`` plane, centred, its front face looking along +z;
- ``polygon``: a planar outline ``vertices (M, 3)``, ``M >= 3``, in object
  coordinates, its front the side its counter-clockwise winding faces.

The ray tests are those of :mod:`bvh.primitives` (RTR4 ch. 22), reused
through their per-ray device functions. A shape's parameters are flattened
into one float64 row of the scene's ``shape_data``; for a polygon:
``point (3), normal (3), dropped axis, M, xs (M), ys (M)``.
"""

import numpy as np

from ._jit import FAR, jit, jit_inline
from .primitives.rays import PARALLEL_COS, crossings_inside, plane_one, polygon_plane, slabs_one, sphere_one
from .validation import real_array

MESH = 0
SPHERE = 1
BOX = 2
QUAD = 3
POLYGON = 4
REMOVED = -1
#: Objects that place a set of line segments or of points
#: (:mod:`bvh.scene.line_point_pack`); only a closest-hit pick with tolerances
#: (:mod:`bvh.queries.lines_points`) sees them, every other query skips them.
LINES = 5
POINTS = 6

KIND_CODES = {"sphere": SPHERE, "box": BOX, "quad": QUAD, "polygon": POLYGON}
KIND_NAMES = {MESH: "mesh", **{code: name for name, code in KIND_CODES.items()}, LINES: "lines", POINTS: "points"}

NO_HIT = -1.0

_PARAMETERS = {"sphere": ("radius",), "box": ("size",), "quad": ("size",), "polygon": ("vertices",)}


def _positive_sizes(name: str, value, count: int) -> np.ndarray:
    array = real_array(name, value).astype(np.float64).reshape(-1)
    if array.shape[0] != count:
        raise ValueError(f"{name} must hold {count} numbers, got {array.shape[0]}")
    if not (np.isfinite(array).all() and (array > 0.0).all()):
        raise ValueError(f"{name} must be finite and > 0, got {array.tolist()}")
    return array


def make_shape(kind: str, **params) -> tuple[int, np.ndarray, dict, np.ndarray]:
    """Validate a shape's parameters.

    Returns
    -------
    code : int
        The kind's code (``SPHERE`` ...).
    data : (K,) float64
        The flattened parameters the kernels read.
    params : dict
        The parameters as plain JSON-able values, defaults filled in.
    bounds : (2, 3) float64
        Object-space box of the shape.
    """
    if kind not in KIND_CODES:
        raise ValueError(f"unknown shape kind {kind!r}; known kinds: {', '.join(KIND_CODES)}")
    unknown = sorted(set(params) - set(_PARAMETERS[kind]))
    if unknown:
        raise ValueError(f"unknown parameter {unknown[0]!r} for a {kind}; it takes {', '.join(_PARAMETERS[kind])}")
    if kind == "sphere":
        radius = _positive_sizes("radius", params.get("radius", 1.0), 1)
        r = float(radius[0])
        return SPHERE, radius, {"radius": r}, np.array([[-r] * 3, [r] * 3])
    if kind == "box":
        size = _positive_sizes("size", params.get("size", (1.0, 1.0, 1.0)), 3)
        return BOX, size * 0.5, {"size": size.tolist()}, np.stack([-size * 0.5, size * 0.5])
    if kind == "quad":
        size = _positive_sizes("size", params.get("size", (1.0, 1.0)), 2)
        half = size * 0.5
        return QUAD, half, {"size": size.tolist()}, np.array([[-half[0], -half[1], 0.0], [half[0], half[1], 0.0]])
    if "vertices" not in params:
        raise ValueError("a polygon needs its vertices: an (M, 3) outline, M >= 3")
    vertices, point, normal, drop = polygon_plane(params["vertices"])
    keep = [k for k in range(3) if k != drop]
    data = np.concatenate([point, normal, [drop, vertices.shape[0]], vertices[:, keep[0]], vertices[:, keep[1]]])
    return POLYGON, data, {"vertices": vertices.tolist()}, np.stack([vertices.min(axis=0), vertices.max(axis=0)])


@jit_inline
def polygon_row(data, start):
    """A polygon's parameters, ``data[start:]``: ``(qx, qy, qz, nx, ny, nz,
    drop, xs, ys)``, a point of its plane, its unit normal, the dropped axis
    and the outline's two kept coordinates (``(M,)`` views each)."""
    m = int(data[start + 7])
    return (data[start], data[start + 1], data[start + 2], data[start + 3], data[start + 4], data[start + 5],
            int(data[start + 6]), data[start + 8:start + 8 + m], data[start + 8 + m:start + 8 + 2 * m])


@jit_inline
def polygon_point(drop, u, v, qx, qy, qz, nx, ny, nz):
    """The point of the polygon's plane (through ``q``, normal ``n``) whose
    two kept coordinates are ``u, v``, the dropped one from the plane's
    equation."""
    if drop == 0:
        return qx - (ny * (u - qy) + nz * (v - qz)) / nx, u, v
    if drop == 1:
        return u, qy - (nx * (u - qx) + nz * (v - qz)) / ny, v
    return u, v, qz - (nx * (u - qx) + ny * (v - qy)) / nz


@jit
def shape_hit(kind, data, start, ox, oy, oz, dx, dy, dz, tmin, tmax, cull):
    """Nearest hit in ``[tmin, tmax]`` of an object-space ray with a shape.

    ``data[start:]`` holds the shape's parameters. Returns ``(t, nx, ny, nz)``:
    ``t = NO_HIT`` when there is none, else the outward (front) normal at the
    hit, not necessarily unit. With ``cull``, hits on the back of the surface
    (``direction . normal >= 0``: from inside a sphere or box, or behind a
    quad or polygon) are ignored.
    """
    if kind == SPHERE:
        t = sphere_one(ox, oy, oz, dx, dy, dz, 0.0, 0.0, 0.0, data[start], tmin, tmax)
        if t == FAR:
            return NO_HIT, 0.0, 0.0, 0.0
        nx = ox + t * dx
        ny = oy + t * dy
        nz = oz + t * dz
        if cull and nx * dx + ny * dy + nz * dz >= 0.0:
            return NO_HIT, 0.0, 0.0, 0.0
        return t, nx, ny, nz
    if kind == BOX:
        hx = data[start]
        hy = data[start + 1]
        hz = data[start + 2]
        t_near, axis_near, t_far, axis_far = slabs_one(ox, oy, oz, dx, dy, dz, -hx, -hy, -hz, hx, hy, hz)
        if t_near > t_far:
            return NO_HIT, 0.0, 0.0, 0.0
        # Entering, the face normal points against the ray; leaving, along it.
        if axis_near >= 0 and tmin <= t_near <= tmax:
            t = t_near
            axis = axis_near
            sign = -1.0
        elif not cull and axis_far >= 0 and tmin <= t_far <= tmax:
            t = t_far
            axis = axis_far
            sign = 1.0
        else:
            return NO_HIT, 0.0, 0.0, 0.0
        d = dx if axis == 0 else (dy if axis == 1 else dz)
        n = sign if d > 0.0 else -sign
        return t, n if axis == 0 else 0.0, n if axis == 1 else 0.0, n if axis == 2 else 0.0
    if kind == QUAD:
        if dz * dz <= PARALLEL_COS * PARALLEL_COS * (dx * dx + dy * dy + dz * dz):
            return NO_HIT, 0.0, 0.0, 0.0
        if cull and dz >= 0.0:
            return NO_HIT, 0.0, 0.0, 0.0
        t = -oz / dz
        if t < tmin or t > tmax:
            return NO_HIT, 0.0, 0.0, 0.0
        if abs(ox + t * dx) > data[start] or abs(oy + t * dy) > data[start + 1]:
            return NO_HIT, 0.0, 0.0, 0.0
        return t, 0.0, 0.0, 1.0
    if kind == POLYGON:
        qx, qy, qz, nx, ny, nz, drop, xs, ys = polygon_row(data, start)
        if cull and nx * dx + ny * dy + nz * dz >= 0.0:
            return NO_HIT, 0.0, 0.0, 0.0
        t = plane_one(ox, oy, oz, dx, dy, dz, qx, qy, qz, nx, ny, nz, tmin, tmax)
        if t == FAR:
            return NO_HIT, 0.0, 0.0, 0.0
        hx = ox + t * dx
        hy = oy + t * dy
        hz = oz + t * dz
        h0 = hx if drop != 0 else hy
        h1 = hz if drop != 2 else hy
        if not crossings_inside(h0, h1, xs, ys):
            return NO_HIT, 0.0, 0.0, 0.0
        return t, nx, ny, nz
    return NO_HIT, 0.0, 0.0, 0.0


@jit_inline
def next_after(t):
    """A float64 a little above ``t >= 0`` (one or two ulps): where to resume
    the search after a hit at ``t``."""
    return t + max(abs(t) * 2.220446049250313e-16, 4.9e-324)

