"""The scene: meshes, line and point sets and shapes placed in a world under
a two-level BVH (:class:`Scene`, the façade over this package's parts)."""

from .checks import ALL_BITS, MAX_CONDITION, UnknownIdError
from .meshes import MeshInfo
from .objects import ObjectInfo, ObjectRows
from .scene import Scene
from .top_level import REBUILD_RATIO

__all__ = ["ALL_BITS", "MAX_CONDITION", "MeshInfo", "ObjectInfo", "ObjectRows", "REBUILD_RATIO", "Scene",
           "UnknownIdError"]
