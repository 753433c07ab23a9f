"""Per-object columns kept in pages that successive snapshots share.

A snapshot's columns that only Python code reads (an object's transform for
a selection's exact test, its world box for a selection's candidates or a
background build of the top level) need not be one array. A
:class:`PageColumn` keeps the rows in pages of :data:`PAGE_ROWS` rows, slots
of one pool array, and a page table saying which slot holds which page;
:meth:`PageColumn.lend` gives a snapshot the rows as they are (a copy of the
page table, no rows copied), and the column copies a lent page into a free
slot the first time it writes in it. So a column and its snapshots hold one
copy of the rows and the pages written since, a move costs O(moved pages),
and reads and writes are numpy gathers and scatters over the pool, whatever
the number of pages (no loop over them in Python).
"""

import weakref

import numpy as np

from ..io.persistence import Chunked

#: Rows per page: a page of transforms is 2 KB, so a batch of 1,000 moves
#: spread over a million objects copies 2 MB of them (with 64 rows, 8 MB
#: made such a batch cost twice what it did with whole arrays; the page
#: table a snapshot copies is 250 KB at a million objects).
PAGE_ROWS = 16

#: Pages per chunk :meth:`PagedRows.chunked` writes at once (8 MB of transforms).
CHUNK_PAGES = 4096

#: Slots per block of a :class:`Pool`: a pool grows by a block, never by
#: copying what it holds (8 MB of transforms).
BLOCK_SLOTS = 4096


class Pool:
    """Slots of ``(PAGE_ROWS,) + row_shape`` rows in blocks of
    :data:`BLOCK_SLOTS`; slot ``s`` is row ``s % BLOCK_SLOTS`` of block
    ``s // BLOCK_SLOTS``. Blocks are only ever added."""

    def __init__(self, row_shape: tuple, dtype):
        self.row_shape = tuple(row_shape)
        self.dtype = np.dtype(dtype)
        self.blocks: list[np.ndarray] = []

    @property
    def slots(self) -> int:
        return len(self.blocks) * BLOCK_SLOTS

    def add_block(self) -> None:
        self.blocks.append(np.empty((BLOCK_SLOTS, PAGE_ROWS) + self.row_shape, self.dtype))

    def gather(self, slots: np.ndarray, offsets: np.ndarray | None = None) -> np.ndarray:
        """``(K,) + page or row shape``: slot ``slots[k]`` (the whole page),
        or its row ``offsets[k]``."""
        tail = self.row_shape if offsets is not None else (PAGE_ROWS,) + self.row_shape
        out = np.empty(slots.shape + tail, self.dtype)
        block = slots // BLOCK_SLOTS
        for b in np.unique(block).tolist():
            which = block == b
            if offsets is None:
                out[which] = self.blocks[b][slots[which] - b * BLOCK_SLOTS]
            else:
                out[which] = self.blocks[b][slots[which] - b * BLOCK_SLOTS, offsets[which]]
        return out

    def scatter(self, slots: np.ndarray, values: np.ndarray, offsets: np.ndarray | None = None) -> None:
        """Set slot ``slots[k]`` (the whole page), or its row ``offsets[k]``, to ``values[k]``."""
        block = slots // BLOCK_SLOTS
        for b in np.unique(block).tolist():
            which = block == b
            if offsets is None:
                self.blocks[b][slots[which] - b * BLOCK_SLOTS] = values[which]
            else:
                self.blocks[b][slots[which] - b * BLOCK_SLOTS, offsets[which]] = values[which]


