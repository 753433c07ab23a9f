"""A scene written as a GLB (binary glTF 2.0): each mesh once, each object a
node that places it, the objects' ids, names, masks and pickability in the
nodes' ``extras``, so that a client draws what it picks and reading the
file back (:func:`bvh.io.load.load`) gives the same picks.

>>> export = GlbExport.of_scene(scene)
>>> path.write_bytes(b"".join(export.pieces()))

What is written
---------------

- Every mesh that a live object places, once (in the order the objects first
  place them), as one triangle primitive:
  ``POSITION`` float32 (the only float type glTF has for it, with the
  ``min``/``max`` it requires) and ``indices`` uint32. A mesh whose float64
  vertices are not all float32 values also carries them exactly, as
  little-endian float64 in a buffer view its ``extras.bvh_pick.vertices_float64``
  names (an extension of our own, which other readers ignore; ours checks
  that it rounds to ``POSITION`` before it believes it). Normals, uvs,
  source faces and alpha-tested materials are not written.
- Every live object, in id order, as a root node: its name, its object-to-world
  matrix (column-major, as glTF wants; left out when exactly the identity),
  the index of its mesh, and ``extras.bvh_pick`` ``{"id", "name", "kind",
  "mask", "pickable"}`` (``"mesh"`` for an instance, ``"params"`` for the
  rest). The matrix is written as float64 JSON numbers, exact; glTF asks
  for matrices decomposable into translation, rotation and scale, which a
  sheared object's is not (written all the same).
- Shapes (sphere, box, quad, polygon) and line and point sets become nodes
  without geometry: their extras say what they are (``kind``, ``params``)
  but no triangles are made of them (a tessellated sphere would not pick
  as the sphere does). :attr:`GlbExport.without_geometry` counts them.

Why not trimesh's exporter: it writes a matrix close to the identity as no
matrix (``allclose``), names nodes uniquely (an editor's objects may share a
name or have none), has only float32 for vertices, and holds every node in
its scene graph, which for a million objects costs gigabytes; here nothing
grows with the objects but the rendered JSON of one block of them.

A GLB is a 12-byte header, a JSON chunk then a BIN chunk (glTF 2.0 §4.4),
each padded to 4 bytes. The JSON's length is needed before any of it is
sent, so the nodes are rendered to measure them (:class:`GlbExport`'s
constructor) and kept to send when they come to at most
:data:`KEPT_NODE_BYTES`; past that they are rendered again, a block at a
time, as they are sent (:meth:`GlbExport.pieces`): the rendering is
deterministic, and memory holds one block.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import NamedTuple

import numpy as np

#: The key of our own data in a node's, a mesh's and the scene's ``extras``.
EXTRAS_KEY = "bvh_pick"

#: Largest GLB: its header's length is a uint32 (glTF 2.0 §4.4.2).
MAX_GLB_BYTES = 2**32 - 1

#: Nodes' JSON kept from the measuring rendering to send, rather than rendered again, up to this size.
KEPT_NODE_BYTES = 32 << 20

#: Rows of an array converted and sent at a time.
ROWS_PER_PIECE = 1 << 16

_GLB_MAGIC = b"glTF"
_GLB_VERSION = 2
_JSON_CHUNK = 0x4E4F534A
_BIN_CHUNK = 0x004E4942
_FLOAT, _UNSIGNED_INT = 5126, 5125
_ARRAY_BUFFER, _ELEMENT_ARRAY_BUFFER = 34962, 34963
_TRIANGLES = 4
_IDENTITY_ROWS = np.eye(4).tolist()


class ExportMesh(NamedTuple):
    """One mesh to write: its id in the scene, name, ``vertices (V, 3)`` float64 and ``faces (F, 3)`` int."""

    id: int
    name: str | None
    vertices: np.ndarray
    faces: np.ndarray


class GlbTooLarge(ValueError):
    """The GLB would be larger than a GLB can be (:data:`MAX_GLB_BYTES`)."""


def json_bytes(value) -> bytes:
    """Compact JSON as UTF-8; floats written exactly (shortest round-trip repr)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False, ensure_ascii=False).encode()


