"""The scenes a process holds in memory, kept up to date with what its backend stores.

Several worker processes (``PICK_WORKERS``) share one data directory. Each
opens the scenes by memory map (the page cache holds one copy of the mesh
arrays for all) and follows the others' edits in the journal: a ``stat`` of
it tells whether it grew (apply the new records) or was replaced by a
checkpoint (read the new file; when it starts past what this process has,
reopen the checkpoint); a missing directory means "deleted", and an id that
is not in memory is looked up in the backend. The ``stat`` costs more than a
pick's other bookkeeping, so a request makes it only when the shared change
token (``changes`` in the data directory) has changed since the scene was
last checked, or that check is older than :data:`RECHECK_SECONDS`. In S3
mode the object store's segments are appended to the cache's journal by the
backend's follower, and applied by the same code.
"""

import json
import logging
import os
import threading
import time

import bvh

from . import edits, journal
from .errors import SceneDamaged, SceneNotFound
from .events import ChangeEvents
from .idempotency import CREATED_FIELD, KeyPolicy, KeyTable
from .integrity import CheckpointVerifier, count_records_after, read_journal, scan_journal
from .journal import JOURNAL_FILE, Record
from .scenes import (JOURNAL_SEQ, MANIFEST, SCENE_DIR, SCENE_ID, SERVICE_FILE, StoredScene, build_snapshot,
                     scene_lock)

log = logging.getLogger("service.store")

#: A scene in memory is checked against its manifest at least this often even
#: when the change token stayed the same: a process killed between a save and
#: its new token must not leave the other workers stale for ever.
RECHECK_SECONDS = 1.0


