"""Full-sweep SAH builder: the slow reference for the binned builder.

At every node it sorts the centroids on each axis and prices every one of
the N - 1 splits between consecutive primitives, so it finds the best
object split the SAH can see; the binned builder only tries ``bins - 1``
planes per axis. Same interface as ``bvh.builders.sah.binned_sah_build``.
"""

import numpy as np
from numba import njit

from bvh.builders.config import BuildConfig
from bvh.builders.tree import Tree


@njit(cache=True)
def _area(lo, hi):
    d = hi - lo
    return 2.0 * (d[0] * d[1] + d[1] * d[2] + d[2] * d[0])


@njit(cache=True)
def _sweep_build(boxes, centroids, min_leaf, max_leaf, c_trav, c_isect, max_depth):
    n = boxes.shape[0]
    order = np.arange(n).astype(np.int32)
    capacity = max(2 * n - 1, 1)
    bounds = np.empty((capacity, 6))
    first = np.zeros(capacity, np.int32)
    count = np.zeros(capacity, np.int32)
    work = [(0, 0, n, 0)]
    next_node = 1
    deepest = 0
    right_area = np.empty(n)
    while len(work) > 0:
        node, start, end, depth = work.pop()
        size = end - start
        deepest = max(deepest, depth)
        idx = order[start:end]
        lo = np.empty(3)
        hi = np.empty(3)
        for a in range(3):
            lo[a] = boxes[idx, a].min()
            hi[a] = boxes[idx, 3 + a].max()
        bounds[node, :3] = lo
        bounds[node, 3:] = hi
        if size <= min_leaf or depth >= max_depth - 1:
            first[node] = start
            count[node] = size
            continue
        area = _area(lo, hi)
        best_cost = c_isect * size
        best_axis = -1
        best_split = 0
        best_order = idx.copy()
        for a in range(3):
            sorted_idx = idx[np.argsort(centroids[idx, a], kind="mergesort")]
            rlo = np.full(3, np.inf)
            rhi = np.full(3, -np.inf)
            for k in range(size - 1, 0, -1):
                p = sorted_idx[k]
                for c in range(3):
                    rlo[c] = min(rlo[c], boxes[p, c])
                    rhi[c] = max(rhi[c], boxes[p, 3 + c])
                right_area[k] = _area(rlo, rhi)
            llo = np.full(3, np.inf)
            lhi = np.full(3, -np.inf)
            for k in range(1, size):
                p = sorted_idx[k - 1]
                for c in range(3):
                    llo[c] = min(llo[c], boxes[p, c])
                    lhi[c] = max(lhi[c], boxes[p, 3 + c])
                cost = c_trav + c_isect * (_area(llo, lhi) * k + right_area[k] * (size - k)) / area
                if cost < best_cost:
                    best_cost = cost
                    best_axis = a
                    best_split = k
                    best_order = sorted_idx.copy()
        if best_axis < 0:
            if size <= max_leaf:
                first[node] = start
                count[node] = size
                continue
            best_split = size // 2
            best_order = idx
        order[start:end] = best_order
        mid = start + best_split
        left = next_node
        next_node += 2
        first[node] = left
        count[node] = 0
        work.append((left + 1, mid, end, depth + 1))
        work.append((left, start, mid, depth + 1))
    return bounds[:next_node].copy(), first[:next_node].copy(), count[:next_node].copy(), order, deepest


def sweep_build(boxes: np.ndarray, centroids: np.ndarray, config: BuildConfig) -> Tree:
    """Build with a full SAH sweep; O(N log^2 N), for tests and benchmarks only."""
    bounds, first, count, order, depth = _sweep_build(
        np.ascontiguousarray(boxes, np.float64), np.ascontiguousarray(centroids, np.float64),
        config.min_leaf_size, config.max_leaf_size, float(config.traversal_cost),
        float(config.intersection_cost), config.max_depth)
    return Tree(bounds, first, count, order, int(depth))
