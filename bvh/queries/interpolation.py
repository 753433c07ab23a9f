"""Shading normals and texture coordinates at mesh hits, by barycentrics.

Every query that answers surface hits (closest hit, lines and points, all
hits, sphere casts) finishes with them: a hit on a mesh with vertex normals
gets ``(1-u-v) N0 + u N1 + v N2`` taken to world space by the inverse
transpose of its object's linear map and normalised; a hit on a mesh with
texture coordinates gets them interpolated the same way. One pass over the
hits, in blocks on numba's threads for a batch, on the calling thread for a
click's few rays (numpy's gathers and ``einsum`` took a sixth of a 200,000-ray
batch on a textured mesh, on one thread).
"""

import math

import numpy as np
from numba import prange

from .._jit import RAY_BLOCK, SERIAL_BATCH, jit, jit_parallel


@jit
def _interpolate_block(start, end, objects, meshes, triangles, u, v, normal, faces, face_start, vertex_start,
                       normals, has_normals, uvs, has_uvs, inverse, shading, uv):
    for i in range(start, end):
        shading[i, 0] = normal[i, 0]
        shading[i, 1] = normal[i, 1]
        shading[i, 2] = normal[i, 2]
        uv[i, 0] = np.nan
        uv[i, 1] = np.nan
        mesh = meshes[i]
        if mesh < 0:
            continue
        row = face_start[mesh] + triangles[i]
        first = vertex_start[mesh]
        c0 = first + faces[row, 0]
        c1 = first + faces[row, 1]
        c2 = first + faces[row, 2]
        wu = u[i]
        wv = v[i]
        w = 1.0 - wu - wv
        if has_normals[mesh]:
            lx = w * np.float64(normals[c0, 0]) + wu * np.float64(normals[c1, 0]) + wv * np.float64(normals[c2, 0])
            ly = w * np.float64(normals[c0, 1]) + wu * np.float64(normals[c1, 1]) + wv * np.float64(normals[c2, 1])
            lz = w * np.float64(normals[c0, 2]) + wu * np.float64(normals[c1, 2]) + wv * np.float64(normals[c2, 2])
            o = objects[i]
            # Normals go to world space by the transpose of the world-to-object map.
            wx = inverse[o, 0, 0] * lx + inverse[o, 1, 0] * ly + inverse[o, 2, 0] * lz
            wy = inverse[o, 0, 1] * lx + inverse[o, 1, 1] * ly + inverse[o, 2, 1] * lz
            wz = inverse[o, 0, 2] * lx + inverse[o, 1, 2] * ly + inverse[o, 2, 2] * lz
            length = math.sqrt(wx * wx + wy * wy + wz * wz)
            if length > 0.0:
                shading[i, 0] = wx / length
                shading[i, 1] = wy / length
                shading[i, 2] = wz / length
        if has_uvs[mesh]:
            for c in range(2):
                uv[i, c] = w * np.float64(uvs[c0, c]) + wu * np.float64(uvs[c1, c]) + wv * np.float64(uvs[c2, c])


@jit
def _interpolate_serial(objects, meshes, triangles, u, v, normal, faces, face_start, vertex_start, normals,
                        has_normals, uvs, has_uvs, inverse, shading, uv):
    _interpolate_block(0, objects.shape[0], objects, meshes, triangles, u, v, normal, faces, face_start,
                       vertex_start, normals, has_normals, uvs, has_uvs, inverse, shading, uv)


@jit_parallel
def _interpolate_parallel(objects, meshes, triangles, u, v, normal, faces, face_start, vertex_start, normals,
                          has_normals, uvs, has_uvs, inverse, shading, uv):
    n = objects.shape[0]
    for b in prange((n + RAY_BLOCK - 1) // RAY_BLOCK):
        _interpolate_block(b * RAY_BLOCK, min(n, (b + 1) * RAY_BLOCK), objects, meshes, triangles, u, v, normal,
                           faces, face_start, vertex_start, normals, has_normals, uvs, has_uvs, inverse, shading, uv)


def interpolate(pack, inverse: np.ndarray, objects: np.ndarray, meshes: np.ndarray, triangles: np.ndarray,
                u: np.ndarray, v: np.ndarray, normal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shading normals and texture coordinates of hits.

    Parameters
    ----------
    pack : bvh.scene.mesh_pack.MeshPack
        The scene's meshes: ``faces``, ``face_start``, ``vertex_start``,
        ``normals``, ``has_normals``, ``uvs``, ``has_uvs``.
    inverse : (O, 3, 4) float64
        Each object's world-to-object map (its linear part is what counts).
    objects, meshes, triangles : (N,) int64
        The hit object, its mesh (-1: not a mesh hit) and the triangle within it.
    u, v : (N,) float64
        Barycentrics of the hits.
    normal : (N, 3) float64
        Geometric world normals: the shading normal where the mesh has no
        vertex normals, or where the interpolated one vanishes.

    Returns
    -------
    shading : (N, 3) float64
    uv : (N, 2) float64
        NaN where the hit is not on a mesh with texture coordinates.
    """
    n = objects.shape[0]
    shading = np.empty((n, 3))
    uv = np.empty((n, 2))
    kernel = _interpolate_serial if n <= SERIAL_BATCH else _interpolate_parallel
    kernel(objects, meshes, triangles, u, v, normal, pack.faces, pack.face_start, pack.vertex_start, pack.normals,
           pack.has_normals, pack.uvs, pack.has_uvs, inverse, shading, uv)
    return shading, uv
