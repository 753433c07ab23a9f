"""The one traversal of every query: a stack-based walk of four-wide nodes
(:mod:`bvh.node_layout`), with the leaf test as a parameter, as madmann91/bvh
v2 does; meshes, and scenes of instanced meshes and shapes, share it.

Robustness (Ize, "Robust BVH Ray Traversal", JCGT 2013): the slab distances
are computed in float64 from float32 bounds padded outwards, and the far
distance is scaled by ``1 + 2 * gamma(3)``, so that rounding never makes a ray
miss a box it passes through (``slab_entry`` gives the error bound). Axis-aligned rays use a safe
reciprocal: ``1 / 0`` would be inf, and ``inf * 0`` (an origin on a slab plane)
NaN; a huge finite reciprocal keeps every product finite and the test
conservative.

Array indices are cast to unsigned before use: they are never negative, and
numba otherwise wraps every signed index around (``i + n if i < 0``), which
costs three instructions per load in a loop that is mostly loads.
"""

import numpy as np

from ._jit import MAX_DEPTH, jit_inline
from .node_layout import CHILD_COUNT, CHILD_FIRST, MAX_X, MAX_Y, MAX_Z, MIN_X, MIN_Y, MIN_Z, ROW
from .shapes import MESH

_EPS64 = 2.0 ** -53
_GAMMA3 = 3.0 * _EPS64 / (1.0 - 3.0 * _EPS64)
IZE_FAR_SCALE = 1.0 + 2.0 * _GAMMA3

#: Direction components smaller than this are treated as this, keeping 1/d
#: finite (<= 1e200) and (bound - origin) / d finite for any float32 bound.
TINY_DIRECTION = 1.0e-200

MISS = 1.0e308
"""What :func:`slab_entry` returns for a box the ray misses: beyond any ``tmax``
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


#: Entries of the per-ray stack: a node pushes at most three children, a wide
#: tree is no deeper than the binary one it was collapsed from (< MAX_DEPTH),
#: and a scene's walk stacks an instance's mesh walk on its top level's.
STACK_SIZE = 2 * 3 * MAX_DEPTH


@jit_inline
def new_stack():
    """One ray's traversal scratch: ``(first, count, t)`` of ``STACK_SIZE`` entries."""
    return np.empty(STACK_SIZE, np.int32), np.empty(STACK_SIZE, np.int32), np.empty(STACK_SIZE, np.float64)


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


@jit_inline
def visit_node(nodes, links, ray_consts, tmin, tmax, node, sp, stack_first, stack_count, stack_t):
    """Test the four children of node row ``node`` against the ray, push the
    entered ones but the nearest, and return ``(sp, first, count, t)`` of the
    nearest (``t`` is MISS when the ray enters none)."""
    ox, oy, oz, dx, dy, dz, ix, iy, iz, oix, oiy, oiz, near_x, near_y, near_z = ray_consts
    base = node * ROW
    t0 = slot_entry(nodes, base, 0, oix, oiy, oiz, ix, iy, iz, near_x, near_y, near_z, tmin, tmax)
    t1 = slot_entry(nodes, base, 1, oix, oiy, oiz, ix, iy, iz, near_x, near_y, near_z, tmin, tmax)
    t2 = slot_entry(nodes, base, 2, oix, oiy, oiz, ix, iy, iz, near_x, near_y, near_z, tmin, tmax)
    t3 = slot_entry(nodes, base, 3, oix, oiy, oiz, ix, iy, iz, near_x, near_y, near_z, tmin, tmax)
    return push_children(links, base, t0, t1, t2, t3, stack_first, stack_count, stack_t, sp)


def make_step(leaf_test):
    """One step of a walk of one four-wide tree, specialised to ``leaf_test``.

    ``leaf_test(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out)``
    returns ``(tmax, stop)``: the new far limit (a closest-hit test shrinks it
    to its hit) and whether to end the walk (an any-hit test stops at its
    first hit). The test is bound at compile time rather than passed as a
    value, so the call is static, can be inlined, and the kernel can be
    cached. A walk is a loop of steps until one says it is done; a caller may
    run the steps of several rays in turns (see ``kernels._closest_block``).
    """

    @jit_inline
    def step(nodes, links, tris, ray_consts, tmin, tmax, first, count, sp, ray, out, stack_first, stack_count, stack_t):
        """Visit the node or leaf ``(first, count)`` and choose what to visit next.

        ``ray_consts`` is :func:`ray_setup`'s tuple; ``nodes``/``links`` are the
        flat float32 and int32 views of the wide rows; ``stack_first``,
        ``stack_count`` (int32) and ``stack_t`` (float64) are this ray's
        scratch of ``STACK_SIZE`` entries, ``sp`` its depth. Nodes are entered
        near child first; a child popped beyond the current ``tmax`` is skipped.

        Returns ``(first, count, sp, tmax, done)``: the next node or leaf, and
        whether the walk is over.
        """
        if count > 0:
            ox, oy, oz, dx, dy, dz = ray_consts[:6]
            tmax, stop = leaf_test(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out)
            if stop:
                return first, count, sp, tmax, True
        else:
            sp, child_first, child_count, t_near = visit_node(nodes, links, ray_consts, tmin, tmax, first, sp,
                                                              stack_first, stack_count, stack_t)
            if t_near != MISS:
                return child_first, child_count, sp, tmax, False
        while sp > 0:
            sp -= 1
            if stack_t[np.uint64(sp)] <= tmax:
                return stack_first[np.uint64(sp)], stack_count[np.uint64(sp)], sp, tmax, False
        return first, count, sp, tmax, True

    return step


