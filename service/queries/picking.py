"""Pick results as the API returns them, built from ``bvh.SceneHits``.

Everything here is numpy over all rays at once; only the final assembly of
per-ray JSON objects loops in Python. The binary batch answer is one numpy
structured array written straight into the response body.
"""

import numpy as np

from ..store.store import SceneView, StoredScene

#: One binary batch answer record: 32 bytes, little-endian.
RECORD = np.dtype([("t", "<f4"), ("object", "<i4"), ("triangle", "<i4"), ("u", "<f4"), ("v", "<f4"),
                   ("normal", "<f4", (3,))])
assert RECORD.itemsize == 32

#: The binary batch record with what was hit (``?records=primitive``): 44 bytes,
#: :data:`RECORD` then int32 ``primitive`` (0 triangle, 1 shape, 2 segment, 3
#: point, -1 miss), int32 ``index`` (the segment's or the point's index, else
#: -1) and float32 ``s`` (the segment's parameter at the hit, else NaN).
PRIMITIVE_RECORD = np.dtype(RECORD.descr + [("primitive", "<i4"), ("index", "<i4"), ("s", "<f4")])
assert PRIMITIVE_RECORD.itemsize == 44

#: The binary batch answers' layouts by the name a request gives (``records``).
RECORD_LAYOUTS = {"surface": RECORD, "primitive": PRIMITIVE_RECORD}

#: ``SceneHits.primitive``'s names, as answers give them.
PRIMITIVES = ("triangle", "shape", "segment", "point")

#: One binary batch ray: ox, oy, oz, dx, dy, dz as little-endian float32.
RAY_BYTES = 6 * 4

#: The edges of a triangle as corner pairs, in face order.
EDGES = np.array([[0, 1], [1, 2], [2, 0]])
EDGE_CORNERS = ((0, 1), (1, 2), (2, 0))


def _world_transforms(view: SceneView, objects: np.ndarray) -> np.ndarray:
    """(N, 4, 4) transforms of the given object ids (each looked up once)."""
    unique, inverse = np.unique(objects, return_inverse=True)
    table = np.stack([view.objects[int(oid)].transform for oid in unique.tolist()])
    return table[inverse]


