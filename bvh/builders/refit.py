"""Refit: new vertex positions for a built tree, its topology kept.

A deforming mesh (sculpting, skinning, morph targets) keeps its faces and
moves its vertices. Refitting re-rounds the triangles and recomputes every
node box bottom-up instead of rebuilding (Wald, Boulos and Shirley, "Ray
Tracing Deformable Scenes Using Dynamic Bounding Volume Hierarchies", 2007):
linear work and no binning, at the price of boxes that may overlap more than
a fresh build's, which :func:`wide_sah_cost` measures.

The boxes are rounded as the build rounds them (``bvh.walk.nodes.
outward_float32``): the exact float32 bounds of the triangles, then
``BOX_PADDING_ULPS`` steps of ``nextafter`` outwards, the padding the
conservative slab test of Ize ("Robust BVH Ray Traversal", 2013) relies on.
``nextafter`` is monotone, so the padded union of padded boxes is the padded
box of the union, and a refit with the built vertices gives the built boxes
bit for bit.
"""

import numpy as np
from numba import prange

from .._jit import jit, jit_inline, jit_parallel
from ..walk.nodes import aligned_empty
from .triangles import centring_offset, is_zero_area
from ..validation import MAX_MESH_EXTENT, real_array
from ..walk.nodes import CHILD_COUNT, CHILD_FIRST, MAX_X, MIN_X, WIDTH

#: ``nextafter`` steps each box face is moved outwards, as in the build.
BOX_PADDING_ULPS = 2

#: int32 bit patterns of float32 -0.0 and of minus the smallest subnormal.
NEGATIVE_ZERO = np.int32(-2 ** 31)
NEGATIVE_SMALLEST = np.int32(-2 ** 31 + 1)


@jit_inline
def pad_outwards(bits, node, lo, hi, steps=BOX_PADDING_ULPS):
    """Move the float32 box faces ``bits[node, lo]`` (down) and ``bits[node,
    hi]`` (up), read as int32, ``steps`` representable values outwards:
    ``np.nextafter`` on the bit pattern, for finite values, without its
    library call (which took a fifth of a refit). Stepping a positive
    float32's bits by one moves it one value away from zero, a negative's
    towards zero; zero of either sign steps to the smallest subnormal."""
    for _ in range(steps):
        low = bits[node, lo]
        if low == 0:
            bits[node, lo] = NEGATIVE_SMALLEST
        elif low > 0:
            bits[node, lo] = low - 1
        else:
            bits[node, lo] = low + 1
        high = bits[node, hi]
        if high == NEGATIVE_ZERO:
            bits[node, hi] = 1
        elif high >= 0:
            bits[node, hi] = high + 1
        else:
            bits[node, hi] = high - 1


@jit_inline
def union_into_slot(nodes, row, parent, slot):
    """Write the union of the four slots' boxes of node ``row`` into slot
    ``slot`` of node ``parent`` (unused slots' inverted boxes change
    nothing); float32 minima and maxima, exact."""
    for axis in range(3):
        lo = nodes[row, MIN_X + 4 * axis]
        hi = nodes[row, MAX_X + 4 * axis]
        for child in range(1, WIDTH):
            lo = min(lo, nodes[row, MIN_X + 4 * axis + child])
            hi = max(hi, nodes[row, MAX_X + 4 * axis + child])
        nodes[parent, MIN_X + 4 * axis + slot] = lo
        nodes[parent, MAX_X + 4 * axis + slot] = hi


@jit_parallel
def _vertex_bounds(vertices, used, partial):
    """Box of the ``used`` vertices, in ``partial`` rows of ``(lo, hi)`` per
    chunk of vertices (the caller reduces them), and the first row holding a
    NaN or infinity, or -1. One parallel pass in place of a serial gather
    through the faces."""
    chunks = partial.shape[0]
    n = vertices.shape[0]
    first_bad = n
    for chunk in prange(chunks):
        begin = chunk * n // chunks
        end = (chunk + 1) * n // chunks
        for axis in range(3):
            partial[chunk, axis] = np.inf
            partial[chunk, 3 + axis] = -np.inf
        for vertex in range(begin, end):
            finite = True
            for axis in range(3):
                x = vertices[vertex, axis]
                if not np.isfinite(x):
                    finite = False
                elif used[vertex]:
                    partial[chunk, axis] = min(partial[chunk, axis], x)
                    partial[chunk, 3 + axis] = max(partial[chunk, 3 + axis], x)
            if not finite:
                first_bad = min(first_bad, vertex)
    return first_bad if first_bad < n else -1


