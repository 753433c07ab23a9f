"""A scene: instanced meshes and analytic shapes under a two-level BVH.

Meshes are geometry, built once (issue 2's BVH) and packed together
(:mod:`bvh.scene.meshes`); objects place a mesh or a shape in the world with an
affine transform (:mod:`bvh.scene.objects`). The top level is a BVH over the
objects' world boxes (:mod:`bvh.scene.top_level`), rebuilt from those boxes
alone when objects change (time proportional to the number of objects, no
mesh tree is touched); a ray goes into each candidate object's space through
its inverse transform (:mod:`bvh.queries.scene_rays`).

Concurrency: queries (:mod:`bvh.scene.queries`) run on an immutable
*snapshot* of the scene's arrays (:mod:`bvh.scene.snapshot`), taken when the
scene last changed, so a query sees the scene before or after an edit, never
half of one, and never waits for an edit to finish
(:mod:`bvh.scene.versions`). Edits are serialised by a lock.

:class:`Scene` is the façade over those parts: it checks arguments, takes the
lock, edits a part and records the change.
"""

import threading
import time
from contextlib import contextmanager

import numpy as np

from ..shapes import KIND_NAMES, LINES, MESH, POINTS, make_shape
from . import line_point_pack
from .checks import (ALL_BITS, UnknownIdError, check_id_array, check_instance_arrays, check_mask, check_name,
                     check_pickable, check_transform, check_transform_batch, matrix_problems)
from .line_sets import LineSets
from .meshes import MeshInfo, MeshRegistry
from .objects import ObjectInfo, ObjectRows, ObjectTable, affine_inverses
from .queries import SceneQueries
from .saving import SceneSaving
from .snapshot import Snapshot
from .versions import Versions


