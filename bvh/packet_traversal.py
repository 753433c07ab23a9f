"""Packet traversal: a few rays from one origin walk the tree together.

Rays from a pinhole camera, or the picks of a cursor hovering over a view,
share their origin and point in nearly the same direction, so they visit
nearly the same nodes. Walking them as one packet (Wald et al., "Interactive
Rendering with Coherent Ray Tracing", 2001) loads each node once for all of
them, computes ``bound - origin`` once, and turns the per-ray slab test into
a short branch-free loop over lanes. A node is entered when any lane's ray
enters it; each lane keeps its own ``tmax``, so the answers are those of the
single-ray traversal (but for which of two faces is reported when a ray meets
their shared edge).
"""

import numpy as np

from ._jit import jit_inline
from .node_layout import COUNT, FIRST
from .traversal import IZE_FAR_SCALE, MISS, prefetch_children

#: Rays per packet: a camera's neighbouring pixels; two AVX2 registers of float64.
PACKET_SIZE = 8


@jit_inline
def packet_entry(nodes, node, ox, oy, oz, ix, iy, iz, tmin, tmax):
    """Smallest entry distance into ``node``'s box over the lanes that enter it, or MISS.

    ``ix, iy, iz, tmax`` are the lanes' ``(PACKET_SIZE,)`` reciprocal
    directions and far limits; the slab test per lane is that of
    ``traversal.box_entry`` (Ize's conservative far factor included).
    """
    base = node * 8
    lo_x = np.float64(nodes[np.uint64(base)]) - ox
    lo_y = np.float64(nodes[np.uint64(base + 1)]) - oy
    lo_z = np.float64(nodes[np.uint64(base + 2)]) - oz
    hi_x = np.float64(nodes[np.uint64(base + 3)]) - ox
    hi_y = np.float64(nodes[np.uint64(base + 4)]) - oy
    hi_z = np.float64(nodes[np.uint64(base + 5)]) - oz
    entry = MISS
    for lane in range(PACKET_SIZE):
        t0 = lo_x * ix[lane]
        t1 = hi_x * ix[lane]
        near = min(t0, t1)
        far = max(t0, t1)
        t0 = lo_y * iy[lane]
        t1 = hi_y * iy[lane]
        near = max(near, min(t0, t1))
        far = min(far, max(t0, t1))
        t0 = lo_z * iz[lane]
        t1 = hi_z * iz[lane]
        near = max(max(near, min(t0, t1)), tmin)
        far = min(min(far, max(t0, t1)) * IZE_FAR_SCALE, tmax[lane])
        entry = min(entry, near) if near <= far else entry
    return entry


def make_packet_traversal(leaf_test):
    """A packet traversal kernel specialised to ``leaf_test``.

    ``leaf_test(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, out)``
    takes the lanes' directions and far limits as ``(PACKET_SIZE,)`` arrays and
    shrinks ``tmax`` in place where a lane hits.
    """

    @jit_inline
    def traverse_packet(nodes, links, tris, ox, oy, oz, dx, dy, dz, ix, iy, iz, tmin, tmax, out,
                        stack_node, stack_t):
        """Walk the tree front to back for a packet of rays sharing the origin ``o``.

        Same order and stack discipline as ``traversal.make_traversal``, with
        a node's entry taken over all lanes and a popped node skipped when it
        lies beyond every lane's ``tmax``.
        """
        if packet_entry(nodes, 0, ox, oy, oz, ix, iy, iz, tmin, tmax) == MISS:
            return
        node = 0
        sp = 0
        while True:
            first = links[np.uint64(node * 8 + FIRST)]
            count = links[np.uint64(node * 8 + COUNT)]
            if count > 0:
                leaf_test(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, out)
            else:
                prefetch_children(nodes, links, tris, first)
                t_left = packet_entry(nodes, first, ox, oy, oz, ix, iy, iz, tmin, tmax)
                t_right = packet_entry(nodes, first + 1, ox, oy, oz, ix, iy, iz, tmin, tmax)
                right_first = t_right < t_left
                stack_node[np.uint64(sp)] = first + 1 - right_first
                stack_t[np.uint64(sp)] = max(t_left, t_right)
                sp += max(t_left, t_right) != MISS
                if min(t_left, t_right) != MISS:
                    node = first + right_first
                    continue
            farthest = tmax[0]
            for lane in range(1, PACKET_SIZE):
                farthest = max(farthest, tmax[lane])
            found = False
            while sp > 0:
                sp -= 1
                if stack_t[np.uint64(sp)] <= farthest:
                    node = stack_node[np.uint64(sp)]
                    found = True
                    break
            if not found:
                return

    return traverse_packet