@jit_parallel
def _refit(vertices, offset, row_faces, dropped_faces, nodes, links, triangles, dropped_corners, refitted,
           refitted_bits):
    """Fill ``triangles`` and ``refitted`` for new ``vertices``; see :func:`refit_arrays`.

    Returns ``(became_zero_area, gained_area)``, counts of tree rows and of
    dropped faces whose degeneracy changed; on nonzero counts the outputs are
    incomplete and must be discarded.
    """
    gained_area = 0
    # Most meshes have no zero-area face: skip the parallel region, whose
    # start waits for every worker to wake.
    if dropped_faces.shape[0] > 0:
        for face in prange(dropped_faces.shape[0]):
            for corner in range(3):
                vertex = dropped_faces[face, corner]
                for axis in range(3):
                    dropped_corners[face, 3 * corner + axis] = np.float32(vertices[vertex, axis] - offset[axis])
            if not is_zero_area(dropped_corners, face):
                gained_area += 1

    # Leaf slots: each triangle row belongs to one, so the rows are rounded
    # and boxed in one parallel pass over the nodes, without re-reading them.
    became_zero_area = 0
    for node in prange(nodes.shape[0]):
        for slot in range(WIDTH):
            count = links[node, CHILD_COUNT + slot]
            if count == 0:
                continue
            first = links[node, CHILD_FIRST + slot]
            lo_x = lo_y = lo_z = np.float32(np.inf)
            hi_x = hi_y = hi_z = np.float32(-np.inf)
            for row in range(first, first + count):
                for corner in range(3):
                    vertex = row_faces[row, corner]
                    x = np.float32(vertices[vertex, 0] - offset[0])
                    y = np.float32(vertices[vertex, 1] - offset[1])
                    z = np.float32(vertices[vertex, 2] - offset[2])
                    triangles[row, 3 * corner] = x
                    triangles[row, 3 * corner + 1] = y
                    triangles[row, 3 * corner + 2] = z
                    lo_x, lo_y, lo_z = min(lo_x, x), min(lo_y, y), min(lo_z, z)
                    hi_x, hi_y, hi_z = max(hi_x, x), max(hi_y, y), max(hi_z, z)
                if is_zero_area(triangles, row):
                    became_zero_area += 1
            refitted[node, MIN_X + slot] = lo_x
            refitted[node, MIN_X + 4 + slot] = lo_y
            refitted[node, MIN_X + 8 + slot] = lo_z
            refitted[node, MAX_X + slot] = hi_x
            refitted[node, MAX_X + 4 + slot] = hi_y
            refitted[node, MAX_X + 8 + slot] = hi_z
            for axis in range(3):
                pad_outwards(refitted_bits, node, MIN_X + 4 * axis + slot, MAX_X + 4 * axis + slot)
    if became_zero_area > 0 or gained_area > 0:
        return became_zero_area, gained_area
    # Inner slots: a child node's row is always after its parent's (the
    # collapse numbers rows depth first), so the reverse row order visits
    # every node after all of its descendants.
    for node in range(nodes.shape[0] - 1, -1, -1):
        for slot in range(WIDTH):
            child = links[node, CHILD_FIRST + slot]
            if links[node, CHILD_COUNT + slot] != 0 or child == 0:
                continue
            union_into_slot(refitted, child, node, slot)
    return 0, 0


@jit_inline
def _row_sah_term(nodes, links, node, traversal_cost, intersection_cost):
    # Row ``node``'s share of :func:`wide_sah_cost`'s sum, before the division by the root's area.
    total = 0.0
    for slot in range(WIDTH):
        count = links[node, CHILD_COUNT + slot]
        if count == 0 and links[node, CHILD_FIRST + slot] == 0:
            continue
        dx = np.float64(nodes[node, MAX_X + slot]) - nodes[node, MIN_X + slot]
        dy = np.float64(nodes[node, MAX_X + 4 + slot]) - nodes[node, MIN_X + 4 + slot]
        dz = np.float64(nodes[node, MAX_X + 8 + slot]) - nodes[node, MIN_X + 8 + slot]
        area = dx * dy + dy * dz + dz * dx
        total += area * (intersection_cost * count if count > 0 else traversal_cost)
    return total


@jit
def row_sah_terms(nodes, links, rows, traversal_cost, intersection_cost, out):
    """``out[i]``: row ``rows[i]``'s share of :func:`wide_sah_cost`'s sum of
    the tree ``nodes`` (before the division by the root's area), so that a
    refit of a few rows updates the sum in O(rows)."""
    for i in range(rows.shape[0]):
        out[i] = _row_sah_term(nodes, links, rows[i], traversal_cost, intersection_cost)


