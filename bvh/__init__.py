"""bvh: a surface-area-heuristic BVH for ray picking, in numpy and numba.

>>> import bvh
>>> mesh = bvh.build(vertices, faces)
>>> hits = mesh.intersect(origins, directions)
>>> hits.triangle, hits.t, hits.point, hits.normal

>>> scene = bvh.Scene()
>>> ball = scene.add_instance(scene.add_mesh(vertices, faces), transform)
>>> scene.intersect(origins, directions).object

``bvh.primitives`` holds the analytic ray and bounding-volume tests.
"""

from ._jit import end_cache_scope
from . import camera, primitives
from .queries import frustum
from .builders.config import BuildConfig
from .camera import Camera
from .queries.idbuffer import IdBuffer
from .queries.lasso import Lasso
from .hits import (AllHits, ClosestPoints, Hits, SceneAllHits, SceneClosestPoints, SceneContains, SceneHits,
                   SceneSphereHits, Selection, SphereHits)
from .io.load import load, read_scene_description, supported_file_types
from .io.materials import AlphaMaterial, MeshAlpha
from .mesh_bvh import MeshBVH, build
from .scene import MeshInfo, ObjectInfo, ObjectRows, Scene, UnknownIdError
from .builders.tree import Tree

end_cache_scope()

__all__ = ["AllHits", "AlphaMaterial", "BuildConfig", "Camera", "ClosestPoints", "Hits", "IdBuffer", "Lasso",
           "MeshAlpha", "MeshBVH", "MeshInfo", "ObjectInfo", "ObjectRows",
           "Scene", "SceneAllHits", "SceneClosestPoints", "SceneContains", "SceneHits", "SceneSphereHits", "Selection", "SphereHits", "Tree", "UnknownIdError", "build", "camera", "frustum",
           "load", "primitives", "read_scene_description", "supported_file_types"]
