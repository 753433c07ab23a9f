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
def _box_under(matrices, k, boxes, owner, out, row):
    # Object k's box under matrices[k], into out[row]: its owner's boxes' extremes.
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
        out[row, 0, j] = lowest + matrices[k, j, 3]
        out[row, 1, j] = highest + matrices[k, j, 3]


@_exact
def _transformed_boxes(matrices, boxes, which, out):
    for k in range(matrices.shape[0]):
        _box_under(matrices, k, boxes, which[k], out, k)


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


#: What :func:`place_moves` answers.
MOVES_PLACED = 0
#: An entry the fast path does not decide (a shape, an unknown or repeated
#: id, a refused or nearly singular matrix, a box beyond ``extent``): the
#: caller takes the general path, which names it.
MOVES_UNDECIDED = 1


@_exact
def _clearly_invertible(matrices, k, max_condition):
    # sigma_max <= |A|_F and sigma_1 sigma_2 sigma_3 = |det A|, so
    # sigma_max / sigma_min <= |A|_F^3 / |det A|: a bound that rotations and
    # scales meet with a wide margin. Half the limit absorbs the rounding
    # of the determinant; what the bound leaves undecided goes to the SVD.
    a = matrices[k]
    frobenius = 0.0
    for i in range(3):
        for j in range(3):
            frobenius += a[i, j] * a[i, j]
    det = (a[0, 0] * (a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1])
           - a[0, 1] * (a[1, 0] * a[2, 2] - a[1, 2] * a[2, 0])
           + a[0, 2] * (a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0]))
    return frobenius * np.sqrt(frobenius) < 0.5 * max_condition * abs(det)


@_exact
def _place_moves(ids, matrices, count, kind, mesh_of, mesh_kind, node_boxes, exact_boxes, max_condition, extent,
                 cover, reported):
    moved = ids.shape[0]
    for k in range(moved):
        oid = ids[k]
        if oid < 0 or oid >= count or kind[oid] != mesh_kind:
            return MOVES_UNDECIDED
        for earlier in range(k):
            if ids[earlier] == oid:
                return MOVES_UNDECIDED
        for i in range(4):
            for j in range(4):
                if not np.isfinite(matrices[k, i, j]):
                    return MOVES_UNDECIDED
        for j in range(4):
            if abs(matrices[k, 3, j] - (1.0 if j == 3 else 0.0)) > 1e-12:
                return MOVES_UNDECIDED
        if not _clearly_invertible(matrices, k, max_condition):
            return MOVES_UNDECIDED
        mesh = mesh_of[oid]
        _box_under(matrices, k, node_boxes, mesh, cover, k)
        _box_under(matrices, k, exact_boxes, mesh, reported, k)
        for side in range(2):
            for j in range(3):
                if not abs(cover[k, side, j]) < extent:
                    return MOVES_UNDECIDED
        for j in range(3):
            # As _reported_bounds: the tighter of the two bounds; + 0.0 turns a mirrored -0.0 into 0.0.
            reported[k, 0, j] = max(reported[k, 0, j], cover[k, 0, j]) + 0.0
            reported[k, 1, j] = min(reported[k, 1, j], cover[k, 1, j]) + 0.0
    return MOVES_PLACED


def place_moves(ids: np.ndarray, matrices: np.ndarray, count: int, kind: np.ndarray, mesh_of: np.ndarray,
                mesh_kind: int, node_boxes: np.ndarray, exact_boxes: np.ndarray, max_condition: float,
                extent: float) -> tuple[np.ndarray, np.ndarray] | None:
    """World boxes of mesh instances given new transforms, in one compiled
    call: the fast path of a move (an editor's drag: one to a few objects).

    Parameters
    ----------
    ids : (K,) int64
        Objects.
    matrices : (K, 4, 4) float64
        Their new transforms.
    count : int
        Objects in the scene (ids at or past it are unknown).
    kind, mesh_of : (O,) int
        Each object's kind and mesh.
    mesh_kind : int
        The kind of a mesh instance.
    node_boxes : (M, B, 6) float64
        Each mesh's cover boxes, offset to its own coordinates.
    exact_boxes : (M, 1, 6) float64
        Each mesh's exact box of its vertices.
    max_condition, extent : float
        The largest condition number accepted; the largest coordinate a world box may reach.

    Returns
    -------
    (cover, reported) : (K, 2, 3) float64 each, or None
        The boxes :func:`transformed_boxes` and the scene's reported bounds
        give, to the last bit; None when an entry is not a known mesh
        instance given once with a finite, affine, clearly invertible
        matrix whose box stays within ``extent``.
    """
    cover = np.empty((ids.shape[0], 2, 3))
    reported = np.empty((ids.shape[0], 2, 3))
    status = _place_moves(ids, matrices, count, kind, mesh_of, mesh_kind, node_boxes, exact_boxes, max_condition,
                          extent, cover, reported)
    return (cover, reported) if status == MOVES_PLACED else None
