"""Which version of a scene its queries see: the current snapshot, the edits
recorded since it was made, batches of edits, and pinned reads.

Queries answer from an immutable :class:`bvh.scene.snapshot.Snapshot`. An
edit only records what it changed and drops the current snapshot; the next
query makes a new one, derived from the last (the top level refitted) when
only transforms, masks or pickability changed, built whole otherwise. Edits
are serialised by the scene's lock; a query takes the lock only to make a
snapshot.
"""

import logging
import threading
from contextlib import contextmanager

import numpy as np

from .line_sets import LineSets
from .meshes import MeshRegistry
from .objects import ObjectTable
from .snapshot import Snapshot
from .top_level import REBUILD_RATIO

_log = logging.getLogger("bvh")

#: Edits recorded since the last snapshot past which their object lists are
#: merged into one (:func:`_pending`).
PENDING_LIMIT = 1024


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
        elif flagged is not None:
            self.flagged = _pending(self.flagged, flagged)
        else:
            self._restructured = True
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
        if snap is not None:
            return snap
        with self._lock:
            if self._snap is None:
                self._snap = self._base = self._next()
                self.moved = []
                self.flagged = []
                self._restructured = False
            return self._snap

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
            moved = np.unique(np.concatenate(self.moved)) if self.moved else np.zeros(0, np.int64)
            flagged = np.unique(np.concatenate(self.flagged)) if self.flagged else np.zeros(0, np.int64)
            snap = base.updated(table, moved, flagged)
            if snap is not None:
                snap.lp_pack = lp_pack
                return snap
            _log.info("top level of %d objects rebuilt: refits had made it more than %.2f times as costly as built",
                      n, REBUILD_RATIO)
        starts, _, shape_data = table.shape_table()
        # Kernels index shape_data even when no object is a shape.
        shape_data = shape_data if shape_data.size else np.zeros(1)
        self.builds += 1
        return Snapshot(pack, lp_pack, self._meshes.tight_nodes(pack), table.kind[:n].copy(),
                        table.mesh_of[:n].copy(), table.transform[:n].copy(), table.inverse[:n],
                        table.mask[:n].copy(), table.pickable[:n].copy(), table.bounds[:n].copy(),
                        starts.astype(np.int32), shape_data)


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
