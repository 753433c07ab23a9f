"""A scene's edit journal: a write-ahead log of length-prefixed, checksummed records.

An edit is applied in memory, appended here, and answered once the
``fdatasync`` that covers it has returned; edits that arrive while a sync
runs share the next one (group commit, as databases do: one sync makes many
edits durable, so throughput grows with the number of editors while each
edit waits for at most two syncs).

File layout (``scenes/<id>/journal``)::

    record = length u32 | crc32 u32 | body          (little-endian; crc of the body)
    body   = seq u64 | header length u32 | header | arrays
    header = JSON object: "kind", the record's fields, and "arrays":
             [[name, dtype, shape], ...] for the arrays that follow, C order

The first record of every journal file is a ``base`` record whose ``seq``
is the checkpoint (``Scene.save``) the journal continues: the records after
it are numbered ``base + 1, base + 2, ...``. A checkpoint writes a new file
starting at its own ``seq`` and replaces the old one by rename; a reader
that finds a base newer than what it has applied has missed records and
reopens the checkpoint.

A process killed while appending leaves a torn last record: it was never
acknowledged (the answer waits for the sync), so readers stop before it and
the next writer, holding the scene's file lock, cuts it off.
"""

import asyncio
import os
import struct
import threading
import zlib
from dataclasses import dataclass, field

import numpy as np
import orjson

from bvh.io.persistence import fsync_directory

JOURNAL_FILE = "journal"

_FRAME = struct.Struct("<II")
_BODY = struct.Struct("<QI")

#: Largest record body accepted when reading: a length beyond it is damage, not a record.
MAX_RECORD_BYTES = 1 << 31


@dataclass
class Record:
    """One journal record.

    Attributes
    ----------
    seq : int
        Its number: one more than the record before it.
    kind : str
        ``base`` for the first record of a file; otherwise an edit kind (see ``service.queries.editing``).
    fields : dict
        The header's JSON fields other than ``kind`` and ``arrays``.
    arrays : dict of str to numpy.ndarray
        Read-only views of the record's bytes.
    """

    seq: int
    kind: str
    fields: dict = field(default_factory=dict)
    arrays: dict = field(default_factory=dict)


def encode(seq: int, kind: str, fields: dict | None = None, arrays: dict | None = None) -> bytes:
    """A record's bytes, frame included."""
    arrays = arrays or {}
    contiguous = {name: np.ascontiguousarray(array) for name, array in arrays.items()}
    header = dict(fields or {}, kind=kind,
                  arrays=[[name, array.dtype.str, list(array.shape)] for name, array in contiguous.items()])
    header_bytes = orjson.dumps(header)
    body = b"".join([_BODY.pack(seq, len(header_bytes)), header_bytes]
                    + [array.tobytes() for array in contiguous.values()])
    return _FRAME.pack(len(body), zlib.crc32(body)) + body


def _decode(body: memoryview) -> Record:
    seq, header_length = _BODY.unpack_from(body)
    start = _BODY.size
    header = orjson.loads(body[start:start + header_length])
    position = start + header_length
    arrays = {}
    for name, dtype, shape in header.pop("arrays"):
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        arrays[name] = np.frombuffer(body, dtype, count, position).reshape(shape)
        position += count * dtype.itemsize
    if position != len(body):
        raise ValueError(f"record {seq} has {len(body) - position} bytes after its arrays")
    return Record(seq=seq, kind=header.pop("kind"), fields=header, arrays=arrays)


def read_records(data: bytes, offset: int = 0) -> tuple[list[Record], int]:
    """The whole records of ``data[offset:]`` and the offset after the last of them.

    Reading stops at the first incomplete or damaged record: a torn last
    record (a process killed while appending), or one another process is
    still writing.

    Returns
    -------
    (list of Record, int)
    """
    view = memoryview(data)
    records = []
    while offset + _FRAME.size <= len(view):
        length, checksum = _FRAME.unpack_from(view, offset)
        end = offset + _FRAME.size + length
        if length < _BODY.size or length > MAX_RECORD_BYTES or end > len(view):
            break
        body = view[offset + _FRAME.size:end]
        if zlib.crc32(body) != checksum:
            break
        try:
            record = _decode(body)
        except (ValueError, KeyError, TypeError, orjson.JSONDecodeError):
            break
        records.append(record)
        offset = end
    return records, offset


def read_file(path: str, offset: int = 0) -> tuple[list[Record], int, int, int]:
    """The whole records of a journal file from ``offset``.

    Returns
    -------
    (records, end, size, inode)
        ``end``: the offset after the last whole record; ``size`` the file's
        size when read (``end < size``: a torn or unfinished record follows).

    Raises
    ------
    FileNotFoundError
    """
    with open(path, "rb") as stream:
        inode = os.fstat(stream.fileno()).st_ino
        stream.seek(offset)
        data = stream.read()
    records, end = read_records(data)
    return records, offset + end, offset + len(data), inode


