"""The alpha of glTF materials, read from the file's own JSON and buffers.

trimesh reads a glTF's geometry (:mod:`bvh.io.load`), but of its materials
it keeps neither the samplers' wrap modes nor any texture coordinate set but
``TEXCOORD_0`` (flipped to a bottom-left origin, in float32, which does not
flip back exactly), so the alpha of a primitive is read here, as glTF 2.0
describes it:

- ``material.alphaMode`` ``MASK`` or ``BLEND`` (§3.9.4; ``OPAQUE``, the
  default, and a primitive without a material are not alpha-tested), with
  ``alphaCutoff`` (default 0.5);
- ``pbrMetallicRoughness.baseColorFactor``'s alpha (default 1) and
  ``baseColorTexture``: the texture's image (``source``, or
  ``EXT_texture_webp``'s), decoded by Pillow, its alpha channel (an image
  without one is opaque), sampled at the ``TEXCOORD_n`` its ``texCoord``
  names, with its sampler's ``wrapS`` and ``wrapT`` (default ``REPEAT``);
- ``COLOR_0``'s alpha (a ``VEC4``; a ``VEC3`` colour is opaque).

Accessors are float or normalised unsigned integers, as glTF allows for
these attributes (§3.7.2.1), read with their ``byteStride``; sparse
accessors are not read (the primitive's alpha is refused with a message).
``KHR_texture_transform`` is not applied.
"""

import base64
import io
import logging
import struct
import urllib.parse
from typing import NamedTuple

import numpy as np

from .archives import LimitExceeded
from .materials import DEFAULT_CUTOFF, WRAP_MODES, AlphaMaterial

_log = logging.getLogger("bvh")

#: numpy dtypes of glTF's accessor component types (§3.6.2.2), little-endian.
_COMPONENTS = {5120: "<i1", 5121: "<u1", 5122: "<i2", 5123: "<u2", 5125: "<u4", 5126: "<f4"}
_WIDTHS = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}

#: Primitive modes trimesh makes a geometry of, in its order of the file's primitives.
_TRIMESH_MODES = (0, 1, 4, 5)
_TRIANGLE_MODES = (4, 5)

_GLB_HEADER_BYTES = 12
_GLB_BIN_CHUNK = 0x004E4942


class PrimitiveAlpha(NamedTuple):
    """One alpha-tested primitive: its material, and per vertex the texture
    coordinates the mask is sampled at (None without a mask) and ``COLOR_0``'s
    alpha (None: 1)."""

    material: AlphaMaterial
    texcoords: np.ndarray | None
    vertex_alpha: np.ndarray | None


