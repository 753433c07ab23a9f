"""The ID buffer: what every pixel of a camera's image shows.

The classic GPU picking method (Real-Time Rendering, 4th ed., §22.1) renders
object and triangle ids into an off-screen image once; while the camera stays
still, every pick is a look-up in that image. Here the image is traced: one
ray through each pixel centre (:meth:`bvh.camera.Camera.rays`, the rays a
camera pick of ``[x + 0.5, y + 0.5]`` casts) and the scene's closest-hit walk
(:func:`bvh.queries.scene_rays.closest_hits_block`), block by block on every thread,
each block's hits written straight into compact per-pixel arrays. A
perspective camera's rays are made block by block too, by the function
:meth:`Camera.rays` uses, so no image-sized ray array is ever allocated.
"""

from dataclasses import dataclass

import numpy as np
from numba import prange

from .._jit import jit_parallel
from ..camera import Camera, perspective_rays, pixel_centers
from .scene_rays import closest_hits_block


@dataclass(frozen=True)
class IdBuffer:
    """What each pixel of a ``width`` x ``height`` image shows, row-major
    (row ``y * width + x`` is pixel ``(x, y)``, ``(0, 0)`` the top left).

    Attributes
    ----------
    width, height : int
    object : (H * W,) int32
        Object id seen through the pixel's centre; -1 where the ray misses.
    triangle : (H * W,) int32
        Face index in its mesh; -1 for a shape and on a miss.
    depth : (H * W,) float32
        Distance from the ray's origin (the eye; the near plane for an
        orthographic camera) to the hit, along the unit ray: a camera pick's
        ``t``; +inf on a miss.
    normal : (H * W, 3) float16 or None
        Unit world geometric normal (as a pick's ``normal``); NaN on a miss.
        Only when asked for.
    barycentric : (H * W, 2) float32 or None
        ``u, v``: the hit is ``(1 - u - v) V0 + u V1 + v V2`` of its
        triangle; NaN for a shape and on a miss. Only when asked for.
    """

    width: int
    height: int
    object: np.ndarray
    triangle: np.ndarray
    depth: np.ndarray
    normal: np.ndarray | None = None
    barycentric: np.ndarray | None = None


#: Pixels per parallel task: four times ``bvh._jit.RAY_BLOCK``. A block's
#: scratch (some 150 bytes a pixel) still sits in a core's L2 cache, and an
#: image has so many blocks that both cores stay busy to the end; fewer
#: blocks allocate their scratch fewer times.
PIXEL_BLOCK = 1024


