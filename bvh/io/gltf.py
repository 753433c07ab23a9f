"""glTF and GLB files: a GLB's header and chunks checked against its size,
a .gltf's JSON parsed, and the alpha-tested materials of either read
(:mod:`bvh.io.gltf_materials`) onto trimesh's geometries."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

from .archives import LimitExceeded
from .glb_writer import EXTRAS_KEY
from .reading import read_path
from .wording import label_of, reason

# A GLB: a 12-byte header (magic, version, total length), then chunks of an
# 8-byte header (length, type) and their data; the first chunk is the JSON.
_GLB_HEADER_BYTES = 12

_GLB_CHUNK_HEADER_BYTES = 8

_GLB_JSON_CHUNK = 0x4E4F534A

_GLB_BIN_CHUNK = 0x004E4942


# ------------------------------------------------------------------- GLB
def check_glb(data: bytes) -> dict:
    """The JSON of a GLB whose header and chunk lengths agree with its size.

    Raises
    ------
    ValueError
        "could not read this as GLB: byte 12: the JSON chunk says it holds
        812 bytes, but only 400 follow it (the file is truncated)", and the
        like for the header's total length, a cut chunk header, JSON that does
        not parse, and a BIN chunk shorter than the buffer the JSON declares.
    """
    size = len(data)

    def refuse(problem):
        return ValueError(f"could not read this as GLB: {problem}")

    if size < _GLB_HEADER_BYTES:
        raise refuse(f"the file has {size} bytes, fewer than the {_GLB_HEADER_BYTES}-byte GLB header")
    if data[:4] != b"glTF":
        raise refuse("it does not start with 'glTF' (bytes 0-3), so it is not a GLB file")
    (length,) = struct.unpack_from("<I", data, 8)
    if length != size:
        cause = "the file is truncated" if length > size else "bytes follow the end it declares"
        raise refuse(f"the header (byte 8) says the file has {length} bytes, but it has {size}: {cause}")
    offset, document, binary = _GLB_HEADER_BYTES, None, None
    while offset < size:
        if offset + _GLB_CHUNK_HEADER_BYTES > size:
            raise refuse(f"byte {offset}: the file ends inside a chunk header")
        chunk_length, chunk_type = struct.unpack_from("<II", data, offset)
        kind = {_GLB_JSON_CHUNK: "JSON", _GLB_BIN_CHUNK: "BIN"}.get(chunk_type, f"0x{chunk_type:08x}")
        start = offset + _GLB_CHUNK_HEADER_BYTES
        if start + chunk_length > size:
            raise refuse(f"byte {offset}: the {kind} chunk says it holds {chunk_length} bytes, but only "
                         f"{size - start} follow it (the file is truncated)")
        if document is None:
            if chunk_type != _GLB_JSON_CHUNK:
                raise refuse(f"byte {offset}: the first chunk is {kind}, not JSON")
            try:
                document = json.loads(data[start:start + chunk_length])
            except json.JSONDecodeError as exc:
                raise refuse(f"byte {start + exc.pos}: the JSON chunk is not valid JSON") from exc
            except UnicodeDecodeError as exc:
                raise refuse(f"byte {start + exc.start}: the JSON chunk is not UTF-8 text") from exc
        elif chunk_type == _GLB_BIN_CHUNK and binary is None:
            binary = chunk_length
        offset = start + chunk_length
    if document is None:
        raise refuse("it has no JSON chunk")
    buffers = document.get("buffers") if isinstance(document, dict) else None
    if isinstance(buffers, list) and buffers and isinstance(buffers[0], dict) and "uri" not in buffers[0]:
        declared = buffers[0].get("byteLength")
        if isinstance(declared, int) and declared > (binary or 0):
            raise refuse(f"the JSON says buffer 0 holds {declared} bytes, but the BIN chunk holds {binary or 0}")
    return document if isinstance(document, dict) else {}


def gltf_document(data: bytes | None, path: Path | None) -> dict | None:
    """The JSON of a .gltf (None when it is not an object).

    Raises
    ------
    ValueError
        "could not read this as GLTF: its JSON is not valid at character 2
        (line 1, column 2)".
    """
    try:
        document = json.loads(data if data is not None else read_path(path))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"could not read this as GLTF: {reason(exc, 'GLTF')}") from exc
    return document if isinstance(document, dict) else None


def _gltf_file(file_type: str, raw, data, path, document, resolver, texture_pixels: int | None = None):
    """The :class:`bvh.io.gltf_materials.GltfFile` of a glTF or GLB being
    loaded (its JSON ``document`` read from ``data`` for a .gltf when not
    given, its external buffers found beside ``path``), or None without a
    document."""
    import trimesh

    from .gltf_materials import GltfFile

    if document is None and file_type == "gltf":
        document = gltf_document(data, path)
    if document is None:
        return None
    if resolver is None and path is not None:
        resolver = trimesh.resolvers.FilePathResolver(str(path))
    return GltfFile(document, raw if file_type == "glb" else None, resolver, texture_pixels)


def read_gltf_alpha(scene, file_type: str, raw, data, path, document, resolver,
                    texture_pixels: int | None = None) -> None:
    """Tag trimesh's geometries of a glTF with their alpha-tested materials (:mod:`bvh.io.gltf_materials`),
    refusing a texture of more than ``texture_pixels`` pixels before it is decoded."""
    gltf = _gltf_file(file_type, raw, data, path, document, resolver, texture_pixels)
    if gltf is None:
        return
    try:
        gltf.tag_geometries(list(scene.geometry.values()))
    except LimitExceeded:
        raise
    except ValueError as exc:
        raise ValueError(f"could not read the alpha of this {label_of(file_type)} file's materials: {exc}") from exc


def read_exact_vertices(scene, file_type: str, raw, data, path, document, resolver) -> None:
    """Give trimesh's geometries of a glTF the float64 vertices their mesh's
    ``extras.bvh_pick.vertices_float64`` names (:mod:`bvh.io.glb_writer`): a
    buffer view of little-endian float64, one row per vertex.

    Believed only when it has a row for every vertex, finite, each rounding to
    the ``POSITION`` trimesh read (a file whose positions were edited since
    keeps its float32 ones).

    Raises
    ------
    ValueError
        When the view is not in the file, or not whole float64 rows:
        "could not read the exact vertices of mesh 'tet' of this GLB file: ...".
    """
    geometries = [geometry for geometry in scene.geometry.values()
                  if isinstance(getattr(geometry, "metadata", None), dict)
                  and isinstance(geometry.metadata.get(EXTRAS_KEY), dict)
                  and "vertices_float64" in geometry.metadata[EXTRAS_KEY]]
    if not geometries:
        return
    gltf = _gltf_file(file_type, raw, data, path, document, resolver)
    if gltf is None:
        return
    for geometry in geometries:
        view = geometry.metadata[EXTRAS_KEY]["vertices_float64"]
        try:
            payload = gltf.view_bytes(view)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"could not read the exact vertices of mesh {geometry.metadata.get('name', '')!r} of "
                             f"this {label_of(file_type)} file: {exc}") from exc
        if len(payload) % 24:
            raise ValueError(f"could not read the exact vertices of mesh {geometry.metadata.get('name', '')!r} of "
                             f"this {label_of(file_type)} file: bufferView {view} holds {len(payload)} bytes, "
                             f"not whole rows of three float64")
        exact = np.frombuffer(payload, "<f8").reshape(-1, 3).astype(np.float64)
        stored = np.asarray(geometry.vertices)
        if exact.shape == stored.shape and np.isfinite(exact).all() and np.array_equal(
                exact.astype(np.float32), stored.astype(np.float32)):
            geometry.vertices = exact
