"""Checkpoints: each scene saved whole in the background, and its journal restarted after the save.

A scene's checkpoint (``Scene.save``, which switches manifests atomically,
with the journal sequence number it includes) is written in the background
after ``PICK_CHECKPOINT_RECORDS`` records or ``PICK_CHECKPOINT_SECONDS``, and
the journal then restarts after it, keeping the records the save may not
hold. In S3 mode the backend then uploads the save once its number is in
the store.
"""

import logging
import threading
import time

from ..ops.memory import return_free_memory
from .cache import SceneCache
from .errors import SceneNotFound, disk_full
from .scenes import SCENE_DIR, StoredScene

log = logging.getLogger("service.store")

#: Seconds between two trims of the C heap (``service.ops.memory``) while edits come.
TRIM_SECONDS = 5.0


class Checkpointer:
    """Writes the checkpoints due, on a thread of its own.

    Parameters
    ----------
    cache : SceneCache
    records, seconds : int, float
        A scene's checkpoint is written in the background once this process
        has journaled this many edits since the last one, or the oldest of
        them is this old.
    """

    def __init__(self, cache: SceneCache, records: int, seconds: float):
        self.cache = cache
        self.backend = cache.backend
        self.records = records
        self.seconds = seconds
        self._wake = threading.Event()
        self._trimmed = time.monotonic()
        self._thread: threading.Thread | None = None
        self._starting = threading.Lock()
        #: Per scene, held through a checkpoint: one at a time (see :meth:`checkpoint`).
        self._running: dict[str, threading.Lock] = {}
        self._closed = False

    def due(self, stored: StoredScene) -> None:
        """Note a durable edit of ``stored``: its checkpoint comes once enough are pending."""
        if stored.pending_since is None:
            stored.pending_since = time.monotonic()
        if self._thread is None:
            with self._starting:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="checkpoints", daemon=True)
                    self._thread.start()
        if stored.seq - stored.checkpoint_seq >= self.records:
            self._wake.set()

    def close(self) -> None:
        """Write every checkpoint still due and stop the thread (it starts again when needed)."""
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        self._thread = None
        self._wake.clear()
        self._closed = False

    def _run(self) -> None:
        while True:
            self._wake.wait(timeout=min(1.0, self.seconds))
            self._wake.clear()
            now = time.monotonic()
            for stored in list(self.cache.scenes.values()):
                pending = stored.seq - stored.checkpoint_seq
                if pending and stored.damage is None and (self._closed or pending >= self.records or (
                        stored.pending_since is not None and now - stored.pending_since >= self.seconds)):
                    try:
                        self.checkpoint(stored.id)
                    except SceneNotFound:
                        pass
                    except Exception as error:
                        if disk_full(error):
                            log.error("checkpoint of scene %s failed, the disk is full; its journal keeps every "
                                      "edit: %s", stored.id, error)
                        else:
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
        the position looks valid and is not. In S3 mode also because a
        background save finishing after an explicit one would leave the older
        state in the cache's manifest, and upload nothing newer.
        """
        with self.running(scene_id):
            stored = self._save(scene_id)
            if stored is not None:
                self.backend.checkpoint_saved(stored)

    def running(self, scene_id: str) -> threading.Lock:
        """The lock held through a checkpoint of the scene (and through adding meshes, whose save
        a background save copied before it must not overwrite)."""
        with self._starting:
            return self._running.setdefault(scene_id, threading.Lock())

    def _save(self, scene_id: str) -> StoredScene | None:
        """:meth:`checkpoint`'s save and journal restart; returns the scene (None: not in memory)."""
        cache = self.cache
        stored = cache.scenes.get(scene_id)
        if stored is None or stored.damage is not None:
            # A damaged scene's checkpoint and journal stay as they are.
            return None
        with cache.lock_for(scene_id):
            # A lower bound of what the save below takes, and where the
            # journal's records after it start.
            base, position = stored.seq, (stored.journal_inode, stored.journal_end)
        stored.scene.save(stored.directory / SCENE_DIR)
        with cache.lock_for(scene_id):
            if cache.scenes.get(scene_id) is not stored:
                return None
            with self.backend.edit_lock(scene_id):
                current = cache.writable(scene_id)
                if current is not stored:
                    return None
                stored.restart_journal(base, position)
                cache.directory.changes.announce()
        if stored.seq > base:
            stored.pending_since = time.monotonic()
        return stored
