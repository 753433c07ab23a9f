"""What a pick does, for ``POST /scenes/{id}/pick``, ``/pick/batch``, ``/pick/camera`` and the
live channel: the request's options as ``Scene.intersect``'s keyword arguments, the query, and
its answer as the API returns it, built from ``bvh.SceneHits``.

Everything here is numpy over all rays at once; only the final assembly of
per-ray JSON objects loops in Python. The binary batch answer is one numpy
structured array written straight into the response body.
"""

import math

import numpy as np
import orjson

from bvh.camera import Camera

from ..api import limits
from ..api.errors import ClientError, client_errors
from ..api.responses import JSON_OPTIONS
from ..api.schemas import MatrixCamera, PickOptions
from ..settings import Settings
from ..store.store import SceneView, StoredScene
from .results import columns, packed

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
    found = hit_results(stored, view, hits.object[hit_rows], hits.mesh[hit_rows], hits.triangle[hit_rows],
                        hits.t[hit_rows], hits.t[hit_rows] * speeds[hit_rows], hits.point[hit_rows],
                        hits.u[hit_rows], hits.v[hit_rows], hits.normal[hit_rows], hits.shading_normal[hit_rows],
                        hits.uv[hit_rows], hits.front_face[hit_rows])
    primitive = hits.primitive[hit_rows].tolist()
    for row, result, kind, gap, set_id, segment, s, point in zip(
            hit_rows.tolist(), found, primitive, hits.distance[hit_rows].tolist(), hits.set[hit_rows].tolist(),
            hits.segment[hit_rows].tolist(), hits.s[hit_rows].tolist(), hits.point_index[hit_rows].tolist()):
        out[row] = result
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
    if every.t.shape[0] == 0:
        return []
    found = hit_results(stored, view, every.object, every.mesh, every.triangle, every.t, every.t * speed,
                        every.point, every.u, every.v, every.normal, every.shading_normal, every.uv,
                        every.front_face)
    for result in found:
        # Every-hit picks cross surfaces only (lines and points are a closest pick's).
        result["primitive"] = PRIMITIVES[0] if result["mesh"] is not None else PRIMITIVES[1]
        result["ray_distance"] = 0.0
    return found


def hit_results(stored: StoredScene, view: SceneView, objects, meshes, triangles, t, distances, points, u, v,
                normals, shading_normals, uv, front_face) -> list[dict]:
    """The result objects of hits (every array has a row per hit, none a miss), without
    ``primitive`` and ``ray_distance``: the surface, its object, and on a mesh the barycentrics
    and the nearest vertex and edge (:func:`snapping`)."""
    count = objects.shape[0]
    vertex = np.full(count, -1, np.int64)
    vertex_point = np.zeros((count, 3))
    edge = np.zeros((count, 2), np.int64)
    on_mesh = meshes >= 0
    if on_mesh.any():
        rows = np.flatnonzero(on_mesh)
        vertex[rows], vertex_point[rows], edge[rows] = snapping(stored, view, objects[rows], meshes[rows],
                                                                triangles[rows], points[rows])
    has_uv = ~np.isnan(uv).any(axis=1)
    names = view.objects
    out = []
    for (oid, mesh, triangle, t_hit, distance, point, u_hit, v_hit, normal, shading, uv_hit, uv_known, front,
         vertex_index, vertex_at, edge_pair) in zip(
            objects.tolist(), meshes.tolist(), triangles.tolist(), t.tolist(), distances.tolist(), points.tolist(),
            u.tolist(), v.tolist(), normals.tolist(), shading_normals.tolist(), uv.tolist(), has_uv.tolist(),
            front_face.tolist(), vertex.tolist(), vertex_point.tolist(), edge.tolist()):
        info = names.get(oid)
        is_mesh = mesh >= 0
        out.append({
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
        })
    return out


#: The columns of a JSON batch answer, in order.
BATCH_COLUMNS = ("hit", "t", "object", "triangle", "u", "v", "point", "normal", "primitive", "segment", "s",
                 "point_index")


def batch_columns(hits) -> dict:
    """The JSON batch answer: one list per field, null (or -1) on a miss."""
    return columns(hits, BATCH_COLUMNS, hit=hits.object >= 0)


