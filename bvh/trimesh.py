"""A drop-in ray engine for trimesh: ``mesh.ray`` answered by this package's BVH.

trimesh (5.2) gives every ``Trimesh`` a ray engine, ``mesh.ray``: its own
(``trimesh.ray.ray_triangle``, an rtree of triangle boxes and numpy tests)
or, when the ``embreex`` package imports, Intel's Embree
(``trimesh.ray.ray_pyembree``). :class:`RayMeshIntersector` has their API and
answers it with :func:`bvh.build`'s tree::

    import trimesh
    import bvh.trimesh

    mesh = trimesh.load("bunny.obj")
    mesh.ray = bvh.trimesh.RayMeshIntersector(mesh)     # this mesh
    bvh.trimesh.install()                               # or every Trimesh made from now on

After either, ``mesh.ray.intersects_location(...)``, ``mesh.contains(...)``,
``trimesh.proximity.signed_distance``, ``longest_ray``, thickness and the
voxelizer's ray casts all run on the BVH.

Conventions, those of trimesh's engines (its Embree engine where the two
differ):

- Directions are unitized, so distances along a ray are world distances. A
  zero direction hits nothing; an empty mesh (no faces) is hit by nothing.
- A ray through an edge or vertex shared by several faces crosses the
  surface once and is reported once (on one of the faces), as Embree does;
  trimesh's own engine reports every face there.
- A ray that starts on a face meets it: hits up to
  :attr:`bvh.MeshBVH.start_tolerance` behind the origin count (a float64
  origin on a face lies a few float32 ulps off the face as stored, on either
  side). A hit there may have its location a hair behind the origin.
- Several hits of one ray are nearest first; hits of different rays are in
  ray order.
- ``contains_points`` is the generalised winding number
  (:meth:`bvh.MeshBVH.contains`), not trimesh's ray parity, so it needs no
  retries with random directions and does not depend on where rays graze
  edges; the two agree on closed meshes away from the surface.
"""

import numpy as np
import trimesh
import trimesh.ray

from .mesh_bvh import MeshBVH, build

#: trimesh's Embree engine's default cap on hits per ray (``intersects_id``).
MAX_HITS = 100


class RayMeshIntersector:
    """Ray queries on a ``trimesh.Trimesh``, with trimesh's ray API.

    The tree is built on the first query and rebuilt when the mesh changes
    (trimesh's hash of its vertices and faces changes), as trimesh's engines
    cache theirs.

    Parameters
    ----------
    geometry : trimesh.Trimesh
        The mesh queried, kept as ``self.mesh``.
    scale_to_box : bool
        Accepted for the signature of trimesh's Embree engine, which scales
        the mesh towards a unit box before rounding it to float32; unused:
        :func:`bvh.build` centres the mesh before rounding, and float32
        keeps the same relative precision at any scale.
    """

    def __init__(self, geometry, scale_to_box: bool = True):
        self.mesh = geometry
        self._scale_to_box = scale_to_box
        self._built = None

    @property
    def bvh(self) -> MeshBVH:
        """The mesh's tree, built now if the mesh changed since the last query."""
        key = hash(self.mesh)
        built = self._built
        if built is None or built[0] != key:
            built = (key, build(self.mesh.vertices, self.mesh.faces, allow_empty=True))
            self._built = built
        return built[1]

    def intersects_id(self, ray_origins, ray_directions, multiple_hits: bool = True, max_hits: int = MAX_HITS,
                      return_locations: bool = False):
        """The faces hit by each ray: its first hit, or each of its crossings.

        Parameters
        ----------
        ray_origins, ray_directions : (n, 3) float
            Rays; the directions need not be unit, and a zero direction
            hits nothing.
        multiple_hits : bool
            Every crossing of the surface (nearest first, up to
            ``max_hits``), or the first hit only.
        max_hits : int
            Most crossings reported per ray with ``multiple_hits``.
        return_locations : bool
            Also return the hit points.

        Returns
        -------
        index_tri : (h,) int64
            Index in ``mesh.faces`` of each hit.
        index_ray : (h,) int64
            Ray of each hit: ascending, and a ray's hits nearest first.
        locations : (h, 3) float64
            The hit points; only with ``return_locations``.
        """
        tree = self.bvh
        origins, directions = _rays(ray_origins, ray_directions)
        if multiple_hits:
            hits = tree.intersect_all(origins, directions, tmin=-tree.start_tolerance, max_hits=int(max_hits),
                                      zero_directions="miss")
            index_tri, index_ray, locations = hits.triangle, hits.ray, hits.point
        else:
            first = tree.intersect(origins, directions, tmin=-tree.start_tolerance, zero_directions="miss")
            index_ray = np.flatnonzero(first.hit)
            index_tri, locations = first.triangle[index_ray], first.point[index_ray]
        if return_locations:
            return index_tri, index_ray, locations
        return index_tri, index_ray

    def intersects_location(self, ray_origins, ray_directions, multiple_hits: bool = True,
                            max_hits: int = MAX_HITS):
        """Where the rays hit the surface.

        Parameters
        ----------
        ray_origins, ray_directions : (n, 3) float
        multiple_hits : bool
            Every crossing of each ray, or its first hit only.
        max_hits : int
            Most crossings reported per ray with ``multiple_hits``.

        Returns
        -------
        locations : (h, 3) float64
            Hit points; one per crossing of the surface (a ray through a
            shared edge counts once).
        index_ray : (h,) int64
            Ray of each hit.
        index_tri : (h,) int64
            Index in ``mesh.faces`` of each hit.
        """
        index_tri, index_ray, locations = self.intersects_id(ray_origins, ray_directions, multiple_hits=multiple_hits,
                                                             max_hits=max_hits, return_locations=True)
        return locations, index_ray, index_tri

    def intersects_first(self, ray_origins, ray_directions):
        """The first face each ray hits.

        Returns
        -------
        triangle_index : (n,) int64
            Index in ``mesh.faces``, -1 for a ray that hits nothing.
        """
        tree = self.bvh
        origins, directions = _rays(ray_origins, ray_directions)
        return tree.intersect(origins, directions, tmin=-tree.start_tolerance, zero_directions="miss").triangle

    def intersects_any(self, ray_origins, ray_directions):
        """Whether each ray hits the surface (stopping at its first hit found).

        Returns
        -------
        hit : (n,) bool
        """
        tree = self.bvh
        origins, directions = _rays(ray_origins, ray_directions)
        return tree.occluded(origins, directions, tmin=-tree.start_tolerance, zero_directions="miss")

    def contains_points(self, points):
        """Whether the mesh contains each point: its winding number there is
        at least 1/2 (:meth:`bvh.MeshBVH.contains`). For a point on the
        surface the answer is undefined, as trimesh says of its own.

        Parameters
        ----------
        points : (n, 3) float

        Returns
        -------
        contains : (n,) bool
        """
        points = np.asarray(points, dtype=np.float64)
        if points.ndim != 2 or points.shape[1] != 3:
            raise ValueError(f"points must be (n, 3), got shape {points.shape}")
        return self.bvh.contains(points)

    def __getstate__(self):
        # The tree is rebuilt on the first query after unpickling: MeshBVH holds a lock.
        state = self.__dict__.copy()
        state["_built"] = None
        return state

    def __copy__(self):
        return RayMeshIntersector(self.mesh, scale_to_box=self._scale_to_box)

    def __deepcopy__(self, memo):
        return self.__copy__()


