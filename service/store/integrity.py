"""Telling a torn journal tail from damage, and checking a checkpoint's arrays against their checksums.

A process killed while appending leaves a **torn tail**: the last record
incomplete, or failing its checksum, with nothing valid after it. It was
never acknowledged (an edit is answered once the sync that covers it
returns), so it is dropped, as it always was. Anything else that breaks the
journal is **damage**, and a scene whose journal is damaged is opened
read-only with the records before the damage (see ``SceneCache.open``):

- a record failing its checksum, or unreadable, with valid records after it;
- a record numbered out of sequence (records missing);
- a journal without a whole ``base`` record at its start (truncated below
  the position its checkpoint continues from), or one continuing a
  checkpoint newer than the one on disk;
- a missing journal where the checkpoint says there were records
  (``journal_seq`` > 0), or where a sync mark says one was synced;
- a journal shorter than its **sync mark** says, or whose whole records end
  before it: ``journal.synced`` beside the journal holds the journal's id
  (from its base record) and the offset up to which a sync has returned,
  written after each sync (:class:`SyncMark`). Acknowledged bytes are below
  it, so a truncation at any offset, or a damaged last record, below it is
  damage, not a torn tail. The mark is a lower bound: it is not synced
  itself, and a writer of another process may write a smaller one.

Checkpoints (``Scene.save`` directories) are checked array by array against
the CRC-32 their manifest records, on every path that opens a scene; a file
already checked is not read again while its identity (device, inode, size,
modification time) and its recorded checksum stay the same
(:class:`CheckpointVerifier`).
"""

import json
import os
import struct
import threading
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bvh.io.persistence import MANIFEST, read_saved

from . import journal
from .edits import BASE
from .journal import BODY, FRAME

#: Beside the journal: its id and the offset up to which a sync has returned (see the module notes).
SYNC_MARK_FILE = "journal.synced"
_MARK = struct.Struct("<16sQI")

#: Bytes of journal searched at a time for valid records after a damaged one.
_SEARCH_WINDOW = 1 << 22


def new_journal_id() -> str:
    """A fresh id for a journal file's base record (``id`` field), which its sync marks repeat."""
    return uuid.uuid4().hex


