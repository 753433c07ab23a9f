"""A crash-safe directory of memory-mapped numpy arrays: what ``Scene.save``
and ``Scene.open`` are built on.

A saved directory holds ``manifest.json`` (format, version, the caller's JSON
metadata and one entry per array: file, dtype, shape, size, CRC-32, token)
and one ``.npy`` file per array. A write proceeds in this order, each step
for one reason:

1. Every array file gets a new unique name, so a write never modifies a file
   that the current manifest, or a reader's memory map, refers to.
2. Each array file is written under a temporary name, fsync'ed and renamed,
   so a file under its final name is always complete.
3. The directory is fsync'ed, so the renames are durable before any manifest
   can point at the new files.
4. The manifest is written to a temporary file, fsync'ed and ``os.replace``'d
   over ``manifest.json``, so readers see either the whole old save or the
   whole new one, never a mix.
5. The directory is fsync'ed again, so an acknowledged save survives a crash
   or power loss.
6. Only then are files the new manifest no longer references deleted, so
   until the switch the old save stays complete; readers that mapped old
   files keep their data (POSIX unlink semantics).

Writers to one directory are serialised by an advisory lock on
``.write.lock`` inside it, so two processes saving at once cannot delete each
other's files. Readers take no lock: a reader that loses a race with a writer
deleting the files it was about to map reads the new manifest again.
"""

import json
import math
import os
import re
import threading
import uuid
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import numpy as np

try:
    import fcntl
except ImportError:
    # Without fcntl (Windows) concurrent writers are not serialised; callers
    # there must not save to one directory from two processes at once.
    fcntl = None

FORMAT = "bvh-scene"

#: Version 2 (issue 14): meshes' trees are saved as four-wide nodes. Version 1
#: saved binary nodes; it is still read (``OLDEST_VERSION``), and
#: ``bvh.Scene.open`` rebuilds its trees.
FORMAT_VERSION = 2
OLDEST_VERSION = 1

MANIFEST = "manifest.json"

#: The advisory lock file that serialises writers; never referenced or deleted.
LOCK_FILE = ".write.lock"

#: Array names become file-name stems, so they are restricted to characters
#: that are safe on every file system and cannot form a path.
_NAME = re.compile(r"[A-Za-z0-9_]+")

#: Files this module creates; cleanup deletes only names of these shapes, so
#: saving into a directory that holds other files never destroys them.
_ARRAY_FILE = re.compile(r"[A-Za-z0-9_]+\.[0-9a-f]{12}\.npy")
_TEMP_FILE = re.compile(r"(?:[A-Za-z0-9_]+\.[0-9a-f]{12}\.npy|manifest\.json\.[0-9a-f]{12})\.tmp")

#: numpy dtype kinds that can be stored: bool, integers, floats, complex.
_STORABLE_KINDS = "biufc"

_ENTRY_KEYS = ("file", "dtype", "shape", "bytes", "crc32", "token")

#: A reader that keeps losing races against writers gives up after this many
#: manifests; each retry needs a whole save to complete in between.
_READ_ATTEMPTS = 5