class GltfFile:
    """A glTF document with its buffers and images found on demand.

    Parameters
    ----------
    document : dict
        The JSON.
    glb : bytes, optional
        The whole GLB, whose BIN chunk is buffer 0 when that has no ``uri``.
    resolver : optional
        trimesh's resolver of the ``.gltf``'s folder, for files its URIs name.
    texture_pixels : int, optional
        Most pixels of an image that is decoded, as its header declares them
        (:class:`bvh.io.archives.ReadLimits`); None: Pillow's own bound only.
    """

    def __init__(self, document: dict, glb: bytes | None = None, resolver=None, texture_pixels: int | None = None):
        self.document = document
        self._glb = glb
        self._resolver = resolver
        self._texture_pixels = texture_pixels
        self._buffers: dict[int, bytes] = {}

    def _list(self, name: str) -> list:
        value = self.document.get(name, [])
        return value if isinstance(value, list) else []

    def _entry(self, name: str, index) -> dict:
        entries = self._list(name)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(entries) \
                or not isinstance(entries[index], dict):
            raise ValueError(f"it refers to {name} {index!r}, which the file does not define")
        return entries[index]

    def _uri_bytes(self, uri: str) -> bytes:
        if uri.startswith("data:"):
            header, _, payload = uri.partition(",")
            return base64.b64decode(payload) if header.endswith(";base64") else urllib.parse.unquote_to_bytes(payload)
        if self._resolver is None:
            raise ValueError(f"it refers to the file {uri!r}, which cannot be found without the .gltf's path")
        try:
            return bytes(self._resolver.get(urllib.parse.unquote(uri)))
        except Exception as exc:
            raise ValueError(f"could not read {uri!r}, which it refers to: {exc}") from exc

    def buffer(self, index: int) -> bytes:
        if index not in self._buffers:
            entry = self._entry("buffers", index)
            if "uri" in entry:
                self._buffers[index] = self._uri_bytes(str(entry["uri"]))
            elif self._glb is not None and index == 0:
                self._buffers[index] = _glb_binary(self._glb)
            else:
                raise ValueError(f"buffer {index} has no uri and is not a GLB's BIN chunk")
        return self._buffers[index]

    def view_bytes(self, index: int) -> bytes:
        view = self._entry("bufferViews", index)
        data = self.buffer(view.get("buffer"))
        start = int(view.get("byteOffset", 0))
        length = int(view.get("byteLength", 0))
        if start < 0 or length < 0 or start + length > len(data):
            raise ValueError(f"bufferView {index} runs past the end of its buffer")
        return data[start:start + length]

    def accessor(self, index: int) -> np.ndarray:
        """Accessor ``index`` as ``(count, width)`` float64, normalised integers
        mapped to ``[0, 1]`` (or ``[-1, 1]``) as glTF 2.0 §3.11 says."""
        accessor = self._entry("accessors", index)
        if "sparse" in accessor:
            raise ValueError(f"accessor {index} is sparse, which is not read for alpha-tested materials")
        dtype = np.dtype(_COMPONENTS.get(accessor.get("componentType"), "V1"))
        width = _WIDTHS.get(accessor.get("type"))
        count = accessor.get("count")
        if dtype.kind == "V" or width is None or not isinstance(count, int) or count < 0:
            raise ValueError(f"accessor {index} has a componentType, type or count glTF does not define")
        if "bufferView" not in accessor:
            values = np.zeros((count, width))
        else:
            view = self._entry("bufferViews", accessor["bufferView"])
            data = self.view_bytes(accessor["bufferView"])
            start = int(accessor.get("byteOffset", 0))
            item = dtype.itemsize * width
            stride = int(view.get("byteStride", 0)) or item
            if count and (start < 0 or start + stride * (count - 1) + item > len(data)):
                raise ValueError(f"accessor {index} runs past the end of its bufferView")
            values = np.ndarray((count, width), dtype, buffer=data, offset=start,
                                strides=(stride, dtype.itemsize)).astype(np.float64)
        if accessor.get("normalized") and dtype.kind in "iu":
            scale = float(np.iinfo(dtype).max)
            values = np.maximum(values / scale, -1.0)
        return values

    def image_alpha(self, index: int) -> np.ndarray | None:
        """The alpha channel of image ``index`` as ``(H, W)`` uint8, row 0 at
        the top; None when the image has no alpha channel (opaque).

        Raises
        ------
        LimitExceeded
            When the image's header declares more than ``texture_pixels``
            pixels: read from the header alone, before anything is decoded.
        """
        from PIL import Image

        entry = self._entry("images", index)
        if "bufferView" in entry:
            data = self.view_bytes(entry["bufferView"])
        elif "uri" in entry:
            data = self._uri_bytes(str(entry["uri"]))
        else:
            raise ValueError(f"image {index} has neither a uri nor a bufferView")
        try:
            with Image.open(io.BytesIO(data)) as image:
                # open() has read the header only; load() would allocate width x height x bands.
                width, height = image.size
                if self._texture_pixels is not None and width * height > self._texture_pixels:
                    raise LimitExceeded(f"image {index}{_image_label(entry)} is {width} x {height} = "
                                        f"{width * height} pixels, more than the {self._texture_pixels} a texture "
                                        f"may have", "texture_pixels", self._texture_pixels)
                image.load()
                if "A" not in image.getbands() and "transparency" not in image.info:
                    return None
                alpha = np.array(image.convert("RGBA"))[:, :, 3]
        except LimitExceeded:
            raise
        except Exception as exc:
            raise ValueError(f"image {index} could not be decoded: {exc}") from exc
        return None if alpha.min() == 255 else np.ascontiguousarray(alpha)

    def primitive_alpha(self, mesh: int, primitive: dict, vertex_count: int) -> PrimitiveAlpha | None:
        """The alpha of one triangle primitive of ``vertex_count`` vertices,
        or None when its material is not alpha-tested."""
        if "material" not in primitive:
            return None
        index = primitive["material"]
        material = self._entry("materials", index)
        mode = material.get("alphaMode", "OPAQUE")
        if mode == "OPAQUE":
            return None
        if mode not in ("MASK", "BLEND"):
            raise ValueError(f"material {index} has alphaMode {mode!r}; glTF defines OPAQUE, MASK and BLEND")
        pbr = material.get("pbrMetallicRoughness", {})
        factor = pbr.get("baseColorFactor", [1.0, 1.0, 1.0, 1.0])
        cutoff = material.get("alphaCutoff", DEFAULT_CUTOFF)
        if not isinstance(factor, list) or len(factor) != 4:
            raise ValueError(f"material {index} has a baseColorFactor that is not 4 numbers")
        attributes = primitive.get("attributes", {})
        mask, texcoords, wrap = None, None, ("REPEAT", "REPEAT")
        texture_info = pbr.get("baseColorTexture")
        if isinstance(texture_info, dict):
            texture = self._entry("textures", texture_info.get("index"))
            source = texture.get("source", texture.get("extensions", {}).get("EXT_texture_webp", {}).get("source"))
            if source is not None:
                mask = self.image_alpha(source)
            if mask is not None:
                name = f"TEXCOORD_{texture_info.get('texCoord', 0)}"
                if name not in attributes:
                    raise ValueError(f"material {index}'s baseColorTexture reads {name}, which a primitive of "
                                     f"mesh {mesh} does not have")
                texcoords = self._per_vertex(attributes[name], name, vertex_count, mesh)[:, :2]
                if "sampler" in texture:
                    sampler = self._entry("samplers", texture["sampler"])
                    codes = {code: name for name, code in WRAP_MODES.items()}
                    wrap = tuple(codes.get(sampler.get(key, 10497), sampler.get(key)) for key in ("wrapS", "wrapT"))
        vertex_alpha = None
        if "COLOR_0" in attributes:
            colours = self._per_vertex(attributes["COLOR_0"], "COLOR_0", vertex_count, mesh)
            if colours.shape[1] == 4:
                vertex_alpha = np.clip(colours[:, 3], 0.0, 1.0)
        try:
            checked = AlphaMaterial(mode, cutoff, factor[3], mask, wrap[0], wrap[1], material.get("name")).checked()
        except ValueError as exc:
            raise ValueError(f"material {index}: {exc}") from None
        return PrimitiveAlpha(checked, texcoords, vertex_alpha)

    def _per_vertex(self, accessor: int, name: str, vertex_count: int, mesh: int) -> np.ndarray:
        values = self.accessor(accessor)
        if values.shape[0] != vertex_count:
            raise ValueError(f"{name} of a primitive of mesh {mesh} has {values.shape[0]} entries for "
                             f"{vertex_count} vertices")
        if not np.isfinite(values).all():
            raise ValueError(f"{name} of a primitive of mesh {mesh} holds NaN or infinite values")
        return values

    def tag_geometries(self, geometries: list) -> None:
        """Hang each alpha-tested primitive's :class:`PrimitiveAlpha` on the
        trimesh geometry made of it (``metadata["bvh_alpha"]``).

        Does nothing for a file without a ``MASK`` or ``BLEND`` material.
        trimesh makes one geometry per primitive of the modes it reads, in
        the file's order of meshes and primitives; each geometry is matched
        to its primitive in that order and checked by its vertex count.
        Should they not line up (a trimesh that reads otherwise), the file
        is read without alpha, with a warning in the log, rather than
        refused: it is our reading that failed, not the file.

        Raises
        ------
        ValueError
            When a primitive's alpha cannot be read (naming what is wrong).
        """
        materials = self._list("materials")
        if not any(isinstance(m, dict) and m.get("alphaMode", "OPAQUE") != "OPAQUE" for m in materials):
            return
        primitives = [(m, p) for m, mesh in enumerate(self._list("meshes")) if isinstance(mesh, dict)
                      for p in mesh.get("primitives", []) if isinstance(p, dict)
                      and p.get("mode", 4) in _TRIMESH_MODES]
        counts = [self._entry("accessors", p.get("attributes", {}).get("POSITION")).get("count")
                  if isinstance(p.get("attributes"), dict) and "POSITION" in p["attributes"] else None
                  for _, p in primitives]
        if len(primitives) != len(geometries) or any(
                count != len(getattr(geometry, "vertices", ())) for count, geometry in zip(counts, geometries)):
            _log.warning("glTF file read without its alpha-tested materials: trimesh's %d geometries do not line "
                         "up with the file's %d primitives", len(geometries), len(primitives))
            return
        for (mesh, primitive), geometry, count in zip(primitives, geometries, counts):
            if primitive.get("mode", 4) not in _TRIANGLE_MODES:
                continue
            alpha = self.primitive_alpha(mesh, primitive, count)
            if alpha is not None:
                geometry.metadata["bvh_alpha"] = alpha


