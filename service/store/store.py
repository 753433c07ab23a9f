"""The scene store: scenes in memory, each saved under ``PICK_DATA_DIR``.

Layout of the data directory::

    scenes/<id>/scene/         the checkpoint: Scene.save output (manifest.json last, crash-safe)
    scenes/<id>/journal        edits since the checkpoint (see service.store.journal)
    scenes/<id>/service.json   {"id", "name", "created", "build_ms"}, written once
    scenes/<id>/edit.lock      advisory lock: one writer at a time, across processes
    staging/<pid>-<id>/        a new scene being written; renamed into scenes/ whole
    trash/<id>-<random>/       a deleted scene, renamed out of scenes/ whole
    changes                    8 bytes, rewritten after every change (see ChangeToken)

Crash safety: a new scene is written completely under ``staging/`` and then
renamed into ``scenes/`` (one atomic rename, then an fsync of ``scenes/``),
so every directory under ``scenes/`` is a complete scene. An edit of the
object table (moves, flags, names, added instances and shapes, removals) or
of a mesh's vertices is a journal record (:mod:`service.store.edits`), answered
once the sync that covers it returns (group commit); the checkpoint
(``Scene.save``, which switches manifests atomically, with the journal
sequence number it includes) is written in the background after
``PICK_CHECKPOINT_RECORDS`` records or ``PICK_CHECKPOINT_SECONDS``, and the
journal then restarts after it. Adding meshes saves a checkpoint at once (a
replay would have to rebuild their trees). Opening a scene replays the
journal past its checkpoint. Leftovers of a crash (staging directories of
dead processes, trash) are removed at start-up.

With ``PICK_STORE=s3://bucket/prefix`` scenes live in an object store
instead and this layout is each process's private cache of them (see
:mod:`service.store.remote`, which builds on this class).

Scene ids are 32 lowercase hex digits (uuid4); an id from a URL is checked
against that pattern before it is used in any path.

Several worker processes (``PICK_WORKERS``) share one data directory. Each
opens the scenes by memory map (the page cache holds one copy of the mesh
arrays for all) and follows the others' edits in the journal: a ``stat`` of
it tells whether it grew (apply the new records) or was replaced by a
checkpoint (read the new file; when it starts past what this process has,
reopen the checkpoint); a missing directory means "deleted", and an id that
is not in memory is looked up on disk. The ``stat`` costs more than a
pick's other bookkeeping, so a request makes it only when the shared change
token (:class:`ChangeToken`, ``changes`` in the data directory) has changed
since the scene was last checked, or that check is older than
:data:`RECHECK_SECONDS`. Edits hold ``edit.lock`` (``flock``) while they
catch up with the journal, apply and append, so two workers never lose each
other's edits and number their records in one sequence.

Queries and edits: a query runs on the scene's immutable snapshot (see
``bvh.scene``). An edit groups its changes under the scene's lock and then
publishes a new :class:`SceneView` (the object table the routes answer with)
before the snapshot is rebuilt, so a query that reads the view, intersects,
and finds the same view afterwards saw one consistent state
(:meth:`StoredScene.consistent`).
"""

import asyncio
import collections
import contextlib
import json
import logging
import mmap
import os
import queue
import random
import re
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, TypeVar

import numpy as np

import bvh
from bvh.io.persistence import fsync_directory

from . import edits, journal
from ..ops.memory import return_free_memory
from .edits import Change
from .journal import JOURNAL_FILE, JournalWriter, Record
from starlette.concurrency import run_in_threadpool
from .views import ObjectTable

try:
    import fcntl
except ImportError:
    # Without flock (Windows) edits are still serialised within one process;
    # run a single worker there.
    fcntl = None

log = logging.getLogger("service.store")

SCENE_ID = re.compile(r"[0-9a-f]{32}")
SERVICE_FILE = "service.json"
SCENE_DIR = "scene"
EDIT_LOCK = "edit.lock"
MANIFEST = "manifest.json"
#: The annotation of a checkpoint (``Scene.save``) naming the last journal record it holds.
JOURNAL_SEQ = "journal_seq"

#: A scene in memory is checked against its manifest at least this often even
#: when the change token stayed the same: a process killed between a save and
#: its new token must not leave the other workers stale for ever.
RECHECK_SECONDS = 1.0

CHANGE_TOKEN_FILE = "changes"

Result = TypeVar("Result")


class SceneNotFound(LookupError):
    """No scene with this id (or the id is not a scene id at all)."""

    def __init__(self, scene_id: str):
        shown = scene_id if len(scene_id) <= 64 else scene_id[:61] + "..."
        super().__init__(f"no scene {shown!r}")


class SceneDamaged(SceneNotFound):
    """A scene directory that cannot be read (logged; answered like an unknown scene)."""

    def __init__(self, scene_id: str, reason: str):
        LookupError.__init__(self, f"no scene {scene_id!r}: its saved directory is damaged")
        log.error("skipping damaged scene directory %s: %s", scene_id, reason)


@dataclass(frozen=True)
class SceneView:
    """The object table of a scene at one moment, as the routes report it.

    Attributes
    ----------
    objects : ObjectTable
        Live objects by id (``bvh.ObjectInfo``).
    mesh_arrays : dict of int to (vertices (V, 3), faces (F, 3))
        Each mesh's arrays; a vertex update replaces its mesh's entry.
    version : int
        The journal sequence number of the last edit this view includes.
    """

    objects: ObjectTable
    mesh_arrays: dict
    version: int = 0

    @property
    def triangles(self) -> int:
        """Triangles over the live objects, counting each instance (worked out on first use)."""
        return self.objects.triangles

    @property
    def bounds(self) -> np.ndarray:
        """(2, 3) float64 world box of the live objects, NaN when empty (worked out on first use)."""
        return self.objects.bounds


