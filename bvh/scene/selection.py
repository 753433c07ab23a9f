"""Selections of a scene's objects or triangles by a convex region (a
camera's frustum) or a camera's lasso (``Scene.select``).

Objects are culled by their world boxes first (:func:`objects_in_frustum`);
meshes are then tested triangle by triangle in their own space
(:mod:`bvh.queries.frustum`, :mod:`bvh.queries.lasso`), shapes by their
parameters or their boxes.
"""

import numpy as np

from ..hits import Selection
from ..queries.frustum import (BLOCK, INSIDE, OUTSIDE, all_triangles_within_frustum, any_triangle_in_frustum,
                               boxes_in_frustum, objects_meet_frustum, planes_to_object_space, triangles_in_frustum,
                               triangles_within_frustum)
from ..shapes import BOX, MESH, QUAD, SPHERE
from .snapshot import Snapshot

#: The twelve triangles of a box's surface, over the corners of :func:`_box_corners`
#: (corner ``c`` takes the high side on axis ``k`` when bit ``k`` of ``c`` is set).
_BOX_FACES = np.array([[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
                       [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]], np.int64)


def objects_in_frustum(snap: Snapshot, enabled: np.ndarray, planes: np.ndarray) -> list:
    """``[(object id, box state), ...]``: the ``enabled (O,)`` objects of
    ``snap`` with finite bounds whose world box is not wholly outside
    ``planes`` (state ``INSIDE`` or ``CROSSING`` of :func:`boxes_in_frustum`)."""
    candidates = np.flatnonzero(enabled)
    candidates = candidates[np.isfinite(snap.bounds[candidates]).all(axis=(1, 2))]
    if not candidates.size:
        return []
    state = boxes_in_frustum(snap.bounds[candidates], planes)
    return [(oid, box) for oid, box in zip(candidates.tolist(), state.tolist()) if box != OUTSIDE]


def in_planes(snap: Snapshot, seen: list, planes: np.ndarray, mode: str, window: bool) -> Selection:
    """``Scene.select`` of a convex region ``planes (P, 4)`` among the
    objects ``seen`` (:func:`objects_in_frustum`)."""
    whole_object = np.array([-1])
    chosen_objects = []
    chosen_triangles = []
    pack = snap.pack
    met = _small_meshes_meeting(snap, seen, planes, window) if mode == "objects" else {}
    for oid, box in seen:
        kind = int(snap.kind[oid])
        if kind != MESH:
            start = int(snap.shape_start[oid])
            if not window or box == INSIDE or _shape_within(
                    kind, snap.shape_data[start:], snap.transform[oid], planes):
                chosen_objects.append(np.array([oid]))
                chosen_triangles.append(whole_object)
            continue
        if (box == INSIDE and mode == "objects") or met.get(oid, False):
            chosen_objects.append(np.array([oid]))
            chosen_triangles.append(whole_object)
            continue
        if oid in met:
            continue
        mesh = int(snap.mesh_of[oid])
        vertices = pack.mesh_vertices(mesh)
        faces = pack.mesh_faces(mesh)
        local = planes_to_object_space(planes, snap.transform[oid])
        if mode == "objects":
            taken = all_triangles_within_frustum if window else any_triangle_in_frustum
            if taken(vertices, faces, local):
                chosen_objects.append(np.array([oid]))
                chosen_triangles.append(whole_object)
        else:
            if box == INSIDE:
                hit = np.ones(faces.shape[0], bool)
            else:
                hit = (triangles_within_frustum if window else triangles_in_frustum)(vertices, faces, local)
            found = np.flatnonzero(hit)
            chosen_objects.append(np.full(found.shape[0], oid))
            chosen_triangles.append(found)
    return _selection(chosen_objects, chosen_triangles)


def in_lasso(snap: Snapshot, seen: list, lasso, mode: str, window: bool) -> Selection:
    """``Scene.select`` of a lasso among the objects ``seen`` in its
    bounding frustum (:func:`objects_in_frustum`)."""
    chosen_objects = []
    chosen_triangles = []
    pack = snap.pack
    for oid, box in seen:
        kind = int(snap.kind[oid])
        if kind != MESH:
            if _shape_in_lasso(lasso, kind, snap.shape_data[int(snap.shape_start[oid]):], snap.transform[oid],
                               snap.bounds[oid], window):
                chosen_objects.append(np.array([oid]))
                chosen_triangles.append(np.array([-1]))
            continue
        mesh = int(snap.mesh_of[oid])
        hit = lasso.faces(pack.mesh_vertices(mesh), pack.mesh_faces(mesh), snap.transform[oid], window)
        if mode == "objects":
            if hit.all() if window else hit.any():
                chosen_objects.append(np.array([oid]))
                chosen_triangles.append(np.array([-1]))
        else:
            found = np.flatnonzero(hit)
            chosen_objects.append(np.full(found.shape[0], oid))
            chosen_triangles.append(found)
    return _selection(chosen_objects, chosen_triangles)


def visible(object_hit: np.ndarray, triangle_hit: np.ndarray, mode: str) -> Selection:
    """``Scene.select_visible`` of the closest hits of its pixels' rays."""
    seen = object_hit >= 0
    if mode == "objects":
        chosen = np.unique(object_hit[seen])
        return Selection(chosen, np.full(chosen.shape[0], -1, np.int64))
    pairs = np.unique(np.stack([object_hit[seen], triangle_hit[seen]], axis=1), axis=0)
    return Selection(pairs[:, 0].copy(), pairs[:, 1].copy())


def _selection(chosen_objects: list, chosen_triangles: list) -> Selection:
    """A :class:`Selection` of the per-object arrays a selection gathered."""
    if not chosen_objects:
        return Selection(np.zeros(0, np.int64), np.zeros(0, np.int64))
    return Selection(np.concatenate(chosen_objects).astype(np.int64),
                     np.concatenate(chosen_triangles).astype(np.int64))


def _small_meshes_meeting(snap: Snapshot, seen: list, planes: np.ndarray, window: bool) -> dict:
    """``{object id: bool}``: whether each mesh object of ``seen`` whose box
    crosses the region, and whose mesh has at most ``BLOCK`` faces, has a
    face in it (every face, for a ``window``), from one kernel call over
    all of them. Larger meshes are left out: the per-mesh tests split
    their faces between the threads."""
    oids = np.array([oid for oid, box in seen if box != INSIDE], np.int64)
    if not oids.size:
        return {}
    oids = oids[snap.kind[oids] == MESH]
    meshes = snap.mesh_of[oids].astype(np.int64)
    pack = snap.pack
    small = np.diff(pack.face_start)[meshes] <= BLOCK
    oids, meshes = oids[small], meshes[small]
    if not oids.size:
        return {}
    local = planes_to_object_space(planes, snap.transform[oids])
    met = np.empty(oids.size, np.bool_)
    objects_meet_frustum(pack.vertices, pack.vertex_start, pack.faces, pack.face_start, meshes,
                         np.ascontiguousarray(local), window, met)
    return dict(zip(oids.tolist(), met.tolist()))


def _shape_within(kind: int, data: np.ndarray, transform: np.ndarray, planes: np.ndarray) -> bool:
    """Whether a shape lies entirely inside a convex region (exact).

    Parameters
    ----------
    kind : int
        ``SPHERE``, ``BOX``, ``QUAD`` or ``POLYGON``.
    data : (K,) float64
        ``shape_data`` from the shape's start on (see :mod:`bvh.shapes`);
        what follows the shape's own parameters is ignored.
    transform : (4, 4) float64
        Object to world.
    planes : (P, 4) float64
        World half-spaces ``n . x + d >= 0``.

    Notes
    -----
    The test runs in the shape's own space, where the planes have unit
    normals (:func:`bvh.queries.frustum.planes_to_object_space`), so each row's value
    is a signed distance: a sphere of radius ``r`` about the origin (an
    ellipsoid in the world) is inside when every plane's ``d >= r``; a box or
    a quad when all its corners are; a polygon when all its vertices are, as
    the pick sees them (the outline projected onto the polygon's plane).
    """
    local = planes_to_object_space(planes, transform)
    if kind == SPHERE:
        return bool((local[:, 3] >= data[0]).all())
    if kind in (BOX, QUAD):
        # Half sizes: three for a box, two for a quad, which lies in z = 0.
        half = np.zeros(3)
        sides = 3 if kind == BOX else 2
        half[:sides] = data[:sides]
        return bool(boxes_in_frustum(np.stack([-half, half]), local)[0] == INSIDE)
    point, normal, drop, count = data[:3], data[3:6], int(data[6]), int(data[7])
    keep = [axis for axis in range(3) if axis != drop]
    vertices = np.empty((count, 3))
    vertices[:, keep[0]] = data[8:8 + count]
    vertices[:, keep[1]] = data[8 + count:8 + 2 * count]
    # On the plane through point with that normal: the coordinate the crossings test drops.
    vertices[:, drop] = point[drop] - (normal[keep[0]] * (vertices[:, keep[0]] - point[keep[0]])
                                       + normal[keep[1]] * (vertices[:, keep[1]] - point[keep[1]])) / normal[drop]
    # A fan over the outline uses every vertex: within the region exactly when all vertices are.
    fan = np.stack([np.zeros(count - 2, np.int64), np.arange(1, count - 1), np.arange(2, count)], axis=1)
    return all_triangles_within_frustum(vertices, fan, local)


def _box_corners(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(..., 8, 3) corners of boxes ``lo, hi (..., 3)``."""
    pick = np.array([[(c >> k) & 1 for k in range(3)] for c in range(8)], bool)
    return np.where(pick, hi[..., None, :], lo[..., None, :])


def _shape_in_lasso(lasso, kind: int, data: np.ndarray, transform: np.ndarray, bounds: np.ndarray,
                    window: bool) -> bool:
    """Whether a shape meets (or, with ``window``, lies within) a lasso's region.

    Boxes and quads are their surfaces' triangles in their own space, exact;
    a solid box also meets the region when it holds the whole region (then
    it holds the near-plane point under the outline's first point). Spheres
    and polygons are judged by their world boxes ``bounds (2, 3)``: a
    crossing when the box meets the region (conservative), a window when the
    box lies within it (conservative the other way).
    """
    if kind == QUAD:
        half = np.array([data[0], data[1], 0.0])
        corners = np.array([[-half[0], -half[1], 0.0], [half[0], -half[1], 0.0], [-half[0], half[1], 0.0],
                            [half[0], half[1], 0.0]])
        hit = lasso.faces(corners, np.array([[0, 1, 2], [1, 3, 2]], np.int64), transform, window)
        return bool(hit.all() if window else hit.any())
    if kind == BOX:
        low, high, matrix = -np.asarray(data[:3], np.float64), np.asarray(data[:3], np.float64), transform
    else:
        low, high, matrix = bounds[0], bounds[1], None
    hit = lasso.faces(_box_corners(low, high), _BOX_FACES, matrix, window)
    if window:
        return bool(hit.all())
    if hit.any():
        return True
    point = lasso.near_point()
    if matrix is not None:
        point = np.linalg.solve(matrix[:3, :3], point - matrix[:3, 3])
    return bool(((low <= point) & (point <= high)).all())
