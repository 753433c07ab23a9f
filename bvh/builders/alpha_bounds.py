"""Tighter boxes for alpha-tested walks: bounding only where a face can be opaque.

A ray through a leaf card's transparent texels goes on (:mod:`bvh.queries.alpha`),
so alpha-tested rays walk further than rays that stop at the first card, and
they enter every card's box on the way, transparent corners and all. The
alpha-tested walks read node boxes that bound only the part of each face
where a hit could pass the alpha test; the other queries, and rays with
``alpha_test=False``, read the ordinary ones. The tree's topology, its leaves
and its triangle rows are the same: the leaf test and its alpha test still
decide every hit; the boxes only keep rays out of where none could pass.

Two steps:

1. :func:`opaque_rects`, once per mesh when its materials are packed: per
   alpha-tested face, the rectangle of texture space covering every texel
   that overlaps the face's texture triangle and may pass its material's
   cutoff (alpha at most ``texel / 255 * factor * max(vertex alphas)``; a
   ``BLEND`` material's cutoff is the query's, so any texel above zero may),
   grown by half a texel on each side. The texel a hit samples is the one
   whose square holds the hit's texture coordinates (``floor(s * W)``), so
   every hit that passes lies in the rectangle; the half texel absorbs the
   rounding of those coordinates. A face whose texture triangle spans more
   than :data:`MAX_RASTER_TEXELS` texels keeps its whole triangle.
2. :func:`tight_nodes`, per pack: each alpha-tested triangle row clipped to its
   rectangle in barycentric coordinates (the texture coordinates are affine
   in them, so the rectangle's four sides are half-planes there;
   Sutherland and Hodgman, "Reentrant polygon clipping", 1974), the clipped
   polygon's corners bounded in 3D, grown by :data:`RELATIVE_MARGIN` of the
   face's size and kept within the face's own box; leaf slots are the union
   of their rows' boxes rounded outwards to float32 and padded as the
   build's (``bvh.builders.refit``), inner slots the union of their child's
   slots, bottom-up.

A ``BLEND`` face passes everywhere under a query cutoff of 0, where these
boxes would be wrong: such queries walk the ordinary boxes
(``bvh.scene``).
"""

import math

import numpy as np
from numba import prange

from .._jit import jit, jit_inline, jit_parallel
from ..queries.alpha import (A0, A1, A2, BLEND, FACE_COLUMNS, CUTOFF, FACTOR, HEIGHT, MODE, OFFSET, S0, S1, S2, S_HI, S_LO, T0, T1, T2,
                    T_HI, T_LO, WIDTH, WRAP_S, WRAP_T, wrap_texel)
from ..walk.nodes import CHILD_COUNT, CHILD_FIRST, EMPTY_MIN, MAX_X, MIN_X, aligned_empty
from ..walk.nodes import WIDTH as SLOTS
from .refit import BOX_PADDING_ULPS, pad_outwards, union_into_slot

#: A face whose texture triangle's box covers more texels than this keeps its
#: whole triangle (the rasterisation's cost is bounded per face).
MAX_RASTER_TEXELS = 1 << 20

#: Texture coordinates beyond this many texels from the origin are not
#: rasterised (``bvh.queries.alpha`` clamps them before sampling): the face keeps its triangle.
TEXEL_SPAN_LIMIT = 2.0 ** 40

#: Relative slack of the alpha test's bound on a texel's alpha, for the
#: rounding of the product it is compared with.
ALPHA_SLACK = 1.0e-9

#: Each clipped box grows by this fraction of its face's largest extent.
RELATIVE_MARGIN = 1.0e-6

#: Parallel chunks of a mesh's node rows in :func:`tight_nodes`.
LEAF_CHUNKS = 64

#: Corners a triangle clipped by four half-planes can have, and room to spare.
POLYGON_CORNERS = 8


@jit_inline
def _may_pass(texel, scale, mode, cutoff):
    """Whether a texel of 8-bit alpha ``texel`` may pass: ``scale`` is the
    face's largest ``factor * vertex alpha``."""
    alpha = texel / 255.0 * scale
    if mode == BLEND:
        return alpha > 0.0
    return alpha * (1.0 + ALPHA_SLACK) >= cutoff