def snapping(stored: StoredScene, view: SceneView, objects: np.ndarray, meshes: np.ndarray,
             triangles: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The hit triangle's vertex and edge nearest each hit point, in world space.

    Parameters
    ----------
    objects, meshes, triangles : (N,) int
        Hits on mesh triangles only (``mesh >= 0``).
    points : (N, 3) float64
        World hit points.

    Returns
    -------
    vertex : (N,) int64
        Index into the mesh's vertices.
    vertex_point : (N, 3) float64
        That vertex in world space.
    edge : (N, 2) int64
        Vertex indices of the nearest edge, in the face's order.
    """
    n = objects.shape[0]
    corners = np.empty((n, 3), np.int64)
    local = np.empty((n, 3, 3))
    for mesh in np.unique(meshes).tolist():
        rows = np.flatnonzero(meshes == mesh)
        vertices, faces = stored.mesh_arrays[mesh]
        corners[rows] = faces[triangles[rows]]
        local[rows] = vertices[corners[rows]]
    with np.errstate(all="ignore"):
        # A scene scaled near the float64 range overflows here; inf and NaN
        # then go out as null, which is the honest answer.
        return _nearest(corners, local, _world_transforms(view, objects), points)


def _nearest(corners, local, transforms, points):
    """:func:`snapping` once the corners (N, 3), their local points (N, 3, 3) and
    the transforms (N, 4, 4) are gathered."""
    n = corners.shape[0]
    world = np.einsum("nij,nkj->nki", transforms[:, :3, :3], local) + transforms[:, None, :3, 3]
    offsets = world - points[:, None, :]
    nearest = np.argmin(np.einsum("nki,nki->nk", offsets, offsets), axis=1)
    rows = np.arange(n)
    # Distance from the point to each edge segment, by projection clamped to the segment.
    start = world[:, EDGES[:, 0]]
    along = world[:, EDGES[:, 1]] - start
    length2 = np.einsum("nki,nki->nk", along, along)
    s = np.einsum("nki,nki->nk", points[:, None, :] - start, along) / np.where(length2 > 0, length2, 1.0)
    closest = start + np.clip(s, 0.0, 1.0)[..., None] * along
    gap = closest - points[:, None, :]
    edge = np.argmin(np.einsum("nki,nki->nk", gap, gap), axis=1)
    return corners[rows, nearest], world[rows, nearest], corners[rows[:, None], EDGES[edge]]


def _nearest_on_triangle(world: list, point: list) -> tuple[int, int]:
    """Corner (0-2) and edge (0-2, as in :data:`EDGES`) of a world triangle nearest ``point``."""
    # Products, not ** 2: a float power raises OverflowError on a huge scene,
    # a product becomes inf.
    px, py, pz = point
    (ax, ay, az), (bx, by, bz), (cx, cy, cz) = world
    a2 = (ax - px) * (ax - px) + (ay - py) * (ay - py) + (az - pz) * (az - pz)
    b2 = (bx - px) * (bx - px) + (by - py) * (by - py) + (bz - pz) * (bz - pz)
    c2 = (cx - px) * (cx - px) + (cy - py) * (cy - py) + (cz - pz) * (cz - pz)
    corner = (0 if a2 <= c2 else 2) if a2 <= b2 else (1 if b2 <= c2 else 2)
    best_edge = 0
    best = None
    for edge, ((sx, sy, sz), (ex, ey, ez)) in enumerate(((world[0], world[1]), (world[1], world[2]),
                                                         (world[2], world[0]))):
        ex -= sx
        ey -= sy
        ez -= sz
        length2 = ex * ex + ey * ey + ez * ez
        s = ((px - sx) * ex + (py - sy) * ey + (pz - sz) * ez) / length2 if length2 > 0.0 else 0.0
        s = 0.0 if s < 0.0 else (1.0 if s > 1.0 else s)
        gx, gy, gz = sx + s * ex - px, sy + s * ey - py, sz + s * ez - pz
        gap = gx * gx + gy * gy + gz * gz
        if best is None or gap < best:
            best, best_edge = gap, edge
    return corner, best_edge


def single_result(stored: StoredScene, view: SceneView, hits, speed: float) -> dict:
    """The result of a one-ray ``hits``: what :func:`results` gives, in plain Python.

    For one ray, numpy's per-call cost dominates; this is about ten times
    faster, which matters at mouse-hover rates.
    """
    oid = hits.object.item(0)
    if oid < 0:
        return {"hit": False}
    info = view.objects.get(oid)
    mesh = hits.mesh.item(0)
    t = hits.t.item(0)
    point = hits.point[0].tolist()
    uv = hits.uv[0].tolist()
    result = {
        "hit": True,
        "t": t,
        "distance": t * speed,
        "point": point,
        "object": {"id": oid, "name": info.name if info is not None else None},
        "mesh": None,
        "triangle": None,
        "barycentric": None,
        "normal": hits.normal[0].tolist(),
        "shading_normal": hits.shading_normal[0].tolist(),
        "uv": None if uv[0] != uv[0] else uv,
        "front_face": hits.front_face.item(0),
        "nearest_vertex": None,
        "nearest_edge": None,
    }
    primitive = hits.primitive.item(0)
    result["primitive"] = PRIMITIVES[primitive]
    result["ray_distance"] = hits.distance.item(0)
    if primitive >= 2:
        _line_point_fields(result, primitive, hits.set.item(0), hits.segment.item(0), hits.s.item(0),
                           hits.point_index.item(0))
    if mesh < 0:
        return result
    triangle = hits.triangle.item(0)
    u = hits.u.item(0)
    v = hits.v.item(0)
    vertices, faces = view.mesh_arrays[mesh]
    corners = faces[triangle].tolist()
    (r00, r01, r02, r03), (r10, r11, r12, r13), (r20, r21, r22, r23), _ = view.objects.transform_rows(oid)
    world = []
    for corner in corners:
        x, y, z = vertices[corner].tolist()
        world.append([r00 * x + r01 * y + r02 * z + r03, r10 * x + r11 * y + r12 * z + r13,
                      r20 * x + r21 * y + r22 * z + r23])
    corner, edge = _nearest_on_triangle(world, point)
    a, b = EDGE_CORNERS[edge]
    result["mesh"] = mesh
    result["triangle"] = triangle
    result["barycentric"] = [1.0 - u - v, u, v]
    result["nearest_vertex"] = {"index": corners[corner], "point": world[corner]}
    result["nearest_edge"] = [corners[a], corners[b]]
    return result


def _line_point_fields(result: dict, primitive: int, set_id: int, segment: int, s: float, point: int) -> None:
    """A segment's or point's fields of a result: its set, the segment and ``s`` or the point index;
    no normal, which a segment or point does not have."""
    result["set"] = set_id
    if primitive == 2:
        result["segment"] = {"index": segment, "s": s}
    else:
        result["point_index"] = point
    result["normal"] = None
    result["shading_normal"] = None


def results(stored: StoredScene, view: SceneView, hits, speeds: np.ndarray) -> list[dict]:
    """One result object per ray of ``hits`` (a ``bvh.SceneHits``).

    ``speeds`` (N,) are the lengths of the directions, so ``distance = t * speed``.
    """
    n = hits.object.shape[0]
    hit_rows = np.flatnonzero(hits.object >= 0)
    out: list[dict] = [{"hit": False} for _ in range(n)]
    if hit_rows.size == 0:
        return out
    objects = hits.object[hit_rows]
    meshes = hits.mesh[hit_rows]
    triangles = hits.triangle[hit_rows]
    t = hits.t[hit_rows]
    points = hits.point[hit_rows]
    u = hits.u[hit_rows]
    v = hits.v[hit_rows]
    on_mesh = meshes >= 0
    vertex = np.full(hit_rows.size, -1, np.int64)
    vertex_point = np.zeros((hit_rows.size, 3))
    edge = np.zeros((hit_rows.size, 2), np.int64)
    if on_mesh.any():
        mesh_rows = np.flatnonzero(on_mesh)
        vertex[mesh_rows], vertex_point[mesh_rows], edge[mesh_rows] = snapping(
            stored, view, objects[mesh_rows], meshes[mesh_rows], triangles[mesh_rows], points[mesh_rows])
    uv = hits.uv[hit_rows]
    has_uv = ~np.isnan(uv).any(axis=1)
    columns = zip(hit_rows.tolist(), objects.tolist(), meshes.tolist(), triangles.tolist(), t.tolist(),
                  (t * speeds[hit_rows]).tolist(), points.tolist(), u.tolist(), v.tolist(),
                  hits.normal[hit_rows].tolist(), hits.shading_normal[hit_rows].tolist(), uv.tolist(),
                  has_uv.tolist(), hits.front_face[hit_rows].tolist(), vertex.tolist(), vertex_point.tolist(),
                  edge.tolist())
    names = view.objects
    for (row, oid, mesh, triangle, t_hit, distance, point, u_hit, v_hit, normal, shading, uv_hit, uv_known,
         front, vertex_index, vertex_at, edge_pair) in columns:
        info = names.get(oid)
        is_mesh = mesh >= 0
        out[row] = {
            "hit": True,
            "t": t_hit,
            "distance": distance,
            "point": point,
            "object": {"id": oid, "name": info.name if info is not None else None},
            "mesh": mesh if is_mesh else None,
            "triangle": triangle if is_mesh else None,
            "barycentric": [1.0 - u_hit - v_hit, u_hit, v_hit] if is_mesh else None,
            "normal": normal,
            "shading_normal": shading,
            "uv": uv_hit if uv_known else None,
            "front_face": front,
            "nearest_vertex": {"index": vertex_index, "point": vertex_at} if is_mesh else None,
            "nearest_edge": edge_pair if is_mesh else None,
        }
    primitive = hits.primitive[hit_rows].tolist()
    for row, kind, gap, set_id, segment, s, point in zip(
            hit_rows.tolist(), primitive, hits.distance[hit_rows].tolist(), hits.set[hit_rows].tolist(),
            hits.segment[hit_rows].tolist(), hits.s[hit_rows].tolist(), hits.point_index[hit_rows].tolist()):
        result = out[row]
        result["primitive"] = PRIMITIVES[kind]
        result["ray_distance"] = gap
        if kind >= 2:
            _line_point_fields(result, kind, set_id, segment, s, point)
    return out


def all_hit_results(stored: StoredScene, view: SceneView, every, speed: float) -> list[dict]:
    """Every crossing of one ray (a ``bvh.SceneAllHits``), sorted by t.

    Each crossing is a result object as :func:`results` makes for a closest
    hit: point, normals, texture coordinates and side come from
    ``intersect_all``, snapping to the nearest vertex and edge is added here.
    ``speed`` is the length of the ray's direction, so ``distance = t * speed``.
    """
    count = every.t.shape[0]
    if count == 0:
        return []
    on_mesh = every.mesh >= 0
    vertex = np.full(count, -1, np.int64)
    vertex_point = np.zeros((count, 3))
    edge = np.zeros((count, 2), np.int64)
    if on_mesh.any():
        rows = np.flatnonzero(on_mesh)
        vertex[rows], vertex_point[rows], edge[rows] = snapping(
            stored, view, every.object[rows], every.mesh[rows], every.triangle[rows], every.point[rows])
    has_uv = ~np.isnan(every.uv).any(axis=1)
    out = []
    for (oid, mesh, triangle, t_hit, point, u_hit, v_hit, normal, shading, uv_hit, uv_known, front_face,
         vertex_index, vertex_at, edge_pair) in zip(
            every.object.tolist(), every.mesh.tolist(), every.triangle.tolist(), every.t.tolist(),
            every.point.tolist(), every.u.tolist(), every.v.tolist(), every.normal.tolist(),
            every.shading_normal.tolist(), every.uv.tolist(), has_uv.tolist(), every.front_face.tolist(),
            vertex.tolist(), vertex_point.tolist(), edge.tolist()):
        info = view.objects.get(oid)
        is_mesh = mesh >= 0
        out.append({
            "hit": True,
            "t": t_hit,
            "distance": t_hit * speed,
            "point": point,
            "object": {"id": oid, "name": info.name if info is not None else None},
            "mesh": mesh if is_mesh else None,
            "triangle": triangle if is_mesh else None,
            "barycentric": [1.0 - u_hit - v_hit, u_hit, v_hit] if is_mesh else None,
            "normal": normal,
            "shading_normal": shading,
            "uv": uv_hit if uv_known else None,
            "front_face": front_face,
            "nearest_vertex": {"index": vertex_index, "point": vertex_at} if is_mesh else None,
            "nearest_edge": edge_pair if is_mesh else None,
            # Every-hit picks cross surfaces only (lines and points are a closest pick's).
            "primitive": PRIMITIVES[0] if is_mesh else PRIMITIVES[1],
            "ray_distance": 0.0,
        })
    return out


def batch_columns(hits) -> dict:
    """The JSON batch answer: one list per field, null (or -1) on a miss."""
    return {
        "hit": hits.object >= 0,
        "t": hits.t,
        "object": hits.object,
        "triangle": hits.triangle,
        "u": hits.u,
        "v": hits.v,
        "point": hits.point,
        "normal": hits.normal,
        "primitive": hits.primitive,
        "segment": hits.segment,
        "s": hits.s,
        "point_index": hits.point_index,
    }


def batch_records(hits, layout: np.dtype = RECORD) -> bytes:
    """The binary batch answer: N records of ``layout`` (:data:`RECORD_LAYOUTS`)."""
    records = np.empty(hits.object.shape[0], layout)
    records["t"] = hits.t
    records["object"] = hits.object
    records["triangle"] = hits.triangle
    records["u"] = hits.u
    records["v"] = hits.v
    records["normal"] = hits.normal
    if layout is PRIMITIVE_RECORD:
        records["primitive"] = hits.primitive
        records["index"] = np.where(hits.segment >= 0, hits.segment, hits.point_index)
        records["s"] = hits.s
    return records.tobytes()