@dataclass
class StoredScene:
    """One scene: the ``bvh.Scene``, its metadata and where it is saved.

    Attributes
    ----------
    id, name, created, build_ms
        Metadata from ``service.json``.
    scene : bvh.Scene
    directory : Path
        ``scenes/<id>``.
    view : SceneView
        Replaced (never changed) by each edit.
    seq : int
        The journal sequence number of the last edit applied in memory.
    journal_inode, journal_end : int
        The journal file this process follows and the offset after the last
        record it has applied; a ``stat`` that differs means another process
        changed the scene.
    checkpoint_seq : int
        The last sequence number known to be in the checkpoint.
    pending_since : float or None
        ``time.monotonic()`` of this process's first edit not yet checkpointed.
    writer : JournalWriter or None
        Appends this process's edits (opened on its first edit).
    checked_token, recheck_at : int or None, float
        The change token when the journal was last found unchanged, and the
        ``time.monotonic()`` after which it is stat'ed again regardless.
    """

    id: str
    name: str | None
    created: str
    build_ms: float
    scene: bvh.Scene
    directory: Path
    view: SceneView | None = None
    seq: int = 0
    journal_inode: int = -1
    journal_end: int = 0
    checkpoint_seq: int = 0
    pending_since: float | None = None
    writer: JournalWriter | None = None
    checked_token: int | None = None
    recheck_at: float = 0.0
    journal_path: str = ""

    def __post_init__(self):
        self.journal_path = os.path.join(self.directory, JOURNAL_FILE)

    @property
    def mesh_arrays(self) -> dict:
        return self.view.mesh_arrays

    def publish(self, change: Change | None = None, new_meshes: bool = True) -> None:
        """Take a new :class:`SceneView` (call with the scene's lock held, after changing it).

        ``change``: what changed since the last view (only those objects are
        read again); None reads the whole table. ``new_meshes``: whether
        meshes may have been added.
        """
        scene = self.scene
        previous = self.view
        mesh_arrays = dict(previous.mesh_arrays) if previous is not None else {}
        if change is not None and change.mesh is not None:
            mesh_arrays[change.mesh] = (scene.mesh_vertices(change.mesh), scene.mesh_faces(change.mesh))
        if new_meshes or previous is None:
            for info in scene.meshes:
                if info.id not in mesh_arrays:
                    mesh_arrays[info.id] = (scene.mesh_vertices(info.id), scene.mesh_faces(info.id))
        if previous is None or change is None:
            objects = ObjectTable.of(scene)
        else:
            objects = previous.objects.changed(scene, change.objects)
        self.view = SceneView(objects=objects, mesh_arrays=mesh_arrays, version=self.seq)

    def consistent(self, query: Callable[[bvh.Scene], Result]) -> tuple[Result, SceneView]:
        """Run a query and return it with the view of the same scene state.

        An edit publishes its view inside the scene's batch (:meth:`SceneStore._stage`),
        so the view read with the scene's lock held matches the state the
        query is pinned to (``bvh.Scene.pinned``); edits landing while it runs
        change neither, and wait for nothing.
        """
        with self.scene.pinned(lambda: self.view) as view:
            return query(self.scene), view