@jit_inline
def _square_outside(x0, y0, x1, y1, x2, y2, orientation, left, bottom):
    """Whether the texel square ``[left, left + 1] x [bottom, bottom + 1]``
    lies strictly outside one of the edges of the triangle (counter-clockwise
    when ``orientation`` is 1, clockwise when -1), with a slack for rounding."""
    xs = (x0, x1, x2)
    ys = (y0, y1, y2)
    for edge in range(3):
        ax, ay = xs[edge], ys[edge]
        bx, by = xs[(edge + 1) % 3], ys[(edge + 1) % 3]
        ex, ey = bx - ax, by - ay
        slack = 1.0e-9 * (abs(ex) + abs(ey)) * (abs(ax) + abs(ay) + abs(left) + abs(bottom) + 2.0)
        outside = True
        for corner in range(4):
            cx = left + (corner & 1)
            cy = bottom + (corner >> 1)
            if orientation * (ex * (cy - ay) - ey * (cx - ax)) >= -slack:
                outside = False
                break
        if outside:
            return True
    return False


@jit_parallel
def _opaque_rects(faces, face_material, materials, texels, rects):
    for j in prange(faces.shape[0]):
        s0, t0 = np.float64(faces[j, S0]), np.float64(faces[j, T0])
        s1, t1 = np.float64(faces[j, S1]), np.float64(faces[j, T1])
        s2, t2 = np.float64(faces[j, S2]), np.float64(faces[j, T2])
        # The whole triangle, unless the rasterisation below finds less.
        rects[j, 0] = min(s0, s1, s2)
        rects[j, 1] = min(t0, t1, t2)
        rects[j, 2] = max(s0, s1, s2)
        rects[j, 3] = max(t0, t1, t2)
        m = face_material[j]
        if m < 0:
            continue
        mode = materials[m, MODE]
        cutoff = materials[m, CUTOFF]
        scale = materials[m, FACTOR] * max(np.float64(faces[j, A0]), np.float64(faces[j, A1]),
                                           np.float64(faces[j, A2]))
        width = np.int64(materials[m, WIDTH])
        if width == 0:
            if not _may_pass(255.0, scale, mode, cutoff):
                rects[j, 0], rects[j, 2] = 1.0, -1.0
            continue
        height = np.int64(materials[m, HEIGHT])
        x0, x1, x2 = s0 * width, s1 * width, s2 * width
        y0, y1, y2 = t0 * height, t1 * height, t2 * height
        if max(abs(x0), abs(x1), abs(x2), abs(y0), abs(y1), abs(y2)) > TEXEL_SPAN_LIMIT:
            continue
        ix0 = np.int64(math.floor(min(x0, x1, x2)))
        ix1 = np.int64(math.floor(max(x0, x1, x2)))
        iy0 = np.int64(math.floor(min(y0, y1, y2)))
        iy1 = np.int64(math.floor(max(y0, y1, y2)))
        if (ix1 - ix0 + 1) * (iy1 - iy0 + 1) > MAX_RASTER_TEXELS:
            continue
        area2 = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
        orientation = 1.0 if area2 > 0.0 else -1.0
        offset = np.int64(materials[m, OFFSET])
        wrap_s = np.int64(materials[m, WRAP_S])
        wrap_t = np.int64(materials[m, WRAP_T])
        lo_x, lo_y, hi_x, hi_y = ix1 + 1, iy1 + 1, ix0 - 1, iy0 - 1
        for iy in range(iy0, iy1 + 1):
            row = offset + wrap_texel(iy, height, wrap_t) * width
            for ix in range(ix0, ix1 + 1):
                if not _may_pass(np.float64(texels[row + wrap_texel(ix, width, wrap_s)]), scale, mode, cutoff):
                    continue
                # A texture triangle of zero area: its texel box is all there is to go by.
                if area2 != 0.0 and _square_outside(x0, y0, x1, y1, x2, y2, orientation, np.float64(ix),
                                                    np.float64(iy)):
                    continue
                lo_x, lo_y = min(lo_x, ix), min(lo_y, iy)
                hi_x, hi_y = max(hi_x, ix), max(hi_y, iy)
        if hi_x < lo_x:
            rects[j, 0], rects[j, 2] = 1.0, -1.0
            continue
        rects[j, 0] = max(rects[j, 0], (lo_x - 0.5) / width)
        rects[j, 1] = max(rects[j, 1], (lo_y - 0.5) / height)
        rects[j, 2] = min(rects[j, 2], (hi_x + 1.5) / width)
        rects[j, 3] = min(rects[j, 3], (hi_y + 1.5) / height)