def write_arrays(directory, arrays: dict, metadata: dict, tokens: dict | None = None) -> None:
    """Save ``arrays`` and ``metadata`` into ``directory``, atomically.

    Parameters
    ----------
    directory : str or os.PathLike
        Created (with its parents) when missing. Files in it that this module
        did not create are left alone.
    arrays : dict[str, numpy.ndarray]
        Name to array. Names match ``[A-Za-z0-9_]+``; arrays have a bool,
        integer, float or complex dtype and any shape, zero-size included.
        They are stored C-contiguous and little-endian.
    metadata : dict
        Any JSON-serialisable dict; read back by :func:`read_arrays` as JSON
        gives it (tuples become lists, keys become strings).
    tokens : dict[str, str or None], optional
        Name to an opaque generation id the caller changes whenever that
        array's contents change. An array whose token equals the one in the
        directory's current manifest, with the same dtype and shape and its
        file intact in size, keeps its file instead of being rewritten.
        Tokens must be unique across everything ever saved to the directory
        (a uuid, not a counter), because the match is all the proof of
        equal contents there is. Tokens for names not in ``arrays`` are
        ignored; ``None`` means never reuse.

    Raises
    ------
    ValueError
        On a bad name, dtype, token or metadata (before anything is written),
        or when ``directory`` exists and is not a directory.
    OSError
        When the file system fails (disk full, permissions); files of the
        unfinished write are removed and the previous save stays intact.
    """
    directory = Path(directory)
    prepared = _prepare_arrays(arrays, tokens)
    if not isinstance(metadata, dict):
        raise ValueError(f"metadata must be a dict, got {type(metadata).__name__}")
    try:
        # Checked by encoding it; parsing it back as well held the interpreter lock
        # for a fifth of a second on a scene of 300,000 named objects.
        json.dumps(metadata)
    except (TypeError, ValueError) as error:
        raise ValueError(f"metadata must be JSON-serialisable: {error}") from None

    _make_directory(directory)
    with writer_lock(directory):
        previous = _previous_entries(directory)
        entries = {}
        created = []
        try:
            for name, (array, token) in prepared.items():
                entry = _reusable_entry(directory, previous.get(name), array, token)
                if entry is None:
                    entry = _write_array_file(directory, name, array, token, created)
                entries[name] = entry
            fsync_directory(directory)
            manifest = {
                "format": FORMAT,
                "version": FORMAT_VERSION,
                "metadata": metadata,
                "arrays": entries,
            }
            _replace_manifest(directory, manifest)
        except BaseException:
            # Files of the unfinished write are garbage unless the manifest
            # was replaced just before the interruption; the manifest on disk
            # says which, so nothing it references is ever removed.
            referenced = {entry["file"] for entry in _previous_entries(directory).values()}
            for path in created:
                if path.name not in referenced:
                    _remove_quietly(path)
            raise
        fsync_directory(directory)
        _remove_unreferenced(directory, {entry["file"] for entry in entries.values()})


def read_arrays(directory, *, verify: bool = True) -> tuple[dict, dict]:
    """Open a directory saved by :func:`write_arrays`, memory-mapping every array.

    Parameters
    ----------
    directory : str or os.PathLike
    verify : bool, default True
        Check every array's CRC-32 (one sequential read of each file, fast
        when the files are in the page cache). Sizes, dtypes and shapes are
        always checked.

    Returns
    -------
    metadata : dict
        The metadata given to :func:`write_arrays`.
    arrays : dict[str, numpy.ndarray]
        Name to a read-only array, in the order they were written. Non-empty
        arrays are ``numpy.memmap`` views of the files, so processes opening
        the same directory share one copy in the page cache; zero-size arrays
        (which cannot be mapped) are ordinary read-only arrays.

    Raises
    ------
    ValueError
        When the directory is missing, holds no manifest, holds another
        format or version, or is damaged in any way; the message names the
        directory and what is wrong.
    """
    saved = read_saved(directory, verify=verify)
    return saved.metadata, saved.arrays


def read_arrays_and_tokens(directory, *, verify: bool = True) -> tuple[dict, dict, dict]:
    """:func:`read_arrays`, plus the tokens the arrays were saved with (see :func:`read_saved`)."""
    saved = read_saved(directory, verify=verify)
    return saved.metadata, saved.arrays, saved.tokens


class Saved(NamedTuple):
    """What :func:`read_saved` returns."""

    version: int
    metadata: dict
    arrays: dict
    tokens: dict


def read_saved(directory, *, verify: bool = True) -> Saved:
    """:func:`read_arrays`, plus the format version and the tokens the arrays
    were saved with.

    The version is between ``OLDEST_VERSION`` and ``FORMAT_VERSION``; what it
    means for the arrays is the caller's business. The tokens come from the same manifest as the arrays, so passing them
    back to :func:`write_arrays` for the unchanged arrays makes re-saving an
    opened directory into itself cost only what changed.

    Returns
    -------
    Saved
        ``version`` (int), ``metadata`` and ``arrays`` as :func:`read_arrays`
        returns them, ``tokens``: name to the token recorded for that array
        (str or None).

    Raises
    ------
    ValueError
        As :func:`read_arrays`.
    """
    directory = Path(directory)
    for _ in range(_READ_ATTEMPTS - 1):
        raw = _manifest_bytes(directory)
        try:
            return _read_from(directory, raw, verify)
        except ValueError:
            # A writer may have replaced the manifest and deleted the files
            # this one listed while we were mapping them; only an unchanged
            # manifest means the damage is real.
            if _manifest_bytes_or_none(directory) == raw:
                raise
    return _read_from(directory, _manifest_bytes(directory), verify)


