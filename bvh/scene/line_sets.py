"""The scene's line and point sets: geometry placed by objects as meshes
are, picked with a tolerance (:mod:`bvh.queries.lines_points`), kept in
their own pack (:mod:`bvh.scene.line_point_pack`)."""

import uuid

import numpy as np

from ..shapes import KIND_NAMES, LINES
from . import line_point_pack
from .checks import UnknownIdError, is_index


class LineSets:
    """Every line and point set of a scene, ids shared by both kinds.

    Sets added since the last :meth:`committed` wait in a list, as meshes
    do. Every method runs with the scene's lock held.
    """

    def __init__(self):
        self.pack = line_point_pack.empty_pack()
        self._pending = []
        self.names: list[str | None] = []
        self.kinds: list[int] = []
        #: Names the pack's saved files (a new one whenever the pack changes).
        self.token = uuid.uuid4().hex

    def restore(self, pack: line_point_pack.LinePointPack, names: list, token: str) -> None:
        """Make a saved pack this one's (a scene being opened)."""
        if len(names) != pack.set_count:
            raise ValueError(f"{len(names)} set names for {pack.set_count} line and point sets")
        self.pack, self.names, self.kinds, self.token = pack, names, pack.set_kind.tolist(), token

    def add(self, chunk: line_point_pack.SetChunk, name) -> int:
        set_id = len(self.names)
        self._pending.append(chunk)
        self.names.append(name)
        self.kinds.append(chunk.kind)
        return set_id

    def committed(self) -> line_point_pack.LinePointPack:
        """The pack with every added set in it."""
        if self._pending:
            self.pack = line_point_pack.append(self.pack, self._pending)
            self._pending = []
            self.token = uuid.uuid4().hex
        return self.pack

    def check_id(self, set_id, kind: int) -> int:
        """``set_id`` as an int, when it is a set of ``kind`` (``LINES`` or ``POINTS``)."""
        word = KIND_NAMES[kind]
        if not is_index(set_id, len(self.names)):
            raise UnknownIdError(f"no {word} set {set_id!r} in this scene")
        if self.kinds[set_id] != kind:
            raise ValueError(f"set {set_id} is a {KIND_NAMES[self.kinds[set_id]]} set, not a {word} set")
        return int(set_id)

    def infos(self) -> list[dict]:
        """``Scene.line_point_sets``."""
        pack = self.committed()
        counts = pack.primitive_counts()
        return [{"id": g, "name": self.names[g], "kind": KIND_NAMES[self.kinds[g]],
                 "count": int(counts[g]), "bounds": pack.set_extremes[g].copy()} for g in range(pack.set_count)]

    def vertices(self, set_id) -> np.ndarray:
        """``Scene.set_vertices``."""
        pack = self.committed()
        if not is_index(set_id, pack.set_count):
            raise UnknownIdError(f"no line or point set {set_id!r} in this scene")
        return pack.set_vertices(int(set_id))

    def segments(self, set_id) -> np.ndarray:
        """``Scene.set_segments``."""
        g = self.check_id(set_id, LINES)
        return self.committed().set_edges(g)

    def arguments(self, g: int) -> tuple:
        """``(vertices, segments, name)`` of set ``g``: what ``Scene.add_lines``
        or ``Scene.add_points`` takes to add it again (to another scene)."""
        pack = self.committed()
        return pack.set_vertices(g), pack.set_edges(g), self.names[g]

    def box(self, g: int) -> np.ndarray:
        """(2, 3) box of set ``g``'s nodes in its own coordinates: its float32
        primitives with the nodes' padding, so a bound."""
        pack = self.committed()
        boxes = pack.set_boxes[g]
        return np.stack([boxes[:, :3].min(axis=0), boxes[:, 3:].max(axis=0)]) + pack.set_offset[g]

    def saved(self) -> tuple[dict, dict]:
        """``(arrays, tokens)`` of the pack for ``bvh.io.persistence.write_arrays``."""
        arrays = line_point_pack.saved_arrays(self.committed())
        return arrays, {name: self.token for name in arrays}
