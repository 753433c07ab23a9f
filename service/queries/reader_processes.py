"""Uploaded files read in worker processes, so that reading never stalls the server.

Reading a file is mostly trimesh's Python, which gives the interpreter lock
up every few milliseconds, but also long single calls that do not: the
``json.loads`` of a 300,000-node glTF's JSON holds it for over a second,
during which neither ``/health`` nor any pick is answered. So
``bvh.io.load.read_scene_description`` runs in a process of a small pool
(spawned, not forked: the server has threads), and what it read comes back
as a few large arrays (:class:`PackedDescription`: every instance's transform
in one ``(N, 4, 4)`` array rather than N small ones), which unpickle in one
copy each. What reading allocates (a few gigabytes for the largest files
allowed) is the worker's, not the server's.

The pool is the process's, started on first use with
``PICK_MAX_CONCURRENT_BUILDS`` workers (the routes hold no more reads at
once than that). A worker that dies (killed for memory) fails that one read
with a 422 and the pool is started afresh for the next.
"""

import multiprocessing
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import NamedTuple

import numpy as np

from bvh.io.load import InstanceDescription, MeshDescription, ReadLimits, SceneDescription, SetDescription

_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


class PackedDescription(NamedTuple):
    """A :class:`SceneDescription` with its instances as arrays, for the trip between processes."""

    file_type: str
    meshes: list[MeshDescription]
    sets: list[SetDescription]
    set_instances: list[InstanceDescription]
    instance_meshes: np.ndarray         # (N,) int64
    instance_transforms: np.ndarray     # (N, 4, 4) float64
    instance_names: list[str]


class ReaderDied(ValueError):
    """The worker process reading a file died (killed for memory, most likely)."""


def read_packed(content: bytes, file_type: str, name: str | None, limits: ReadLimits) -> PackedDescription:
    """``read_scene_description`` of the bytes, packed; runs in a worker process."""
    from bvh.io.load import read_scene_description

    description = read_scene_description(content, file_type, name, limits)
    instances = description.instances
    transforms = np.stack([instance.transform for instance in instances]) if instances else np.zeros((0, 4, 4))
    return PackedDescription(description.file_type, description.meshes, description.sets,
                             description.set_instances, np.array([instance.mesh for instance in instances], np.int64),
                             transforms, [instance.name for instance in instances])


def unpacked(packed: PackedDescription) -> SceneDescription:
    """The :class:`SceneDescription` of a :class:`PackedDescription`."""
    instances = list(map(InstanceDescription, packed.instance_meshes.tolist(), packed.instance_transforms,
                         packed.instance_names))
    return SceneDescription(packed.file_type, packed.meshes, instances, packed.sets, packed.set_instances)


def reader_pool(workers: int) -> ProcessPoolExecutor:
    """The process's pool of readers, started with ``workers`` processes on first use."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
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
        return unpacked(pool.submit(read_packed, content, file_type, name, limits).result())
    except BrokenProcessPool:
        _restart(pool)
        raise ReaderDied("the process reading it died (out of memory?): the file is too large to read "
                         "here") from None


__all__ = ["PackedDescription", "ReaderDied", "read_in_process", "read_packed", "reader_pool", "unpacked"]