@jit_parallel
def id_buffer_parallel(scene, alpha, width, height, eye, ray_map, origins, directions, tmin, tmax, cull, out_object,
                       out_triangle, out_depth, out_normal, out_barycentric):
    """Closest hit of the ray through each pixel centre into compact per-pixel outputs.

    Parameters
    ----------
    scene : SceneArrays
    alpha : tuple
        The alpha test's arguments (``bvh.scene._Snapshot.alpha``).
    width, height : int
        The image; pixel ``i`` is ``(i % width, i // width)``.
    eye : (3,) float64
    ray_map : (3, 4) float64
        A perspective camera's rays (see ``bvh.camera.perspective_rays``),
        used when ``origins`` is empty.
    origins, directions : (N, 3) or (0, 3) float64
        The rays of every pixel, given (an orthographic camera's), or none.
    tmin, tmax : float
    cull : bool
    out_object, out_triangle : (N,) int32
    out_depth : (N,) float32
    out_normal : (N, 3) or (0, 3) float32
        Written when it has N rows.
    out_barycentric : (N, 2) or (0, 2) float32
        Written when it has N rows.
    """
    n = out_object.shape[0]
    given = origins.shape[0] == n
    normals = out_normal.shape[0] == n
    barycentrics = out_barycentric.shape[0] == n
    for b in prange((n + PIXEL_BLOCK - 1) // PIXEL_BLOCK):
        start = b * PIXEL_BLOCK
        end = min(n, start + PIXEL_BLOCK)
        m = end - start
        if given:
            block_origins = origins[start:end]
            block_directions = directions[start:end]
        else:
            pixels = np.empty((m, 2))
            for i in range(m):
                pixels[i, 0] = (start + i) % width + 0.5
                pixels[i, 1] = (start + i) // width + 0.5
            block_origins = np.empty((m, 3))
            block_directions = np.empty((m, 3))
            perspective_rays(pixels, float(width), float(height), eye, ray_map, block_origins, block_directions)
        # The walk's world outputs, per block: a block's worth stays in
        # cache, and the image's arrays are written once.
        obj = np.empty(m, np.int64)
        mesh = np.empty(m, np.int64)
        triangle = np.empty(m, np.int64)
        t = np.empty(m)
        u = np.empty(m)
        v = np.empty(m)
        point = np.empty((m, 3))
        normal = np.empty((m, 3))
        front_face = np.empty(m, np.bool_)
        # A typed 0: the literal would make the block a second signature to
        # compile, beside the batch picks' (the two-lane walk: 14 s cold).
        closest_hits_block(scene, alpha, block_origins, block_directions, tmin, tmax, cull, np.int64(0), m, obj,
                           mesh, triangle, t, u, v, point, normal, front_face)
        for i in range(m):
            out_object[start + i] = obj[i]
            out_triangle[start + i] = triangle[i]
            out_depth[start + i] = t[i]
        if normals:
            for i in range(m):
                for c in range(3):
                    out_normal[start + i, c] = normal[i, c]
        if barycentrics:
            for i in range(m):
                out_barycentric[start + i, 0] = u[i]
                out_barycentric[start + i, 1] = v[i]


def trace(scene, alpha, camera: Camera, tmin: float, tmax: float, cull: bool, normals: bool = False,
          barycentrics: bool = False) -> IdBuffer:
    """The :class:`IdBuffer` of ``camera`` over the kernel arrays ``scene``
    (a ``SceneArrays`` with the query's objects enabled) and the alpha test's
    arguments ``alpha``; ``tmin``, ``tmax`` checked, ``tmax`` finite
    (``bvh._jit.FAR`` for unbounded)."""
    n = camera.width * camera.height
    hit_object = np.empty(n, np.int32)
    hit_triangle = np.empty(n, np.int32)
    depth = np.empty(n, np.float32)
    normal = np.empty((n if normals else 0, 3), np.float32)
    barycentric = np.empty((n if barycentrics else 0, 2), np.float32)
    if camera.orthographic:
        origins, directions = camera.rays(pixel_centers(camera.width, camera.height))
        eye, ray_map = np.zeros(3), np.zeros((3, 4))
    else:
        # Camera.rays refuses a camera whose rays float64 cannot hold; one ray says whether this is one.
        camera.rays([0.5, 0.5])
        origins, directions = np.empty((0, 3)), np.empty((0, 3))
        eye, ray_map = camera._eye, camera._ray_map
    id_buffer_parallel(scene, alpha, np.int64(camera.width), np.int64(camera.height), eye, ray_map, origins, directions,
                       float(tmin), float(tmax), bool(cull), hit_object, hit_triangle, depth, normal, barycentric)
    return IdBuffer(camera.width, camera.height, hit_object, hit_triangle, depth,
                    normal.astype(np.float16) if normals else None, barycentric if barycentrics else None)


def missed(camera: Camera, normals: bool = False, barycentrics: bool = False) -> IdBuffer:
    """The :class:`IdBuffer` of an image where every pixel misses."""
    n = camera.width * camera.height
    return IdBuffer(camera.width, camera.height, np.full(n, -1, np.int32), np.full(n, -1, np.int32),
                    np.full(n, np.inf, np.float32), np.full((n, 3), np.nan, np.float16) if normals else None,
                    np.full((n, 2), np.nan, np.float32) if barycentrics else None)


__all__ = ["IdBuffer", "id_buffer_parallel", "missed", "trace"]
