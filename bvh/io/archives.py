"""Compressed files and archives, expanded against a budget before they allocate.

A few kilobytes of bz2 can hold gigabytes of zeros; trimesh expands an archive
whole in memory before it looks at it. Every compressed source is therefore
expanded here, and only here, a chunk at a time (the standard library's
streaming readers: ``gzip``, ``bz2`` and ``lzma`` file objects, ``zipfile``'s
member streams, ``tarfile``'s member files), counting every byte against the
budget of :class:`ReadLimits` and refusing with :class:`LimitExceeded` as soon
as it is spent, naming the member. Sizes an archive declares (zip's central
directory, tar's headers) are checked before anything is expanded, and a
member's stream ends at its declared size; a gz, bz2 or xz stream, which
declares nothing, is expanded twice: counted and dropped, then kept once it
is known to fit, so a bomb is refused holding no more than a chunk.

The budget of one source is the smaller of ``expanded_bytes`` and
``expansion_ratio`` times the source's compressed size (never less than
:data:`RATIO_FLOOR_BYTES`): mesh files compress by a factor of a few, up to a
few tens; a bomb by thousands. The ratio is what refuses a 1 KB archive of
2 GiB after a few megabytes rather than after ``expanded_bytes``.

File types: ``zip``, ``tar``, ``tar.gz``, ``tar.bz2``, ``tar.xz`` are
archives whose members are read by their own suffixes; ``<type>.gz``,
``<type>.bz2``, ``<type>.xz`` one compressed file of ``<type>`` (``obj.gz``);
``3mf`` and ``3dxml`` zip containers that trimesh opens itself, so they are
only checked (:func:`check_zip`) before it does.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
import zipfile
from typing import NamedTuple

#: Single-file compressions, by suffix: their streaming readers.
COMPRESSIONS = {"gz": gzip.open, "bz2": bz2.open, "xz": lzma.open}

#: Archives of several members, by file type.
ARCHIVES = ("zip", "tar", "tar.gz", "tar.bz2", "tar.xz")

#: Formats that are zip files which trimesh opens itself.
ZIP_CONTAINERS = ("3mf", "3dxml")

#: Bytes read from a decompressing stream at a time.
CHUNK_BYTES = 1 << 20

#: Any source may expand to this much whatever its compression ratio, so a small
#: file that compresses very well (a flat grid's OBJ) still reads.
RATIO_FLOOR_BYTES = 16 << 20

MEBIBYTE = 1 << 20


class ReadLimits(NamedTuple):
    """How much reading one file may take; None: no limit.

    Attributes
    ----------
    expanded_bytes : int or None
        Most bytes the members of one compressed file or archive may expand to, together.
    expansion_ratio : float or None
        Most expanded bytes per compressed byte, past the first :data:`RATIO_FLOOR_BYTES`.
    texture_pixels : int or None
        Most pixels (width x height, as the image's header declares them) of a
        texture that is decoded (a glTF's alpha-tested base colour).
    """

    expanded_bytes: int | None = None
    expansion_ratio: float | None = None
    texture_pixels: int | None = None


class LimitExceeded(ValueError):
    """A file that would take more than a :class:`ReadLimits` allows, refused before it does.

    Attributes
    ----------
    limit : str
        The field of :class:`ReadLimits` that refused it.
    value : int or float
        That field's value.
    """

    def __init__(self, message: str, limit: str, value):
        super().__init__(message)
        self.limit = limit
        self.value = value

    def __reduce__(self):
        # Pickled whole (a reader in another process raises it), not rebuilt from args alone.
        return type(self), (str(self), self.limit, self.value)


def is_compressed(file_type: str) -> bool:
    """Whether ``file_type`` is an archive or a compressed file that :func:`expand` reads."""
    return file_type in ARCHIVES or file_type.rpartition(".")[2] in COMPRESSIONS


class _Budget:
    """The bytes one source may still expand to."""

    def __init__(self, limits: ReadLimits, compressed_bytes: int, label: str):
        self.label = label
        self.used = 0
        self.total, self.limit, self.value = None, None, None
        if limits.expansion_ratio is not None:
            self.total = max(RATIO_FLOOR_BYTES, int(limits.expansion_ratio * compressed_bytes))
            self.limit, self.value = "expansion_ratio", limits.expansion_ratio
        if limits.expanded_bytes is not None and (self.total is None or limits.expanded_bytes <= self.total):
            self.total, self.limit, self.value = limits.expanded_bytes, "expanded_bytes", limits.expanded_bytes
        self.compressed_bytes = compressed_bytes

    def refusal(self, member: str | None) -> LimitExceeded:
        if self.limit == "expanded_bytes":
            why = f"the most a compressed upload may expand to is {self.total / MEBIBYTE:g} MiB"
        else:
            why = (f"more than {self.value:g} times its compressed {self.compressed_bytes} bytes, past the first "
                   f"{RATIO_FLOOR_BYTES // MEBIBYTE} MiB (a compression bomb, or compressed far better than "
                   f"meshes are)")
        what = f"member {member!r} of this {self.label} file" if member is not None else f"this {self.label} file"
        return LimitExceeded(f"{what} expands past {self.total} bytes: {why}", self.limit, self.value)

    def declare(self, member: str, size: int) -> None:
        """Refuse a member whose declared size is past what is left, before expanding it."""
        if self.total is not None and self.used + size > self.total:
            raise self.refusal(member)

    def take(self, member: str, size: int) -> None:
        self.used += size
        if self.total is not None and self.used > self.total:
            raise self.refusal(member)


def _count(stream, member: str | None, budget: _Budget) -> None:
    """Read ``stream`` to its end a chunk at a time against ``budget``, keeping nothing."""
    while chunk := stream.read(CHUNK_BYTES):
        budget.take(member, len(chunk))


def _read_bounded(stream, member: str, budget: _Budget) -> bytes:
    """All of ``stream``, read a chunk at a time against ``budget``."""
    out = bytearray()
    while chunk := stream.read(CHUNK_BYTES):
        budget.take(member, len(chunk))
        out += chunk
    return bytes(out)


def expand(data: bytes, file_type: str, label: str, limits: ReadLimits, name: str | None = None) -> dict[str, bytes]:
    """The members of an archive, or the one file of a compressed file, by name.

    Parameters
    ----------
    data : bytes
        The compressed file.
    file_type : str
        ``zip``, ``tar``, ``tar.gz``, ``tar.bz2``, ``tar.xz``, or ``<type>.gz``,
        ``.bz2``, ``.xz``.
    label : str
        The file type as messages name it (``"OBJ.BZ2"``).
    limits : ReadLimits
    name : str, optional
        The name of a compressed file's one member (default ``"file.<type>"``).

    Returns
    -------
    dict of str to bytes
        Regular members only (no folders, links or devices).

    Raises
    ------
    LimitExceeded
        Once the members expand (or declare they will) past the budget.
    ValueError
        A damaged or truncated archive: "could not read this as ZIP: ...".
    """
    budget = _Budget(limits, len(data), label)
    try:
        if file_type == "zip":
            return _zip_members(data, budget, keep=True)
        if file_type in ARCHIVES:
            return _tar_members(data, file_type, budget)
        inner, _, compression = file_type.rpartition(".")
        member = name or f"file.{inner}"
        # A stream declares no size: it is expanded once, counted and dropped, and only read
        # whole once it is known to fit, so that a bomb is refused holding nothing.
        with COMPRESSIONS[compression](io.BytesIO(data), "rb") as stream:
            _count(stream, name, budget)
        with COMPRESSIONS[compression](io.BytesIO(data), "rb") as stream:
            return {member: stream.read()}
    except LimitExceeded:
        raise
    except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError, lzma.LZMAError, RuntimeError,
            NotImplementedError, ValueError) as exc:
        raise ValueError(f"could not read this as {label}: {_damage(exc)}") from exc


def check_zip(data: bytes, label: str, limits: ReadLimits) -> None:
    """Expand a zip container's members (a 3MF) against the budget, keeping nothing,
    so that the reader that opens it afterwards expands no more than that.

    Raises
    ------
    LimitExceeded, ValueError
        As :func:`expand`.
    """
    budget = _Budget(limits, len(data), label)
    try:
        _zip_members(data, budget, keep=False)
    except LimitExceeded:
        raise
    except (OSError, EOFError, zipfile.BadZipFile, RuntimeError, NotImplementedError, ValueError) as exc:
        raise ValueError(f"could not read this as {label}: {_damage(exc)}") from exc


def _zip_members(data: bytes, budget: _Budget, keep: bool) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = [info for info in archive.infolist() if not info.is_dir()]
        declared = 0
        for info in infos:
            # The central directory's sizes: a bomb that declares them is refused unexpanded.
            budget.declare(info.filename, declared + info.file_size)
            declared += info.file_size
        members = {}
        for info in infos:
            with archive.open(info) as stream:
                # A member's stream ends at its declared size (checked above) or fails its CRC.
                if keep:
                    members[info.filename] = _read_bounded(stream, info.filename, budget)
                else:
                    _count(stream, info.filename, budget)
        return members


def _tar_members(data: bytes, file_type: str, budget: _Budget) -> dict[str, bytes]:
    members = {}
    # "r:gz" for tar.gz: the compression the file type names, decompressed as the members are read.
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:" + file_type.partition(".")[2]) as archive:
        # Iterating reads one header at a time: a member's declared size is refused before its data.
        for info in archive:
            if not info.isreg():
                continue
            budget.declare(info.name, info.size)
            stream = archive.extractfile(info)
            if stream is not None:
                members[info.name] = _read_bounded(stream, info.name, budget)
    return members


def _damage(exc: BaseException) -> str:
    message = " ".join(str(exc).split())
    if isinstance(exc, EOFError):
        return "it ends before its compressed data does (truncated)"
    return f"the archive is damaged ({message})" if message else "the archive is damaged"