def _rays(ray_origins, ray_directions) -> tuple[np.ndarray, np.ndarray]:
    """``(origins, unit directions)`` as ``(n, 3)`` float64; zero directions
    stay zero (and miss), and tiny ones are scaled up before normalising
    rather than squared into zero."""
    origins = np.asarray(ray_origins, dtype=np.float64)
    directions = np.asarray(ray_directions, dtype=np.float64)
    if origins.shape != directions.shape:
        raise ValueError(f"ray origins and directions must have the same shape, got {origins.shape} and "
                         f"{directions.shape}")
    if directions.ndim != 2 or directions.shape[1] != 3:
        raise ValueError(f"rays must be (n, 3), got shape {directions.shape}")
    with np.errstate(divide="ignore", invalid="ignore"):
        largest = np.abs(directions).max(axis=1, keepdims=True) if len(directions) else np.ones((0, 1))
        scaled = np.where(largest > 0.0, directions / largest, directions)
        length = np.sqrt((scaled * scaled).sum(axis=1, keepdims=True))
        unit = np.where(length > 0.0, scaled / length, scaled)
    return origins, unit


_replaced = {}


def install() -> None:
    """Make every ``trimesh.Trimesh`` made from now on use
    :class:`RayMeshIntersector` as ``mesh.ray``.

    trimesh's constructor takes ``mesh.ray`` from
    ``trimesh.ray.ray_pyembree.RayMeshIntersector`` when ``embreex``
    imports and from ``trimesh.ray.ray_triangle.RayMeshIntersector``
    otherwise; both names are pointed at this class (so code asking for
    either engine by name gets this one too). Meshes made before keep
    theirs. :func:`uninstall` puts trimesh's back.
    """
    if not _replaced:
        _replaced["ray_triangle"] = trimesh.ray.ray_triangle.RayMeshIntersector
        if trimesh.ray.has_embree:
            _replaced["ray_pyembree"] = trimesh.ray.ray_pyembree.RayMeshIntersector
    for name in _replaced:
        getattr(trimesh.ray, name).RayMeshIntersector = RayMeshIntersector


def uninstall() -> None:
    """Undo :func:`install`: new meshes get trimesh's own engines again."""
    for name, engine in _replaced.items():
        getattr(trimesh.ray, name).RayMeshIntersector = engine
    _replaced.clear()
