"""Slow float64 brute force of a pick among triangles, segments and points
with tolerances (the rules of ``bvh.queries.lines_points``), written independently of
the kernels: the closest approach of a ray and a segment as the least of its
candidate points (the two lines' closest points when inside the domain, the
segment's two ends, the ray's start), in world coordinates from the
geometry as given and the objects' transforms.

Each answer carries a flag ``ambiguous``: a decision the answer turns on
lies within a relative ``MARGIN`` of flipping (a distance at the tolerance,
two candidates' ``t`` nearly equal, a line at the surface's depth limit), so
float32 storage or the order of float64 operations may decide it. A test
asserts exact agreement on the other rays and counts these.
"""

from dataclasses import dataclass

import numpy as np

MARGIN = 1.0e-6

TRIANGLE, SHAPE, SEGMENT, POINT = 0, 1, 2, 3


@dataclass
class World:
    """A scene's geometry in world coordinates."""

    triangles: np.ndarray  # (T, 3, 3)
    triangle_object: np.ndarray  # (T,)
    triangle_face: np.ndarray  # (T,)
    segments: np.ndarray  # (S, 2, 3)
    segment_object: np.ndarray
    segment_index: np.ndarray
    points: np.ndarray  # (P, 3)
    point_object: np.ndarray
    point_index: np.ndarray


def _place(transform, xyz):
    return xyz @ transform[:3, :3].T + transform[:3, 3]


def world_of(scene) -> World:
    """Every enabled triangle, segment and point of ``scene`` in the world."""
    tri, tri_obj, tri_face = [np.zeros((0, 3, 3))], [np.zeros(0, int)], [np.zeros(0, int)]
    seg, seg_obj, seg_idx = [np.zeros((0, 2, 3))], [np.zeros(0, int)], [np.zeros(0, int)]
    pts, pts_obj, pts_idx = [np.zeros((0, 3))], [np.zeros(0, int)], [np.zeros(0, int)]
    for info in scene.objects:
        if not info.pickable:
            continue
        if info.kind == "mesh":
            v = _place(info.transform, scene.mesh_vertices(info.mesh))
            f = scene.mesh_faces(info.mesh)
            tri.append(v[f])
            tri_obj.append(np.full(len(f), info.id))
            tri_face.append(np.arange(len(f)))
        elif info.kind == "lines":
            g = info.params["lines"]
            v = _place(info.transform, scene.set_vertices(g))
            e = scene.set_segments(g)
            seg.append(v[e])
            seg_obj.append(np.full(len(e), info.id))
            seg_idx.append(np.arange(len(e)))
        elif info.kind == "points":
            g = info.params["points"]
            v = _place(info.transform, scene.set_vertices(g))
            pts.append(v)
            pts_obj.append(np.full(len(v), info.id))
            pts_idx.append(np.arange(len(v)))
    return World(np.concatenate(tri), np.concatenate(tri_obj), np.concatenate(tri_face), np.concatenate(seg),
                 np.concatenate(seg_obj), np.concatenate(seg_idx), np.concatenate(pts), np.concatenate(pts_obj),
                 np.concatenate(pts_idx))


def _triangle_hits(o, d, tri, tmin, tmax):
    """(t (T,), inf where missed) of a ray and triangles, Möller–Trumbore in float64."""
    a, e1, e2 = tri[:, 0], tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
    p = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, p)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / det
        svec = o - a
        u = np.einsum("ij,ij->i", svec, p) * inv
        q = np.cross(svec, e1)
        v = (q @ d) * inv
        t = np.einsum("ij,ij->i", e2, q) * inv
        ok = (det != 0) & (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= tmin) & (t <= tmax)
    return np.where(ok, t, np.inf), np.cross(e1, e2)


def segment_approach(o, d, seg, tmin):
    """``(t, s, p, dist)`` per segment ``seg (S, 2, 3)``: the closest approach
    of the ray ``o + t d``, ``t >= tmin``, as the best of its candidates
    (least distance, then least ``t``)."""
    a = seg[:, 0] - o
    e = seg[:, 1] - seg[:, 0]
    dd = d @ d
    ee = np.einsum("ij,ij->i", e, e)
    de = e @ d
    candidates = []

    b = seg[:, 1] - o

    def add(t, s):
        s = np.clip(s, 0.0, 1.0)
        p = np.where((s <= 0)[:, None], a, np.where((s >= 1)[:, None], b, a + s[:, None] * e))
        gap = t[:, None] * d - p
        candidates.append((t, s, p, np.sqrt(np.einsum("ij,ij->i", gap, gap))))

    # The two lines' closest points, where both lie inside the domain.
    den = dd * ee - de * de
    with np.errstate(divide="ignore", invalid="ignore"):
        s_in = (de * (a @ d) - dd * np.einsum("ij,ij->i", e, a)) / den
        t_in = ((a @ d) + s_in * de) / dd
    inside = (den > 1e-14 * dd * ee) & (s_in >= 0) & (s_in <= 1) & (t_in >= tmin)
    t_bad = np.where(inside, t_in, np.inf)
    add(np.where(inside, t_in, 0.0), np.where(inside, s_in, 0.0))
    candidates[-1] = (t_bad, candidates[-1][1], candidates[-1][2], np.where(inside, candidates[-1][3], np.inf))
    for end, point in ((0.0, a), (1.0, b)):
        t = np.maximum(tmin, (point @ d) / dd)
        add(t, np.full(len(a), end))
    with np.errstate(divide="ignore", invalid="ignore"):
        s0 = np.where(ee > 0, np.einsum("ij,ij->i", e, tmin * d - a) / ee, 0.0)
    add(np.full(len(a), float(tmin)), s0)
    ts = np.stack([c[0] for c in candidates])
    dist = np.stack([c[3] for c in candidates])
    best_d = dist.min(axis=0)
    # Least t among the candidates as near as the nearest (a parallel segment).
    near = dist <= best_d * (1 + 1e-12) + 1e-300
    pick = np.argmin(np.where(near, ts, np.inf), axis=0)
    cols = np.arange(len(a))
    t = ts[pick, cols]
    s = np.stack([c[1] for c in candidates])[pick, cols]
    p = np.stack([c[2] for c in candidates])[pick, cols]
    return t, s, p + o, dist[pick, cols]


