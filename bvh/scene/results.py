"""A scene's query answers from its kernels' raw outputs: ids mapped back to
meshes and faces, misses filled in, normals taken to the world, shading
normals and texture coordinates interpolated (``bvh.hits`` holds the result
classes)."""

import numpy as np

from ..hits import SceneAllHits, SceneClosestPoints, SceneHits, SceneSphereHits, dot_rows, face_normals, unit_rows
from ..queries import lines_points
from ..queries.interpolation import interpolate
from ..shapes import BOX, POLYGON, QUAD, SPHERE
from .snapshot import Snapshot


def missed_hits(n: int) -> SceneHits:
    """The :class:`SceneHits` of ``n`` rays that hit nothing."""
    none = np.full(n, -1, np.int64)
    normal = np.full((n, 3), np.nan)
    return SceneHits(none, none.copy(), none.copy(), np.full(n, np.inf), np.full(n, np.nan), np.full(n, np.nan),
                     np.full((n, 3), np.nan), normal, normal.copy(), np.full((n, 2), np.nan), np.zeros(n, np.bool_),
                     *surface_kinds(none, none))


def surface_kinds(objects: np.ndarray, meshes: np.ndarray) -> tuple:
    """``primitive, set, segment, s, point_index, distance`` of surface hits
    and misses, as :class:`SceneHits` has them."""
    n = objects.shape[0]
    missed = objects < 0
    # TRIANGLE is 0 and SHAPE 1: a hit's kind is whether it has no mesh (fewer
    # numpy calls than nested wheres, which showed in a one-ray pick's time).
    primitive = (meshes < 0).view(np.int8)
    primitive[missed] = lines_points.MISS
    none = np.full((3, n), -1, np.int64)
    return (primitive, none[0], none[1], np.full(n, np.nan), none[2], np.where(missed, np.nan, 0.0))


def surface_hits(snap: Snapshot, out: tuple) -> SceneHits:
    """:class:`SceneHits` of the closest-hit kernel's outputs ``out``
    (:func:`bvh.scene.runner.hit_outputs`)."""
    objects, meshes, triangles, t, u, v, point, normal, front_face = out
    shading_normal, uv = interpolated(snap, objects, meshes, triangles, u, v, normal)
    return SceneHits(objects, meshes, triangles, t, u, v, point, normal, shading_normal, uv, front_face,
                     *surface_kinds(objects, meshes))


def picked_hits(snap: Snapshot, out: tuple) -> SceneHits:
    """:class:`SceneHits` of the line and point pick kernel's outputs ``out``
    (:func:`bvh.scene.runner.pick_outputs`)."""
    objects, meshes, triangles, t, u, v, point, normal, front_face, *kinds = out
    shading_normal, uv = interpolated(snap, objects, meshes, triangles, u, v, normal)
    return SceneHits(objects, meshes, triangles, t, u, v, point, normal, shading_normal, uv, front_face, *kinds)


def interpolated(snap: Snapshot, objects, meshes, triangles, u, v, normal) -> tuple[np.ndarray, np.ndarray]:
    """``(shading_normal (N, 3), uv (N, 2))`` of mesh hits, by barycentrics
    (:func:`bvh.queries.interpolation.interpolate`)."""
    if not snap.interpolates:
        # empty and fill: np.full costs four times as much for a click's one row.
        uv = np.empty((objects.shape[0], 2))
        uv.fill(np.nan)
        return normal.copy(), uv
    return interpolate(snap.pack, snap.inverse, objects, meshes, triangles, u, v, normal)


def closest_points(snap: Snapshot, out: tuple) -> SceneClosestPoints:
    """:class:`SceneClosestPoints` of the kernel's outputs ``out``
    (:func:`bvh.scene.runner.closest_outputs`)."""
    objects, rows, d2, u, v, nearest, normal = out
    n = objects.shape[0]
    found = objects >= 0
    on_mesh = found & (rows >= 0)
    mesh = np.full(n, -1, np.int64)
    triangle = np.full(n, -1, np.int64)
    mesh[on_mesh] = snap.mesh_of[objects[on_mesh]]
    packed = rows[on_mesh]
    triangle[on_mesh] = snap.arrays.face_index[packed]
    distance = np.where(found, np.sqrt(np.where(found, d2, 0.0)), np.inf)
    nearest[~found] = np.nan
    normal[~found] = np.nan
    u = np.where(on_mesh, u, np.nan)
    v = np.where(on_mesh, v, np.nan)
    if on_mesh.any():
        local = face_normals(snap.arrays.tris.reshape(-1, 9)[packed])
        linear_inv = snap.inverse[objects[on_mesh], :, :3]
        with np.errstate(invalid="ignore", divide="ignore"):
            normal[on_mesh] = unit_rows(np.einsum("nji,nj->ni", linear_inv, local))
    shading_normal, uv = interpolated(snap, objects, mesh, triangle, u, v, normal)
    return SceneClosestPoints(objects, mesh, triangle, nearest, distance, u, v, normal, shading_normal, uv)


def sphere_hits(snap: Snapshot, out: tuple) -> SceneSphereHits:
    """:class:`SceneSphereHits` of the kernel's outputs ``out``
    (:func:`bvh.scene.runner.sphere_outputs`)."""
    objects, rows, t, u, v, point, center, normal = out
    n = objects.shape[0]
    on_mesh = (objects >= 0) & (rows >= 0)
    mesh = np.full(n, -1, np.int64)
    triangle = np.full(n, -1, np.int64)
    mesh[on_mesh] = snap.mesh_of[objects[on_mesh]]
    triangle[on_mesh] = snap.arrays.face_index[rows[on_mesh]]
    return SceneSphereHits(objects, mesh, triangle, t, point, center, normal, u, v)