class SyncMark:
    """Writes a journal's sync mark (``journal.synced``): its id and the offset synced up to.

    Best effort: a mark that cannot be written (a full disk) only weakens
    the check, so errors are ignored.
    """

    def __init__(self, journal_path: str, journal_id: str | None):
        self.path = os.path.join(os.path.dirname(journal_path), SYNC_MARK_FILE)
        self.journal_id = journal_id
        self._descriptor = None

    def write(self, end: int) -> None:
        """Record that the journal is synced up to byte ``end`` (call after the sync returned)."""
        if self.journal_id is None:
            return
        head = bytes.fromhex(self.journal_id) + end.to_bytes(8, "little")
        try:
            if self._descriptor is None:
                self._descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
            os.pwrite(self._descriptor, _MARK.pack(head[:16], end, zlib.crc32(head)), 0)
        except OSError:
            pass

    def close(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None


def write_sync_mark(journal_path: str, journal_id: str | None, end: int) -> None:
    """Write a journal's sync mark once (after writing and syncing a new journal file whole)."""
    mark = SyncMark(journal_path, journal_id)
    mark.write(end)
    mark.close()


def read_sync_mark(journal_path: str) -> tuple[str, int] | None:
    """``(journal id, synced end)`` from the journal's sync mark; None when there is none or it is unreadable."""
    try:
        with open(os.path.join(os.path.dirname(journal_path), SYNC_MARK_FILE), "rb") as stream:
            data = stream.read(_MARK.size)
    except OSError:
        return None
    if len(data) != _MARK.size:
        return None
    identity, end, checksum = _MARK.unpack(data)
    if zlib.crc32(identity + end.to_bytes(8, "little")) != checksum:
        return None
    return identity.hex(), end


@dataclass(frozen=True)
class JournalDamage:
    """Where and how a journal is damaged.

    Attributes
    ----------
    path : str
        The journal file.
    offset : int
        The byte offset of the damage: where the first unreadable or
        misplaced byte is (for a truncation: where the file now ends).
    problem : str
        What is wrong there, in words.
    records_after : int
        Valid records found after the damage (lost unless the damage is repaired by hand).
    records_before : int
        Valid records (after the base record) before the damage: what the scene is opened with.
    """

    path: str
    offset: int
    problem: str
    records_after: int
    records_before: int

    def describe(self) -> str:
        return (f"journal {self.path}: {self.problem} (byte offset {self.offset}); {self.records_after} valid "
                f"record{'' if self.records_after == 1 else 's'} follow the damage")


@dataclass
class JournalFile:
    """A journal as read from disk, before it is judged against its checkpoint."""

    path: str
    data: bytes | None
    inode: int
    mark: tuple[str, int] | None

    @property
    def size(self) -> int:
        return 0 if self.data is None else len(self.data)


@dataclass
class JournalScan:
    """What a journal holds, judged against its checkpoint.

    Attributes
    ----------
    records : list of Record
        The whole records before any damage, its base record first (empty: no journal).
    end : int
        The offset after them.
    size, inode : int
        The file's size and inode (``-1``: no journal).
    damage : JournalDamage or None
    torn : int
        Bytes of a torn tail past ``end`` (dropped: never acknowledged).
    journal_id : str or None
        The ``id`` its base record carries (None for journals written before ids).
    """

    records: list = field(default_factory=list)
    end: int = 0
    size: int = 0
    inode: int = -1
    damage: JournalDamage | None = None
    torn: int = 0
    journal_id: str | None = None


def read_journal(path: str) -> JournalFile:
    """Read a journal and its sync mark (the mark first: a sync returning in between
    then only makes the journal read longer than the mark, never shorter)."""
    mark = read_sync_mark(path)
    try:
        with open(path, "rb") as stream:
            inode = os.fstat(stream.fileno()).st_ino
            data = stream.read()
    except FileNotFoundError:
        return JournalFile(path, None, -1, mark)
    return JournalFile(path, data, inode, mark)


def frame_offsets(data: bytes, count: int) -> list[int]:
    """Start offsets of the first ``count`` frames of ``data`` (whole records, as read)."""
    offsets, offset = [], 0
    for _ in range(count):
        offsets.append(offset)
        offset += FRAME.size + FRAME.unpack_from(data, offset)[0]
    return offsets


def scan_journal(found: JournalFile, checkpoint_seq: int) -> JournalScan:
    """Judge a journal read from disk against the checkpoint it continues (see the module notes).

    Parameters
    ----------
    found : JournalFile
    checkpoint_seq : int
        The last record the checkpoint holds (its ``journal_seq``).
    """
    path, data, mark = found.path, found.data, found.mark
    if data is None:
        scan = JournalScan()
        if checkpoint_seq > 0:
            return _damaged(scan, path, 0, f"the journal is missing, though the checkpoint holds records up to "
                                           f"{checkpoint_seq}", 0, 0)
        if mark is not None:
            return _damaged(scan, path, 0, "the journal is missing, though its sync mark says it was synced", 0, 0)
        return scan
    records, end = journal.read_records(data)
    scan = JournalScan(records=records, end=end, size=len(data), inode=found.inode)
    if not records or records[0].kind != BASE:
        problem = "the journal is empty" if not data else "the journal does not begin with a whole base record"
        return _damaged(scan, path, 0, problem + " (truncated or overwritten)",
                        len(records) + count_records_after(data, end if records else 0, -1), 0)
    base = records[0]
    scan.journal_id = base.fields.get("id")
    if base.seq > checkpoint_seq:
        return _damaged(scan, path, 0, f"the journal continues checkpoint {base.seq}, but the checkpoint on disk "
                                       f"holds records up to {checkpoint_seq} only", len(records) - 1, 0)
    for index in range(1, len(records)):
        if records[index].seq != base.seq + index:
            after = len(records) - index + count_records_after(data, end, records[-1].seq)
            return _damaged(scan, path, frame_offsets(data, index + 1)[index],
                            f"record {records[index].seq} follows record {base.seq + index - 1} (records are "
                            f"missing)", after, index - 1)
    whole = len(records) - 1
    synced = mark[1] if mark is not None and mark[0] == scan.journal_id else None
    if end < len(data):
        after = count_records_after(data, end, records[-1].seq)
        if after:
            return _damaged(scan, path, end, "a record fails its checksum or is unreadable", after, whole)
        if synced is not None and end < synced:
            problem = (f"the journal ends at byte {len(data)}, inside a record, though it was synced up to byte "
                       f"{synced} (it was truncated)" if len(data) < synced else
                       f"a record fails its checksum, though the journal was synced up to byte {synced}")
            return _damaged(scan, path, end, problem, 0, whole)
        scan.torn = len(data) - end
    elif synced is not None and len(data) < synced:
        return _damaged(scan, path, len(data), f"the journal ends there, though it was synced up to byte {synced} "
                                               f"(it was truncated)", 0, whole)
    return scan


def _damaged(scan: JournalScan, path: str, offset: int, problem: str, after: int, before: int) -> JournalScan:
    """``scan`` marked damaged at ``offset``, holding the ``before`` records (and the base) before it."""
    scan.records = scan.records[:before + 1] if scan.records and scan.records[0].kind == BASE else []
    scan.end = offset
    scan.damage = JournalDamage(path, offset, problem, after, before)
    return scan


def count_records_after(data: bytes, start: int, last_seq: int) -> int:
    """How many valid records numbered past ``last_seq`` lie in ``data`` after byte ``start``,
    found wherever they start (not only where the frame before them ends).

    Candidates are found with numpy over every byte offset (a plausible
    length, a number past ``last_seq``, a header starting with ``{``); only
    those are checksummed, so a long tail costs little.
    """
    count, offset, size = 0, start + 1, len(data)
    least = FRAME.size + BODY.size + 2
    while offset + least <= size:
        candidate = _next_candidate(data, offset, last_seq)
        if candidate is None:
            break
        records, end = journal.read_records(data, candidate)
        if records and records[0].seq > last_seq:
            count += len(records)
            last_seq = records[-1].seq
            offset = end
        else:
            offset = candidate + 1
    return count


def _next_candidate(data: bytes, start: int, last_seq: int) -> int | None:
    """The first offset from ``start`` where a frame could begin (see :func:`count_records_after`)."""
    size = len(data)
    least = FRAME.size + BODY.size + 2
    for window in range(start, size - least + 1, _SEARCH_WINDOW):
        count = min(_SEARCH_WINDOW, size - least + 1 - window)
        lengths = np.ndarray((count,), "<u4", buffer=data, offset=window, strides=(1,))
        seqs = np.ndarray((count,), "<u8", buffer=data, offset=window + FRAME.size, strides=(1,))
        opening = np.frombuffer(data, np.uint8, count, window + FRAME.size + BODY.size)
        positions = np.arange(window, window + count, dtype=np.int64)
        plausible = ((lengths >= BODY.size + 2) & (positions + FRAME.size + lengths <= size)
                     & (seqs > max(last_seq, -1)) & (seqs <= max(last_seq, 0) + size) & (opening == ord("{")))
        hits = np.flatnonzero(plausible)
        for hit in hits.tolist():
            offset = window + hit
            length, checksum = FRAME.unpack_from(data, offset)
            if zlib.crc32(memoryview(data)[offset + FRAME.size:offset + FRAME.size + length]) == checksum:
                return offset
    return None


class CheckpointVerifier:
    """Checks checkpoints' arrays against their recorded CRC-32, each file once.

    Array files are never changed in place (a save writes new files under
    new names), so a file whose identity and recorded checksum are those of
    one already checked is not read again: a follower reopening a scene
    after another worker's checkpoint reads only the arrays that changed.

    Parameters
    ----------
    limit : int
        Identities remembered; past it the memory starts afresh.
    """

    def __init__(self, limit: int = 100_000):
        self.limit = limit
        self._verified: set = set()
        self._guard = threading.Lock()

    def verify(self, directory: Path) -> bytes:
        """Check every array of the save in ``directory``; returns the manifest's bytes checked.

        Raises
        ------
        ValueError
            A damaged save, the message naming the array and its file.
        """
        directory = Path(directory)
        for _ in range(5):
            raw = _manifest_bytes(directory)
            saved = read_saved(directory, verify=False)
            try:
                entries = json.loads(raw)["arrays"]
            except (ValueError, KeyError, TypeError) as error:
                raise ValueError(f"scene directory {directory} is damaged: {MANIFEST} {error}") from None
            checked = []
            for name, array in saved.arrays.items():
                entry = entries.get(name)
                if entry is None:
                    break  # another manifest than ``raw``: read again
                status = os.stat(directory / entry["file"])
                key = (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, entry["crc32"])
                if key in self._verified:
                    continue
                crc = zlib.crc32(array)
                if crc != entry["crc32"]:
                    raise ValueError(f"scene directory {directory} is damaged: array {name!r} file {entry['file']} "
                                     f"fails its checksum (crc32 {crc:#010x}, manifest says {entry['crc32']:#010x})")
                checked.append(key)
            else:
                if _manifest_bytes(directory) == raw:
                    with self._guard:
                        if len(self._verified) + len(checked) > self.limit:
                            self._verified.clear()
                        self._verified.update(checked)
                    return raw
        raise ValueError(f"scene directory {directory} kept changing while it was checked")


def _manifest_bytes(directory: Path) -> bytes:
    try:
        return (directory / MANIFEST).read_bytes()
    except FileNotFoundError:
        raise ValueError(f"scene directory {directory} has no {MANIFEST}") from None


