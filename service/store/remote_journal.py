"""A scene's journal in the object store: segments created conditionally, with group commit.

The journal of a scene in the store is a sequence of objects
``scenes/<id>/journal/<first seq:020d>``, each one or more
:func:`service.journal.encode` frames with contiguous numbers; the segment
after it starts at its last number + 1. A segment is created with a
conditional put (``If-None-Match``): whoever creates the object for number N
first is the writer of N, across every process and node, and a loser learns
it from the store's refusal. No lock server is involved.

:class:`RemoteJournalWriter` has the interface of
:class:`service.journal.JournalWriter` that the scene store uses (append,
durable, wait_durable, close): :meth:`append` writes the record to the
process's local cache journal (no sync: the store is what makes it durable)
and queues it; a background thread puts everything queued as one segment,
again and again while there is more, so every edit appended while a put
runs shares the next one (group commit, as the local fsync does). An edit is
answered once its segment exists in the store.

Failures:

- Another process created the segment's object first (``AlreadyExistsError``
  and other bytes): every edit waiting here fails with
  :class:`service.errors.EditConflict`, the writer stops, and
  ``on_conflict`` is called so the store drops the scene from memory and
  cache; the next request reopens it from the store.
- The store does not answer: the put is sent again (same bytes, same name)
  until it does, for as long as the writer lives; each waiting edit gives up
  after ``timeout`` seconds with :class:`service.errors.EditNotConfirmed`
  (503). The segment is then either created later (the edit is kept) or
  refused as a conflict (dropped, as above).
"""

import asyncio
import logging
import threading
import time

from ..api.errors import EditConflict, EditNotConfirmed, StoreUnavailable
from .journal import settle
from .object_store import ObjectStore

log = logging.getLogger("service.store")


def segment_path(scene_id: str, first: int) -> str:
    """``scenes/<id>/journal/<first:020d>``: the segment whose first record is ``first``."""
    return f"scenes/{scene_id}/journal/{first:020d}"


class RemoteJournalWriter:
    """Puts a scene's records into the object store as segments, with group commit.

    Parameters
    ----------
    objects : ObjectStore
    scene_id : str
    local_path : str
        The cache's journal file, appended to (not synced) so that the
        process's own reads (``_follow``, reopening the cache) see its edits.
    timeout : float
        Seconds an edit waits for its segment before :class:`EditNotConfirmed`.
    on_conflict : callable(writer), optional
        Called from a separate thread after a lost race.
    """

    def __init__(self, objects: ObjectStore, scene_id: str, local_path: str, timeout: float = 10.0,
                 on_conflict=None):
        self.objects = objects
        self.scene_id = scene_id
        self.path = local_path
        self.timeout = timeout
        self.on_conflict = on_conflict
        self.inode = -1
        self._condition = threading.Condition()
        #: ``(seq, bytes)`` appended and not yet in a segment being put.
        self._queued: list = []
        self._written = 0
        self._durable = 0
        self._failure: Exception | None = None
        self._closing = False
        self._futures: list = []
        self.puts = 0
        self._thread = threading.Thread(target=self._put_forever, name=f"journal segments {scene_id}", daemon=True)
        self._thread.start()

    @property
    def failed(self) -> bool:
        """Whether the writer lost a race (its edits were dropped): the scene must be reopened."""
        return self._failure is not None

    @property
    def idle(self) -> bool:
        """Nothing appended that is not in the store yet."""
        with self._condition:
            return self._written <= self._durable and self._failure is None

    @property
    def last_appended(self) -> int:
        return self._written

    def current(self) -> bool:
        return not self.failed

    def cut(self, size: int) -> None:
        """Nothing to cut: the cache's journal is this process's alone."""

    def append(self, record: bytes, seq: int) -> None:
        """Queue a record (answered once :meth:`wait_durable` or :meth:`durable` returns)."""
        with self._condition:
            if self._failure is not None:
                raise self._failure
        with open(self.path, "ab") as stream:
            stream.write(record)
        with self._condition:
            self._queued.append((seq, record))
            self._written = max(self._written, seq)
            self._condition.notify_all()

    def wait_durable(self, seq: int) -> None:
        """Return once record ``seq`` is in a segment in the store.

        Raises
        ------
        EditConflict
            Another process wrote that number first; nothing of it was kept.
        EditNotConfirmed
            The store did not answer within ``timeout`` seconds.
        """
        deadline = time.monotonic() + self.timeout
        with self._condition:
            while self._durable < seq:
                if self._failure is not None:
                    raise self._failure
                left = deadline - time.monotonic()
                if left <= 0:
                    raise EditNotConfirmed(self.objects.location, self.timeout)
                self._condition.wait(left)

    async def durable(self, seq: int) -> None:
        """:meth:`wait_durable` for a coroutine: the event loop goes on meanwhile."""
        future = self.durable_future(seq)
        if future is not None:
            await future

    def durable_future(self, seq: int) -> "asyncio.Future | None":
        """A future of the running loop, done once record ``seq`` is in the
        object store (its exception the put's failure, or
        :class:`EditNotConfirmed` past the timeout); None when it is already."""
        with self._condition:
            if self._durable >= seq:
                return None
            if self._failure is not None:
                raise self._failure
            loop = asyncio.get_running_loop()
            future = loop.create_future()
            self._futures.append((seq, loop, future))
        timer = loop.call_later(self.timeout, settle, future, EditNotConfirmed(self.objects.location, self.timeout))
        future.add_done_callback(lambda _: timer.cancel())
        return future

    def _resolve_futures(self) -> None:
        waiting = []
        for seq, loop, future in self._futures:
            if self._failure is not None:
                loop.call_soon_threadsafe(settle, future, self._failure)
            elif seq <= self._durable:
                loop.call_soon_threadsafe(settle, future, None)
            else:
                waiting.append((seq, loop, future))
        self._futures = waiting

    def _put_forever(self) -> None:
        with self._condition:
            while True:
                while not self._queued and not self._closing:
                    self._condition.wait()
                if not self._queued:
                    return
                batch, self._queued = self._queued, []
                self._condition.release()
                try:
                    made = self._put_segment(batch)
                finally:
                    self._condition.acquire()
                if made is None:
                    # Closing while the store is down: the rest stays unconfirmed.
                    return
                if not made:
                    self._failure = EditConflict(batch[0][0])
                    self._resolve_futures()
                    self._condition.notify_all()
                    if self.on_conflict is not None:
                        threading.Thread(target=self.on_conflict, args=(self,), daemon=True).start()
                    return
                self._durable = max(self._durable, batch[-1][0])
                self.puts += 1
                self._resolve_futures()
                self._condition.notify_all()

    def _put_segment(self, batch: list) -> bool | None:
        """Create the segment of ``batch``: True made, False taken by another writer,
        None given up (closing while the store is unreachable)."""
        path = segment_path(self.scene_id, batch[0][0])
        data = b"".join(record for _, record in batch)
        while True:
            try:
                return self.objects.put_new(path, data)
            except StoreUnavailable as error:
                if self._closing:
                    log.error("scene %s: records %d-%d not confirmed by the store at shutdown: %s",
                              self.scene_id, batch[0][0], batch[-1][0], error.detail)
                    return None
                log.warning("scene %s: journal segment %d waits for the store: %s",
                            self.scene_id, batch[0][0], error.detail)

    def close(self) -> None:
        """Put what is queued (bounded by the store's own timeout), then stop the thread."""
        with self._condition:
            if self._closing:
                return
            self._closing = True
            self._condition.notify_all()
        self._thread.join()
