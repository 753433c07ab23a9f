"""Binned SAH builder (Wald, "On fast construction of SAH-based bounding
volume hierarchies", 2007).

The builder sees only primitive boxes and their centroids, never triangles,
so the same code can build the top level of a scene over object bounds.

It keeps a copy of the primitives' boxes and centroids in build order and
partitions it along with ``order``, as Embree keeps its primitive
references, so that every pass over a node reads memory in sequence instead
of gathering through ``order`` (1.31M triangles: binning 1.7 and the bounds
pass 5 times faster); and a node's box comes from its parent's bins and
partition instead of a pass of its own.

Large inputs are built in parallel as in Wald, "Fast construction of SAH
BVHs on the Intel Many Integrated Core (MIC) architecture" (2012): the top
levels, where a few nodes hold all the primitives, are binned by all
threads, a piece of each node each ("horizontal"); below them the
independent subtrees are built one per task ("vertical"). The tasks are the
serial kernels, which release the GIL, run on a pool of Python threads: a
numba parallel loop that calls the builder compiles all of its code a second
time into the loop (4.5 s of cold compile for that loop), and hands each
thread an even share of the loop up front, where the pool hands the next
subtree to the first thread free. Bins merge by min, max and integer sums, exact in
any order, and every node is decided by the same compiled code, so the
parallel tree is the serial one, node for node and primitive for primitive,
whatever the number of threads.
"""

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from .._jit import jit, jit_inline
from .boxes import EMPTY_BOX, box_area, point_box, read_box, union, write_box
from .config import BuildConfig
from .tree import Tree

#: Inputs of fewer primitives than this are built on the calling thread:
#: the parallel build's thread pool and top levels cost a few milliseconds,
#: which at 100,000 primitives still leave a third saved on two threads
#: (34 -> 24 ms), less and less below.
PARALLEL_BUILD = 100_000

#: Fewest primitives per task of the parallel build's passes over the top
#: levels, so that a task's work outweighs handing it to the pool.
PIECE = 32_768

#: A node of the top levels becomes a subtree, built by one thread, once it
#: holds at most ``1 / (SUBTREES_PER_THREAD * threads)`` of the primitives:
#: enough tasks to balance the threads when the splits are uneven.
SUBTREES_PER_THREAD = 4

# Columns of the build-order copy of the primitives: box, then centroid.
CENTROID = 6
PRIM = 9
# A node's box as 12 numbers: the bounds of its primitives' boxes (min x, y,
# z, max x, y, z), then of their centroids (min, max).
BOX = 12
# Each bin is 6 numbers (min x, y, z, max x, y, z) of a flat array of 3 axes
# times ``bins``; flat, and indexed by unsigned integers that need no
# negative-index check, binning ran 1.5 times faster than with (3, bins, 3) arrays.
BIN = 6
# Kinds of node of the top levels of a parallel build.
INNER, LEAF, SUBTREE = 0, 1, 2
# Arguments of _binned_build that say: bin the root here, list nothing.
NO_BINS = np.empty(0, np.int64)
NO_BIN_BOXES = np.empty(0)
NOTHING_LISTED = np.empty((0, 4), np.int64)
NO_LISTED_BOXES = np.empty((0, BOX))


@jit_inline
def _range_box(prims, start, end, box):
    """The 12-number box of build-order rows ``start:end`` of ``prims``."""
    bounds = EMPTY_BOX
    centroids = EMPTY_BOX
    for k in range(start, end):
        bounds = union(bounds, (prims[k, 0], prims[k, 1], prims[k, 2], prims[k, 3], prims[k, 4], prims[k, 5]))
        centroids = union(centroids, point_box(prims[k, CENTROID], prims[k, CENTROID + 1], prims[k, CENTROID + 2]))
    write_box(bounds, box, 0)
    write_box(centroids, box, 6)


@jit_inline
def _bin_scales(box, bins, scale):
    """Bins per unit of centroid extent on each axis; 0 on a flat axis."""
    for a in range(3):
        extent = box[9 + a] - box[6 + a]
        scale[a] = bins * (1.0 - 1e-9) / extent if extent > 0.0 else 0.0


@jit_inline
def _bin_of(c, origin, scale, bins):
    """Bin of centroid coordinate ``c >= origin``, as an unsigned integer."""
    return min(np.uint64((c - origin) * scale), np.uint64(bins - 1))


