"""What a scene answers: closest hits, any hits, every crossing, nearest
points, swept spheres, inside/outside, overlaps, selections, ID buffers.

Each query checks its arguments, takes its :class:`bvh.scene.runner.Query`
(the snapshot it answers from, the objects it sees, its kernels' leading
arguments) from one preamble, :meth:`SceneQueries._query`, runs its kernel
through it (``Query.run``: serial or parallel, outputs allocated), and turns
the raw outputs into its result (:mod:`bvh.scene.results`).
"""

import numpy as np

from .._jit import FAR
from ..hits import SceneAllHits, SceneClosestPoints, SceneContains, SceneHits, SceneSphereHits, Selection
from ..io.materials import DEFAULT_CUTOFF
from ..queries import overlap as overlap_kernels, scene_rays
from ..queries.frustum import check_planes
from ..queries.idbuffer import IdBuffer, missed as id_buffer_missed, trace as trace_id_buffer
from ..queries.point_order import coherent_order
from ..validation import check_max_distance, check_points, check_radius, check_rays, check_window
from . import results, selection
from .checks import (ALL_BITS, check_alpha_options, check_select_planes, check_selection_options, check_tolerances,
                     tolerance_rows)
from .runner import (CLOSEST_HITS, CLOSEST_POINTS, CONTAINMENT, OCCLUSION, PICKS, SPHERE_CASTS, Query, closest_outputs,
                     containment_outputs, enabled_objects, hit_outputs, occlusion_outputs, pick_outputs,
                     sphere_outputs)