def node_json(entry: Mapping, mesh_index: dict[int, int]) -> dict:
    """The glTF node of one object.

    Parameters
    ----------
    entry : mapping
        The object's fields as ``bvh.ObjectInfo`` has them: ``id``, ``name``,
        ``kind``, ``mesh`` (None unless an instance), ``transform`` (4, 4)
        (array or nested lists, row-major), ``mask``, ``pickable``, ``params``.
    mesh_index : dict of int to int
        The glTF mesh index of each scene mesh id; a mesh not in it yet is
        given the next index.
    """
    extras = {"id": int(entry["id"]), "name": entry["name"], "kind": entry["kind"], "mask": int(entry["mask"]),
              "pickable": bool(entry["pickable"])}
    node: dict = {}
    if entry["name"] is not None:
        node["name"] = entry["name"]
    rows = entry["transform"]
    # Plain Python on nested lists: a million nodes are rendered twice per export.
    rows = rows.tolist() if isinstance(rows, np.ndarray) else rows
    if rows != _IDENTITY_ROWS:
        node["matrix"] = [float(value) for column in zip(*rows) for value in column]
    if entry["kind"] == "mesh":
        node["mesh"] = mesh_index.setdefault(int(entry["mesh"]), len(mesh_index))
        extras["mesh"] = int(entry["mesh"])
    else:
        extras["params"] = {key: np.asarray(value).tolist() for key, value in dict(entry["params"]).items()}
    node["extras"] = {EXTRAS_KEY: extras}
    return node


def _padding(size: int, multiple: int = 4) -> int:
    return -size % multiple


class _View(NamedTuple):
    """One buffer view: where it starts in the BIN chunk, how long it is, and its rows."""

    offset: int
    length: int
    rows: np.ndarray
    dtype: str