@jit_inline
def _clear_bins(bin_count, bin_box):
    for q in range(bin_count.shape[0]):
        bin_count[q] = 0
        for c in range(3):
            bin_box[BIN * q + c] = np.inf
            bin_box[BIN * q + 3 + c] = -np.inf


@jit_inline
def _bin_range(prims, start, end, box, scale, bins, bin_count, bin_box):
    """Add build-order rows ``start:end`` to the bins of all three axes."""
    origin0 = box[6]
    origin1 = box[7]
    origin2 = box[8]
    scale0 = scale[0]
    scale1 = scale[1]
    scale2 = scale[2]
    for k in range(start, end):
        lo0 = prims[k, 0]
        lo1 = prims[k, 1]
        lo2 = prims[k, 2]
        hi0 = prims[k, 3]
        hi1 = prims[k, 4]
        hi2 = prims[k, 5]
        b0 = _bin_of(prims[k, 6], origin0, scale0, bins)
        b1 = _bin_of(prims[k, 7], origin1, scale1, bins) + np.uint64(bins)
        b2 = _bin_of(prims[k, 8], origin2, scale2, bins) + np.uint64(2 * bins)
        for b in (b0, b1, b2):
            bin_count[b] += 1
            q = b * np.uint64(BIN)
            bin_box[q] = min(bin_box[q], lo0)
            bin_box[q + np.uint64(1)] = min(bin_box[q + np.uint64(1)], lo1)
            bin_box[q + np.uint64(2)] = min(bin_box[q + np.uint64(2)], lo2)
            bin_box[q + np.uint64(3)] = max(bin_box[q + np.uint64(3)], hi0)
            bin_box[q + np.uint64(4)] = max(bin_box[q + np.uint64(4)], hi1)
            bin_box[q + np.uint64(5)] = max(bin_box[q + np.uint64(5)], hi2)


@jit_inline
def _best_split(bin_count, bin_box, box, scale, size, bins, c_trav, c_isect, right_area, right_count):
    """``(axis, bin)`` of the cheapest split, bins ``<= bin`` going left;
    axis -1 when no split is cheaper than a leaf of ``size`` primitives."""
    area = box_area(read_box(box, 0))
    best_cost = c_isect * size
    split_axis = -1
    split_bin = 0
    for a in range(3):
        if scale[a] == 0.0:
            continue
        # Right-to-left sweep: area and count of bins b..bins-1. Empty bins
        # change neither, so their entries are copied, not recomputed.
        right_bounds = EMPTY_BOX
        acc = 0
        area_here = 0.0
        for b in range(bins - 1, 0, -1):
            q = a * bins + b
            if bin_count[q] > 0:
                acc += bin_count[q]
                right_bounds = union(right_bounds, read_box(bin_box, BIN * q))
                area_here = box_area(right_bounds)
            right_count[b] = acc
            right_area[b] = area_here
        left_bounds = EMPTY_BOX
        left = 0
        for b in range(0, bins - 1):
            q = a * bins + b
            # A plane after an empty bin splits as the plane before it does,
            # at the same cost, which cannot be strictly cheaper.
            if bin_count[q] == 0:
                continue
            left += bin_count[q]
            left_bounds = union(left_bounds, read_box(bin_box, BIN * q))
            right = right_count[b + 1]
            if right == 0:
                break
            left_area = box_area(left_bounds)
            cost = c_trav + c_isect * (left_area * left + right_area[b + 1] * right) / area
            if cost < best_cost:
                best_cost = cost
                split_axis = a
                split_bin = b
    return split_axis, split_bin


@jit_inline
def _partition(prims, order, start, end, axis, box, scale, bins, split_bin, left_box, right_box):
    """Move the rows of ``start:end`` whose bin on ``axis`` is ``<= split_bin``
    to the front, in place (``prims`` and ``order`` alike); returns where the
    others begin. Writes the bounds of each side's centroids (entries 6:12
    of a 12-number box) into ``left_box`` and ``right_box``, so that the
    children need no pass of their own over their primitives."""
    origin = box[6 + axis]
    column = CENTROID + axis
    last = np.uint64(split_bin)
    left = right = EMPTY_BOX
    i = start
    j = end - 1
    while i <= j:
        centroid = point_box(prims[i, CENTROID], prims[i, CENTROID + 1], prims[i, CENTROID + 2])
        if _bin_of(prims[i, column], origin, scale, bins) <= last:
            left = union(left, centroid)
            i += 1
        else:
            right = union(right, centroid)
            for c in range(PRIM):
                held = prims[i, c]
                prims[i, c] = prims[j, c]
                prims[j, c] = held
            held_index = order[i]
            order[i] = order[j]
            order[j] = held_index
            j -= 1
    write_box(left, left_box, 6)
    write_box(right, right_box, 6)
    return i