def write_new(path: str, records: list[bytes]) -> None:
    """Replace the journal at ``path`` by a file of ``records`` (the base first), atomically."""
    temporary = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(temporary, "wb") as stream:
        stream.write(b"".join(records))
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(temporary, path)
    fsync_directory(os.path.dirname(path))


def settle(future, failure: Exception | None) -> None:
    """Resolve a durability future (call on its loop): None on success, else the failure.
    A waiter that went away (a closed connection) cancelled it: left as it is."""
    if not future.done():
        if failure is None:
            future.set_result(None)
        else:
            future.set_exception(failure)


class JournalWriter:
    """The appending end of one journal file, with group commit.

    :meth:`append` runs under the scene's edit locks (one writer at a time)
    and wakes this writer's sync thread; :meth:`wait_durable` runs after
    they are released. The sync thread syncs everything written so far,
    again and again while there is more: edits appended while a sync runs
    share the next one, and an editor can do other work (rebuild what queries
    need) while its edit's sync runs.

    Parameters
    ----------
    path : str
    """

    def __init__(self, path: str):
        self.path = path
        self._descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.inode = os.fstat(self._descriptor).st_ino
        self._condition = threading.Condition()
        self._written = 0
        self._durable = 0
        self._failure: OSError | None = None
        self._closing = False
        #: ``(seq, loop, future)`` of coroutines waiting in :meth:`durable`.
        self._futures: list = []
        self.syncs = 0
        self._syncer = threading.Thread(target=self._sync_forever, name=f"journal sync {path}", daemon=True)
        self._syncer.start()

    def current(self) -> bool:
        """Whether ``path`` still names this writer's file (a checkpoint replaces it)."""
        try:
            return os.stat(self.path).st_ino == self.inode
        except FileNotFoundError:
            return False

    def cut(self, size: int) -> None:
        """Drop a torn tail past ``size`` (call with the scene's file lock held)."""
        if os.fstat(self._descriptor).st_size > size:
            os.ftruncate(self._descriptor, size)

    def append(self, record: bytes, seq: int) -> None:
        """Write a record (durable once :meth:`wait_durable` returns)."""
        written = os.write(self._descriptor, record)
        if written != len(record):
            # A full disk: the short write is a torn record, cut off by the next writer.
            raise OSError(f"journal {self.path}: wrote {written} of {len(record)} bytes")
        with self._condition:
            self._written = max(self._written, seq)
            self._condition.notify_all()

    def wait_durable(self, seq: int) -> None:
        """Return once record ``seq`` (appended by this writer) is on disk.

        Raises
        ------
        OSError
            When the sync failed: the edit may not be durable.
        """
        with self._condition:
            while self._durable < seq:
                if self._failure is not None:
                    raise OSError(f"journal {self.path}: sync failed: {self._failure}")
                self._condition.wait()

    async def durable(self, seq: int) -> None:
        """:meth:`wait_durable` for a coroutine: the event loop goes on meanwhile."""
        future = self.durable_future(seq)
        if future is not None:
            await future

    def durable_future(self, seq: int) -> "asyncio.Future | None":
        """A future of the running loop, done once record ``seq`` is on disk (its
        exception an OSError when the sync failed); None when it is already.

        Raises
        ------
        OSError
            When a sync failed before.
        """
        with self._condition:
            if self._durable >= seq:
                return None
            if self._failure is not None:
                raise OSError(f"journal {self.path}: sync failed: {self._failure}")
            loop = asyncio.get_running_loop()
            future = loop.create_future()
            self._futures.append((seq, loop, future))
        return future

    def _resolve_futures(self) -> None:
        """Wake the coroutines whose records are durable (or all, on a failure); call with the condition held."""
        waiting = []
        for seq, loop, future in self._futures:
            if self._failure is not None:
                loop.call_soon_threadsafe(settle, future, OSError(f"journal {self.path}: sync failed: "
                                                                   f"{self._failure}"))
            elif seq <= self._durable:
                loop.call_soon_threadsafe(settle, future, None)
            else:
                waiting.append((seq, loop, future))
        self._futures = waiting

    def _sync_forever(self) -> None:
        with self._condition:
            while True:
                while self._written <= self._durable and not self._closing:
                    self._condition.wait()
                if self._written <= self._durable:
                    return
                target = self._written
                self._condition.release()
                try:
                    os.fdatasync(self._descriptor)
                    failure = None
                except OSError as error:
                    failure = error
                finally:
                    self._condition.acquire()
                if failure is not None:
                    self._failure = failure
                    self._resolve_futures()
                    self._condition.notify_all()
                    return
                self._durable = max(self._durable, target)
                self.syncs += 1
                self._resolve_futures()
                self._condition.notify_all()

    def close(self) -> None:
        """Sync what was written (its waiters then return), stop the sync thread and close."""
        with self._condition:
            if self._closing:
                return
            self._closing = True
            self._condition.notify_all()
        self._syncer.join()
        os.close(self._descriptor)
