"""The scene store: scenes in memory, each saved under ``PICK_DATA_DIR``.

Layout of the data directory::

    scenes/<id>/scene/         Scene.save output (manifest.json last, crash-safe)
    scenes/<id>/service.json   {"id", "name", "created", "build_ms"}, written once
    scenes/<id>/edit.lock      advisory lock: one editor at a time, across processes
    staging/<pid>-<id>/        a new scene being written; renamed into scenes/ whole
    trash/<id>-<random>/       a deleted scene, renamed out of scenes/ whole
    changes                    8 bytes, rewritten after every change (see ChangeToken)

Crash safety: a new scene is written completely under ``staging/`` and then
renamed into ``scenes/`` (one atomic rename, then an fsync of ``scenes/``),
so every directory under ``scenes/`` is a complete scene; an edit is
``Scene.save`` into the scene's own directory, which switches manifests
atomically. Both finish before the route answers 2xx. Leftovers of a crash
(staging directories of dead processes, trash) are removed at start-up.

Scene ids are 32 lowercase hex digits (uuid4); an id from a URL is checked
against that pattern before it is used in any path.

Several worker processes (``PICK_WORKERS``) share one data directory. Each
opens the scenes by memory map (the page cache holds one copy of the mesh
arrays for all) and notices the others' changes with a ``stat`` of the
scene's manifest: ``Scene.save`` replaces ``manifest.json`` by rename, so its
inode changes with every save; a different inode (or mtime, or size) means
"reopen", a missing directory means "deleted", and an id that is not in
memory is looked up on disk. The ``stat`` costs more than a pick's other
bookkeeping, so a request makes it only when the shared change token
(:class:`ChangeToken`, ``changes`` in the data directory) has changed since
the scene was last checked, or that check is older than
:data:`RECHECK_SECONDS`. Edits hold ``edit.lock`` (``flock``) while
they reload a stale scene, change it and save it, so two workers never lose
each other's edits.

Queries and edits: a query runs on the scene's immutable snapshot (see
``bvh.scene``). An edit groups its changes under the scene's lock and then
publishes a new :class:`SceneView` (the object table the routes answer with)
before the snapshot is rebuilt, so a query that reads the view, intersects,
and finds the same view afterwards saw one consistent state
(:meth:`StoredScene.consistent`).
"""

import contextlib
import errno
import json
import logging
import mmap
import os
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

#: A query retried this often when edits keep landing while it runs, then it
#: is answered from the last attempt's consistent re-read.
CONSISTENT_ATTEMPTS = 8

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
    objects : dict of int to bvh.ObjectInfo
        Live objects by id.
    triangles : int
    bounds : (2, 3) float64, NaN when empty
    transform_rows : dict of int to list
        Each object's transform as nested lists, for the one-ray pick's
        plain-Python arithmetic.
    """

    objects: dict
    triangles: int
    bounds: np.ndarray
    transform_rows: dict


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
    signature : tuple
        ``(inode, mtime_ns, size)`` of the manifest this process last read or
        wrote; another process's save changes it.
    view : SceneView
        Replaced (never changed) by each edit.
    mesh_arrays : dict of int to (vertices (V, 3), faces (F, 3))
        Each mesh's arrays, fetched once: a mesh never changes after it is added.
    manifest : str
        Path of the saved manifest, stat'ed to notice other processes' saves.
    checked_token, recheck_at : int or None, float
        The change token when the manifest was last found unchanged, and the
        ``time.monotonic()`` after which it is stat'ed again regardless.
    """

    id: str
    name: str | None
    created: str
    build_ms: float
    scene: bvh.Scene
    directory: Path
    signature: tuple = ()
    view: SceneView | None = None
    mesh_arrays: dict = field(default_factory=dict)
    manifest: str = ""
    checked_token: int | None = None
    recheck_at: float = 0.0

    def __post_init__(self):
        self.manifest = _manifest_path(self.directory)

    def publish(self) -> None:
        """Take a new :class:`SceneView` (call with the scene's lock held, after changing it)."""
        scene = self.scene
        for info in scene.meshes:
            if info.id not in self.mesh_arrays:
                self.mesh_arrays[info.id] = (scene.mesh_vertices(info.id), scene.mesh_faces(info.id))
        objects = {info.id: info for info in scene.objects}
        self.view = SceneView(objects=objects, triangles=scene.triangle_count, bounds=scene.bounds,
                              transform_rows={oid: info.transform.tolist() for oid, info in objects.items()})

    def consistent(self, query: Callable[[bvh.Scene], Result]) -> tuple[Result, SceneView]:
        """Run a query and return it with the view of the same scene state.

        An edit publishes its view before the snapshot that queries use is
        rebuilt; a query bracketed by two reads of the same view ran on that
        view's snapshot. When an edit lands in between, the query runs again.
        """
        for _ in range(CONSISTENT_ATTEMPTS):
            view = self.view
            result = query(self.scene)
            if self.view is view:
                return result, view
        # Edits landing faster than a query runs: wait for the current one to finish.
        with _scene_lock(self.scene):
            view = self.view
            return query(self.scene), view


