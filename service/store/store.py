"""The scene store: scenes in memory, each saved by a backend (a data directory or an object store).

:class:`SceneStore` composes four parts over one :class:`~service.store.backend.Backend`:

- :class:`~service.store.cache.SceneCache`: the scenes in memory, opened
  from the backend's local directory and kept up to date with other
  processes' edits;
- :class:`~service.store.edit_pipeline.EditPipeline`: an edit applied,
  journaled, answered once durable (group commit), small edits on the event
  loop grouped;
- :class:`~service.store.checkpoints.Checkpointer`: checkpoints written in
  the background, the journal restarted after each;
- :class:`~service.store.events.ChangeEvents`: what each edit changed, for
  the live channel.

The backends: :class:`~service.store.local.LocalBackend` (the data
directory's layout and crash safety are described there) and
:class:`~service.store.s3.ObjectStoreBackend` (``PICK_STORE=s3://bucket/prefix``).
"""

import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Callable

import bvh

from . import edits, journal
from .backend import Backend
from .cache import SceneCache
from .checkpoints import Checkpointer
from .edit_pipeline import EditPipeline
from .edits import Change
from .errors import SceneDamaged, SceneNotFound, SceneReadOnly, StorageFull, refusing_full_disk
from .events import ChangeEvents
from .files import utc_now, write_json_atomically
from .idempotency import CREATED_FIELD, KeyedWrite, KeyPolicy, KeyEntry, KeyReused, KeyTable, Replayed, scene_id_for
from .integrity import new_journal_id, write_sync_mark
from .journal import JOURNAL_FILE, Record
from .local import LocalBackend
from .scenes import (JOURNAL_SEQ, MANIFEST, SCENE_DIR, SCENE_ID, SERVICE_FILE, Result, SceneView, StoredScene,
                     scene_lock)

__all__ = ["JOURNAL_SEQ", "MANIFEST", "SCENE_DIR", "SCENE_ID", "SERVICE_FILE", "SceneDamaged", "SceneNotFound",
           "SceneReadOnly", "SceneStore", "SceneView", "StorageFull", "StoredScene"]


