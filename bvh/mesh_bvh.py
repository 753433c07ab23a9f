"""The numpy-facing mesh BVH: build it, then query it with batches of rays."""

import math
import threading
from operator import attrgetter
from typing import Callable, NamedTuple

import numba
import numpy as np

from .queries import closest_point, mesh_rays as kernels, overlap as overlap_kernels, sphere_cast, winding
from ._jit import FAR, MAX_DEPTH, SERIAL_BATCH
from .builders.sah import binned_sah_build
from .builders.config import BuildConfig
from .hits import AllHits, ClosestPoints, Hits, SphereHits, dot_rows, face_normals, unit_rows
from .walk.nodes import CHILD_COUNT, ROW, WIDTH, aligned_empty, collapse_to_wide
from .queries.point_order import coherent_order
from .builders.refit import check_refit_vertices, refit_tree, wide_sah_cost
from .builders.tree import Tree
from .builders.triangles import TriangleData, prepare_triangles
from .validation import (check_max_distance, check_mesh, check_points, check_radius, check_rays,
                         check_rays_allowing_zero, check_window)

#: Meshes of fewer triangles than this are refitted on the calling thread
#: alone. Each parallel pass waits for every worker to wake, and with the
#: other core busy that took 20 ms per bunny refit (69k triangles) against
#: 1.3–1.6 ms on one thread (0.8 ms on two idle cores).
SERIAL_REFIT = 200_000

#: Outputs of more rays than this are carved out of one allocation (``_carve``).
CARVE_FROM = 4096

#: Hits of one ray closer than this fraction of the mesh size, on faces that
#: share a vertex, are one crossing of the surface (see ``intersect_all``).
MERGE_FRACTION = 1.0e-9

#: :attr:`MeshBVH.start_tolerance` in units of the float32 rounding bound
#: ``sqrt(3) * 2**-24 * max |coordinate|`` of the stored triangles: a ray
#: leaving the face at up to 60 degrees from its normal meets it within
#: twice the bound, and the other half is room for the float64 arithmetic.
START_TOLERANCE_BOUNDS = 4.0

#: What ``zero_directions`` may be.
ZERO_DIRECTIONS = ("raise", "miss")

Builder = Callable[[np.ndarray, np.ndarray, BuildConfig], Tree]


class _Arrays(NamedTuple):
    """Everything a query reads, swapped by :meth:`MeshBVH.refit` in one
    assignment so that a query on another thread sees the old mesh or the new
    one, never a mix: a query takes ``self._arrays`` once and reads only that."""

    nodes: np.ndarray
    links: np.ndarray
    triangles: np.ndarray
    face_index: np.ndarray
    offset: np.ndarray
    merge_length: float
    start_tolerance: float


