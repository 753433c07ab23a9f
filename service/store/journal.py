"""A scene's edit journal: a write-ahead log of length-prefixed, checksummed records.

An edit is applied in memory, appended to its scene's journal and answered
once it is durable (:mod:`service.store.journal_writer`: group commit to a
file synced with ``fdatasync``, or to segments in an object store).

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
the next writer, holding the scene's file lock, cuts it off. Anything else
that breaks a journal is damage (:mod:`service.store.integrity`): the scene
is then opened read-only and its journal left as it is.
"""

import os
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson

from .files import write_atomically

JOURNAL_FILE = "journal"

#: A record's frame: body length, CRC-32 of the body.
FRAME = struct.Struct("<II")
#: The start of a record's body: its number, its header's length.
BODY = struct.Struct("<QI")

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
    body = b"".join([BODY.pack(seq, len(header_bytes)), header_bytes]
                    + [array.tobytes() for array in contiguous.values()])
    return FRAME.pack(len(body), zlib.crc32(body)) + body


def _decode(body: memoryview) -> Record:
    seq, header_length = BODY.unpack_from(body)
    start = BODY.size
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
    while offset + FRAME.size <= len(view):
        length, checksum = FRAME.unpack_from(view, offset)
        end = offset + FRAME.size + length
        if length < BODY.size or length > MAX_RECORD_BYTES or end > len(view):
            break
        body = view[offset + FRAME.size:end]
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
    write_atomically(Path(path), b"".join(records))
