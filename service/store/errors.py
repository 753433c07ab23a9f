"""What the store refuses with, in its own terms: the API maps each to an HTTP status."""

import contextlib
import errno
import logging

log = logging.getLogger("service.store")


class SceneNotFound(LookupError):
    """No scene with this id (or the id is not a scene id at all)."""

    def __init__(self, scene_id: str):
        shown = scene_id if len(scene_id) <= 64 else scene_id[:61] + "..."
        super().__init__(f"no scene {shown!r}")


class SceneDamaged(SceneNotFound):
    """A scene directory that cannot be read (logged once per scene and reason; answered like an
    unknown scene)."""

    #: (scene id, reason) pairs already logged: every lookup of a refused scene finds it again.
    logged: set = set()

    def __init__(self, scene_id: str, reason: str):
        LookupError.__init__(self, f"no scene {scene_id!r}: its saved directory is damaged")
        self.reason = reason
        if (scene_id, reason) not in SceneDamaged.logged:
            SceneDamaged.logged.add((scene_id, reason))
            log.error("skipping damaged scene directory %s: %s", scene_id, reason)


class SceneReadOnly(Exception):
    """A write to a scene whose journal is damaged: it is served read-only (409) until repaired.

    Parameters
    ----------
    scene_id : str
    damage : str
        Where and how its journal is damaged (``JournalDamage.describe()``).
    """

    def __init__(self, scene_id: str, damage: str):
        self.scene_id = scene_id
        super().__init__(f"scene {scene_id} is damaged and read-only, so nothing was changed: {damage}. Its "
                         f"journal is kept as it is; an operator can keep the records before the damage with "
                         f"`python -m service repair DATA_DIR {scene_id} --accept-loss`")


#: Errors that mean the disk (or the user's quota) is full.
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def disk_full(error: BaseException) -> bool:
    """Whether ``error`` says the disk is full: ENOSPC or EDQUOT, or a short write of a regular
    file (numpy's array writer reports one as ``N requested and M written``, without an errno)."""
    if not isinstance(error, OSError):
        return False
    if error.errno in DISK_FULL_ERRNOS:
        return True
    text = str(error)
    return error.errno is None and ("requested and" in text and "written" in text or " wrote " in text)


class StorageFull(OSError):
    """A write the disk had no room for (ENOSPC, EDQUOT): nothing was changed (507)."""

    def __init__(self, cause: BaseException):
        super().__init__(errno.ENOSPC, "the disk of the scene store is full, so nothing was changed (the "
                                       "partial files were removed); free space and retry "
                                       f"({str(cause)[:200]})")


@contextlib.contextmanager
def refusing_full_disk():
    """Raise a full disk inside the block as :class:`StorageFull`; other errors pass."""
    try:
        yield
    except StorageFull:
        raise
    except OSError as error:
        if disk_full(error):
            raise StorageFull(error) from error
        raise
