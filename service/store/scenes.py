"""One stored scene: the ``bvh.Scene``, its metadata, its journal's position, its published view.

Scene ids are 32 lowercase hex digits (uuid4); an id from a URL is checked
against :data:`SCENE_ID` before it is used in any path.
"""

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TypeVar

import numpy as np

import bvh

from . import edits, journal
from .edits import Change
from .errors import SceneReadOnly
from .idempotency import KEYS_FIELD, KeyTable
from .integrity import JournalDamage, new_journal_id, write_sync_mark
from .journal import JOURNAL_FILE
from .journal_writer import JournalWriter
from .views import ObjectTable

SCENE_ID = re.compile(r"[0-9a-f]{32}")
SERVICE_FILE = "service.json"
SCENE_DIR = "scene"
EDIT_LOCK = "edit.lock"
MANIFEST = "manifest.json"
#: The annotation of a checkpoint (``Scene.save``) naming the last journal record it holds.
JOURNAL_SEQ = "journal_seq"

Result = TypeVar("Result")


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
    journal_id : str or None
        The ``id`` of the journal's base record, which its sync marks repeat.
    damage : JournalDamage or None
        Set when the journal is damaged: the scene holds the records before
        the damage and is read-only (:meth:`check_writable`).
    keys : KeyTable
        The idempotency keys of its recent writes (:mod:`service.store.idempotency`).
    origin : dict or None
        ``{"key", "digest", "at"}`` of the keyed create that made it (from ``service.json``).
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
    journal_id: str | None = None
    damage: JournalDamage | None = None
    keys: KeyTable = field(default_factory=KeyTable)
    origin: dict | None = None

    def __post_init__(self):
        self.journal_path = os.path.join(self.directory, JOURNAL_FILE)

    @property
    def mesh_arrays(self) -> dict:
        return self.view.mesh_arrays

    @property
    def state(self) -> str:
        """``ok``, or ``damaged`` when its journal is (it is then served read-only)."""
        return "ok" if self.damage is None else "damaged"

    @property
    def reason(self) -> str | None:
        """Why it is damaged, in words (None when it is not)."""
        return None if self.damage is None else self.damage.describe()

    def check_writable(self) -> None:
        """Raise :class:`SceneReadOnly` when the scene is damaged: its journal is never written then."""
        if self.damage is not None:
            raise SceneReadOnly(self.id, self.damage.describe())

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

        An edit publishes its view inside the scene's batch (``EditPipeline.stage``),
        so the view read with the scene's lock held matches the state the
        query is pinned to (``bvh.Scene.pinned``); edits landing while it runs
        change neither, and wait for nothing.
        """
        with self.scene.pinned(lambda: self.view) as view:
            return query(self.scene), view

    def journal_position(self) -> tuple[int, int] | None:
        """``(inode, size)`` of the scene's journal now: ``(-1, 0)`` when it has none
        yet (a scene saved before journals), None when the scene is gone."""
        try:
            status = os.stat(self.journal_path)
            return status.st_ino, status.st_size
        except FileNotFoundError:
            return (-1, 0) if (self.directory / SERVICE_FILE).exists() else None

    def restart_journal(self, base: int, position: tuple[int, int] | None = None) -> None:
        """Replace the journal by one continuing checkpoint ``base``, keeping the
        records after it (call with the scene's locks held and this scene up to date).

        ``position``: ``(inode, offset)`` of the journal where the records
        after ``base`` start, taken with ``base``; their bytes are then copied
        as they are, not read and written again record by record.

        Raises
        ------
        SceneReadOnly
            The journal is damaged: it is left as it is.
        """
        self.check_writable()
        if base >= self.seq:
            kept = []
        elif position is not None and position[0] == self.journal_inode:
            with open(self.journal_path, "rb") as stream:
                stream.seek(position[1])
                kept = [stream.read(self.journal_end - position[1])]
        else:
            try:
                records, _, _, _ = journal.read_file(self.journal_path)
            except FileNotFoundError:
                records = []
            kept = [journal.encode(record.seq, record.kind, record.fields, record.arrays)
                    for record in records if record.kind != edits.BASE and record.seq > base]
        self.journal_id = new_journal_id()
        fields = {"id": self.journal_id}
        # The keys of the records dropped here move to the base record (none: the old format).
        carried = self.keys.through(base)
        if carried:
            fields[KEYS_FIELD] = carried
        journal.write_new(self.journal_path, [journal.encode(base, edits.BASE, fields)] + kept)
        status = os.stat(self.journal_path)
        self.journal_inode, self.journal_end = status.st_ino, status.st_size
        write_sync_mark(self.journal_path, self.journal_id, status.st_size)
        self.checkpoint_seq = max(self.checkpoint_seq, base)
        if self.seq <= base:
            self.pending_since = None


def scene_lock(scene: bvh.Scene):
    """Several edits as one change, and other editors wait.

    The store's blocks are short: a query that needs the change's snapshot
    waits for the block rather than the block bringing the previous one up
    to date first.
    """
    return scene.batch(answering=False)


def build_snapshot(scene: bvh.Scene) -> None:
    """Bring the queries' snapshot up to date now.

    Any query builds the snapshot; this one traces a single ray over an
    empty window, so it costs the rebuild and nothing else. A closest-hit
    query, not an occlusion one: its kernel is compiled before /ready
    (the pick path), so an edit soon after a first start does not wait
    for the occlusion kernel to compile.
    """
    scene.intersect(np.zeros((1, 3)), np.array([[0.0, 0.0, 1.0]]), tmin=0.0, tmax=0.0)
