"""The sample scenes a newcomer's first ``make serve`` starts with.

With ``PICK_SAMPLE_SCENES=true``, ``python -m service`` creates one scene per
file of :data:`sample_meshes.ALL`, named after the file, before the server
starts. It does so once per data directory: a marker file records it, so
scenes the user deleted do not come back on the next start.
"""

import logging
import time
from pathlib import Path

import bvh
import sample_meshes
from bvh.io.load import read_scene_description

from ..queries.building import add_file_meshes, place_file_instances
from ..store.store import SceneStore

log = logging.getLogger("service")

#: Written in the data directory once the samples have been created.
MARKER = "samples-created"


def create_sample_scenes(data_dir: Path) -> list[str]:
    """Create the sample scenes in ``data_dir`` unless they were created before.

    Returns
    -------
    list of str
        Names of the scenes created; empty when the marker was already there.
    """
    marker = Path(data_dir) / MARKER
    if marker.exists():
        return []
    store = SceneStore(data_dir)
    store.open_all()
    created = []
    for file_name in sample_meshes.ALL:
        path = sample_meshes.path(file_name)
        start = time.perf_counter()
        description = read_scene_description(path)
        scene = bvh.Scene()
        place_file_instances(scene, description, add_file_meshes(scene, description))
        store.create(scene, path.stem, (time.perf_counter() - start) * 1e3)
        created.append(path.stem)
    marker.write_text("\n".join(created) + "\n")
    log.info("created the sample scenes: %s", ", ".join(created))
    return created