@jit
def wide_sah_cost(nodes, links, traversal_cost, intersection_cost):
    """SAH cost of a four-wide tree (see :mod:`bvh.walk.nodes`), in units of
    one triangle test: the root's traversal plus, for each child slot, its
    box's surface area relative to the root's times ``traversal_cost`` (an
    inner child) or ``intersection_cost * count`` (a leaf). Unused slots
    count nothing. 0.0 for a tree without triangles."""
    total = 0.0
    root_lo = np.full(3, np.inf)
    root_hi = np.full(3, -np.inf)
    for node in range(nodes.shape[0]):
        total += _row_sah_term(nodes, links, node, traversal_cost, intersection_cost)
    for slot in range(WIDTH):
        if links[0, CHILD_COUNT + slot] == 0 and links[0, CHILD_FIRST + slot] == 0:
            continue
        for axis in range(3):
            root_lo[axis] = min(root_lo[axis], nodes[0, MIN_X + 4 * axis + slot])
            root_hi[axis] = max(root_hi[axis], nodes[0, MAX_X + 4 * axis + slot])
    if total == 0.0:
        return 0.0
    dx = root_hi[0] - root_lo[0]
    dy = root_hi[1] - root_lo[1]
    dz = root_hi[2] - root_lo[2]
    return traversal_cost + total / (dx * dy + dy * dz + dz * dx)


@jit
def refit_top_level(nodes, links, top_order, bounds, rows, slots, row_parent, row_parent_slot, row_depth, written):
    """Refit a scene's top-level tree after objects moved, in place.

    The leaf slots ``(rows[i], slots[i])`` of ``nodes (K, 32)`` float32
    (``links`` its int32 view) get the union of their objects' world boxes
    ``bounds (O, 2, 3)`` float64 (objects ``top_order[first:first + count]``
    of the slot), rounded as the build rounds them (to nearest, then
    ``BOX_PADDING_ULPS`` steps outwards: padding the rounded union equals
    the union of the padded boxes, ``nextafter`` being monotone); then each
    ancestor's slot gets the union of its child's four slots, deepest rows
    first, so a refit to unchanged boxes gives the built tree bit for bit.
    ``row_parent``, ``row_parent_slot`` and ``row_depth`` (K,) locate each
    row under its parent. ``written (K,) bool``, False on entry, marks every
    row written.

    One call per snapshot of a scene whose objects move (an editor's drag
    makes one per edit): written in numpy, level by level, it cost some 0.3
    ms of the GIL on a 10,000-object scene; here, microseconds.
    """
    pending = np.empty(nodes.shape[0], np.int64)
    following = np.empty(nodes.shape[0], np.int64)
    size = 0
    for i in range(rows.shape[0]):
        row = rows[i]
        slot = slots[i]
        first = links[row, CHILD_FIRST + slot]
        count = links[row, CHILD_COUNT + slot]
        for axis in range(3):
            lo = np.float32(np.inf)
            hi = np.float32(-np.inf)
            for k in range(first, first + count):
                o = top_order[k]
                lo = min(lo, np.float32(bounds[o, 0, axis]))
                hi = max(hi, np.float32(bounds[o, 1, axis]))
            nodes[row, MIN_X + 4 * axis + slot] = lo
            nodes[row, MAX_X + 4 * axis + slot] = hi
            pad_outwards(links, row, MIN_X + 4 * axis + slot, MAX_X + 4 * axis + slot)
        if not written[row]:
            written[row] = True
            pending[size] = row
            size += 1
    while size > 0:
        deepest = 0
        for i in range(size):
            deepest = max(deepest, row_depth[pending[i]])
        if deepest == 0:
            return
        kept = 0
        for i in range(size):
            row = pending[i]
            if row_depth[row] != deepest:
                following[kept] = row
                kept += 1
                continue
            parent = row_parent[row]
            slot = row_parent_slot[row]
            union_into_slot(nodes, row, parent, slot)
            if not written[parent]:
                written[parent] = True
                following[kept] = parent
                kept += 1
        pending, following = following, pending
        size = kept


#: Chunks of vertices :func:`vertex_bounds` splits its pass into.
BOUNDS_CHUNKS = 64


