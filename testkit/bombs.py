"""Compression and texture bombs, made small and fast, a scene graph of many nodes,
and a process tree's memory read from ``/proc`` (for the upload tests,
``bench.upload_bombs`` and ``bench.responsive``).

Each bomb expands to ``size`` bytes of zeros (2 GiB by default) yet takes a
fraction of a second to make: the compressed form of one block of zeros is
made once and repeated (gzip, bz2 and xz readers read concatenated streams as
one file; a zip or tar declares its member's full size in its headers).
"""

import bz2
import gzip
import json
import lzma
import struct
import zlib
from pathlib import Path

import numpy as np
import trimesh

GIBIBYTE = 1 << 30

#: Zeros compressed once and repeated.
BLOCK_BYTES = 64 << 20

_COMPRESSORS = {"gz": lambda data: gzip.compress(data, 9, mtime=0), "bz2": lambda data: bz2.compress(data, 9),
                "xz": lambda data: lzma.compress(data)}


def compressed_zeros(compression: str, size: int = 2 * GIBIBYTE) -> bytes:
    """``size`` zeros (a multiple of :data:`BLOCK_BYTES`) as concatenated gz, bz2 or xz streams:
    about 1.5 KB of bz2 or 2 MB of gzip for 2 GiB."""
    block = _COMPRESSORS[compression](bytes(min(size, BLOCK_BYTES)))
    return block * max(1, size // BLOCK_BYTES)


def _deflated_zeros(size: int) -> bytes:
    """Raw deflate of ``size`` zeros (a multiple of 1 MiB): one fully flushed block repeated."""
    chunk = bytes(1 << 20)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
    repeated = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
    last = deflate.compress(chunk) + deflate.flush()
    return first + repeated * (size // len(chunk) - 2) + last


def zip_of_zeros(member: str, size: int = 2 * GIBIBYTE) -> bytes:
    """A zip of one deflated member of ``size`` zeros, its sizes declared honestly (its CRC is not:
    a reader stops long before it would check it)."""
    data = _deflated_zeros(size)
    name = member.encode()
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, 0, len(data), size, len(name), 0) + name
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, 0, len(data), size, len(name),
                          0, 0, 0, 0, 0, 0) + name
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), len(local) + len(data), 0)
    return local + data + central + end


def tar_gz_of_zeros(member: str, size: int = 2 * GIBIBYTE) -> bytes:
    """A gzipped tar of one member of ``size`` zeros (a multiple of :data:`BLOCK_BYTES`)."""
    header = bytearray(512)
    fields = [(0, 100, member.encode()), (100, 8, b"0000644\0"), (108, 8, b"0000000\0"), (116, 8, b"0000000\0"),
              (124, 12, f"{size:011o}\0".encode()), (136, 12, b"00000000000\0"), (156, 1, b"0"),
              (257, 6, b"ustar\0"), (263, 2, b"00")]
    for offset, width, value in fields:
        header[offset:offset + len(value)] = value
    header[148:156] = b" " * 8
    header[148:156] = f"{sum(header):06o}\0 ".encode()
    return gzip.compress(bytes(header), 9, mtime=0) + compressed_zeros("gz", size)


def png_of_zeros(width: int, height: int) -> bytes:
    """A valid RGBA PNG of ``width`` x ``height`` transparent pixels (13000 x 13000: about 0.7 MB),
    compressed a band of rows at a time."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = bytes(1 + 4 * width)            # filter byte 0, then the row's pixels
    band = max(1, (16 << 20) // len(row))
    deflate = zlib.compressobj(9)
    parts = [deflate.compress(row * min(band, height - start)) for start in range(0, height, band)]
    parts.append(deflate.flush())
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", b"".join(parts)) + chunk(b"IEND", b"")


def masked_triangle_glb(png: bytes) -> bytes:
    """A GLB of one triangle whose ``MASK`` material's base colour texture is ``png``."""
    positions = struct.pack("<9f", 0, 0, 0, 1, 0, 0, 0, 1, 0)
    uvs = struct.pack("<6f", 0, 0, 1, 0, 0, 1)
    binary = positions + uvs + png + bytes(-len(png) % 4)
    document = {
        "asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0, "name": "leaf"}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "TEXCOORD_0": 1}, "material": 0}]}],
        "materials": [{"alphaMode": "MASK", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}],
        "textures": [{"source": 0}], "images": [{"bufferView": 2, "mimeType": "image/png", "name": "huge"}],
        "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
                       "min": [0, 0, 0], "max": [1, 1, 0]},
                      {"bufferView": 1, "componentType": 5126, "count": 3, "type": "VEC2"}],
        "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": 36},
                        {"buffer": 0, "byteOffset": 36, "byteLength": 24},
                        {"buffer": 0, "byteOffset": 60, "byteLength": len(png)}],
        "buffers": [{"byteLength": len(binary)}],
    }
    text = json.dumps(document).encode()
    text += b" " * (-len(text) % 4)
    chunks = struct.pack("<II", len(text), 0x4E4F534A) + text + struct.pack("<II", len(binary), 0x004E4942) + binary
    return struct.pack("<4sII", b"glTF", 2, 12 + len(chunks)) + chunks


