"""Change events: what each edit changed, made into JSON and handed to a listener off the edit's path."""

import logging
import queue
import threading
from typing import Callable

from .edits import Change

log = logging.getLogger("service.store")


def merged_moves(items: list) -> list:
    """``(scene id, view, change)`` items with each run of ``moved`` changes
    of one scene, queued back to back, made one: its objects' JSON from the
    run's last view, at that view's version.

    Editors dragging objects at 60 Hz each make thousands of moves a second;
    one event per move is one frame per move to every client of the scene
    (32 editors: some 60,000 frames a second, which a process cannot send
    and still answer picks). When the event thread falls behind, the moves
    waiting for it go out together, which is what a client would make of
    them (the newest JSON of each object; versions only grow); while it
    keeps up, each move is its own event, as before.
    """
    runs = []  # [scene id, view, change, the run's object ids (a dict, for their order) or None]
    for scene_id, view, change in items:
        moves = change.event == "moved" and change.mesh is None
        if moves and runs and runs[-1][3] is not None and runs[-1][0] == scene_id:
            runs[-1][1] = view
            runs[-1][3].update(dict.fromkeys(change.objects))
            continue
        runs.append([scene_id, view, change, dict.fromkeys(change.objects) if moves else None])
    return [(scene_id, view, change if ids is None else Change("moved", list(ids)))
            for scene_id, view, change, ids in runs]


class ChangeEvents:
    """The store's change events, sent from a thread of their own.

    Attributes
    ----------
    on_change : callable(scene_id, event) or None
        Called after each edit, this process's (once durable) and other
        processes' (once followed); events are described in ``service.live``.
    listened : callable(scene_id) -> bool, or None
        Whether anyone listens to a scene's events (None: assume so); an
        event of a scene nobody listens to is not made at all.
    """

    def __init__(self):
        self.on_change: Callable[[str, dict], None] | None = None
        self.listened: Callable[[str], bool] | None = None
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._starting = threading.Lock()

    def announce(self, stored, change: Change) -> None:
        """Queue ``change`` of the scene ``stored`` (a ``StoredScene``) for :attr:`on_change`
        (made into JSON on the event thread, off the edit's path)."""
        if self.on_change is None or (self.listened is not None and not self.listened(stored.id)):
            return
        if self._thread is None:
            with self._starting:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._send_forever, name="change events", daemon=True)
                    self._thread.start()
        self.queue.put((stored.id, stored.view, change))

    def announce_difference(self, stored, old) -> None:
        """Change events for what a reopen changed (objects added, removed, others replaced);
        ``old``: the view before."""
        before, after = set(old.objects), set(stored.view.objects)
        if after - before:
            self.announce(stored, Change("added", sorted(after - before)))
        if before - after:
            self.announce(stored, Change("removed", sorted(before - after)))
        if before & after:
            self.announce(stored, Change("changed", sorted(before & after)))

    def close(self) -> None:
        """Send what is queued, then stop the thread (it starts again with the next event)."""
        if self._thread is not None:
            self.queue.put(None)
            self._thread.join()
            self._thread = None

    def _send_forever(self) -> None:
        while True:
            items = [self.queue.get()]
            # Whatever else is queued by now goes out with it (see merged_moves).
            while items[-1] is not None:
                try:
                    items.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            for scene_id, view, change in merged_moves([item for item in items if item is not None]):
                if change.event == "removed":
                    objects = list(change.objects)
                else:
                    objects = view.objects.json(change.objects)
                event = {"event": change.event, "objects": objects, "version": view.version}
                if change.mesh is not None:
                    event["mesh"] = change.mesh
                try:
                    self.on_change(scene_id, event)
                except Exception:
                    log.exception("a change listener failed on scene %s", scene_id)
            if items[-1] is None:
                return
