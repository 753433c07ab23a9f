"""Sources of the loader: a path, bytes or a file object, its file type, and
trimesh's reading of it, failures put in words about the file."""

from __future__ import annotations

import io
import os
from pathlib import Path

from .archives import ARCHIVES, COMPRESSIONS, ZIP_CONTAINERS
from .obj import obj_number_problem
from .wording import label_of, reason

# A binary STL: an 80-byte header, a uint32 triangle count, 50 bytes a triangle.
_STL_HEADER_BYTES = 84

_STL_TRIANGLE_BYTES = 50

# How much of a file to look at for a better error message.
_HINT_HEAD_BYTES = 4096


def supported_file_types() -> list[str]:
    """The file types read here, sorted: trimesh's (``trimesh.available_formats()``)
    and the archives and compressions of :mod:`bvh.io.archives`.

    Some of them (``xyz`` point clouds, ``dxf`` drawings) never hold
    triangles; loading one raises the "has no triangles" ``ValueError``.
    ``gz``, ``bz2`` and ``xz`` stand for ``<type>.gz`` and so on, a compressed
    file of one of the others (``obj.gz``), which is accepted too.
    """
    import trimesh

    return sorted(set(trimesh.available_formats()) | set(ARCHIVES) | set(COMPRESSIONS))


def member_file_type(name: str) -> str | None:
    """The file type of an archive's member by its suffix, when it is a file type
    read here other than an archive, a compressed file or a zip container
    (which are not expanded inside another); None otherwise."""
    suffix = name.rpartition("/")[2].rpartition(".")
    kind = suffix[2].lower() if suffix[1] else ""
    if kind in COMPRESSIONS or kind in ARCHIVES or kind in ZIP_CONTAINERS or kind not in supported_file_types():
        return None
    return kind


def read_source(source, file_type):
    """``(bytes or None, path or None, normalised file type, trimesh resolver
    or None)`` of a source: a path is not read here, so that trimesh can open
    it itself and name the geometry after the file."""
    import trimesh

    resolver, path, data = None, None, None
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if file_type is None:
            raise ValueError("file_type is required when source is bytes "
                             "(e.g. file_type='stl')")
    elif hasattr(source, "read"):
        if file_type is None:
            raise ValueError("file_type is required when source is a file object "
                             "(e.g. file_type='stl')")
        try:
            data = source.read()
        except Exception as exc:
            raise ValueError(f"could not read the file object: {reason(exc, 'mesh')}") from exc
        if isinstance(data, str):
            raise ValueError("source is a text-mode file object: open the file in "
                             "binary mode ('rb')")
        data = bytes(data)
        name = getattr(source, "name", None)
        if isinstance(name, str) and os.path.isfile(name):
            # Lets a .gltf opened by the caller find its buffers and images.
            resolver = trimesh.resolvers.FilePathResolver(name)
    elif isinstance(source, (str, os.PathLike)):
        path = Path(os.fsdecode(source))
        if not path.is_file():
            raise ValueError(f"no file at {str(path)!r}")
        path = path.resolve()
        if file_type is None:
            file_type = _suffix_type(path)
        # Lets an OBJ, which is handed to trimesh as bytes, keep the file's name.
        resolver = trimesh.resolvers.FilePathResolver(str(path))
    else:
        raise ValueError("source must be a path, bytes or a binary file object, "
                         f"not {type(source).__name__}")
    return data, path, _normalise_type(file_type), resolver


def read_path(path: Path, size: int = -1) -> bytes:
    """The first ``size`` bytes of a file (all of it by default)."""
    try:
        with open(path, "rb") as stream:
            return stream.read(size)
    except OSError as exc:
        raise ValueError(f"could not read {str(path)!r}: {exc}") from exc


def _suffix_type(path: Path) -> str:
    suffixes = [suffix.lower() for suffix in path.suffixes]
    if len(suffixes) >= 2 and suffixes[-1][1:] in COMPRESSIONS:
        # model.obj.gz, scene.tar.bz2
        return suffixes[-2][1:] + suffixes[-1]
    if not path.suffix:
        raise ValueError(f"cannot tell the file type of {str(path)!r}: it has no suffix; "
                         "pass file_type (e.g. file_type='obj')")
    return path.suffix[1:]