def _scene_lock(scene: bvh.Scene):
    # Several edits as one change, and other editors wait. The store's blocks
    # are short: a query that needs the change's snapshot waits for the block
    # rather than the block bringing the previous one up to date first.
    return scene.batch(answering=False)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_json_atomically(path: Path, content: dict) -> None:
    """Write ``path`` so that a crash leaves either the old file or the new one."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    with open(temporary, "wb") as stream:
        stream.write(json.dumps(content, indent=1).encode())
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(temporary, path)
    fsync_directory(path.parent)


@contextlib.contextmanager
def _file_lock(path: Path, blocking: bool = True):
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


#: Seconds between two trims of the C heap (``service.ops.memory``) while edits come.
TRIM_SECONDS = 5.0


def _journal_position(stored: "StoredScene") -> tuple[int, int] | None:
    """``(inode, size)`` of the scene's journal now: ``(-1, 0)`` when it has none
    yet (a scene saved before journals), None when the scene is gone."""
    try:
        status = os.stat(stored.journal_path)
        return status.st_ino, status.st_size
    except FileNotFoundError:
        return (-1, 0) if (stored.directory / SERVICE_FILE).exists() else None


@dataclass
class _Staged:
    """An edit applied and appended, not yet known durable."""

    stored: "StoredScene"
    change: Change
    view: "SceneView"
    writer: JournalWriter
    seq: int


#: Edits of up to this many objects may be applied on the event loop (see :meth:`SceneStore.record_soon`).
SMALL_EDIT_OBJECTS = 64

#: How long a small edit waits on the event loop before it tries a taken scene lock again.
LOCKED_RETRY_SECONDS = 0.0005


@dataclass
class _EditGroup:
    """Small edits that arrived on the event loop together, applied as one.

    A group of object edits keeps gathering until its turn comes; its
    records touch disjoint objects (an edit of an object already in the
    group starts the next group), so each editor's answer describes its
    objects as its own edit left them. Any other small edit is a group of
    its own (``mergeable`` False)."""

    mergeable: bool
    records: list = field(default_factory=list)
    futures: list = field(default_factory=list)
    ids: set = field(default_factory=set)


def _record_ids(record: Record) -> set:
    return set(record.arrays["moved"].tolist()) | {entry["id"] for entry in record.fields.get("changes", [])}


def _fail(futures: list, error: BaseException) -> None:
    """Give every waiting future of ``futures`` the exception ``error``."""
    for future in futures:
        if not future.done():
            future.set_exception(error)


def record_size(record: Record) -> int:
    """How many objects a record of the object table touches: what applying it costs."""
    if record.kind == edits.OBJECTS:
        return record.arrays["moved"].shape[0] + len(record.fields.get("changes", []))
    return len(record.fields.get("objects") or record.fields.get("ids") or [])


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


def _merged_moves(items: list) -> list:
    """``(scene id, view, change)`` items with each run of ``moved`` changes
    of one scene, queued back to back, made one: its objects' JSON from the
    run's last view, at that view's version.

    Editors dragging objects at 60 Hz each make thousands of moves a second;
    one event per move is one frame per move to every client of the scene
    (32 editors: some 60,000 frames a second, which a process cannot send
    and still answer picks). When the event thread falls behind, the moves
    waiting for it go out together, which is what a client would make of
    them (the newest JSON of each object; versions only grow); while it
    keeps up, each move is its own event, as before.
    """
    runs = []  # [scene id, view, change, the run's object ids (a dict, for their order) or None]
    for scene_id, view, change in items:
        moves = change.event == "moved" and change.mesh is None
        if moves and runs and runs[-1][3] is not None and runs[-1][0] == scene_id:
            runs[-1][1] = view
            runs[-1][3].update(dict.fromkeys(change.objects))
            continue
        runs.append([scene_id, view, change, dict.fromkeys(change.objects) if moves else None])
    return [(scene_id, view, change if ids is None else Change("moved", list(ids)))
            for scene_id, view, change, ids in runs]


class SceneStore:
    """Every scene of one data directory, in memory and on disk.

    Parameters
    ----------
    data_dir : Path
        Created if missing.
    checkpoint_records, checkpoint_seconds : int, float
        A scene's checkpoint is written in the background once this process
        has journaled this many edits since the last one, or the oldest of
        them is this old.
    """

    def __init__(self, data_dir: Path, checkpoint_records: int = 10_000, checkpoint_seconds: float = 30.0):
        self.data_dir = Path(data_dir)
        self.scenes_dir = self.data_dir / "scenes"
        self.staging_dir = self.data_dir / "staging"
        self.trash_dir = self.data_dir / "trash"
        for directory in (self.scenes_dir, self.staging_dir, self.trash_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self._scenes: dict[str, StoredScene] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self.changes = ChangeToken(self.data_dir / CHANGE_TOKEN_FILE)
        self.checkpoint_records = checkpoint_records
        self.checkpoint_seconds = checkpoint_seconds
        #: Called as ``on_change(scene_id, event)`` after each edit, this process's
        #: (once durable) and other processes' (once followed), from the store's
        #: event thread; events are described in ``service.live``.
        self.on_change: Callable[[str, dict], None] | None = None
        #: Whether anyone listens to a scene's events (None: assume so); an
        #: event of a scene nobody listens to is not made at all.
        self.listened: Callable[[str], bool] | None = None
        self._events: queue.SimpleQueue = queue.SimpleQueue()
        self._event_thread: threading.Thread | None = None
        #: Per scene, the small edits waiting on the event loop, groups in
        #: arrival order (see :meth:`record_soon`).
        self._queues: dict[str, collections.deque] = {}
        self._checkpoint_wake = threading.Event()
        self._trimmed = time.monotonic()
        self._checkpoint_thread: threading.Thread | None = None
        #: Per scene, held through a checkpoint: one at a time (see :meth:`checkpoint`).
        self._checkpointing: dict[str, threading.Lock] = {}
        self._closed = False
        #: Set once start-up has opened the saved scenes and warmed the pick path (see ``service.app``).
        self.ready = False
        #: What start-up is doing while not ready, in words for ``/ready``.
        self.waiting_for = "opening the saved scenes"
        #: What is still compiling in the background once ready (None: nothing).
        self.compiling: str | None = None

    def close(self) -> None:
        """Write the checkpoints still due, stop the background threads and close
        the journals. The store may be used again after (they start again)."""
        self._closed = True
        self._checkpoint_wake.set()
        if self._checkpoint_thread is not None:
            self._checkpoint_thread.join()
        if self._event_thread is not None:
            self._events.put(None)
            self._event_thread.join()
        for stored in list(self._scenes.values()):
            writer, stored.writer = stored.writer, None
            if writer is not None:
                writer.close()
        self._checkpoint_thread = self._event_thread = None
        self._checkpoint_wake.clear()
        self._closed = False

    # ------------------------------------------------------------ start-up
    def open_all(self) -> list[str]:
        """Open every saved scene; a damaged one is skipped with a log line.

        Returns
        -------
        list of str
            The ids of the scenes that were skipped.
        """
        self._remove_leftovers()
        skipped = []
        for entry in sorted(os.scandir(self.scenes_dir), key=lambda e: e.name):
            if not SCENE_ID.fullmatch(entry.name):
                log.warning("ignoring %s in %s: not a scene id", entry.name, self.scenes_dir)
                continue
            try:
                self._scenes[entry.name] = self._open(entry.name, verify=True)
            except (ValueError, OSError) as error:
                log.error("skipping damaged scene directory %s: %s", entry.path, error)
                skipped.append(entry.name)
        return skipped

    def _remove_leftovers(self) -> None:
        for entry in os.scandir(self.staging_dir):
            owner = entry.name.split("-", 1)[0]
            if owner.isdigit() and _process_alive(int(owner)):
                continue
            log.info("removing %s, left by a process that stopped while writing it", entry.path)
            shutil.rmtree(entry.path, ignore_errors=True)
        for entry in os.scandir(self.trash_dir):
            shutil.rmtree(entry.path, ignore_errors=True)

    def _open(self, scene_id: str, verify: bool) -> StoredScene:
        """Read a scene: its checkpoint, then the journal's records past it."""
        directory = self.scenes_dir / scene_id
        try:
            metadata = json.loads((directory / SERVICE_FILE).read_text())
        except (OSError, ValueError) as error:
            raise ValueError(f"{SERVICE_FILE} is unreadable: {error}") from None
        if not isinstance(metadata, dict) or metadata.get("id") != scene_id:
            raise ValueError(f"{SERVICE_FILE} does not describe scene {scene_id}")
        journal_path = os.path.join(directory, JOURNAL_FILE)
        # The journal is read before the checkpoint: a checkpoint written in
        # between is newer than the journal read, never older.
        try:
            records, end, _, inode = journal.read_file(journal_path)
        except FileNotFoundError:
            records, end, inode = [], 0, -1
        scene = bvh.Scene.open(directory / SCENE_DIR, verify=verify)
        checkpoint = int(scene.annotations.get(JOURNAL_SEQ, 0))
        stored = StoredScene(id=scene_id, name=metadata.get("name"), created=str(metadata.get("created", "")),
                             build_ms=float(metadata.get("build_ms", 0.0)), scene=scene, directory=directory,
                             seq=checkpoint, checkpoint_seq=checkpoint)
        if records and records[0].kind == edits.BASE and records[0].seq <= checkpoint:
            replayed = self._replay(stored, records[1:])
            if replayed:
                log.info("scene %s: %d journaled edits replayed past its checkpoint", scene_id, replayed)
            stored.journal_inode, stored.journal_end = inode, end
        else:
            # No journal yet (a scene saved before journals), or one restarted
            # by a checkpoint this read missed: the next edit starts a new one.
            stored.journal_inode, stored.journal_end = -1, 0
        with _scene_lock(scene):
            stored.publish()
        # Its snapshot is built by its first query: a start-up opening the saved
        # scenes must not compile the pick kernel ahead of the warm-up's plan.
        return stored

    def _replay(self, stored: StoredScene, records: list[Record]) -> int:
        """Apply the records after ``stored.seq`` (in order, without gaps); returns how many.

        Runs of object edits are applied as one (``edits.folded``): thousands
        of journaled moves replay in one vectorised edit.
        """
        fresh = [record for record in records if record.seq > stored.seq]
        for expected, record in enumerate(fresh, start=stored.seq + 1):
            if record.seq != expected:
                raise ValueError(f"journal record {record.seq} follows {expected - 1}: records are missing")
        for record in edits.folded(fresh):
            try:
                with _scene_lock(stored.scene):
                    edits.apply(stored.scene, record)
                    stored.seq = record.seq
                    stored.scene.annotate(JOURNAL_SEQ, record.seq)
            except (ValueError, LookupError) as error:
                raise ValueError(f"journal record {record.seq} ({record.kind}) does not apply: {error}") from None
        return len(fresh)

    # ------------------------------------------------------------ lookups
    def _lock_for(self, scene_id: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(scene_id, threading.Lock())

    def get(self, scene_id: str, reload: bool = True) -> StoredScene | None:
        """The scene, brought up to date first if another process changed it.

        Parameters
        ----------
        scene_id : str
        reload : bool
            False: return None instead of reading from disk, so an async
            caller can do that on a worker thread.

        Raises
        ------
        SceneNotFound
        """
        if not SCENE_ID.fullmatch(scene_id):
            raise SceneNotFound(scene_id)
        stored = self._scenes.get(scene_id)
        if stored is not None:
            # The token is read before the stat: a change that lands after
            # this read sets a new token, which the next request notices.
            token = self.changes.read()
            now = time.monotonic()
            if token is not None and token == stored.checked_token and now < stored.recheck_at:
                return stored
            position = _journal_position(stored)
            if position is None:
                self._replace(scene_id, None)
                raise SceneNotFound(scene_id)
            if position == (stored.journal_inode, stored.journal_end):
                stored.checked_token = token
                stored.recheck_at = now + RECHECK_SECONDS
                return stored
            if self._lock_for(scene_id).locked():
                # This process is changing it right now: its copy in memory is the newest.
                return stored
        if not reload:
            return None
        with self._lock_for(scene_id):
            return self._follow(scene_id)

    def _follow(self, scene_id: str) -> StoredScene:
        """The scene with every journaled edit applied (call with its lock held).

        Records appended since this process last looked are applied; a journal
        restarted past them (another process's checkpoint) means reopening.
        """
        directory = self.scenes_dir / scene_id
        if not (directory / SERVICE_FILE).exists():
            self._replace(scene_id, None)
            raise SceneNotFound(scene_id)
        stored = self._scenes.get(scene_id)
        if stored is None:
            stored = self._replace(scene_id, self._reopen(scene_id))
            return stored
        token = self.changes.read()
        position = _journal_position(stored)
        if position is None:
            self._replace(scene_id, None)
            raise SceneNotFound(scene_id)
        if position == (stored.journal_inode, stored.journal_end):
            stored.checked_token, stored.recheck_at = token, time.monotonic() + RECHECK_SECONDS
            return stored
        same_file = position[0] == stored.journal_inode
        try:
            records, end, _, inode = journal.read_file(stored.journal_path, stored.journal_end if same_file else 0)
        except FileNotFoundError:
            return stored
        if not same_file and (not records or records[0].kind != edits.BASE or records[0].seq > stored.seq):
            # Restarted by a checkpoint holding edits this process never saw.
            stored = self._replace(scene_id, self._reopen(scene_id))
            return stored
        fresh = [record for record in records if record.kind != edits.BASE and record.seq > stored.seq]
        if fresh and fresh[0].seq != stored.seq + 1:
            stored = self._replace(scene_id, self._reopen(scene_id))
            return stored
        for record in fresh:
            try:
                with _scene_lock(stored.scene):
                    change = edits.apply(stored.scene, record)
                    stored.seq = record.seq
                    stored.scene.annotate(JOURNAL_SEQ, record.seq)
                    stored.publish(change, new_meshes=False)
            except (ValueError, LookupError) as error:
                log.error("scene %s: journal record %d does not apply (%s); reopening", scene_id, record.seq, error)
                stored = self._replace(scene_id, self._reopen(scene_id))
                return stored
            self._announce_event(stored, change)
        if fresh:
            _build_snapshot(stored.scene)
        stored.journal_inode, stored.journal_end = inode, end
        stored.checked_token, stored.recheck_at = token, time.monotonic() + RECHECK_SECONDS
        return stored

    def _replace(self, scene_id: str, stored: StoredScene | None) -> StoredScene | None:
        """Put ``stored`` in place of the scene in memory (None: drop it), closing the old one's journal."""
        old = self._scenes.pop(scene_id, None) if stored is None else self._scenes.get(scene_id)
        if stored is not None:
            self._scenes[scene_id] = stored
        if old is not None and old is not stored and old.writer is not None:
            writer, old.writer = old.writer, None
            writer.close()
        return stored

    def _reopen(self, scene_id: str) -> StoredScene:
        """Open a scene another process created or changed (call with its lock held)."""
        try:
            # Written whole by a save that switches manifests atomically (see
            # the module notes), so the CRC pass of start-up is not repeated.
            return self._open(scene_id, verify=False)
        except FileNotFoundError:
            raise SceneNotFound(scene_id) from None
        except (ValueError, OSError) as error:
            raise SceneDamaged(scene_id, str(error)) from None

    def list(self) -> list[StoredScene]:
        """Every scene, in creation order, including those other workers made."""
        found = []
        for entry in os.scandir(self.scenes_dir):
            if SCENE_ID.fullmatch(entry.name):
                try:
                    found.append(self.get(entry.name))
                except (SceneNotFound, ValueError, OSError):
                    continue
        for gone in set(self._scenes) - {stored.id for stored in found}:
            self._replace(gone, None)
        return sorted(found, key=lambda stored: (stored.created, stored.id))

    def loaded(self) -> "list[str]":
        """Ids of the scenes this process holds in memory."""
        return sorted(self._scenes)

    def evict(self, scene_id: str) -> None:
        """Drop a scene from this process's memory once its pending edits are durable.

        The next request for it opens it again (from the data directory, or
        from the object store in S3 mode, whose cache files go too). An id
        not in memory is no error.
        """
        with self._lock_for(scene_id):
            stored = self._scenes.get(scene_id)
            if stored is None:
                return
            writer, stored.writer = stored.writer, None
            if writer is not None:
                # Its edits are answered once durable; closing waits for the last of them.
                writer.close()
            self._evicted(scene_id)

    def _evicted(self, scene_id: str) -> None:
        """Forget an evicted scene (call with its lock held); its files stay: they are the store."""
        self._replace(scene_id, None)

    def __len__(self) -> int:
        return len(self._scenes)

    def triangle_total(self) -> int:
        return sum(stored.view.triangles for stored in list(self._scenes.values()))

    # ------------------------------------------------------------ changes
    def create(self, scene: bvh.Scene, name: str | None, build_ms: float) -> StoredScene:
        """Save a new scene and add it; it is on disk before this returns."""
        scene_id = uuid.uuid4().hex
        staging = self.staging_dir / f"{os.getpid()}-{scene_id}"
        directory = self.scenes_dir / scene_id
        metadata = {"id": scene_id, "name": name, "created": _now(), "build_ms": round(build_ms, 3)}
        try:
            staging.mkdir()
            scene.save(staging / SCENE_DIR, annotations={JOURNAL_SEQ: 0})
            journal.write_new(str(staging / JOURNAL_FILE), [journal.encode(0, edits.BASE)])
            write_json_atomically(staging / SERVICE_FILE, metadata)
            fsync_directory(staging)
            os.rename(staging, directory)
            fsync_directory(self.scenes_dir)
            self.changes.announce()
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        stored = StoredScene(id=scene_id, name=name, created=metadata["created"], build_ms=metadata["build_ms"],
                             scene=scene, directory=directory)
        status = os.stat(stored.journal_path)
        stored.journal_inode, stored.journal_end = status.st_ino, status.st_size
        with _scene_lock(scene):
            stored.publish()
        self._scenes[scene_id] = stored
        return stored

    def _writable(self, scene_id: str) -> StoredScene:
        """The scene, up to date, ready to append to (call with both its locks held)."""
        stored = self._follow(scene_id)
        writer = stored.writer
        if writer is None or writer.inode != stored.journal_inode or not writer.current():
            if writer is not None:
                writer.close()
            if stored.journal_inode == -1:
                # A scene without a journal (saved before journals, or its
                # journal lost): start one after its checkpoint.
                self._restart_journal(stored, stored.seq)
            writer = stored.writer = JournalWriter(stored.journal_path)
            if writer.inode != stored.journal_inode:
                raise OSError(f"journal {stored.journal_path} changed while its edit lock was held")
        # Past the last whole record: a torn record of a writer killed while
        # appending (never acknowledged). Holding the edit lock, no one else is appending.
        writer.cut(stored.journal_end)
        return stored

    def record(self, scene_id: str, record: Record) -> tuple[StoredScene, Change, SceneView]:
        """Apply a journal record (see :mod:`service.store.edits`) and return once it is durable.

        Queries see the edit as soon as it is applied, whole or not at all.

        Returns
        -------
        (StoredScene, Change, SceneView)
            The view is the one this edit published (``view.version`` is its number).

        Raises
        ------
        SceneNotFound
        ValueError, bvh.UnknownIdError
            The edit does not fit the scene; nothing has changed.
        """
        staged = self._stage(scene_id, record, blocking=True)
        staged.writer.wait_durable(staged.seq)
        return self._settled(staged)

    async def record_soon(self, scene_id: str, record: Record) -> tuple[StoredScene, Change, SceneView]:
        """:meth:`record` for the event loop.

        A small edit is applied on the loop when the scene's locks are free
        (a move takes a fraction of a millisecond, less than handing it to a
        worker thread), and the loop goes on while its sync runs; otherwise
        it runs on a worker thread. Small object edits that arrive together
        (several editors dragging at once) are applied as one edit and one
        journal record (:class:`_EditGroup`), so that their cost is shared as
        their sync is.

        A scene's small edits are applied in the order they arrived. While a
        checkpoint or another worker holds the scene's locks, they wait on the
        loop rather than on worker threads (threads blocked on the locks would
        hold them in turn, and small edits would keep finding them taken),
        and the later ones wait behind the first: an edit that overtook an
        earlier one of the same object would leave the earlier one's value.
        """
        if record.kind == edits.VERTICES or record_size(record) > SMALL_EDIT_OBJECTS:
            # A refit, or many objects: a worker thread, the loop goes on.
            return await run_in_threadpool(self.record, scene_id, record)
        loop = asyncio.get_running_loop()
        waiting = self._queues.get(scene_id)
        if waiting is None:
            waiting = self._queues[scene_id] = collections.deque()
            loop.call_soon(self._apply_waiting, scene_id)
        mergeable = record.kind == edits.OBJECTS
        ids = _record_ids(record) if mergeable else set()
        group = waiting[-1] if waiting else None
        if group is None or not (mergeable and group.mergeable and ids.isdisjoint(group.ids)):
            group = _EditGroup(mergeable)
            waiting.append(group)
        future = loop.create_future()
        group.records.append(record)
        group.futures.append(future)
        group.ids |= ids
        return await future

    def _apply_waiting(self, scene_id: str) -> None:
        """Apply a scene's waiting groups in order (on the loop, once the
        edits that arrived with the first are in); if the locks are taken,
        try again shortly, the rest still waiting behind."""
        waiting = self._queues[scene_id]
        while waiting:
            if not self._apply_group(scene_id, waiting):
                asyncio.get_running_loop().call_later(LOCKED_RETRY_SECONDS, self._apply_waiting, scene_id)
                return
        del self._queues[scene_id]

    def _apply_group(self, scene_id: str, waiting: collections.deque) -> bool:
        """Apply the first group of ``waiting`` and take it off; False (the
        group left in place) when the scene's locks are taken."""
        group = waiting[0]
        single = len(group.records) == 1
        (merged,) = group.records if single else edits.folded(group.records)
        try:
            staged = self._stage(scene_id, merged, blocking=False)
        except (ValueError, LookupError, SceneNotFound) as error:
            waiting.popleft()
            if single:
                _fail(group.futures, error)
            else:
                # One of them is refused: each on its own, in its place, so that only it is.
                waiting.extendleft(reversed([_EditGroup(False, [record], [future])
                                             for record, future in zip(group.records, group.futures)]))
            return True
        except BaseException as error:
            waiting.popleft()
            _fail(group.futures, error)
            return True
        if staged is None:
            return False
        waiting.popleft()
        self._settle_when_durable(staged, group.futures)
        return True

    def _settle_when_durable(self, staged: "_Staged", futures: list) -> None:
        """Answer ``futures`` with the staged edit's result once its sync returns
        (a callback on the journal's future: no task of its own)."""
        try:
            waiting = staged.writer.durable_future(staged.seq)
        except BaseException as error:
            _fail(futures, error)
            return
        if waiting is None:
            self._settle(staged, futures, None)
        else:
            waiting.add_done_callback(lambda done: self._settle(staged, futures, done))

    def _settle(self, staged: "_Staged", futures: list, durable: "asyncio.Future | None") -> None:
        try:
            if durable is not None:
                durable.result()
            result = self._settled(staged)
        except BaseException as error:
            _fail(futures, error)
            return
        for future in futures:
            if not future.done():
                future.set_result(result)

    def _stage(self, scene_id: str, record: Record, blocking: bool) -> "_Staged | None":
        """Apply and append a record (not yet durable); None when ``blocking`` is
        False and the scene's locks are taken."""
        if not SCENE_ID.fullmatch(scene_id):
            raise SceneNotFound(scene_id)
        lock = self._lock_for(scene_id)
        if not lock.acquire(blocking=blocking):
            return None
        try:
            if not (self.scenes_dir / scene_id).is_dir():
                raise SceneNotFound(scene_id)
            with _file_lock(self.scenes_dir / scene_id / EDIT_LOCK, blocking) as locked:
                if not locked:
                    return None
                stored = self._writable(scene_id)
                scene = stored.scene
                with _scene_lock(scene):
                    change = edits.apply(scene, record)
                    seq = stored.seq + 1
                    fields = dict(record.fields)
                    if record.kind == edits.ADD:
                        fields["ids"] = change.objects
                    data = journal.encode(seq, record.kind, fields, record.arrays)
                    stored.seq = seq
                    scene.annotate(JOURNAL_SEQ, seq)
                    stored.publish(change, new_meshes=False)
                    view = stored.view
                try:
                    stored.writer.append(data, seq)
                except BaseException:
                    # Not journaled: back to what the journal holds.
                    self._replace(scene_id, self._reopen(scene_id))
                    raise
                stored.journal_end += len(data)
                self.changes.announce()
                # The queries' snapshot is brought up to date by the next
                # query, not here: edits in a row (a drag, a stream of moves)
                # refit the top level once, not once each.
                return _Staged(stored, change, view, stored.writer, seq)
        finally:
            lock.release()

    def _settled(self, staged: "_Staged") -> tuple[StoredScene, Change, SceneView]:
        """After a staged edit is durable: its change event, a checkpoint when due."""
        self._announce_event(staged.stored, staged.change)
        self._checkpoint_due(staged.stored)
        return staged.stored, staged.change, staged.view

    def edit(self, scene_id: str, change: Callable[[bvh.Scene], Result],
             prepare: Callable[[bvh.Scene], None] | None = None,
             describe: Callable[[Result], Change] | None = None) -> tuple[StoredScene, Result]:
        """Change a scene as one step for queries and save a checkpoint of it, then return.

        For changes a journal record cannot hold cheaply (new meshes: a replay
        would rebuild their trees); the journal restarts after the checkpoint.

        Parameters
        ----------
        scene_id : str
        change : callable(scene) -> result
            Makes the changes; runs with the scene's lock held, so queries
            see all of them or none. Keep slow work out of it.
        prepare : callable(scene), optional
            Slow work that queries need not wait for (building a new mesh's
            BVH: ``add_mesh`` changes nothing a query sees).
        describe : callable(result) -> Change, optional
            What changed, for the change event and the object table (default:
            the table is read whole, and no event).

        Returns
        -------
        (StoredScene, result)

        Raises
        ------
        SceneNotFound
        ValueError, bvh.UnknownIdError
            From ``change``: the scene is then read back from disk, so a
            refused edit leaves nothing behind.
        """
        if not SCENE_ID.fullmatch(scene_id):
            raise SceneNotFound(scene_id)
        with self._lock_for(scene_id):
            if not (self.scenes_dir / scene_id).is_dir():
                raise SceneNotFound(scene_id)
            with _file_lock(self.scenes_dir / scene_id / EDIT_LOCK):
                stored = self._writable(scene_id)
                try:
                    seq, result, described = self._change_and_save(stored, change, prepare, describe)
                    self._restart_journal(stored, seq)
                    self.changes.announce()
                except BaseException:
                    # Back to what is on disk: a refused or failed edit leaves nothing behind.
                    self._replace(scene_id, self._reopen(scene_id))
                    raise
        if described is not None:
            self._announce_event(stored, described)
        return stored, result

    @staticmethod
    def _change_and_save(stored: StoredScene, change, prepare, describe) -> tuple[int, object, Change | None]:
        """The body of :meth:`edit` (call with the scene's locks held): the change as one step for
        queries, numbered as the next record, then saved as the cache's checkpoint.

        Returns
        -------
        (seq, result, described)
            Its number, what ``change`` returned, and what ``describe`` made of it (or None).
        """
        scene = stored.scene
        if prepare is not None:
            prepare(scene)
        with _scene_lock(scene):
            result = change(scene)
            seq = stored.seq + 1
            stored.seq = seq
            scene.annotate(JOURNAL_SEQ, seq)
            described = describe(result) if describe is not None else None
            stored.publish(described)
        _build_snapshot(scene)
        scene.save(stored.directory / SCENE_DIR)
        return seq, result, described

    def _restart_journal(self, stored: StoredScene, base: int, position: tuple[int, int] | None = None) -> None:
        """Replace the journal by one continuing checkpoint ``base``, keeping the
        records after it (call with both locks held and ``stored`` up to date).

        ``position``: ``(inode, offset)`` of the journal where the records
        after ``base`` start, taken with ``base``; their bytes are then copied
        as they are, not read and written again record by record.
        """
        if base >= stored.seq:
            kept = []
        elif position is not None and position[0] == stored.journal_inode:
            with open(stored.journal_path, "rb") as stream:
                stream.seek(position[1])
                kept = [stream.read(stored.journal_end - position[1])]
        else:
            try:
                records, _, _, _ = journal.read_file(stored.journal_path)
            except FileNotFoundError:
                records = []
            kept = [journal.encode(record.seq, record.kind, record.fields, record.arrays)
                    for record in records if record.kind != edits.BASE and record.seq > base]
        journal.write_new(stored.journal_path, [journal.encode(base, edits.BASE)] + kept)
        status = os.stat(stored.journal_path)
        stored.journal_inode, stored.journal_end = status.st_ino, status.st_size
        stored.checkpoint_seq = max(stored.checkpoint_seq, base)
        if stored.seq <= base:
            stored.pending_since = None

    def _start(self, attribute: str, target: Callable[[], None], name: str) -> None:
        """Start the background thread kept in ``attribute`` unless it is running."""
        if getattr(self, attribute) is None:
            with self._locks_guard:
                if getattr(self, attribute) is None:
                    thread = threading.Thread(target=target, name=name, daemon=True)
                    setattr(self, attribute, thread)
                    thread.start()

    # ------------------------------------------------------------ checkpoints
    def _checkpoint_due(self, stored: StoredScene) -> None:
        if stored.pending_since is None:
            stored.pending_since = time.monotonic()
        self._start("_checkpoint_thread", self._checkpoints, "checkpoints")
        if stored.seq - stored.checkpoint_seq >= self.checkpoint_records:
            self._checkpoint_wake.set()

    def _checkpoints(self) -> None:
        while True:
            self._checkpoint_wake.wait(timeout=min(1.0, self.checkpoint_seconds))
            self._checkpoint_wake.clear()
            now = time.monotonic()
            for stored in list(self._scenes.values()):
                pending = stored.seq - stored.checkpoint_seq
                if pending and (self._closed or pending >= self.checkpoint_records or (
                        stored.pending_since is not None and now - stored.pending_since >= self.checkpoint_seconds)):
                    try:
                        self.checkpoint(stored.id)
                    except SceneNotFound:
                        pass
                    except Exception:
                        log.exception("checkpoint of scene %s failed; its journal keeps every edit", stored.id)
            if now - self._trimmed >= TRIM_SECONDS:
                self._trimmed = now
                return_free_memory()
            if self._closed:
                return

    def checkpoint(self, scene_id: str) -> None:
        """Save the scene's checkpoint and restart its journal after it.

        Edits go on while the checkpoint is written (``Scene.save`` holds the
        scene only while it copies the object table); the journal is restarted
        under the edit locks, keeping the records the checkpoint may not hold.
        Checkpoints of one scene run one at a time: two interleaved (the
        background thread's and an eviction's, or a caller's) would each
        restart the journal from a position taken before the other's restart,
        and a new journal file may get the old one's inode number back, so that
        the position looks valid and is not.
        """
        with self._locks_guard:
            lock = self._checkpointing.setdefault(scene_id, threading.Lock())
        with lock:
            self._checkpoint(scene_id)

    def _checkpoint(self, scene_id: str) -> None:
        """:meth:`checkpoint`'s work, with the scene's checkpoint lock held."""
        stored = self._scenes.get(scene_id)
        if stored is None:
            return
        with self._lock_for(scene_id):
            # A lower bound of what the save below takes, and where the
            # journal's records after it start.
            base, position = stored.seq, (stored.journal_inode, stored.journal_end)
        stored.scene.save(stored.directory / SCENE_DIR)
        with self._lock_for(scene_id):
            if not (self.scenes_dir / scene_id).is_dir():
                raise SceneNotFound(scene_id)
            with _file_lock(self.scenes_dir / scene_id / EDIT_LOCK):
                current = self._writable(scene_id)
                if current is not stored:
                    return
                self._restart_journal(stored, base, position)
                self.changes.announce()
        if stored.seq > base:
            stored.pending_since = time.monotonic()

    # ------------------------------------------------------------ events
    def _announce_event(self, stored: StoredScene, change: Change) -> None:
        """Queue ``change`` for :attr:`on_change` (made into JSON on the event thread, off the edit's path)."""
        if self.on_change is None or (self.listened is not None and not self.listened(stored.id)):
            return
        self._start("_event_thread", self._send_events, "change events")
        self._events.put((stored.id, stored.view, change))

    def _send_events(self) -> None:
        while True:
            items = [self._events.get()]
            # Whatever else is queued by now goes out with it (see _merged_moves).
            while items[-1] is not None:
                try:
                    items.append(self._events.get_nowait())
                except queue.Empty:
                    break
            for scene_id, view, change in _merged_moves([item for item in items if item is not None]):
                if change.event == "removed":
                    objects = list(change.objects)
                else:
                    objects = view.objects.json(change.objects)
                event = {"event": change.event, "objects": objects, "version": view.version}
                if change.mesh is not None:
                    event["mesh"] = change.mesh
                try:
                    self.on_change(scene_id, event)
                except Exception:
                    log.exception("a change listener failed on scene %s", scene_id)
            if items[-1] is None:
                return

    def delete(self, scene_id: str) -> None:
        """Remove a scene from memory and disk (gone from disk before this returns)."""
        with self._lock_for(scene_id):
            directory = self.scenes_dir / scene_id
            if not SCENE_ID.fullmatch(scene_id) or not directory.is_dir():
                self._replace(scene_id, None)
                raise SceneNotFound(scene_id)
            with _file_lock(directory / EDIT_LOCK):
                trash = self.trash_dir / f"{scene_id}-{uuid.uuid4().hex[:8]}"
                try:
                    os.rename(directory, trash)
                except FileNotFoundError:
                    raise SceneNotFound(scene_id) from None
                fsync_directory(self.scenes_dir)
                self.changes.announce()
            self._replace(scene_id, None)
        # Memory maps of the deleted files stay valid for queries still running.
        shutil.rmtree(trash, ignore_errors=True)


def _build_snapshot(scene: bvh.Scene) -> None:
    # Any query builds the snapshot; this one traces a single ray over an
    # empty window, so it costs the rebuild and nothing else. A closest-hit
    # query, not an occlusion one: its kernel is compiled before /ready
    # (the pick path), so an edit soon after a first start does not wait
    # for the occlusion kernel to compile.
    scene.intersect(np.zeros((1, 3)), np.array([[0.0, 0.0, 1.0]]), tmin=0.0, tmax=0.0)


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
