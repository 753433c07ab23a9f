"""Read-only arrays derived generation by generation, each new generation
written in the memory of the one before last once nothing reads it.

A snapshot of the scene (:mod:`bvh.scene.snapshot`) and its top-level tree
(:mod:`bvh.scene.top_level`) are immutable: a query holds the one it reads
until it returns. An edit that moves a few objects derives the next
generation from the current one by changing a few rows; copying every array
for that would make an edit cost O(objects), not O(moved objects), which
editors dragging at 60 Hz cannot afford. So each generation keeps, for each
array it changed, its parent's array and the rows where the two differ (a
*spare*); the next derivation brings the spare up to date in those rows and
writes into it, when no query holds it any more.
"""

import sys

import numpy as np

from ..walk.nodes import aligned_empty


def frozen(array: np.ndarray) -> np.ndarray:
    """``array``, made read-only."""
    array.setflags(write=False)
    return array


class Recycled:
    """Base of objects whose named read-only arrays are derived generation by
    generation (see the module's note); ``_spares`` maps an attribute name
    to ``(the parent's array, rows where this generation's differs)``."""

    _spares: dict
    #: Arrays whose rows must stay aligned as :func:`aligned_empty` aligns them (node arrays).
    ALIGNED: tuple = ()

    def _writable(self, name: str) -> np.ndarray:
        """A writable array holding what this generation's array ``name`` holds.

        It is the array this generation replaced in its parent, brought up to
        date in the rows where the two differ, when nothing references it
        (or any view of its memory) any more: no query still reads the
        parent, so an edit costs O(moved objects), not O(objects). Otherwise
        a new copy. CPython's reference counts decide it, under the scene's
        lock; a query holds the snapshot it reads from, and with it every
        array of it, until it returns.
        """
        current = getattr(self, name)
        spare, rows = self._spares.pop(name, (None, None))
        # The references to spare: this frame's and getrefcount's argument;
        # to the memory's owner when spare is a view (an aligned node array;
        # numpy points every view of a view at the owner): spare's ``base``
        # and the argument.
        if spare is not None and sys.getrefcount(spare) == 2 and (
                spare.base is None or sys.getrefcount(spare.base) == 2):
            spare.setflags(write=True)
            if 8 * rows.shape[0] > current.shape[0]:
                # Most rows differ (a batch moved most objects): one memcpy beats gathering them.
                np.copyto(spare, current)
            else:
                spare[rows] = current[rows]
            return spare
        if name in self.ALIGNED:
            copy = aligned_empty(current.shape, current.dtype)
            copy[:] = current
            return copy
        return current.copy()

    def spare(self, *names: str) -> None:
        """Give this generation a copy of each of its arrays ``names`` for its
        first derivation to write into. Made on a background thread after a
        whole build of a large scene, so that the first edit after it does
        not copy the arrays of a million objects on the editor's thread."""
        for name in names:
            if name in self._spares:
                continue
            current = getattr(self, name)
            copy = aligned_empty(current.shape, current.dtype) if name in self.ALIGNED else np.empty_like(current)
            copy[:] = current
            self._spares.setdefault(name, (copy, np.zeros(0, np.int64)))

    def _replaced(self, child: "Recycled", name: str, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
        """The read-only array ``name`` of ``child``: this generation's with
        ``rows`` set to ``values`` (:meth:`_writable`); this generation's own
        is kept as the child's spare."""
        array = self._writable(name)
        array[rows] = values
        child._spares[name] = (getattr(self, name), rows)
        return frozen(array)