def _normalise_type(file_type) -> str:
    if not isinstance(file_type, str):
        raise ValueError(f"file_type must be a string such as 'stl', not {file_type!r}")
    normalised = file_type.strip().lower().lstrip(".")
    supported = supported_file_types()
    inner, dot, compression = normalised.rpartition(".")
    if dot and compression in COMPRESSIONS and inner != "tar":
        if inner in COMPRESSIONS or inner in ARCHIVES or inner in ZIP_CONTAINERS or inner not in supported:
            raise ValueError(f"unsupported file type {inner!r} compressed as {compression!r}: a compressed file "
                             f"holds one of " + ", ".join(kind for kind in supported if kind not in COMPRESSIONS
                                                          and kind not in ARCHIVES and kind not in ZIP_CONTAINERS))
        return normalised
    if normalised not in supported:
        raise ValueError(f"unsupported file type {normalised!r}: trimesh reads "
                         + ", ".join(supported))
    return normalised


def trimesh_scene(data: bytes | None, path: Path | None, file_type: str, resolver):
    """trimesh's scene of the bytes, or else of the file at ``path``."""
    import trimesh

    label = label_of(file_type)
    # Whether files a .gltf refers to (buffers, images) can be found.
    findable = path is not None or resolver is not None
    if data is not None:
        size, file_obj = len(data), io.BytesIO(data)
    else:
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise ValueError(f"could not read {str(path)!r}: {exc}") from exc
        # trimesh opens the file itself and makes its own resolver.
        file_obj, resolver = str(path), None
    if size == 0:
        raise ValueError(f"could not read this as {label}: the file is empty")
    options = {"process": False}
    if file_type == "obj":
        # Texture images would be decoded for nothing; uvs are read regardless.
        options["skip_materials"] = True
    try:
        scene = trimesh.load_scene(file_obj, file_type=file_type, resolver=resolver, **options)
    except Exception as exc:
        located = obj_number_problem(data.decode("utf-8")) if file_type == "obj" else None
        if located is not None:
            raise ValueError(f"could not read this as OBJ: {located}") from exc
        raise ValueError(f"could not read this as {label}: {reason(exc, label)}"
                         f"{_hint(data, path, file_type, findable)}") from exc
    if not scene.geometry:
        # Only the STL hint applies: trimesh read the .gltf's buffers if it got here.
        raise ValueError(f"could not read this as {label}: no geometry in it (not a valid "
                         f"{label} file, or an empty one){_hint(data, path, file_type, True)}")
    return scene


def _hint(data: bytes | None, path: Path | None, file_type: str, findable: bool) -> str:
    """A likelier cause than trimesh's message, where the bytes show one."""
    if file_type == "stl":
        if data is None:
            try:
                # Binary triangles show non-ASCII bytes well within the first few.
                head, size = read_path(path, _HINT_HEAD_BYTES), path.stat().st_size
            except (OSError, ValueError):
                return ""
        else:
            head, size = data, len(data)
        if _is_text(head):
            return ""
        if size < _STL_HEADER_BYTES:
            return (f" (binary data of {size} bytes, shorter than the "
                    f"{_STL_HEADER_BYTES}-byte header of a binary STL)")
        count = int.from_bytes(head[80:84], "little")
        expected = _STL_HEADER_BYTES + _STL_TRIANGLE_BYTES * count
        if expected != size:
            return (f" (a binary STL header announcing {count} triangles, {expected} bytes, "
                    f"but the data has {size} bytes: truncated or not an STL)")
    if file_type == "gltf" and not findable:
        return " (a .gltf whose buffers or images are separate files must be loaded from its path)"
    return ""


def _is_text(data: bytes) -> bool:
    try:
        data.decode("ascii")
    except UnicodeDecodeError:
        return False
    return True
