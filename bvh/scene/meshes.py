"""The scene's meshes: their pack, their names, and their refits and background rebuilds.

A mesh is geometry, built once and appended to the pack
(:mod:`bvh.scene.mesh_pack`); adding the same arrays again gives the same
id. Its vertices can move (:meth:`MeshRegistry.refit`), which makes a new
pack; when the refitted tree costs too much more than when built, the mesh
is built anew on a background thread while the refitted tree answers.
"""

import hashlib
import logging
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..builders.alpha_bounds import tight_nodes
from ..builders.config import BuildConfig
from ..builders.refit import check_refit_vertices
from ..io.materials import MeshAlpha
from ..queries import winding
from ..validation import check_mesh
from .checks import UnknownIdError, is_index
from .mesh_pack import (ARRAY_NAMES, MeshPack, append, build_chunk, empty_pack, mesh_alpha, mesh_inputs, refit_chunk,
                        replace)
from .recycling import frozen
from .top_level import REBUILD_RATIO

_log = logging.getLogger("bvh")


@dataclass(frozen=True)
class MeshInfo:
    """One mesh of a scene: counts and its box in its own coordinates."""

    id: int
    name: str | None
    triangles: int
    vertices: int
    bounds: np.ndarray
    has_normals: bool
    has_uvs: bool
    alpha_tested: bool = False