def _prepare_arrays(arrays, tokens) -> dict:
    """``{name: (array, token)}`` with every argument checked before any file
    is touched, arrays C-contiguous and little-endian."""
    if not isinstance(arrays, dict):
        raise ValueError(f"arrays must be a dict of name to array, got {type(arrays).__name__}")
    if tokens is None:
        tokens = {}
    if not isinstance(tokens, dict):
        raise ValueError(f"tokens must be a dict of name to string, got {type(tokens).__name__}")
    prepared = {}
    for name, value in arrays.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(f"array name {name!r} must be letters, digits and underscores only")
        if isinstance(value, np.ndarray):
            array = value
        else:
            try:
                array = np.asarray(value)
            except (TypeError, ValueError) as error:
                raise ValueError(f"array {name!r} must be a numpy array: {error}") from None
        if array.dtype.kind not in _STORABLE_KINDS:
            raise ValueError(f"array {name!r} must hold bool or numbers, got dtype {array.dtype}")
        token = tokens.get(name)
        if token is not None and not isinstance(token, str):
            raise ValueError(f"token of array {name!r} must be a string or None, got {type(token).__name__}")
        # np.ascontiguousarray would turn a 0-d array into shape (1,).
        prepared[name] = (np.asarray(array, dtype=array.dtype.newbyteorder("<"), order="C"), token)
    return prepared


def _make_directory(directory: Path) -> None:
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"scene directory {directory} exists and is not a directory")
    if directory.is_dir():
        return
    directory.mkdir(parents=True, exist_ok=True)
    # A new directory's own entry lives in its parent; without this a crash
    # could lose the whole directory after the save was acknowledged.
    fsync_directory(directory.parent)


@contextmanager
def writer_lock(directory: Path):
    """Hold the directory's writer lock; blocks while another writer holds it."""
    if fcntl is None:
        yield
        return
    descriptor = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def _previous_entries(directory: Path) -> dict:
    """The current manifest's array entries, or ``{}`` when there is no valid
    one: a damaged or foreign directory is simply written over."""
    raw = _manifest_bytes_or_none(directory)
    if raw is None:
        return {}
    try:
        manifest = _parse_manifest(directory, raw)
    except ValueError:
        return {}
    entries = {}
    for name, entry in manifest["arrays"].items():
        try:
            _check_entry(directory, name, entry)
        except ValueError:
            continue
        entries[name] = entry
    return entries


def _reusable_entry(directory: Path, entry, array: np.ndarray, token) -> dict | None:
    """The previous manifest's entry for this array when its file can be kept."""
    if entry is None or token is None or entry["token"] != token:
        return None
    if entry["dtype"] != array.dtype.str or tuple(entry["shape"]) != array.shape:
        return None
    try:
        size = os.stat(directory / entry["file"]).st_size
    except OSError:
        return None
    return dict(entry) if size == entry["bytes"] else None


def _write_array_file(directory: Path, name: str, array: np.ndarray, token, created: list) -> dict:
    """Write one array under a new unique name (temp file, fsync, rename)."""
    file_name = f"{name}.{uuid.uuid4().hex[:12]}.npy"
    final = directory / file_name
    temporary = directory / f"{file_name}.tmp"
    # Recorded before the file exists so a failure anywhere below removes it.
    created.append(temporary)
    with open(temporary, "wb") as stream:
        np.lib.format.write_array(stream, array, allow_pickle=False)
        stream.flush()
        os.fsync(stream.fileno())
        size = stream.tell()
    created.append(final)
    os.replace(temporary, final)
    return {
        "file": file_name,
        "dtype": array.dtype.str,
        "shape": list(array.shape),
        "bytes": size,
        "crc32": zlib.crc32(array),
        "token": token,
    }


def _replace_manifest(directory: Path, manifest: dict) -> None:
    temporary = directory / f"{MANIFEST}.{uuid.uuid4().hex[:12]}.tmp"
    try:
        # One line, by json's C encoder: indenting makes it take the pure-Python
        # one, 5 s for the manifest of a million named objects.
        text = json.dumps(manifest, separators=(",", ":"))
        with open(temporary, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, directory / MANIFEST)
    except BaseException:
        _remove_quietly(temporary)
        raise


