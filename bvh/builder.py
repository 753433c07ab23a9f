"""Binned SAH builder (Wald, "On fast construction of SAH-based bounding
volume hierarchies", 2007).

The builder sees only primitive boxes and their centroids, never triangles,
so the same code can build the top level of a scene over object bounds.
"""

import numpy as np

from ._jit import jit
from .config import BuildConfig
from .tree import Tree


@jit
def _box_area(lo0, lo1, lo2, hi0, hi1, hi2):
    dx = hi0 - lo0
    dy = hi1 - lo1
    dz = hi2 - lo2
    return 2.0 * (dx * dy + dy * dz + dz * dx)


@jit
def _binned_build(boxes, centroids, bins, min_leaf, max_leaf, c_trav, c_isect, max_depth):
    n = boxes.shape[0]
    order = np.arange(n).astype(np.int32)
    capacity = max(2 * n - 1, 1)
    bounds = np.empty((capacity, 6), np.float64)
    first = np.zeros(capacity, np.int32)
    count = np.zeros(capacity, np.int32)

    # Work stack of (node, start, end, depth); depth never exceeds max_depth,
    # and each level adds at most one pending sibling.
    work = np.empty((max_depth + 2, 4), np.int64)
    work[0, 0] = 0
    work[0, 1] = 0
    work[0, 2] = n
    work[0, 3] = 0
    top = 1
    next_node = 1
    deepest = 0

    bin_lo = np.empty((3, bins, 3), np.float64)
    bin_hi = np.empty((3, bins, 3), np.float64)
    bin_count = np.empty((3, bins), np.int64)
    right_area = np.empty(bins, np.float64)
    right_count = np.empty(bins, np.int64)
    bin_of = np.empty(n, np.int32)
    lo = np.empty(3)
    hi = np.empty(3)
    clo = np.empty(3)
    chi = np.empty(3)
    scale = np.empty(3)

    while top > 0:
        top -= 1
        node = work[top, 0]
        start = work[top, 1]
        end = work[top, 2]
        depth = work[top, 3]
        size = end - start
        deepest = max(deepest, depth)

        lo[:] = np.inf
        hi[:] = -np.inf
        clo[:] = np.inf
        chi[:] = -np.inf
        for k in range(start, end):
            p = order[k]
            for a in range(3):
                lo[a] = min(lo[a], boxes[p, a])
                hi[a] = max(hi[a], boxes[p, 3 + a])
                clo[a] = min(clo[a], centroids[p, a])
                chi[a] = max(chi[a], centroids[p, a])
        for a in range(3):
            bounds[node, a] = lo[a]
            bounds[node, 3 + a] = hi[a]

        make_leaf = size <= min_leaf or depth >= max_depth - 1
        split_axis = -1
        split_bin = 0
        if not make_leaf:
            # Bin centroids on all three axes in one pass.
            for a in range(3):
                for b in range(bins):
                    bin_count[a, b] = 0
                    for c in range(3):
                        bin_lo[a, b, c] = np.inf
                        bin_hi[a, b, c] = -np.inf
            for a in range(3):
                extent = chi[a] - clo[a]
                scale[a] = bins * (1.0 - 1e-9) / extent if extent > 0.0 else 0.0
            for k in range(start, end):
                p = order[k]
                for a in range(3):
                    b = int((centroids[p, a] - clo[a]) * scale[a])
                    if b >= bins:
                        b = bins - 1
                    bin_count[a, b] += 1
                    for c in range(3):
                        bin_lo[a, b, c] = min(bin_lo[a, b, c], boxes[p, c])
                        bin_hi[a, b, c] = max(bin_hi[a, b, c], boxes[p, 3 + c])

            area = _box_area(lo[0], lo[1], lo[2], hi[0], hi[1], hi[2])
            best_cost = c_isect * size
            for a in range(3):
                if scale[a] == 0.0:
                    continue
                # Right-to-left sweep: area and count of bins b..bins-1.
                rlo0 = rlo1 = rlo2 = np.inf
                rhi0 = rhi1 = rhi2 = -np.inf
                acc = 0
                for b in range(bins - 1, 0, -1):
                    if bin_count[a, b] > 0:
                        acc += bin_count[a, b]
                        rlo0 = min(rlo0, bin_lo[a, b, 0])
                        rlo1 = min(rlo1, bin_lo[a, b, 1])
                        rlo2 = min(rlo2, bin_lo[a, b, 2])
                        rhi0 = max(rhi0, bin_hi[a, b, 0])
                        rhi1 = max(rhi1, bin_hi[a, b, 1])
                        rhi2 = max(rhi2, bin_hi[a, b, 2])
                    right_count[b] = acc
                    right_area[b] = _box_area(rlo0, rlo1, rlo2, rhi0, rhi1, rhi2) if acc > 0 else 0.0
                llo0 = llo1 = llo2 = np.inf
                lhi0 = lhi1 = lhi2 = -np.inf
                left = 0
                for b in range(0, bins - 1):
                    if bin_count[a, b] > 0:
                        left += bin_count[a, b]
                        llo0 = min(llo0, bin_lo[a, b, 0])
                        llo1 = min(llo1, bin_lo[a, b, 1])
                        llo2 = min(llo2, bin_lo[a, b, 2])
                        lhi0 = max(lhi0, bin_hi[a, b, 0])
                        lhi1 = max(lhi1, bin_hi[a, b, 1])
                        lhi2 = max(lhi2, bin_hi[a, b, 2])
                    right = right_count[b + 1]
                    if left == 0 or right == 0:
                        continue
                    left_area = _box_area(llo0, llo1, llo2, lhi0, lhi1, lhi2)
                    cost = c_trav + c_isect * (left_area * left + right_area[b + 1] * right) / area
                    if cost < best_cost:
                        best_cost = cost
                        split_axis = a
                        split_bin = b
            if split_axis < 0 and size <= max_leaf:
                make_leaf = True

        if make_leaf:
            first[node] = start
            count[node] = size
            continue

        if split_axis >= 0:
            # Partition in place: bins <= split_bin go left.
            a = split_axis
            for k in range(start, end):
                p = order[k]
                b = int((centroids[p, a] - clo[a]) * scale[a])
                bin_of[k] = min(b, bins - 1)
            i = start
            j = end - 1
            while i <= j:
                if bin_of[i] <= split_bin:
                    i += 1
                else:
                    tmp = order[i]
                    order[i] = order[j]
                    order[j] = tmp
                    tb = bin_of[i]
                    bin_of[i] = bin_of[j]
                    bin_of[j] = tb
                    j -= 1
            mid = i
        else:
            # No useful plane (all centroids coincide, or no split beats the
            # leaf while the node is over the leaf cap): split by count.
            mid = start + size // 2

        left_child = next_node
        next_node += 2
        first[node] = left_child
        count[node] = 0
        # Push the right child first so the left subtree is laid out next.
        work[top, 0] = left_child + 1
        work[top, 1] = mid
        work[top, 2] = end
        work[top, 3] = depth + 1
        work[top + 1, 0] = left_child
        work[top + 1, 1] = start
        work[top + 1, 2] = mid
        work[top + 1, 3] = depth + 1
        top += 2

    return bounds[:next_node].copy(), first[:next_node].copy(), count[:next_node].copy(), order, deepest


def binned_sah_build(boxes: np.ndarray, centroids: np.ndarray, config: BuildConfig) -> Tree:
    """Build a binary BVH over primitive boxes with the binned SAH.

    Parameters
    ----------
    boxes : (N, 6) float64
        ``min x, y, z, max x, y, z`` of each primitive, N >= 1.
    centroids : (N, 3) float64
        The point each primitive is binned by (usually its box centre).
    config : BuildConfig

    Returns
    -------
    Tree
    """
    bounds, first, count, order, depth = _binned_build(
        np.ascontiguousarray(boxes, np.float64),
        np.ascontiguousarray(centroids, np.float64),
        config.bins,
        config.min_leaf_size,
        config.max_leaf_size,
        float(config.traversal_cost),
        float(config.intersection_cost),
        config.max_depth,
    )
    return Tree(bounds, first, count, order, int(depth))
