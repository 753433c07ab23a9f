"""Stack-based BVH traversal with a robust slab test; the leaf test is a parameter.

Robustness (Ize, "Robust BVH Ray Traversal", JCGT 2013): the slab distances
are computed in float64 from float32 bounds padded outwards, and the far
distance is scaled by ``1 + 2 * gamma(3)``, so that rounding never makes a ray
miss a box it passes through (``box_entry`` gives the error bound). Axis-aligned rays use a safe
reciprocal: ``1 / 0`` would be inf, and ``inf * 0`` (an origin on a slab plane)
NaN; a huge finite reciprocal keeps every product finite and the test
conservative.

Array indices are cast to unsigned before use: they are never negative, and
numba otherwise wraps every signed index around (``i + n if i < 0``), which
costs three instructions per load in a loop that is mostly loads.
"""

import numpy as np

from ._intrinsics import prefetch
from ._jit import jit_inline
from .node_layout import COUNT, FIRST

_EPS64 = 2.0 ** -53
_GAMMA3 = 3.0 * _EPS64 / (1.0 - 3.0 * _EPS64)
IZE_FAR_SCALE = 1.0 + 2.0 * _GAMMA3

#: Direction components smaller than this are treated as this, keeping 1/d
#: finite (<= 1e200) and (bound - origin) / d finite for any float32 bound.
TINY_DIRECTION = 1.0e-200

MISS = 1.0e308
"""What :func:`box_entry` returns for a box the ray misses: beyond any ``tmax``
(which the kernels clamp to ``FAR``), so a miss sorts after every hit."""


@jit_inline
def safe_reciprocal(x):
    if abs(x) < TINY_DIRECTION:
        return 1.0 / TINY_DIRECTION if x >= 0.0 else -1.0 / TINY_DIRECTION
    return 1.0 / x


@jit_inline
def slab_entry(nodes, near_x, near_y, near_z, far_x, far_y, far_z, oix, oiy, oiz, ix, iy, iz, tmin, tmax):
    """Entry distance of the ray into a box within ``[tmin, tmax]``, or MISS;
    ``near_x`` .. ``far_z`` are the flat indices in ``nodes`` of the box's
    planes the ray meets first and last on each axis.

    ``oix = ox * ix`` (and y, z) are the ray's origin scaled by its reciprocal
    direction, so that each slab distance ``(b - o) / d`` is one fused
    multiply-add, ``b * (1/d) - o * (1/d)``. Its rounding error is at most
    about ``3 eps |t| + eps |b / d|``: the first part is what Ize's far factor
    covers, the second is far below the two float32 ulps every bound was
    padded by (``2^-23 |b|`` against ``2^-53 |b|``), so the test stays
    conservative. Choosing the near and far plane by the sign of the
    direction (Williams et al., "An efficient and robust ray-box intersection
    algorithm", 2005) spares a min/max per axis.
    """
    near = max(max(np.float64(nodes[np.uint64(near_x)]) * ix - oix, np.float64(nodes[np.uint64(near_y)]) * iy - oiy),
               max(np.float64(nodes[np.uint64(near_z)]) * iz - oiz, tmin))
    far = min(min(np.float64(nodes[np.uint64(far_x)]) * ix - oix, np.float64(nodes[np.uint64(far_y)]) * iy - oiy),
              np.float64(nodes[np.uint64(far_z)]) * iz - oiz) * IZE_FAR_SCALE
    far = min(far, tmax)
    if near <= far:
        return near
    return MISS


@jit_inline
def box_entry(nodes, node, oix, oiy, oiz, ix, iy, iz, near_x, near_y, near_z, tmin, tmax):
    """Entry distance of the ray into binary ``node``'s box within ``[tmin, tmax]``, or MISS.

    ``near_x`` is the column of the slab plane the ray meets first on x (0,
    the min, for a non-negative reciprocal direction; 3, the max, otherwise),
    and ``3 - near_x`` the far one; likewise for y and z (columns 1, 4 and 2, 5).
    """
    base = node * 8
    return slab_entry(nodes, base + near_x, base + near_y + 1, base + near_z + 2, base + 3 - near_x,
                      base + 4 - near_y, base + 5 - near_z, oix, oiy, oiz, ix, iy, iz, tmin, tmax)


@jit_inline
def prefetch_children(nodes, links, tris, first):
    """Start loading what the children ``first`` and ``first + 1`` lead to (their
    own children, or their triangles) while their boxes are being tested."""
    for child in range(first, first + 2):
        if links[np.uint64(child * 8 + COUNT)] == 0:
            prefetch(nodes, links[np.uint64(child * 8 + FIRST)] * 8)
        else:
            prefetch(tris, links[np.uint64(child * 8 + FIRST)] * 9)


def make_traversal(leaf_test):
    """A traversal kernel specialised to ``leaf_test``.

    ``leaf_test(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out)``
    returns ``(tmax, stop)``: the new far limit (a closest-hit test shrinks it
    to its hit) and whether to end the walk (an any-hit test stops at its
    first hit). The test is bound at compile time rather than passed as a
    value, so the call is static, can be inlined, and the kernel can be cached.
    """

    @jit_inline
    def traverse(nodes, links, tris, root, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out, stack_node, stack_t):
        """Walk the tree under node ``root`` front to back, calling the leaf
        test on every leaf the ray reaches.

        Nodes are entered near child first; a node popped from the stack whose
        entry lies beyond the current ``tmax`` is skipped. ``stack_node`` and
        ``stack_t`` are the caller's fixed-size scratch, at least as long as
        the tree is deep. Returns the final ``tmax``.
        """

        ix = safe_reciprocal(dx)
        iy = safe_reciprocal(dy)
        iz = safe_reciprocal(dz)
        near_x = 0 if ix >= 0.0 else 3
        near_y = 0 if iy >= 0.0 else 3
        near_z = 0 if iz >= 0.0 else 3
        oix = ox * ix
        oiy = oy * iy
        oiz = oz * iz
        if box_entry(nodes, root, oix, oiy, oiz, ix, iy, iz, near_x, near_y, near_z, tmin, tmax) == MISS:
            return tmax
        node = root
        sp = 0
        while True:
            first = links[np.uint64(node * 8 + FIRST)]
            count = links[np.uint64(node * 8 + COUNT)]
            if count > 0:
                tmax, stop = leaf_test(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out)
                if stop:
                    return tmax
            else:
                # Order the children without branching on the ray: the near
                # one is visited next, the far one pushed only when both are
                # hit (the store is unconditional, the stack pointer is not),
                # which spares the branch predictor two coin flips per node.
                prefetch_children(nodes, links, tris, first)
                t_left = box_entry(nodes, first, oix, oiy, oiz, ix, iy, iz, near_x, near_y, near_z, tmin, tmax)
                t_right = box_entry(nodes, first + 1, oix, oiy, oiz, ix, iy, iz, near_x, near_y, near_z, tmin, tmax)
                right_first = t_right < t_left
                t_near = min(t_left, t_right)
                t_far = max(t_left, t_right)
                stack_node[np.uint64(sp)] = first + 1 - right_first
                stack_t[np.uint64(sp)] = t_far
                sp += t_far != MISS
                if t_near != MISS:
                    node = first + right_first
                    continue
            found = False
            while sp > 0:
                sp -= 1
                if stack_t[np.uint64(sp)] <= tmax:
                    node = stack_node[np.uint64(sp)]
                    found = True
                    break
            if not found:
                return tmax

    return traverse