def fsync_directory(directory: Path) -> None:
    """Make renames and creations in ``directory`` durable (no-op where
    directories cannot be opened, i.e. Windows)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        # Some file systems refuse fsync on directories; they order metadata
        # themselves, so there is nothing more to do.
        pass
    finally:
        os.close(descriptor)


def _remove_unreferenced(directory: Path, referenced: set) -> None:
    """Delete array files of earlier saves and temporaries of crashed ones.

    Runs under the writer lock, so no temporary file belongs to a live write.
    """
    with os.scandir(directory) as listing:
        names = [item.name for item in listing if item.is_file(follow_symlinks=False)]
    for name in names:
        if _TEMP_FILE.fullmatch(name) or (_ARRAY_FILE.fullmatch(name) and name not in referenced):
            _remove_quietly(directory / name)


def _remove_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        # Already gone, or undeletable: either way it is unreferenced garbage
        # that the next save retries.
        pass


def _damaged(directory: Path, problem: str) -> ValueError:
    return ValueError(f"scene directory {directory} is damaged: {problem}")


def _manifest_bytes_or_none(directory: Path) -> bytes | None:
    try:
        return (directory / MANIFEST).read_bytes()
    except OSError:
        return None


def _manifest_bytes(directory: Path) -> bytes:
    if not directory.exists():
        raise ValueError(f"scene directory {directory} does not exist")
    if not directory.is_dir():
        raise ValueError(f"scene directory {directory} is not a directory")
    path = directory / MANIFEST
    if not path.exists():
        raise ValueError(
            f"scene directory {directory} has no {MANIFEST} "
            "(not a saved scene, or its first save did not finish)"
        )
    try:
        return path.read_bytes()
    except OSError as error:
        raise _damaged(directory, f"cannot read {MANIFEST}: {error}") from None


def _parse_manifest(directory: Path, raw: bytes) -> dict:
    """The manifest as a dict, its format, version and top-level keys checked."""
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise _damaged(directory, f"{MANIFEST} is not UTF-8 text: {error}") from None
    except json.JSONDecodeError as error:
        raise _damaged(directory, f"{MANIFEST} is not valid JSON: {error}") from None
    if not isinstance(manifest, dict):
        raise _damaged(directory, f"{MANIFEST} is not a JSON object")
    if manifest.get("format") != FORMAT:
        raise ValueError(
            f"scene directory {directory} does not hold a {FORMAT!r} save: "
            f"{MANIFEST} says format {manifest.get('format')!r}"
        )
    version = manifest.get("version")
    valid_version = isinstance(version, int) and not isinstance(version, bool)
    if valid_version and version > FORMAT_VERSION:
        raise ValueError(
            f"scene directory {directory} was saved in format version {version}, "
            f"newer than this library reads (version {FORMAT_VERSION}); upgrade bvh to open it"
        )
    if not valid_version or version < OLDEST_VERSION:
        raise ValueError(
            f"scene directory {directory} has unsupported format version {version!r} "
            f"(this library reads versions {OLDEST_VERSION} to {FORMAT_VERSION})"
        )
    for key in ("metadata", "arrays"):
        if key not in manifest:
            raise _damaged(directory, f"{MANIFEST} has no {key!r}")
        if not isinstance(manifest[key], dict):
            raise _damaged(directory, f"{MANIFEST} {key!r} is not a JSON object")
    return manifest


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_entry(directory: Path, name, entry) -> np.dtype:
    """Check one manifest entry's fields; returns its dtype."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _damaged(directory, f"array name {name!r} is not letters, digits and underscores")
    if not isinstance(entry, dict):
        raise _damaged(directory, f"array {name!r} entry is not a JSON object")
    for key in _ENTRY_KEYS:
        if key not in entry:
            raise _damaged(directory, f"array {name!r} entry has no {key!r}")
    file_name = entry["file"]
    # The manifest is data from disk: a name that is not a plain file name
    # could make the reader map (and the writer delete) files elsewhere.
    if (
        not isinstance(file_name, str)
        or file_name in ("", ".", "..")
        or "/" in file_name
        or "\\" in file_name
        or "\0" in file_name
        or Path(file_name).name != file_name
    ):
        raise _damaged(directory, f"array {name!r} file name {file_name!r} is not a plain file name in the directory")
    try:
        dtype = np.dtype(entry["dtype"])
    except (TypeError, ValueError):
        raise _damaged(directory, f"array {name!r} has an unknown dtype {entry['dtype']!r}") from None
    # Only what write_arrays produces is accepted: little-endian (or
    # byte-order free) numbers, spelled as numpy spells them.
    if dtype.kind not in _STORABLE_KINDS or dtype.str != entry["dtype"] or dtype.str[0] not in "<|":
        raise _damaged(directory, f"array {name!r} has an unsupported dtype {entry['dtype']!r}")
    shape = entry["shape"]
    if not isinstance(shape, list) or not all(_is_count(extent) for extent in shape):
        raise _damaged(directory, f"array {name!r} has an invalid shape {shape!r}")
    if not _is_count(entry["bytes"]):
        raise _damaged(directory, f"array {name!r} has an invalid size {entry['bytes']!r}")
    crc = entry["crc32"]
    if not _is_count(crc) or crc >= 2**32:
        raise _damaged(directory, f"array {name!r} has an invalid crc32 {crc!r}")
    if entry["token"] is not None and not isinstance(entry["token"], str):
        raise _damaged(directory, f"array {name!r} has an invalid token {entry['token']!r}")
    return dtype


