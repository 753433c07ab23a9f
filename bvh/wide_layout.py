"""The four-wide node layout the mesh kernels traverse.

A binary tree is collapsed into nodes of up to four children (Wald, Benthin
and Boulos, "Getting Rid of Packets", 2008; Dammertz et al., "Shallow
Bounding Volume Hierarchies for Fast SIMD Ray Tracing of Incoherent Rays",
2008): a node keeps absorbing the children of its largest child, by surface
area, until it has four children or only leaves. The tree is about half as
deep, and the four boxes of a node are tested together, so a ray waits on
half as many dependent node loads; that latency, not arithmetic, bounds the
single-ray traversal of a binary tree.

Each node is one 128-byte row (two cache lines) of a ``(K, 32)`` float32 array,
the children's boxes stored plane by plane so that one plane of all four
children is four adjacent floats::

    [ 0: 4] min x    [ 4: 8] min y    [ 8:12] min z
    [12:16] max x    [16:20] max y    [20:24] max z
    [24:28] first    [28:32] count    (int32, read through an int32 view)

A child with ``count == 0`` is the node at row ``first``; one with
``count > 0`` is a leaf of ``count`` triangles starting at triangle row
``first``. Unused slots have an inverted box (``min = EMPTY_MIN``, ``max =
-EMPTY_MIN``) that no ray enters, and ``count == 0``. Row 0 is the root.
"""

import numpy as np

from ._jit import jit
from .node_layout import COUNT, FIRST, aligned_empty

WIDTH = 4
ROW = 32
MIN_X, MIN_Y, MIN_Z, MAX_X, MAX_Y, MAX_Z = 0, 4, 8, 12, 16, 20
CHILD_FIRST = 24
CHILD_COUNT = 28

#: Lower corner of an unused slot (and minus its upper corner): finite, so
#: the slab products stay finite for any reciprocal direction (<= 1e200).
EMPTY_MIN = np.float32(1.0e38)


@jit
def _half_area(nodes, row):
    dx = np.float64(nodes[row, 3]) - nodes[row, 0]
    dy = np.float64(nodes[row, 4]) - nodes[row, 1]
    dz = np.float64(nodes[row, 5]) - nodes[row, 2]
    return dx * dy + dy * dz + dz * dx


@jit
def _collapse(nodes, links, wide, wide_links):
    """Fill ``wide`` from the binary packed ``nodes``; returns the rows used.

    Work is depth first (a stack of binary node and wide row to fill), so a
    subtree's wide nodes are contiguous and a ray descending it stays near
    the memory it just read.
    """
    work_binary = np.empty(nodes.shape[0] + 1, np.int64)
    work_row = np.empty(nodes.shape[0] + 1, np.int64)
    kids = np.empty(WIDTH, np.int64)
    work_binary[0] = 0
    work_row[0] = 0
    top = 1
    used = 1
    while top > 0:
        top -= 1
        binary = work_binary[top]
        row = work_row[top]
        if links[binary, COUNT] > 0:
            kids[0] = binary
            n = 1
        else:
            kids[0] = links[binary, FIRST]
            kids[1] = links[binary, FIRST] + 1
            n = 2
        while n < WIDTH:
            widest = -1
            widest_area = -1.0
            for s in range(n):
                if links[kids[s], COUNT] == 0:
                    area = _half_area(nodes, kids[s])
                    if area > widest_area:
                        widest = s
                        widest_area = area
            if widest < 0:
                break
            inner = kids[widest]
            kids[widest] = links[inner, FIRST]
            kids[n] = links[inner, FIRST] + 1
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
                wide[row, MIN_X + 4 * axis + s] = nodes[child, axis]
                wide[row, MAX_X + 4 * axis + s] = nodes[child, 3 + axis]
            if links[child, COUNT] > 0:
                wide_links[row, CHILD_FIRST + s] = links[child, FIRST]
                wide_links[row, CHILD_COUNT + s] = links[child, COUNT]
            else:
                wide_links[row, CHILD_FIRST + s] = used
                wide_links[row, CHILD_COUNT + s] = 0
                used += 1
        # Push in reverse so that slot 0's subtree is laid out first.
        for s in range(n - 1, -1, -1):
            child = kids[s]
            if links[child, COUNT] == 0:
                work_binary[top] = child
                work_row[top] = wide_links[row, CHILD_FIRST + s]
                top += 1
    return used


def collapse_to_wide(nodes: np.ndarray) -> np.ndarray:
    """Collapse packed binary nodes (see :mod:`bvh.node_layout`) into four-wide ones.

    Parameters
    ----------
    nodes : (M, 8) float32
        A binary tree from :func:`bvh.node_layout.pack_nodes`, bounds already
        rounded outwards and padded; the wide boxes are those same boxes.

    Returns
    -------
    (K, 32) float32, 64-byte aligned
        ``K`` is at most the number of binary inner nodes (at least 1).
    """
    links = nodes.view(np.int32)
    capacity = max(1, int(np.count_nonzero(links[:, COUNT] == 0)))
    wide = aligned_empty((capacity, ROW), np.float32)
    used = _collapse(nodes, links, wide, wide.view(np.int32))
    exact = aligned_empty((used, ROW), np.float32)
    exact[:] = wide[:used]
    return exact