def many_nodes_glb(nodes: int, axes: tuple[int, int] = (0, 1), name: str = "n") -> bytes:
    """A GLB whose ``nodes`` nodes (named ``name`` and their number) each place
    one shared unit box, on a grid of spacing 2 along ``axes``; written
    directly, so that a million nodes take seconds, not a trimesh scene
    graph's minutes."""
    box = trimesh.creation.box()
    positions = np.asarray(box.vertices, np.float32)
    indices = np.asarray(box.faces, np.uint32)
    binary = positions.tobytes() + indices.tobytes()
    side = int(np.ceil(np.sqrt(nodes)))
    document = {
        "asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": list(range(nodes))}],
        "nodes": [{"mesh": 0, "name": f"{name}{i}", "translation": _on_grid(i, side, axes)} for i in range(nodes)],
        "meshes": [{"name": "box", "primitives": [{"attributes": {"POSITION": 0}, "indices": 1}]}],
        "accessors": [{"bufferView": 0, "componentType": 5126, "count": len(positions), "type": "VEC3",
                       "min": positions.min(axis=0).tolist(), "max": positions.max(axis=0).tolist()},
                      {"bufferView": 1, "componentType": 5125, "count": indices.size, "type": "SCALAR"}],
        "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": positions.nbytes},
                        {"buffer": 0, "byteOffset": positions.nbytes, "byteLength": indices.nbytes}],
        "buffers": [{"byteLength": len(binary)}],
    }
    text = json.dumps(document, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 4)
    chunks = struct.pack("<II", len(text), 0x4E4F534A) + text + struct.pack("<II", len(binary), 0x004E4942) + binary
    return struct.pack("<4sII", b"glTF", 2, 12 + len(chunks)) + chunks


def _on_grid(index: int, side: int, axes: tuple[int, int]) -> list[float]:
    position = [0.0, 0.0, 0.0]
    position[axes[0]] = 2.0 * (index % side)
    position[axes[1]] = 2.0 * (index // side)
    return position


def upload_bombs(size: int = 2 * GIBIBYTE) -> dict[str, tuple[str, bytes]]:
    """Every kind of bomb an upload may be, by kind: (file name, bytes)."""
    return {
        "bz2": ("bomb.obj.bz2", compressed_zeros("bz2", size)),
        "gzip": ("bomb.obj.gz", compressed_zeros("gz", size)),
        "xz": ("bomb.stl.xz", compressed_zeros("xz", size)),
        "zip": ("bomb.zip", zip_of_zeros("bomb.obj", size)),
        "tar.gz": ("bomb.tar.gz", tar_gz_of_zeros("bomb.obj", size)),
        "3mf": ("bomb.3mf", zip_of_zeros("3D/3dmodel.model", size)),
        "texture": ("leaf.glb", masked_triangle_glb(png_of_zeros(13000, 13000))),
    }


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (a server's reader processes), from ``/proc``."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        try:
            for task in Path(f"/proc/{current}/task").iterdir():
                queue.extend(int(child) for child in (task / "children").read_text().split())
        except OSError:
            continue
    return found


def memory(pid: int) -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` (peak since start or since :func:`reset_peak`) in bytes, summed over
    the process and its descendants (a server reads uploads in child processes)."""
    values = {"VmRSS": 0, "VmHWM": 0}
    for member in process_tree(pid):
        try:
            lines = Path(f"/proc/{member}/status").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            key, _, rest = line.partition(":")
            if key in values:
                values[key] += int(rest.split()[0]) * 1024
    return values


def reset_peak(pid: int) -> bool:
    """Start the ``VmHWM`` of a process and its descendants afresh from their current RSS
    (Linux's ``clear_refs`` 5); False when the kernel does not allow it here."""
    try:
        for member in process_tree(pid):
            Path(f"/proc/{member}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


__all__ = ["compressed_zeros", "many_nodes_glb", "masked_triangle_glb", "memory", "png_of_zeros", "process_tree", "reset_peak",
           "tar_gz_of_zeros", "upload_bombs", "zip_of_zeros"]