class SceneQueries:
    """The queries of :class:`bvh.Scene`, over the snapshots its versions give
    (``_versions``) and its meshes' derived data (``_meshes``)."""

    def _query(self, mask, objects, exclude, alpha: tuple | None = None, lines: bool = False) -> Query:
        """The one preamble of every query: what it reads (:class:`bvh.scene.runner.Query`).

        Parameters
        ----------
        mask, objects, exclude
            Which objects it sees (:func:`bvh.scene.runner.enabled_objects`).
        alpha : (alpha_test, alpha_cutoff), optional
            For a ray query: its alpha test (``Snapshot.traced``).
        lines : bool
            A closest-hit pick: when the scene holds line or point objects,
            it walks them too (:mod:`bvh.queries.lines_points`), its head
            ``(arrays, line and point arrays, alpha)``.
        """
        snap = self._versions.for_query()
        if lines and snap.has_line_points:
            lp, _ = snap.line_point_arrays()
            enabled = enabled_objects(snap, mask, objects, exclude, snap.pick_enabled)
            arrays, alpha_tuple = snap.traced(snap.arrays, *alpha)
            return Query(snap, enabled, (arrays, lp._replace(enabled=enabled), alpha_tuple))
        enabled = enabled_objects(snap, mask, objects, exclude)
        arrays = snap.with_enabled(enabled)
        return Query(snap, enabled, (arrays,) if alpha is None else snap.traced(arrays, *alpha))

    def _objects_seen(self, planes: np.ndarray, mask, objects, exclude) -> tuple:
        """``(snapshot, [(object id, box state), ...])`` of a selection by
        ``planes`` (:func:`bvh.scene.selection.objects_in_frustum`)."""
        query = self._query(mask, objects, exclude)
        return query.snap, selection.objects_in_frustum(query.snap, query.enabled, planes)

    def intersect(self, origins, directions, tmin=0.0, tmax=np.inf, mask=ALL_BITS, cull_backfaces=False,
                  objects=None, exclude=None, alpha_test=True, alpha_cutoff=DEFAULT_CUTOFF, line_tolerance=0.0,
                  point_tolerance=0.0, line_slope=0.0, point_slope=0.0) -> SceneHits:
        """Closest hit of each ray in ``[tmin, tmax]``.

        Parameters
        ----------
        origins, directions : (N, 3) or (3,) float
            World rays ``origin + t * direction``; directions need not be unit.
        tmin, tmax : float
            The window of ``t`` searched, ``0 <= tmin <= tmax``; tmax may be inf.
        mask : int
            Only objects whose mask shares a bit with this are hit.
        cull_backfaces : bool
            Ignore surfaces whose normal points along the ray.
        objects, exclude : iterable of int, optional
            Consider only these objects; skip these objects.
        alpha_test : bool
            Let rays through the transparent texels of alpha-tested faces
            (glTF ``MASK`` and ``BLEND`` materials, :mod:`bvh.queries.alpha`).
        alpha_cutoff : float
            The cutoff of ``BLEND`` materials, in ``[0, 1]``: alpha below it
            is transparent (``MASK`` materials use their own ``alphaCutoff``).
        line_tolerance, point_tolerance : float or (N,) float
            How near (world units) a ray must pass to a segment or a point of
            a line or point object to hit it, ``>= 0``.
        line_slope, point_slope : float or (N,) float
            Tolerance added per unit of distance along the ray (a cone):
            ``tol(t) = tolerance + slope * t * |direction|``; a camera's pixel
            tolerance is one (:meth:`bvh.camera.Camera.pixel_tolerance`).
            See :mod:`bvh.queries.lines_points` for what a line or point hit is and
            how it competes with a surface behind or under it.

        Returns
        -------
        SceneHits
            Arrays of length N; ``object`` is -1 and ``t`` inf on a miss.
            ``primitive`` says what was hit; a segment's hit gives its
            ``segment`` and ``s``, a point's its ``point_index``.
        """
        origins, directions = check_rays(origins, directions)
        tmin, tmax = check_window(tmin, tmax)
        alpha = check_alpha_options(alpha_test, alpha_cutoff)
        n = origins.shape[0]
        tolerances = check_tolerances(n, line_tolerance, line_slope, point_tolerance, point_slope)
        query = self._query(mask, objects, exclude, alpha, lines=True)
        snap = query.snap
        if snap.has_line_points:
            # One walk over surfaces, segments and points (bvh.queries.lines_points).
            out = query.run(PICKS, pick_outputs, n, origins, directions, tolerance_rows(n, tolerances),
                            snap.line_point_arrays()[1], tmin, min(tmax, FAR), bool(cull_backfaces))
            return results.picked_hits(snap, out)
        if not snap.traceable:
            return results.missed_hits(n)
        # The kernel writes every output of every ray, misses included.
        out = query.run(CLOSEST_HITS, hit_outputs, n, origins, directions, tmin, min(tmax, FAR), bool(cull_backfaces))
        return results.surface_hits(snap, out)

    def occluded(self, origins, directions, tmin=0.0, tmax=np.inf, mask=ALL_BITS, objects=None,
                 exclude=None, alpha_test=True, alpha_cutoff=DEFAULT_CUTOFF) -> np.ndarray:
        """Whether anything lies on each ray within ``[tmin, tmax]`` (any hit, early exit);
        the options as :meth:`intersect`'s.

        Returns
        -------
        (N,) bool
        """
        origins, directions = check_rays(origins, directions)
        tmin, tmax = check_window(tmin, tmax)
        query = self._query(mask, objects, exclude, check_alpha_options(alpha_test, alpha_cutoff))
        return query.run(OCCLUSION, occlusion_outputs, origins.shape[0], origins, directions, tmin,
                         min(tmax, FAR))[0]

    def intersect_all(self, origins, directions, tmin=0.0, tmax=np.inf, mask=ALL_BITS, objects=None,
                      exclude=None, alpha_test=True, alpha_cutoff=DEFAULT_CUTOFF) -> SceneAllHits:
        """Every surface crossing of each ray within ``[tmin, tmax]`` (the
        options as :meth:`intersect`'s: transparent texels are not crossings).

        A ray through an edge or vertex shared by faces of one object crosses
        the surface once and is reported once. Shapes report each crossing (a
        ray through a sphere: two).

        Returns
        -------
        SceneAllHits
            Flat arrays sorted by ``(ray, t)``; each hit's point, normals,
            texture coordinates and side as :meth:`intersect` gives them.
        """
        origins, directions = check_rays(origins, directions)
        tmin, tmax = check_window(tmin, tmax)
        query = self._query(mask, objects, exclude, check_alpha_options(alpha_test, alpha_cutoff))
        if not query.snap.traceable:
            return results.no_crossings()
        n = origins.shape[0]
        tmax = min(tmax, FAR)
        # Two passes: count each ray's crossings, then collect them into rows carved by those counts.
        counts = np.empty(n, np.int64)
        scene_rays.count_hits_parallel(*query.head, origins, directions, tmin, tmax, counts)
        starts = np.zeros(n, np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        total = int(counts.sum())
        rows, objects_hit = np.empty((2, total), np.int32)
        t, u, v = np.empty((3, total))
        keep = np.empty(total, np.bool_)
        scene_rays.collect_hits_parallel(*query.head, origins, directions, tmin, tmax, starts, np.empty(n, np.int64),
                                         rows, t, u, v, objects_hit, keep)
        return results.crossings(query.snap, origins, directions, counts, rows, t, u, v, objects_hit, keep)

    def closest_point(self, points, max_distance=np.inf, mask=ALL_BITS, objects=None,
                      exclude=None) -> SceneClosestPoints:
        """Nearest surface point of the scene to each world point.

        Branch and bound over the top level and each mesh's tree, nearest box
        first (:mod:`bvh.queries.closest_point`). Distances are world distances, also
        in non-uniformly scaled or sheared instances: their triangles are
        measured in the world, and their trees searched with a lower bound.
        Shapes answer too: a sphere (an ellipsoid under a non-uniform scale),
        a box's six faces, a quad, a polygon.

        Parameters
        ----------
        points : (N, 3) or (3,) float
            World query points.
        max_distance : float
            Search radius in world units (inf: no limit).
        mask, objects, exclude
            Which objects are searched, as in :meth:`intersect`.

        Returns
        -------
        SceneClosestPoints
            Arrays of length N; ``object`` is -1 and ``distance`` inf for a
            point with nothing within ``max_distance``.
        """
        points = check_points(points)
        limit = min(check_max_distance(max_distance), FAR ** 0.5) ** 2  # a huge limit squared would overflow
        query = self._query(mask, objects, exclude)
        out = query.run(CLOSEST_POINTS, closest_outputs, points.shape[0], points, limit, coherent_order(points))
        return results.closest_points(query.snap, out)

    def sphere_cast(self, origins, directions, radius, tmin=0.0, tmax=np.inf, mask=ALL_BITS, objects=None,
                    exclude=None) -> SceneSphereHits:
        """First contact of a sphere of ``radius`` swept along each world ray.

        The sphere's centre moves along ``origin + t * direction``; the
        result is the smallest ``t`` in ``[tmin, tmax]`` at which it touches
        a surface (``tmin`` if it already does). The same walk as
        :meth:`intersect`, with boxes grown by the radius (by an upper bound
        of its size in each object's space), and the leaves testing the
        sphere against each triangle mapped to the world
        (:mod:`bvh.queries.sphere_cast`): distances are world distances, also in
        non-uniformly scaled or sheared instances. Shapes answer too: a
        sphere (exact under a rotation and uniform scale; an ellipsoid
        otherwise, by conservative advancement, see
        ``bvh.queries.sphere_cast._swept_ellipsoid``), a box, a quad, a polygon.

        Parameters
        ----------
        origins, directions : (N, 3) or (3,) float
            The centre's world path; directions need not be unit.
        radius : float or (N,) float
            World radius, finite and ``>= 0``, one for all or one per ray.
        tmin, tmax : float
            The window of ``t`` searched, ``0 <= tmin <= tmax``; tmax may be inf.
        mask, objects, exclude
            Which objects are touched, as in :meth:`intersect`.

        Returns
        -------
        SceneSphereHits
            Arrays of length N; ``object`` is -1 and ``t`` inf on a miss.
        """
        origins, directions = check_rays(origins, directions)
        tmin, tmax = check_window(tmin, tmax)
        n = origins.shape[0]
        radius = check_radius(radius, n)
        query = self._query(mask, objects, exclude)
        out = query.run(SPHERE_CASTS, sphere_outputs, n, origins, directions, radius, tmin, min(tmax, FAR))
        return results.sphere_hits(query.snap, out)

    def contains(self, points, mask=ALL_BITS, objects=None, exclude=None) -> SceneContains:
        """Which object, if any, holds each world point.

        Each object whose world box holds the point answers in its own
        space, where an affine map keeps inside and outside: a mesh by its
        winding number (``MeshBVH.contains``, the same in a scaled, sheared
        or mirrored instance: a mirror turns the surface inside out in the
        world, not in the object), a sphere or a box exactly; quads and
        polygons are open and hold nothing. See :class:`SceneContains` for
        the rule among several objects and for open meshes.

        Parameters
        ----------
        points : (N, 3) or (3,) float
            World points.
        mask, objects, exclude
            Which objects are searched, as in :meth:`intersect`.

        Returns
        -------
        SceneContains
        """
        points = check_points(points)
        query = self._query(mask, objects, exclude)
        n = points.shape[0]
        dipoles = self._meshes.dipoles(query.snap.pack) if n and query.snap.traceable else None
        found = query.run(CONTAINMENT, containment_outputs, n, dipoles, points)[2]
        return SceneContains(found >= 0, found)

    def signed_distance(self, points, max_distance=np.inf, mask=ALL_BITS, objects=None,
                        exclude=None) -> np.ndarray:
        """World distance from each point to the nearest searched surface
        (:meth:`closest_point`), negative inside any searched object
        (:meth:`contains`).

        Parameters
        ----------
        points : (N, 3) or (3,) float
        max_distance : float
            Search radius in world units (inf: no limit); beyond it the
            answer is inf, or -inf inside.
        mask, objects, exclude
            Which objects are searched, as in :meth:`intersect`.

        Returns
        -------
        (N,) float64
        """
        points = check_points(points)
        distance = self.closest_point(points, max_distance, mask, objects, exclude).distance
        inside = self.contains(points, mask, objects, exclude).inside
        return np.where(inside, -distance, distance)

    def overlap(self, shape, triangles=False, mask=ALL_BITS, objects=None, exclude=None) -> Selection:
        """Objects (or their triangles) that have a point in common with a
        closed solid given in the world.

        One walk of the scene (:mod:`bvh.queries.overlap`): the top level and each
        mesh's tree with a conservative shape/box bound, the triangles with
        an exact float64 test. Boxes and convex regions are tested in each
        object's space (half-spaces map exactly); spheres and capsules in the
        world, on the triangles mapped there, so that a non-uniformly scaled
        or sheared instance is measured exactly. Shape objects are their
        surfaces: a box's and a quad's triangles, a convex polygon's fan of
        triangles, a sphere's (an ellipsoid's) surface, exactly.

        Parameters
        ----------
        shape : dict
            As for :meth:`bvh.MeshBVH.overlap`, in world coordinates.
        triangles : bool
            Report each touching triangle (as :meth:`select` does with
            ``mode="triangles"``) rather than each object once.
        mask, objects, exclude
            Which objects are searched, as in :meth:`intersect`.

        Returns
        -------
        Selection
            Object ids ascending; with ``triangles``, one row per touching
            face (ascending within its object) and shapes once with -1, else
            -1 for every object.

        Raises
        ------
        ValueError
            On a malformed shape; and when the query reaches a polygon
            object whose outline is not convex (tested by its fan of
            triangles, which covers only convex outlines): exclude it.
        """
        record = overlap_kernels.shape_record(shape)
        query = self._query(mask, objects, exclude)
        none = np.zeros(0, np.int64)
        if not query.snap.traceable:
            return Selection(none, none.copy())
        rows, found, not_convex = overlap_kernels.scene_pairs(*query.head, record)
        if not_convex >= 0:
            raise ValueError(f"object {not_convex} is a polygon whose outline is not convex: overlap tests "
                             "polygons as a fan of triangles, which covers only convex outlines; "
                             f"leave it out with exclude=[{not_convex}]")
        found = found.astype(np.int64)
        if not triangles:
            chosen = np.unique(found)
            return Selection(chosen, np.full(chosen.shape[0], -1, np.int64))
        face = np.full(rows.shape[0], -1, np.int64)
        on_mesh = rows >= 0
        face[on_mesh] = query.snap.arrays.face_index[rows[on_mesh]]
        order = np.lexsort((face, found))
        return Selection(found[order], face[order])

    def select(self, planes=None, mode="objects", mask=ALL_BITS, objects=None, exclude=None,
               containment="crossing", lasso=None) -> Selection:
        """Objects (or their triangles) that meet, or lie within, a convex region
        or a camera's lasso.

        Parameters
        ----------
        planes : (P, 4) float, optional
            World half-spaces ``n . x + d >= 0`` whose intersection is the
            region: a camera's frustum (see :meth:`bvh.camera.Camera.frustum`).
            Default, with ``lasso``: the frustum of its bounding rectangle.
        mode : "objects" or "triangles"
        mask, objects, exclude
            As for :meth:`intersect`; objects that are not pickable are skipped.
        containment : "crossing" or "window"
            As the two marquees of CAD tools: ``"crossing"`` takes what meets
            the region (a point in common is enough), ``"window"`` only what
            lies entirely inside it: an object when all its triangles do, and
            in ``"triangles"`` mode only the triangles that do.
        lasso : bvh.queries.lasso.Lasso, optional
            A camera's pixel polygon: the region is what lies between the
            camera's near and far planes and projects inside the polygon
            (:mod:`bvh.queries.lasso`), culled by ``planes``.

        Returns
        -------
        Selection
            Objects are culled by their world boxes (a box outside the region
            leaves its object out, a box inside takes it whole), then meshes
            are tested exactly, triangle by triangle (for a window, every
            vertex a face uses must be inside). Shapes: for a crossing, judged
            by their world boxes, a conservative answer; for a window, exactly
            (see :func:`bvh.scene.selection._shape_within`). With a lasso, no box is taken whole
            (the region is not convex): every triangle of a mesh whose box
            crosses the bounding frustum is tested; boxes and quads are tested
            exactly as their surfaces' triangles (a box also when the region
            lies wholly inside it), spheres and polygons by their world boxes
            (for a window, conservatively: only when the world box is within).
        """
        window = check_selection_options(mode, containment)
        if lasso is not None:
            planes = check_planes(lasso.planes if planes is None else planes)
            return selection.in_lasso(*self._objects_seen(planes, mask, objects, exclude), lasso, mode, window)
        planes = check_select_planes(planes)
        return selection.in_planes(*self._objects_seen(planes, mask, objects, exclude), planes, mode, window)

    def select_visible(self, camera, pixels, mode="objects", mask=ALL_BITS, objects=None,
                       exclude=None, alpha_test=True, alpha_cutoff=0.5) -> Selection:
        """What a camera sees through some of its pixels: one closest-hit ray
        per pixel (visible-only selection, as an ID render would answer it).

        Parameters
        ----------
        camera : bvh.camera.Camera
        pixels : (M, 2) int
            ``[column, row]`` of each pixel; the ray goes through its centre
            (``[column + 0.5, row + 0.5]``, as :meth:`id_buffer` casts).
        mode : "objects" or "triangles"
        mask, objects, exclude, alpha_test, alpha_cutoff
            As for :meth:`intersect`.

        Returns
        -------
        Selection
            Each object hit once, ascending; in ``"triangles"`` mode each
            (object, face) hit once (shapes once, with -1).
        """
        check_selection_options(mode)
        pixels = np.asarray(pixels)
        if pixels.shape[0] == 0:
            return Selection(np.zeros(0, np.int64), np.zeros(0, np.int64))
        hits = self.intersect(*camera.rays(pixels + 0.5), mask=mask, objects=objects, exclude=exclude,
                              alpha_test=alpha_test, alpha_cutoff=alpha_cutoff)
        return selection.visible(hits.object, hits.triangle, mode)

    def id_buffer(self, camera, mask=ALL_BITS, objects=None, exclude=None, cull_backfaces=False, tmin=0.0,
                  tmax=np.inf, normals=False, barycentrics=False, alpha_test=True, alpha_cutoff=0.5) -> IdBuffer:
        """What each pixel of ``camera``'s image shows (:mod:`bvh.queries.idbuffer`).

        Parameters
        ----------
        camera : bvh.camera.Camera
        mask, objects, exclude, cull_backfaces, tmin, tmax, alpha_test, alpha_cutoff
            As for :meth:`intersect`: a transparent texel lets the pixel's ray through.
        normals, barycentrics : bool
            Also fill :attr:`IdBuffer.normal` and :attr:`IdBuffer.barycentric`.

        Returns
        -------
        IdBuffer
            Pixel ``(x, y)`` (row ``y * width + x``) holds the closest hit of
            the ray through ``[x + 0.5, y + 0.5]``: what :meth:`intersect`
            answers for ``camera.rays`` of that pixel centre.
        """
        tmin, tmax = check_window(tmin, tmax)
        query = self._query(mask, objects, exclude, check_alpha_options(alpha_test, alpha_cutoff))
        if not query.snap.traceable:
            return id_buffer_missed(camera, normals, barycentrics)
        return trace_id_buffer(*query.head, camera, tmin, min(tmax, FAR), cull_backfaces, normals, barycentrics)

