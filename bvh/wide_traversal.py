"""Stack-based traversal of the four-wide tree (:mod:`bvh.wide_layout`); the
leaf test is a parameter, with the signature of :func:`bvh.traversal.make_traversal`'s.

Each slot's slab test is :func:`bvh.traversal.slab_entry`: float64
distances from float32 bounds padded outwards, one fused multiply-add per
plane, Ize's conservative far factor, a safe reciprocal for axis-aligned rays.
The four tests of a node are independent, so the processor runs them side by
side; the node's children are then ordered by a five-comparison sorting
network without branches, the nearest visited next and the others pushed
far to near, so that a closest-hit walk meets near hits first and skips what
lies beyond them.
"""

import numpy as np

from ._jit import MAX_DEPTH, jit_inline
from .traversal import MISS, safe_reciprocal, slab_entry
from .wide_layout import CHILD_COUNT, CHILD_FIRST, MAX_X, MAX_Y, MAX_Z, MIN_X, MIN_Y, MIN_Z, ROW

#: Entries of the per-ray stack: a node pushes at most three children, and the
#: wide tree is no deeper than the binary one (< MAX_DEPTH).
WIDE_STACK = 3 * MAX_DEPTH


@jit_inline
def new_stack():
    """One ray's traversal scratch: ``(first, count, t)`` of ``WIDE_STACK`` entries."""
    return np.empty(WIDE_STACK, np.int32), np.empty(WIDE_STACK, np.int32), np.empty(WIDE_STACK, np.float64)


@jit_inline
def slot_entry(nodes, base, slot, oix, oiy, oiz, ix, iy, iz, near_x, near_y, near_z, tmin, tmax):
    """Entry distance of the ray into child ``slot`` of the node at flat offset
    ``base`` within ``[tmin, tmax]``, or MISS.

    ``near_x`` is the column of the x plane the ray meets first (``MIN_X`` for
    a non-negative reciprocal direction, ``MAX_X`` otherwise) and
    ``MIN_X + MAX_X - near_x`` the far one; likewise for y and z.
    """
    at = base + slot
    return slab_entry(nodes, at + near_x, at + near_y, at + near_z, at + (MIN_X + MAX_X) - near_x,
                      at + (MIN_Y + MAX_Y) - near_y, at + (MIN_Z + MAX_Z) - near_z, oix, oiy, oiz, ix, iy, iz,
                      tmin, tmax)


@jit_inline
def order_pair(t_a, slot_a, t_b, slot_b):
    """One comparator of the sorting network: the nearer pair first."""
    swap = t_b < t_a
    return min(t_a, t_b), slot_b if swap else slot_a, max(t_a, t_b), slot_a if swap else slot_b


@jit_inline
def push_children(links, base, t0, t1, t2, t3, stack_first, stack_count, stack_t, sp):
    """Order the children of the node at flat offset ``base`` by their entry
    distances ``t0..t3`` (MISS for a child not entered), push the entered ones
    but the nearest far to near, and return ``(sp, first, count, t)`` of the
    nearest, ``t`` being MISS when no child is entered.

    The stores are unconditional; only the stack pointer depends on the hits.
    """
    t0, s0, t1, s1 = order_pair(t0, 0, t1, 1)
    t2, s2, t3, s3 = order_pair(t2, 2, t3, 3)
    t0, s0, t2, s2 = order_pair(t0, s0, t2, s2)
    t1, s1, t3, s3 = order_pair(t1, s1, t3, s3)
    t1, s1, t2, s2 = order_pair(t1, s1, t2, s2)
    firsts = np.uint64(base + CHILD_FIRST)
    counts = np.uint64(base + CHILD_COUNT)
    stack_first[np.uint64(sp)] = links[firsts + s3]
    stack_count[np.uint64(sp)] = links[counts + s3]
    stack_t[np.uint64(sp)] = t3
    sp += t3 != MISS
    stack_first[np.uint64(sp)] = links[firsts + s2]
    stack_count[np.uint64(sp)] = links[counts + s2]
    stack_t[np.uint64(sp)] = t2
    sp += t2 != MISS
    stack_first[np.uint64(sp)] = links[firsts + s1]
    stack_count[np.uint64(sp)] = links[counts + s1]
    stack_t[np.uint64(sp)] = t1
    sp += t1 != MISS
    return sp, links[firsts + s0], links[counts + s0], t0


