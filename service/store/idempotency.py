"""Exactly-once writes: idempotency keys recorded with the edits they made, and their first answers.

A client that retries a write (a dropped connection, a 503, a replica that
died after the journal write and before the answer) sends the same
``Idempotency-Key``; the service answers the retry with the first answer and
does not apply the write again.

Where a key is recorded, so that it is exactly as durable as its edit:

- a journaled edit (:mod:`service.store.edits`): in the edit's own record,
  field ``request``: ``{"key", "digest", "status", "answer", "at"}``. The
  record is written, synced and checksummed whole (:mod:`service.store.journal`),
  so the key is there exactly when the edit is. Followers (other workers, other
  replicas reading the object store's segments) replay the same records and
  so learn the same keys;
- when a checkpoint restarts the journal, the keys of the records it drops
  move to the new journal's ``base`` record (field ``keys``: a list of the
  same objects with their ``seq``);
- an edit saved as a checkpoint (adding meshes) also annotates its save with
  its key (annotation ``idempotency``), so a process killed between the save
  and the journal's restart still finds it;
- a new scene: its id is derived from the key (:func:`scene_id_for`), so a
  retried create finds the scene it made, on any replica; ``service.json``
  holds the request's digest.

A journal without these fields (written before them) reads as it always
did, with no keys; records with them read the same for older code, which
ignores fields it does not know.

A table per scene (:class:`KeyTable`) holds the keys of the last
``PICK_IDEMPOTENCY_RETENTION_S`` seconds, at most ``PICK_IDEMPOTENCY_KEYS``
of them and their answers within a byte bound, the oldest going first: a
retry later than that is a new write.
"""

import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import orjson

#: A key: 1 to 200 printable ASCII characters (space to tilde).
MAX_KEY_LENGTH = 200

#: Answers larger than this (as JSON) are not written into the journal with
#: their key: a retry that finds such a key after a restart learns that the
#: write was made, not its answer (:class:`Replayed` with ``answer`` None).
MAX_STORED_ANSWER_BYTES = 64 * 1024

#: The journal field of an edit record holding its key.
REQUEST_FIELD = "request"
#: The base record's field holding the keys of the records a checkpoint dropped.
KEYS_FIELD = "keys"
#: The checkpoint annotation of an edit saved as a checkpoint.
ANNOTATION = "idempotency"
#: The field of a scene's ``service.json`` holding the key and digest of the create that made it.
CREATED_FIELD = "idempotency"


def key_problem(key: str) -> str | None:
    """What is wrong with an idempotency key, in words; None when it is good."""
    if not 1 <= len(key) <= MAX_KEY_LENGTH:
        return f"must be 1 to {MAX_KEY_LENGTH} characters, got {len(key)}"
    bad = next((char for char in key if not " " <= char <= "~"), None)
    if bad is not None:
        return f"must be printable ASCII characters, got {bad!r} at {key.index(bad)}"
    return None


@dataclass(frozen=True)
class RequestKey:
    """A client's idempotency key for one write, and what the write is.

    Attributes
    ----------
    key : str
        The client's key (checked with :func:`key_problem`).
    operation : str
        The write's method and route (``"PATCH /scenes/{scene_id}/objects"``),
        or the live channel's message type: the same key on another
        operation is another request.
    """

    key: str
    operation: str

    def digest(self, *parts) -> str:
        """A digest of this operation with ``parts`` (bytes, str, numpy arrays or JSON data):
        what tells a repeat of the request from another request under the same key."""
        hasher = hashlib.sha256(self.operation.encode())
        for part in parts:
            if isinstance(part, np.ndarray):
                part = np.ascontiguousarray(part)
                hasher.update(f"\0{part.dtype.str}{part.shape}".encode())
                hasher.update(part.tobytes())
                continue
            if isinstance(part, str):
                part = part.encode()
            elif not isinstance(part, (bytes, bytearray, memoryview)):
                part = orjson.dumps(part, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY)
            hasher.update(b"\0" + len(part).to_bytes(8, "little"))
            hasher.update(part)
        return hasher.hexdigest()


def record_digest(request: RequestKey, kind: str, fields: dict, arrays: dict) -> str:
    """The digest of a journal record's request: its operation, kind, fields and arrays."""
    return request.digest(kind, fields, *(part for name in sorted(arrays) for part in (name, arrays[name])))


def scene_id_for(request: RequestKey) -> str:
    """The id of the scene a keyed create makes (32 hex digits, as every scene id):
    a retry makes the same id and finds the scene there."""
    return hashlib.sha256(b"bvh-pick scene\0" + request.key.encode()).hexdigest()[:32]