def _merge_length(triangles: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    return MERGE_FRACTION * float(np.linalg.norm(hi - lo)) if len(triangles) else 0.0


def _start_tolerance(triangles: np.ndarray, lo: np.ndarray, hi: np.ndarray, offset: np.ndarray) -> float:
    """:attr:`MeshBVH.start_tolerance` of triangles stored relative to
    ``offset`` whose world box is ``lo, hi``: their largest stored
    coordinate is at most the box's largest distance from the offset."""
    if not len(triangles):
        return 0.0
    largest = float(max(np.abs(lo - offset).max(), np.abs(hi - offset).max()))
    return START_TOLERANCE_BOUNDS * math.sqrt(3.0) * 2.0 ** -24 * largest


class MeshBVH:
    """A triangle mesh's bounding volume hierarchy, ready for ray queries.

    Make one with :func:`build`. The arrays are read-only once built and the
    queries release the GIL, so one ``MeshBVH`` serves many threads;
    :meth:`refit` replaces them all at once, never writing into them.

    Attributes
    ----------
    nodes : (K, 32) float32
        128-byte four-wide nodes, see :mod:`bvh.walk.nodes`.
    triangles : (T, 9) float32
        Vertices of the non-degenerate faces in leaf order, relative to ``offset``.
    face_index : (T,) int32
        Original face index of each row of ``triangles``.
    offset : (3,) float64
        Subtracted from the mesh before rounding to float32.
    face_count : int
        Faces of the mesh as given, degenerate ones included.
    vertex_count : int
        Vertices of the mesh as given; what :meth:`refit` expects.
    refit_cost_ratio : float
        SAH cost of the tree now over its cost when built (1.0 until refitted).
    """

    def __init__(self, nodes, triangles, face_index, offset, depth: int, face_count: int, config: BuildConfig,
                 sah_cost: float, row_faces: np.ndarray, dropped_faces: np.ndarray, vertex_count: int):
        for array in (nodes, triangles, face_index, offset, row_faces, dropped_faces):
            array.setflags(write=False)
        self.face_count = face_count
        self.vertex_count = vertex_count
        self.config = config
        self._depth = depth
        self._sah_cost = sah_cost
        self._row_faces = row_faces
        self._dropped_faces = dropped_faces
        self._built_wide_cost = None
        self._used_vertices = None
        self._refit_lock = threading.Lock()
        #: ``(nodes, dipoles)``: the winding number's per-node data
        #: (``bvh.queries.winding``) of the tree whose nodes are ``nodes``.
        self._dipole_cache = None
        self.refit_cost_ratio = 1.0
        self._arrays = _Arrays(nodes, nodes.view(np.int32), triangles, face_index, offset, 0.0, 0.0)
        lo, hi = self.bounds
        self._arrays = self._arrays._replace(merge_length=_merge_length(triangles, lo, hi),
                                             start_tolerance=_start_tolerance(triangles, lo, hi, offset))

    @property
    def start_tolerance(self) -> float:
        """World distance by which a ray that starts on a face may start off
        the face as stored: pass ``tmin = -start_tolerance / |direction|``
        for such a ray to meet that face.

        The triangles are stored in float32 (relative to :attr:`offset`),
        each coordinate within ``2**-24 * |x|`` of the float64 vertex it came
        from, so a point of a face as given, a float64 origin on it, is
        within ``sqrt(3) * 2**-24 * max |x|`` of the stored face, on either
        side: a ray starting there and leaving the face may meet it at a
        ``t`` a few ulps below 0. This is :data:`START_TOLERANCE_BOUNDS`
        times that bound (the ``t`` of a ray leaving at angle ``a`` from the
        normal moves by the distance over ``cos a``; the factor covers
        ``a`` up to 60 degrees, twice over). 0.0 for a mesh without
        triangles.
        """
        return self._arrays.start_tolerance

    # The arrays of the tree as it is now (see the class's attributes), read
    # from the one ``_arrays`` that a refit replaces whole.
    nodes = property(attrgetter("_arrays.nodes"))
    triangles = property(attrgetter("_arrays.triangles"))
    face_index = property(attrgetter("_arrays.face_index"))
    offset = property(attrgetter("_arrays.offset"))

    # ------------------------------------------------------------------ stats
    @property
    def triangle_count(self) -> int:
        """Faces in the tree (degenerate faces are left out)."""
        return int(self.triangles.shape[0])

    @property
    def node_count(self) -> int:
        """Four-wide nodes of the tree."""
        return int(self.nodes.shape[0]) if self.triangle_count else 0

    @property
    def depth(self) -> int:
        """Depth of the deepest leaf of the binary tree the wide one was
        collapsed from (the root is depth 0)."""
        return self._depth

    @property
    def nbytes(self) -> int:
        """Bytes of the tree and its triangle data (without the faces' vertex
        indices kept for :meth:`refit`, 12 bytes a face)."""
        return int(self.nodes.nbytes + self.triangles.nbytes + self.face_index.nbytes)

    @property
    def bounds(self) -> np.ndarray:
        """(2, 3) float64: world-space min and max corner of the mesh's box."""
        arrays = self._arrays
        if arrays.triangles.shape[0] == 0:
            return np.full((2, 3), np.nan)
        # float32 extremes are exact, so no float64 copy of every corner (a
        # fifth of a second for a million triangles) is needed to find them.
        local = arrays.triangles.reshape(-1, 3)
        return np.stack([local.min(axis=0), local.max(axis=0)]).astype(np.float64) + arrays.offset

    def leaf_stats(self) -> dict:
        """Leaves and triangles per leaf: ``{"leaves", "mean", "max"}``."""
        counts = self._arrays.links[:, CHILD_COUNT:CHILD_COUNT + WIDTH].ravel() if self.triangle_count else np.zeros(0)
        leaves = counts[counts > 0]
        if leaves.size == 0:
            return {"leaves": 0, "mean": 0.0, "max": 0}
        return {"leaves": int(leaves.size), "mean": float(leaves.mean()), "max": int(leaves.max())}

    def sah_cost(self) -> float:
        """Expected cost of a ray through the root of the binary tree under the
        surface area heuristic, in units of one triangle test (constants from
        ``config``): the measure of the builder's work, before collapsing.

        The binary tree is not kept, so after :meth:`refit` this is the cost
        as built times :attr:`refit_cost_ratio`, the ratio measured on the
        four-wide tree."""
        return self._sah_cost * self.refit_cost_ratio

    # ------------------------------------------------------------------ refit
    def refit(self, vertices) -> None:
        """Move the mesh's vertices, keeping its faces and the tree's topology.

        The triangles are centred and rounded as :func:`build` does (the
        centring offset is recomputed from the new positions) and every node
        box is recomputed bottom-up, as conservatively as the build's (see
        :mod:`bvh.builders.refit`). Queries running on other threads meanwhile see
        the old mesh or the new one, never a mix. :attr:`refit_cost_ratio`
        then says how much worse the tree has become than when built; past
        about 1.5 a rebuild pays (issue 14), which is the caller's decision.

        Faces that were zero-area when built are not in the tree, and faces
        in the tree are tested as non-degenerate by the build's exact test:
        a refit that would change which faces are zero-area is refused and
        the mesh left as it was; build the mesh anew instead.

        Parameters
        ----------
        vertices : (V, 3) float, finite
            New positions of the ``vertex_count`` vertices, in the same order.

        Raises
        ------
        ValueError
            On a malformed array, a different vertex count, non-finite
            coordinates, a span float32 cannot hold, or a change of which
            faces are zero-area, saying which.
        """
        vertices = check_refit_vertices(vertices, self.vertex_count)
        threads = numba.get_num_threads()
        with self._refit_lock:
            if len(self._row_faces) < SERIAL_REFIT:
                numba.set_num_threads(1)
            try:
                self._refit(vertices)
            finally:
                numba.set_num_threads(threads)

    def _refit(self, vertices: np.ndarray) -> None:
        """:meth:`refit` of validated ``vertices``, under the refit lock."""
        old = self._arrays
        if self._used_vertices is None:
            used = np.zeros(self.vertex_count, np.bool_)
            used[self._row_faces] = True
            used[self._dropped_faces] = True
            self._used_vertices = used
        nodes, triangles, offset, lo, hi = refit_tree(vertices, self._used_vertices, self._row_faces,
                                                      self._dropped_faces, old.nodes)
        if self._built_wide_cost is None:
            self._built_wide_cost = self._wide_cost(old.nodes)
        for array in (nodes, triangles, offset):
            array.setflags(write=False)
        # The merge length is taken from the float64 vertex box rather than the
        # float32 triangles' (as at build): a tolerance, it need not be exact,
        # and a pass over every corner would cost a tenth of the refit.
        self._arrays = _Arrays(nodes, nodes.view(np.int32), triangles, old.face_index, offset,
                               _merge_length(triangles, lo, hi), _start_tolerance(triangles, lo, hi, offset))
        built = self._built_wide_cost
        self.refit_cost_ratio = self._wide_cost(nodes) / built if built > 0.0 else 1.0

    def _wide_cost(self, nodes: np.ndarray) -> float:
        return wide_sah_cost(nodes, nodes.view(np.int32), self.config.traversal_cost, self.config.intersection_cost)

    # ---------------------------------------------------------------- queries
    def intersect(self, origins, directions, tmin=0.0, tmax=np.inf, cull_backfaces=False,
                  zero_directions="raise") -> Hits:
        """Closest hit of each ray in ``[tmin, tmax]``.

        Parameters
        ----------
        origins, directions : (N, 3) or (3,) float
            Rays ``origin + t * direction``; directions need not be unit, and
            ``t`` is measured along them as given.
        tmin, tmax : float
            The window of ``t`` searched, ``tmin <= tmax``; tmax may be inf.
            A negative tmin accepts hits that far behind the origin: a ray
            starting on a face meets it with ``tmin = -start_tolerance /
            |direction|`` (see :attr:`start_tolerance`). The traversal's
            guarantee never to miss a box (Ize 2013) covers ``t >= 0``;
            behind the origin the boxes' float32 padding covers small
            tolerances such as that, not long stretches.
        cull_backfaces : bool
            Ignore faces whose normal points along the ray.
        zero_directions : {"raise", "miss"}
            What a direction of length zero (or below
            ``bvh.validation.MIN_DIRECTION_LENGTH``) gets: a ValueError, or
            a miss, as trimesh and Embree answer it.

        Returns
        -------
        Hits
            Arrays of length N; ``triangle`` is -1 and ``t`` inf on a miss.
        """
        origins, directions, traceable = _check_rays(origins, directions, zero_directions)
        tmin, tmax = check_window(tmin, tmax, allow_negative_tmin=True)
        if traceable is not None:
            hits = _misses(origins.shape[0])
            if traceable.any():
                found = self._intersect(origins[traceable], directions[traceable], tmin, tmax, cull_backfaces)
                for name, values in vars(found).items():
                    getattr(hits, name)[traceable] = values
            return hits
        return self._intersect(origins, directions, tmin, tmax, cull_backfaces)

    def _intersect(self, origins, directions, tmin, tmax, cull_backfaces) -> Hits:
        """:meth:`intersect` of validated rays."""
        n = origins.shape[0]
        arrays = self._arrays
        if arrays.triangles.shape[0] == 0:
            return _misses(n)
        triangle, t, u, v, point, normal, rows, front_face = _carve(
            n, [(np.int64, 1), (np.float64, 1), (np.float64, 1), (np.float64, 1), (np.float64, 3),
                (np.float64, 3), (np.int32, 1), (np.bool_, 1)])
        kernel = kernels.closest_hits_serial if n <= SERIAL_BATCH else kernels.closest_hits_parallel
        kernel(arrays.nodes, arrays.links, arrays.triangles, arrays.face_index, arrays.offset, origins, directions,
               tmin, min(tmax, FAR), bool(cull_backfaces), rows, triangle, t, u, v, point, normal, front_face)
        return Hits(triangle, t, u, v, point, normal, front_face)

    def occluded(self, origins, directions, tmin=0.0, tmax=np.inf, zero_directions="raise") -> np.ndarray:
        """Whether anything lies on each ray within ``[tmin, tmax]`` (any hit, early exit).

        ``tmin`` may be negative and ``zero_directions`` is ``"raise"`` or
        ``"miss"``, as in :meth:`intersect`.

        Returns
        -------
        (N,) bool
        """
        origins, directions, traceable = _check_rays(origins, directions, zero_directions)
        tmin, tmax = check_window(tmin, tmax, allow_negative_tmin=True)
        n = origins.shape[0]
        occluded = np.zeros(n, np.bool_)
        arrays = self._arrays
        if arrays.triangles.shape[0] == 0:
            return occluded
        if traceable is not None:
            occluded[traceable] = self.occluded(origins[traceable], directions[traceable], tmin, tmax)
            return occluded
        kernel = kernels.occluded_serial if n <= SERIAL_BATCH else kernels.occluded_parallel
        kernel(arrays.nodes, arrays.links, arrays.triangles, arrays.offset, origins, directions, tmin,
               min(tmax, FAR), occluded)
        return occluded

    def intersect_all(self, origins, directions, tmin=0.0, tmax=np.inf, max_hits=None,
                      zero_directions="raise") -> AllHits:
        """Every surface crossing of each ray within ``[tmin, tmax]``, or the
        nearest ``max_hits`` of them.

        A ray through an edge or vertex shared by several faces crosses the
        surface once and is reported once (on one of those faces).

        Parameters
        ----------
        origins, directions : (N, 3) or (3,) float
        tmin, tmax : float
            As in :meth:`intersect` (tmin may be negative).
        max_hits : int or None
            Crossings kept per ray, nearest first (``>= 0``); None for all.
        zero_directions : {"raise", "miss"}
            As in :meth:`intersect`: a ray of zero direction has no hits.

        Returns
        -------
        AllHits
            Flat arrays sorted by ``(ray, t)``.
        """
        origins, directions, traceable = _check_rays(origins, directions, zero_directions)
        tmin, tmax = check_window(tmin, tmax, allow_negative_tmin=True)
        limit = _check_max_hits(max_hits)
        if traceable is not None:
            traced = np.flatnonzero(traceable)
            found = self._intersect_all(origins[traced], directions[traced], tmin, tmax, limit)
            return AllHits(traced[found.ray], found.t, found.triangle, found.u, found.v, found.point, found.normal,
                           found.front_face)
        return self._intersect_all(origins, directions, tmin, tmax, limit)

    def _intersect_all(self, origins, directions, tmin, tmax, max_hits) -> AllHits:
        """:meth:`intersect_all` of validated rays, ``max_hits`` an int64."""
        n = origins.shape[0]
        arrays = self._arrays
        if arrays.triangles.shape[0] == 0:
            empty = np.empty(0)
            return AllHits(empty.astype(np.int64), empty, empty.astype(np.int64), empty, empty, np.empty((0, 3)),
                           np.empty((0, 3)), np.zeros(0, np.bool_))
        tmax = min(tmax, FAR)
        counts = np.empty(n, np.int64)
        kernels.count_hits_parallel(arrays.nodes, arrays.links, arrays.triangles, arrays.offset, origins, directions,
                                    tmin, tmax, counts)
        starts = np.zeros(n, np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        total = int(counts.sum())
        rows = np.empty(total, np.int32)
        t = np.empty(total, np.float64)
        u = np.empty(total, np.float64)
        v = np.empty(total, np.float64)
        keep = np.empty(total, np.bool_)
        cursor = np.empty(n, np.int64)
        kernels.collect_hits_parallel(arrays.nodes, arrays.links, arrays.triangles, arrays.offset, origins,
                                      directions, tmin, tmax, starts, cursor, rows, t, u, v, keep,
                                      arrays.merge_length, max_hits)
        ray = np.repeat(np.arange(n, dtype=np.int64), counts)[keep]
        rows = rows[keep]
        t = t[keep]
        u = np.clip(u[keep], 0.0, 1.0)
        v = np.minimum(np.clip(v[keep], 0.0, 1.0), 1.0 - u)
        # The point, normal and side of each hit, computed as the closest-hit
        # kernel computes them, so a ray's first crossing matches intersect.
        ray_directions = directions[ray]
        point = origins[ray] + t[:, None] * ray_directions
        raw_normal = face_normals(arrays.triangles[rows])
        front_face = dot_rows(ray_directions, raw_normal) < 0.0
        return AllHits(ray, t, arrays.face_index[rows].astype(np.int64), u, v, point, unit_rows(raw_normal),
                       front_face)


    def closest_point(self, points, max_distance=np.inf) -> ClosestPoints:
        """Nearest point of the surface to each query point.

        Branch and bound over the tree, nearest box first, with Ericson's
        point/triangle region test at the leaves (:mod:`bvh.queries.closest_point`).

        Parameters
        ----------
        points : (N, 3) or (3,) float
            Query points.
        max_distance : float
            Search radius: surfaces farther than this are not looked for
            (inf: no limit). A smaller radius prunes more of the tree.

        Returns
        -------
        ClosestPoints
            Arrays of length N; ``triangle`` is -1 and ``distance`` inf for a
            point with no surface within ``max_distance``. Of faces at equal
            distance, one is reported.
        """
        points = check_points(points)
        limit = min(check_max_distance(max_distance), FAR ** 0.5) ** 2  # a huge limit squared would overflow
        n = points.shape[0]
        arrays = self._arrays
        rows = np.full(n, -1, np.int32)
        d2, u, v = np.empty((3, n))
        nearest = np.empty((n, 3))
        if arrays.triangles.shape[0] > 0 and n > 0:
            kernel = closest_point.mesh_closest_points_serial if n <= SERIAL_BATCH \
                else closest_point.mesh_closest_points
            kernel(arrays.nodes.reshape(-1), arrays.links.reshape(-1), arrays.triangles.reshape(-1), arrays.offset,
                   points, limit, coherent_order(points), rows, d2, u, v, nearest)
        return _closest_points(arrays, rows, d2, u, v, nearest)

    def sphere_cast(self, origins, directions, radius, tmin=0.0, tmax=np.inf) -> SphereHits:
        """First contact of a sphere of ``radius`` swept along each ray.

        The sphere's centre moves along ``origin + t * direction``; the
        result is the smallest ``t`` in ``[tmin, tmax]`` at which it touches
        the surface (a sphere already touching it at ``tmin`` gives
        ``tmin``). The tree's boxes grown by the radius bound the search, and
        the leaves test the swept sphere against each triangle's face, edges
        and corners in float64 (:mod:`bvh.queries.sphere_cast`). Radius 0 is
        :meth:`intersect`'s ray.

        Parameters
        ----------
        origins, directions : (N, 3) or (3,) float
            The centre's path; directions need not be unit, and ``t`` is
            measured along them as given.
        radius : float or (N,) float
            The sphere's radius, finite and ``>= 0``, one for all or one per ray.
        tmin, tmax : float
            The window of ``t`` searched, ``0 <= tmin <= tmax``; tmax may be inf.

        Returns
        -------
        SphereHits
            Arrays of length N; ``triangle`` is -1 and ``t`` inf on a miss.
            Of faces touched at the same ``t``, one is reported.
        """
        origins, directions = check_rays(origins, directions)
        tmin, tmax = check_window(tmin, tmax)
        n = origins.shape[0]
        radius = check_radius(radius, n)
        arrays = self._arrays
        rows = np.full(n, -1, np.int32)
        t = np.full(n, np.inf)
        u, v = np.full((2, n), np.nan)
        point, center, normal = np.full((3, n, 3), np.nan)
        if arrays.triangles.shape[0] > 0 and n > 0:
            kernel = sphere_cast.mesh_sphere_casts_serial if n <= SERIAL_BATCH else sphere_cast.mesh_sphere_casts
            kernel(arrays.nodes.reshape(-1), arrays.links.reshape(-1), arrays.triangles.reshape(-1), arrays.offset,
                   origins, directions, radius, tmin, min(tmax, FAR), rows, t, u, v, point, center, normal)
        triangle = np.full(n, -1, np.int64)
        found = rows >= 0
        triangle[found] = arrays.face_index[rows[found]]
        return SphereHits(triangle, t, point, center, normal, u, v)


    def overlap(self, shape) -> np.ndarray:
        """Faces that have a point in common with a closed solid.

        One walk of the tree with a conservative shape/box bound at the
        nodes and an exact float64 test at the leaves (:mod:`bvh.queries.overlap`):
        the distance from a sphere's centre or a capsule's segment, the
        separating-axis test of boxes, the clipped triangle for convex
        regions. Boundaries count. Zero-area faces are not in the tree and
        never reported (as rays never hit them).

        Parameters
        ----------
        shape : dict
            ``{"kind": "sphere", "center", "radius"}``, ``{"kind": "aabb",
            "min", "max"}``, ``{"kind": "obb", "center", "axes" (3, 3)
            orthonormal rows, "half_size"}``, ``{"kind": "capsule", "a", "b",
            "radius"}`` or ``{"kind": "convex", "planes" (P, 4)}``, inside
            where ``n . x + d >= 0`` (see :func:`bvh.queries.overlap.shape_record`).

        Returns
        -------
        (K,) int64
            Face indices, ascending.

        Raises
        ------
        ValueError
            On a malformed shape, saying what is wrong.
        """
        record = overlap_kernels.shape_record(shape)
        arrays = self._arrays
        if arrays.triangles.shape[0] == 0:
            return np.zeros(0, np.int64)
        local = overlap_kernels.translated(record, arrays.offset)
        rows = overlap_kernels.mesh_rows(arrays.nodes.reshape(-1), arrays.links.reshape(-1),
                                         arrays.triangles.reshape(-1), local)
        return np.sort(arrays.face_index[rows].astype(np.int64))
    def _dipoles(self, arrays: _Arrays) -> np.ndarray:
        """The dipole data of the tree ``arrays`` holds (:mod:`bvh.queries.winding`).

        Made on the first inside/outside query after a build or a refit, not
        by them: a pass over the triangles that costs more than the refit
        itself (some 2 ms on the bunny, against 1.3-1.6 ms), which a mesh
        that is only picked need not pay.
        Keyed by the node array, which every refit replaces, so a query
        racing a refit computes the data of the tree it reads.
        """
        cached = self._dipole_cache
        if cached is not None and cached[0] is arrays.nodes:
            return cached[1]
        dipoles = winding.dipole_rows(arrays.nodes, arrays.triangles)
        self._dipole_cache = (arrays.nodes, dipoles)
        return dipoles

    def winding_number(self, points) -> np.ndarray:
        """Generalised winding number of the mesh at each point (Jacobson et
        al. 2013), by the hierarchical approximation of Barill et al. (2018).

        1 inside a closed mesh with outward normals (counter-clockwise faces
        seen from outside), 0 outside, -1 inside one turned inside out, 2
        where two closed surfaces overlap. An open mesh gives fractions: the
        solid angle its surface subtends over 4 pi, about 1/2 in the plane
        of a hole. Values are approximate away from 1/2 (see
        :mod:`bvh.queries.winding`: errors of a few hundredths at most, far less
        usually) and re-evaluated near it, so that ``>= 0.5`` is decided as
        the exact sum would decide it. On the surface (within rounding of
        it) the number is undefined, and rounding decides.

        Parameters
        ----------
        points : (N, 3) or (3,) float
            Query points.

        Returns
        -------
        (N,) float64
            0.0 for every point of a mesh without triangles.
        """
        points = check_points(points)
        n = points.shape[0]
        arrays = self._arrays
        result = np.zeros(n)
        if arrays.triangles.shape[0] == 0 or n == 0:
            return result
        dipoles = self._dipoles(arrays)
        kernel = winding.mesh_winding_serial if n <= SERIAL_BATCH else winding.mesh_winding
        kernel(arrays.nodes.reshape(-1), arrays.links.reshape(-1), arrays.triangles.reshape(-1), dipoles,
               arrays.offset, points, np.empty(n), result)
        return result

    def contains(self, points) -> np.ndarray:
        """Whether each point is inside the mesh: its winding number
        (:meth:`winding_number`) is at least 1/2.

        Exact for a closed mesh away from its surface; for an open mesh,
        inside is where the surface wraps the point more than halfway (a
        small hole changes little). A point on the surface, within rounding
        of it, may be either. An inside-out closed mesh contains nothing
        (its winding numbers are -1 and 0).

        Parameters
        ----------
        points : (N, 3) or (3,) float

        Returns
        -------
        (N,) bool
        """
        return self.winding_number(points) >= 0.5

    def signed_distance(self, points, max_distance=np.inf) -> np.ndarray:
        """Distance from each point to the surface (:meth:`closest_point`),
        negative inside (:meth:`contains`).

        Parameters
        ----------
        points : (N, 3) or (3,) float
        max_distance : float
            Search radius (inf: no limit); beyond it the answer is inf, or
            -inf inside.

        Returns
        -------
        (N,) float64
            Its magnitude is ``closest_point(points).distance``; near the
            surface (within rounding) its sign may be either.
        """
        points = check_points(points)
        distance = self.closest_point(points, max_distance).distance
        return np.where(self.contains(points), -distance, distance)


def _carve(n: int, columns) -> list[np.ndarray]:
    """C-contiguous ``(n,)`` or ``(n, width)`` arrays of the given ``(dtype, width)``,
    carved in order out of one allocation.

    Fresh memory costs a page fault per 4 KiB page on first touch; one large
    block gets huge pages (numpy advises the kernel so), which made the
    outputs of a 262,144-ray call 3.5 times cheaper to allocate and fill
    (1.9 against 6.8 ms), some 15% of the whole call. List wider dtypes
    first so that every array stays aligned. A few rays get separate arrays:
    carving costs microseconds, which a one-ray pick notices.
    """
    if n <= CARVE_FROM:
        return [np.empty((n, width) if width > 1 else n, dtype) for dtype, width in columns]
    sizes = [np.dtype(dtype).itemsize * width * n for dtype, width in columns]
    block = np.empty(sum(sizes), np.uint8)
    arrays, start = [], 0
    for (dtype, width), size in zip(columns, sizes):
        array = block[start:start + size].view(dtype)
        arrays.append(array.reshape(n, width) if width > 1 else array)
        start += size
    return arrays


def _check_rays(origins, directions, zero_directions: str):
    """``(origins, directions, traceable)``: the rays validated, and which
    of them to trace (None for all) when zero directions are misses."""
    if zero_directions == "raise":
        return (*check_rays(origins, directions), None)
    if zero_directions == "miss":
        return check_rays_allowing_zero(origins, directions)
    raise ValueError(f"zero_directions must be one of {ZERO_DIRECTIONS}, got {zero_directions!r}")


#: What ``max_hits=None`` means: more crossings than any ray can have.
ALL_HITS = np.int64(2 ** 62)


def _check_max_hits(max_hits) -> np.int64:
    """``max_hits`` as the kernels' int64; None is :data:`ALL_HITS`."""
    if max_hits is None:
        return ALL_HITS
    if isinstance(max_hits, (bool, np.bool_)) or not isinstance(max_hits, (int, np.integer)) or max_hits < 0:
        raise ValueError(f"max_hits must be an integer >= 0 or None, got {max_hits!r}")
    return np.int64(min(int(max_hits), int(ALL_HITS)))


def _misses(n: int) -> Hits:
    nan3 = np.full((n, 3), np.nan)
    return Hits(np.full(n, -1, np.int64), np.full(n, np.inf), np.full(n, np.nan), np.full(n, np.nan),
                nan3, nan3.copy(), np.zeros(n, np.bool_))


def _closest_points(arrays: _Arrays, rows: np.ndarray, d2: np.ndarray, u: np.ndarray, v: np.ndarray,
                    nearest: np.ndarray) -> ClosestPoints:
    """The kernel's raw answers as :class:`ClosestPoints` (NaN, -1, inf where none)."""
    found = rows >= 0
    triangle = np.full(rows.shape[0], -1, np.int64)
    triangle[found] = arrays.face_index[rows[found]]
    distance = np.where(found, np.sqrt(np.where(found, d2, 0.0)), np.inf)
    u = np.where(found, u, np.nan)
    v = np.where(found, v, np.nan)
    nearest[~found] = np.nan
    normal = np.full((rows.shape[0], 3), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        normal[found] = unit_rows(face_normals(arrays.triangles[rows[found]]))
    return ClosestPoints(triangle, nearest, distance, u, v, normal)


def build(vertices, faces, *, builder: Builder | None = None, allow_empty: bool = False, **options) -> MeshBVH:
    """Build the BVH of a triangle mesh.

    Parameters
    ----------
    vertices : (V, 3) float
    faces : (F, 3) int
        Vertex indices of each triangle, in ``[0, V)``. Zero-area faces are
        accepted and never hit.
    builder : callable, optional
        ``builder(boxes, centroids, config) -> Tree``; the binned SAH builder
        by default.
    allow_empty : bool
        Accept a mesh without vertices or faces (refused by default, as a
        likely mistake): its tree is empty and every query misses, as a
        mesh of zero-area faces does.
    **options
        Fields of :class:`bvh.BuildConfig` (``bins``, ``max_leaf_size``, ...).

    Returns
    -------
    MeshBVH

    Raises
    ------
    ValueError
        On malformed or (unless ``allow_empty``) empty meshes, out-of-range
        indices, non-finite coordinates and unknown options, saying which.
    """
    config = BuildConfig.from_options(**options)
    vertices, faces = check_mesh(vertices, faces, allow_empty=allow_empty)
    data = prepare_triangles(vertices, faces) if faces.shape[0] else _no_triangles()
    if data.face_index.shape[0] == 0:
        empty_nodes = aligned_empty((1, ROW), np.float32)
        empty_nodes[:] = 0.0
        return MeshBVH(empty_nodes, np.empty((0, 9), np.float32), np.empty(0, np.int32), data.offset, 0,
                       faces.shape[0], config, 0.0, _vertex_index_rows(faces[:0]), _vertex_index_rows(faces),
                       vertices.shape[0])
    tree = (builder or binned_sah_build)(data.boxes, data.centroids, config)
    if tree.depth >= MAX_DEPTH:
        raise ValueError(f"the builder made a tree of depth {tree.depth}; traversal supports < {MAX_DEPTH}")
    triangles = aligned_empty(data.vertices.shape, np.float32)
    triangles[:] = data.vertices[tree.order]
    face_index = np.ascontiguousarray(data.face_index[tree.order])
    dropped = np.ones(faces.shape[0], bool)
    dropped[face_index] = False
    return MeshBVH(collapse_to_wide(tree), triangles, face_index, data.offset, tree.depth, faces.shape[0], config,
                   tree_sah_cost(tree, config), _vertex_index_rows(faces[face_index]),
                   _vertex_index_rows(faces[dropped]), vertices.shape[0])


def _no_triangles() -> TriangleData:
    """The prepared triangles of a mesh without faces."""
    return TriangleData(np.zeros(3), np.empty((0, 9), np.float32), np.empty(0, np.int32), np.empty((0, 6)),
                        np.empty((0, 3)))


def _vertex_index_rows(faces: np.ndarray) -> np.ndarray:
    """``faces`` as C-contiguous int32 (what :meth:`MeshBVH.refit` gathers
    vertices by, 12 bytes a face), int64 for meshes too large for int32."""
    if faces.shape[0] and int(faces.max()) >= 2 ** 31:
        return np.ascontiguousarray(faces)
    return np.ascontiguousarray(faces, dtype=np.int32)


def tree_sah_cost(tree: Tree, config: BuildConfig) -> float:
    """SAH cost of a builder's binary tree, in units of one triangle test: the
    measure of the builder's work, before collapsing."""
    extent = tree.bounds[:, 3:] - tree.bounds[:, :3]
    area = 2.0 * (extent[:, 0] * extent[:, 1] + extent[:, 1] * extent[:, 2] + extent[:, 2] * extent[:, 0])
    cost = np.where(tree.count > 0, config.intersection_cost * tree.count, config.traversal_cost)
    return float((cost * area).sum() / area[0])