def no_crossings() -> SceneAllHits:
    """The :class:`SceneAllHits` of rays that cross nothing."""
    none = np.zeros(0, np.int64)
    return SceneAllHits(none, np.zeros(0), none, none, none, np.zeros(0), np.zeros(0), np.zeros((0, 3)),
                        np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 2)), np.zeros(0, np.bool_))


def crossings(snap: Snapshot, origins: np.ndarray, directions: np.ndarray, counts: np.ndarray, rows: np.ndarray,
              t: np.ndarray, u: np.ndarray, v: np.ndarray, objects: np.ndarray, keep: np.ndarray) -> SceneAllHits:
    """:class:`SceneAllHits` of the all-hits kernels' outputs: ``counts (N,)``
    crossings found per ray, and per crossing its packed triangle row (-1
    for a shape), ``t``, ``u``, ``v``, object, and whether it is kept (not
    a repeat at a shared edge)."""
    n = origins.shape[0]
    ray = np.repeat(np.arange(n, dtype=np.int64), counts)[keep]
    rows = rows[keep]
    objects = objects[keep].astype(np.int64)
    on_mesh = rows >= 0
    mesh = np.where(on_mesh, snap.mesh_of[objects], -1).astype(np.int64)
    triangle = np.full(rows.shape[0], -1, np.int64)
    triangle[on_mesh] = snap.pack.face_index[rows[on_mesh]]
    t = t[keep]
    u = u[keep]
    v = v[keep]
    u[on_mesh] = np.clip(u[on_mesh], 0.0, 1.0)
    v[on_mesh] = np.minimum(np.clip(v[on_mesh], 0.0, 1.0), 1.0 - u[on_mesh])
    # Point, normal and side of each hit, computed as the closest-hit
    # kernel computes them, so a ray's first crossing matches intersect;
    # shading normals and texture coordinates as intersect interpolates them.
    ray_origins = origins[ray]
    ray_directions = directions[ray]
    point = ray_origins + t[:, None] * ray_directions
    local_normal = np.empty((rows.shape[0], 3))
    local_normal[on_mesh] = face_normals(snap.pack.tris[rows[on_mesh]])
    on_shape = np.flatnonzero(~on_mesh)
    if on_shape.size:
        local_normal[on_shape] = _shape_normals(snap, objects[on_shape], ray_origins[on_shape],
                                                ray_directions[on_shape], t[on_shape])
    world_normal = _normals_to_world(snap.inverse[objects, :, :3], local_normal)
    normal = unit_rows(world_normal)
    front_face = dot_rows(world_normal, ray_directions) < 0.0
    shading_normal, uv = interpolated(snap, objects, mesh, triangle, u, v, normal)
    return SceneAllHits(ray, t, objects, mesh, triangle, u, v, point, normal, shading_normal, uv, front_face)


def _apply_linear(matrices: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """(H, 3) products ``matrices (H, 3, 3) @ vectors (H, 3)``, summed
    ``x + y + z`` in that order as the kernels sum them (``einsum`` or
    ``@`` may round otherwise)."""
    return (matrices[:, :, 0] * vectors[:, 0:1] + matrices[:, :, 1] * vectors[:, 1:2]
            + matrices[:, :, 2] * vectors[:, 2:3])


def _normals_to_world(linear_inverse: np.ndarray, local: np.ndarray) -> np.ndarray:
    """(H, 3) world normals (not unit) of object-space normals ``local (H, 3)``.

    Through the inverse transpose, i.e. the transpose of the linear part of
    the world-to-object map ``linear_inverse (H, 3, 3)``, which keeps outward
    outward under mirroring.
    """
    return _apply_linear(linear_inverse.transpose(0, 2, 1), local)


def _shape_normals(snap: Snapshot, objects: np.ndarray, origins: np.ndarray, directions: np.ndarray,
                   t: np.ndarray) -> np.ndarray:
    """(H, 3) outward object-space normals (not unit) of shape hits.

    Parameters
    ----------
    objects : (H,) int64
        Shape objects hit.
    origins, directions : (H, 3) float64
        The world rays.
    t : (H,) float64
        Where each ray meets its shape.

    Notes
    -----
    The all-hits kernel keeps no normal, so these are taken again from the
    object-space hit point, as :func:`bvh.shapes.shape_hit` takes them: a
    sphere's point itself, a box's face axis (the coordinate furthest out
    relative to its half size, which at an edge picks one of the two faces),
    +z for a quad, a polygon's plane normal.
    """
    inverse = snap.inverse[objects]
    # The ray in object space, as bvh.queries.scene_rays._object_ray maps it.
    local_origin = _apply_linear(inverse[:, :, :3], origins) + inverse[:, :, 3]
    local_direction = _apply_linear(inverse[:, :, :3], directions)
    local_point = local_origin + t[:, None] * local_direction
    kinds = snap.kind[objects]
    normal = np.zeros((objects.shape[0], 3))
    starts = snap.shape_start[objects]
    data = snap.shape_data
    sphere = kinds == SPHERE
    normal[sphere] = local_point[sphere]
    box = np.flatnonzero(kinds == BOX)
    if box.size:
        half = data[starts[box, None] + np.arange(3)]
        axis = np.argmax(np.abs(local_point[box]) / half, axis=1)
        normal[box, axis] = np.where(local_point[box, axis] < 0.0, -1.0, 1.0)
    normal[kinds == QUAD, 2] = 1.0
    polygon = np.flatnonzero(kinds == POLYGON)
    if polygon.size:
        normal[polygon] = data[starts[polygon, None] + np.arange(3, 6)]
    return normal