class MeshRegistry:
    """Every mesh of a scene, and the data derived from their pack.

    Meshes added since the last :meth:`committed` wait in a list, so that
    adding many costs one append of the pack. Every method but :meth:`add`
    and :meth:`wait_for_rebuilds` runs with the scene's ``lock`` held.

    Parameters
    ----------
    lock : threading.RLock
        The scene's lock.
    moved : callable
        ``moved(mesh, pack)``, called with the lock held when mesh ``mesh``'s
        vertices moved (a refit, or a rebuild installed) and ``pack`` is the
        new pack: the scene's instances of it follow.
    """

    def __init__(self, lock, moved: Callable[[int, MeshPack], None]):
        self._lock = lock
        self._moved = moved
        self.pack = empty_pack()
        self._pending = []
        self.names: list[str | None] = []
        #: Digest of each mesh's arrays as added -> its id (``add`` reuses it).
        self.keys: dict[str, int] = {}
        #: Names the pack's saved files (a new one whenever the pack changes).
        self.token = uuid.uuid4().hex
        #: Exact box of each mesh's used vertices, in its own coordinates.
        self._extremes: dict[int, np.ndarray] = {}
        #: ``(pack, node_boxes (M, B, 6), exact_boxes (M, 1, 6))`` for :meth:`placement_boxes`.
        self._placement: tuple | None = None
        #: ``(pack, bvh.builders.alpha_bounds.tight_nodes(pack))`` of the last pack with alpha-tested faces.
        self._tight: tuple | None = None
        #: ``(pack, dipoles)``: the winding number's per-node data of every
        #: packed tree (``bvh.queries.winding``), made on the first inside/outside
        #: query after the meshes change, never saved.
        self._dipoles = None
        #: Per mesh: refits so far (a rebuild started before the latest one
        #: is stale), SAH cost over the cost when built, running rebuilds.
        self._refits: dict[int, int] = {}
        self._cost_ratio: dict[int, float] = {}
        self._rebuilds: dict[int, threading.Thread] = {}

    def restore(self, pack: MeshPack, names: list, keys: dict, token: str) -> None:
        """Make a saved pack this registry's (a scene being opened)."""
        self.pack, self.names, self.keys, self.token = pack, names, keys, token

    # ------------------------------------------------------------- adding
    def add(self, vertices, faces, normals, uvs, name, source_face, alpha, build_options: dict) -> int:
        """``Scene.add_mesh``: the id of the mesh of these arrays, built and
        added unless the same arrays (and options) were added already. The
        build runs without the lock."""
        config = BuildConfig.from_options(**build_options)
        checked_vertices, checked_faces = check_mesh(vertices, faces)
        key = hashlib.blake2b(digest_size=16)
        alpha_parts = alpha.key_parts() if isinstance(alpha, MeshAlpha) else []
        for part in (checked_vertices, checked_faces, normals, uvs, source_face, repr(config), *alpha_parts):
            key.update(b"|" if part is None else np.ascontiguousarray(part).tobytes() if not isinstance(part, str)
                       else part.encode())
        digest = key.hexdigest()
        with self._lock:
            if digest in self.keys:
                return self.keys[digest]
        chunk = build_chunk(checked_vertices, checked_faces, normals, uvs, source_face, config, alpha)
        with self._lock:
            if digest in self.keys:
                return self.keys[digest]
            mesh_id = len(self.names)
            self._pending.append(chunk)
            self.names.append(name)
            self.keys[digest] = mesh_id
            return mesh_id

    def committed(self) -> MeshPack:
        """The pack with every added mesh in it."""
        if self._pending:
            self.pack = append(self.pack, self._pending)
            self._pending = []
            self.token = uuid.uuid4().hex
        return self.pack

    def check_id(self, mesh_id) -> int:
        if not is_index(mesh_id, len(self.names)):
            raise UnknownIdError(f"no mesh {mesh_id!r} in this scene")
        return int(mesh_id)

    def infos(self) -> list[MeshInfo]:
        """``Scene.meshes``."""
        pack = self.committed()
        counts = pack.triangle_counts()
        return [MeshInfo(id=k, name=self.names[k], triangles=int(counts[k]),
                         vertices=int(pack.vertex_start[k + 1] - pack.vertex_start[k]),
                         bounds=self.box(pack, k).copy(), has_normals=bool(pack.has_normals[k]),
                         has_uvs=bool(pack.has_uvs[k]), alpha_tested=bool(pack.mesh_alpha_start[k] >= 0))
                for k in range(pack.mesh_count)]

    # --------------------------------------------------- refits, rebuilds
    def refit(self, mesh_id, vertices) -> None:
        """``Scene.update_mesh``: mesh ``mesh_id``'s tree refitted to new
        ``vertices``, and a background rebuild started when it got too costly."""
        mesh = self.check_id(mesh_id)
        pack = self.committed()
        count = int(pack.vertex_start[mesh + 1] - pack.vertex_start[mesh])
        vertices = check_refit_vertices(vertices, count)
        chunk, cost, box = refit_chunk(pack, mesh, vertices)
        self._install(mesh, replace(pack, mesh, chunk), box)
        self._refits[mesh] = self._refits.get(mesh, 0) + 1
        built = float(pack.mesh_cost[mesh])
        ratio = cost / built if built > 0.0 else 1.0
        self._cost_ratio[mesh] = ratio
        if ratio > REBUILD_RATIO and mesh not in self._rebuilds:
            rebuild = threading.Thread(target=self._rebuild, args=(mesh,), name=f"bvh-rebuild-{mesh}", daemon=True)
            self._rebuilds[mesh] = rebuild
            rebuild.start()

    def cost_ratio(self, mesh_id) -> float:
        """``Scene.mesh_cost_ratio``."""
        return self._cost_ratio.get(self.check_id(mesh_id), 1.0)

    def wait_for_rebuilds(self, timeout: float | None = None) -> bool:
        """``Scene.wait_for_rebuilds`` (call without the lock)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                running = list(self._rebuilds.values())
            if not running:
                return True
            for thread in running:
                thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
                if thread.is_alive():
                    return False

    def _install(self, mesh: int, pack: MeshPack, box: np.ndarray) -> None:
        """Make ``pack``, in which mesh ``mesh`` moved, the scene's; its
        instances' boxes follow."""
        self.pack = pack
        self.token = uuid.uuid4().hex
        self._extremes[mesh] = box
        # The arrays as added are no longer this mesh's: adding them again is a new mesh.
        self.keys = {key: value for key, value in self.keys.items() if value != mesh}
        self._moved(mesh, pack)

    def _rebuild(self, mesh: int) -> None:
        """Build mesh ``mesh`` anew from its current vertices and install it,
        unless it moved again meanwhile (then build again from those)."""
        try:
            while True:
                with self._lock:
                    refits = self._refits.get(mesh, 0)
                    inputs = mesh_inputs(self.committed(), mesh)
                chunk = build_chunk(config=BuildConfig(), **inputs)
                with self._lock:
                    if self._refits.get(mesh, 0) != refits and self._cost_ratio.get(mesh, 1.0) > REBUILD_RATIO:
                        continue
                    pack = self.committed()
                    # Refits keep the zero-area faces and a build agrees; should
                    # they ever differ, the refitted tree stays.
                    if self._refits.get(mesh, 0) == refits and \
                            chunk.face_index.shape[0] == pack.tri_start[mesh + 1] - pack.tri_start[mesh]:
                        self._install(mesh, replace(pack, mesh, chunk), self._extremes[mesh])
                        _log.info("mesh %d rebuilt: refits had made its tree %.2f times as costly as built", mesh,
                                  self._cost_ratio.get(mesh, 1.0))
                        self._cost_ratio[mesh] = 1.0
                    # Deregistered under the same lock as the last check, so
                    # that a refit after it starts a rebuild of its own.
                    self._rebuilds.pop(mesh, None)
                    return
        except Exception:
            _log.exception("rebuilding mesh %d failed; its refitted tree keeps answering", mesh)
            with self._lock:
                if self._rebuilds.get(mesh) is threading.current_thread():
                    self._rebuilds.pop(mesh)

    def arguments(self, mesh_id) -> dict:
        """What ``Scene.add_mesh`` takes to add mesh ``mesh_id`` again (to another scene)."""
        k = self.check_id(mesh_id)
        pack = self.committed()
        vertex_rows = slice(pack.vertex_start[k], pack.vertex_start[k + 1])
        return dict(vertices=pack.mesh_vertices(k), faces=pack.mesh_faces(k),
                    normals=pack.normals[vertex_rows] if pack.has_normals[k] else None,
                    uvs=pack.uvs[vertex_rows] if pack.has_uvs[k] else None, name=self.names[k],
                    source_face=pack.source_face[pack.face_start[k]:pack.face_start[k + 1]].astype(np.int64),
                    alpha=mesh_alpha(pack, k))

    # --------------------------------------------------- derived from the pack
    def box(self, pack: MeshPack, mesh: int) -> np.ndarray:
        """(2, 3) exact box of the vertices mesh ``mesh``'s faces use, in its
        own coordinates (cached: a mesh's vertices change only by a refit,
        which sets it)."""
        box = self._extremes.get(mesh)
        if box is None:
            vertices = pack.mesh_vertices(mesh)
            used = np.zeros(vertices.shape[0], bool)
            used[pack.mesh_faces(mesh).reshape(-1)] = True
            box = np.stack([vertices[used].min(axis=0), vertices[used].max(axis=0)])
            self._extremes[mesh] = box
        return box

    def placement_boxes(self, pack: MeshPack) -> tuple[np.ndarray, np.ndarray]:
        """``(node_boxes (M, B, 6), exact_boxes (M, 1, 6))``: every mesh's
        cover boxes in its own coordinates and the exact box of its
        vertices, as ``ObjectTable.placed_bounds`` places them (made again
        when the pack changes)."""
        if self._placement is None or self._placement[0] is not pack:
            count = pack.mesh_count
            node_boxes = pack.mesh_boxes + np.tile(pack.mesh_offset, 2)[:, None, :]
            exact = np.stack([self.box(pack, mesh) for mesh in range(count)]) if count \
                else np.zeros((0, 2, 3))
            self._placement = (pack, np.ascontiguousarray(node_boxes), exact.reshape(-1, 1, 6))
        return self._placement[1:]

    def tight_nodes(self, pack: MeshPack) -> np.ndarray | None:
        """The node boxes alpha-tested walks read (:func:`bvh.builders.alpha_bounds.tight_nodes`),
        kept for the last pack; None for a pack without alpha-tested faces."""
        if not (pack.mesh_alpha_start >= 0).any():
            return None
        if self._tight is None or self._tight[0] is not pack:
            self._tight = (pack, frozen(tight_nodes(pack)))
        return self._tight[1]

    def dipoles(self, pack: MeshPack) -> np.ndarray:
        """The dipole data of every tree of ``pack`` (:mod:`bvh.queries.winding`),
        one pass over the packed rows; kept until the meshes change, which
        makes a new pack. Derived data, so not saved: a scene opened from
        disk makes it on its first inside/outside query."""
        cached = self._dipoles
        if cached is not None and cached[0] is pack:
            return cached[1]
        dipoles = winding.dipole_rows(pack.nodes, pack.tris)
        if dipoles.shape[0] == 0:
            dipoles = np.zeros(1)
        self._dipoles = (pack, dipoles)
        return dipoles

    def saved(self) -> tuple[dict, dict]:
        """``(arrays, tokens)`` of the pack for ``bvh.io.persistence.write_arrays``."""
        pack = self.committed()
        return {name: getattr(pack, name) for name in ARRAY_NAMES}, {name: self.token for name in ARRAY_NAMES}
