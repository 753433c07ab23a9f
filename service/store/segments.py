"""A scene's journal in the object store: segments created conditionally.

The journal of a scene in the store is a sequence of objects
``scenes/<id>/journal/<first seq:020d>``, each one or more
:func:`service.store.journal.encode` frames with contiguous numbers; the
segment after it starts at its last number + 1. A segment is created with a
conditional put (``If-None-Match``): whoever creates the object for number N
first is the writer of N, across every process and node, and a loser learns
it from the store's refusal. No lock server is involved.

:class:`SegmentSink` is the sink of a :class:`service.store.journal_writer.JournalWriter`:
a record is appended to the process's local cache journal (no sync: the
store is what makes it durable), and a commit puts everything appended
since the last one as one segment (group commit, as the local fsync does).
An edit is answered once its segment exists in the store.

Failures:

- Another process created the segment's object first (``AlreadyExistsError``
  and other bytes): the commit fails with :class:`service.api.errors.EditConflict`,
  every edit waiting fails with it, the writer stops, and its ``on_failure``
  has the store drop the scene from memory and cache; the next request
  reopens it from the store.
- The store does not answer: the put is sent again (same bytes, same name)
  until it does, for as long as the writer lives; each waiting edit gives up
  after ``timeout`` seconds with :class:`service.api.errors.EditNotConfirmed`
  (503). The segment is then either created later (the edit is kept) or
  refused as a conflict (dropped, as above).
"""

import logging
from typing import Callable

from ..api.errors import EditConflict, EditNotConfirmed, StoreUnavailable
from .object_store import ObjectStore

log = logging.getLogger("service.store")


def segment_path(scene_id: str, first: int) -> str:
    """``scenes/<id>/journal/<first:020d>``: the segment whose first record is ``first``."""
    return f"scenes/{scene_id}/journal/{first:020d}"


class SegmentSink:
    """Puts a scene's records into the object store as segments.

    Parameters
    ----------
    objects : ObjectStore
    scene_id : str
    local_path : str
        The cache's journal file, appended to (not synced) so that the
        process's own reads (following, reopening the cache) see its edits.
    """

    def __init__(self, objects: ObjectStore, scene_id: str, local_path: str):
        self.objects = objects
        self.scene_id = scene_id
        self.path = local_path
        self.name = f"segments {scene_id}"
        #: Seconds an edit waits for its segment before :class:`EditNotConfirmed`.
        self.timeout = objects.timeout

    def write(self, record: bytes) -> None:
        with open(self.path, "ab") as stream:
            stream.write(record)

    def commit(self, batch: list, closing: Callable[[], bool]) -> bool:
        """Create the segment of ``batch``; False when given up (closing while the store is unreachable).

        Raises
        ------
        EditConflict
            Another writer created it first.
        """
        first = batch[0][0]
        path = segment_path(self.scene_id, first)
        data = b"".join(record for _, record in batch)
        while True:
            try:
                if self.objects.put_new(path, data):
                    return True
                raise EditConflict(first)
            except StoreUnavailable as error:
                if closing():
                    log.error("scene %s: records %d-%d not confirmed by the store at shutdown: %s",
                              self.scene_id, first, batch[-1][0], error.detail)
                    return False
                log.warning("scene %s: journal segment %d waits for the store: %s", self.scene_id, first,
                            error.detail)

    def unconfirmed(self) -> Exception:
        return EditNotConfirmed(self.objects.location, self.timeout)

    def follows(self, journal_inode: int) -> bool:
        """Always: the cache's journal is this process's alone."""
        return True

    def cut(self, size: int) -> None:
        """Nothing to cut: the cache's journal is this process's alone."""

    def close(self) -> None:
        """Nothing held."""
