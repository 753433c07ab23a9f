"""Uploaded scene files: which type they are, and reading them.

The type comes from the file name's suffix (two for a compressed file:
``.obj.gz``, ``.tar.bz2``), else from the part's ``Content-Type``; a type
``bvh`` cannot read is a 415 before any parsing. A file that has a readable
type but is empty, truncated, corrupt or holds no triangles is a 422 with
``bvh``'s message, which names the format and where the file broke (an OBJ
line, a GLB byte offset, the PLY rows found). An archive or compressed file
that expands past the settings' budget, or a texture larger than they allow,
is a 413 naming the member or image and the setting (``bvh.io.archives``).
"""

from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath

from starlette.datastructures import UploadFile

from bvh.io.archives import COMPRESSIONS
from bvh.io.load import LimitExceeded, ReadLimits, SceneDescription, supported_file_types

from ..api.errors import ClientError, client_errors
from ..settings import MEGABYTE, Settings
from .reader_processes import read_in_process

#: Media types of mesh formats, for uploads whose file name has no suffix.
MEDIA_TYPES = {
    "model/obj": "obj",
    "text/prs.wavefront-obj": "obj",
    "model/stl": "stl",
    "model/x.stl-binary": "stl",
    "model/x.stl-ascii": "stl",
    "application/sla": "stl",
    "application/vnd.ms-pki.stl": "stl",
    "model/gltf-binary": "glb",
    "model/gltf+json": "gltf",
    "application/ply": "ply",
    "model/ply": "ply",
    "text/plain+ply": "ply",
    "application/off": "off",
    "model/off": "off",
    "model/3mf": "3mf",
}

#: Formats that never hold triangles; refused as unsupported (415) rather
#: than read and found empty.
NO_TRIANGLES = {"xyz", "dxf", "svg", "dwg", "txt", "csv"}


@lru_cache
def mesh_file_types() -> frozenset[str]:
    """The file types an upload may have (trimesh's, less point and drawing formats)."""
    return frozenset(supported_file_types()) - NO_TRIANGLES


@dataclass(frozen=True)
class MeshFile:
    """An uploaded file's bytes and type."""

    filename: str
    file_type: str
    content: bytes


def file_type_of(filename: str | None, content_type: str | None) -> str:
    """The trimesh file type of an upload, or a 415.

    Raises
    ------
    ClientError
        415 naming what was given and what is accepted.
    """
    accepted = mesh_file_types()
    suffixes = [suffix.lower().lstrip(".") for suffix in PurePosixPath(filename or "").suffixes]
    suffix = suffixes[-1] if suffixes else ""
    if suffix in COMPRESSIONS:
        inner = suffixes[-2] if len(suffixes) >= 2 else ""
        if inner == "tar" or (inner in accepted and inner not in COMPRESSIONS):
            return f"{inner}.{suffix}"
        raise ClientError(415, f"file {filename!r} is compressed with {suffix}: its name must say what it holds, "
                               f"as model.obj.{suffix} or scene.tar.{suffix}"
                               + (f" ('.{inner}' is not a type read here)" if inner else ""))
    if suffix:
        if suffix in accepted:
            return suffix
        raise ClientError(415, f"unsupported file type '.{suffix}' (file {filename!r}); "
                               f"upload one of: {', '.join(sorted(accepted))}")
    media = (content_type or "").split(";")[0].strip().lower()
    if media in MEDIA_TYPES and MEDIA_TYPES[media] in accepted:
        return MEDIA_TYPES[media]
    raise ClientError(415, f"cannot tell the type of file {filename or '(no name)'!r}"
                           f"{f' from its content type {media!r}' if media else ''}: give the file name "
                           f"a suffix, one of: {', '.join(sorted(accepted))}")


async def read_upload(upload: UploadFile) -> MeshFile:
    """The type (checked first) and bytes of a multipart file part."""
    file_type = file_type_of(upload.filename, upload.content_type)
    content = await upload.read()
    if not content:
        raise ClientError(422, f"file {upload.filename!r} is empty")
    return MeshFile(upload.filename or "", file_type, content)


def upload_limits(settings: Settings) -> ReadLimits:
    """What reading an upload may expand, from the settings."""
    return ReadLimits(settings.expanded_limit_bytes, settings.max_expansion_ratio, settings.max_texture_pixels)


def limit_setting(error: LimitExceeded, settings: Settings) -> str:
    """The setting behind a refusal of ``bvh``, with its value, e.g. ``PICK_MAX_EXPANDED_MB=800``."""
    if error.limit == "expanded_bytes":
        return f"PICK_MAX_EXPANDED_MB={settings.expanded_limit_bytes / MEGABYTE:g}"
    if error.limit == "expansion_ratio":
        return f"PICK_MAX_EXPANSION_RATIO={settings.max_expansion_ratio:g}"
    return f"PICK_MAX_TEXTURE_PIXELS={settings.max_texture_pixels}"


def describe(mesh_file: MeshFile, settings: Settings, name: str | None = None) -> SceneDescription:
    """Read the file's meshes and instances (no BVH built yet) in a worker process
    (:mod:`service.queries.reader_processes`); 422 when unreadable, 413 when it
    expands past the settings' limits.

    ``name`` (default: the file name's stem, less a compression's suffix)
    names the object of a file that holds one mesh it does not name itself,
    instead of trimesh's "geometry_0".
    """
    object_name = name or upload_stem(mesh_file.filename) or None
    with client_errors(f"file {mesh_file.filename!r}: "):
        try:
            return read_in_process(mesh_file.content, mesh_file.file_type, object_name, upload_limits(settings),
                                   settings.max_concurrent_builds)
        except LimitExceeded as error:
            raise ClientError(413, f"file {mesh_file.filename!r}: {error} ({limit_setting(error, settings)})") \
                from None


def upload_stem(filename: str) -> str:
    """A file name without its type's suffixes: ``gear`` of ``gear.stl`` and of ``gear.stl.gz``."""
    path = PurePosixPath(filename)
    if path.suffix.lower().lstrip(".") in COMPRESSIONS:
        path = PurePosixPath(path.stem)
    return path.stem