def make_traversal(leaf_test):
    """A whole walk of one tree, specialised to ``leaf_test`` (see :func:`make_step`)."""
    step = make_step(leaf_test)

    @jit_inline
    def traverse(nodes, links, tris, root, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out,
                 stack_first, stack_count, stack_t):
        """Walk the wide tree under node row ``root`` front to back, calling the
        leaf test on every leaf the ray reaches; returns the final ``tmax``.
        The arguments are those of the step function (:func:`make_step`)."""
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


@jit_inline
def object_ray(inverse, o, ox, oy, oz, dx, dy, dz):
    """The ray ``o + t d`` in object ``o``'s space (``inverse`` is ``(O, 3, 4)``
    world-to-object maps): same ``t``, an affine map keeps the ray parameter,
    so ``tmin``, ``tmax`` and hits need no conversion."""
    lox = inverse[o, 0, 0] * ox + inverse[o, 0, 1] * oy + inverse[o, 0, 2] * oz + inverse[o, 0, 3]
    loy = inverse[o, 1, 0] * ox + inverse[o, 1, 1] * oy + inverse[o, 1, 2] * oz + inverse[o, 1, 3]
    loz = inverse[o, 2, 0] * ox + inverse[o, 2, 1] * oy + inverse[o, 2, 2] * oz + inverse[o, 2, 3]
    ldx = inverse[o, 0, 0] * dx + inverse[o, 0, 1] * dy + inverse[o, 0, 2] * dz
    ldy = inverse[o, 1, 0] * dx + inverse[o, 1, 1] * dy + inverse[o, 1, 2] * dz
    ldz = inverse[o, 2, 0] * dx + inverse[o, 2, 1] * dy + inverse[o, 2, 2] * dz
    return lox, loy, loz, ldx, ldy, ldz


def make_instance_step(mesh_leaf, shape_leaf):
    """One step of a walk of a two-level scene, specialised to its leaf tests.

    The scene's top level is a four-wide tree over its objects, one object
    per leaf. Reaching a mesh object, the walk takes the ray into the
    object's space and goes on down the mesh's tree on the same stack, above
    the entries of the top level (Embree's instancing does the same); when
    the stack falls back below that mark, it takes up the world ray again.
    So a scene's rays run the same node visits as a bare mesh's, and a
    caller can interleave two of them (``scene_kernels._closest_block``).

    ``mesh_leaf(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out, obj)``
    is a mesh leaf test (:func:`make_step`) told the object it is in;
    ``shape_leaf(kind, shape_data, start, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out, obj)``
    tests an analytic shape (:mod:`bvh.shapes`) in object space. Both return
    ``(tmax, stop)``.
    """

    @jit_inline
    def step(top_nodes, top_links, top_order, enabled, kind, mesh_of, inverse, mesh_root, nodes, links, tris,
             shape_start, shape_data, origins, directions, ray_consts, tmin, tmax, first, count, sp, mark, obj,
             ray, out, stack_first, stack_count, stack_t):
        """Visit the node or leaf ``(first, count)`` and choose what to visit next.

        The arrays are the fields of ``bvh.scene_kernels.SceneArrays``;
        ``origins``, ``directions`` the world rays, ``ray_consts`` ray
        ``ray``'s :func:`ray_setup` in the current space. ``mark`` is -1 on the
        top level, else the stack depth at which the walk entered object
        ``obj``'s mesh.

        Returns ``(ray_consts, first, count, sp, mark, obj, tmax, done)``.
        """
        inside = mark >= 0
        if count > 0:
            if inside:
                ox, oy, oz, dx, dy, dz = ray_consts[:6]
                tmax, stop = mesh_leaf(tris, first, count, ox, oy, oz, dx, dy, dz, tmin, tmax, ray, out, obj)
                if stop:
                    return ray_consts, first, count, sp, mark, obj, tmax, True
            else:
                o = top_order[np.uint64(first)]
                if enabled[o]:
                    lox, loy, loz, ldx, ldy, ldz = object_ray(inverse, o, origins[ray, 0], origins[ray, 1],
                                                              origins[ray, 2], directions[ray, 0],
                                                              directions[ray, 1], directions[ray, 2])
                    if kind[o] == MESH:
                        return (ray_setup(lox, loy, loz, ldx, ldy, ldz), mesh_root[mesh_of[o]], 0, sp, sp, o, tmax,
                                False)
                    tmax, stop = shape_leaf(kind[o], shape_data, shape_start[o], lox, loy, loz, ldx, ldy, ldz,
                                            tmin, tmax, ray, out, o)
                    if stop:
                        return ray_consts, first, count, sp, mark, obj, tmax, True
        else:
            if inside:
                sp, child_first, child_count, t_near = visit_node(nodes, links, ray_consts, tmin, tmax, first, sp,
                                                                  stack_first, stack_count, stack_t)
            else:
                sp, child_first, child_count, t_near = visit_node(top_nodes, top_links, ray_consts, tmin, tmax,
                                                                  first, sp, stack_first, stack_count, stack_t)
            if t_near != MISS:
                return ray_consts, child_first, child_count, sp, mark, obj, tmax, False
        while sp > 0:
            sp -= 1
            if sp < mark:
                mark = -1
                ray_consts = ray_setup(origins[ray, 0], origins[ray, 1], origins[ray, 2], directions[ray, 0],
                                       directions[ray, 1], directions[ray, 2])
            if stack_t[np.uint64(sp)] <= tmax:
                return (ray_consts, stack_first[np.uint64(sp)], stack_count[np.uint64(sp)], sp, mark, obj, tmax,
                        False)
        return ray_consts, first, count, sp, mark, obj, tmax, True

    return step
