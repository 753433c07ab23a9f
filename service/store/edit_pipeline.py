"""The edit pipeline: an edit applied, journaled, answered once durable, grouped with its neighbours.

An edit of the object table (moves, flags, names, added instances and
shapes, removals) or of a mesh's vertices is a journal record
(:mod:`service.store.edits`): applied in memory under the scene's locks,
appended to the journal, and answered once the commit that covers it
returns (group commit, :mod:`service.store.journal_writer`). Adding meshes
saves a checkpoint at once instead (a replay would have to rebuild their
trees).

Queries and edits: a query runs on the scene's immutable snapshot (see
``bvh.scene``). An edit groups its changes under the scene's lock and then
publishes a new :class:`~service.store.scenes.SceneView` (the object table
the routes answer with) before the snapshot is rebuilt, so a query that
reads the view, intersects, and finds the same view afterwards saw one
consistent state (:meth:`StoredScene.consistent`).
"""

import asyncio
import collections
from dataclasses import dataclass, field
from typing import Callable

from starlette.concurrency import run_in_threadpool

import bvh

from . import edits, journal
from .cache import SceneCache
from .checkpoints import Checkpointer
from .edits import Change
from .errors import SceneNotFound, refusing_full_disk
from .idempotency import ANNOTATION, REQUEST_FIELD, KeyEntry, KeyedWrite, Replayed, record_digest
from .journal import Record
from .scenes import JOURNAL_SEQ, SCENE_DIR, SCENE_ID, Result, SceneView, StoredScene, build_snapshot, scene_lock

#: Edits of up to this many objects may be applied on the event loop (see :meth:`EditPipeline.record_soon`).
SMALL_EDIT_OBJECTS = 64

#: Answers larger than this are left out of a checkpoint's annotation (the base record holds them).
MAX_ANNOTATED_ANSWER_BYTES = 16 * 1024

#: How long a small edit waits on the event loop before it tries a taken scene lock again.
LOCKED_RETRY_SECONDS = 0.0005


@dataclass
class Staged:
    """An edit applied and appended, not yet known durable."""

    stored: StoredScene
    change: Change
    view: SceneView
    writer: object
    seq: int


@dataclass
class EditGroup:
    """Small edits that arrived on the event loop together, applied as one.

    A group of object edits keeps gathering until its turn comes; its
    records touch disjoint objects (an edit of an object already in the
    group starts the next group), so each editor's answer describes its
    objects as its own edit left them. Any other small edit is a group of
    its own (``mergeable`` False)."""

    mergeable: bool
    records: list = field(default_factory=list)
    #: The key of a keyed edit (alone in its group).
    keyed: KeyedWrite | None = None
    futures: list = field(default_factory=list)
    ids: set = field(default_factory=set)


def record_ids(record: Record) -> set:
    """The objects an ``objects`` record touches."""
    return set(record.arrays["moved"].tolist()) | {entry["id"] for entry in record.fields.get("changes", [])}


def record_size(record: Record) -> int:
    """How many objects a record of the object table touches: what applying it costs."""
    if record.kind == edits.OBJECTS:
        return record.arrays["moved"].shape[0] + len(record.fields.get("changes", []))
    return len(record.fields.get("objects") or record.fields.get("ids") or [])


def fail(futures: list, error: BaseException) -> None:
    """Give every waiting future of ``futures`` the exception ``error``."""
    for future in futures:
        if not future.done():
            future.set_exception(error)