def _image_label(entry: dict) -> str:
    """`` ('name')`` or `` ('file.png')`` of an image entry, for messages; empty for an unnamed embedded one."""
    uri = str(entry.get("uri", ""))
    label = entry.get("name") or (uri if uri and not uri.startswith("data:") else "")
    return f" ({str(label)[:80]!r})" if label else ""


def _glb_binary(data: bytes) -> bytes:
    """The BIN chunk of a GLB whose chunks were checked (``bvh.io.gltf.check_glb``)."""
    offset = _GLB_HEADER_BYTES
    while offset + 8 <= len(data):
        length, kind = struct.unpack_from("<II", data, offset)
        if kind == _GLB_BIN_CHUNK:
            return data[offset + 8:offset + 8 + length]
        offset += 8 + length
    raise ValueError("buffer 0 has no uri and the GLB has no BIN chunk")


def mesh_alpha_of_parts(parts: list, vertex_counts: list[int], face_counts: list[int]):
    """The ``bvh.MeshAlpha`` of a mesh made of trimesh geometries ``parts``
    (concatenated in order, as ``bvh.io.load`` merges a glTF mesh's
    primitives), from their ``PrimitiveAlpha``; None when none has one."""
    from .materials import MeshAlpha

    tagged = [part.metadata.get("bvh_alpha") if hasattr(part, "metadata") else None for part in parts]
    if all(alpha is None for alpha in tagged):
        return None
    materials, face_material, texcoords, vertex_alpha = [], [], [], []
    for alpha, vertices, faces in zip(tagged, vertex_counts, face_counts):
        if alpha is None:
            face_material.append(np.full(faces, -1, np.int64))
            texcoords.append(np.zeros((vertices, 2)))
            vertex_alpha.append(np.ones(vertices))
            continue
        face_material.append(np.full(faces, len(materials), np.int64))
        materials.append(alpha.material)
        texcoords.append(alpha.texcoords if alpha.texcoords is not None else np.zeros((vertices, 2)))
        vertex_alpha.append(alpha.vertex_alpha if alpha.vertex_alpha is not None else np.ones(vertices))
    return MeshAlpha(materials, np.concatenate(face_material), np.concatenate(texcoords),
                     np.concatenate(vertex_alpha))
