"""Uploaded files read in worker processes, so that reading never stalls the server.

Reading a file is mostly trimesh's Python, which gives the interpreter lock
up every few milliseconds, but also long single calls that do not: the
``json.loads`` of a 300,000-node glTF's JSON holds it for over a second,
during which neither ``/health`` nor any pick is answered. So
``bvh.io.load.read_scene_description`` runs in a process of a small pool
(spawned, not forked: the server has threads), and what it read comes back
as a few large arrays (``bvh.io.description.InstanceRows``: every instance's
transform in one ``(N, 4, 4)`` array rather than N small ones), which
unpickle in one copy each and give the garbage collector nothing to walk. What reading allocates (a few gigabytes for the largest files
allowed) is the worker's, not the server's.

With ``PICK_WARM_UP``, start-up starts a reader before the service is
ready (:func:`start_readers`). The readers run at a lower scheduling priority than the server
(:data:`READER_NICENESS`). The pool is the process's, started on first use with
``PICK_MAX_CONCURRENT_BUILDS`` workers (the routes hold no more reads at
once than that). A worker that dies (killed for memory) fails that one read
with a 422 and the pool is started afresh for the next; a worker whose
server is gone (killed) exits within :data:`PARENT_POLL_SECONDS`.
"""

import gc
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from bvh.io.load import InstanceRows, ReadLimits, SceneDescription

from ..ops.memory import return_free_memory

#: How much lower the readers' scheduling priority is than the server's (``os.nice``): on a
#: machine with fewer free cores than busy readers, the event loop still gets its turn at once.
READER_NICENESS = 10

_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


class ReaderDied(ValueError):
    """The worker process reading a file died (killed for memory, most likely)."""


def read_packed(content: bytes, file_type: str, name: str | None, limits: ReadLimits) -> SceneDescription:
    """``read_scene_description`` of the bytes, its instances as columns
    (``bvh.io.description.InstanceRows``); runs in a worker process."""
    from bvh.io.load import read_scene_description

    try:
        description = read_scene_description(content, file_type, name, limits)
        description.instances = InstanceRows.of(description.instances)
        return description
    finally:
        # What reading a large file allocated goes back to the system, not kept by an idle reader.
        gc.collect()
        return_free_memory()


#: What a reader reads once when started, so that its imports (trimesh's) are behind it.
WARM_UP_FILE = b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"


def start_readers(workers: int) -> None:
    """Start the pool and have a reader read :data:`WARM_UP_FILE` (at start-up, so that
    the first upload does not wait seconds for a process to start and import trimesh)."""
    reader_pool(workers).submit(read_packed, WARM_UP_FILE, "obj", None, ReadLimits()).result()


#: Seconds between a reader's looks for its server: it exits once the server is gone.
PARENT_POLL_SECONDS = 0.5


def reader_started() -> None:
    """A reader's start: a lower priority, and a watch on its server. A server killed with
    ``kill -9`` cannot stop its readers, and the pool's pipes do not tell them (each holds
    both ends); without the watch they would live on, holding what they last read."""
    os.nice(READER_NICENESS)
    server = os.getppid()

    def watch() -> None:
        while os.getppid() == server:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="server watch", daemon=True).start()


def reader_pool(workers: int) -> ProcessPoolExecutor:
    """The process's pool of readers, started with ``workers`` processes on first use."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=reader_started)
        return _pool


def _restart(broken: ProcessPoolExecutor) -> None:
    global _pool
    with _pool_lock:
        if _pool is broken:
            _pool = None
    broken.shutdown(wait=False, cancel_futures=True)


def read_in_process(content: bytes, file_type: str, name: str | None, limits: ReadLimits,
                    workers: int) -> SceneDescription:
    """``bvh.io.load.read_scene_description`` in a worker process (see the module's notes).

    Raises
    ------
    ValueError
        Whatever reading raised (``bvh.io.archives.LimitExceeded`` included), or
        :class:`ReaderDied` when the worker died reading.
    """
    pool = reader_pool(workers)
    try:
        return pool.submit(read_packed, content, file_type, name, limits).result()
    except BrokenProcessPool:
        _restart(pool)
        raise ReaderDied("the process reading it died (out of memory?): the file is too large to read "
                         "here") from None


__all__ = ["ReaderDied", "read_in_process", "read_packed", "reader_pool", "reader_started", "start_readers"]
