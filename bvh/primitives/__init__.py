"""Ray and bounding-volume tests on analytic shapes (RTR4 ch. 22).

Ray tests, each vectorised over N rays against one shape, returning the
nearest hit in ``[tmin, tmax]`` with ``t = inf`` and zero normals (and zero
``u, v``) on a miss:

- ``ray_plane``, ``ray_sphere``, ``ray_aabb``, ``ray_obb``, ``ray_triangle``,
  ``ray_polygon``;
- ``segment_triangle`` (matrix method) with ``triangle_matrix`` and
  ``segment_triangle_matrix`` for cached matrices.

Point tests: ``point_in_polygon`` (crossings), ``point_in_triangle_angles``
(angle sum, kept as a measured comparison).

Plane/volume sides: ``plane_aabb``, ``plane_obb``, ``plane_sphere``.

Bounding volumes: ``aabb_of``, ``bounding_sphere`` (Ritter, AABB-centred,
Welzl), ``obb_of`` (ditetrahedron + PCA candidates).
"""

from .planes import plane_aabb, plane_obb, plane_sphere
from .point_tests import point_in_polygon, point_in_triangle_angles
from .rays import (
    BoxHits,
    RayHits,
    TriangleHits,
    ray_aabb,
    ray_obb,
    ray_plane,
    ray_polygon,
    ray_sphere,
    ray_triangle,
)
from .segments import segment_triangle, segment_triangle_matrix, triangle_matrix
from .volumes import aabb_of, bounding_sphere, obb_of

__all__ = [
    "BoxHits",
    "RayHits",
    "TriangleHits",
    "aabb_of",
    "bounding_sphere",
    "obb_of",
    "plane_aabb",
    "plane_obb",
    "plane_sphere",
    "point_in_polygon",
    "point_in_triangle_angles",
    "ray_aabb",
    "ray_obb",
    "ray_plane",
    "ray_polygon",
    "ray_sphere",
    "ray_triangle",
    "segment_triangle",
    "segment_triangle_matrix",
    "triangle_matrix",
]