class PagedRows:
    """Immutable ``(count,) + row_shape`` rows: page ``p`` is ``pool[table[p]]``.

    The slots ``table`` names are never written while this object lives
    (:class:`PageColumn` keeps it in a weak set to know it).
    """

    __slots__ = ("pool", "table", "count", "__weakref__")

    def __init__(self, pool: Pool, table: np.ndarray, count: int):
        self.pool = pool
        self.table = table
        self.count = count

    @property
    def row_shape(self) -> tuple:
        return self.pool.row_shape

    @property
    def dtype(self) -> np.dtype:
        return self.pool.dtype

    @property
    def shape(self) -> tuple:
        return (self.count,) + self.row_shape

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, key):
        """Row ``key`` (an int: a read-only view) or rows ``key`` (an int
        array, a bool mask of every row, or a slice: a new array)."""
        if isinstance(key, (int, np.integer)):
            row = int(key)
            if not -self.count <= row < self.count:
                raise IndexError(f"row {row} of {self.count}")
            row %= self.count
            slot = int(self.table[row // PAGE_ROWS])
            view = self.pool.blocks[slot // BLOCK_SLOTS][slot % BLOCK_SLOTS, row % PAGE_ROWS]
            view.flags.writeable = False
            return view
        if isinstance(key, slice):
            return self.take(np.arange(self.count)[key])
        return self.take(np.asarray(key))

    def take(self, rows: np.ndarray) -> np.ndarray:
        """Rows ``rows`` (int indices of any shape, or a bool mask of every row), as a new array."""
        if rows.dtype == np.bool_:
            if rows.shape != (self.count,):
                raise IndexError(f"a mask of {rows.shape} for {self.count} rows")
            rows = np.flatnonzero(rows)
        rows = rows.astype(np.int64, copy=False)
        if rows.size and (rows.min() < -self.count or rows.max() >= self.count):
            raise IndexError(f"rows beyond the {self.count} rows")
        rows = rows % max(self.count, 1)
        return self.pool.gather(self.table[rows // PAGE_ROWS], rows % PAGE_ROWS)

    def whole(self) -> np.ndarray:
        """Every row, as one new array."""
        return self.pool.gather(self.table).reshape((-1,) + self.row_shape)[:self.count]

    def chunked(self) -> Chunked:
        """These rows, for :func:`bvh.io.persistence.write_arrays` to write
        :data:`CHUNK_PAGES` pages at a time."""
        chunks = (self.pool.gather(self.table[start:start + CHUNK_PAGES]).reshape((-1,) + self.row_shape)
                  for start in range(0, self.table.shape[0], CHUNK_PAGES))
        return Chunked(chunks, self.shape, self.dtype)


class PageColumn:
    """A writable paged column, lent to snapshots copy-on-write (see the module's note).

    Every method runs under the scene's lock.

    Parameters
    ----------
    row_shape : tuple
    dtype : numpy dtype
    fill : scalar
        What rows not yet written hold.
    """

    def __init__(self, row_shape: tuple, dtype, fill):
        self.fill = fill
        self.pool = Pool(row_shape, dtype)
        #: (P,) int32: the slot of each page.
        self.table = np.zeros(0, np.int32)
        #: (P,) bool: pages whose slot no lent rows hold (written in place).
        self.owned = np.zeros(0, bool)
        self._free = np.zeros(0, np.int32)
        self._lent: weakref.WeakSet = weakref.WeakSet()

    @classmethod
    def of(cls, array: np.ndarray, fill) -> "PageColumn":
        """A column holding the rows of ``array`` (copied block by block into
        a new pool, whose pages are its slots in order: no pass filling them first)."""
        column = cls(array.shape[1:], array.dtype, fill)
        rows = array.shape[0]
        pages = -(-rows // PAGE_ROWS)
        while column.pool.slots < pages:
            column.pool.add_block()
        for b, block in enumerate(column.pool.blocks):
            flat = block.reshape((-1,) + column.pool.row_shape)
            start = b * flat.shape[0]
            part = min(flat.shape[0], max(rows - start, 0))
            flat[:part] = array[start:start + part]
            if part < flat.shape[0]:
                flat[part:(pages * PAGE_ROWS) - start] = fill
        column.table = np.arange(pages, dtype=np.int32)
        column.owned = np.ones(pages, bool)
        column._free = np.arange(pages, column.pool.slots, dtype=np.int32)
        return column

    @property
    def capacity(self) -> int:
        return self.table.shape[0] * PAGE_ROWS

    def grow(self, rows: int) -> None:
        """Room for at least ``rows`` rows (pages of ``fill`` added)."""
        added = -(-rows // PAGE_ROWS) - self.table.shape[0]
        if added > 0:
            slots = self._allocate(added)
            self.pool.scatter(slots, np.full((added, PAGE_ROWS) + self.pool.row_shape, self.fill, self.pool.dtype))
            self.table = np.concatenate([self.table, slots]).astype(np.int32)
            self.owned = np.concatenate([self.owned, np.ones(added, bool)])

    def lend(self, count: int) -> PagedRows:
        """Rows ``[0, count)`` as they are now, for a snapshot (O(pages) to
        copy the page table; no row copied): their slots are not written
        again while the rows given live."""
        used = -(-count // PAGE_ROWS)
        self.owned[:used] = False
        rows = PagedRows(self.pool, self.table[:used].copy(), count)
        self._lent.add(rows)
        return rows

    def __getitem__(self, key):
        """As :meth:`PagedRows.__getitem__` over every row of the capacity."""
        return PagedRows(self.pool, self.table, self.capacity)[key]

    def __setitem__(self, key, values) -> None:
        """Set row ``key`` (an int), or rows ``key`` (a slice, or distinct int indices), to ``values``."""
        if isinstance(key, slice):
            rows = np.arange(self.capacity)[key]
        else:
            rows = np.asarray(key, np.int64).reshape(-1)
        if rows.size and (rows.min() < 0 or rows.max() >= self.capacity):
            raise IndexError(f"rows beyond the {self.capacity} rows")
        pages = rows // PAGE_ROWS
        shared = np.unique(pages[~self.owned[pages]])
        if shared.size:
            slots = self._allocate(shared.shape[0])
            self.pool.scatter(slots, self.pool.gather(self.table[shared]))
            self.table[shared] = slots
            self.owned[shared] = True
        values = np.broadcast_to(np.asarray(values, self.pool.dtype), rows.shape + self.pool.row_shape)
        self.pool.scatter(self.table[pages], values, rows % PAGE_ROWS)

    def _allocate(self, count: int) -> np.ndarray:
        """``count`` slots of the pool that no page and no lent rows hold;
        blocks are added when there are not enough."""
        if self._free.shape[0] < count:
            held = np.zeros(self.pool.slots, bool)
            held[self.table] = True
            for rows in list(self._lent):
                held[rows.table] = True
            self._free = np.flatnonzero(~held).astype(np.int32)
        while self._free.shape[0] < count:
            start = self.pool.slots
            self.pool.add_block()
            self._free = np.concatenate([self._free, np.arange(start, self.pool.slots, dtype=np.int32)])
        slots, self._free = self._free[:count], self._free[count:]
        return slots
