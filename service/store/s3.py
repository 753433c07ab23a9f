"""Scenes in an S3-compatible object store (``PICK_STORE=s3://bucket/prefix``): the object store backend.

Layout under the prefix::

    scenes/<id>/service.json                    metadata: written LAST at create, deleted FIRST at delete
    scenes/<id>/summary.json                    counts for the list route, rewritten after each checkpoint
    scenes/<id>/checkpoints/<seq:020d>/<files>  a Scene.save output; its manifest.json is uploaded
                                                last, so a checkpoint exists once that is there
    scenes/<id>/checkpoints/<seq:020d>-<tag>/   a checkpoint made by adding meshes (see below)
    scenes/<id>/journal/<first seq:020d>        a segment: journal frames, numbers contiguous
                                                (see service.store.segments)

One writer per sequence number across the cluster comes from the store's
conditional create of each segment (:mod:`service.store.segments`): no lock
server. Every process keeps a private cache in ``data_dir/cache-<pid>-<random>``, in
the data directory's layout (:class:`service.store.local.SceneDirectory`), so opening
by memory map, replay and queries are those of the local backend; a cache never holds a
record that is not in the store (its own records are there before they are
answered, and a lost race drops the scene from the cache). Caches of
processes that are gone are removed at start-up.

Opening a scene not in memory (lazily, on its first request): the newest
complete checkpoint and the segments after it are downloaded into a staging
directory, the local journal is written (base record, then those records),
the directory is renamed into the cache, and the scene cache opens it from there.

Adding meshes (``SceneStore.edit``) saves a checkpoint at once, as in the
local backend; here it is uploaded under ``checkpoints/<seq>-<tag>/`` FIRST, then
sequence number ``seq`` is claimed by creating ``journal/<seq>`` holding one
``reload`` record that names that directory. The brief's order (claim, then
upload) would leave the number claimed and its checkpoint missing for ever
when the writer dies in between; in this order a writer that dies leaves
only an unnamed directory, which no reader uses (a ``<seq>-<tag>``
checkpoint counts only when the segment of ``seq`` names it) and garbage
collection removes. A reader that meets a ``reload`` record reopens the scene.

Background checkpoints: after the local save whose journal number is N, and
once N is in the store, the save is uploaded as ``checkpoints/<N>``. Then
checkpoints older than the previous one are deleted, with the segments that
hold only records up to it: one generation stays for processes still
opening from it.

Following other processes' edits: a poller thread GETs, every
``poll_seconds``, ``journal/<seq + 1>`` of each scene in memory that has no
edit of this process in flight; a segment found is appended to the local
journal and applied by the scene cache's follow path, so the live
channel's change events fire. About once a second it also checks that
``service.json`` is still there (gone: the scene was deleted; it is dropped).
A segment found is followed at once by a look for the one after it, until
there is none, so a follower keeps up with a writer's stream of segments.
**Bound on the delay** before an edit made by another process is visible
here: ``poll_seconds`` + one poll round (one GET per scene in memory, ~1 ms
each on a local store) + fetching and applying the segments written since —
0.1 s + ~1 ms per loaded scene + the apply, by default. A reload record adds
the download of the checkpoint. Measured (``python -m bench.object_store``,
one editor moving an object at ~20 edits/s, a local SeaweedFS, the machine
shared with a Ray cluster): from the answer in one store to the change event
in another, p50 45 ms, p99 97 ms.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bvh.io.persistence import writer_lock

from . import edits, journal
from ..api.errors import EditConflict, StoreUnavailable
from .errors import SceneDamaged, SceneNotFound
from .files import process_alive
from .journal_writer import JournalWriter
from .local import SceneDirectory
from .object_store import ObjectStore
from .scenes import JOURNAL_SEQ, MANIFEST, SCENE_DIR, SCENE_ID, SERVICE_FILE, StoredScene
from .segments import SegmentSink, segment_path

log = logging.getLogger("service.store")

CACHE_PREFIX = "cache-"
#: The caches of this process's stores (``cache-<pid>-<random>``): not removed as stale by another of its stores.
_CACHES_MADE_HERE: set = set()
SUMMARY_FILE = "summary.json"
#: The kind of a segment's only record when adding meshes made a checkpoint: ``checkpoint`` names its directory.
RELOAD = "reload"
#: How often the poller checks that a scene in memory was not deleted.
DELETED_CHECK_SECONDS = 1.0
#: Attempts at opening a scene whose newest state moved while it was read.
OPEN_ATTEMPTS = 5


def scene_prefix(scene_id: str) -> str:
    return f"scenes/{scene_id}"


def _checkpoint_seq(name: str) -> int:
    return int(name[:20])


@dataclass
class ListedView:
    """The counts of a scene not in memory, from its ``summary.json`` (the list route's needs)."""

    objects: range
    triangles: int
    bounds: np.ndarray


@dataclass
class ListedScene:
    """A scene as the list route shows it, without opening it."""

    id: str
    name: str | None
    created: str
    view: ListedView
    #: As ``StoredScene``'s: a scene in the store is either whole or refused (never read-only).
    state: str = "ok"
    reason: str | None = None


class ObjectStoreBackend:
    """Scenes in an object store, cached per process under ``data_dir/cache-<pid>-<random>``.

    Parameters
    ----------
    objects : ObjectStore
    data_dir : Path
        Holds this process's cache (and the other processes' caches).
    poll_seconds : float
        Pause between two rounds of looking for other processes' segments.
    """

    def __init__(self, objects: ObjectStore, data_dir: Path, poll_seconds: float = 0.1):
        self.objects = objects
        self.poll_seconds = poll_seconds
        self.root_dir = Path(data_dir)
        self.root_dir.mkdir(parents=True, exist_ok=True)
        self._remove_dead_caches()
        # The pid says whose it is; the suffix keeps apart several stores of one process (tests).
        cache = self.root_dir / f"{CACHE_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        _CACHES_MADE_HERE.add(os.path.realpath(cache))
        self.directory = SceneDirectory(cache)
        self.cache = None
        self.follower: SegmentFollower | None = None
        #: Per scene, the newest checkpoint this process uploaded.
        self._uploaded: dict[str, int] = {}

    def _remove_dead_caches(self) -> None:
        for entry in os.scandir(self.root_dir):
            owner = entry.name[len(CACHE_PREFIX):].split("-", 1)[0]
            if (not entry.name.startswith(CACHE_PREFIX) or not owner.isdigit()
                    or os.path.realpath(entry.path) in _CACHES_MADE_HERE):
                continue
            if int(owner) == os.getpid() or not process_alive(int(owner)):
                # One of this pid not made by this process: left by an earlier process of the same pid.
                shutil.rmtree(entry.path, ignore_errors=True)

    def attach(self, cache) -> None:
        self.cache = cache
        self.follower = SegmentFollower(self, cache)

    # ------------------------------------------------------------ life cycle
    def start(self) -> list[str]:
        """Nothing to open in S3 mode: a scene is opened by its first request."""
        self.directory.remove_leftovers()
        return []

    def close(self) -> None:
        self.follower.stop()

    def opened(self, stored: StoredScene) -> None:
        """Follow the other processes' edits from now on."""
        self.follower.start()

    def forget(self, scene_id: str) -> None:
        """Out of this process's cache (with its lock held)."""
        self.follower.forget(scene_id)
        directory = self.directory.scenes_dir / scene_id
        if directory.exists():
            trash = self.directory.to_trash(directory, scene_id)
            # Memory maps of the removed files stay valid for queries still running.
            if trash is not None:
                shutil.rmtree(trash, ignore_errors=True)

    # ------------------------------------------------------------ opening
    def fetch(self, scene_id: str) -> None:
        """Put the store's newest checkpoint and the records after it into the cache.

        Raises
        ------
        SceneNotFound
            No ``service.json`` in the store.
        SceneDamaged
            No complete checkpoint, or records missing after it.
        StoreUnavailable
        """
        prefix = scene_prefix(scene_id)
        for _ in range(OPEN_ATTEMPTS):
            paths = self.objects.list(prefix + "/")
            metadata = self.objects.get(f"{prefix}/{SERVICE_FILE}") if f"{prefix}/{SERVICE_FILE}" in paths else None
            if metadata is None:
                raise SceneNotFound(scene_id)
            checkpoint = self._newest_checkpoint(scene_id, paths)
            if checkpoint is None:
                raise SceneDamaged(scene_id, "no complete checkpoint in the store")
            base = _checkpoint_seq(checkpoint)
            records = self._records_after(scene_id, paths, base)
            if records is None:
                continue  # moved on while it was read (a newer checkpoint, segments collected)
            staging = self.directory.staging(f"{scene_id}-{uuid.uuid4().hex[:8]}")
            try:
                manifest = self.objects.get(f"{prefix}/checkpoints/{checkpoint}/{MANIFEST}")
                if manifest is None:
                    continue
                files = [entry["file"] for entry in json.loads(manifest)["arrays"].values()]
                try:
                    self.objects.download(f"{prefix}/checkpoints/{checkpoint}", files, staging / SCENE_DIR)
                except FileNotFoundError:
                    continue
                (staging / SCENE_DIR / MANIFEST).write_bytes(manifest)
                with open(staging / journal.JOURNAL_FILE, "wb") as stream:
                    stream.write(b"".join([journal.encode(base, edits.BASE)] + records))
                (staging / SERVICE_FILE).write_bytes(metadata)
                directory = self.directory.scenes_dir / scene_id
                if directory.exists():
                    trash = self.directory.to_trash(directory, scene_id)
                    if trash is not None:
                        shutil.rmtree(trash, ignore_errors=True)
                os.rename(staging, directory)
                return
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        raise SceneDamaged(scene_id, f"its newest state kept moving while {OPEN_ATTEMPTS} attempts read it")

    def _newest_checkpoint(self, scene_id: str, paths: list[str]) -> str | None:
        """The directory name of the newest complete checkpoint among ``paths``."""
        for name in sorted(self._complete_checkpoints(scene_id, paths), key=_checkpoint_seq, reverse=True):
            if "-" not in name or self._marker_names(scene_id, name):
                return name
        return None

    @staticmethod
    def _complete_checkpoints(scene_id: str, paths: list[str]) -> list[str]:
        start = f"{scene_prefix(scene_id)}/checkpoints/"
        return [path[len(start):-len(MANIFEST) - 1] for path in paths
                if path.startswith(start) and path.endswith("/" + MANIFEST)]

    def _marker_names(self, scene_id: str, name: str) -> bool:
        """Whether the segment of ``name``'s number is the reload record naming it."""
        data = self.objects.get(segment_path(scene_id, _checkpoint_seq(name)))
        if data is None:
            return False
        records, _ = journal.read_records(data)
        return bool(records) and records[0].kind == RELOAD and records[0].fields.get("checkpoint") == name

    def _records_after(self, scene_id: str, paths: list[str], base: int) -> list[bytes] | None:
        """The encoded records ``base + 1, base + 2, ...`` of the segments in ``paths``;
        None when a segment vanished or a reload record follows ``base`` (read again)."""
        start = f"{scene_prefix(scene_id)}/journal/"
        firsts = sorted(int(path[len(start):]) for path in paths
                        if path.startswith(start) and path[len(start):].isdigit())
        before = [first for first in firsts if first <= base]
        wanted = before[-1:] + [first for first in firsts if first > base]
        encoded, expected = [], base + 1
        for first in wanted:
            data = self.objects.get(segment_path(scene_id, first))
            if data is None:
                return None
            records, end = journal.read_records(data)
            if end != len(data):
                raise SceneDamaged(scene_id, f"journal segment {first} is damaged")
            for record in records:
                if record.seq < expected:
                    continue
                if record.seq != expected:
                    raise SceneDamaged(scene_id, f"journal record {record.seq} follows {expected - 1}")
                if record.kind == RELOAD:
                    return None
                encoded.append(journal.encode(record.seq, record.kind, record.fields, record.arrays))
                expected += 1
        return encoded

    # ------------------------------------------------------------ edits
    def edit_lock(self, scene_id: str, blocking: bool = True):
        """No lock across processes: the store's conditional creates decide who writes each number."""
        return contextlib.nullcontext(True)

    def journal_writer(self, stored: StoredScene) -> JournalWriter:
        return JournalWriter(SegmentSink(self.objects, stored.id, stored.journal_path), on_failure=self._conflicted)

    def _conflicted(self, writer: JournalWriter) -> None:
        """After a lost race: drop the scene, so that no query sees edits the store does not hold."""
        scene_id = writer.sink.scene_id
        with self.cache.lock_for(scene_id):
            stored = self.cache.scenes.get(scene_id)
            if stored is not None and stored.writer is writer:
                log.warning("scene %s: another process wrote the same journal record; reopening from the store",
                            scene_id)
                self.cache.drop(scene_id)

    def claim_checkpoint(self, stored: StoredScene, seq: int) -> None:
        """Upload the save of new meshes as ``checkpoints/<seq>-<tag>``, then claim ``seq`` (module notes).

        Raises
        ------
        EditConflict
            Another process wrote record ``seq`` first; the upload is deleted.
        """
        writer = stored.writer
        if writer.last_appended:
            # The chain of segments must reach seq - 1 before seq is claimed.
            writer.wait_durable(writer.last_appended)
        name = f"{seq:020d}-{uuid.uuid4().hex[:12]}"
        uploaded = self._upload_checkpoint(stored, name, seq)
        marker = journal.encode(seq, RELOAD, {"checkpoint": name})
        if not self.objects.put_new(segment_path(stored.id, seq), marker):
            self.objects.delete(uploaded)
            raise EditConflict(seq)

    def checkpoint_claimed(self, stored: StoredScene) -> None:
        self._put_summary(stored)

    def _upload_checkpoint(self, stored: StoredScene, name: str, seq: int | None) -> list[str]:
        """Upload the cache's current save as ``checkpoints/<name>`` (manifest last); returns the paths written.

        The save's files are hard-linked aside under the save directory's
        writer lock first, so a save running meanwhile cannot delete them.
        ``seq``: the journal number the save must hold (re-saved until it does).
        """
        directory = stored.directory / SCENE_DIR
        aside = self.directory.staging(f"checkpoint-{uuid.uuid4().hex}")
        aside.mkdir()
        try:
            while True:
                with writer_lock(directory):
                    manifest = json.loads((directory / MANIFEST).read_bytes())
                    files = [entry["file"] for entry in manifest["arrays"].values()]
                    for file in files + [MANIFEST]:
                        os.link(directory / file, aside / file)
                saved = int(manifest["metadata"].get("annotations", {}).get(JOURNAL_SEQ, 0))
                if seq is None or saved == seq:
                    break
                # A background save finished after this one: save this state again (its unchanged arrays are kept).
                for file in os.listdir(aside):
                    os.unlink(aside / file)
                stored.scene.save(directory)
            prefix = f"{scene_prefix(stored.id)}/checkpoints/{name}"
            self.objects.upload(aside, files + [MANIFEST], prefix, last=MANIFEST)
            return [f"{prefix}/{file}" for file in files + [MANIFEST]]
        finally:
            shutil.rmtree(aside, ignore_errors=True)

    def _put_summary(self, stored: StoredScene) -> None:
        view = stored.view
        bounds = view.bounds
        summary = {"seq": view.version, "object_count": len(view.objects), "triangles": int(view.triangles),
                   "bounds": bounds.tolist() if np.isfinite(bounds).all() else None}
        try:
            self.objects.put(f"{scene_prefix(stored.id)}/{SUMMARY_FILE}", json.dumps(summary).encode())
        except StoreUnavailable as error:
            log.warning("scene %s: summary not written (%s)", stored.id, error.detail)

    # ------------------------------------------------------------ checkpoints
    def checkpoint_saved(self, stored: StoredScene) -> None:
        """Upload the cache's save once its number is in the store (with the scene's checkpoint
        lock held, see ``Checkpointer.checkpoint``), then collect what it makes old."""
        scene_id = stored.id
        stored = self.cache.scenes.get(scene_id)
        if stored is None:
            return
        directory = stored.directory / SCENE_DIR
        manifest = json.loads((directory / MANIFEST).read_bytes())
        seq = int(manifest["metadata"].get("annotations", {}).get(JOURNAL_SEQ, 0))
        if seq <= self._uploaded.get(scene_id, -1):
            return
        writer = stored.writer
        if writer is not None and writer.last_appended >= seq:
            # Raises when that record is not (or not yet) the store's: nothing is uploaded.
            writer.wait_durable(seq)
        name = f"{seq:020d}"
        if self.objects.get(f"{scene_prefix(scene_id)}/checkpoints/{name}/{MANIFEST}") is None:
            self._upload_checkpoint(stored, name, seq)
        self._uploaded[scene_id] = seq
        self._put_summary(stored)
        self._collect_garbage(scene_id)

    def _collect_garbage(self, scene_id: str) -> None:
        """Delete checkpoints older than the previous one, and the segments only they need."""
        paths = self.objects.list(scene_prefix(scene_id) + "/")
        kept = sorted(self._complete_checkpoints(scene_id, paths), key=_checkpoint_seq)[-2:]
        if len(kept) < 2:
            return
        oldest_kept = _checkpoint_seq(kept[0])
        protected = {_checkpoint_seq(name) for name in kept if "-" in name}
        checkpoints = f"{scene_prefix(scene_id)}/checkpoints/"
        journal_start = f"{scene_prefix(scene_id)}/journal/"
        firsts = sorted(int(path[len(journal_start):]) for path in paths
                        if path.startswith(journal_start) and path[len(journal_start):].isdigit())
        doomed_segments = {first for first, following in zip(firsts, firsts[1:])
                           if following - 1 <= oldest_kept and first not in protected}
        doomed = [path for path in paths
                  if (path.startswith(checkpoints) and _checkpoint_seq(path[len(checkpoints):]) < oldest_kept)
                  or (path.startswith(journal_start) and path[len(journal_start):].isdigit()
                      and int(path[len(journal_start):]) in doomed_segments)]
        self.objects.delete(doomed)

    # ------------------------------------------------------------ scenes
    def publish_new(self, stored: StoredScene, staging: Path) -> None:
        """Upload a new scene (checkpoint 0, its summary, then ``service.json``), then move it into the cache."""
        prefix = scene_prefix(stored.id)
        manifest = json.loads((staging / SCENE_DIR / MANIFEST).read_bytes())
        files = [entry["file"] for entry in manifest["arrays"].values()] + [MANIFEST]
        self.objects.upload(staging / SCENE_DIR, files, f"{prefix}/checkpoints/{0:020d}", last=MANIFEST)
        self._put_summary(stored)
        self.objects.put_new(f"{prefix}/{SERVICE_FILE}", (staging / SERVICE_FILE).read_bytes())
        os.rename(staging, stored.directory)

    def delete(self, scene_id: str) -> None:
        """Delete ``service.json`` (the scene is gone from then on), then the rest of it."""
        if not SCENE_ID.fullmatch(scene_id):
            raise SceneNotFound(scene_id)
        prefix = scene_prefix(scene_id)
        with self.cache.lock_for(scene_id):
            if self.objects.get(f"{prefix}/{SERVICE_FILE}") is None:
                self.cache.drop(scene_id)
                raise SceneNotFound(scene_id)
            self.objects.delete([f"{prefix}/{SERVICE_FILE}"])
            self.cache.drop(scene_id)
        self.objects.delete(self.objects.list(prefix + "/"))

    def list(self) -> list:
        """Every scene in the store, oldest first: those in memory as they are, the others from
        their ``summary.json`` (counts as of their last checkpoint), without opening them."""
        found = []
        for scene_id in self.objects.folders("scenes/"):
            if not SCENE_ID.fullmatch(scene_id):
                continue
            stored = self.cache.scenes.get(scene_id)
            if stored is not None:
                found.append(stored)
                continue
            metadata = self.objects.get(f"{scene_prefix(scene_id)}/{SERVICE_FILE}")
            if metadata is None:
                continue  # being created, or deleted
            summary = self.objects.get(f"{scene_prefix(scene_id)}/{SUMMARY_FILE}")
            if summary is None:
                try:
                    found.append(self.cache.get(scene_id))
                except SceneNotFound:
                    pass
                continue
            metadata, summary = json.loads(metadata), json.loads(summary)
            bounds = np.full((2, 3), np.nan) if summary["bounds"] is None else np.array(summary["bounds"])
            found.append(ListedScene(id=scene_id, name=metadata.get("name"), created=str(metadata.get("created", "")),
                                     view=ListedView(objects=range(summary["object_count"]),
                                                     triangles=summary["triangles"], bounds=bounds)))
        return sorted(found, key=lambda stored: (stored.created, stored.id))


class SegmentFollower:
    """A thread applying the segments other processes put into the store, to the scenes in memory.

    Parameters
    ----------
    backend : ObjectStoreBackend
    cache : service.store.cache.SceneCache
    """

    def __init__(self, backend: ObjectStoreBackend, cache):
        self.backend = backend
        self.objects = backend.objects
        self.cache = cache
        self._thread: threading.Thread | None = None
        self._starting = threading.Lock()
        self._stopping = threading.Event()
        self._deleted_checked: dict[str, float] = {}

    def start(self) -> None:
        """Start following (unless it runs)."""
        if self._thread is None:
            with self._starting:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._poll_forever, name="store poller", daemon=True)
                    self._thread.start()

    def stop(self) -> None:
        """Stop following (it starts again with the next scene opened, or :meth:`start`)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._stopping.clear()

    def forget(self, scene_id: str) -> None:
        self._deleted_checked.pop(scene_id, None)

    def _poll_forever(self) -> None:
        while not self._stopping.is_set():
            started = time.monotonic()
            for scene_id, stored in list(self.cache.scenes.items()):
                try:
                    self._poll(scene_id, stored)
                except (StoreUnavailable, SceneNotFound):
                    pass
                except Exception:
                    log.exception("following scene %s in the store failed; trying again", scene_id)
            self._stopping.wait(max(0.0, self.backend.poll_seconds - (time.monotonic() - started)))

    @staticmethod
    def _busy(stored: StoredScene) -> bool:
        return stored.writer is not None and not stored.writer.idle

    def _poll(self, scene_id: str, stored: StoredScene) -> None:
        """Apply the next segment of another process, if there is one; drop a deleted scene."""
        if self._busy(stored):
            return
        now = time.monotonic()
        later = []
        if now - self._deleted_checked.get(scene_id, 0.0) >= DELETED_CHECK_SECONDS:
            self._deleted_checked[scene_id] = now
            if self.objects.get(f"{scene_prefix(scene_id)}/{SERVICE_FILE}", timeout=0) is None:
                with self.cache.lock_for(scene_id):
                    if self.cache.scenes.get(scene_id) is stored:
                        self.cache.drop(scene_id)
                return
            # Listed before the next segment is looked for: see below.
            later = self.objects.list(f"{scene_prefix(scene_id)}/journal/", timeout=0,
                                      after=segment_path(scene_id, stored.seq + 1))
        data = self.objects.get(segment_path(scene_id, stored.seq + 1), timeout=0)
        if data is not None:
            # Segment after segment until there is no next one: an editor's
            # stream of moves is one segment per put, many per poll interval.
            while data is not None and self.follow_segment(scene_id, stored, data):
                stored = self.cache.scenes.get(scene_id)
                if stored is None or self._stopping.is_set():
                    return
                data = self.objects.get(segment_path(scene_id, stored.seq + 1), timeout=0)
        elif later:
            # Segments are created in order: later ones without the next one means it
            # was collected after a newer checkpoint (this process fell behind by two
            # checkpoints): only reopening catches up.
            with self.cache.lock_for(scene_id):
                if self.cache.scenes.get(scene_id) is stored and not self._busy(stored):
                    log.info("scene %s: fell behind the store's journal; reopening", scene_id)
                    old = stored.view
                    self.cache.events.announce_difference(
                        self.cache.replace(scene_id, self.cache.reopen(scene_id)), old)

    def follow_segment(self, scene_id: str, stored: StoredScene, data: bytes) -> bool:
        """Apply a segment another process wrote (``data`` starts at ``stored.seq + 1``);
        returns whether it was applied (False: the scene changed meanwhile, or the segment is damaged)."""
        records, end = journal.read_records(data)
        if not records or end != len(data):
            log.error("scene %s: journal segment %d in the store is damaged", scene_id, stored.seq + 1)
            return False
        with self.cache.lock_for(scene_id):
            if self.cache.scenes.get(scene_id) is not stored or self._busy(stored) or records[0].seq != stored.seq + 1:
                return False  # changed meanwhile: the next round looks again
            if any(record.kind == RELOAD for record in records):
                old = stored.view
                stored = self.cache.replace(scene_id, self.cache.reopen(scene_id))
                self.cache.events.announce_difference(stored, old)
                return True
            with open(stored.journal_path, "ab") as stream:
                stream.write(data)
            self.cache.follow(scene_id)
            return True