@dataclass
class KeyEntry:
    """A key recorded with the write it made.

    Attributes
    ----------
    key, digest : str
    status : int
        The first answer's HTTP status.
    answer : JSON data or None
        The first answer's body (None: empty, as a 204's, or not kept: see ``kept``).
    seq : int
        The journal record (or checkpoint) that made the write.
    at : float
        Wall-clock seconds of the write (the retention window counts from it).
    kept : bool
        False when the answer was too large to keep (:data:`MAX_STORED_ANSWER_BYTES`).
    """

    key: str
    digest: str
    status: int
    answer: object
    seq: int
    at: float
    kept: bool = True
    #: Bytes this entry holds, about (its answer as JSON and the rest).
    size: int = field(init=False, repr=False)

    def __post_init__(self):
        self.size = len(self.key) + 128 + (len(orjson.dumps(self.answer)) if self.answer is not None else 0)

    def fields(self, with_seq: bool = False) -> dict:
        """As the journal holds it."""
        entry = {"key": self.key, "digest": self.digest, "status": self.status, "at": self.at}
        if self.kept:
            entry["answer"] = self.answer
        if with_seq:
            entry["seq"] = self.seq
        return entry

    @classmethod
    def of(cls, fields: dict, seq: int) -> "KeyEntry":
        return cls(key=str(fields["key"]), digest=str(fields["digest"]), status=int(fields["status"]),
                   answer=fields.get("answer"), seq=int(fields.get("seq", seq)), at=float(fields["at"]),
                   kept="answer" in fields)

    @classmethod
    def made(cls, request: RequestKey, digest: str, status: int, answer, seq: int) -> "KeyEntry":
        """The entry of a write made now; an answer too large to journal is not kept."""
        kept = answer is None or len(orjson.dumps(answer, option=orjson.OPT_SERIALIZE_NUMPY)) \
            <= MAX_STORED_ANSWER_BYTES
        if kept and answer is not None:
            # As the journal gives it back: numpy values become plain JSON.
            answer = orjson.loads(orjson.dumps(answer, option=orjson.OPT_SERIALIZE_NUMPY))
        return cls(request.key, digest, status, answer if kept else None, seq, time.time(), kept)


@dataclass(frozen=True)
class KeyPolicy:
    """How long and how many keys a scene remembers.

    Attributes
    ----------
    retention_seconds : float
        A retry later than this after the first write is a new write.
    max_keys : int
        Keys remembered per scene; past it the oldest are forgotten.
    max_bytes : int
        Bytes of keys and answers remembered per scene; past it the oldest are forgotten.
    """

    retention_seconds: float = 24 * 3600.0
    max_keys: int = 10_000
    max_bytes: int = 16 << 20


class KeyReused(Exception):
    """A key already recorded with another request (422)."""

    def __init__(self, key: str):
        super().__init__(f"idempotency key reused with a different request: {key[:80]!r} was first sent "
                         "with another body or to another operation")


class Replayed(Exception):
    """The write was made before under this key: answer its first answer, apply nothing.

    Attributes
    ----------
    entry : KeyEntry
    writer : JournalWriter or None
        When the first write is this process's and may not be durable yet:
        wait for it to commit record ``entry.seq`` before answering.
    """

    def __init__(self, entry: KeyEntry, writer=None, scene_id: str | None = None):
        super().__init__(f"idempotency key {entry.key[:80]!r} was applied as edit {entry.seq}")
        self.entry = entry
        self.writer = writer if writer is not None and writer.last_appended >= entry.seq else None
        #: For a create: the scene it made (its answer is that scene as it is now).
        self.scene_id = scene_id


@dataclass
class KeyTable:
    """The keys one scene remembers, oldest first.

    Parameters
    ----------
    policy : KeyPolicy
    """

    policy: KeyPolicy = field(default_factory=KeyPolicy)
    entries: OrderedDict = field(default_factory=OrderedDict)
    #: Bytes the entries hold (``KeyEntry.size``).
    held: int = 0

    def __len__(self) -> int:
        return len(self.entries)

    def find(self, key: str, digest: str) -> KeyEntry | None:
        """The entry of ``key`` if it is within the window.

        Raises
        ------
        KeyReused
            It is there with another digest.
        """
        entry = self.entries.get(key)
        if entry is None or time.time() - entry.at > self.policy.retention_seconds:
            return None
        if entry.digest != digest:
            raise KeyReused(key)
        return entry

    def add(self, entry: KeyEntry) -> None:
        """Remember ``entry``, forgetting what is past the window or the bound."""
        replaced = self.entries.pop(entry.key, None)
        if replaced is not None:
            self.held -= replaced.size
        self.entries[entry.key] = entry
        self.held += entry.size
        horizon = time.time() - self.policy.retention_seconds
        while self.entries:
            oldest = next(iter(self.entries.values()))
            if (len(self.entries) <= self.policy.max_keys and self.held <= self.policy.max_bytes
                    and oldest.at >= horizon):
                break
            self.entries.popitem(last=False)
            self.held -= oldest.size

    def learn(self, records) -> None:
        """Remember the keys journal ``records`` hold (a base record's list, an edit record's own)."""
        for record in records:
            for fields in record.fields.get(KEYS_FIELD) or ():
                self.add(KeyEntry.of(fields, record.seq))
            request = record.fields.get(REQUEST_FIELD)
            if request is not None:
                self.add(KeyEntry.of(request, record.seq))

    def learn_annotation(self, annotations: dict) -> None:
        """Remember the key a checkpoint's annotation holds (an edit saved as a checkpoint)."""
        fields = annotations.get(ANNOTATION)
        if isinstance(fields, dict) and fields.get("key") not in self.entries:
            self.add(KeyEntry.of(fields, 0))

    def through(self, seq: int) -> list[dict]:
        """The entries of records up to ``seq``, for a base record continuing that checkpoint."""
        horizon = time.time() - self.policy.retention_seconds
        return [entry.fields(with_seq=True) for entry in self.entries.values()
                if entry.seq <= seq and entry.at >= horizon]


@dataclass(frozen=True)
class KeyedWrite:
    """A write sent with an idempotency key, as the store records it.

    Attributes
    ----------
    request : RequestKey
    status : int
        The HTTP status it answers with.
    answer : callable(change, view) -> JSON data or None
        Its answer's body, made from what the edit changed and the view it
        published (the same call the route makes, so the recorded answer is
        the one sent); for an edit saved as a checkpoint, ``answer(result, None)``.
    """

    request: RequestKey
    status: int
    answer: object = None
    #: The request's digest when the store does not make it from a journal record.
    digest: str | None = None

    def answer_of(self, change, view):
        return None if self.answer is None else self.answer(change, view)