@jit_inline
def ray_setup(ox, oy, oz, dx, dy, dz):
    """What the slab tests of one ray need, computed once per ray:
    ``(ox, oy, oz, dx, dy, dz, ix, iy, iz, oix, oiy, oiz, near_x, near_y, near_z)``,
    the reciprocal direction ``i`` (safe for axis-aligned rays), ``o * i``,
    and the column of each axis's near plane."""
    ix = safe_reciprocal(dx)
    iy = safe_reciprocal(dy)
    iz = safe_reciprocal(dz)
    near_x = MIN_X if ix >= 0.0 else MAX_X
    near_y = MIN_Y if iy >= 0.0 else MAX_Y
    near_z = MIN_Z if iz >= 0.0 else MAX_Z
    return ox, oy, oz, dx, dy, dz, ix, iy, iz, ox * ix, oy * iy, oz * iz, near_x, near_y, near_z


def make_wide_step(leaf_test):
    """One step of a walk of the four-wide tree, specialised to ``leaf_test``.

    ``leaf_test(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out)``
    returns ``(tmax, stop)``, as for :func:`bvh.traversal.make_traversal`.
    A walk is a loop of steps until one says it is done; a caller may run
    the steps of several rays in turns (see ``kernels._closest_block``).
    """

    @jit_inline
    def step(nodes, links, tris, ray_consts, tmin, tmax, first, count, sp, ray, out, stack_first, stack_count, stack_t):
        """Visit the node or leaf ``(first, count)`` and choose what to visit next.

        ``ray_consts`` is :func:`ray_setup`'s tuple; ``nodes``/``links`` are the
        flat float32 and int32 views of the wide rows; ``stack_first``,
        ``stack_count`` (int32) and ``stack_t`` (float64) are this ray's
        scratch of ``WIDE_STACK`` entries, ``sp`` its depth. Nodes are entered
        near child first; a child popped beyond the current ``tmax`` is skipped.

        Returns ``(first, count, sp, tmax, done)``: the next node or leaf, and
        whether the walk is over.
        """
        ox, oy, oz, dx, dy, dz, ix, iy, iz, oix, oiy, oiz, near_x, near_y, near_z = ray_consts
        if count > 0:
            tmax, stop = leaf_test(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out)
            if stop:
                return first, count, sp, tmax, True
        else:
            base = first * ROW
            t0 = slot_entry(nodes, base, 0, oix, oiy, oiz, ix, iy, iz, near_x, near_y, near_z, tmin, tmax)
            t1 = slot_entry(nodes, base, 1, oix, oiy, oiz, ix, iy, iz, near_x, near_y, near_z, tmin, tmax)
            t2 = slot_entry(nodes, base, 2, oix, oiy, oiz, ix, iy, iz, near_x, near_y, near_z, tmin, tmax)
            t3 = slot_entry(nodes, base, 3, oix, oiy, oiz, ix, iy, iz, near_x, near_y, near_z, tmin, tmax)
            sp, child_first, child_count, t_near = push_children(links, base, t0, t1, t2, t3, stack_first,
                                                                 stack_count, stack_t, sp)
            if t_near != MISS:
                return child_first, child_count, sp, tmax, False
        while sp > 0:
            sp -= 1
            if stack_t[np.uint64(sp)] <= tmax:
                return stack_first[np.uint64(sp)], stack_count[np.uint64(sp)], sp, tmax, False
        return first, count, sp, tmax, True

    return step


def make_wide_traversal(leaf_test):
    """A four-wide traversal kernel specialised to ``leaf_test``, with the
    signature of :func:`bvh.traversal.make_traversal`'s kernels but for its
    three stack arrays."""
    step = make_wide_step(leaf_test)

    @jit_inline
    def traverse(nodes, links, tris, root, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out,
                 stack_first, stack_count, stack_t):
        """Walk the wide tree under node row ``root`` front to back, calling the
        leaf test on every leaf the ray reaches; returns the final ``tmax``.
        The arguments are those of the step function (:func:`make_wide_step`)."""
        ray_consts = ray_setup(ox, oy, oz, dx, dy, dz)
        first = root
        count = 0
        sp = 0
        done = False
        while not done:
            first, count, sp, tmax, done = step(nodes, links, tris, ray_consts, tmin, tmax, first, count, sp, ray,
                                                out, stack_first, stack_count, stack_t)
        return tmax

    return traverse
