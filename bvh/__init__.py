"""bvh: a surface-area-heuristic BVH for ray picking, in numpy and numba.

>>> import bvh
>>> mesh = bvh.build(vertices, faces)
>>> hits = mesh.intersect(origins, directions)
"""

from .config import BuildConfig
from .hits import AllHits, Hits
from .mesh_bvh import MeshBVH, build
from .tree import Tree

__all__ = ["AllHits", "BuildConfig", "Hits", "MeshBVH", "Tree", "build"]
