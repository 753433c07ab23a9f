"""Rows of a per-object column kept in pages that successive snapshots share.

A snapshot's columns that only Python code reads (an object's transform for
a selection's exact test, its world box for a selection's candidates or a
background build of the top level) need not be one array: held as pages of
:data:`PAGE_ROWS` rows, the snapshot derived after a move shares every page
but the moved objects' with the snapshot before it, and copies those pages
only. A move then costs O(moved × page), not O(objects), with no spare copy
of the whole column kept for it (:mod:`bvh.scene.recycling` keeps one for
the arrays the kernels read, which must be contiguous).
"""

import numpy as np

#: Rows per page: a page of transforms is 32 KB, so a batch of 1,000 moves
#: spread over a million objects copies some 32 MB at most.
PAGE_ROWS = 256


class PagedRows:
    """An immutable ``(N,) + row_shape`` column held in pages of :data:`PAGE_ROWS` rows.

    Parameters
    ----------
    pages : list of (PAGE_ROWS,) + row_shape arrays
        Never written, shared with other ``PagedRows`` and the column that
        lent them (:class:`PageColumn`); the last one may be shorter, or
        hold rows past ``count``.
    count : int
        Rows ``N``.
    """

    __slots__ = ("pages", "count", "row_shape", "dtype")

    def __init__(self, pages: list, count: int, row_shape: tuple, dtype):
        self.pages = pages
        self.count = count
        self.row_shape = row_shape
        self.dtype = np.dtype(dtype)

    @classmethod
    def of(cls, array: np.ndarray) -> "PagedRows":
        """The rows of ``array`` (copied into pages)."""
        pages = []
        for start in range(0, array.shape[0], PAGE_ROWS):
            page = array[start:start + PAGE_ROWS].copy()
            page.setflags(write=False)
            pages.append(page)
        return cls(pages, array.shape[0], array.shape[1:], array.dtype)

    @property
    def shape(self) -> tuple:
        return (self.count,) + self.row_shape

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, key):
        """Row ``key`` (an int: a read-only view) or rows ``key`` (an int
        array, a bool mask or a slice: a new array)."""
        if isinstance(key, (int, np.integer)):
            row = int(key)
            if not -self.count <= row < self.count:
                raise IndexError(f"row {row} of {self.count}")
            row %= self.count
            return self.pages[row // PAGE_ROWS][row % PAGE_ROWS]
        if isinstance(key, slice):
            return self.whole()[key] if key != slice(None) else self.whole()
        return self.take(np.asarray(key))

    def whole(self) -> np.ndarray:
        """Every row, as one new array."""
        if not self.pages:
            return np.zeros(self.shape, self.dtype)
        whole = np.concatenate(self.pages)
        # A table's column lends its pages whole: the last one may hold rows beyond ``count``.
        return whole[:self.count]

    def take(self, rows: np.ndarray) -> np.ndarray:
        """(K,) + row_shape: rows ``rows`` (int indices, or a bool mask of every row), as a new array."""
        if rows.dtype == np.bool_:
            rows = np.flatnonzero(rows)
        rows = rows.astype(np.int64, copy=False)
        out = np.empty(rows.shape + self.row_shape, self.dtype)
        if rows.size == 0:
            return out
        if rows.min() < -self.count or rows.max() >= self.count:
            raise IndexError(f"rows beyond the {self.count} rows")
        rows = rows % self.count
        flat = rows.reshape(-1)
        flat_out = out.reshape((-1,) + self.row_shape)
        page = flat // PAGE_ROWS
        if flat.size > len(self.pages):
            # Many rows: one pass over the pages, each page's rows gathered at once.
            order = np.argsort(page, kind="stable")
            cuts = np.searchsorted(page[order], np.arange(len(self.pages) + 1))
            for p in np.flatnonzero(np.diff(cuts)).tolist():
                which = order[cuts[p]:cuts[p + 1]]
                flat_out[which] = self.pages[p][flat[which] - p * PAGE_ROWS]
        else:
            for i, (p, r) in enumerate(zip(page.tolist(), (flat % PAGE_ROWS).tolist())):
                flat_out[i] = self.pages[p][r]
        return out

    def replaced(self, rows: np.ndarray, values: np.ndarray) -> "PagedRows":
        """These rows with ``rows (K,)`` (distinct) set to ``values (K,) + row_shape``:
        the pages holding them copied, every other page shared."""
        pages = list(self.pages)
        rows = np.asarray(rows, np.int64)
        page = rows // PAGE_ROWS
        order = np.argsort(page, kind="stable")
        touched, starts = np.unique(page[order], return_index=True)
        ends = np.append(starts[1:], order.shape[0])
        for p, start, end in zip(touched.tolist(), starts.tolist(), ends.tolist()):
            which = order[start:end]
            copy = pages[p].copy()
            copy[rows[which] - p * PAGE_ROWS] = values[which]
            copy.setflags(write=False)
            pages[p] = copy
        return PagedRows(pages, self.count, self.row_shape, self.dtype)


class PageColumn:
    """A writable paged column of the object table, lent to snapshots copy-on-write.

    :meth:`lend` gives a snapshot the rows as a :class:`PagedRows` of the
    column's own pages, without copying them; the column then copies a lent
    page the first time it writes in it. So the table and its snapshots hold
    one copy of the column, and the pages written since a snapshot.

    Parameters
    ----------
    row_shape : tuple
    dtype : numpy dtype
    fill : scalar
        What rows not yet written hold.
    """

    def __init__(self, row_shape: tuple, dtype, fill):
        self.row_shape = row_shape
        self.dtype = np.dtype(dtype)
        self.fill = fill
        self.pages: list[np.ndarray] = []
        #: (P,) bool: which pages a snapshot holds (never to be written).
        self.lent = np.zeros(0, bool)

    @classmethod
    def of(cls, array: np.ndarray, fill) -> "PageColumn":
        """A column holding the rows of ``array`` (copied)."""
        column = cls(array.shape[1:], array.dtype, fill)
        column.grow(array.shape[0])
        column[0:array.shape[0]] = array
        return column

    @property
    def capacity(self) -> int:
        return len(self.pages) * PAGE_ROWS

    def grow(self, rows: int) -> None:
        """Room for at least ``rows`` rows (pages of ``fill`` appended)."""
        added = -(-rows // PAGE_ROWS) - len(self.pages)
        if added > 0:
            self.pages.extend(np.full((PAGE_ROWS,) + self.row_shape, self.fill, self.dtype) for _ in range(added))
            self.lent = np.concatenate([self.lent, np.zeros(added, bool)])

    def lend(self, count: int) -> PagedRows:
        """Rows ``[0, count)`` as they are now, for a snapshot: the column's
        pages themselves, which it will not write again (O(pages), no copy)."""
        used = -(-count // PAGE_ROWS)
        self.lent[:used] = True
        return PagedRows(self.pages[:used], count, self.row_shape, self.dtype)

    def __getitem__(self, key):
        """As :meth:`PagedRows.__getitem__` over every row of the capacity."""
        return PagedRows(self.pages, self.capacity, self.row_shape, self.dtype)[key]

    def __setitem__(self, key, values) -> None:
        """Set row ``key`` (an int), rows ``key`` (a slice of step 1, or distinct int indices) to ``values``."""
        if isinstance(key, slice):
            start, stop, step = key.indices(self.capacity)
            if step != 1:
                raise ValueError("only slices of step 1")
            values = np.broadcast_to(np.asarray(values, self.dtype), (stop - start,) + self.row_shape)
            for p in range(start // PAGE_ROWS, -(-stop // PAGE_ROWS)):
                first, last = max(start, p * PAGE_ROWS), min(stop, (p + 1) * PAGE_ROWS)
                self._page(p)[first - p * PAGE_ROWS:last - p * PAGE_ROWS] = values[first - start:last - start]
            return
        if isinstance(key, (int, np.integer)):
            row = int(key)
            self._page(row // PAGE_ROWS)[row % PAGE_ROWS] = values
            return
        rows = np.asarray(key, np.int64).reshape(-1)
        values = np.broadcast_to(np.asarray(values, self.dtype), rows.shape + self.row_shape)
        if rows.size and (rows.min() < 0 or rows.max() >= self.capacity):
            raise IndexError(f"rows beyond the {self.capacity} rows")
        page = rows // PAGE_ROWS
        if rows.size == 1:
            self._page(int(page[0]))[rows[0] % PAGE_ROWS] = values[0]
            return
        order = np.argsort(page, kind="stable")
        touched, starts = np.unique(page[order], return_index=True)
        ends = np.append(starts[1:], order.shape[0])
        for p, start, end in zip(touched.tolist(), starts.tolist(), ends.tolist()):
            which = order[start:end]
            self._page(p)[rows[which] - p * PAGE_ROWS] = values[which]

    def _page(self, p: int) -> np.ndarray:
        """Page ``p``, to write in: copied first if a snapshot holds it."""
        if self.lent[p]:
            self.pages[p] = self.pages[p].copy()
            self.lent[p] = False
        return self.pages[p]
