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

import os as _os

import numba as _numba

# The service calls parallel kernels from several threads at once, and numba's
# built-in "workqueue" layer is not threadsafe (numba's threading-layer docs;
# in a container without TBB or OpenMP, uploads beside the warm-up came back
# with wrong vertices): only TBB or OpenMP will do, and with neither the first
# parallel kernel refuses to run instead of answering wrongly.
if "NUMBA_THREADING_LAYER" not in _os.environ:
    _numba.config.THREADING_LAYER = "threadsafe"

from ._jit import end_cache_scope  # noqa: E402
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