def batch_records(hits, layout: np.dtype = RECORD) -> bytes:
    """The binary batch answer: N records of ``layout`` (:data:`RECORD_LAYOUTS`)."""
    if layout is PRIMITIVE_RECORD:
        return packed(layout, hits, index=np.where(hits.segment >= 0, hits.segment, hits.point_index))
    return packed(layout, hits)


# ------------------------------------------------------------------ options

#: Every mask bit: the mask of a request that gives none.
ALL_BITS = 0xFFFFFFFF

#: ``Scene.intersect``'s tolerances for line and point objects, which only a closest-hit pick takes.
TOLERANCES = ("line_tolerance", "point_tolerance", "line_slope", "point_slope")


def window(options: PickOptions) -> dict:
    """Keyword arguments of ``Scene.intersect`` from a request's options."""
    return query_options(options.tmin, options.tmax, options.mask, options.objects, options.exclude,
                         options.alpha_test, options.alpha_cutoff, options.line_tolerance, options.point_tolerance)


def query_options(tmin: float, tmax: float | None, mask: int | None, objects, exclude, alpha_test: bool,
                  alpha_cutoff: float, line_tolerance: float, point_tolerance: float) -> dict:
    """Keyword arguments of ``Scene.intersect`` from a pick's options, however the request gave them
    (a JSON body, a binary batch's query string, the live channel's ``batch_options``)."""
    found = {**query_window(tmin, tmax, mask, objects, exclude), **alpha_options(alpha_test, alpha_cutoff)}
    if line_tolerance:
        found["line_tolerance"] = line_tolerance
    if point_tolerance:
        found["point_tolerance"] = point_tolerance
    return found


def surface_window(options: dict) -> dict:
    """``options`` without the line and point tolerances, for queries that skip lines and points."""
    return {name: value for name, value in options.items() if name not in TOLERANCES}


def alpha_options(alpha_test: bool, alpha_cutoff: float) -> dict:
    """The alpha-test keyword arguments of ``Scene.intersect`` (``bvh.queries.alpha``)."""
    return {"alpha_test": alpha_test, "alpha_cutoff": alpha_cutoff}


def query_window(tmin: float, tmax: float | None, mask: int | None, objects, exclude) -> dict:
    """Keyword arguments of ``Scene.intersect``: null ``tmax`` is unbounded, null ``mask`` all bits."""
    if tmax is not None and tmax < tmin:
        raise ClientError(422, f"tmax ({tmax}) must not be less than tmin ({tmin})")
    return {"tmin": tmin, "tmax": math.inf if tmax is None else tmax, "mask": ALL_BITS if mask is None else mask,
            "objects": objects, "exclude": exclude}


#: ``query_window`` of a pick that sets no option.
DEFAULT_WINDOW = query_window(0.0, None, None, None, None)


# ------------------------------------------------------------------ queries

def pick_one(stored, settings: Settings, origin_list: list, direction_list: list, options: dict = DEFAULT_WINDOW,
             cull_backfaces: bool = False, all_hits: bool = False) -> dict:
    """The answer of a one-ray pick, as ``POST /scenes/{id}/pick`` sends it (also the live channel's).

    Parameters
    ----------
    stored : StoredScene
    settings : Settings
        For the answer limit of an ``all_hits`` pick.
    origin_list, direction_list : list of 3 float
        Validated: finite, the direction not zero.
    options : dict
        :func:`query_window`'s keyword arguments.

    Raises
    ------
    ClientError
        422 or 404 for what the scene refuses (unknown object filters, origins out of range), 413
        for an ``all_hits`` answer over ``PICK_MAX_RESPONSE_MB``.
    """
    origin = np.array(origin_list, np.float64)
    direction = np.array(direction_list, np.float64)
    if all_hits:
        with client_errors():
            every, view = stored.consistent(
                lambda scene: scene.intersect_all(origin, direction, **surface_window(options)))
        # Only the query tells how many surfaces the ray crosses: checked before the answer is built.
        crossed = every.t.shape[0]
        limits.check(limits.all_hits(crossed, view), settings, f"an all_hits pick crossing {crossed} surfaces",
                     ": narrow it with tmin and tmax, mask, objects or exclude")
        return {"hits": all_hit_results(stored, view, every, math.hypot(*direction_list))}
    with client_errors():
        hits, view = stored.consistent(
            lambda scene: scene.intersect(origin, direction, cull_backfaces=cull_backfaces, **options))
    return single_result(stored, view, hits, math.hypot(*direction_list))