@jit_inline
def _bins_box(bin_box, axis, bins, first_bin, end_bin, box):
    """Bounds of the boxes in bins ``first_bin:end_bin`` on ``axis`` into
    entries 0:6 of a 12-number box: min and max are exact, so this is the
    bounds of those bins' primitives, without a pass over them."""
    for c in range(3):
        box[c] = np.inf
        box[3 + c] = -np.inf
    for b in range(first_bin, end_bin):
        q = BIN * (axis * bins + b)
        for c in range(3):
            box[c] = min(box[c], bin_box[q + c])
            box[3 + c] = max(box[3 + c], bin_box[q + 3 + c])


@jit_inline
def _split(prims, order, start, end, box, scale, bins, split_axis, split_bin, bin_box, left_box, right_box):
    """Split rows ``start:end`` of a node with 12-number ``box``, binned on
    ``bin_box``, by bin ``split_bin`` of ``split_axis``, or in half by count
    when ``split_axis`` is -1; returns where the right child begins and
    fills both children's boxes."""
    if split_axis >= 0:
        _bins_box(bin_box, split_axis, bins, 0, split_bin + 1, left_box)
        _bins_box(bin_box, split_axis, bins, split_bin + 1, bins, right_box)
        return _partition(prims, order, start, end, split_axis, box, scale[split_axis], bins, split_bin, left_box,
                          right_box)
    # No useful plane (all centroids coincide, or no split beats the leaf
    # while the node is over the leaf cap): split by count.
    mid = start + (end - start) // 2
    _range_box(prims, start, mid, left_box)
    _range_box(prims, mid, end, right_box)
    return mid


@jit
def _binned_build(prims, order, start, end, depth0, root_box, root_count, root_bins, stop_size, bounds, first, count,
                  base, listed, listed_box, bins, min_leaf, max_leaf, c_trav, c_isect, max_depth):
    """Build the tree over build-order rows ``start:end`` of ``prims`` (and
    ``order``), its root at depth ``depth0`` with 12-number box ``root_box``,
    on the calling thread: the serial build, of a whole tree, of one subtree
    of the parallel build, or of one node of its top levels.

    The root's bins are ``root_count`` and ``root_bins`` if those are not
    empty (the parallel build bins a large node with all threads), else
    made here. Nodes other than the root with at most ``stop_size``
    primitives are not built but listed: ``listed`` rows of (node, start,
    end, depth), ``listed_box`` their boxes.

    Node ``k`` goes to row ``base + k`` of ``bounds``, ``first`` and
    ``count``, the root first; an inner node's ``first`` is the ``k`` of its
    left child. Nodes are numbered depth first, left subtree first, a sibling
    pair when its parent splits, so in a whole-tree build the descendants of
    any node take contiguous rows. ``prims`` and ``order`` are permuted in
    place within ``start:end``.

    Returns
    -------
    (nodes, deepest, listed) : nodes numbered, listed ones included; depth
    of the deepest node built; nodes listed.
    """
    # Work stack of (node, start, end, depth) and each entry's box; depth
    # never exceeds max_depth, and each level adds at most one pending sibling.
    work = np.empty((max_depth + 2, 4), np.int64)
    work_box = np.empty((max_depth + 2, BOX))
    work[0, 0] = 0
    work[0, 1] = start
    work[0, 2] = end
    work[0, 3] = depth0
    for c in range(BOX):
        work_box[0, c] = root_box[c]
    top = 1
    next_node = 1
    deepest = depth0
    nodes_listed = 0

    bin_box = np.empty(3 * bins * BIN)
    bin_count = np.empty(3 * bins, np.int64)
    right_area = np.empty(bins)
    right_count = np.empty(bins, np.int64)
    scale = np.empty(3)
    box = np.empty(BOX)

    while top > 0:
        top -= 1
        node = work[top, 0]
        lo = work[top, 1]
        hi = work[top, 2]
        depth = work[top, 3]
        for c in range(BOX):
            box[c] = work_box[top, c]
        size = hi - lo
        if node > 0 and size <= stop_size:
            for c in range(4):
                listed[nodes_listed, c] = work[top, c]
            for c in range(BOX):
                listed_box[nodes_listed, c] = box[c]
            nodes_listed += 1
            continue
        deepest = max(deepest, depth)
        for c in range(6):
            bounds[base + node, c] = box[c]

        make_leaf = size <= min_leaf or depth >= max_depth - 1
        split_axis = -1
        split_bin = 0
        if not make_leaf:
            _bin_scales(box, bins, scale)
            if node == 0 and root_count.shape[0] > 0:
                for q in range(3 * bins):
                    bin_count[q] = root_count[q]
                for q in range(3 * bins * BIN):
                    bin_box[q] = root_bins[q]
            else:
                _clear_bins(bin_count, bin_box)
                _bin_range(prims, lo, hi, box, scale, bins, bin_count, bin_box)
            split_axis, split_bin = _best_split(bin_count, bin_box, box, scale, size, bins, c_trav, c_isect,
                                                right_area, right_count)
            if split_axis < 0 and size <= max_leaf:
                make_leaf = True

        if make_leaf:
            first[base + node] = lo
            count[base + node] = size
            continue

        # The right child is pushed first so the left subtree is laid out next.
        mid = _split(prims, order, lo, hi, box, scale, bins, split_axis, split_bin, bin_box, work_box[top + 1],
                     work_box[top])
        left_child = next_node
        next_node += 2
        first[base + node] = left_child
        count[base + node] = 0
        work[top, 0] = left_child + 1
        work[top, 1] = mid
        work[top, 2] = hi
        work[top, 3] = depth + 1
        work[top + 1, 0] = left_child
        work[top + 1, 1] = lo
        work[top + 1, 2] = mid
        work[top + 1, 3] = depth + 1
        top += 2

    return next_node, deepest, nodes_listed