class GlbExport:
    """A GLB of meshes and objects, measured before it is sent.

    Parameters
    ----------
    mesh : callable
        ``mesh(id) -> ExportMesh``: a mesh an object places, asked for once
        each, in the order the objects first place them.
    blocks : callable
        ``blocks()`` -> an iterable of lists of object entries (the fields of
        :func:`node_json`), in the order the nodes are written; called twice,
        it must give the same entries each time.
    scene_extras : dict, optional
        Written in ``scenes[0].extras.bvh_pick`` beside the counts.
    dumps : callable, optional
        ``dumps(value) -> bytes``: compact JSON, floats exact (default :func:`json_bytes`).

    Attributes
    ----------
    size : int
        Bytes of the whole GLB.
    nodes : int
        Objects written.
    meshes : list of int
        The scene's ids of the meshes written, in the file's order.
    without_geometry : dict of str to int
        Objects written as nodes without geometry, by kind (``{"sphere": 2}``).

    Raises
    ------
    GlbTooLarge
        When the GLB would pass :data:`MAX_GLB_BYTES`.
    """

    def __init__(self, mesh: Callable[[int], ExportMesh], blocks: Callable[[], Iterable[list[Mapping]]],
                 scene_extras: dict | None = None, dumps: Callable[[object], bytes] = json_bytes):
        self._blocks = blocks
        self._dumps = dumps
        # The first rendering: the nodes' JSON measured, counted by kind, their meshes numbered.
        self._mesh_index: dict[int, int] = {}
        self.nodes = 0
        self.without_geometry: dict[str, int] = {}
        self._kept: list[bytes] | None = []
        nodes_length = 0
        for piece in self._node_pieces():
            nodes_length += len(piece)
            if self._kept is not None:
                self._kept.append(piece)
                if nodes_length > KEPT_NODE_BYTES:
                    self._kept = None
        roots_length = sum(len(piece) for piece in self._root_pieces())
        self.meshes = list(self._mesh_index)

        self._views: list[_View] = []
        document_meshes, accessors, views = [], [], []
        offset = 0

        def add_view(rows: np.ndarray, dtype: str, target: int | None) -> int:
            nonlocal offset
            length = rows.shape[0] * rows.shape[1] * np.dtype(dtype).itemsize
            self._views.append(_View(offset, length, rows, dtype))
            view = {"buffer": 0, "byteOffset": offset, "byteLength": length}
            if target is not None:
                view["target"] = target
            views.append(view)
            # Every view starts at a multiple of 8 bytes: float64 views are aligned too.
            offset += length + _padding(length, 8)
            return len(views) - 1

        for mesh_id in self.meshes:
            found = mesh(mesh_id)
            vertices = np.asarray(found.vertices, np.float64).reshape(-1, 3)
            faces = np.asarray(found.faces).reshape(-1, 3)
            rounded = vertices.astype(np.float32)
            low = rounded.min(axis=0) if len(vertices) else np.zeros(3, np.float32)
            high = rounded.max(axis=0) if len(vertices) else np.zeros(3, np.float32)
            accessors.append({"bufferView": add_view(vertices, "<f4", _ARRAY_BUFFER), "componentType": _FLOAT,
                              "count": len(vertices), "type": "VEC3", "min": low.astype(np.float64).tolist(),
                              "max": high.astype(np.float64).tolist()})
            accessors.append({"bufferView": add_view(faces.reshape(-1, 1), "<u4", _ELEMENT_ARRAY_BUFFER),
                              "componentType": _UNSIGNED_INT, "count": faces.size, "type": "SCALAR"})
            extras = {"mesh": int(mesh_id)}
            if not np.array_equal(rounded.astype(np.float64), vertices):
                extras["vertices_float64"] = add_view(vertices, "<f8", None)
            entry = {"primitives": [{"attributes": {"POSITION": len(accessors) - 2}, "indices": len(accessors) - 1,
                                     "mode": _TRIANGLES}], "extras": {EXTRAS_KEY: extras}}
            if found.name is not None:
                entry["name"] = found.name
            document_meshes.append(entry)
        self._binary_length = offset

        head = {"asset": {"version": "2.0", "generator": "bvh-pick"}, "scene": 0}
        if document_meshes:
            head.update(meshes=document_meshes, accessors=accessors, bufferViews=views,
                        buffers=[{"byteLength": self._binary_length}])
        extras = {**(scene_extras or {}), "objects": self.nodes, "without_geometry": self.without_geometry}
        # {"asset": ..., "scenes": [{"extras": ..., "nodes": [ROOTS]}], "nodes": [NODES]}; glTF's
        # arrays hold at least one item, so a scene without objects has neither list.
        self._head = dumps(head)[:-1] + b',"scenes":[{"extras":' + dumps({EXTRAS_KEY: extras})
        self._head += b',"nodes":[' if self.nodes else b"}]}"
        self._middle = b']}],"nodes":[' if self.nodes else b""
        self._tail = b"]}" if self.nodes else b""
        json_length = len(self._head) + roots_length + len(self._middle) + nodes_length + len(self._tail)
        self._json_padding = _padding(json_length)
        self._json_length = json_length + self._json_padding
        self.size = 12 + 8 + self._json_length + (8 + self._binary_length if self._views else 0)
        if self.size > MAX_GLB_BYTES:
            raise GlbTooLarge(f"the GLB would be {self.size:,} bytes; a GLB holds at most {MAX_GLB_BYTES:,} "
                              f"(its length is a 32-bit number)")

    @classmethod
    def of_scene(cls, scene, block_objects: int = 512) -> "GlbExport":
        """The GLB of a ``bvh.Scene`` as it is now: its live objects and the meshes they place."""
        entries = [vars(info) for info in scene.objects]
        names = {info.id: info.name for info in scene.meshes}

        def mesh(mesh_id):
            return ExportMesh(mesh_id, names.get(mesh_id), scene.mesh_vertices(mesh_id), scene.mesh_faces(mesh_id))

        def blocks():
            for start in range(0, len(entries), block_objects):
                yield entries[start:start + block_objects]
        return cls(mesh, blocks)

    def _node_pieces(self) -> Iterator[bytes]:
        """The nodes' JSON, comma-separated, a block at a time (counting them on the way)."""
        self.nodes = 0
        self.without_geometry = {}
        separator = b""
        for block in self._blocks():
            if not block:
                continue
            nodes = []
            for entry in block:
                nodes.append(node_json(entry, self._mesh_index))
                if entry["kind"] != "mesh":
                    self.without_geometry[entry["kind"]] = self.without_geometry.get(entry["kind"], 0) + 1
            self.nodes += len(nodes)
            yield separator + self._dumps(nodes)[1:-1]
            separator = b","

    def _root_pieces(self) -> Iterator[bytes]:
        """``0,1,...,N-1``: every node is a root of the scene."""
        step = 1 << 16
        for start in range(0, self.nodes, step):
            numbers = ",".join(map(str, range(start, min(start + step, self.nodes))))
            yield ("," if start else "").encode() + numbers.encode()

    def pieces(self) -> Iterator[bytes]:
        """The GLB's bytes, in pieces of at most some megabytes (the nodes rendered again)."""
        has_binary = bool(self._views)
        yield _GLB_MAGIC + struct.pack("<II", _GLB_VERSION, self.size)
        yield struct.pack("<II", self._json_length, _JSON_CHUNK) + self._head
        yield from self._root_pieces()
        yield self._middle
        yield from self._node_pieces() if self._kept is None else self._kept
        yield self._tail + b" " * self._json_padding
        if not has_binary:
            return
        yield struct.pack("<II", self._binary_length, _BIN_CHUNK)
        written = 0
        for view in self._views:
            yield b"\0" * (view.offset - written)
            for start in range(0, view.rows.shape[0], ROWS_PER_PIECE):
                yield np.ascontiguousarray(view.rows[start:start + ROWS_PER_PIECE], view.dtype).tobytes()
            written = view.offset + view.length
        yield b"\0" * (self._binary_length - written)

    def to_bytes(self) -> bytes:
        """The whole GLB at once."""
        return b"".join(self.pieces())