#: numpy parses a .npy header with ``ast.literal_eval``, and CPython 3.11 (seen
#: here on 3.11.7) can raise a spurious SystemError ("AST constructor recursion
#: depth mismatch", python/cpython#106905) when two threads build ASTs at once: a
#: scene opened on one worker thread while another opens a second one would
#: read as damaged. Loading one header at a time costs microseconds.
_HEADER_PARSING = threading.Lock()


def _read_from(directory: Path, raw: bytes, verify: bool) -> Saved:
    manifest = _parse_manifest(directory, raw)
    arrays = {}
    tokens = {}
    for name, entry in manifest["arrays"].items():
        dtype = _check_entry(directory, name, entry)
        arrays[name] = _map_array(directory, name, entry, dtype, verify)
        tokens[name] = entry["token"]
    return Saved(manifest["version"], manifest["metadata"], arrays, tokens)


def _map_array(directory: Path, name: str, entry: dict, dtype: np.dtype, verify: bool) -> np.ndarray:
    """One array, mapped read-only and checked against its manifest entry."""
    file_name = entry["file"]
    path = directory / file_name
    described = f"array {name!r} file {file_name}"
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        raise _damaged(directory, f"{described} is missing") from None
    except OSError as error:
        raise _damaged(directory, f"{described} cannot be read: {error}") from None
    if not path.is_file():
        raise _damaged(directory, f"{described} is not a regular file")
    if size != entry["bytes"]:
        raise _damaged(directory, f"{described} is {size} bytes, manifest says {entry['bytes']}")
    shape = tuple(entry["shape"])
    try:
        with _HEADER_PARSING:
            if math.prod(shape) > 0:
                array = np.load(path, mmap_mode="r", allow_pickle=False)
            else:
                # mmap cannot map zero bytes; an empty array costs nothing to read.
                array = np.load(path, allow_pickle=False)
                array.setflags(write=False)
    except Exception as error:
        # np.load reports a malformed header or body with many exception
        # types (ValueError, OSError, EOFError, SyntaxError...); all of them
        # mean the same thing here.
        raise _damaged(directory, f"{described} is not a readable .npy file ({error})") from None
    if array.dtype.str != dtype.str or array.shape != shape:
        raise _damaged(
            directory,
            f"{described} holds dtype {array.dtype.str!r} shape {array.shape}, "
            f"manifest says dtype {dtype.str!r} shape {shape}",
        )
    if not array.flags.c_contiguous:
        raise _damaged(directory, f"{described} is not stored in C order")
    if verify:
        crc = zlib.crc32(array)
        if crc != entry["crc32"]:
            raise _damaged(
                directory,
                f"{described} fails its checksum (crc32 {crc:#010x}, manifest says {entry['crc32']:#010x})",
            )
    return array