def check_refit_vertices(vertices, vertex_count: int) -> np.ndarray:
    """Validate the shape and type of refit input as
    ``bvh.validation.check_mesh`` validates a mesh's vertices, with the same
    messages, plus the vertex count; returns ``(V, 3)`` float64, C-contiguous.
    :func:`vertex_bounds` checks the values."""
    vertices = real_array("vertices", vertices)
    if vertices.ndim != 2 or vertices.shape[1] != 3:
        raise ValueError(f"vertices must have shape (V, 3), got {vertices.shape}")
    if vertices.shape[0] != vertex_count:
        raise ValueError(f"refit needs the mesh's {vertex_count} vertices, got {vertices.shape[0]}; "
                         "a different vertex count is a new mesh: build it")
    return np.ascontiguousarray(vertices, dtype=np.float64)


def vertex_bounds(vertices: np.ndarray, used: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)``, the (3,) corners of the box of the vertices the faces use.

    Parameters
    ----------
    vertices : (V, 3) float64
    used : (V,) bool
        Whether any face refers to each vertex.

    Raises
    ------
    ValueError
        If any vertex, used or not, holds a NaN or infinity (as ``check_mesh``).
    """
    partial = np.empty((BOUNDS_CHUNKS, 6))
    first_bad = _vertex_bounds(vertices, used, partial)
    if first_bad >= 0:
        raise ValueError(f"vertices contain NaN or infinite values (first at row {first_bad})")
    return partial[:, :3].min(axis=0), partial[:, 3:].max(axis=0)


def refit_arrays(vertices, offset, row_faces, dropped_faces, nodes, triangles, refitted):
    """Re-round the triangles and recompute every box of a four-wide tree.

    Parameters
    ----------
    vertices : (V, 3) float64, finite
    offset : (3,) float64
        Centring offset of the new positions (``bvh.builders.triangles``).
    row_faces : (T, 3) int32 or int64
        Vertex indices of the face of each triangle row, in leaf order.
    dropped_faces : (D, 3) same dtype
        Vertex indices of the faces left out of the tree as zero-area.
    nodes : (K, 32) float32
        The tree as it is; read only.
    triangles : (T, 9) float32
        Output: the new triangle rows, relative to ``offset``.
    refitted : (K, 32) float32
        Output, a copy of ``nodes`` on entry (links and unused slots are kept):
        the new boxes.

    Returns
    -------
    (int, int)
        Tree rows that became zero-area and dropped faces that gained area;
        both 0 on success, otherwise the outputs are incomplete.
    """
    dropped_corners = np.empty((dropped_faces.shape[0], 9), np.float32)
    return _refit(vertices, offset, row_faces, dropped_faces, nodes, nodes.view(np.int32), triangles,
                  dropped_corners, refitted, refitted.view(np.int32))


def refit_tree(vertices: np.ndarray, used: np.ndarray, row_faces: np.ndarray, dropped_faces: np.ndarray,
               nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A refitted copy of a mesh's tree for new positions of its vertices.

    Parameters
    ----------
    vertices : (V, 3) float64
        From :func:`check_refit_vertices`.
    used : (V,) bool
        Whether any face refers to each vertex.
    row_faces, dropped_faces, nodes
        As for :func:`refit_arrays`; ``nodes`` with links local to the mesh.

    Returns
    -------
    nodes : (K, 32) float32
        The refitted tree, 64-byte aligned.
    triangles : (T, 9) float32
        The triangle rows, relative to ``offset``.
    offset : (3,) float64
        The new centring offset (``bvh.builders.triangles``).
    lo, hi : (3,) float64
        The box of the used vertices.

    Raises
    ------
    ValueError
        On non-finite coordinates, a span float32 cannot hold, or a change
        of which faces are zero-area, saying which.
    """
    lo, hi = vertex_bounds(vertices, used)
    extent = float((hi - lo).max())
    if extent > MAX_MESH_EXTENT:
        raise ValueError(f"vertex coordinates span {extent:g}, more than float32 can hold ({MAX_MESH_EXTENT:g})")
    offset = centring_offset(lo, hi)
    triangles = aligned_empty((row_faces.shape[0], 9), np.float32)
    refitted = aligned_empty(nodes.shape, np.float32)
    refitted[:] = nodes
    became_zero_area, gained_area = refit_arrays(vertices, offset, row_faces, dropped_faces, nodes, triangles,
                                                 refitted)
    if became_zero_area or gained_area:
        raise ValueError(
            f"refit cannot change which faces are zero-area ({became_zero_area} faces of the tree would "
            f"become zero-area, {gained_area} zero-area faces would gain area): build the mesh anew")
    return refitted, triangles, offset, lo, hi
