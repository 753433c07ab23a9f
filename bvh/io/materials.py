"""Alpha-tested materials as a mesh is given them, and their packed form.

A mesh added with :class:`MeshAlpha` gets alpha-tested faces: rays pass
through the transparent texels of its ``MASK`` and ``BLEND`` materials
(:mod:`bvh.queries.alpha` says exactly which texel a hit samples and how the cutoff
decides). :func:`pack_mesh_alpha` turns one mesh's materials into the rows
the mesh pack keeps (:mod:`bvh.scene.mesh_pack`): per face the corners' texture
coordinates and vertex alphas and a material row, per material its mode,
cutoff, factor, wrap modes and mask, every mask an 8-bit alpha image in one
flat array that a saved scene memory-maps like the rest.

>>> leaves = bvh.AlphaMaterial("MASK", cutoff=0.5, mask=alpha_image)   # (H, W) uint8, row 0 at the top
>>> scene.add_mesh(vertices, faces, alpha=bvh.MeshAlpha([leaves], face_material=np.zeros(F, int),
...                                                     texcoords=uv))
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..queries.alpha import (A0, BLEND, CLAMP_TO_EDGE, CUTOFF, FACTOR, HEIGHT, MASK, MATERIAL_COLUMNS,
                    MIRRORED_REPEAT, MODE, OFFSET, REPEAT, S_LO, WIDTH, WRAP_S, WRAP_T)
from ..builders.alpha_bounds import opaque_rects
from ..validation import real_array

#: glTF ``alphaMode`` names and their codes (OPAQUE faces are never tested).
MODES = {"OPAQUE": 0, "MASK": MASK, "BLEND": BLEND}

#: glTF sampler wrap modes by name and by their enum (glTF 2.0 §5.26).
WRAP_MODES = {"REPEAT": REPEAT, "CLAMP_TO_EDGE": CLAMP_TO_EDGE, "MIRRORED_REPEAT": MIRRORED_REPEAT}

#: glTF's ``alphaCutoff`` default, and the default cutoff of ``BLEND`` materials per query.
DEFAULT_CUTOFF = 0.5


def _wrap_code(name: str, value) -> int:
    if isinstance(value, str) and value.upper() in WRAP_MODES:
        return WRAP_MODES[value.upper()]
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and int(value) in WRAP_MODES.values():
        return int(value)
    raise ValueError(f"{name} must be REPEAT, CLAMP_TO_EDGE or MIRRORED_REPEAT (or glTF's 10497, 33071, 33648), "
                     f"got {value!r}")


@dataclass(frozen=True, eq=False)
class AlphaMaterial:
    """One material's alpha, as glTF 2.0 describes it (§3.9).

    Attributes
    ----------
    mode : str
        ``"OPAQUE"`` (never tested), ``"MASK"`` (tested against ``cutoff``)
        or ``"BLEND"`` (tested against each query's ``alpha_cutoff``).
    cutoff : float
        ``alphaCutoff``, for ``MASK``: a hit whose alpha is below it passes
        through; at or above it, it hits. glTF's default is 0.5.
    factor : float
        ``baseColorFactor``'s alpha, in ``[0, 1]``.
    mask : (H, W) uint8, optional
        The alpha channel of ``baseColorTexture``, row 0 the image's top (where
        glTF puts texture coordinate ``(0, 0)``); None: no texture (alpha 1).
    wrap_s, wrap_t : str or int
        The texture's sampler wrap modes (``REPEAT`` by default, as in glTF).
    name : str, optional
    """

    mode: str = "OPAQUE"
    cutoff: float = DEFAULT_CUTOFF
    factor: float = 1.0
    mask: np.ndarray | None = None
    wrap_s: str | int = "REPEAT"
    wrap_t: str | int = "REPEAT"
    name: str | None = None

    def checked(self) -> "AlphaMaterial":
        """This material with its fields validated and normalised (mask a
        C-contiguous uint8 copy, wrap modes as glTF's enums).

        Raises
        ------
        ValueError
            Naming the field and what it must be.
        """
        mode = self.mode.upper() if isinstance(self.mode, str) else self.mode
        if mode not in MODES:
            raise ValueError(f"mode must be OPAQUE, MASK or BLEND, got {self.mode!r}")
        factor = _unit_number("factor", self.factor)
        cutoff = self.cutoff
        if isinstance(cutoff, bool) or not isinstance(cutoff, (int, float, np.integer, np.floating)) \
                or not 0.0 <= float(cutoff) < np.inf:
            raise ValueError(f"cutoff must be a finite number >= 0 (glTF's alphaCutoff), got {cutoff!r}")
        cutoff = float(cutoff)
        mask = self.mask
        if mask is not None:
            mask = real_array("mask", mask)
            if mask.ndim != 2 or mask.shape[0] == 0 or mask.shape[1] == 0:
                raise ValueError(f"mask must be an (H, W) image of at least one texel, got shape {mask.shape}")
            if mask.dtype != np.uint8:
                raise ValueError(f"mask must hold uint8 alpha values (0-255), got {mask.dtype}")
            mask = np.ascontiguousarray(mask)
        return AlphaMaterial(mode, cutoff, factor, mask, _wrap_code("wrap_s", self.wrap_s),
                             _wrap_code("wrap_t", self.wrap_t), self.name)

    @property
    def tested(self) -> bool:
        """Whether faces of this material are alpha-tested (MASK or BLEND)."""
        return MODES[self.mode.upper()] != 0


def _unit_number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return value


class MeshAlpha(NamedTuple):
    """The alpha-tested materials of one mesh (``Scene.add_mesh(..., alpha=)``).

    Attributes
    ----------
    materials : list of AlphaMaterial
    face_material : (F,) int
        Each face's index into ``materials``; -1 for a face with none (opaque).
    texcoords : (V, 2) float, optional
        The texture coordinates the masks are sampled at, glTF's convention
        (``(0, 0)`` at the image's top left; the texture's ``texCoord`` set).
        Required when a tested material has a mask.
    vertex_alpha : (V,) float, optional
        ``COLOR_0``'s alpha per vertex, in ``[0, 1]``; None: 1.
    """

    materials: list
    face_material: np.ndarray
    texcoords: np.ndarray | None = None
    vertex_alpha: np.ndarray | None = None

    def key_parts(self) -> list:
        """What identifies this alpha for ``Scene.add_mesh``'s reuse of a mesh already added."""
        parts = [np.asarray(self.face_material), self.texcoords, self.vertex_alpha]
        for material in self.materials:
            parts.append(repr((material.mode, material.cutoff, material.factor, material.wrap_s, material.wrap_t)))
            parts.append(None if material.mask is None else np.asarray(material.mask))
        return parts


class PackedAlpha(NamedTuple):
    """One mesh's alpha rows, ready to append to a pack (:func:`bvh.scene.mesh_pack.append`
    rebases ``face_material`` and the texel offsets).

    Attributes
    ----------
    faces : (F, 13) float32
        Per face: the corners' texture coordinates, their vertex alphas, and
        the rectangle of texture space where it may pass the alpha test
        (``bvh.builders.alpha_bounds``).
    face_material : (F,) int32
        Material row of each face within this mesh, -1 for an opaque face.
    materials : (M, 8) float64
        ``bvh.queries.alpha``'s material rows, offsets into ``texels``.
    texels : (X,) uint8
        The masks, one after the other.
    """

    faces: np.ndarray
    face_material: np.ndarray
    materials: np.ndarray
    texels: np.ndarray


def pack_mesh_alpha(alpha: MeshAlpha | None, vertex_count: int, faces: np.ndarray) -> PackedAlpha | None:
    """The packed rows of a mesh's alpha, or None when no face is alpha-tested.

    Parameters
    ----------
    alpha : MeshAlpha or None
    vertex_count : int
    faces : (F, 3) int
        The mesh's faces, checked.

    Raises
    ------
    ValueError
        For a malformed ``alpha``, naming the field.
    """
    if alpha is None:
        return None
    if not isinstance(alpha, MeshAlpha):
        raise ValueError(f"alpha must be a bvh.MeshAlpha, got {type(alpha).__name__}")
    materials = [m.checked() if isinstance(m, AlphaMaterial) else _not_material(m) for m in alpha.materials]
    face_count = faces.shape[0]
    face_material = real_array("face_material", alpha.face_material)
    if face_material.shape != (face_count,) or (face_material.size and face_material.dtype.kind not in "iu"):
        raise ValueError(f"face_material must be ({face_count},) integers, one per face, got "
                         f"{face_material.shape} {face_material.dtype}")
    face_material = face_material.astype(np.int64)
    if face_material.size and (face_material.min() < -1 or face_material.max() >= len(materials)):
        raise ValueError(f"face_material must index the {len(materials)} materials (or be -1 for none)")
    # Only tested materials get rows; the rest of the faces are opaque (-1).
    tested = [k for k, m in enumerate(materials) if m.tested]
    row_of = np.full(len(materials) + 1, -1, np.int64)
    row_of[tested] = np.arange(len(tested))
    local = row_of[face_material]
    if not (local >= 0).any():
        return None
    texcoords = alpha.texcoords
    needs_texcoords = any(materials[k].mask is not None for k in tested)
    if texcoords is None:
        if needs_texcoords:
            raise ValueError("texcoords are required: an alpha-tested material has a mask")
        texcoords = np.zeros((vertex_count, 2))
    texcoords = _per_vertex("texcoords", texcoords, (vertex_count, 2))
    vertex_alpha = np.ones(vertex_count) if alpha.vertex_alpha is None else \
        _per_vertex("vertex_alpha", alpha.vertex_alpha, (vertex_count,))
    if ((vertex_alpha < 0.0) | (vertex_alpha > 1.0)).any():
        raise ValueError("vertex_alpha must lie in [0, 1]")
    corners = np.asarray(faces, np.int64)
    packed_faces = np.concatenate([texcoords[corners].reshape(face_count, 6), vertex_alpha[corners]], axis=1)
    rows = np.zeros((len(tested), MATERIAL_COLUMNS))
    texels = []
    offset = 0
    for row, k in enumerate(tested):
        m = materials[k]
        height, width = (0, 0) if m.mask is None else m.mask.shape
        rows[row] = (MODES[m.mode], m.cutoff, m.factor, offset, width, height, m.wrap_s, m.wrap_t)
        if m.mask is not None:
            texels.append(m.mask.reshape(-1))
            offset += m.mask.size
    texels = np.concatenate(texels) if texels else np.zeros(0, np.uint8)
    packed_faces = np.ascontiguousarray(packed_faces, np.float32).reshape(face_count, S_LO)
    local = local.astype(np.int32)
    rects = opaque_rects(packed_faces, local, rows, texels)
    return PackedAlpha(faces=np.ascontiguousarray(np.concatenate([packed_faces, rects], axis=1)),
                       face_material=local, materials=rows, texels=texels)


def _not_material(value):
    raise ValueError(f"materials must be bvh.AlphaMaterial, got {type(value).__name__}")


def _per_vertex(name: str, value, shape: tuple) -> np.ndarray:
    array = real_array(name, value)
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, one row per vertex, got {array.shape}")
    array = array.astype(np.float64)
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contain NaN or infinite values")
    return array


def alpha_of_rows(faces: np.ndarray, face_material: np.ndarray, materials: np.ndarray, texels: np.ndarray,
                  mesh_faces: np.ndarray, vertex_count: int) -> MeshAlpha:
    """A :class:`MeshAlpha` giving back one mesh's packed rows (``faces``,
    ``face_material`` its own; ``materials``, ``texels`` the pack's), for a
    copy of the mesh into another scene: its materials are the tested ones
    it uses, and its per-vertex values are read back from the face corners."""
    used = np.unique(face_material[face_material >= 0])
    new_index = np.full(materials.shape[0] + 1, -1, np.int64)
    new_index[used] = np.arange(used.size)
    codes = {code: name for name, code in MODES.items()}
    rebuilt = []
    for row in materials[used]:
        width, height, offset = int(row[WIDTH]), int(row[HEIGHT]), int(row[OFFSET])
        mask = None if width == 0 else np.array(texels[offset:offset + width * height]).reshape(height, width)
        rebuilt.append(AlphaMaterial(codes[int(row[MODE])], float(row[CUTOFF]), float(row[FACTOR]), mask,
                                     int(row[WRAP_S]), int(row[WRAP_T])))
    texcoords = np.zeros((vertex_count, 2))
    vertex_alpha = np.ones(vertex_count)
    corners = np.asarray(mesh_faces, np.int64)
    texcoords[corners.reshape(-1)] = faces[:, :6].reshape(-1, 2)
    vertex_alpha[corners.reshape(-1)] = faces[:, A0:A0 + 3].reshape(-1)
    return MeshAlpha(rebuilt, new_index[face_material], texcoords, vertex_alpha)
