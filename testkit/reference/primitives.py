"""Naive float64 references for ``bvh.primitives``, written independently.

Plain numpy, no numba, and where possible a different method from the kernel
under test, so that a shared mistake is unlikely:

- plane: a 3x3 solve for ``(t, alpha, beta)`` in a basis of the plane;
- sphere: the quadratic formula on the unnormalised direction (the dev log's
  derivation) instead of the geometric method;
- boxes: each of the six faces as a rectangle (plane hit + bounds) instead
  of slabs;
- triangle: plane hit, then barycentrics from sub-areas, instead of
  Möller–Trumbore or the matrix method;
- polygon: best-fit plane by SVD, then the parity of the fan triangles
  ``(v0, vi, vi+1)`` that contain the point, instead of crossings;
- plane/box sides: all eight corners;
- minimal sphere: brute force over every support set of 1 to 4 points.

All functions take ``(N, 3)`` float64 rays and return ``t`` with ``inf`` on
a miss, plus what the tested function returns.
"""

import itertools

import numpy as np


def _dot(a, b):
    return np.einsum("...i,...i->...", a, b)


def _unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def plane_basis(normal):
    n = _unit(np.asarray(normal, float))
    helper = np.eye(3)[np.argmin(np.abs(n))]
    u = _unit(np.cross(n, helper))
    return n, u, np.cross(n, u)


def ray_plane(o, d, point, normal, tmin=0.0, tmax=np.inf):
    n, u, v = plane_basis(normal)
    count = o.shape[0]
    m = np.empty((count, 3, 3))
    m[:, :, 0] = d
    m[:, :, 1] = -u
    m[:, :, 2] = -v
    rhs = np.asarray(point, float) - o
    det = np.linalg.det(m)
    ok = np.abs(det) > 1e-300
    t = np.full(count, np.inf)
    if ok.any():
        sol = np.linalg.solve(m[ok], rhs[ok][..., None])[..., 0]
        t[ok] = sol[:, 0]
    t[(t < tmin) | (t > tmax)] = np.inf
    normal_out = np.where(np.isfinite(t)[:, None], n, 0.0)
    return t, normal_out


def ray_sphere(o, d, center, radius, tmin=0.0, tmax=np.inf):
    oc = o - np.asarray(center, float)
    a = _dot(d, d)
    b = 2.0 * _dot(d, oc)
    c = _dot(oc, oc) - radius * radius
    disc = b * b - 4.0 * a * c
    t = np.full(o.shape[0], np.inf)
    real = disc >= 0.0
    root = np.sqrt(np.where(real, disc, 0.0))
    t0 = (-b - root) / (2.0 * a)
    t1 = (-b + root) / (2.0 * a)
    for candidate in (t1, t0):
        take = real & (candidate >= tmin) & (candidate <= tmax)
        t = np.where(take, candidate, t)
    hit = np.isfinite(t)
    p = o + np.where(hit, t, 0.0)[:, None] * d
    normal = np.where(hit[:, None], (p - center) / radius, 0.0)
    return t, normal


def _faces_of_box(center, axes, half):
    """Six faces as (centre, outward normal, in-plane axes, half sizes)."""
    faces = []
    for k in range(3):
        i, j = [x for x in range(3) if x != k]
        for s in (-1.0, 1.0):
            faces.append((center + s * half[k] * axes[k], s * axes[k], axes[i], axes[j], half[i], half[j]))
    return faces


