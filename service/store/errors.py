"""What the store refuses with, in its own terms: the API maps each to an HTTP status."""

import logging

log = logging.getLogger("service.store")


class SceneNotFound(LookupError):
    """No scene with this id (or the id is not a scene id at all)."""

    def __init__(self, scene_id: str):
        shown = scene_id if len(scene_id) <= 64 else scene_id[:61] + "..."
        super().__init__(f"no scene {shown!r}")


class SceneDamaged(SceneNotFound):
    """A scene directory that cannot be read (logged; answered like an unknown scene)."""

    def __init__(self, scene_id: str, reason: str):
        LookupError.__init__(self, f"no scene {scene_id!r}: its saved directory is damaged")
        log.error("skipping damaged scene directory %s: %s", scene_id, reason)
