"""Paged per-object columns (bvh.scene.pages): rows lent to a snapshot never
change, the column's writes copy only the pages they touch, and a save writes
the pages as one array."""

import gc

import numpy as np

from bvh.io import persistence
from bvh.scene.pages import PAGE_ROWS, PageColumn


def test_lent_rows_keep_their_values_while_the_column_is_written():
    rng = np.random.default_rng(1)
    rows = 50 * PAGE_ROWS + 5
    expected = rng.random((rows, 4, 4))
    column = PageColumn.of(expected, 0.0)
    lent = [(column.lend(rows), expected.copy())]
    for step in range(40):
        chosen = np.unique(rng.integers(0, rows, int(rng.integers(1, 300))))
        values = rng.random((chosen.shape[0], 4, 4))
        column[chosen] = values
        expected[chosen] = values
        if step % 3 == 0:
            column[int(chosen[0])] = -1.0
            expected[chosen[0]] = -1.0
        lent.append((column.lend(rows), expected.copy()))
        if step % 5 == 4:
            # Rows no snapshot holds any more free their pages for later writes.
            del lent[1:-2]
            gc.collect()
    for rows_lent, values in lent:
        assert np.array_equal(rows_lent.whole(), values)
        picked = rng.integers(0, rows, 500)
        assert np.array_equal(rows_lent[picked], values[picked])
        assert np.array_equal(rows_lent[rows - 1], values[rows - 1])
        assert not rows_lent[3].flags.writeable
    assert np.array_equal(column[:rows], expected)
    # Pages no lent rows hold are written again: 300 generations touching every
    # page (15,300 page copies) stay in the pool's first block of slots.
    del lent
    gc.collect()
    slots = column.pool.slots
    for _ in range(300):
        column[np.arange(0, rows, PAGE_ROWS)] = 2.0
        kept = column.lend(rows)
    assert column.pool.slots == slots and kept[PAGE_ROWS][0, 0] == 2.0


def test_a_write_copies_only_the_pages_it_touches():
    column = PageColumn.of(np.arange(20 * PAGE_ROWS, dtype=np.float64)[:, None], np.nan)
    before = column.lend(20 * PAGE_ROWS)
    column[np.array([1, 5 * PAGE_ROWS + 2])] = -1.0
    after = column.lend(20 * PAGE_ROWS)
    changed = np.flatnonzero(before.table != after.table)
    assert changed.tolist() == [0, 5]
    assert before[1][0] == 1.0 and after[1][0] == -1.0
    column.grow(25 * PAGE_ROWS)
    assert np.isnan(column[22 * PAGE_ROWS][0]) and after.count == 20 * PAGE_ROWS


def test_lent_rows_are_saved_page_by_page_as_one_array(tmp_path):
    rng = np.random.default_rng(2)
    values = rng.random((9 * PAGE_ROWS + 3, 2, 3))
    column = PageColumn.of(values, np.nan)
    column[np.array([4])] = 7.0
    values[4] = 7.0
    persistence.write_arrays(tmp_path / "saved", {"boxes": column.lend(values.shape[0]).chunked(),
                                                  "plain": values[:, 0]}, {})
    _, arrays = persistence.read_arrays(tmp_path / "saved")
    assert np.array_equal(arrays["boxes"], values) and arrays["boxes"].dtype == np.float64
    assert np.array_equal(arrays["plain"], values[:, 0])
