"""Alpha-tested triangles: the texel a hit samples, and the leaf tests that
let a ray through a transparent one.

Real-Time Rendering (4th ed., §22.1): "For alpha-mapped objects such as tree
foliage, the user should not be able to select fully transparent texels."
A glTF material (glTF 2.0 §3.9) whose ``alphaMode`` is ``MASK`` or ``BLEND``
makes its faces alpha-tested here: a candidate hit on such a face whose
alpha is below the cutoff is rejected inside the leaf test, and the walk goes
on, so the ray reaches what lies behind. It is the leaf test's filter, not a
second pass: closest, any and all hits see the same surface.

The alpha of a hit, in float64, multiplied left to right::

    alpha = texel / 255 * factor * vertex_alpha

- ``texel``: the 8-bit alpha of the nearest texel of the material's mask
  image (1.0 when the material has no texture). With ``(s, t)`` the hit's
  texture coordinates, interpolated from the face's corners by the hit's
  barycentrics (``(1 - u - v, u, v)``, clamped into the triangle as the
  reported ``u, v`` are), the texel is column ``wrap_s(floor(s * W))`` and row
  ``wrap_t(floor(t * H))`` of the ``H x W`` image, row 0 being the image's
  top: glTF puts texture coordinate (0, 0) at the first pixel of the image
  (glTF 2.0 §3.7.2.1), so no flip. ``wrap`` is OpenGL's (4.6 core, §8.14.2,
  table 8.20) for nearest filtering, in texel space: ``REPEAT`` is ``i mod
  W``; ``CLAMP_TO_EDGE`` clamps to ``[0, W - 1]``; ``MIRRORED_REPEAT`` is
  ``(W - 1) - mirror((i mod 2W) - W)`` with ``mirror(a) = a`` for ``a >= 0``,
  else ``-(1 + a)``.
- ``factor``: ``baseColorFactor``'s alpha.
- ``vertex_alpha``: ``COLOR_0``'s alpha interpolated by the barycentrics;
  a face whose three corners have the same alpha uses that value as it is
  (so an all-opaque face multiplies by exactly 1.0).

A face is opaque where ``alpha >= cutoff`` and transparent where ``alpha <
cutoff``, as glTF's ``MASK`` renders (§3.9.4, "rendered fully opaque if
greater than or equal to the alpha cutoff"): a hit exactly at the cutoff
hits. ``MASK`` uses the material's ``alphaCutoff``; ``BLEND``, which glTF
blends rather than cuts, uses the query's cutoff (0.5 by default).

Data (:data:`ALPHA_FIELDS`, made by :mod:`bvh.io.materials` and kept in the
mesh pack): per mesh the first row of its faces in the alpha face
table (-1 for a mesh without alpha-tested faces, which costs one load per
candidate hit and nothing per triangle tested); per face the corners' texture
coordinates and vertex alphas, the rectangle of texture space where it may
pass, and its material row (-1: opaque); per material its mode, cutoff,
factor, the offset and size of its mask in one flat uint8 array of every
mask, and its wrap modes.

Alpha-tested walks read node boxes bounding only the parts of the faces
that may pass (:mod:`bvh.builders.alpha_bounds`), so rays do not enter boxes for the
transparent corners of leaf cards; the test above still decides every hit.
"""

import math
import numpy as np

from .._jit import jit, jit_inline
from .ray_triangle import make_triangle_leaves

#: ``alphaMode`` codes of the material table (OPAQUE faces are never tested).
MASK, BLEND = 1, 2

#: glTF's sampler wrap modes (the OpenGL enums glTF uses).
REPEAT, CLAMP_TO_EDGE, MIRRORED_REPEAT = 10497, 33071, 33648

#: Columns of a material row (float64).
MODE, CUTOFF, FACTOR, OFFSET, WIDTH, HEIGHT, WRAP_S, WRAP_T = range(8)
MATERIAL_COLUMNS = 8

#: Columns of a face row (float32): the corners' texture coordinates, their
#: vertex alphas, then the rectangle of texture space outside which no hit on
#: the face can pass the alpha test (``bvh.builders.alpha_bounds``: what the alpha-tested
#: walks' tighter boxes bound; lower corner above the upper for a face that
#: never passes).
S0, T0, S1, T1, S2, T2, A0, A1, A2, S_LO, T_LO, S_HI, T_HI = range(13)
FACE_COLUMNS = 13

#: Texel coordinates are clamped to this before they become integers, so
#: that a texture coordinate of 1e30 wraps instead of overflowing.
_TEXEL_LIMIT = 2.0 ** 52