class SceneCache:
    """The scenes in memory, by id, each with a lock serialising its changes in this process.

    Parameters
    ----------
    backend : service.store.backend.Backend
    events : ChangeEvents
        Where followed edits are announced.
    """

    def __init__(self, backend, events: ChangeEvents, key_policy: KeyPolicy | None = None):
        self.backend = backend
        #: How long and how many idempotency keys each scene remembers.
        self.key_policy = key_policy or KeyPolicy()
        self.events = events
        self.directory = backend.directory
        #: The scenes in memory (read it; change it through :meth:`replace` and :meth:`drop`).
        self.scenes: dict[str, StoredScene] = {}
        #: Scenes refused whole because their checkpoint cannot be read: id to why.
        self.refused: dict[str, str] = {}
        self.verifier = CheckpointVerifier()
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def lock_for(self, scene_id: str) -> threading.Lock:
        """The lock held while this process changes the scene or reads it again."""
        with self._locks_guard:
            return self._locks.setdefault(scene_id, threading.Lock())

    def __len__(self) -> int:
        return len(self.scenes)

    def loaded(self) -> list[str]:
        """Ids of the scenes in memory."""
        return sorted(self.scenes)

    def triangle_total(self) -> int:
        return sum(stored.view.triangles for stored in list(self.scenes.values()))

    # ------------------------------------------------------------ opening
    def open_saved(self, scene_ids: list[str]) -> list[str]:
        """Open the scenes ``scene_ids`` at start-up; returns those refused as damaged whole."""
        skipped = []
        for scene_id in scene_ids:
            try:
                self.add(self.open(scene_id))
            except (ValueError, OSError) as error:
                log.error("skipping damaged scene directory %s: %s", self.directory.scenes_dir / scene_id, error)
                self.refused[scene_id] = str(error)
                skipped.append(scene_id)
        return skipped

    def open(self, scene_id: str) -> StoredScene:
        """Read a scene from the local directory: its checkpoint, its arrays checked against
        their checksums (each file once, :class:`CheckpointVerifier`), then the journal's
        records past it. A damaged journal opens the scene read-only with the records before
        the damage (:mod:`service.store.integrity`).

        Raises
        ------
        ValueError, OSError
            ``service.json`` or the checkpoint is damaged, or a record does not apply.
        """
        directory = self.directory.scenes_dir / scene_id
        try:
            metadata = json.loads((directory / SERVICE_FILE).read_text())
        except (OSError, ValueError) as error:
            raise ValueError(f"{SERVICE_FILE} is unreadable: {error}") from None
        if not isinstance(metadata, dict) or metadata.get("id") != scene_id:
            raise ValueError(f"{SERVICE_FILE} does not describe scene {scene_id}")
        # The journal is read before the checkpoint: a checkpoint written in
        # between is newer than the journal read, never older.
        found = read_journal(os.path.join(directory, JOURNAL_FILE))
        scene = self._open_checkpoint(directory / SCENE_DIR)
        checkpoint = int(scene.annotations.get(JOURNAL_SEQ, 0))
        scan = scan_journal(found, checkpoint)
        stored = StoredScene(id=scene_id, name=metadata.get("name"), created=str(metadata.get("created", "")),
                             build_ms=float(metadata.get("build_ms", 0.0)), scene=scene, directory=directory,
                             seq=checkpoint, checkpoint_seq=checkpoint, journal_id=scan.journal_id,
                             damage=scan.damage, keys=KeyTable(self.key_policy),
                             origin=metadata.get(CREATED_FIELD))
        # Every record's key, those the checkpoint holds too: a retry of any of them is a repeat.
        stored.keys.learn_annotation(scene.annotations)
        stored.keys.learn(scan.records)
        replayed = self._replay(stored, scan.records[1:])
        if scan.damage is not None:
            # Read-only from now on; its whole file counts as followed, so that
            # only a replaced journal (a repair) makes it read again.
            stored.journal_inode, stored.journal_end = scan.inode, scan.size
            log.error("scene %s is damaged and opens read-only with %d journaled edits past its checkpoint: %s",
                      scene_id, replayed, scan.damage.describe())
        elif scan.records:
            stored.journal_inode, stored.journal_end = scan.inode, scan.end
            if scan.torn:
                log.warning("scene %s: a torn last journal record of %d bytes was dropped (it was never "
                            "acknowledged)", scene_id, scan.torn)
            if replayed:
                log.info("scene %s: %d journaled edits replayed past its checkpoint", scene_id, replayed)
        else:
            # No journal (a scene saved before journals): the next edit starts one.
            stored.journal_inode, stored.journal_end = -1, 0
        self.refused.pop(scene_id, None)
        with scene_lock(scene):
            stored.publish()
        # Its snapshot is built by its first query: a start-up opening the saved
        # scenes must not compile the pick kernel ahead of the warm-up's plan.
        return stored

    def _open_checkpoint(self, directory) -> bvh.Scene:
        """``bvh.Scene.open`` of a checkpoint whose arrays were checked against their checksums
        (read again when a save replaced it meanwhile)."""
        for _ in range(5):
            checked = self.verifier.verify(directory)
            scene = bvh.Scene.open(directory, verify=False)
            if (directory / MANIFEST).read_bytes() == checked:
                return scene
        raise ValueError(f"scene directory {directory} kept changing while it was opened")

    @staticmethod
    def _replay(stored: StoredScene, records: list[Record]) -> int:
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
                with scene_lock(stored.scene):
                    edits.apply(stored.scene, record)
                    stored.seq = record.seq
                    stored.scene.annotate(JOURNAL_SEQ, record.seq)
            except (ValueError, LookupError) as error:
                raise ValueError(f"journal record {record.seq} ({record.kind}) does not apply: {error}") from None
        return len(fresh)

    def reopen(self, scene_id: str) -> StoredScene:
        """Open a scene another process created or changed, as the backend has it (call with its lock held).

        Raises
        ------
        SceneNotFound
        SceneDamaged
            Its checkpoint cannot be read (it is then dropped from memory).
        """
        try:
            self.backend.fetch(scene_id)
            return self.open(scene_id)
        except FileNotFoundError:
            raise SceneNotFound(scene_id) from None
        except SceneDamaged as error:
            self.refused[scene_id] = error.reason
            self.drop(scene_id)
            raise
        except (ValueError, OSError) as error:
            self.refused[scene_id] = str(error)
            self.drop(scene_id)
            raise SceneDamaged(scene_id, str(error)) from None

    # ------------------------------------------------------------ in memory
    def add(self, stored: StoredScene) -> StoredScene:
        """Put a scene (new, or just opened) in memory."""
        self.scenes[stored.id] = stored
        self.backend.opened(stored)
        return stored

    def replace(self, scene_id: str, stored: StoredScene | None) -> StoredScene | None:
        """Put ``stored`` in place of the scene in memory (None: drop it), closing the old one's journal."""
        old = self.scenes.pop(scene_id, None) if stored is None else self.scenes.get(scene_id)
        if stored is not None:
            self.add(stored)
        if old is not None and old is not stored and old.writer is not None:
            writer, old.writer = old.writer, None
            writer.close()
        return stored

    def drop(self, scene_id: str) -> None:
        """Forget a scene: out of memory, and out of the backend's cache (call with its lock held)."""
        self.replace(scene_id, None)
        self.backend.forget(scene_id)

    def recover(self, scene_id: str) -> None:
        """Back to the stored state after a failed change (dropped when that cannot be read)."""
        try:
            self.replace(scene_id, self.reopen(scene_id))
        except Exception:
            self.drop(scene_id)

    # ------------------------------------------------------------ lookups
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
        stored = self.scenes.get(scene_id)
        if stored is not None:
            # The token is read before the stat: a change that lands after
            # this read sets a new token, which the next request notices.
            token = self.directory.changes.read()
            now = time.monotonic()
            if token is not None and token == stored.checked_token and now < stored.recheck_at:
                return stored
            position = stored.journal_position()
            if position is None:
                self.drop(scene_id)
                raise SceneNotFound(scene_id)
            if position == (stored.journal_inode, stored.journal_end):
                stored.checked_token = token
                stored.recheck_at = now + RECHECK_SECONDS
                return stored
            if self.lock_for(scene_id).locked():
                # This process is changing it right now: its copy in memory is the newest.
                return stored
        if not reload:
            return None
        with self.lock_for(scene_id):
            return self.follow(scene_id)

    def follow(self, scene_id: str) -> StoredScene:
        """The scene with every journaled edit applied (call with its lock held).

        Records appended since this process last looked are applied; a journal
        restarted past them (another process's checkpoint) means reopening;
        a scene not in memory is opened.
        """
        stored = self.scenes.get(scene_id)
        if stored is None:
            return self.replace(scene_id, self.reopen(scene_id))
        if not (stored.directory / SERVICE_FILE).exists():
            self.drop(scene_id)
            raise SceneNotFound(scene_id)
        token = self.directory.changes.read()
        position = stored.journal_position()
        if position is None:
            self.drop(scene_id)
            raise SceneNotFound(scene_id)
        if position == (stored.journal_inode, stored.journal_end):
            stored.checked_token, stored.recheck_at = token, time.monotonic() + RECHECK_SECONDS
            return stored
        if stored.damage is not None or (position[0] == stored.journal_inode and position[1] < stored.journal_end):
            # Damaged: read again only once the journal changed (a repair). Shorter
            # than what was applied: records were cut (a failed sync), read what is there.
            return self.replace(scene_id, self.reopen(scene_id))
        same_file = position[0] == stored.journal_inode
        try:
            records, end, size, inode = journal.read_file(stored.journal_path, stored.journal_end if same_file else 0)
        except FileNotFoundError:
            return stored
        if end < size and self._damaged_past(stored.journal_path, end, records[-1].seq if records else stored.seq):
            return self.replace(scene_id, self.reopen(scene_id))
        if not same_file and (not records or records[0].kind != edits.BASE or records[0].seq > stored.seq):
            # Restarted by a checkpoint holding edits this process never saw.
            return self.replace(scene_id, self.reopen(scene_id))
        fresh = [record for record in records if record.kind != edits.BASE and record.seq > stored.seq]
        if fresh and fresh[0].seq != stored.seq + 1:
            return self.replace(scene_id, self.reopen(scene_id))
        stored.keys.learn(fresh)
        for record in fresh:
            try:
                with scene_lock(stored.scene):
                    change = edits.apply(stored.scene, record)
                    stored.seq = record.seq
                    stored.scene.annotate(JOURNAL_SEQ, record.seq)
                    stored.publish(change, new_meshes=False)
            except (ValueError, LookupError) as error:
                log.error("scene %s: journal record %d does not apply (%s); reopening", scene_id, record.seq, error)
                return self.replace(scene_id, self.reopen(scene_id))
            self.events.announce(stored, change)
        if fresh:
            build_snapshot(stored.scene)
        stored.journal_inode, stored.journal_end = inode, end
        stored.checked_token, stored.recheck_at = token, time.monotonic() + RECHECK_SECONDS
        return stored

    @staticmethod
    def _damaged_past(path: str, end: int, last_seq: int) -> bool:
        """Whether valid records lie past an unreadable one at byte ``end`` (damage, not a
        record another process is still writing)."""
        with open(path, "rb") as stream:
            stream.seek(end)
            tail = stream.read()
        return count_records_after(tail, 0, last_seq) > 0

    def writable(self, scene_id: str) -> StoredScene:
        """The scene, up to date, ready to append to (call with its locks held).

        Raises
        ------
        SceneNotFound
        SceneReadOnly
            Its journal is damaged.
        """
        stored = self.follow(scene_id)
        stored.check_writable()
        writer = stored.writer
        if writer is not None and writer.failed:
            # A commit failed (in S3 mode: it lost a race): what this process
            # holds is not what is stored; read that again.
            stored = self.replace(scene_id, self.reopen(scene_id))
            stored.check_writable()
            writer = stored.writer
        if writer is None or not writer.sink.follows(stored.journal_inode):
            if writer is not None:
                writer.close()
            if stored.journal_inode == -1:
                # A scene without a journal (saved before journals, or its
                # journal lost): start one after its checkpoint.
                stored.restart_journal(stored.seq)
            writer = stored.writer = self.backend.journal_writer(stored)
        # Past the last whole record: a torn record of a writer killed while
        # appending (never acknowledged). Holding the edit lock, no one else is appending.
        writer.sink.cut(stored.journal_end)
        return stored