def _box_line_crossings(o, d, center, axes, half):
    """Every face crossing of each ray's line: (entry t, entry normal, exit t, exit normal)."""
    count = o.shape[0]
    enter = np.full(count, np.inf)
    leave = np.full(count, -np.inf)
    n_enter = np.zeros((count, 3))
    n_leave = np.zeros((count, 3))
    for fc, fn, fu, fv, hu, hv in _faces_of_box(center, axes, half):
        denom = d @ fn
        ok = denom != 0.0
        t = np.where(ok, ((fc - o) @ fn) / np.where(ok, denom, 1.0), np.nan)
        p = o + np.nan_to_num(t)[:, None] * d
        rel = p - fc
        tol = 1e-12 * (1.0 + np.abs(p).max(axis=1))
        inside = ok & (np.abs(rel @ fu) <= hu + tol) & (np.abs(rel @ fv) <= hv + tol)
        # A convex solid is entered through faces whose outward normal faces
        # the ray and left through the others (this also tells apart the two
        # coincident faces of a flat box).
        better = inside & (denom < 0.0) & (t < enter)
        enter = np.where(better, t, enter)
        n_enter[better] = fn
        better = inside & (denom > 0.0) & (t > leave)
        leave = np.where(better, t, leave)
        n_leave[better] = fn
    return enter, n_enter, leave, n_leave


def ray_aabb(o, d, bmin, bmax, tmin=0.0, tmax=np.inf):
    bmin = np.asarray(bmin, float)
    bmax = np.asarray(bmax, float)
    center = 0.5 * (bmin + bmax)
    half = 0.5 * (bmax - bmin)
    enter, n_enter, leave, _ = _box_line_crossings(o, d, center, np.eye(3), half)
    hit = np.isfinite(enter) & (leave >= tmin) & (enter <= tmax)
    t = np.where(hit, np.maximum(enter, tmin), np.inf)
    t_exit = np.where(hit, leave, np.inf)
    normal = np.where((hit & (enter >= tmin))[:, None], n_enter, 0.0)
    return t, t_exit, normal


def ray_obb(o, d, center, axes, half, tmin=0.0, tmax=np.inf):
    enter, n_enter, leave, n_leave = _box_line_crossings(o, d, np.asarray(center, float),
                                                         np.asarray(axes, float), np.asarray(half, float))
    take_enter = np.isfinite(enter) & (enter >= tmin) & (enter <= tmax)
    take_leave = ~take_enter & np.isfinite(leave) & (leave >= tmin) & (leave <= tmax)
    t = np.where(take_enter, enter, np.where(take_leave, leave, np.inf))
    normal = np.where(take_enter[:, None], n_enter, np.where(take_leave[:, None], n_leave, 0.0))
    return t, normal


def ray_triangle(o, d, a, b, c, cull_backfaces=False, tmin=0.0, tmax=np.inf):
    a, b, c = (np.asarray(x, float) for x in (a, b, c))
    e1 = b - a
    e2 = c - a
    n = np.cross(e1, e2)
    n2 = n @ n
    denom = d @ n
    ok = denom != 0.0
    if cull_backfaces:
        ok &= denom < 0.0
    t = np.where(ok, ((a - o) @ n) / np.where(ok, denom, 1.0), np.inf)
    p = o + np.where(np.isfinite(t), t, 0.0)[:, None] * d
    rel = p - a
    u = np.cross(rel, e2) @ n / n2
    v = np.cross(e1, rel) @ n / n2
    hit = ok & (u >= 0.0) & (v >= 0.0) & (u + v <= 1.0) & (t >= tmin) & (t <= tmax)
    t = np.where(hit, t, np.inf)
    return t, np.where(hit, u, 0.0), np.where(hit, v, 0.0), np.where(hit[:, None], n / np.sqrt(n2), 0.0)


def segment_triangle(p, q, a, b, c):
    return ray_triangle(p, q - p, a, b, c, tmin=0.0, tmax=1.0)


def barycentric_inside(points, a, b, c):
    """Inside (closed) by barycentrics from a least-squares solve."""
    a, b, c = (np.asarray(x, float) for x in (a, b, c))
    m = np.stack([b - a, c - a], axis=1)
    uv, *_ = np.linalg.lstsq(m, (points - a).T, rcond=None)
    u, v = uv
    return (u >= 0) & (v >= 0) & (u + v <= 1)


