"""A scene's object table at one moment, as the routes read it, made in time that
grows with the edit rather than with the scene.

A scene of 10,000 objects moved one object at a time must not rebuild a
10,000-entry table per move. :class:`ObjectTable` keeps the rows copied at
some earlier moment (``bvh.ObjectRows``, read lazily) and the objects changed
since then; an edit of a few objects makes a new table sharing the rows,
and once the changes pile up past :data:`FRESH_ROWS_AFTER` the next edit
copies the rows afresh (a few hundred microseconds for 10,000 objects),
so the copy costs each edit little on average.

The rows' ids ascend (``Scene.object_rows``), and ids only grow (a removed
object's id is never reused): an id is found in the rows by binary search,
and a page of the table (:meth:`ObjectTable.page`) is made in time that
grows with the page and the changes, not with the scene.
"""

import functools
from collections.abc import Iterator, Mapping

import numpy as np
import orjson

import bvh
from bvh.shapes import KIND_NAMES, MESH

#: Changed objects a table carries before the next edit copies the rows anew.
FRESH_ROWS_AFTER = 1024

_REMOVED = None


def info_json(info: bvh.ObjectInfo) -> dict:
    """An object as the routes answer it (the same fields as the rows' objects in :meth:`ObjectTable.json`)."""
    bounds = info.bounds
    return {
        "id": info.id, "name": info.name, "kind": info.kind, "mesh": info.mesh, "triangles": info.triangles,
        "transform": info.transform.tolist(), "bounds": bounds.tolist() if np.isfinite(bounds).all() else None,
        "mask": info.mask, "pickable": info.pickable,
        "params": {key: np.asarray(value).tolist() for key, value in info.params.items()},
    }