@jit
def _fill(boxes, centroids, order, prims, start, end, box):
    """Copy rows ``start:end`` of the primitives into ``order`` and
    ``prims`` in input order; their 12-number box into ``box``."""
    for row in range(start, end):
        order[row] = row
        for column in range(CENTROID):
            prims[row, column] = boxes[row, column]
        for column in range(3):
            prims[row, CENTROID + column] = centroids[row, column]
    _range_box(prims, start, end, box)


@jit
def _bin_rows(prims, start, end, box, bins, bin_count, bin_box):
    """The bins :func:`_binned_build` makes for a node with 12-number box
    ``box``, of its rows ``start:end`` only."""
    scale = np.empty(3)
    _bin_scales(box, bins, scale)
    _clear_bins(bin_count, bin_box)
    _bin_range(prims, start, end, box, scale, bins, bin_count, bin_box)


@jit
def _move_subtree(scratch_bounds, scratch_first, scratch_count, source, nodes, root_row, base, bounds, first, count):
    """Copy the ``nodes`` nodes a subtree build wrote from row ``source`` on
    to their rows of the whole tree: the root to ``root_row``, node ``k >=
    1`` to ``base + k - 1``, an inner node's ``first`` renumbered likewise."""
    for k in range(nodes):
        target = root_row if k == 0 else base + k - 1
        for a in range(6):
            bounds[target, a] = scratch_bounds[source + k, a]
        if scratch_count[source + k] > 0:
            first[target] = scratch_first[source + k]
        else:
            first[target] = base + scratch_first[source + k] - 1
        count[target] = scratch_count[source + k]


