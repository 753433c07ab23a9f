"""Boxes as the builders grow them: six numbers ``(lo0, lo1, lo2, hi0, hi1,
hi2)`` in a tuple, which stays in registers while a loop widens it.

A binned SAH build (:mod:`bvh.builders.sah`) and the mesh's first pass
(:mod:`bvh.builders.triangles`) widen boxes by primitives, points and bins
over and over; min and max are exact, so a box grown in any order is the
same box.
"""

import numpy as np

from .._jit import jit_inline

#: The box that holds nothing: widening it by a box gives that box.
EMPTY_BOX = (np.inf, np.inf, np.inf, -np.inf, -np.inf, -np.inf)


@jit_inline
def union(box, other):
    """The smallest box holding the boxes ``box`` and ``other``."""
    return (min(box[0], other[0]), min(box[1], other[1]), min(box[2], other[2]), max(box[3], other[3]),
            max(box[4], other[4]), max(box[5], other[5]))


@jit_inline
def point_box(x, y, z):
    """The box of one point."""
    return x, y, z, x, y, z


@jit_inline
def read_box(flat, at):
    """The box in entries ``at:at + 6`` of the 1-D array ``flat``."""
    return flat[at], flat[at + 1], flat[at + 2], flat[at + 3], flat[at + 4], flat[at + 5]


@jit_inline
def write_box(box, flat, at):
    """``box`` into entries ``at:at + 6`` of the 1-D array ``flat``."""
    for c in range(6):
        flat[at + c] = box[c]


@jit_inline
def box_area(box):
    """Surface area of ``box`` (not empty)."""
    dx = box[3] - box[0]
    dy = box[4] - box[1]
    dz = box[5] - box[2]
    return 2.0 * (dx * dy + dy * dz + dz * dx)