class SceneStore:
    """Every scene of one backend, in memory and stored.

    Parameters
    ----------
    backend : Backend or Path
        Where scenes are kept; a path is a data directory
        (:class:`~service.store.local.LocalBackend`), created if missing.
    checkpoint_records, checkpoint_seconds : int, float
        A scene's checkpoint is written in the background once this process
        has journaled this many edits since the last one, or the oldest of
        them is this old.
    """

    def __init__(self, backend: Backend | Path, checkpoint_records: int = 10_000,
                 checkpoint_seconds: float = 30.0, key_policy: KeyPolicy | None = None):
        if isinstance(backend, (str, os.PathLike)):
            backend = LocalBackend(Path(backend))
        self.backend = backend
        self.events = ChangeEvents()
        self.cache = SceneCache(backend, self.events, key_policy)
        backend.attach(self.cache)
        self.checkpoints = Checkpointer(self.cache, checkpoint_records, checkpoint_seconds)
        self.pipeline = EditPipeline(self.cache, self.checkpoints)
        #: Set once start-up has opened the saved scenes and warmed the pick path (see ``service.app``).
        self.ready = False
        #: What start-up is doing while not ready, in words for ``/ready``.
        self.waiting_for = "opening the saved scenes"
        #: What is still compiling in the background once ready (None: nothing).
        self.compiling: str | None = None

    # ------------------------------------------------------------ the parts' settings
    @property
    def data_dir(self) -> Path:
        """The local directory scenes are opened from (in S3 mode, this process's cache)."""
        return self.backend.directory.data_dir

    @property
    def scenes_dir(self) -> Path:
        return self.backend.directory.scenes_dir

    @property
    def changes(self):
        """The data directory's change token (``service.store.files.ChangeToken``)."""
        return self.backend.directory.changes

    @property
    def on_change(self) -> Callable[[str, dict], None] | None:
        """Called as ``on_change(scene_id, event)`` after each edit, this process's
        (once durable) and other processes' (once followed), from the store's
        event thread; events are described in ``service.live``."""
        return self.events.on_change

    @on_change.setter
    def on_change(self, listener: Callable[[str, dict], None] | None) -> None:
        self.events.on_change = listener

    @property
    def listened(self) -> Callable[[str], bool] | None:
        """Whether anyone listens to a scene's events (None: assume so); an
        event of a scene nobody listens to is not made at all."""
        return self.events.listened

    @listened.setter
    def listened(self, listened: Callable[[str], bool] | None) -> None:
        self.events.listened = listened

    # ------------------------------------------------------------ life cycle
    def open_all(self) -> list[str]:
        """Open every saved scene (none in S3 mode: those open on first request); a damaged
        one is skipped with a log line.

        Returns
        -------
        list of str
            The ids of the scenes that were skipped.
        """
        return self.cache.open_saved(self.backend.start())

    def close(self) -> None:
        """Write the checkpoints still due, stop the background threads and close
        the journals. The store may be used again after (they start again)."""
        self.backend.close()
        self.checkpoints.close()
        self.events.close()
        for stored in list(self.cache.scenes.values()):
            writer, stored.writer = stored.writer, None
            if writer is not None:
                writer.close()

    # ------------------------------------------------------------ lookups
    def get(self, scene_id: str, reload: bool = True) -> StoredScene | None:
        """The scene, brought up to date first if another process changed it.

        Parameters
        ----------
        scene_id : str
        reload : bool
            False: return None instead of reading it from the backend, so an
            async caller can do that on a worker thread.

        Raises
        ------
        SceneNotFound
        """
        return self.cache.get(scene_id, reload)

    def list(self) -> "list":
        """Every scene, in creation order, including those other processes made (in S3 mode
        those not in memory as listed from their summaries)."""
        return self.backend.list()

    def loaded(self) -> "list[str]":
        """Ids of the scenes this process holds in memory."""
        return self.cache.loaded()

    def __len__(self) -> int:
        return len(self.cache)

    def triangle_total(self) -> int:
        return self.cache.triangle_total()

    def damaged(self) -> dict[str, dict[str, str]]:
        """The damaged scenes this process found: ``{"read-only": {id: why}, "refused": {id: why}}``
        (read-only: served with the edits before the damage; refused: the checkpoint itself is bad)."""
        read_only = {stored.id: stored.reason for stored in list(self.cache.scenes.values())
                     if stored.damage is not None}
        return {"read-only": read_only, "refused": dict(self.cache.refused)}

    def evict(self, scene_id: str) -> None:
        """Drop a scene from this process's memory once its pending edits are durable.

        The next request for it opens it again (from the data directory, or
        from the object store in S3 mode, whose cache files go too). An id
        not in memory is no error.
        """
        with self.cache.lock_for(scene_id):
            stored = self.cache.scenes.get(scene_id)
            if stored is None:
                return
            writer, stored.writer = stored.writer, None
            if writer is not None:
                # Its edits are answered once durable; closing waits for the last of them.
                writer.close()
            self.cache.drop(scene_id)

    # ------------------------------------------------------------ changes
    def create(self, scene: bvh.Scene, name: str | None, build_ms: float,
               keyed: KeyedWrite | None = None) -> StoredScene:
        """Save a new scene and add it; it is stored before this returns.

        It is written whole under a staging directory (checkpoint, journal,
        ``service.json``), then published by the backend.

        ``keyed`` (with its ``digest``): the scene's id is made from the key
        (``idempotency.scene_id_for``) and ``service.json`` holds the key and
        digest, so that a retry finds the scene (:meth:`created`) on any
        process or replica, and two racing ones make one scene.

        Raises
        ------
        StorageFull
            The disk is full: nothing of the scene is left.
        Replayed, KeyReused
            A scene was made with this key before.
        """
        if keyed is None:
            return self._create(scene, name, build_ms, uuid.uuid4().hex, None)
        scene_id = scene_id_for(keyed.request)
        with self.cache.lock_for(scene_id):
            self._check_created(scene_id, keyed)
            try:
                return self._create(scene, name, build_ms, scene_id, keyed)
            except Exception:
                # Another process made it first (its publish won): that one is the answer.
                self._check_created(scene_id, keyed)
                raise

    def created(self, keyed: KeyedWrite) -> None:
        """Raise :class:`Replayed` when a scene was made with ``keyed``'s key, :class:`KeyReused`
        when it was made by another request; return when none was."""
        scene_id = scene_id_for(keyed.request)
        with self.cache.lock_for(scene_id):
            self._check_created(scene_id, keyed)

    def _check_created(self, scene_id: str, keyed: KeyedWrite) -> None:
        try:
            stored = self.cache.follow(scene_id)
        except SceneNotFound:
            return
        origin = stored.origin or {}
        if origin.get("key") != keyed.request.key or origin.get("digest") != keyed.digest:
            raise KeyReused(keyed.request.key)
        raise Replayed(KeyEntry(origin["key"], origin["digest"], 201, None, 0, float(origin.get("at", 0.0)),
                                kept=False), scene_id=scene_id)

    def _create(self, scene: bvh.Scene, name: str | None, build_ms: float, scene_id: str,
                keyed: KeyedWrite | None) -> StoredScene:
        directory = self.backend.directory
        staging = directory.staging(scene_id)
        metadata = {"id": scene_id, "name": name, "created": utc_now(), "build_ms": round(build_ms, 3)}
        origin = None
        if keyed is not None:
            origin = metadata[CREATED_FIELD] = {"key": keyed.request.key, "digest": keyed.digest, "at": time.time()}
        with refusing_full_disk():
            try:
                staging.mkdir()
                scene.save(staging / SCENE_DIR, annotations={JOURNAL_SEQ: 0})
                journal_id = new_journal_id()
                journal.write_new(str(staging / JOURNAL_FILE), [journal.encode(0, edits.BASE, {"id": journal_id})])
                write_json_atomically(staging / SERVICE_FILE, metadata)
                stored = StoredScene(id=scene_id, name=name, created=metadata["created"], build_ms=metadata["build_ms"],
                                     scene=scene, directory=directory.scenes_dir / scene_id, journal_id=journal_id,
                                     keys=KeyTable(self.cache.key_policy), origin=origin)
                with scene_lock(scene):
                    stored.publish()
                self.backend.publish_new(stored, staging)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
        status = os.stat(stored.journal_path)
        stored.journal_inode, stored.journal_end = status.st_ino, status.st_size
        write_sync_mark(stored.journal_path, journal_id, status.st_size)
        return self.cache.add(stored)

    def delete(self, scene_id: str) -> None:
        """Remove a scene from memory and from the backend (gone there before this returns).

        Raises
        ------
        SceneNotFound
        SceneReadOnly
            Its journal is damaged.
        """
        if not SCENE_ID.fullmatch(scene_id):
            raise SceneNotFound(scene_id)
        stored = self.cache.scenes.get(scene_id)
        if stored is not None:
            # A damaged scene's files wait for an operator (``python -m service repair``).
            stored.check_writable()
        self.backend.delete(scene_id)
        self.cache.refused.pop(scene_id, None)

    def record(self, scene_id: str, record: Record,
               keyed: KeyedWrite | None = None) -> tuple[StoredScene, Change, SceneView]:
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
        Replayed, KeyReused
            ``keyed``'s key was recorded before (:mod:`service.store.idempotency`).
        """
        return self.pipeline.record(scene_id, record, keyed)

    async def record_soon(self, scene_id: str, record: Record,
                          keyed: KeyedWrite | None = None) -> tuple[StoredScene, Change, SceneView]:
        """:meth:`record` for the event loop (see :meth:`EditPipeline.record_soon
        <service.store.edit_pipeline.EditPipeline.record_soon>`)."""
        return await self.pipeline.record_soon(scene_id, record, keyed)

    def edit(self, scene_id: str, change: Callable[[bvh.Scene], Result],
             prepare: Callable[[bvh.Scene], None] | None = None,
             describe: Callable[[Result], Change] | None = None,
             keyed: KeyedWrite | None = None) -> tuple[StoredScene, Result]:
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
        keyed : KeyedWrite, optional
            The write's idempotency key and digest (see :meth:`EditPipeline.edit
            <service.store.edit_pipeline.EditPipeline.edit>`).

        Returns
        -------
        (StoredScene, result)

        Raises
        ------
        SceneNotFound
        ValueError, bvh.UnknownIdError
            From ``change``: the scene is then read back from the backend, so a
            refused edit leaves nothing behind.
        """
        return self.pipeline.edit(scene_id, change, prepare, describe, keyed)

    def checkpoint(self, scene_id: str) -> None:
        """Save the scene's checkpoint and restart its journal after it (see
        :meth:`Checkpointer.checkpoint <service.store.checkpoints.Checkpointer.checkpoint>`)."""
        self.checkpoints.checkpoint(scene_id)
