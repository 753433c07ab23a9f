"""Point containment: the crossings test in 2D, and the angle-sum triangle test."""

import math

import numpy as np

from .._jit import jit
from . import _validate as check
from .rays import crossings_inside, triangle_frame

#: Default tolerance of ``point_in_triangle_angles``, in radians: the angle
#: sum must reach ``2*pi - tol``. Rounding of ``acos`` near -1 leaves about
#: 1.5e-8 rad of noise per angle, so a much tighter tolerance starts
#: rejecting points that are inside, next to an edge (see the docstring).
ANGLE_SUM_TOLERANCE = 1.0e-6


@jit
def _points_in_polygon_kernel(points, xs, ys, out):
    for i in range(points.shape[0]):
        out[i] = crossings_inside(points[i, 0], points[i, 1], xs, ys)


def point_in_polygon(points2d, polygon2d) -> np.ndarray:
    """Even–odd containment of 2D points in a 2D polygon (crossings test, RTR4 §22.9.1).

    Parameters
    ----------
    points2d : (K, 2) or (2,) array_like
        Points to test.
    polygon2d : (M, 2) array_like
        The closed outline, ``M >= 3``; concave and self-intersecting outlines
        work (a region is inside when it is wrapped an odd number of times).

    Returns
    -------
    (K,) bool
        True inside. Points exactly on the outline follow the test's half-open
        rule: a vertex counts as above a horizontal line through it, so of two
        polygons sharing an edge exactly one claims each point of it.
    """
    points = check.real_array("points2d", points2d)
    if points.ndim == 1 and points.shape[0] == 2:
        points = points[None, :]
    if points.ndim != 2 or points.shape[1] != 2:
        raise ValueError(f"points2d must have shape (K, 2) or (2,), got {points.shape}")
    polygon = check.real_array("polygon2d", polygon2d)
    if polygon.ndim != 2 or polygon.shape[1] != 2:
        raise ValueError(f"polygon2d must have shape (M, 2), got {polygon.shape}")
    if polygon.shape[0] < 3:
        raise ValueError(f"a polygon needs at least 3 vertices, got {polygon.shape[0]}")
    check.finite("points2d", points)
    check.finite("polygon2d", polygon)
    out = np.empty(points.shape[0], np.bool_)
    _points_in_polygon_kernel(points, np.ascontiguousarray(polygon[:, 0]),
                              np.ascontiguousarray(polygon[:, 1]), out)
    return out


@jit
def _angle(ux, uy, uz, vx, vy, vz):
    """Angle between two non-zero vectors by ``acos`` of their normalised dot."""
    cos = (ux * vx + uy * vy + uz * vz) / math.sqrt((ux * ux + uy * uy + uz * uz) * (vx * vx + vy * vy + vz * vz))
    # The tutorial feeds this straight to acos; for a point on an edge the two
    # vectors are anti-parallel and rounding can give -1 - 1e-16, whose acos
    # is NaN (and NaN >= 2 pi - tol is False: an edge point "misses").
    if cos > 1.0:
        cos = 1.0
    elif cos < -1.0:
        cos = -1.0
    return math.acos(cos)


@jit
def _angles_one(px, py, pz, a, b, c, tol):
    """Angle-sum inside test of one point against triangle ``a, b, c``."""
    iax = a[0] - px
    iay = a[1] - py
    iaz = a[2] - pz
    ibx = b[0] - px
    iby = b[1] - py
    ibz = b[2] - pz
    icx = c[0] - px
    icy = c[1] - py
    icz = c[2] - pz
    # A point on a vertex has a zero vector and no angle: it is inside
    # (on the boundary), as edges are.
    if ((iax == 0.0 and iay == 0.0 and iaz == 0.0) or (ibx == 0.0 and iby == 0.0 and ibz == 0.0)
            or (icx == 0.0 and icy == 0.0 and icz == 0.0)):
        return True
    total = (_angle(iax, iay, iaz, ibx, iby, ibz) + _angle(ibx, iby, ibz, icx, icy, icz)
             + _angle(icx, icy, icz, iax, iay, iaz))
    return total >= 2.0 * math.pi - tol


@jit
def _angles_kernel(points, a, b, c, tol, out):
    for i in range(points.shape[0]):
        out[i] = _angles_one(points[i, 0], points[i, 1], points[i, 2], a, b, c, tol)


def point_in_triangle_angles(points, a, b, c, tol=ANGLE_SUM_TOLERANCE) -> np.ndarray:
    """Inside test by the sum of angles (the bullets-and-terrain tutorial, ``seeds/004``).

    A point ``p`` of the triangle's plane is inside when the angles
    ``a p b``, ``b p c`` and ``c p a`` add up to ``2 pi``; outside, the sum is
    twice the largest of them, less than ``2 pi``. Kept as a measured
    comparison with barycentrics (``python -m bench.primitives``), not for
    production use.

    Parameters
    ----------
    points : (N, 3) or (3,) array_like
        Points assumed to lie in the triangle's plane (e.g. ray/plane hits);
        off the plane the sum drops below ``2 pi`` and they read as outside.
    a, b, c : (3,) array_like
        Vertices; collinear or coincident vertices are refused.
    tol : float
        Accept when the sum is at least ``2 pi - tol`` (radians, >= 0).

    Returns
    -------
    (N,) bool
        True inside or on the boundary.

    Notes
    -----
    How it fares against barycentrics, measured by ``python -m bench.primitives``
    (this machine, one thread): about 30 times slower per point (three
    ``acos`` and three square roots against a few multiply-adds: some 90 ms
    against 3 ms per million points), and about 7 times slower as the inside
    test after a ray/plane hit (some 80 ms against 12 ms per million rays;
    Möller–Trumbore takes about 28 ms). It is also blurred near the edges:
    ``acos`` of a cosine near -1 is off by up to ``sqrt(2 * 1.1e-16)``, about
    1.5e-8 rad, while the deficit of the sum for a point outside at distance
    ``delta`` from an edge of length ``L`` is only of order ``delta / L``.
    With the default ``tol = 1e-6`` every inside point reads inside, but
    points outside within about ``1e-7 L`` of an edge read as inside (half of
    them at ``1e-7 L``, all at ``1e-8 L``). A tighter ``tol`` trades that for
    inside points read as outside: with ``tol = 1e-8``, a fifth of those
    within ``1e-10 L`` of an edge. Barycentrics misclassify none of these
    down to ``1e-12 L``. ``acos`` arguments are clamped to ``[-1, 1]``, so
    no NaN is formed; a point on a vertex counts as inside.
    """
    points, _ = check.vectors("points", points)
    a, _, _, _, _ = triangle_frame(a, b, c)
    b = check.vector3("b", b)
    c = check.vector3("c", c)
    tol = check.scalar("tol", tol, nonnegative=True)
    out = np.empty(points.shape[0], np.bool_)
    _angles_kernel(points, a, b, c, tol, out)
    return out