def trace(stored, origins: np.ndarray, directions: np.ndarray, cull_backfaces: bool, options: dict):
    """``(bvh.SceneHits, SceneView)`` of rays ``origins``, ``directions`` (N, 3); the library's
    refusals as 422 and 404."""
    with client_errors():
        return stored.consistent(lambda scene: scene.intersect(origins, directions, cull_backfaces=cull_backfaces,
                                                               **options))


def binary_batch(stored, data: bytes, cull_backfaces: bool, options: dict, layout: np.dtype = RECORD) -> bytes:
    """The records of a binary batch (``data``: whole rays of ``RAY_BYTES``, checked by the caller),
    each of ``layout`` (:data:`RECORD_LAYOUTS`)."""
    rays = np.frombuffer(data, "<f4").reshape(-1, 6).astype(np.float64)
    hits, _ = trace(stored, rays[:, :3], rays[:, 3:], cull_backfaces, options)
    return batch_records(hits, layout)


def json_batch(stored, body) -> bytes:
    """The JSON answer of a ``BatchPickRequest``: :func:`batch_columns`."""
    if not body.origins:
        return orjson.dumps({name: [] for name in BATCH_COLUMNS})
    hits, _ = trace(stored, np.array(body.origins, np.float64), np.array(body.directions, np.float64),
                    body.cull_backfaces, window(body))
    return orjson.dumps(batch_columns(hits), option=JSON_OPTIONS)


def make_camera(body) -> Camera:
    """A ``bvh.camera.Camera`` from a request's pinhole fields or matrices; 422 when invalid."""
    with client_errors():
        if isinstance(body, MatrixCamera):
            return Camera.from_matrices(np.array(body.view, np.float64), np.array(body.projection, np.float64),
                                        body.width, body.height)
        return Camera.pinhole(body.position, body.target, body.up, body.fov_y_deg, body.width, body.height)


def check_pixels_inside(pixels: np.ndarray, width: int, height: int) -> None:
    """422 naming the first of ``pixels (N, 2)`` outside the image ``[0, width] x [0, height]``."""
    outside = (pixels < 0.0).any(axis=1) | (pixels[:, 0] > width) | (pixels[:, 1] > height)
    if outside.any():
        row = int(np.flatnonzero(outside)[0])
        x, y = pixels[row].tolist()
        raise ClientError(422, f"pixels[{row}] = [{x!r}, {y!r}] lies outside the {width}x{height} image: "
                               f"x must be within [0, {width}] and y within [0, {height}]")


def camera_pick(stored, body) -> bytes:
    """The JSON answer of a ``CameraPickRequest``: a result per pixel, each with its world ray."""
    camera = make_camera(body)
    pixels = np.array(body.pixels, np.float64)
    check_pixels_inside(pixels, camera.width, camera.height)
    options = window(body)
    with client_errors():
        origins, directions = camera.rays(pixels)
        # Pixel tolerances: a cone (perspective) or a width (orthographic) per ray, added to the world ones.
        for kind, pixels_wide in (("line", body.line_pixels), ("point", body.point_pixels)):
            if pixels_wide:
                world, slope = camera.pixel_tolerance(pixels, pixels_wide)
                options[f"{kind}_tolerance"] = options.get(f"{kind}_tolerance", 0.0) + world
                options[f"{kind}_slope"] = slope
    hits, view = trace(stored, origins, directions, body.cull_backfaces, options)
    picked = results(stored, view, hits, np.ones(origins.shape[0]))
    for result, origin, direction in zip(picked, origins.tolist(), directions.tolist()):
        result["ray"] = {"origin": origin, "direction": direction}
    return orjson.dumps({"results": picked}, option=JSON_OPTIONS)
