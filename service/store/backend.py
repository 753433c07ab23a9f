"""Where a store's scenes are kept: the protocol the scene store composes.

Two backends implement it:

- :class:`service.store.local.LocalBackend`: a data directory (``PICK_STORE``
  a path, or unset), shared by the worker processes of one machine.
- :class:`service.store.s3.ObjectStoreBackend`: an S3-compatible object store
  (``PICK_STORE=s3://bucket/prefix``), shared by processes on any machine.

Either way each scene is opened from a local directory in the layout of
:class:`service.store.local.SceneDirectory` (the data directory itself, or
the process's cache of the object store): reading a checkpoint by memory
map, replaying and following the journal, and queries are the same code.
What a backend decides is what is durable and shared: where a new scene is
published, how an edit's record is made durable (the journal writer's
sink), what a checkpoint must do to count, and how scenes are listed and
deleted.
"""

from typing import ContextManager, Protocol

from .journal_writer import JournalWriter
from .scenes import StoredScene


class Backend(Protocol):
    """Where scenes are kept.

    Attributes
    ----------
    directory : service.store.local.SceneDirectory
        The local directory scenes are opened from.
    """

    directory: "object"

    def attach(self, cache) -> None:
        """Meet the store's :class:`service.store.cache.SceneCache` (once, before anything else)."""

    def start(self) -> list[str]:
        """Remove what crashed processes left; return the ids of the scenes to open at start-up."""

    def close(self) -> None:
        """Stop what the backend runs in the background (it starts again when needed)."""

    def opened(self, stored: StoredScene) -> None:
        """A scene was put in memory."""

    def fetch(self, scene_id: str) -> None:
        """Make ``directory`` hold the scene's newest durable state, ready to open.

        Raises
        ------
        SceneNotFound
        SceneDamaged
        """

    def publish_new(self, stored: StoredScene, staging) -> None:
        """Make a scene written whole under ``staging`` (checkpoint, journal, ``service.json``)
        a stored scene, at ``stored.directory``."""

    def edit_lock(self, scene_id: str, blocking: bool = True) -> ContextManager[bool]:
        """Hold off other processes' edits of the scene (with its thread lock held); yields
        whether it was taken.

        Raises
        ------
        SceneNotFound
        """

    def journal_writer(self, stored: StoredScene) -> JournalWriter:
        """A writer appending to the scene's journal (with its locks held)."""

    def claim_checkpoint(self, stored: StoredScene, seq: int) -> None:
        """New meshes were saved as checkpoint ``seq``: make it the scene's (with its locks held)."""

    def checkpoint_claimed(self, stored: StoredScene) -> None:
        """After :meth:`claim_checkpoint`, the locks released."""

    def checkpoint_saved(self, stored: StoredScene) -> None:
        """A background checkpoint was saved and the journal restarted after it."""

    def forget(self, scene_id: str) -> None:
        """A scene was dropped from memory (evicted, deleted, or found changed)."""

    def delete(self, scene_id: str) -> None:
        """Delete a scene everywhere (gone before this returns).

        Raises
        ------
        SceneNotFound
        """

    def list(self) -> list:
        """Every scene, oldest first: each with ``id``, ``name``, ``created`` and a ``view``."""