class ObjectTable(Mapping):
    """Live objects by id: ``bvh.ObjectInfo`` made on first access.

    Parameters
    ----------
    rows : bvh.ObjectRows
        The objects at some moment.
    changes : dict of int to bvh.ObjectInfo or None
        Objects changed or added since ``rows`` was copied (None: removed).
    """

    def __init__(self, rows: bvh.ObjectRows, changes: dict | None = None, shared: dict | None = None):
        self.rows = rows
        self.changes = changes or {}
        # Infos made from ``rows``, shared by every table over the same rows.
        self._shared = {"infos": {}} if shared is None else shared
        self._order = None
        # The first pages as JSON text, by limit (:meth:`head_json`).
        self._heads: dict[int, tuple[str, int | None]] = {}

    @classmethod
    def of(cls, scene: bvh.Scene) -> "ObjectTable":
        """Every object of ``scene`` as it is now."""
        return cls(scene.object_rows())

    def changed(self, scene: bvh.Scene, ids) -> "ObjectTable":
        """A new table: this one with the objects ``ids`` read again from ``scene``
        (call with the scene's lock held, after changing them)."""
        ids = list(ids)
        if len(self.changes) + len(ids) > FRESH_ROWS_AFTER:
            return ObjectTable.of(scene)
        changes = dict(self.changes)
        for oid in ids:
            try:
                changes[oid] = scene.object(oid)
            except bvh.UnknownIdError:
                changes[oid] = _REMOVED
        return ObjectTable(self.rows, changes, self._shared)

    def _rows_of(self, ids: np.ndarray) -> np.ndarray:
        """(N,) int64: the row of each of ``ids`` (N,) int64 in ``rows``, -1 for an id it has not."""
        known = self.rows.ids
        rows = np.searchsorted(known, ids)
        found = rows < known.shape[0]
        found[found] = known[rows[found]] == ids[found]
        return np.where(found, rows, -1)

    def _row_of(self, oid: int) -> int | None:
        row = int(self._rows_of(np.array([oid], np.int64))[0])
        return None if row < 0 else row

    def __getitem__(self, oid) -> bvh.ObjectInfo:
        if oid in self.changes:
            info = self.changes[oid]
            if info is _REMOVED:
                raise KeyError(oid)
            return info
        infos = self._shared["infos"]
        info = infos.get(oid)
        if info is None:
            row = self._row_of(oid)
            if row is None:
                raise KeyError(oid)
            info = infos[oid] = self.rows.info(row)
        return info

    def _ids(self) -> list[int]:
        if self._order is None:
            ids = set(self.rows.ids.tolist())
            for oid, info in self.changes.items():
                if info is _REMOVED:
                    ids.discard(oid)
                else:
                    ids.add(oid)
            self._order = sorted(ids)
        return self._order

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids())

    def __len__(self) -> int:
        if self._order is not None:
            return len(self._order)
        changed = np.fromiter(self.changes, np.int64, len(self.changes))
        live = np.fromiter((info is not _REMOVED for info in self.changes.values()), bool, len(self.changes))
        in_rows = self._rows_of(changed) >= 0
        return self.rows.ids.shape[0] + int(live.sum()) - int(in_rows.sum())

    def __contains__(self, oid) -> bool:
        try:
            self[oid]
        except KeyError:
            return False
        return True

    def _unchanged_rows(self) -> np.ndarray:
        """(R,) bool: the rows no change overrides."""
        keep = np.ones(self.rows.ids.shape[0], bool)
        rows = self._rows_of(np.fromiter(self.changes, np.int64, len(self.changes)))
        keep[rows[rows >= 0]] = False
        return keep

    @functools.cached_property
    def triangles(self) -> int:
        """Triangles over the live objects, counting each instance."""
        total = int(self.rows.triangles[self._unchanged_rows()].sum())
        return total + sum(info.triangles for info in self.changes.values() if info is not _REMOVED)

    @functools.cached_property
    def longest_name(self) -> int:
        """Characters of the longest name a live object may have: at least the
        longest live name (the rows a change overrides count too, which is
        what lets every table over the same rows share their part)."""
        over_rows = self._shared.get("longest_name")
        if over_rows is None:
            over_rows = self._shared["longest_name"] = max((len(name) for name in self.rows.names if name),
                                                           default=0)
        changed = [len(info.name) for info in self.changes.values() if info is not _REMOVED and info.name]
        return max([over_rows, *changed])

    @functools.cached_property
    def bounds(self) -> np.ndarray:
        """(2, 3) float64: the box of the live objects' boxes; NaN when there are none."""
        boxes = [self.rows.bounds[self._unchanged_rows()]]
        boxes += [info.bounds[None] for info in self.changes.values() if info is not _REMOVED]
        boxes = np.concatenate(boxes)
        if boxes.shape[0] == 0:
            return np.full((2, 3), np.nan)
        return np.stack([boxes[:, 0].min(axis=0), boxes[:, 1].max(axis=0)])

    def json(self, ids) -> list[dict]:
        """The live ones of objects ``ids`` as the routes answer them (:func:`info_json`),
        made from the rows' arrays at once for the objects no change overrides."""
        out = []
        places, unchanged = [], []
        for oid in ids:
            if oid in self.changes:
                info = self.changes[oid]
                if info is not _REMOVED:
                    out.append(info_json(info))
            else:
                places.append(len(out))
                unchanged.append(oid)
                out.append(None)
        if unchanged:
            rows = self._rows_of(np.array(unchanged, np.int64))
            if rows.min() < 0:
                # Ids of no object: their places stay None, dropped below.
                places = [place for place, row in zip(places, rows.tolist()) if row >= 0]
                rows = rows[rows >= 0]
            table = self.rows
            bounds = table.bounds[rows]
            finite = np.isfinite(bounds).all(axis=(1, 2)).tolist()
            # Each column made into Python values at once: indexing numpy per object costs more.
            columns = zip(places, rows.tolist(), table.ids[rows].tolist(), table.kind[rows].tolist(),
                          table.mesh[rows].tolist(), table.triangles[rows].tolist(), table.transform[rows].tolist(),
                          bounds.tolist(), finite, table.mask[rows].tolist(), table.pickable[rows].tolist())
            for place, row, oid, kind, mesh, triangles, transform, box, box_finite, mask, pickable in columns:
                params = table.params[row]
                out[place] = {
                    "id": oid, "name": table.names[row], "kind": KIND_NAMES[kind],
                    "mesh": mesh if kind == MESH else None, "triangles": triangles,
                    "transform": transform, "bounds": box if box_finite else None, "mask": mask,
                    "pickable": pickable,
                    "params": {key: np.asarray(value).tolist() for key, value in params.items()} if params else {},
                }
            if len(places) < len(unchanged):
                out = [entry for entry in out if entry is not None]
        return out

    def names_and_kinds(self, ids) -> tuple[list, list[str]]:
        """The names and kinds (``"mesh"``, ``"sphere"``, ...) of the live objects ``ids`` (N,),
        in their order, read from the rows' columns at once for the objects no change overrides:
        a selection of half a million objects must not make an ``ObjectInfo`` each."""
        ids = np.asarray(ids, np.int64)
        names: list = [None] * ids.shape[0]
        kinds: list = [None] * ids.shape[0]
        rows = self._rows_of(ids)
        if self.changes:
            changed = np.fromiter((oid in self.changes for oid in ids.tolist()), bool, ids.shape[0])
            for place in np.flatnonzero(changed).tolist():
                info = self[int(ids[place])]
                names[place], kinds[place] = info.name, info.kind
            rows[changed] = -2
        known = np.flatnonzero(rows >= 0)
        if (rows == -1).any():
            raise KeyError(int(ids[np.flatnonzero(rows == -1)[0]]))
        table_names = self.rows.names
        codes, which = np.unique(self.rows.kind[rows[known]], return_inverse=True)
        kind_names = np.array([KIND_NAMES[code] for code in codes.tolist()], object)[which].tolist()
        for place, row, kind in zip(known.tolist(), rows[known].tolist(), kind_names):
            names[place] = table_names[row]
            kinds[place] = kind
        return names, kinds

    def page(self, after: int | None, limit: int) -> tuple[list[int], int | None]:
        """The first ``limit`` live ids above ``after`` (from the first when None), ascending,
        and the next page's ``after``: the last of them, or None when no live id follows.

        Time O(log R + limit + C) for R rows and C changes: a binary search
        finds where the page starts in the rows' ascending ids; of the
        ``limit + 1 + removed`` rows from there, at most ``removed`` are
        removed since, so they hold the first ``limit + 1`` live ones the
        rows still have, which merge with the objects added since.
        """
        ids = self.rows.ids
        start = 0 if after is None else int(np.searchsorted(ids, after, side="right"))
        removed = sum(info is _REMOVED for info in self.changes.values())
        candidates = set(ids[start:start + limit + 1 + removed].tolist())
        for oid, info in self.changes.items():
            if info is _REMOVED:
                candidates.discard(oid)
            elif after is None or oid > after:
                candidates.add(oid)
        first = sorted(candidates)[:limit + 1]
        if len(first) > limit:
            return first[:limit], first[limit - 1]
        return first, None

    def head_json(self, limit: int) -> tuple[str, int | None]:
        """The first ``limit`` live objects by id (:meth:`page` from the first, as :meth:`json`
        gives them) as one JSON array, and the next page's ``after`` (None when they are all).

        Made once per table and limit: the hellos of editors joining together, and their
        resyncs, share it (10,000 objects take about 150 ms; 32 editors joining at once took
        5.5 s when each hello made its own). Time and memory grow with ``limit``, not with
        the table: a hello of a million-object scene lists its first ``limit`` objects only.
        """
        made = self._heads.get(limit)
        if made is None:
            ids, next_after = self.page(None, limit)
            made = self._heads[limit] = (orjson.dumps(self.json(ids)).decode(), next_after)
        return made

    def transform_rows(self, oid: int) -> list:
        """Object ``oid``'s transform as nested lists, for plain-Python arithmetic."""
        return self[oid].transform.tolist()
