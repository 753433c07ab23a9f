"""Slow float64 brute-force ray casting: every ray against every triangle.

The oracle the BVH kernels are checked against. It works on the original
float64 vertices (the BVH stores centred float32), tests every triangle with
Möller–Trumbore in float64 without any tolerance, and is written with numpy
broadcasting only, sharing no code with ``bvh``.
"""

import numpy as np

_CHUNK_ELEMENTS = 2_000_000


def _moller_trumbore(corners, origins, directions):
    """``t, u, v, det`` of shape (R, T) for R rays against T triangles."""
    v0 = corners[None, :, 0]
    e1 = corners[None, :, 1] - v0
    e2 = corners[None, :, 2] - v0
    d = directions[:, None, :]
    p = np.cross(d, e2)
    det = np.einsum("rtk,rtk->rt", np.broadcast_to(e1, p.shape), p)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        inv = 1.0 / det
        s = origins[:, None, :] - v0
        u = np.einsum("rtk,rtk->rt", s, p) * inv
        q = np.cross(s, np.broadcast_to(e1, s.shape))
        v = np.einsum("rtk,rtk->rt", np.broadcast_to(d, q.shape), q) * inv
        t = np.einsum("rtk,rtk->rt", np.broadcast_to(e2, q.shape), q) * inv
    return t, u, v, det


def _chunks(n_rays, n_triangles):
    step = max(1, _CHUNK_ELEMENTS // max(n_triangles, 1))
    for start in range(0, n_rays, step):
        yield slice(start, min(n_rays, start + step))


def hits_mask(t, u, v, det, tmin, tmax, cull_backfaces=False):
    valid = det > 0 if cull_backfaces else det != 0
    with np.errstate(invalid="ignore"):
        return valid & (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= tmin) & (t <= tmax)


def closest_hits(vertices, faces, origins, directions, tmin=0.0, tmax=np.inf, cull_backfaces=False):
    """Closest hit per ray.

    Returns
    -------
    triangle : (N,) int64, -1 on a miss
    t, u, v : (N,) float64, inf / NaN on a miss
    edge : (N,) float64
        How close the ray passes to a triangle boundary, in barycentric
        units: for a hit, the smallest barycentric of the hit (0 on an edge);
        for a miss, the largest over the triangles it would meet in the window
        of their smallest barycentric (negative; -inf when there is none).
        Rays with ``|edge|`` near zero graze an edge, and rounding may decide them.
    """
    corners = np.asarray(vertices, np.float64)[np.asarray(faces)]
    origins = np.atleast_2d(np.asarray(origins, np.float64))
    directions = np.atleast_2d(np.asarray(directions, np.float64))
    n = len(origins)
    triangle = np.full(n, -1, np.int64)
    t_out = np.full(n, np.inf)
    u_out = np.full(n, np.nan)
    v_out = np.full(n, np.nan)
    near_miss = np.full(n, -np.inf)
    for rows in _chunks(n, len(corners)):
        t, u, v, det = _moller_trumbore(corners, origins[rows], directions[rows])
        ok = hits_mask(t, u, v, det, tmin, tmax, cull_backfaces)
        with np.errstate(invalid="ignore"):
            in_window = (det > 0 if cull_backfaces else det != 0) & (t >= tmin) & (t <= tmax)
            margin = np.where(in_window, np.minimum(np.minimum(u, v), 1 - u - v), -np.inf)
        near_miss[rows] = margin.max(axis=1, initial=-np.inf)
        t = np.where(ok, t, np.inf)
        best = np.argmin(t, axis=1)
        r = np.arange(len(best))
        hit = np.isfinite(t[r, best])
        triangle[rows] = np.where(hit, best, -1)
        t_out[rows] = t[r, best]
        u_out[rows] = np.where(hit, u[r, best], np.nan)
        v_out[rows] = np.where(hit, v[r, best], np.nan)
    edge = np.where(triangle >= 0, np.minimum(np.minimum(u_out, v_out), 1 - u_out - v_out), near_miss)
    return triangle, t_out, u_out, v_out, edge


def all_hit_distances(vertices, faces, origins, directions, tmin=0.0, tmax=np.inf):
    """For each ray, the sorted ``t`` of every triangle it hits (duplicates at
    shared edges included)."""
    corners = np.asarray(vertices, np.float64)[np.asarray(faces)]
    origins = np.atleast_2d(np.asarray(origins, np.float64))
    directions = np.atleast_2d(np.asarray(directions, np.float64))
    result = []
    for rows in _chunks(len(origins), len(corners)):
        t, u, v, det = _moller_trumbore(corners, origins[rows], directions[rows])
        ok = hits_mask(t, u, v, det, tmin, tmax)
        result.extend(np.sort(t[r][ok[r]]) for r in range(ok.shape[0]))
    return result
