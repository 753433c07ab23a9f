"""Borrowed views and frame arrays (``bvh.walk.borrow``): same data, same types,
usable as the walks use them."""

from typing import NamedTuple

import numpy as np
from numba import njit

from bvh.walk.borrow import borrowed, frame_array


class Pair(NamedTuple):
    values: np.ndarray
    weights: np.ndarray


@njit
def _weighted_sum(pair, scale, flags):
    pair, flags = borrowed((pair, flags))
    total = 0.0
    for i in range(pair.values.shape[0]):
        if flags[i]:
            total += pair.values[i] * pair.weights[i]
            pair.values[i] = -1.0
    return total * scale


@njit
def _nested(parts):
    (a, (b, c)) = borrowed(parts)
    a[0] = b[0] + c[1]
    return a.shape[0], b.itemsize, c[0]


_scratch = frame_array(7, np.int32)


@njit
def _squares(n):
    out = np.empty(n, np.int64)
    scratch = _scratch()
    for i in range(n):
        for k in range(scratch.shape[0]):
            scratch[k] = i * k
        out[i] = scratch[scratch.shape[0] - 1] * i
    return out, scratch.shape[0], scratch.itemsize


def test_borrowed_views_read_and_write_the_callers_arrays():
    values = np.array([1.0, 2.0, 3.0, 4.0])
    pair = Pair(values, np.array([0.5, 0.25, 2.0, 1.0]))
    flags = np.array([True, False, True, True])
    assert _weighted_sum(pair, 2.0, flags) == 2.0 * (0.5 + 6.0 + 4.0)
    assert values.tolist() == [-1.0, 2.0, -1.0, -1.0]


def test_borrowed_passes_nested_tuples_and_scalars():
    a = np.zeros(3)
    b = np.array([5.0], np.float32)
    c = np.array([7, 11], np.int64)
    assert _nested((a, (b, c))) == (3, 4, 7)
    assert a[0] == 16.0


def test_frame_array_is_fixed_size_scratch():
    out, size, itemsize = _squares(5)
    assert out.tolist() == [i * 6 * i for i in range(5)]
    assert (size, itemsize) == (7, 4)