#: The fields of the plain tuple the alpha-tested leaf tests read, passed to
#: the scene kernels beside the scene's arrays (a plain tuple: numba's
#: dispatcher types one in a fraction of a microsecond, a NamedTuple of
#: arrays costs it some two, which a click's single-ray pick would pay).
#: ``K`` meshes, ``J`` faces of alpha-tested meshes, ``M`` materials:
#:
#: - ``on`` (bool): whether this query tests alpha (its ``alpha_test``, and
#:   the scene having alpha-tested faces);
#: - ``blend_cutoff`` (float): the cutoff of ``BLEND`` materials for this query;
#: - ``mesh_of`` (O,) int32: mesh of each object (the scene's);
#: - ``face_index`` (T,) int32: face of each packed triangle row (the scene's);
#: - ``mesh_alpha_start`` (K,) int64: first row of each mesh's faces in
#:   ``faces``, -1 for none;
#: - ``faces`` (J, 13) float32: per face ``s0, t0, s1, t1, s2, t2, a0, a1, a2``
#:   and the rectangle ``s_lo, t_lo, s_hi, t_hi``;
#: - ``face_material`` (J,) int32: row of ``materials`` of each face, -1 for opaque;
#: - ``materials`` (M, 8) float64: ``mode, cutoff, factor, offset, width,
#:   height, wrap_s, wrap_t``;
#: - ``texels`` (X,) uint8: every mask image, row-major, row 0 at the top.
ALPHA_FIELDS = ("on", "blend_cutoff", "mesh_of", "face_index", "mesh_alpha_start", "faces", "face_material",
                "materials", "texels")


@jit_inline
def wrap_texel(i, size, mode):
    """Texel index ``i`` (any integer) wrapped into ``[0, size)`` by a glTF
    sampler's wrap ``mode`` (OpenGL 4.6 §8.14.2, table 8.20)."""
    if 0 <= i < size:
        # Every mode keeps an index inside the image, the usual case: no division.
        return i
    if mode == CLAMP_TO_EDGE:
        return min(max(i, 0), size - 1)
    if mode == MIRRORED_REPEAT:
        a = i % (2 * size) - size
        return (size - 1) - (a if a >= 0 else -(1 + a))
    return i % size


@jit_inline
def texel_index(coordinate, size, mode):
    """The texel of texture coordinate ``coordinate`` along an axis of
    ``size`` texels: ``wrap(floor(coordinate * size))``."""
    scaled = min(max(coordinate * size, -_TEXEL_LIMIT), _TEXEL_LIMIT)
    return wrap_texel(np.int64(math.floor(scaled)), np.int64(size), np.int64(mode))


@jit
def hit_alpha(faces, materials, texels, j, m, u, v):
    """The alpha of a hit at barycentrics ``(u, v)`` (clamped into the
    triangle here) on alpha face ``j`` of material ``m`` (see the module
    notes for the formula)."""
    u = min(max(u, 0.0), 1.0)
    v = min(max(v, 0.0), 1.0 - u)
    w = 1.0 - u - v
    alpha = 1.0
    width = np.int64(materials[m, WIDTH])
    if width > 0:
        height = np.int64(materials[m, HEIGHT])
        s = w * np.float64(faces[j, S0]) + u * np.float64(faces[j, S1]) + v * np.float64(faces[j, S2])
        t = w * np.float64(faces[j, T0]) + u * np.float64(faces[j, T1]) + v * np.float64(faces[j, T2])
        x = texel_index(s, width, materials[m, WRAP_S])
        y = texel_index(t, height, materials[m, WRAP_T])
        alpha = np.float64(texels[np.int64(materials[m, OFFSET]) + y * width + x]) / 255.0
    alpha = alpha * materials[m, FACTOR]
    a0 = np.float64(faces[j, A0])
    a1 = np.float64(faces[j, A1])
    a2 = np.float64(faces[j, A2])
    if a0 == a1 and a1 == a2:
        return alpha * a0
    return alpha * (w * a0 + u * a1 + v * a2)


@jit_inline
def alpha_passes(alpha, k, u, v, obj):
    """Whether a candidate hit at barycentrics ``(u, v)`` on packed triangle
    row ``k`` of object ``obj`` stands: True unless ``alpha`` (the tuple of
    :data:`ALPHA_FIELDS`) tests alpha and the texel there is transparent."""
    on, blend_cutoff, mesh_of, face_index, mesh_alpha_start, faces, face_material, materials, texels = alpha
    if not on:
        return True
    start = mesh_alpha_start[mesh_of[obj]]
    if start < 0:
        return True
    j = start + face_index[k]
    m = face_material[j]
    if m < 0:
        return True
    cutoff = materials[m, CUTOFF] if materials[m, MODE] == MASK else blend_cutoff
    return hit_alpha(faces, materials, texels, j, m, u, v) >= cutoff


# ------------------------------------------------------------------ leaf tests
#
# bvh.queries.ray_triangle's tests with the alpha test as their filter: a
# candidate that fails it is skipped as if the ray had missed the face. Each
# takes the alpha arrays (``test``) and the object the walk is in besides
# the usual arguments.

closest_hit_leaf_alpha, any_hit_leaf_alpha, count_hits_leaf_alpha, collect_hits_leaf_alpha = make_triangle_leaves(
    alpha_passes)