class EditPipeline:
    """Applies, journals and answers edits.

    Parameters
    ----------
    cache : SceneCache
    checkpoints : Checkpointer
        Told of each durable edit.
    """

    def __init__(self, cache: SceneCache, checkpoints: Checkpointer):
        self.cache = cache
        self.backend = cache.backend
        self.events = cache.events
        self.checkpoints = checkpoints
        #: Per scene, the small edits waiting on the event loop, groups in
        #: arrival order (see :meth:`record_soon`).
        self._queues: dict[str, collections.deque] = {}

    def record(self, scene_id: str, record: Record,
               keyed: KeyedWrite | None = None) -> tuple[StoredScene, Change, SceneView]:
        """Apply a journal record and return once it is durable (see ``SceneStore.record``)."""
        staged = self.stage(scene_id, record, blocking=True, keyed=keyed)
        staged.writer.wait_durable(staged.seq)
        return self._settled(staged)

    async def record_soon(self, scene_id: str, record: Record,
                          keyed: KeyedWrite | None = None) -> tuple[StoredScene, Change, SceneView]:
        """:meth:`record` for the event loop.

        A small edit is applied on the loop when the scene's locks are free
        (a move takes a fraction of a millisecond, less than handing it to a
        worker thread), and the loop goes on while its commit runs; otherwise
        it runs on a worker thread. Small object edits that arrive together
        (several editors dragging at once) are applied as one edit and one
        journal record (:class:`EditGroup`), so that their cost is shared as
        their commit is. A scene not in memory is opened on a worker thread
        first.

        A scene's small edits are applied in the order they arrived. While a
        checkpoint or another worker holds the scene's locks, they wait on the
        loop rather than on worker threads (threads blocked on the locks would
        hold them in turn, and small edits would keep finding them taken),
        and the later ones wait behind the first: an edit that overtook an
        earlier one of the same object would leave the earlier one's value.
        """
        if SCENE_ID.fullmatch(scene_id) and scene_id not in self.cache.scenes:
            await run_in_threadpool(self.cache.get, scene_id)
        if record.kind == edits.VERTICES or record_size(record) > SMALL_EDIT_OBJECTS:
            # A refit, or many objects: a worker thread, the loop goes on.
            return await run_in_threadpool(self.record, scene_id, record, keyed)
        loop = asyncio.get_running_loop()
        waiting = self._queues.get(scene_id)
        if waiting is None:
            waiting = self._queues[scene_id] = collections.deque()
            loop.call_soon(self._apply_waiting, scene_id)
        # A keyed edit is a group of its own: its record holds its key and its own answer.
        mergeable = record.kind == edits.OBJECTS and keyed is None
        ids = record_ids(record) if mergeable else set()
        group = waiting[-1] if waiting else None
        if group is None or not (mergeable and group.mergeable and ids.isdisjoint(group.ids)):
            group = EditGroup(mergeable, keyed=keyed)
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
            staged = self.stage(scene_id, merged, blocking=False, keyed=group.keyed)
        except (ValueError, LookupError, SceneNotFound) as error:
            waiting.popleft()
            if single:
                fail(group.futures, error)
            else:
                # One of them is refused: each on its own, in its place, so that only it is.
                waiting.extendleft(reversed([EditGroup(False, [record], [future])
                                             for record, future in zip(group.records, group.futures)]))
            return True
        except BaseException as error:
            waiting.popleft()
            fail(group.futures, error)
            return True
        if staged is None:
            return False
        waiting.popleft()
        self._settle_when_durable(staged, group.futures)
        return True

    def _settle_when_durable(self, staged: Staged, futures: list) -> None:
        """Answer ``futures`` with the staged edit's result once its commit returns
        (a callback on the journal's future: no task of its own)."""
        try:
            waiting = staged.writer.durable_future(staged.seq)
        except BaseException as error:
            fail(futures, error)
            return
        if waiting is None:
            self._settle(staged, futures, None)
        else:
            waiting.add_done_callback(lambda done: self._settle(staged, futures, done))

    def _settle(self, staged: Staged, futures: list, durable: "asyncio.Future | None") -> None:
        try:
            if durable is not None:
                durable.result()
            result = self._settled(staged)
        except BaseException as error:
            fail(futures, error)
            return
        for future in futures:
            if not future.done():
                future.set_result(result)

    def stage(self, scene_id: str, record: Record, blocking: bool,
              keyed: KeyedWrite | None = None) -> Staged | None:
        """Apply and append a record (not yet durable); None when ``blocking`` is
        False and the scene's locks are taken.

        ``keyed``: the record holds its idempotency key and answer
        (:mod:`service.store.idempotency`), looked up first, with the scene's
        locks held and every other process's records followed: a key found
        raises :class:`Replayed` and nothing is applied.

        Raises
        ------
        Replayed, KeyReused
        """
        if not SCENE_ID.fullmatch(scene_id):
            raise SceneNotFound(scene_id)
        lock = self.cache.lock_for(scene_id)
        if not lock.acquire(blocking=blocking):
            return None
        try:
            with self.backend.edit_lock(scene_id, blocking) as locked:
                if not locked:
                    return None
                stored = self.cache.writable(scene_id)
                digest = entry = None
                if keyed is not None:
                    digest = record_digest(keyed.request, record.kind, record.fields, record.arrays)
                    found = stored.keys.find(keyed.request.key, digest)
                    if found is not None:
                        raise Replayed(found, stored.writer)
                scene = stored.scene
                with scene_lock(scene):
                    change = edits.apply(scene, record)
                    seq = stored.seq + 1
                    fields = dict(record.fields)
                    if record.kind == edits.ADD:
                        fields["ids"] = change.objects
                    stored.seq = seq
                    scene.annotate(JOURNAL_SEQ, seq)
                    stored.publish(change, new_meshes=False)
                    view = stored.view
                    if keyed is not None:
                        entry = KeyEntry.made(keyed.request, digest, keyed.status, keyed.answer_of(change, view), seq)
                        fields[REQUEST_FIELD] = entry.fields()
                    data = journal.encode(seq, record.kind, fields, record.arrays)
                try:
                    with refusing_full_disk():
                        stored.writer.append(data, seq)
                except BaseException:
                    # Not journaled (nothing of it is left there): back to what the journal holds.
                    self.cache.recover(scene_id)
                    raise
                if entry is not None:
                    stored.keys.add(entry)
                stored.journal_end += len(data)
                self.cache.directory.changes.announce()
                # The queries' snapshot is brought up to date by the next
                # query, not here: edits in a row (a drag, a stream of moves)
                # refit the top level once, not once each.
                return Staged(stored, change, view, stored.writer, seq)
        finally:
            lock.release()

    def _settled(self, staged: Staged) -> tuple[StoredScene, Change, SceneView]:
        """After a staged edit is durable: its change event, a checkpoint when due."""
        self.events.announce(staged.stored, staged.change)
        self.checkpoints.due(staged.stored)
        return staged.stored, staged.change, staged.view

    def edit(self, scene_id: str, change: Callable[[bvh.Scene], Result],
             prepare: Callable[[bvh.Scene], None] | None = None,
             describe: Callable[[Result], Change] | None = None,
             keyed: KeyedWrite | None = None) -> tuple[StoredScene, Result]:
        """Change a scene as one step for queries and save a checkpoint of it (see ``SceneStore.edit``).

        ``keyed`` (with its ``digest``): looked up first, with the scene's locks
        held (a key found raises :class:`Replayed`, nothing changes), else
        recorded with the save (an annotation) and in the restarted journal's
        base record; ``keyed.answer(result, None)`` is its answer.
        """
        if not SCENE_ID.fullmatch(scene_id):
            raise SceneNotFound(scene_id)
        # Its save must not be overwritten by a background checkpoint's older one.
        with self.checkpoints.running(scene_id), self.cache.lock_for(scene_id):
            with self.backend.edit_lock(scene_id):
                stored = self.cache.writable(scene_id)
                if keyed is not None:
                    found = stored.keys.find(keyed.request.key, keyed.digest)
                    if found is not None:
                        raise Replayed(found, stored.writer)
                try:
                    with refusing_full_disk():
                        seq, result, described = self._change_and_save(stored, change, prepare, describe, keyed)
                        self.backend.claim_checkpoint(stored, seq)
                        stored.restart_journal(seq)
                    self.cache.directory.changes.announce()
                except BaseException:
                    # Back to what is stored: a refused or failed edit leaves nothing behind.
                    self.cache.recover(scene_id)
                    raise
        self.backend.checkpoint_claimed(stored)
        if described is not None:
            self.events.announce(stored, described)
        return stored, result

    @staticmethod
    def _change_and_save(stored: StoredScene, change, prepare, describe,
                         keyed: KeyedWrite | None = None) -> tuple[int, object, Change | None]:
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
        with scene_lock(scene):
            result = change(scene)
            seq = stored.seq + 1
            stored.seq = seq
            scene.annotate(JOURNAL_SEQ, seq)
            described = describe(result) if describe is not None else None
            stored.publish(described)
            if keyed is not None:
                entry = KeyEntry.made(keyed.request, keyed.digest, keyed.status, keyed.answer(result, None), seq)
                stored.keys.add(entry)
                # Saved with the checkpoint (whose annotations are small: without a large answer).
                noted = entry.fields(with_seq=True)
                if entry.size > MAX_ANNOTATED_ANSWER_BYTES:
                    noted.pop("answer", None)
                scene.annotate(ANNOTATION, noted)
        build_snapshot(scene)
        scene.save(stored.directory / SCENE_DIR)
        return seq, result, described