def _scene_lock(scene: bvh.Scene):
    # Several edits as one change: queries answer from the scene as it was
    # until the block ends, and other editors wait.
    return scene.batch()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _fsync_directory(directory: Path) -> None:
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError as error:
        # Some file systems refuse fsync on a directory; they order renames anyway.
        if error.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(descriptor)


def write_json_atomically(path: Path, content: dict) -> None:
    """Write ``path`` so that a crash leaves either the old file or the new one."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    with open(temporary, "wb") as stream:
        stream.write(json.dumps(content, indent=1).encode())
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(temporary, path)
    _fsync_directory(path.parent)


def _manifest_path(directory: Path) -> str:
    return os.path.join(directory, SCENE_DIR, MANIFEST)


def _manifest_signature(directory: Path | str) -> tuple:
    """Raises FileNotFoundError when the scene is gone."""
    status = os.stat(_manifest_path(directory) if isinstance(directory, Path) else directory)
    return status.st_ino, status.st_mtime_ns, status.st_size


@contextlib.contextmanager
def _file_lock(path: Path):
    """An exclusive ``flock`` on ``path`` (created if missing), released on exit."""
    if fcntl is None:
        yield
        return
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


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
            self._token[0] = int.from_bytes(os.urandom(8), "little")


class SceneStore:
    """Every scene of one data directory, in memory and on disk.

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
        self._scenes: dict[str, StoredScene] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self.changes = ChangeToken(self.data_dir / CHANGE_TOKEN_FILE)
        #: Set once start-up has opened the saved scenes and warmed the pick path (see ``service.app``).
        self.ready = False
        #: What start-up is doing while not ready, in words for ``/ready``.
        self.waiting_for = "opening the saved scenes"
        #: What is still compiling in the background once ready (None: nothing).
        self.compiling: str | None = None

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
        directory = self.scenes_dir / scene_id
        # The signature is read first: a save that lands while the scene is
        # being read makes it stale, and the next request reads it again.
        signature = _manifest_signature(directory)
        try:
            metadata = json.loads((directory / SERVICE_FILE).read_text())
        except (OSError, ValueError) as error:
            raise ValueError(f"{SERVICE_FILE} is unreadable: {error}") from None
        if not isinstance(metadata, dict) or metadata.get("id") != scene_id:
            raise ValueError(f"{SERVICE_FILE} does not describe scene {scene_id}")
        scene = bvh.Scene.open(directory / SCENE_DIR, verify=verify)
        stored = StoredScene(id=scene_id, name=metadata.get("name"), created=str(metadata.get("created", "")),
                             build_ms=float(metadata.get("build_ms", 0.0)), scene=scene, directory=directory,
                             signature=signature)
        with _scene_lock(scene):
            stored.publish()
        return stored

    # ------------------------------------------------------------ lookups
    def _lock_for(self, scene_id: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(scene_id, threading.Lock())

    def get(self, scene_id: str, reload: bool = True) -> StoredScene | None:
        """The scene, reopened first if another process changed it.

        Parameters
        ----------
        scene_id : str
        reload : bool
            False: return None instead of reading the scene from disk, so an
            async caller can do that on a worker thread.

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
            try:
                if _manifest_signature(stored.manifest) == stored.signature:
                    stored.checked_token = token
                    stored.recheck_at = now + RECHECK_SECONDS
                    return stored
                if self._lock_for(scene_id).locked():
                    # This process is changing it right now: its copy in memory is the newest.
                    return stored
            except FileNotFoundError:
                self._scenes.pop(scene_id, None)
                raise SceneNotFound(scene_id) from None
        return self._reload(scene_id) if reload else None

    def _reload(self, scene_id: str) -> StoredScene:
        with self._lock_for(scene_id):
            stored = self._scenes.get(scene_id)
            try:
                signature = _manifest_signature(self.scenes_dir / scene_id)
            except FileNotFoundError:
                self._scenes.pop(scene_id, None)
                raise SceneNotFound(scene_id) from None
            if stored is not None and stored.signature == signature:
                return stored
            stored = self._open_changed(scene_id)
            self._scenes[scene_id] = stored
            return stored

    def _open_changed(self, scene_id: str) -> StoredScene:
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
            self._scenes.pop(gone, None)
        return sorted(found, key=lambda stored: (stored.created, stored.id))

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
            scene.save(staging / SCENE_DIR)
            write_json_atomically(staging / SERVICE_FILE, metadata)
            _fsync_directory(staging)
            os.rename(staging, directory)
            _fsync_directory(self.scenes_dir)
            self.changes.announce()
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        stored = StoredScene(id=scene_id, name=name, created=metadata["created"], build_ms=metadata["build_ms"],
                             scene=scene, directory=directory, signature=_manifest_signature(directory))
        with _scene_lock(scene):
            stored.publish()
        self._scenes[scene_id] = stored
        return stored

    def edit(self, scene_id: str, change: Callable[[bvh.Scene], Result],
             prepare: Callable[[bvh.Scene], None] | None = None) -> tuple[StoredScene, Result]:
        """Change a scene as one step for queries, save it, then return.

        Parameters
        ----------
        scene_id : str
        change : callable(scene) -> result
            Makes the changes; runs with the scene's lock held, so queries
            see all of them or none. Keep slow work out of it.
        prepare : callable(scene), optional
            Slow work that queries need not wait for (building a new mesh's
            BVH: ``add_mesh`` changes nothing a query sees).

        Returns
        -------
        (StoredScene, result)

        Raises
        ------
        SceneNotFound
        ValueError, bvh.UnknownIdError
            From ``change``: the scene is then read back from its last save,
            so a refused edit leaves nothing behind.
        """
        with self._lock_for(scene_id):
            if not SCENE_ID.fullmatch(scene_id) or not (self.scenes_dir / scene_id).is_dir():
                raise SceneNotFound(scene_id)
            with _file_lock(self.scenes_dir / scene_id / EDIT_LOCK):
                stored = self._current(scene_id)
                scene = stored.scene
                try:
                    if prepare is not None:
                        prepare(scene)
                    with _scene_lock(scene):
                        result = change(scene)
                        stored.publish()
                    # Rebuild the snapshot now, not in the first query after
                    # the edit: that query may run on the event loop, and
                    # Scene.save below holds the scene's lock while it writes.
                    _build_snapshot(scene)
                    scene.save(stored.directory / SCENE_DIR)
                    self.changes.announce()
                except BaseException:
                    # Back to the last save: a refused or failed edit leaves nothing behind.
                    self._scenes[scene_id] = self._open_changed(scene_id)
                    raise
                stored.signature = _manifest_signature(stored.directory)
                return stored, result

    def _current(self, scene_id: str) -> StoredScene:
        """The scene as saved last, by any process (call with its edit lock held)."""
        directory = self.scenes_dir / scene_id
        try:
            signature = _manifest_signature(directory)
        except FileNotFoundError:
            self._scenes.pop(scene_id, None)
            raise SceneNotFound(scene_id) from None
        stored = self._scenes.get(scene_id)
        if stored is None or stored.signature != signature:
            stored = self._open_changed(scene_id)
            self._scenes[scene_id] = stored
        return stored

    def delete(self, scene_id: str) -> None:
        """Remove a scene from memory and disk (gone from disk before this returns)."""
        with self._lock_for(scene_id):
            directory = self.scenes_dir / scene_id
            if not SCENE_ID.fullmatch(scene_id) or not directory.is_dir():
                self._scenes.pop(scene_id, None)
                raise SceneNotFound(scene_id)
            with _file_lock(directory / EDIT_LOCK):
                trash = self.trash_dir / f"{scene_id}-{uuid.uuid4().hex[:8]}"
                try:
                    os.rename(directory, trash)
                except FileNotFoundError:
                    raise SceneNotFound(scene_id) from None
                _fsync_directory(self.scenes_dir)
                self.changes.announce()
            self._scenes.pop(scene_id, None)
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
