"""The appending end of a scene's journal, with group commit, over a sink that makes records durable.

An edit is applied in memory, appended here and answered once the commit
that covers it has returned; edits that arrive while a commit runs share the
next one (group commit, as databases do: one commit makes many edits
durable, so throughput grows with the number of editors while each edit
waits for at most two commits).

Two sinks:

- :class:`FileSink`: the scene's journal file, committed by ``fdatasync``
  (the data directory's store).
- :class:`service.store.segments.SegmentSink`: segments created
  conditionally in an object store (``PICK_STORE=s3://...``).
"""

import asyncio
import contextlib
import errno
import os
import threading
import time
from typing import Callable, Protocol

from .errors import StorageFull, disk_full
from .integrity import SyncMark


class JournalSink(Protocol):
    """Where a :class:`JournalWriter` puts records.

    Attributes
    ----------
    name : str
        What the records go to, for thread names and messages.
    timeout : float or None
        Seconds an edit waits for its commit before :meth:`unconfirmed` (None: no limit).
    """

    name: str
    timeout: float | None

    def write(self, record: bytes) -> None:
        """Write a record where this process reads its own journal (not yet durable)."""

    def commit(self, batch: list, closing: Callable[[], bool]) -> bool:
        """Make ``batch`` (``(seq, bytes)`` in order, every record written before) durable.

        Returns False when it gave up because the writer is closing; raises
        the failure (the edits waiting are refused with it)."""

    def unconfirmed(self) -> Exception:
        """What an edit gets once it has waited ``timeout`` seconds."""

    def follows(self, journal_inode: int) -> bool:
        """Whether this sink still appends to the journal file ``journal_inode`` names."""

    def cut(self, size: int) -> None:
        """Drop a torn tail past ``size`` (call with the scene's file lock held)."""

    def close(self) -> None:
        """Release what the sink holds (after the last commit)."""


def settle(future, failure: Exception | None) -> None:
    """Resolve a durability future (call on its loop): None on success, else the failure.
    A waiter that went away (a closed connection) cancelled it: left as it is."""
    if not future.done():
        if failure is None:
            future.set_result(None)
        else:
            future.set_exception(failure)


class JournalWriter:
    """Appends a scene's records through ``sink`` and commits them in groups.

    :meth:`append` runs under the scene's edit locks (one writer at a time)
    and wakes this writer's commit thread; :meth:`wait_durable` runs after
    they are released. The commit thread commits everything appended so
    far, again and again while there is more: edits appended while a commit
    runs share the next one, and an editor can do other work (rebuild what
    queries need) while its edit's commit runs.

    Parameters
    ----------
    sink : JournalSink
    on_failure : callable(writer), optional
        Called from a thread of its own once a commit failed (every edit
        waiting then has the failure, and the writer takes no more records).
    """

    def __init__(self, sink: JournalSink, on_failure: Callable[["JournalWriter"], None] | None = None):
        self.sink = sink
        self.on_failure = on_failure
        self._condition = threading.Condition()
        #: ``(seq, bytes)`` appended and not yet in a commit.
        self._queued: list = []
        self._written = 0
        self._durable = 0
        self._failure: Exception | None = None
        self._closing = False
        #: ``(seq, loop, future)`` of coroutines waiting in :meth:`durable`.
        self._futures: list = []
        #: Commits made: fewer than the records when edits shared them.
        self.commits = 0
        self._thread = threading.Thread(target=self._commit_forever, name=f"journal {sink.name}", daemon=True)
        self._thread.start()

    @property
    def failed(self) -> bool:
        """Whether a commit failed: what this process holds is not what is durable; reopen the scene."""
        return self._failure is not None

    @property
    def idle(self) -> bool:
        """Nothing appended that is not committed yet."""
        with self._condition:
            return self._written <= self._durable and self._failure is None

    @property
    def last_appended(self) -> int:
        return self._written

    def append(self, record: bytes, seq: int) -> None:
        """Write a record (durable once :meth:`wait_durable` returns).

        Raises
        ------
        Exception
            The failure of an earlier commit; OSError when the write fails.
        """
        with self._condition:
            if self._failure is not None:
                raise self._failure
        self.sink.write(record)
        with self._condition:
            self._queued.append((seq, record))
            self._written = max(self._written, seq)
            self._condition.notify_all()

    def wait_durable(self, seq: int) -> None:
        """Return once record ``seq`` (appended by this writer) is committed.

        Raises
        ------
        Exception
            The commit's failure (the edit may not be durable), or the sink's
            :meth:`~JournalSink.unconfirmed` past its timeout.
        """
        timeout = self.sink.timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._condition:
            while self._durable < seq:
                if self._failure is not None:
                    raise self._failure
                if deadline is None:
                    self._condition.wait()
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self.sink.unconfirmed()
                self._condition.wait(left)

    async def durable(self, seq: int) -> None:
        """:meth:`wait_durable` for a coroutine: the event loop goes on meanwhile."""
        future = self.durable_future(seq)
        if future is not None:
            await future

    def durable_future(self, seq: int) -> "asyncio.Future | None":
        """A future of the running loop, done once record ``seq`` is committed (its
        exception the commit's failure, or the sink's ``unconfirmed()`` past its
        timeout); None when it is already.

        Raises
        ------
        Exception
            When a commit failed before.
        """
        with self._condition:
            if self._durable >= seq:
                return None
            if self._failure is not None:
                raise self._failure
            loop = asyncio.get_running_loop()
            future = loop.create_future()
            self._futures.append((seq, loop, future))
        if self.sink.timeout is not None:
            timer = loop.call_later(self.sink.timeout, settle, future, self.sink.unconfirmed())
            future.add_done_callback(lambda _: timer.cancel())
        return future

    def _resolve_futures(self) -> None:
        """Wake the coroutines whose records are durable (or all, on a failure); call with the condition held."""
        waiting = []
        for seq, loop, future in self._futures:
            if self._failure is not None:
                loop.call_soon_threadsafe(settle, future, self._failure)
            elif seq <= self._durable:
                loop.call_soon_threadsafe(settle, future, None)
            else:
                waiting.append((seq, loop, future))
        self._futures = waiting

    def _commit_forever(self) -> None:
        with self._condition:
            while True:
                while not self._queued and not self._closing:
                    self._condition.wait()
                if not self._queued:
                    return
                batch, self._queued = self._queued, []
                self._condition.release()
                failure = None
                try:
                    made = self.sink.commit(batch, lambda: self._closing)
                except Exception as error:
                    made, failure = False, error
                finally:
                    self._condition.acquire()
                if failure is not None:
                    self._failure = failure
                    self._resolve_futures()
                    self._condition.notify_all()
                    if self.on_failure is not None:
                        threading.Thread(target=self.on_failure, args=(self,), daemon=True).start()
                    return
                if not made:
                    # Given up while closing: the rest stays unconfirmed.
                    return
                self._durable = max(self._durable, batch[-1][0])
                self.commits += 1
                self._resolve_futures()
                self._condition.notify_all()

    def close(self) -> None:
        """Commit what was appended (its waiters then return), stop the commit thread, close the sink."""
        with self._condition:
            if self._closing:
                return
            self._closing = True
            self._condition.notify_all()
        self._thread.join()
        self.sink.close()