@dataclass
class Answer:
    primitive: int  # -1 miss
    object: int
    index: int  # triangle face, segment or point index
    t: float
    s: float
    ambiguous: bool


def pick(world: World, o, d, tmin, tmax, line_tol, line_slope, point_tol, point_slope) -> Answer:
    """The pick of one ray by the rules of ``bvh.queries.lines_points``."""
    o = np.asarray(o, float)
    d = np.asarray(d, float)
    length = np.sqrt(d @ d)
    ambiguous = False
    # Surfaces.
    t_tri, normals = _triangle_hits(o, d, world.triangles, tmin, tmax)
    surface = None
    if len(t_tri) and np.isfinite(t_tri.min()):
        k = int(np.argmin(t_tri))
        surface = (float(t_tri[k]), k)
        others = np.delete(t_tri, k)
        if others.size and others.min() - t_tri[k] <= MARGIN * max(1.0, t_tri[k]):
            ambiguous = True
    # Lines and points: (t, kind, dist, object, index, s, p, tol).
    cands = []
    if len(world.segments):
        t, s, p, dist = segment_approach(o, d, world.segments, tmin)
        tol = line_tol + line_slope * t * length
        for k in np.flatnonzero((dist <= tol * (1 + MARGIN) + 1e-300) & (t <= tmax)):
            edge = abs(dist[k] - tol[k]) <= MARGIN * max(tol[k], 1e-12)
            cands.append((t[k], SEGMENT, dist[k], world.segment_object[k], world.segment_index[k], s[k], p[k],
                          tol[k], edge))
    if len(world.points):
        rel = world.points - o
        t = np.maximum(tmin, rel @ d / (d @ d))
        gap = t[:, None] * d - rel
        dist = np.sqrt(np.einsum("ij,ij->i", gap, gap))
        tol = point_tol + point_slope * t * length
        for k in np.flatnonzero((dist <= tol * (1 + MARGIN) + 1e-300) & (t <= tmax)):
            edge = abs(dist[k] - tol[k]) <= MARGIN * max(tol[k], 1e-12)
            cands.append((t[k], POINT, dist[k], world.point_object[k], world.point_index[k], 0.0,
                          world.points[k], tol[k], edge))
    line = None
    if cands:
        # Candidates at the tolerance's edge may or may not count.
        if any(c[8] for c in cands):
            ambiguous = True
        firm = [c for c in cands if c[2] <= c[7]]
        if firm:
            firm.sort(key=lambda c: (c[0], -c[1], c[2], c[3], c[4]))
            line = firm[0]
            if len(firm) > 1:
                nxt = firm[1]
                # Exactly tied (segments meeting at a vertex): the tie rules decide.
                same_place = nxt[0] == line[0] and nxt[2] == line[2]
                if not same_place and nxt[0] - line[0] <= MARGIN * max(1.0, abs(line[0])):
                    ambiguous = True
    if line is not None:
        wins = surface is None or line[0] <= surface[0]
        margin = 0.0
        if not wins:
            n = normals[surface[1]]
            n = n / np.linalg.norm(n)
            if n @ d > 0:
                n = -n
            h = o + surface[0] * d
            depth = (line[6] - h) @ n
            wins = depth >= -line[7]
            margin = abs(depth + line[7])
            if margin <= MARGIN * max(line[7], 1e-12):
                ambiguous = True
        elif surface is not None and abs(line[0] - surface[0]) <= MARGIN * max(1.0, surface[0]):
            ambiguous = True
        if wins:
            return Answer(int(line[1]), int(line[3]), int(line[4]), float(line[0]), float(line[5]), ambiguous)
    if surface is not None:
        k = surface[1]
        return Answer(TRIANGLE, int(world.triangle_object[k]), int(world.triangle_face[k]), surface[0], np.nan,
                      ambiguous)
    return Answer(-1, -1, -1, np.inf, np.nan, ambiguous)


def agreement(scene, hits, origins, directions, tmin, tmax, tolerances, counts=None) -> tuple[int, int, list]:
    """``(agreeing, ambiguous, disagreeing rows)`` of a pick's ``hits``
    against :func:`pick`; ``tolerances (N, 4)`` as ``Scene.intersect`` takes
    them. ``counts``, a dict, gets ``"ambiguous_agreeing"``: the ambiguous
    rays whose answer is the brute force's all the same."""
    world = world_of(scene)
    agree, ambiguous, wrong = 0, 0, []
    ambiguous_agreeing = 0
    for i in range(len(origins)):
        answer = pick(world, origins[i], directions[i], tmin, tmax, *tolerances[i])
        got_index = {-1: -1, TRIANGLE: hits.triangle[i], SHAPE: -1, SEGMENT: hits.segment[i],
                     POINT: hits.point_index[i]}[int(hits.primitive[i])]
        same = (int(hits.primitive[i]) == answer.primitive and int(hits.object[i]) == answer.object
                and int(got_index) == answer.index)
        if answer.ambiguous:
            ambiguous += 1
            ambiguous_agreeing += same
        elif same:
            agree += 1
        else:
            wrong.append(i)
    if counts is not None:
        counts["ambiguous_agreeing"] = ambiguous_agreeing
    return agree, ambiguous, wrong