def opaque_rects(faces: np.ndarray, face_material: np.ndarray, materials: np.ndarray,
                 texels: np.ndarray) -> np.ndarray:
    """The rectangle of texture space where each face may pass its alpha test.

    Parameters
    ----------
    faces : (J, >= 9) float32
        ``bvh.queries.alpha``'s face rows: corners' texture coordinates and vertex alphas.
    face_material : (J,) int32
        Material row of each face, -1 for an opaque face.
    materials : (M, 8) float64
    texels : (X,) uint8

    Returns
    -------
    (J, 4) float32
        ``s_lo, t_lo, s_hi, t_hi``, rounded outwards; the face's whole texture
        triangle's box for an opaque face or one not rasterised, and ``s_lo >
        s_hi`` for a face no hit can pass.
    """
    rects = np.empty((faces.shape[0], 4))
    if faces.shape[0]:
        _opaque_rects(np.ascontiguousarray(faces), np.ascontiguousarray(face_material, np.int32),
                      np.ascontiguousarray(materials, np.float64), np.ascontiguousarray(texels, np.uint8), rects)
    empty = rects[:, 0] > rects[:, 2]
    lo = rects[:, :2].astype(np.float32)
    hi = rects[:, 2:].astype(np.float32)
    lo = np.where(lo > rects[:, :2], np.nextafter(lo, np.float32(-np.inf)), lo)
    hi = np.where(hi < rects[:, 2:], np.nextafter(hi, np.float32(np.inf)), hi)
    out = np.concatenate([lo, hi], axis=1)
    out[empty] = (1.0, 1.0, -1.0, -1.0)
    return out


# ------------------------------------------------------------------ boxes


@jit_inline
def _clip(us, vs, count, out_u, out_v, a, b, c):
    """Clip the polygon ``(us, vs)[:count]`` to the half-plane ``a + b u + c v
    >= 0`` into ``out_u, out_v`` (Sutherland-Hodgman); returns the new count."""
    kept = 0
    for k in range(count):
        nxt = (k + 1) % count
        fa = a + b * us[k] + c * vs[k]
        fb = a + b * us[nxt] + c * vs[nxt]
        if fa >= 0.0:
            out_u[kept] = us[k]
            out_v[kept] = vs[k]
            kept += 1
        if (fa >= 0.0) != (fb >= 0.0):
            w = fa / (fa - fb)
            out_u[kept] = us[k] + w * (us[nxt] - us[k])
            out_v[kept] = vs[k] + w * (vs[nxt] - vs[k])
            kept += 1
    return kept


@jit_inline
def _whole_box(tris, row, box):
    """Write into ``box`` the float64 box of triangle row ``row``."""
    for axis in range(3):
        a = np.float64(tris[row, axis])
        b = np.float64(tris[row, 3 + axis])
        c = np.float64(tris[row, 6 + axis])
        box[axis] = min(a, b, c)
        box[3 + axis] = max(a, b, c)


@jit_inline
def _row_box(tris, faces, row, j, box, pu, pv, qu, qv):
    """Write into ``box`` the float64 box of the part of triangle row ``row``
    (alpha face ``j``) inside its face's rectangle; returns False when no part is."""
    _whole_box(tris, row, box)
    s_lo, t_lo = np.float64(faces[j, S_LO]), np.float64(faces[j, T_LO])
    s_hi, t_hi = np.float64(faces[j, S_HI]), np.float64(faces[j, T_HI])
    if s_lo > s_hi:
        return False
    s0, t0 = np.float64(faces[j, S0]), np.float64(faces[j, T0])
    ds1, dt1 = np.float64(faces[j, S1]) - s0, np.float64(faces[j, T1]) - t0
    ds2, dt2 = np.float64(faces[j, S2]) - s0, np.float64(faces[j, T2]) - t0
    pu[0], pv[0], pu[1], pv[1], pu[2], pv[2] = 0.0, 0.0, 1.0, 0.0, 0.0, 1.0
    count = _clip(pu, pv, 3, qu, qv, s0 - s_lo, ds1, ds2)
    count = _clip(qu, qv, count, pu, pv, s_hi - s0, -ds1, -ds2)
    count = _clip(pu, pv, count, qu, qv, t0 - t_lo, dt1, dt2)
    count = _clip(qu, qv, count, pu, pv, t_hi - t0, -dt1, -dt2)
    if count == 0:
        return False
    margin = RELATIVE_MARGIN * max(box[3] - box[0], box[4] - box[1], box[5] - box[2])
    for axis in range(3):
        a = np.float64(tris[row, axis])
        ab = np.float64(tris[row, 3 + axis]) - a
        ac = np.float64(tris[row, 6 + axis]) - a
        lo, hi = np.inf, -np.inf
        for k in range(count):
            x = a + pu[k] * ab + pv[k] * ac
            lo, hi = min(lo, x), max(hi, x)
        box[axis] = max(box[axis], lo - margin)
        box[3 + axis] = min(box[3 + axis], hi + margin)
    return True