class FileSink:
    """A scene's journal file, appended to and committed by ``fdatasync``.

    After each sync the journal's sync mark records how far it reached
    (:class:`service.store.integrity.SyncMark`), so that a journal cut below
    that later is found damaged rather than taken for a torn tail.

    Parameters
    ----------
    path : str
    journal_id : str or None
        The ``id`` of the journal's base record (None: no sync marks).
    """

    timeout = None

    def __init__(self, path: str, journal_id: str | None = None):
        self.path = self.name = path
        self._descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.inode = os.fstat(self._descriptor).st_ino
        self._mark = SyncMark(path, journal_id)
        #: The offset after this sink's last whole record, and where the first of its records
        #: not yet synced starts (None: all synced, or other processes' records lie between).
        self.end = os.fstat(self._descriptor).st_size
        self.unsynced_from: int | None = None
        self._all_unsynced_ours = True
        # ``end`` and ``unsynced_from`` change on the editor's thread and the commit thread.
        self._positions = threading.Lock()

    def write(self, record: bytes) -> None:
        """Append a record; a short write (a full disk) is cut off again and raised.

        Raises
        ------
        OSError
            ENOSPC (or the write's own error): nothing of the record is left.
        """
        written = os.write(self._descriptor, record)
        end = os.lseek(self._descriptor, 0, os.SEEK_CUR)
        start = end - written
        if written != len(record):
            with contextlib.suppress(OSError):
                os.ftruncate(self._descriptor, start)
            raise OSError(errno.ENOSPC, f"journal {self.path}: wrote {written} of {len(record)} bytes")
        with self._positions:
            if self.unsynced_from is None:
                self.unsynced_from, self._all_unsynced_ours = start, True
            elif start != self.end:
                self._all_unsynced_ours = False
            self.end = end

    def commit(self, batch: list, closing: Callable[[], bool]) -> bool:
        with self._positions:
            reached = self.end
        try:
            os.fdatasync(self._descriptor)
        except OSError as error:
            if disk_full(error):
                raise StorageFull(error) from error
            failure = OSError(f"journal {self.path}: sync failed: {error}")
            failure.errno = error.errno
            raise failure from error
        with self._positions:
            if self.end == reached:
                self.unsynced_from = None
        self._mark.write(reached)
        return True

    def drop_unsynced(self) -> bool:
        """After a failed sync (with the scene's locks held): cut this sink's records that were
        never synced, unless another process appended after or between them. Returns whether it did."""
        if self.unsynced_from is None or not self._all_unsynced_ours:
            return False
        if os.fstat(self._descriptor).st_size != self.end:
            return False
        os.ftruncate(self._descriptor, self.unsynced_from)
        self.end, self.unsynced_from = self.unsynced_from, None
        return True

    def unconfirmed(self) -> Exception:
        raise AssertionError("a file sink has no timeout")

    def follows(self, journal_inode: int) -> bool:
        """Whether ``journal_inode`` is this file and the path still names it (a checkpoint replaces it)."""
        if journal_inode != self.inode:
            return False
        try:
            return os.stat(self.path).st_ino == self.inode
        except FileNotFoundError:
            return False

    def cut(self, size: int) -> None:
        if os.fstat(self._descriptor).st_size > size:
            os.ftruncate(self._descriptor, size)
        self.end = min(self.end, size)

    def close(self) -> None:
        self._mark.close()
        os.close(self._descriptor)
