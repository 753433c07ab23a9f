"""World boxes of placed objects: each object's object-space boxes under its transform.

The scene's top level is refitted from these boxes on every move, and an
editor moves objects one at a time at mouse rate or ten thousand at once,
so this runs per object, in one compiled loop, rather than as numpy
operations whose fixed cost per call outweighs the arithmetic for one object.

Exact arithmetic, no fused multiply-adds: a box must be, to the last bit,
what transforming its eight corners gives (``x * m0 + y * m1 + z * m2``
summed in that order, plus the translation) and taking their extremes,
whichever path placed the object (one move, a batch, an opened save).
"""

import numpy as np
from numba import njit

#: numba's defaults (no ``fastmath``): IEEE arithmetic, sums in the order written.
_exact = njit(cache=True, nogil=True, error_model="numpy")


@_exact
def _transformed_boxes(matrices, boxes, which, out):
    for k in range(matrices.shape[0]):
        owner = which[k]
        for j in range(3):
            m0 = matrices[k, j, 0]
            m1 = matrices[k, j, 1]
            m2 = matrices[k, j, 2]
            lowest = np.inf
            highest = -np.inf
            for b in range(boxes.shape[1]):
                # Each product takes its extremes at one end of its axis,
                # whatever the others do; rounded addition never decreases
                # when a term grows, so the corner of the smallest products
                # gives the smallest sum.
                p0 = m0 * boxes[owner, b, 0]
                q0 = m0 * boxes[owner, b, 3]
                p1 = m1 * boxes[owner, b, 1]
                q1 = m1 * boxes[owner, b, 4]
                p2 = m2 * boxes[owner, b, 2]
                q2 = m2 * boxes[owner, b, 5]
                low = min(p0, q0) + min(p1, q1) + min(p2, q2)
                high = max(p0, q0) + max(p1, q1) + max(p2, q2)
                lowest = min(lowest, low)
                highest = max(highest, high)
            out[k, 0, j] = lowest + matrices[k, j, 3]
            out[k, 1, j] = highest + matrices[k, j, 3]


def transformed_boxes(matrices: np.ndarray, boxes: np.ndarray, which: np.ndarray | None = None) -> np.ndarray:
    """(K, 2, 3) float64 world box of each object's object-space boxes under its transform.

    Parameters
    ----------
    matrices : (K, 4, 4) float64
        Object-to-world transforms (finite; the last row is not read).
    boxes : (K, B, 6) or (U, B, 6) float
        ``[min x, y, z, max x, y, z]``, B boxes per object, or per owner with ``which``.
    which : (K,) int, optional
        Whose boxes each object has (the instances of a mesh share them).

    Returns
    -------
    (K, 2, 3) float64
        ``[min, max]`` of each object's transformed boxes.
    """
    matrices = np.ascontiguousarray(matrices, np.float64)
    boxes = np.ascontiguousarray(boxes, np.float64)
    count = matrices.shape[0]
    which = np.arange(count, dtype=np.int64) if which is None else np.ascontiguousarray(which, np.int64)
    out = np.empty((count, 2, 3))
    if count:
        _transformed_boxes(matrices, boxes, which, out)
    return out