def _fan_parity(points2d, polygon2d):
    inside = np.zeros(points2d.shape[0], bool)
    v0 = polygon2d[0]
    for i in range(1, polygon2d.shape[0] - 1):
        v1 = polygon2d[i]
        v2 = polygon2d[i + 1]
        area = (v1[0] - v0[0]) * (v2[1] - v0[1]) - (v1[1] - v0[1]) * (v2[0] - v0[0])
        if area == 0.0:
            continue
        s = np.sign(area)
        w0 = s * ((v1[0] - points2d[:, 0]) * (v2[1] - points2d[:, 1]) - (v1[1] - points2d[:, 1]) * (v2[0] - points2d[:, 0]))
        w1 = s * ((v2[0] - points2d[:, 0]) * (v0[1] - points2d[:, 1]) - (v2[1] - points2d[:, 1]) * (v0[0] - points2d[:, 0]))
        w2 = s * ((v0[0] - points2d[:, 0]) * (v1[1] - points2d[:, 1]) - (v0[1] - points2d[:, 1]) * (v1[0] - points2d[:, 0]))
        inside ^= (w0 > 0) & (w1 > 0) & (w2 > 0)
    return inside


def point_in_polygon(points2d, polygon2d):
    """Even–odd rule as the parity of containing fan triangles."""
    return _fan_parity(np.asarray(points2d, float), np.asarray(polygon2d, float))


def ray_polygon(o, d, vertices, tmin=0.0, tmax=np.inf):
    vertices = np.asarray(vertices, float)
    centroid = vertices.mean(axis=0)
    _, _, vt = np.linalg.svd(vertices - centroid)
    n = vt[2]
    newell = np.cross(vertices, np.roll(vertices, -1, axis=0)).sum(axis=0)
    if newell @ n < 0:
        n = -n
    _, u, v = plane_basis(n)
    t, _ = ray_plane(o, d, centroid, n, tmin, tmax)
    hit = np.isfinite(t)
    p = o + np.where(hit, t, 0.0)[:, None] * d
    flat = np.stack([(p - centroid) @ u, (p - centroid) @ v], axis=1)
    outline = np.stack([(vertices - centroid) @ u, (vertices - centroid) @ v], axis=1)
    hit &= _fan_parity(flat, outline)
    t = np.where(hit, t, np.inf)
    return t, np.where(hit[:, None], n, 0.0)


def plane_box_side(normal, d, corners):
    """+1 / -1 / 0 from every corner; ``corners (N, 8, 3)``."""
    s = corners @ np.asarray(normal, float) + d
    return np.where((s > 0).all(axis=1), 1, np.where((s < 0).all(axis=1), -1, 0))


def aabb_corners(bmin, bmax):
    bmin = np.atleast_2d(bmin)
    bmax = np.atleast_2d(bmax)
    pick = np.array(list(itertools.product([0, 1], repeat=3)), bool)
    return np.where(pick[None], bmax[:, None, :], bmin[:, None, :])


def obb_corners(center, axes, half):
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=3)))
    return center + (signs * half) @ axes


def _sphere_through(support):
    """Smallest sphere with every point of ``support`` on its surface, or None."""
    k = len(support)
    if k == 1:
        return support[0], 0.0
    p0 = support[0]
    diffs = np.array([p - p0 for p in support[1:]])
    # centre = p0 + diffs.T @ lam, in the span of the differences, with
    # 2 (p_i - p0) . x = |p_i - p0|^2.
    gram = diffs @ diffs.T
    rhs = 0.5 * (diffs * diffs).sum(axis=1)
    if abs(np.linalg.det(gram)) <= 1e-12 * np.prod(np.diag(gram)):
        return None
    lam = np.linalg.solve(gram, rhs)
    x = diffs.T @ lam
    return p0 + x, float(np.linalg.norm(x))


def minimal_sphere(points):
    """Exact minimal enclosing sphere by trying every support set (small N only)."""
    points = np.asarray(points, float)
    best = None
    for k in range(1, 5):
        for combo in itertools.combinations(range(points.shape[0]), k):
            sphere = _sphere_through([points[i] for i in combo])
            if sphere is None:
                continue
            center, radius = sphere
            if best is not None and radius >= best[1]:
                continue
            if (np.linalg.norm(points - center, axis=1) <= radius * (1 + 1e-9)).all():
                best = (center, radius)
    return best