@jit_parallel
def _leaf_boxes(nodes, links, bits, tris, face_index, node_rows, alpha_start, faces, face_material, chunks, clip):
    """Leaf slots of the node rows ``node_rows[r, 0]:node_rows[r, 1]`` (one
    range per alpha-tested mesh, whose faces start at ``alpha_start[r]``),
    each range in ``chunks`` parallel chunks with their own scratch: the
    clipped boxes when ``clip`` (within the whole triangles' boxes ``nodes``
    holds on entry), else the whole triangles' (as built)."""
    for r in range(node_rows.shape[0]):
        first_row, end_row = node_rows[r, 0], node_rows[r, 1]
        start = alpha_start[r]
        span = end_row - first_row
        for chunk in prange(chunks):
            box = np.empty(6)
            pu, pv = np.empty(POLYGON_CORNERS), np.empty(POLYGON_CORNERS)
            qu, qv = np.empty(POLYGON_CORNERS), np.empty(POLYGON_CORNERS)
            for node in range(first_row + chunk * span // chunks, first_row + (chunk + 1) * span // chunks):
                for slot in range(SLOTS):
                    count = links[node, CHILD_COUNT + slot]
                    if count == 0:
                        continue
                    first = links[node, CHILD_FIRST + slot]
                    lo_x = lo_y = lo_z = np.inf
                    hi_x = hi_y = hi_z = -np.inf
                    for row in range(first, first + count):
                        j = start + face_index[row] if clip else 0
                        if clip and face_material[j] >= 0:
                            if not _row_box(tris, faces, row, j, box, pu, pv, qu, qv):
                                continue
                        else:
                            _whole_box(tris, row, box)
                        lo_x, lo_y, lo_z = min(lo_x, box[0]), min(lo_y, box[1]), min(lo_z, box[2])
                        hi_x, hi_y, hi_z = max(hi_x, box[3]), max(hi_y, box[4]), max(hi_z, box[5])
                    lows = (lo_x, lo_y, lo_z)
                    highs = (hi_x, hi_y, hi_z)
                    for axis in range(3):
                        lo_face, hi_face = MIN_X + 4 * axis + slot, MAX_X + 4 * axis + slot
                        if lo_x > hi_x:
                            nodes[node, lo_face] = EMPTY_MIN
                            nodes[node, hi_face] = -EMPTY_MIN
                            continue
                        low, high = np.float32(lows[axis]), np.float32(highs[axis])
                        whole_lo, whole_hi = nodes[node, lo_face], nodes[node, hi_face]
                        nodes[node, lo_face] = low
                        nodes[node, hi_face] = high
                        # Whole float32 triangles' boxes are exact, as the build's; a clipped
                        # one rounded inwards to nearest takes one more step outwards.
                        inwards = np.float64(low) > lows[axis] or np.float64(high) < highs[axis]
                        pad_outwards(bits, node, lo_face, hi_face,
                                     BOX_PADDING_ULPS + 1 if inwards else BOX_PADDING_ULPS)
                        if clip:
                            # The whole triangles' box holds the clipped parts too: never past it.
                            nodes[node, lo_face] = max(nodes[node, lo_face], whole_lo)
                            nodes[node, hi_face] = min(nodes[node, hi_face], whole_hi)


@jit
def _inner_boxes(nodes, links, node_rows):
    # A child's row comes after its parent's (rows are numbered depth first).
    for r in range(node_rows.shape[0]):
        for node in range(node_rows[r, 1] - 1, node_rows[r, 0] - 1, -1):
            for slot in range(SLOTS):
                child = links[node, CHILD_FIRST + slot]
                if links[node, CHILD_COUNT + slot] != 0 or child == 0:
                    continue
                union_into_slot(nodes, child, node, slot)


def tight_nodes(pack) -> np.ndarray:
    """``pack.nodes`` with the alpha-tested meshes' boxes bounding only where
    their faces may pass the alpha test (see the module notes).

    Parameters
    ----------
    pack : bvh.scene.mesh_pack.MeshPack

    Returns
    -------
    (M, 32) float32
        A 64-byte aligned copy of ``pack.nodes``: the same links, the rows of
        meshes without alpha-tested faces the same boxes.
    """
    nodes = aligned_empty(pack.nodes.shape, np.float32)
    nodes[:] = pack.nodes
    tested = np.flatnonzero(pack.mesh_alpha_start >= 0)
    if tested.size == 0:
        return nodes
    ends = np.append(pack.mesh_root[1:], pack.nodes.shape[0]).astype(np.int64)
    node_rows = np.column_stack([pack.mesh_root[tested].astype(np.int64), ends[tested]])
    links = nodes.view(np.int32)
    _leaf_boxes(nodes, links, links, pack.tris, pack.face_index, node_rows,
                pack.mesh_alpha_start[tested].astype(np.int64), pack.alpha_faces, pack.alpha_face_material,
                LEAF_CHUNKS, True)
    _inner_boxes(nodes, links, node_rows)
    return nodes


@jit
def _build_boxes(tris, face_index, faces, face_material, boxes):
    pu, pv = np.empty(POLYGON_CORNERS), np.empty(POLYGON_CORNERS)
    qu, qv = np.empty(POLYGON_CORNERS), np.empty(POLYGON_CORNERS)
    box = np.empty(6)
    for row in range(tris.shape[0]):
        j = face_index[row]
        if face_material[j] < 0 or _row_box(tris, faces, row, j, box, pu, pv, qu, qv):
            if face_material[j] < 0:
                _whole_box(tris, row, box)
            boxes[row, :] = box
            continue
        # No part can pass: a point at the centroid, which enlarges no box.
        for axis in range(3):
            boxes[row, axis] = boxes[row, 3 + axis] = (np.float64(tris[row, axis]) + tris[row, 3 + axis]
                                                       + tris[row, 6 + axis]) / 3.0


def build_boxes(tris: np.ndarray, face_index: np.ndarray, faces: np.ndarray, face_material: np.ndarray) -> np.ndarray:
    """What the builder sees of an alpha-tested mesh: its triangles' clipped boxes.

    The tree is shaped for the alpha-tested walks, which are the default;
    :func:`whole_boxes` then gives its nodes the whole triangles' boxes for
    the other queries, and :func:`tight_nodes` the clipped ones.

    Parameters
    ----------
    tris : (T, 9) float32
        The mesh's triangle rows (``bvh.builders.triangles``).
    face_index : (T,) int32
        Face of each row.
    faces, face_material : (F, 13) float32, (F,) int32
        The mesh's alpha face rows (``bvh.io.materials.PackedAlpha``).

    Returns
    -------
    (T, 6) float64
        Per row its box; a point at its centroid for a face no hit can pass.
    """
    boxes = np.empty((tris.shape[0], 6))
    _build_boxes(tris, face_index, faces, face_material, boxes)
    return boxes


def whole_boxes(nodes: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """A copy of a mesh's four-wide ``nodes`` (links local to it, leaves over
    ``tris`` in leaf order) boxing the whole triangles, as the build would.

    Returns
    -------
    (M, 32) float32, 64-byte aligned
    """
    out = aligned_empty(nodes.shape, np.float32)
    out[:] = nodes
    links = out.view(np.int32)
    node_rows = np.array([[0, nodes.shape[0]]], np.int64)
    unused = np.zeros(1, np.int64)
    _leaf_boxes(out, links, links, tris, np.zeros(1, np.int32), node_rows, unused,
                np.zeros((1, FACE_COLUMNS), np.float32), np.zeros(1, np.int32), LEAF_CHUNKS, False)
    _inner_boxes(out, links, node_rows)
    return out
