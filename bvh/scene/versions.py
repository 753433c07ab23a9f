"""Which version of a scene its queries see: the current snapshot, the edits
recorded since it was made, batches of edits, and pinned reads.

Queries answer from an immutable :class:`bvh.scene.snapshot.Snapshot`. An
edit only records what it changed and drops the current snapshot; the next
query makes a new one, derived from the last (the top level refitted) when
only transforms, masks or pickability changed, built whole otherwise. Edits
are serialised by the scene's lock; a query takes the lock only to make a
snapshot.

When refits have made the top-level tree cost more than ``REBUILD_RATIO``
times its cost when built, a scene of at most :data:`SYNC_BUILD_LIMIT`
objects builds it anew at once; a larger one builds it on a background
thread (:class:`TopLevelRebuild`) from the boxes of that moment, the refitted
tree answering meanwhile, and the first snapshot after the build is done
takes the new tree, refitted to the objects moved since: an editor dragging
in a million-object scene never waits for a build of seconds.
"""

import logging
import threading
from contextlib import contextmanager

import numpy as np

from .line_sets import LineSets
from .meshes import MeshRegistry
from .objects import ObjectTable
from .snapshot import Snapshot
from .top_level import REBUILD_RATIO, TopLevel, finite_boxes

_log = logging.getLogger("bvh")

#: Edits recorded since the last snapshot past which their object lists are
#: merged into one (:func:`_pending`).
PENDING_LIMIT = 1024

#: Scenes of at most this many objects build a degraded top level anew on the
#: thread of the query that needs it (a few milliseconds: less than a
#: background thread's hand-over is worth); larger ones in the background
#: (at 10,000 objects a build on the query's thread made the p99 of a drag
#: across the scene 28 ms: ``bench.scale``).
SYNC_BUILD_LIMIT = 2_000


class TopLevelRebuild:
    """A top-level tree being built on a background thread from the world
    boxes of one snapshot, and the objects moved since that snapshot.

    Parameters
    ----------
    bounds : (O, 2, 3) float64
        The snapshot's world boxes; read (copied) at the thread's start only,
        so that the recycling of snapshots (:mod:`bvh.scene.recycling`)
        writes in their memory again soon.
    live : (K,) int64
        The snapshot's live objects.
    """

    def __init__(self, bounds: np.ndarray, live: np.ndarray):
        #: Arrays of objects moved since ``bounds``, appended under the scene's lock.
        self.moved: list[np.ndarray] = []
        self.tree: TopLevel | None = None
        self._inputs = [bounds, live]
        self.thread = threading.Thread(target=self._build, name="bvh-top-level", daemon=True)
        self.thread.start()

    @property
    def done(self) -> bool:
        return not self.thread.is_alive()

    def _build(self) -> None:
        try:
            bounds, live = self._inputs
            self._inputs = None
            objects, boxes = finite_boxes(bounds, live)
            count = bounds.shape[0]
            del bounds, live
            tree = TopLevel.from_boxes(objects, boxes, count)
            tree.spare("nodes", "cost_terms")
            self.tree = tree
        except Exception:
            _log.exception("building the top level in the background failed; the refitted tree keeps answering")