def binned_sah_build(boxes: np.ndarray, centroids: np.ndarray, config: BuildConfig) -> Tree:
    """Build a binary BVH over primitive boxes with the binned SAH.

    Inputs of at least :data:`PARALLEL_BUILD` primitives are built on
    ``numba.get_num_threads()`` threads; the tree is the same whatever their number.

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
    threads = numba.get_num_threads()
    return _build(boxes, centroids, config, threads if len(boxes) >= PARALLEL_BUILD and threads > 1 else 1)


def _build(boxes, centroids, config: BuildConfig, threads: int, subtree_size: int | None = None) -> Tree:
    """:func:`binned_sah_build` on the calling thread (``threads`` 1) or on
    ``threads`` threads, the subtrees' roots the first nodes of at most
    ``subtree_size`` primitives (by default ``N // (SUBTREES_PER_THREAD *
    threads)``, at least ``max_leaf_size``)."""
    boxes = np.ascontiguousarray(boxes, np.float64)
    centroids = np.ascontiguousarray(centroids, np.float64)
    n = boxes.shape[0]
    # The large arrays are numpy's: numpy asks Linux for huge pages for them
    # and numba does not, and faulting in 4 KiB pages cost more than the work
    # of filling them (52 against 14 ms for the 94 MB of prims, 1.31M triangles).
    order = np.empty(n, np.int32)
    prims = np.empty((n, PRIM))
    capacity = max(2 * n - 1, 1)
    bounds = np.empty((capacity, 6))
    first = np.empty(capacity, np.int32)
    count = np.empty(capacity, np.int32)
    options = (config.bins, config.min_leaf_size, config.max_leaf_size, float(config.traversal_cost),
               float(config.intersection_cost), config.max_depth)
    if threads > 1:
        if subtree_size is None:
            subtree_size = n // (SUBTREES_PER_THREAD * threads)
        with ThreadPoolExecutor(threads) as pool:
            return _parallel_build(pool, threads, boxes, centroids, order, prims, bounds, first, count, options,
                                   max(subtree_size, config.max_leaf_size))
    root_box = np.empty(BOX)
    _fill(boxes, centroids, order, prims, 0, n, root_box)
    nodes, depth, _ = _binned_build(prims, order, 0, n, 0, root_box, NO_BINS, NO_BIN_BOXES, 0, bounds, first,
                                    count, 0, NOTHING_LISTED, NO_LISTED_BOXES, *options)
    return Tree(bounds[:nodes].copy(), first[:nodes].copy(), count[:nodes].copy(), order, int(depth))


def _assemble(pool, nodes, node_box, kind, link, jobs, made, source, largest_first, scratch_bounds, scratch_first,
              scratch_count):
    """The rows of :func:`_parallel_build`'s tree: its top levels (``nodes``
    and their boxes, ``kind`` and ``link``) and its subtrees (``made`` in
    the scratch rows from ``source``), numbered as the serial build numbers
    them (see :func:`_binned_build`): depth first, a split's children the
    next two rows, a subtree root's descendants the next rows when the root
    is reached. Returns ``(bounds, first, count)``."""
    row_of = [0] * len(nodes)
    base = [0] * len(jobs)
    pending = [0]
    rows = 1
    while pending:
        t = pending.pop()
        if kind[t] == INNER:
            row_of[link[t]] = rows
            row_of[link[t] + 1] = rows + 1
            rows += 2
            pending += [link[t] + 1, link[t]]
        elif kind[t] == SUBTREE:
            base[link[t]] = rows
            rows += made[link[t]][0] - 1
    bounds = np.empty((rows, 6))
    first = np.empty(rows, np.int32)
    count = np.empty(rows, np.int32)
    for t, (start, end, _) in enumerate(nodes):
        if kind[t] != SUBTREE:
            bounds[row_of[t]] = node_box[t][:6]
            first[row_of[t]] = row_of[link[t]] if kind[t] == INNER else start
            count[row_of[t]] = 0 if kind[t] == INNER else end - start
    list(pool.map(lambda job: _move_subtree(scratch_bounds, scratch_first, scratch_count, int(source[job]),
                                            made[job][0], row_of[jobs[job]], base[job], bounds, first, count),
                  largest_first))
    return bounds, first, count


def _parallel_build(pool, threads: int, boxes, centroids, order, prims, scratch_bounds, scratch_first, scratch_count,
                    options, subtree_size: int) -> Tree:
    """Build the tree :func:`_binned_build` builds, on the ``threads``
    threads of ``pool`` (the kernels release the GIL).

    The nodes of more than ``subtree_size`` primitives (the top levels, a
    few dozen nodes) are split one at a time, binned by all threads (if of
    2 :data:`PIECE` primitives or more); the others are the roots of
    subtrees, built one per task into their own rows of the scratch arrays
    (2 m - 1 rows for m primitives), then copied to the rows the serial
    build gives them.
    """
    bins, max_depth = options[0], options[-1]
    n = boxes.shape[0]

    def ranges(start, end):
        """``start:end`` in up to 4 * threads pieces, so that a thread slowed
        by other work is made up for by the others, of at least :data:`PIECE`
        rows, so that a task does more than it costs to hand out."""
        pieces = max(1, min(4 * threads, (end - start) // PIECE))
        cuts = np.linspace(start, end, pieces + 1).astype(np.int64)
        return list(zip(cuts[:-1], cuts[1:]))

    pieces = ranges(0, n)
    piece_box = np.empty((len(pieces), BOX))
    list(pool.map(lambda i: _fill(boxes, centroids, order, prims, *pieces[i], piece_box[i]), range(len(pieces))))
    lo = piece_box.min(axis=0)
    hi = piece_box.max(axis=0)

    # The top levels, breadth first: each node's (start, end, depth), box,
    # kind, and link: its left child's index for an inner node, its job's
    # for a subtree's root.
    nodes = [(0, n, 0)]
    node_box = [np.concatenate([lo[:3], hi[3:6], lo[6:9], hi[9:]])]
    kind, link, jobs = [], [], []
    row_bounds = np.empty((1, 6))
    row_first = np.empty(1, np.int32)
    row_count = np.empty(1, np.int32)
    children = np.empty((2, 4), np.int64)
    children_box = np.empty((2, BOX))

    def binned(t):
        """Whether the pool bins node ``t``; else its own build does, on this thread."""
        start, end, depth = nodes[t]
        return end - start >= 2 * PIECE and end - start > subtree_size and depth < max_depth - 1

    def start_binning(t):
        """Bin node ``t`` on the pool's threads, a piece each; returns a
        function that waits for them and merges their bins, which are min,
        max and counts, exact in any order: one pass's bins."""
        parts = ranges(*nodes[t][:2])
        piece_count = np.empty((len(parts), 3 * bins), np.int64)
        piece_bins = np.empty((len(parts), 3 * bins, BIN))
        pending = [pool.submit(_bin_rows, prims, start, end, node_box[t], bins, piece_count[i],
                               piece_bins[i].reshape(-1)) for i, (start, end) in enumerate(parts)]

        def merged():
            for piece in pending:
                piece.result()
            return piece_count.sum(axis=0), np.concatenate(
                [piece_bins[:, :, :3].min(axis=0), piece_bins[:, :, 3:].max(axis=0)], axis=1).reshape(-1)
        return merged

    binning = {}
    deepest = 0
    for t, (start, end, depth) in enumerate(nodes):  # nodes grows as they split
        if end - start <= subtree_size:
            kind.append(SUBTREE)
            link.append(len(jobs))
            jobs.append(t)
            continue
        root_count, root_bins = NO_BINS, NO_BIN_BOXES
        if binned(t):
            root_count, root_bins = (binning.pop(t, None) or start_binning(t))()
        # The pool bins the next node while this thread splits this one:
        # neither is an ancestor of the other, so their rows are disjoint.
        if t + 1 < len(nodes) and binned(t + 1):
            binning[t + 1] = start_binning(t + 1)
        # Just this node: its children, smaller, are listed, not built.
        _, deep, listed = _binned_build(prims, order, start, end, depth, node_box[t], root_count, root_bins,
                                        end - start - 1, row_bounds, row_first, row_count, 0, children,
                                        children_box, *options)
        deepest = max(deepest, deep)
        if listed == 0:
            kind.append(LEAF)
            link.append(-1)
            continue
        kind.append(INNER)
        link.append(len(nodes))
        left = int(np.argmin(children[:, 0]))  # the left child is node 1
        for child in (left, 1 - left):
            nodes.append(tuple(int(x) for x in children[child, 1:]))
            node_box.append(children_box[child].copy())

    # The subtrees, largest first: the pool hands the next to the first
    # thread free (Graham's list scheduling, longest first).
    sizes = [nodes[t][1] - nodes[t][0] for t in jobs]
    source = np.concatenate([[0], np.cumsum([max(2 * size - 1, 1) for size in sizes])])
    made = [None] * len(jobs)
    largest_first = sorted(range(len(jobs)), key=lambda job: -sizes[job])

    def build_subtree(job):
        start, end, depth = nodes[jobs[job]]
        made[job] = _binned_build(prims, order, start, end, depth, node_box[jobs[job]], NO_BINS, NO_BIN_BOXES, 0,
                                  scratch_bounds, scratch_first, scratch_count, int(source[job]), NOTHING_LISTED,
                                  NO_LISTED_BOXES, *options)

    list(pool.map(build_subtree, largest_first))
    deepest = max([deepest] + [deep for _, deep, _ in made])

    bounds, first, count = _assemble(pool, nodes, node_box, kind, link, jobs, made, source, largest_first,
                                     scratch_bounds, scratch_first, scratch_count)
    return Tree(bounds, first, count, order, deepest)
