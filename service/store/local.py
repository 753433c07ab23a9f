"""Scenes in a data directory (``PICK_DATA_DIR``, or ``PICK_STORE`` a path): the local backend.

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
so every directory under ``scenes/`` is a complete scene. Edits are journal
records synced with ``fdatasync`` (:class:`service.store.journal_writer.FileSink`);
edits hold ``edit.lock`` (``flock``) while they catch up with the journal,
apply and append, so two workers never lose each other's edits and number
their records in one sequence. Leftovers of a crash (staging directories of
dead processes, trash) are removed at start-up.
"""

import contextlib
import logging
import os
import shutil
import uuid
from pathlib import Path

from bvh.io.persistence import fsync_directory

from .errors import SceneNotFound
from .files import ChangeToken, file_lock, process_alive
from .journal_writer import FileSink, JournalWriter
from .scenes import EDIT_LOCK, SCENE_ID, SERVICE_FILE, StoredScene

log = logging.getLogger("service.store")

CHANGE_TOKEN_FILE = "changes"


class SceneDirectory:
    """A directory of scenes in the layout above: the data directory, or an object store's cache.

    Parameters
    ----------
    data_dir : Path
        Created if missing.
    """

    def __init__(self, data_dir: Path):
        self.data_dir = Path(data_dir)
        self.scenes_dir = self.data_dir / "scenes"
        self.staging_dir = self.data_dir / "staging"
        self.trash_dir = self.data_dir / "trash"
        for directory in (self.scenes_dir, self.staging_dir, self.trash_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self.changes = ChangeToken(self.data_dir / CHANGE_TOKEN_FILE)

    def staging(self, name: str) -> Path:
        """A staging directory's path for ``name``, marked as this process's."""
        return self.staging_dir / f"{os.getpid()}-{name}"

    def to_trash(self, directory: Path, scene_id: str) -> Path | None:
        """Rename ``directory`` into the trash; returns where it went (None: it was gone)."""
        trash = self.trash_dir / f"{scene_id}-{uuid.uuid4().hex[:8]}"
        try:
            os.rename(directory, trash)
        except FileNotFoundError:
            return None
        return trash

    def remove_leftovers(self) -> None:
        """Remove staging directories of processes that are gone, and the trash."""
        for entry in os.scandir(self.staging_dir):
            owner = entry.name.split("-", 1)[0]
            if owner.isdigit() and process_alive(int(owner)):
                continue
            log.info("removing %s, left by a process that stopped while writing it", entry.path)
            shutil.rmtree(entry.path, ignore_errors=True)
        for entry in os.scandir(self.trash_dir):
            shutil.rmtree(entry.path, ignore_errors=True)


class LocalBackend:
    """Scenes in a data directory, shared by the worker processes of one machine.

    Parameters
    ----------
    data_dir : Path
        Created if missing.
    """

    def __init__(self, data_dir: Path):
        self.directory = SceneDirectory(data_dir)
        self.cache = None

    def attach(self, cache) -> None:
        self.cache = cache

    def start(self) -> list[str]:
        """Every scene directory's id, after the leftovers of crashed processes are removed."""
        self.directory.remove_leftovers()
        found = []
        for entry in sorted(os.scandir(self.directory.scenes_dir), key=lambda e: e.name):
            if not SCENE_ID.fullmatch(entry.name):
                log.warning("ignoring %s in %s: not a scene id", entry.name, self.directory.scenes_dir)
                continue
            found.append(entry.name)
        return found

    def close(self) -> None:
        """Nothing runs in the background."""

    def opened(self, stored: StoredScene) -> None:
        """Nothing to start."""

    def fetch(self, scene_id: str) -> None:
        """The directory is the store: only check the scene is there."""
        if not (self.directory.scenes_dir / scene_id / SERVICE_FILE).exists():
            raise SceneNotFound(scene_id)

    def publish_new(self, stored: StoredScene, staging: Path) -> None:
        """Rename the staging directory into ``scenes/`` (one atomic rename, then fsyncs)."""
        fsync_directory(staging)
        os.rename(staging, stored.directory)
        fsync_directory(self.directory.scenes_dir)
        self.directory.changes.announce()

    @contextlib.contextmanager
    def edit_lock(self, scene_id: str, blocking: bool = True):
        """``edit.lock`` of the scene: one writer at a time across processes."""
        directory = self.directory.scenes_dir / scene_id
        if not directory.is_dir():
            raise SceneNotFound(scene_id)
        with file_lock(directory / EDIT_LOCK, blocking) as locked:
            yield locked

    def journal_writer(self, stored: StoredScene) -> JournalWriter:
        writer = JournalWriter(FileSink(stored.journal_path, stored.journal_id), on_failure=self._sync_failed)
        if writer.sink.inode != stored.journal_inode:
            writer.close()
            raise OSError(f"journal {stored.journal_path} changed while its edit lock was held")
        return writer

    def _sync_failed(self, writer: JournalWriter) -> None:
        """After a failed sync (its edits were refused): cut the records it never synced and
        read the scene again, so that no query sees an edit that was refused."""
        scene_id = os.path.basename(os.path.dirname(writer.sink.path))
        cache = self.cache
        with cache.lock_for(scene_id):
            stored = cache.scenes.get(scene_id)
            if stored is None or stored.writer is not writer:
                return
            try:
                with self.edit_lock(scene_id):
                    cut = writer.sink.drop_unsynced()
            except (SceneNotFound, OSError) as error:
                cut = f"not cut: {error}"
            log.error("scene %s: a journal sync failed, its edits waiting were refused (records cut: %s); "
                      "reading the scene again", scene_id, cut)
            cache.recover(scene_id)

    def claim_checkpoint(self, stored: StoredScene, seq: int) -> None:
        """Nothing more: the save in the data directory is the checkpoint."""

    def checkpoint_claimed(self, stored: StoredScene) -> None:
        """Nothing more."""

    def checkpoint_saved(self, stored: StoredScene) -> None:
        """Nothing more."""

    def forget(self, scene_id: str) -> None:
        """Its files stay: they are the store."""

    def delete(self, scene_id: str) -> None:
        """Rename the scene's directory into the trash (gone from ``scenes/`` before this returns)."""
        cache = self.cache
        with cache.lock_for(scene_id):
            directory = self.directory.scenes_dir / scene_id
            if not SCENE_ID.fullmatch(scene_id) or not directory.is_dir():
                cache.drop(scene_id)
                raise SceneNotFound(scene_id)
            with file_lock(directory / EDIT_LOCK):
                trash = self.directory.to_trash(directory, scene_id)
                if trash is None:
                    raise SceneNotFound(scene_id)
                fsync_directory(self.directory.scenes_dir)
                self.directory.changes.announce()
            cache.drop(scene_id)
        # Memory maps of the deleted files stay valid for queries still running.
        shutil.rmtree(trash, ignore_errors=True)

    def list(self) -> list[StoredScene]:
        """Every scene, in creation order, including those other workers made."""
        cache = self.cache
        found = []
        for entry in os.scandir(self.directory.scenes_dir):
            if SCENE_ID.fullmatch(entry.name):
                try:
                    found.append(cache.get(entry.name))
                except (SceneNotFound, ValueError, OSError):
                    continue
        for gone in set(cache.scenes) - {stored.id for stored in found}:
            cache.drop(gone)
        return sorted(found, key=lambda stored: (stored.created, stored.id))