class Versions:
    """The snapshot a scene's queries answer from, and the edits since it.

    Parameters
    ----------
    lock : threading.RLock
        The scene's lock.
    meshes, line_sets, objects
        The scene's parts a snapshot is made of.
    """

    def __init__(self, lock, meshes: MeshRegistry, line_sets: LineSets, objects: ObjectTable):
        self._lock = lock
        self._meshes = meshes
        self._line_sets = line_sets
        self._objects = objects
        self._snap: Snapshot | None = None
        #: What changed since ``_base``, the last snapshot made: objects
        #: moved, objects whose mask or pickability changed (arrays of ids,
        #: repeats allowed), and whether anything else did (an object added
        #: or removed, a mesh changed), which makes the next snapshot build
        #: the top level anew rather than refit it.
        self._base: Snapshot | None = None
        self.moved: list[np.ndarray] = []
        self.flagged: list[np.ndarray] = []
        self._restructured = True
        #: Top-level trees built whole (not refitted) so far.
        self.builds = 0
        #: The background build of the top level under way, if any.
        self.rebuild: TopLevelRebuild | None = None
        #: A top-level tree of the objects as they are, for the next whole
        #: snapshot to take instead of building one (a scene just opened).
        self.prebuilt: TopLevel | None = None
        self._prebuilt_moved: list[np.ndarray] = []
        self._batching = 0
        self._stale = False
        # Per thread: the snapshot its queries answer from inside ``pinned``.
        self._pins = threading.local()

    def changed(self, moved=None, flagged=None) -> None:
        """Record an edit (call with the lock held): objects ``moved`` (new
        transforms and boxes), objects ``flagged`` (new mask or
        pickability), or, with neither, one the top level cannot follow by a
        refit (an object added or removed, a mesh changed)."""
        if moved is not None:
            self.moved = _pending(self.moved, moved)
            if self.prebuilt is not None:
                self._prebuilt_moved = _pending(self._prebuilt_moved, moved)
        elif flagged is not None:
            self.flagged = _pending(self.flagged, flagged)
        else:
            self._restructured = True
            self.prebuilt = None
        if self._batching:
            self._stale = True
        else:
            self._snap = None

    @contextmanager
    def batch(self, answering: bool):
        """``Scene.batch``: hold the lock for a block of edits; queries keep
        answering from the snapshot of before it (made first, unless not
        ``answering``), and see the block's edits once it ends."""
        with self._lock:
            if answering:
                self.current()
            self._batching += 1
            try:
                yield
            finally:
                self._batching -= 1
                if self._batching == 0 and self._stale:
                    self._stale = False
                    self._snap = None

    @contextmanager
    def pinned(self, read=None):
        """``Scene.pinned``: this thread's queries answer from the snapshot of
        the block's start; the block gets ``read()``, called at that moment
        with the lock held."""
        with self._lock:
            snap = self.current()
            value = read() if read is not None else None
        outer = getattr(self._pins, "snapshot", None)
        self._pins.snapshot = snap
        try:
            yield value
        finally:
            self._pins.snapshot = outer

    def for_query(self) -> Snapshot:
        """What a query answers from: this thread's pinned snapshot (see
        :meth:`pinned`), else the scene as it is now."""
        pinned = getattr(self._pins, "snapshot", None)
        return self.current() if pinned is None else pinned

    def current(self) -> Snapshot:
        """The snapshot of the scene as it is now (made if an edit dropped it)."""
        snap = self._snap
        if snap is not None and not self._installable():
            return snap
        with self._lock:
            if self._snap is None or self._installable():
                self._snap = self._base = self._next()
                self.moved = []
                self.flagged = []
                self._restructured = False
            return self._snap

    def _installable(self) -> bool:
        """Whether a background build of the top level is done and the next
        snapshot can take it (not in the middle of a batch of edits)."""
        rebuild = self.rebuild
        return rebuild is not None and rebuild.done and not self._batching

    def _next(self) -> Snapshot:
        """A snapshot of the scene as it is (call with the lock held): the
        last one with the objects moved since refitted in (O(moved) but for
        copies of the arrays), or a whole new one after any other change."""
        table = self._objects
        n = table.count
        pack = self._meshes.committed()
        lp_pack = self._line_sets.committed()
        base = self._base
        if base is not None and not self._restructured and base.pack is pack and base.kind.shape[0] == n:
            snap = self._derived(base, _unique(self.moved), _unique(self.flagged))
            if snap is not None and (snap.top.cost_ratio <= REBUILD_RATIO or n > SYNC_BUILD_LIMIT):
                if snap.top.cost_ratio > REBUILD_RATIO and self.rebuild is None:
                    self.rebuild = TopLevelRebuild(snap.bounds, snap.live)
                snap.lp_pack = lp_pack
                return snap
            if snap is not None:
                _log.info("top level of %d objects rebuilt: refits had made it more than %.2f times as costly as "
                          "built", n, REBUILD_RATIO)
        # A tree being built for the scene as it was is no use to the new one.
        self.rebuild = None
        starts, _, shape_data = table.shape_table()
        # Kernels index shape_data even when no object is a shape.
        shape_data = shape_data if shape_data.size else np.zeros(1)
        top = self._take_prebuilt(table.bounds)
        if top is None:
            self.builds += 1
        snap = Snapshot(pack, lp_pack, self._meshes.tight_nodes(pack), table.kind[:n].copy(),
                        table.mesh_of[:n].copy(), table.transform[:n].copy(), table.inverse[:n],
                        table.mask[:n].copy(), table.pickable[:n].copy(), table.bounds[:n].copy(),
                        starts.astype(np.int32), shape_data, top)
        if n > SYNC_BUILD_LIMIT:
            threading.Thread(target=snap.spare_all, name="bvh-spares", daemon=True).start()
        return snap

    def _derived(self, base: Snapshot, moved: np.ndarray, flagged: np.ndarray) -> Snapshot | None:
        """``base.updated``: its top level refitted, or replaced by the tree
        a background build finished, refitted to the objects moved since."""
        rebuild = self.rebuild
        if rebuild is not None and rebuild.done:
            self.rebuild = None
            since = _unique(rebuild.moved + [moved])
            if rebuild.tree is not None and rebuild.tree.holds(since):
                snap = base.updated(self._objects, moved, flagged, rebuild.tree, since)
                if snap is not None:
                    self.builds += 1
                    _log.info("top level of %d objects rebuilt in the background", base.kind.shape[0])
                return snap
        elif rebuild is not None and moved.size:
            rebuild.moved = _pending(rebuild.moved, moved)
        return base.updated(self._objects, moved, flagged)

    def _take_prebuilt(self, bounds: np.ndarray) -> TopLevel | None:
        """:attr:`prebuilt`, refitted to the objects moved since it was given
        (a journal replayed after opening); None when there is none or it
        cannot follow them."""
        top, self.prebuilt = self.prebuilt, None
        moved, self._prebuilt_moved = _unique(self._prebuilt_moved), []
        if top is None or not moved.size:
            return top
        if not top.holds(moved) or not np.isfinite(bounds[moved]).all():
            return None
        return top.refitted(bounds, moved)

    def saved_top(self) -> TopLevel | None:
        """The top-level tree of the objects as they are, for a save (call
        with the lock held); None in a batch, or when making it would mean
        building it."""
        if self._batching or (self._snap is None and (self._base is None or self._restructured)):
            return None
        return self.current().top

    def wait_for_rebuild(self, timeout: float | None = None) -> bool:
        """Wait until no top-level tree is being built in the background;
        False if ``timeout`` seconds passed first."""
        rebuild = self.rebuild
        if rebuild is not None:
            rebuild.thread.join(timeout)
            return rebuild.done
        return True


def _unique(arrays: list[np.ndarray]) -> np.ndarray:
    return np.unique(np.concatenate(arrays)) if arrays else np.zeros(0, np.int64)


def _pending(lists: list[np.ndarray], objects: np.ndarray) -> list[np.ndarray]:
    """``lists`` of objects edited since the last snapshot with ``objects``
    added; merged into one sorted list once they are more than
    :data:`PENDING_LIMIT`, so that a stream of edits with no query between
    them (a script moving objects for an hour) holds at most one entry per
    object, not one per edit."""
    lists.append(objects)
    if len(lists) > PENDING_LIMIT:
        return [np.unique(np.concatenate(lists))]
    return lists
