"""Small file-system tools of the store: atomic files, advisory locks, the change token, process checks."""

import contextlib
import json
import logging
import mmap
import os
import random
import uuid
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from bvh.io.persistence import fsync_directory

try:
    import fcntl
except ImportError:
    # Without flock (Windows) edits are still serialised within one process;
    # run a single worker there.
    fcntl = None

log = logging.getLogger("service.store")


def utc_now() -> str:
    """The time now as ISO 8601 UTC with milliseconds (``2024-01-02T03:04:05.678Z``)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``path`` so that a crash leaves either the old file or the new one; on a full disk
    what was written of the new file goes and the old one stays."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temporary, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    fsync_directory(path.parent)


def write_json_atomically(path: Path, content: dict) -> None:
    """Write ``content`` as JSON to ``path`` (:func:`write_atomically`)."""
    write_atomically(path, json.dumps(content, indent=1).encode())


@contextlib.contextmanager
def file_lock(path: Path, blocking: bool = True):
    """An exclusive ``flock`` on ``path`` (created if missing), released on exit;
    yields whether it was taken (always, when ``blocking``)."""
    if fcntl is None:
        yield True
        return
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(descriptor)


def process_alive(pid: int) -> bool:
    """Whether a process of this id runs (this one does)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ChangeToken:
    """Eight bytes in ``<data_dir>/changes``, memory-mapped by every process of
    the data directory and set to a new random value after each change.

    A random value rather than a counter: two processes writing at once
    cannot both write the value a reader saw last. An aligned 8-byte store
    and load are single instructions, so a reader never sees half a token.
    Where the file cannot be mapped, :meth:`read` returns None and every
    request checks the manifest, as if the token had changed.
    """

    def __init__(self, path: Path):
        self._token = None
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                if os.fstat(descriptor).st_size < 8:
                    os.ftruncate(descriptor, 8)
                # Its block allocated now: a store to a mapped page that a full disk
                # cannot back is a SIGBUS, not an error (a sparse file on a full tmpfs).
                os.posix_fallocate(descriptor, 0, 8)
                self._token = np.frombuffer(mmap.mmap(descriptor, 8), np.uint64)
            finally:
                os.close(descriptor)
        except (OSError, ValueError) as error:
            log.warning("change token %s unavailable (%s): every request will stat its scene", path, error)

    def read(self) -> int | None:
        return None if self._token is None else int(self._token[0])

    def announce(self) -> None:
        """Tell every process of the data directory that something changed (call after the change)."""
        if self._token is not None:
            # Not os.urandom: a system call per edit. random reseeds in a forked child.
            self._token[0] = random.getrandbits(64)