class Scene(SceneQueries, SceneSaving):
    """Meshes and shapes placed in a world, ready for ray picking.

    >>> scene = bvh.Scene()
    >>> bunny = scene.add_mesh(vertices, faces, name="bunny")
    >>> left = scene.add_instance(bunny, transform=np.eye(4), name="left")
    >>> ball = scene.add_shape("sphere", radius=0.5, name="ball")
    >>> hits = scene.intersect(origins, directions)
    >>> hits.object, hits.triangle, hits.point, hits.normal

    The queries (``intersect``, ``closest_point``, ``select``, ...) come
    from :class:`bvh.scene.queries.SceneQueries`, ``save`` and ``open``
    from :class:`bvh.scene.saving.SceneSaving`.
    """

    def __init__(self):
        self._lock = threading.RLock()
        self._meshes = MeshRegistry(self._lock, self._mesh_moved)
        self._line_sets = LineSets()
        self._objects = ObjectTable(self._meshes)
        self._versions = Versions(self._lock, self._meshes, self._line_sets, self._objects)
        #: Serialises saves, so that two saves to one directory write in the
        #: order they captured the scene; held without ``_lock`` while writing.
        self._save_lock = threading.Lock()
        self._annotations: dict = {}

    # ------------------------------------------------------------ meshes
    def add_mesh(self, vertices, faces, normals=None, uvs=None, name=None, source_face=None, alpha=None,
                 **build_options) -> int:
        """Add a triangle mesh (geometry only; place it with :meth:`add_instance`).

        Parameters
        ----------
        vertices : (V, 3) float
        faces : (F, 3) int
        normals : (V, 3) float, optional
            Vertex normals, interpolated into ``SceneHits.shading_normal``.
        uvs : (V, 2) float, optional
            Texture coordinates, interpolated into ``SceneHits.uv``.
        name : str, optional
        source_face : (F,) int, optional
            For each face, the polygon of the source file it was cut from.
        alpha : bvh.MeshAlpha, optional
            Alpha-tested materials of the faces (glTF ``MASK`` and ``BLEND``):
            rays pass through their transparent texels (see :mod:`bvh.queries.alpha`).
        **build_options
            Fields of :class:`bvh.BuildConfig`.

        Returns
        -------
        int
            The mesh id. Adding the same arrays again returns the same id and
            reuses the BVH already built.
        """
        name = check_name(name)
        return self._meshes.add(vertices, faces, normals, uvs, name, source_face, alpha, build_options)

    @property
    def meshes(self) -> list[MeshInfo]:
        """Every mesh, in id order."""
        with self._lock:
            return self._meshes.infos()

    def update_mesh(self, mesh_id, vertices) -> None:
        """Move mesh ``mesh_id``'s vertices, keeping its faces: a refit.

        The mesh's tree keeps its topology and its boxes are recomputed
        bottom-up (:mod:`bvh.builders.refit`); every instance of the mesh follows, and
        queries on other threads see the old mesh or the new one, never a
        mix. When the refitted tree's SAH cost passes ``REBUILD_RATIO``
        times its cost when built, the mesh is built anew on a background
        thread, the refitted tree answering until the new one replaces it
        (:meth:`wait_for_rebuilds`). Like any edit, the change is saved by
        the next :meth:`save`.

        Parameters
        ----------
        mesh_id : int
        vertices : (V, 3) float, finite
            New positions of all the mesh's vertices, in the same order.

        Raises
        ------
        UnknownIdError
            For a mesh id not in the scene.
        ValueError
            On a malformed array, another vertex count, non-finite
            coordinates, a span float32 cannot hold, or a change of which
            faces are zero-area (add the new shape as a new mesh), saying
            which; the mesh is left as it was.
        """
        with self._lock:
            self._meshes.refit(mesh_id, vertices)

    def mesh_cost_ratio(self, mesh_id) -> float:
        """SAH cost of mesh ``mesh_id``'s tree over its cost when built: 1.0
        until a refit (:meth:`update_mesh`), back to 1.0 after a rebuild."""
        with self._lock:
            return self._meshes.cost_ratio(mesh_id)

    def wait_for_rebuilds(self, timeout: float | None = None) -> bool:
        """Wait until no mesh and no top level is being rebuilt in the
        background; False if ``timeout`` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        return self._meshes.wait_for_rebuilds(timeout) and self._versions.wait_for_rebuild(
            None if deadline is None else max(0.0, deadline - time.monotonic()))

    def mesh_vertices(self, mesh_id) -> np.ndarray:
        """(V, 3) float64: the mesh's vertices as added (read-only)."""
        pack, mesh_id = self._mesh_arrays(mesh_id)
        return pack.mesh_vertices(mesh_id)

    def mesh_faces(self, mesh_id) -> np.ndarray:
        """(F, 3) int32: the mesh's faces as added (a read-only view)."""
        pack, mesh_id = self._mesh_arrays(mesh_id)
        return pack.mesh_faces(mesh_id)

    def source_face(self, mesh_id) -> np.ndarray:
        """(F,) int64: the source polygon of each face of the mesh."""
        pack, mesh_id = self._mesh_arrays(mesh_id)
        return pack.source_face[pack.face_start[mesh_id]:pack.face_start[mesh_id + 1]].astype(np.int64)

    # ----------------------------------------------- line and point sets
    def add_lines(self, vertices, segments, name=None) -> int:
        """Add a set of line segments (geometry only; place it with
        ``add_instance(lines=id)``), picked with a tolerance by
        :meth:`intersect` (see :mod:`bvh.queries.lines_points`).

        Parameters
        ----------
        vertices : (V, 3) float
        segments : (E, 2) int
            Each segment's two vertex indices; a segment of zero length is a point.
        name : str, optional

        Returns
        -------
        int
            The set's id, shared by line and point sets.
        """
        return self._add_set(line_point_pack.build_lines, (vertices, segments), name)

    def add_points(self, points, name=None) -> int:
        """Add a set of points (a point cloud; place it with
        ``add_instance(points=id)``), picked with a tolerance by :meth:`intersect`.

        Parameters
        ----------
        points : (P, 3) float
        name : str, optional

        Returns
        -------
        int
            The set's id (as :meth:`add_lines` gives).
        """
        return self._add_set(line_point_pack.build_points, (points,), name)

    @property
    def line_point_sets(self) -> list[dict]:
        """Every line and point set, in id order: ``{"id", "name", "kind"
        ("lines" or "points"), "count" (segments or points), "bounds"}``."""
        with self._lock:
            return self._line_sets.infos()

    def set_vertices(self, set_id) -> np.ndarray:
        """(V, 3) float64: a line set's vertices or a point set's points, as added."""
        with self._lock:
            return self._line_sets.vertices(set_id)

    def set_segments(self, set_id) -> np.ndarray:
        """(E, 2) int32: a line set's segments as added."""
        with self._lock:
            return self._line_sets.segments(set_id)

    # ----------------------------------------------------------- objects
    @contextmanager
    def batch(self, answering: bool = True):
        """Make several edits one change: until the block ends, queries keep
        answering from the scene as it was before it, and other editors wait.

        ``answering=False``, for a block that takes a moment: queries that
        find the scene changed since their last snapshot wait for the block
        to end (and see its change) instead, so the block need not bring
        their snapshot up to date first; in a stream of small edits with no
        query between them, the top level is then refitted once, not once
        per edit.

        >>> with scene.batch():
        ...     scene.set_transform(a, m)
        ...     scene.remove(b)
        """
        with self._versions.batch(answering):
            yield self

    def add_instance(self, mesh_id=None, transform=None, name=None, mask=ALL_BITS, pickable=True, *, lines=None,
                     points=None) -> int:
        """Place mesh ``mesh_id`` in the world; returns the new object's id.

        ``transform`` is a ``(4, 4)`` affine object-to-world matrix (identity
        by default): any invertible one, non-uniform scale and mirroring
        included. Objects with ``pickable=False``, or whose ``mask`` shares no
        bit with a query's, are skipped by queries.

        ``lines=id`` or ``points=id`` (in place of ``mesh_id``) places a line
        or point set of :meth:`add_lines` or :meth:`add_points` instead: an
        object of kind ``"lines"`` or ``"points"``, whose ``params`` name
        the set.
        """
        given = [value is not None for value in (mesh_id, lines, points)]
        if sum(given) != 1:
            raise ValueError("add_instance places one thing: give a mesh id, or lines=id, or points=id")
        transform = check_transform(transform)
        name = check_name(name)
        mask = check_mask(mask)
        with self._lock:
            if mesh_id is None:
                kind = LINES if lines is not None else POINTS
                g = self._line_sets.check_id(lines if lines is not None else points, kind)
                box = self._line_sets.box(g)
                bounds = self._objects.placed_one(self._meshes.pack, -1, None, transform, box)
                return self._added(kind, g, transform, mask, pickable, name, None, {KIND_NAMES[kind]: g}, bounds, box)
            mesh_id = self._meshes.check_id(mesh_id)
            bounds = self._objects.placed_one(self._meshes.committed(), mesh_id, None, transform)
            return self._added(MESH, mesh_id, transform, mask, pickable, name, None, {}, bounds)

    def add_instances(self, mesh_ids, transforms, names=None, masks=None, pickable=None) -> np.ndarray:
        """Place N mesh instances in one pass, as one change; returns their ids.

        Parameters
        ----------
        mesh_ids : int or (N,) int
            One mesh for every object, or each object's.
        transforms : (N, 4, 4) or (N, 3, 4) float
            Object-to-world matrices (or their first three rows), each
            checked as :meth:`add_instance` checks one.
        names : N of str or None, optional
        masks : int or (N,) int, optional
            In ``[0, 0xFFFFFFFF]``; every bit by default (and pickable, True).
        pickable : bool or (N,) bool, optional

        Returns
        -------
        (N,) int64
            The new objects' ids, consecutive, in the order given.

        Raises
        ------
        UnknownIdError
            For a mesh id not in the scene, ``"mesh_ids[3]: no mesh 7 in this scene"``.
        ValueError
            On arrays of the wrong shape or type, or an entry
            :meth:`add_instance` refuses, named by its index as in
            ``"transforms[3]: transform contains NaN or infinite values"``.
            Nothing is added then.

        Notes
        -----
        Vectorised: the objects are those N calls of :meth:`add_instance`
        make, to the last bit, and the next query builds the top level once.
        """
        checked = check_instance_arrays(mesh_ids, transforms, names, masks, pickable)
        # The slowest part of a big placement needs no lock.
        inverses = affine_inverses(checked.transforms)
        with self._lock:
            ids = self._objects.add_instances(self._meshes.committed(), checked, inverses)
            if ids.size:
                self._changed()
            return ids

    def add_shape(self, kind, transform=None, name=None, mask=ALL_BITS, pickable=True, **params) -> int:
        """Place an analytic shape (``sphere``, ``box``, ``quad``, ``polygon``; see
        :mod:`bvh.shapes` for their parameters); returns the new object's id."""
        code, data, params, local = make_shape(kind, **params)
        transform = check_transform(transform)
        name = check_name(name)
        mask = check_mask(mask)
        with self._lock:
            bounds = self._objects.placed_one(self._meshes.pack, -1, None, transform, local)
            return self._added(code, -1, transform, mask, pickable, name, data, params, bounds, local)

    def add_scene(self, other: "Scene", transform=None) -> list[int]:
        """Copy ``other``'s live objects (and the meshes they use) into this scene.

        ``transform`` is applied on top of each object's own. Returns the new
        object ids in ``other``'s object order.
        """
        transform = check_transform(transform)
        added = []
        copies: dict = {}
        for info in other.objects:
            placed = transform @ info.transform
            if info.kind == "mesh":
                if info.mesh not in copies:
                    with other._lock:
                        arguments = other._meshes.arguments(info.mesh)
                    copies[info.mesh] = self.add_mesh(**arguments)
                added.append(self.add_instance(copies[info.mesh], placed, info.name, info.mask, info.pickable))
            elif info.kind in ("lines", "points"):
                key = (info.kind, info.params[info.kind])
                if key not in copies:
                    with other._lock:
                        vertices, segments, set_name = other._line_sets.arguments(key[1])
                    copies[key] = self.add_lines(vertices, segments, set_name) if info.kind == "lines" \
                        else self.add_points(vertices, set_name)
                added.append(self.add_instance(None, placed, info.name, info.mask, info.pickable,
                                               **{info.kind: copies[key]}))
            else:
                added.append(self.add_shape(info.kind, placed, info.name, info.mask, info.pickable, **info.params))
        return added

    def set_transform(self, object_id, transform) -> None:
        """Move an object: its new ``(4, 4)`` object-to-world transform."""
        transform = check_transform(transform)
        with self._lock:
            oid = self._objects.check_id(object_id)
            mesh = int(self._objects.mesh_or_shape(oid))
            bounds = self._objects.placed_one(self._meshes.committed(), mesh, oid, transform)
            self._move(np.array([oid]), transform[None], *(bound[None] for bound in bounds))

    def set_transforms(self, object_ids, transforms) -> None:
        """Move many objects as one edit, all or nothing.

        Parameters
        ----------
        object_ids : (K,) int
            Live objects, each at most once.
        transforms : (K, 4, 4) or (K, 3, 4) float
            Each object's new object-to-world transform: affine matrices, or
            their first three rows. Each is checked as :meth:`set_transform`
            checks one.

        Raises
        ------
        UnknownIdError
            When an id is not a live object of the scene.
        ValueError
            On arrays of the wrong shape or type, an id given twice, or a
            refused matrix (NaN or infinity, last row not ``0 0 0 1``,
            singular or ill-conditioned, placing the object beyond float32's
            range). Either error names the first bad entry and its object,
            ``"transforms[3] (object 17): ..."``; the scene is then unchanged.

        Notes
        -----
        Queries see all of the moves or none (as with :meth:`batch`), and
        the next query refits the top level rather than rebuilding it.
        Vectorised: 10,000 moves cost milliseconds.
        """
        ids, matrices = check_transform_batch(object_ids, transforms)
        with self._lock:
            placed = self._objects.fast_moves(ids, matrices)
            if placed is not None:
                matrices[:, 3] = (0.0, 0.0, 0.0, 1.0)
                self._move(ids, matrices, *placed)
                return
        problems = matrix_problems(matrices)
        with self._lock:
            cover, reported = self._objects.checked_moves(ids, matrices, problems)
            if ids.size:
                matrices[:, 3] = (0.0, 0.0, 0.0, 1.0)
                self._move(ids, matrices, cover, reported)

    def set_pickable(self, object_id, pickable: bool) -> None:
        """Whether queries may hit the object."""
        self._set_flag(object_id, "pickable", check_pickable(pickable))

    def set_mask(self, object_id, mask) -> None:
        """The object's mask: a query hits it only if their masks share a bit."""
        self._set_flag(object_id, "mask", check_mask(mask))

    def set_name(self, object_id, name) -> None:
        name = check_name(name)
        with self._lock:
            oid = self._objects.check_id(object_id)
            # Names live in the saved manifest, not in the arrays or a
            # snapshot: nothing else to mark.
            self._objects.names[oid] = name

    def remove(self, object_id) -> None:
        """Remove an object; its id is never reused. Its mesh stays in the scene."""
        with self._lock:
            self._objects.remove(self._objects.check_id(object_id))
            self._changed()

    def remove_many(self, ids) -> None:
        """Remove objects ``ids (K,)`` as one change, all or nothing.

        Raises
        ------
        UnknownIdError, ValueError
            For an id that is no live object, or one given twice, naming
            the first (``"ids[3]: no object 9 in this scene"``); nothing is removed then.
        """
        ids = check_id_array("ids", ids)
        with self._lock:
            self._objects.remove_many(ids)
            if ids.size:
                self._changed()

    @property
    def objects(self) -> list[ObjectInfo]:
        """Every live object, in id order."""
        with self._lock:
            counts = self._meshes.committed().triangle_counts()
            return [self._objects.info(oid, counts) for oid in self._objects.live()]

    def has_object(self, object_id) -> bool:
        """Whether ``object_id`` is a live object of the scene."""
        try:
            self._objects.check_id(object_id)
        except UnknownIdError:
            return False
        return True

    def object(self, object_id) -> ObjectInfo:
        """One object; :class:`UnknownIdError` if there is none with this id."""
        with self._lock:
            oid = self._objects.check_id(object_id)
            return self._objects.info(oid, self._meshes.committed().triangle_counts())

    def __len__(self) -> int:
        return self._objects.live_count

    @property
    def triangle_count(self) -> int:
        """Triangles over all live objects, counting each instance."""
        with self._lock:
            return self._objects.triangle_count(self._meshes.committed().triangle_counts())

    @property
    def bounds(self) -> np.ndarray:
        """(2, 3) float64: world box of the live objects (their boxes as
        :class:`ObjectInfo` reports them); NaN when there are none."""
        with self._lock:
            return self._objects.world_box()

    def object_rows(self) -> "ObjectRows":
        """The live objects as arrays, copied at one moment: what :attr:`objects`
        gives, without making an :class:`ObjectInfo` per object."""
        with self._lock:
            return self._objects.rows(self._meshes.committed().triangle_counts())

    # ---------------------------------------------------------- snapshot
    @contextmanager
    def pinned(self, read=None):
        """Answer every query made on this thread inside the block from the
        scene as it is when the block begins, while other threads go on
        editing it; the block gets the result of ``read()``.

        ``read`` (optional) is called with the scene's lock held, at the
        moment the state is taken, so what it reads matches the queries'
        answers: a service reads the object table its edits publish inside
        :meth:`batch`. A query that takes a while on a scene edited a
        thousand times a second needs no retries and holds up no edit.

        >>> with scene.pinned(lambda: table_version) as version:
        ...     hits = scene.intersect(origins, directions)  # the scene at ``version``
        """
        with self._versions.pinned(read) as value:
            yield value

    def top_level_cost_ratio(self) -> float:
        """SAH cost (``bvh.builders.refit.wide_sah_cost``) of the top-level tree the
        scene's queries use now over its cost when it was last built: 1.0
        after a build, moved by refits (see ``REBUILD_RATIO``, past which
        a new one is built: see ``bvh.scene.versions``)."""
        return self._snapshot().top.cost_ratio

    @property
    def top_level_builds(self) -> int:
        """How many times the top-level tree was built whole (not refitted)
        since the scene was made or opened."""
        return self._versions.builds

    # ------------------------------------------------------------ internals
    def _snapshot(self) -> Snapshot:
        """What queries answer from: this thread's pinned snapshot (see
        :meth:`pinned`), else the scene as it is now."""
        return self._versions.for_query()

    def _changed(self, moved=None, flagged=None) -> None:
        """Record an edit (call with the lock held; see ``Versions.changed``)."""
        # A new token is drawn by the next save: a random draw costs a
        # system call, more than the rest of a one-object move.
        self._objects.token = None
        self._versions.changed(moved, flagged)

    def _added(self, kind: int, mesh_of: int, transform, mask: int, pickable, name, shape_data, params, bounds,
               shape_box=None) -> int:
        """A new object (``ObjectTable.add``), recorded; call with the lock held."""
        oid = self._objects.add(kind, mesh_of, transform, mask, bool(pickable), name, shape_data, params, bounds,
                                shape_box)
        self._changed()
        return oid

    def _move(self, ids: np.ndarray, matrices: np.ndarray, cover: np.ndarray, reported: np.ndarray) -> None:
        """Objects ``ids`` moved (``ObjectTable.move``), recorded; call with the lock held."""
        self._objects.move(ids, matrices, cover, reported)
        self._changed(moved=ids)

    def _add_set(self, build, arguments: tuple, name) -> int:
        """A new line or point set: ``build(*arguments)``, named ``name``."""
        name = check_name(name)
        chunk = build(*arguments)
        with self._lock:
            return self._line_sets.add(chunk, name)

    def _set_flag(self, object_id, column: str, value) -> None:
        """Object ``object_id``'s ``mask`` or ``pickable`` set to ``value``:
        what queries see changes, the top-level tree does not."""
        with self._lock:
            oid = self._objects.check_id(object_id)
            getattr(self._objects, column)[oid] = value
            self._changed(flagged=np.array([oid]))

    def _mesh_moved(self, mesh: int, pack) -> None:
        """Mesh ``mesh``'s vertices moved in the new ``pack``: its instances follow."""
        self._objects.follow(mesh, pack)
        self._changed()

    def _mesh_arrays(self, mesh_id) -> tuple:
        with self._lock:
            mesh_id = self._meshes.check_id(mesh_id)
            return self._meshes.committed(), mesh_id
