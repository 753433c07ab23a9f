"""What a builder hands back: a binary tree over boxes, before packing."""

from typing import NamedTuple

import numpy as np


class Tree(NamedTuple):
    """A binary BVH as plain arrays, node 0 the root.

    Attributes
    ----------
    bounds : (M, 6) float64
        ``min x, y, z, max x, y, z`` of each node.
    first : (M,) int32
        Inner node: index of its left child; the right child is ``first + 1``.
        Leaf: index into ``order`` of its first primitive.
    count : (M,) int32
        Primitives in a leaf, 0 for an inner node.
    order : (N,) int32
        Primitive indices in leaf order.
    depth : int
        Depth of the deepest leaf, the root being at depth 0.
    """

    bounds: np.ndarray
    first: np.ndarray
    count: np.ndarray
    order: np.ndarray
    depth: int
