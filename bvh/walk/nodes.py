"""The node layout every kernel traverses: four-wide nodes.

A builder's binary tree (:class:`bvh.builders.tree.Tree`) is collapsed into nodes of up
to four children (Wald, Benthin and Boulos, "Getting Rid of Packets", 2008;
Dammertz et al., "Shallow Bounding Volume Hierarchies for Fast SIMD Ray
Tracing of Incoherent Rays", 2008): a node keeps absorbing the children of its
largest child, by surface area, until it has four children or only leaves.
The tree is about half as deep, and the four boxes of a node are tested
together, so a ray waits on half as many dependent node loads; that latency,
not arithmetic, bounds the single-ray traversal of a binary tree. Meshes and
the top level of a scene use this one layout.

Each node is one 128-byte row (two cache lines) of a ``(K, 32)`` float32 array,
the children's boxes stored plane by plane so that one plane of all four
children is four adjacent floats::

    [ 0: 4] min x    [ 4: 8] min y    [ 8:12] min z
    [12:16] max x    [16:20] max y    [20:24] max z
    [24:28] first    [28:32] count    (int32, read through an int32 view)

A child with ``count == 0`` is the node at row ``first``; one with
``count > 0`` is a leaf of ``count`` primitives (triangles, or a scene's
objects) starting at row ``first``. Unused slots have an inverted box (``min =
EMPTY_MIN``, ``max = -EMPTY_MIN``) that no ray enters, and ``first == count
== 0``: no node is the child of another at row 0, the root. Boxes are the
builder's float64 bounds rounded outwards to float32 and padded
(:func:`outward_float32`), what the conservative slab test relies on.
"""

import numpy as np

from .._jit import jit
from ..builders.tree import Tree

WIDTH = 4
ROW = 32
MIN_X, MIN_Y, MIN_Z, MAX_X, MAX_Y, MAX_Z = 0, 4, 8, 12, 16, 20
CHILD_FIRST = 24
CHILD_COUNT = 28

#: Lower corner of an unused slot (and minus its upper corner): finite, so
#: the slab products stay finite for any reciprocal direction (<= 1e200).
EMPTY_MIN = np.float32(1.0e38)


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


@jit
def _half_area(boxes, node):
    dx = np.float64(boxes[node, 3]) - boxes[node, 0]
    dy = np.float64(boxes[node, 4]) - boxes[node, 1]
    dz = np.float64(boxes[node, 5]) - boxes[node, 2]
    return dx * dy + dy * dz + dz * dx


@jit
def _collapse(boxes, first, count, wide, wide_links):
    """Fill ``wide`` from the binary tree ``(boxes, first, count)`` (a
    :class:`bvh.builders.tree.Tree`'s, boxes rounded to float32); returns the rows used.

    Work is depth first (a stack of binary node and wide row to fill), so a
    subtree's wide nodes are contiguous and a ray descending it stays near
    the memory it just read.
    """
    work_binary = np.empty(boxes.shape[0] + 1, np.int64)
    work_row = np.empty(boxes.shape[0] + 1, np.int64)
    kids = np.empty(WIDTH, np.int64)
    work_binary[0] = 0
    work_row[0] = 0
    top = 1
    used = 1
    while top > 0:
        top -= 1
        binary = work_binary[top]
        row = work_row[top]
        if count[binary] > 0:
            kids[0] = binary
            n = 1
        else:
            kids[0] = first[binary]
            kids[1] = first[binary] + 1
            n = 2
        while n < WIDTH:
            widest = -1
            widest_area = -1.0
            for s in range(n):
                if count[kids[s]] == 0:
                    area = _half_area(boxes, kids[s])
                    if area > widest_area:
                        widest = s
                        widest_area = area
            if widest < 0:
                break
            inner = kids[widest]
            kids[widest] = first[inner]
            kids[n] = first[inner] + 1
            n += 1
        for s in range(WIDTH):
            if s >= n:
                for axis in range(3):
                    wide[row, MIN_X + 4 * axis + s] = EMPTY_MIN
                    wide[row, MAX_X + 4 * axis + s] = -EMPTY_MIN
                wide_links[row, CHILD_FIRST + s] = 0
                wide_links[row, CHILD_COUNT + s] = 0
                continue
            child = kids[s]
            for axis in range(3):
                wide[row, MIN_X + 4 * axis + s] = boxes[child, axis]
                wide[row, MAX_X + 4 * axis + s] = boxes[child, 3 + axis]
            if count[child] > 0:
                wide_links[row, CHILD_FIRST + s] = first[child]
                wide_links[row, CHILD_COUNT + s] = count[child]
            else:
                wide_links[row, CHILD_FIRST + s] = used
                wide_links[row, CHILD_COUNT + s] = 0
                used += 1
        # Push in reverse so that slot 0's subtree is laid out first.
        for s in range(n - 1, -1, -1):
            child = kids[s]
            if count[child] == 0:
                work_binary[top] = child
                work_row[top] = wide_links[row, CHILD_FIRST + s]
                top += 1
    return used


def collapse_to_wide(tree: Tree) -> np.ndarray:
    """Collapse a builder's binary tree into four-wide nodes.

    Parameters
    ----------
    tree : Tree
        Leaves' ``first`` index rows of the primitives in leaf order.

    Returns
    -------
    (K, 32) float32, 64-byte aligned
        ``K`` is at most the number of binary inner nodes (at least 1); each
        box is the tree's, rounded outwards and padded (:func:`outward_float32`).
    """
    boxes = outward_float32(tree.bounds)
    capacity = max(1, int(np.count_nonzero(tree.count == 0)))
    wide = aligned_empty((capacity, ROW), np.float32)
    used = _collapse(boxes, tree.first, tree.count, wide, wide.view(np.int32))
    exact = aligned_empty((used, ROW), np.float32)
    exact[:] = wide[:used]
    return exact


def rebase(nodes: np.ndarray, node_base: int, primitive_base: int) -> np.ndarray:
    """A copy of ``nodes`` with its links moved by ``node_base`` rows (inner
    children) and ``primitive_base`` rows (leaves), for appending one tree's
    nodes after others' in a shared array; unused slots stay ``(0, 0)``."""
    moved = aligned_empty(nodes.shape, np.float32)
    moved[:] = nodes
    links = moved.view(np.int32)
    first = links[:, CHILD_FIRST:CHILD_FIRST + WIDTH]
    count = links[:, CHILD_COUNT:CHILD_COUNT + WIDTH]
    first += np.where(count > 0, primitive_base, np.where(first > 0, node_base, 0)).astype(np.int32)
    return moved
