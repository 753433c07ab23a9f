"""The packed node layout the kernels traverse.

Each node is 32 bytes, one row of an ``(M, 8)`` float32 array: ``min x, y, z,
max x, y, z`` as float32, then two int32 stored in the same row (read through
an int32 view of the array): ``first`` and ``count``. An inner node has
``count == 0`` and its children at ``first`` and ``first + 1``, so the two boxes
a traversal step tests share one 64-byte cache line. A leaf has ``count > 0``
triangles starting at row ``first`` of the triangle array.

Row 1 is an unused pad so that every sibling pair starts at an even row and so,
in a 64-byte aligned array, on a cache-line boundary.
"""

import numpy as np

from .tree import Tree

NODE_WIDTH = 8
FIRST = 6
COUNT = 7


def aligned_empty(shape, dtype, alignment=64) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on ``alignment`` bytes."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(nbytes + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def outward_float32(bounds: np.ndarray, ulps: int = 2) -> np.ndarray:
    """Round ``(M, 6)`` float64 bounds to float32 outwards, then pad by ``ulps``.

    Rounding to nearest could move a face of a box inwards past a triangle; one
    step of ``nextafter`` outwards undoes that, and the further steps are the
    padding that keeps rounding in the traversal from excluding a triangle.
    """
    lo = bounds[:, :3].astype(np.float32)
    hi = bounds[:, 3:].astype(np.float32)
    for _ in range(ulps):
        lo = np.nextafter(lo, np.float32(-np.inf))
        hi = np.nextafter(hi, np.float32(np.inf))
    return np.concatenate([lo, hi], axis=1)


def pack_nodes(tree: Tree) -> np.ndarray:
    """Pack a builder's tree into 32-byte nodes, inserting the pad row 1.

    Returns
    -------
    nodes : (M + 1, 8) float32
        Read the ``first`` and ``count`` columns through ``nodes.view(np.int32)``.
    """
    m = tree.bounds.shape[0]
    nodes = aligned_empty((m + 1, NODE_WIDTH), np.float32)
    links = nodes.view(np.int32)
    # Builder index i >= 1 moves to i + 1.
    rows = np.arange(m) + (np.arange(m) >= 1)
    nodes[rows, :6] = outward_float32(tree.bounds)
    inner = tree.count == 0
    links[rows, FIRST] = np.where(inner, tree.first + 1, tree.first)
    links[rows, COUNT] = tree.count
    # The pad row is an empty, never-referenced leaf.
    nodes[1, :6] = 0.0
    links[1, FIRST] = 0
    links[1, COUNT] = 0
    if m == 1:
        return nodes[:1]
    return nodes
