"""Mesh files and glTF scene graphs, read through trimesh, as a :class:`bvh.Scene`.

>>> scene = bvh.load("model.glb")
>>> scene = bvh.load(uploaded_bytes, file_type="stl")

The work is split in two. :func:`read_scene_description` turns a file into
plain arrays (a :class:`SceneDescription`: meshes and the instances that place
them) and knows nothing of BVHs; :func:`load` feeds that description into a
new ``bvh.Scene``. Every failure to read a file is a ``ValueError`` whose
message names the file type that was tried.
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from .scene import Scene

__all__ = [
    "InstanceDescription",
    "MeshDescription",
    "SceneDescription",
    "load",
    "read_scene_description",
    "supported_file_types",
]

# Archive suffixes made of two dots, which Path.suffix would cut in half.
_COMPOUND_SUFFIXES = ("tar.gz", "tar.bz2")

# A binary STL: an 80-byte header, a uint32 triangle count, 50 bytes a triangle.
_STL_HEADER_BYTES = 84
_STL_TRIANGLE_BYTES = 50

# How much of a file to look at for a better error message.
_HINT_HEAD_BYTES = 4096

# trimesh's exception messages can quote a whole buffer; keep ours readable.
_MAX_REASON_CHARS = 300


class MeshDescription(NamedTuple):
    """One mesh of a file: geometry in its own (object) space.

    Attributes
    ----------
    name : str
        The mesh's name in the file (trimesh's geometry name).
    vertices : (V, 3) float64
    faces : (F, 3) int64
        Triangles, indices into ``vertices``.
    normals : (V, 3) float64 or None
        Per-vertex normals stored in the file, as stored (not renormalised);
        None when the file has none for this mesh.
    uvs : (V, 2) float64 or None
        Per-vertex texture coordinates, origin at the bottom left (trimesh's
        convention, so glTF's v is flipped); None when absent.
    source_face : (F,) int64
        For each triangle, the index of the polygon of the file it came from.
    """

    name: str
    vertices: np.ndarray
    faces: np.ndarray
    normals: np.ndarray | None
    uvs: np.ndarray | None
    source_face: np.ndarray


class InstanceDescription(NamedTuple):
    """One placement of a mesh.

    Attributes
    ----------
    mesh : int
        Index into :attr:`SceneDescription.meshes`.
    transform : (4, 4) float64
        Object-to-world transform, composed through the whole node hierarchy.
    name : str
        The scene-graph node's name.
    """

    mesh: int
    transform: np.ndarray
    name: str


class _ObjFaceLines(NamedTuple):
    """The ``f`` lines of an OBJ: vertex count of each, and whether trimesh
    will parse them as one array (every line with the same field count)."""

    sizes: np.ndarray
    uniform: bool


@dataclass
class SceneDescription:
    """The triangles of a file as meshes and instances, before any BVH is built.

    Attributes
    ----------
    file_type : str
        The trimesh file type the source was read as, e.g. ``"glb"``.
    meshes : list of MeshDescription
        Each distinct mesh once, however many nodes use it.
    instances : list of InstanceDescription
        One per scene-graph node that carries triangles, in trimesh's node order.
    """

    file_type: str
    meshes: list[MeshDescription] = field(default_factory=list)
    instances: list[InstanceDescription] = field(default_factory=list)


def supported_file_types() -> list[str]:
    """The file types trimesh can read here, sorted (``trimesh.available_formats()``).

    Some of them (``xyz`` point clouds, ``dxf`` drawings) never hold
    triangles; loading one raises the "has no triangles" ``ValueError``.
    """
    import trimesh

    return sorted(trimesh.available_formats())


def load(source, file_type: str | None = None) -> Scene:
    """Read a mesh file or a glTF scene graph into a new ``bvh.Scene``.

    Parameters
    ----------
    source : str, os.PathLike, bytes, bytearray, memoryview or binary file object
        A path, the file's bytes, or an object with ``read()`` returning bytes.
    file_type : str, optional
        A trimesh file type (``"obj"``, ``"stl"``, ``"ply"``, ``"off"``, ``"glb"``,
        ``"gltf"``, ... see :func:`supported_file_types`). Required for bytes and
        file objects; for a path it defaults to the path's suffix.

    Returns
    -------
    bvh.Scene
        One mesh per distinct mesh of the file (added with its normals, uvs
        and source_face) and one object per scene-graph node that carries
        triangles, named after its node, with its world transform. See
        :func:`read_scene_description` for what is read and how.

    Raises
    ------
    ValueError
        For every file that cannot be read, holds no triangles, or holds
        non-finite coordinates, with a message saying which and why; and for
        a mesh or a node the scene refuses (e.g. a transform that is not
        invertible), naming it.
    """
    description = read_scene_description(source, file_type)
    # Here rather than at the top, so that this module and read_scene_description
    # stand on their own, without bvh.scene.
    from .scene import Scene

    label = _label(description.file_type)
    scene = Scene()
    mesh_ids = []
    for mesh in description.meshes:
        try:
            mesh_ids.append(scene.add_mesh(mesh.vertices, mesh.faces, normals=mesh.normals,
                                           uvs=mesh.uvs, name=mesh.name,
                                           source_face=mesh.source_face))
        except ValueError as exc:
            # The scene's message names the argument, not which part of the file it was.
            raise ValueError(f"mesh {mesh.name!r} of this {label} file: {exc}") from exc
    for instance in description.instances:
        try:
            scene.add_instance(mesh_ids[instance.mesh], transform=instance.transform,
                               name=instance.name)
        except ValueError as exc:
            raise ValueError(f"node {instance.name!r} of this {label} file: {exc}") from exc
    return scene


def read_scene_description(source, file_type: str | None = None) -> SceneDescription:
    """Read the triangles of a file through trimesh as meshes and instances.

    Parameters
    ----------
    source : str, os.PathLike, bytes, bytearray, memoryview or binary file object
        A path, the file's bytes, or an object with ``read()`` returning bytes.
        A ``.gltf`` whose buffers or images are separate files needs its path
        (or a file object whose ``name`` is its path) so they can be found.
    file_type : str, optional
        A trimesh file type, case and a leading dot ignored. Required for bytes
        and file objects; for a path it defaults to the path's suffix.

    Returns
    -------
    SceneDescription

    Raises
    ------
    ValueError
        - no file at the path, an unreadable path, a text-mode file object,
          or a source of another type;
        - bytes or a file object without ``file_type``; a path without suffix;
        - an unsupported file type (the message lists the supported ones);
        - an empty, truncated or otherwise unreadable file: "could not read
          this as STL: ..." (whatever trimesh raised, of any type, is wrapped);
        - a file with no triangles: "this PLY file has no triangles: it holds
          1 point cloud with 100 points";
        - non-finite vertex coordinates or transforms, face indices out of range.

    Notes
    -----
    - Loading is trimesh's ``load_scene(..., process=False)``: vertices are
      neither merged nor reordered (a binary STL keeps three vertices a
      triangle), and faces keep the file's order except where trimesh
      triangulates (below).
    - glTF/GLB: every scene-graph node with triangles becomes an instance
      named after its node (trimesh names an unnamed node by its index),
      with its world transform through the hierarchy. A glTF mesh used by
      several nodes is one mesh and several instances. The primitives of a
      glTF mesh become one mesh (vertices concatenated in primitive order;
      normals or uvs only when every primitive has them). Non-triangle
      primitives (points, lines) are skipped. UVs are read only for
      primitives that have a material (trimesh ignores TEXCOORD_0 otherwise).
    - OBJ: materials and textures are never read, so missing ``.mtl`` or image
      files do not matter; geometry, ``vn`` normals and ``vt`` uvs are kept.
      ``usemtl`` lines are dropped before parsing so that all faces form one
      mesh in file order (trimesh would otherwise split and regroup the faces
      by material). ``source_face`` is the index of the triangle's ``f`` line
      among the file's ``f`` lines (lines with fewer than three vertices,
      which trimesh skips, keep their index); trimesh splits a quad into two
      triangles and a larger polygon into a fan.
    - Other formats: ``source_face`` is ``arange(F)``. For STL and glTF that is
      exact (they store triangles); for PLY and OFF files with quads or larger
      polygons, trimesh's triangulation does not say which polygon each
      triangle came from, so the map is the identity over triangles.
    - Normals are per-vertex normals stored in the file (OBJ ``vn``, PLY
      ``nx ny nz``, glTF ``NORMAL``), never computed; normals or uvs holding
      a non-finite value are dropped (None) rather than passed on.
    """
    data, path, file_type, resolver = _read_source(source, file_type)
    obj_faces = None
    if file_type == "obj":
        data, obj_faces = _prepare_obj(data if data is not None else _read_path(path))
    scene = _trimesh_scene(data, path, file_type, resolver)
    try:
        return _describe(scene, file_type, obj_faces)
    except ValueError:
        raise
    except Exception as exc:
        # trimesh computes some attributes lazily, so it can still fail here.
        raise ValueError(f"could not read this as {_label(file_type)}: {_reason(exc)}") from exc


def _label(file_type: str) -> str:
    return file_type.upper()


def _read_source(source, file_type):
    """``(bytes or None, path or None, normalised file type, trimesh resolver
    or None)`` of a source: a path is not read here, so that trimesh can open
    it itself and name the geometry after the file."""
    import trimesh

    resolver, path, data = None, None, None
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if file_type is None:
            raise ValueError("file_type is required when source is bytes "
                             "(e.g. file_type='stl')")
    elif hasattr(source, "read"):
        if file_type is None:
            raise ValueError("file_type is required when source is a file object "
                             "(e.g. file_type='stl')")
        try:
            data = source.read()
        except Exception as exc:
            raise ValueError(f"could not read the file object: {_reason(exc)}") from exc
        if isinstance(data, str):
            raise ValueError("source is a text-mode file object: open the file in "
                             "binary mode ('rb')")
        data = bytes(data)
        name = getattr(source, "name", None)
        if isinstance(name, str) and os.path.isfile(name):
            # Lets a .gltf opened by the caller find its buffers and images.
            resolver = trimesh.resolvers.FilePathResolver(name)
    elif isinstance(source, (str, os.PathLike)):
        path = Path(os.fsdecode(source))
        if not path.is_file():
            raise ValueError(f"no file at {str(path)!r}")
        path = path.resolve()
        if file_type is None:
            file_type = _suffix_type(path)
        # Lets an OBJ, which is handed to trimesh as bytes, keep the file's name.
        resolver = trimesh.resolvers.FilePathResolver(str(path))
    else:
        raise ValueError("source must be a path, bytes or a binary file object, "
                         f"not {type(source).__name__}")
    return data, path, _normalise_type(file_type), resolver


def _read_path(path: Path, size: int = -1) -> bytes:
    """The first ``size`` bytes of a file (all of it by default)."""
    try:
        with open(path, "rb") as stream:
            return stream.read(size)
    except OSError as exc:
        raise ValueError(f"could not read {str(path)!r}: {exc}") from exc


def _suffix_type(path: Path) -> str:
    name = path.name.lower()
    for compound in _COMPOUND_SUFFIXES:
        if name.endswith("." + compound):
            return compound
    if not path.suffix:
        raise ValueError(f"cannot tell the file type of {str(path)!r}: it has no suffix; "
                         "pass file_type (e.g. file_type='obj')")
    return path.suffix[1:]


def _normalise_type(file_type) -> str:
    if not isinstance(file_type, str):
        raise ValueError(f"file_type must be a string such as 'stl', not {file_type!r}")
    normalised = file_type.strip().lower().lstrip(".")
    supported = supported_file_types()
    if normalised not in supported:
        raise ValueError(f"unsupported file type {normalised!r}: trimesh reads "
                         + ", ".join(supported))
    return normalised


def _prepare_obj(data: bytes):
    """OBJ bytes for trimesh, and the vertex count of each ``f`` line.

    ``usemtl`` lines are removed so trimesh sees one run of faces: it would
    otherwise make one mesh per material with the faces regrouped, and the
    map back to the file's faces would be lost. Materials are not used here.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        # OBJ is ASCII in practice; other bytes only occur in names and comments.
        text = data.decode("latin-1")
    text = re.sub(r"^[ \t]*usemtl\b[^\n]*$", "", text, flags=re.MULTILINE)
    face_lines = re.findall(r"^f[ \t]+([^\n]*)$", text.replace("\r\n", "\n"),
                            flags=re.MULTILINE)
    sizes = np.array([len(line.split()) for line in face_lines], dtype=np.int64)
    # trimesh reads the faces as one array only when every line has the same
    # number of numbers ("1/2/3" counts three), and triangulates differently then.
    uniform = len({len(line.replace("/", " ").split()) for line in face_lines}) <= 1
    return text.encode("utf-8"), _ObjFaceLines(sizes, uniform)


def _trimesh_scene(data: bytes | None, path: Path | None, file_type: str, resolver):
    """trimesh's scene of the bytes, or else of the file at ``path``."""
    import trimesh

    label = _label(file_type)
    # Whether files a .gltf refers to (buffers, images) can be found.
    findable = path is not None or resolver is not None
    if data is not None:
        size, file_obj = len(data), io.BytesIO(data)
    else:
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise ValueError(f"could not read {str(path)!r}: {exc}") from exc
        # trimesh opens the file itself and makes its own resolver.
        file_obj, resolver = str(path), None
    if size == 0:
        raise ValueError(f"could not read this as {label}: the file is empty")
    options = {"process": False}
    if file_type == "obj":
        # Texture images would be decoded for nothing; uvs are read regardless.
        options["skip_materials"] = True
    try:
        scene = trimesh.load_scene(file_obj, file_type=file_type, resolver=resolver, **options)
    except Exception as exc:
        raise ValueError(f"could not read this as {label}: {_reason(exc)}"
                         f"{_hint(data, path, file_type, findable)}") from exc
    if not scene.geometry:
        # Only the STL hint applies: trimesh read the .gltf's buffers if it got here.
        raise ValueError(f"could not read this as {label}: no geometry in it (not a valid "
                         f"{label} file, or an empty one){_hint(data, path, file_type, True)}")
    return scene


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ImportError) and exc.name == "charset_normalizer":
        # trimesh guesses the encoding of non-UTF-8 text with that optional module.
        return "it is not UTF-8 text"
    message = " ".join(str(exc).split())
    if len(message) > _MAX_REASON_CHARS:
        message = message[:_MAX_REASON_CHARS] + "..."
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _hint(data: bytes | None, path: Path | None, file_type: str, findable: bool) -> str:
    """A likelier cause than trimesh's message, where the bytes show one."""
    if file_type == "stl":
        if data is None:
            try:
                # Binary triangles show non-ASCII bytes well within the first few.
                head, size = _read_path(path, _HINT_HEAD_BYTES), path.stat().st_size
            except (OSError, ValueError):
                return ""
        else:
            head, size = data, len(data)
        if _is_text(head):
            return ""
        if size < _STL_HEADER_BYTES:
            return (f" (binary data of {size} bytes, shorter than the "
                    f"{_STL_HEADER_BYTES}-byte header of a binary STL)")
        count = int.from_bytes(head[80:84], "little")
        expected = _STL_HEADER_BYTES + _STL_TRIANGLE_BYTES * count
        if expected != size:
            return (f" (a binary STL header announcing {count} triangles, {expected} bytes, "
                    f"but the data has {size} bytes: truncated or not an STL)")
    if file_type == "gltf" and not findable:
        return " (a .gltf whose buffers or images are separate files must be loaded from its path)"
    return ""


def _is_text(data: bytes) -> bool:
    try:
        data.decode("ascii")
    except UnicodeDecodeError:
        return False
    return True


def _describe(scene, file_type: str, obj_faces) -> SceneDescription:
    """Meshes and instances of a trimesh scene; skips geometry without triangles."""
    label = _label(file_type)
    graph = scene.graph
    # Instance node -> (world transform, names of its triangle geometries).
    placements: dict[str, tuple[np.ndarray, list[str]]] = {}
    for node in graph.nodes_geometry:
        transform, geometry_name = graph[node]
        geometry = scene.geometry.get(geometry_name)
        if geometry is None or not _has_triangles(geometry):
            continue
        owner = node
        if geometry.metadata.get("from_gltf_primitive"):
            # trimesh hangs each primitive of a multi-primitive glTF mesh under
            # the node as a child frame with a random name and an identity
            # matrix; the node itself is the object the file describes.
            parent = graph.transforms.parents.get(node)
            if parent is not None and parent != graph.base_frame:
                owner = parent
        placements.setdefault(owner, (transform, []))[1].append(geometry_name)

    if not placements:
        raise ValueError(f"this {label} file has no triangles: it holds "
                         f"{_holdings(scene.geometry.values())}")

    description = SceneDescription(file_type=file_type)
    mesh_index: dict[tuple[str, ...], int] = {}
    for node, (transform, geometry_names) in placements.items():
        key = tuple(geometry_names)
        if key not in mesh_index:
            mesh_index[key] = len(description.meshes)
            parts = [scene.geometry[name] for name in geometry_names]
            description.meshes.append(_mesh(geometry_names[0], parts, label, obj_faces))
        transform = np.array(transform, dtype=np.float64)
        if transform.shape != (4, 4) or not np.isfinite(transform).all():
            raise ValueError(f"this {label} file has a non-finite transform on node {node!r}")
        description.instances.append(InstanceDescription(mesh_index[key], transform, str(node)))
    return description


def _has_triangles(geometry) -> bool:
    faces = getattr(geometry, "faces", None)
    return faces is not None and len(faces) > 0


def _mesh(name: str, parts, label: str, obj_faces) -> MeshDescription:
    """One mesh from one trimesh geometry, or from the primitives of one glTF mesh."""
    vertices, faces, normals, uvs, base = [], [], [], [], 0
    for part in parts:
        part_vertices = np.array(part.vertices, dtype=np.float64)
        part_faces = np.array(part.faces, dtype=np.int64)
        count = len(part_vertices)
        if part_vertices.ndim != 2 or part_vertices.shape[1] != 3:
            raise ValueError(f"could not read this as {label}: mesh {name!r} has vertices "
                             f"of shape {part_vertices.shape}, not (V, 3)")
        if part_faces.ndim != 2 or part_faces.shape[1] != 3:
            raise ValueError(f"could not read this as {label}: mesh {name!r} has faces "
                             f"of shape {part_faces.shape}, not (F, 3)")
        if part_faces.min() < 0 or part_faces.max() >= count:
            raise ValueError(f"could not read this as {label}: mesh {name!r} has face "
                             f"indices outside 0..{count - 1}")
        if not np.isfinite(part_vertices).all():
            bad = int((~np.isfinite(part_vertices).all(axis=1)).sum())
            raise ValueError(f"this {label} file has non-finite vertex coordinates "
                             f"(NaN or infinity) in mesh {name!r}: {bad} of {count} vertices")
        vertices.append(part_vertices)
        faces.append(part_faces + base)
        normals.append(_file_normals(part))
        uvs.append(_file_uvs(part))
        base += count

    vertices = np.concatenate(vertices)
    faces = np.concatenate(faces)
    # A merged mesh carries an attribute only when every primitive has it.
    normals = None if any(n is None for n in normals) else np.concatenate(normals)
    uvs = None if any(u is None for u in uvs) else np.concatenate(uvs)
    source_face = None
    if obj_faces is not None and len(parts) == 1:
        source_face = _obj_source_face(obj_faces, faces)
    if source_face is None:
        source_face = np.arange(len(faces), dtype=np.int64)
    return MeshDescription(str(name), vertices, faces, normals, uvs, source_face)


def _file_normals(geometry) -> np.ndarray | None:
    # Trimesh.vertex_normals computes normals when the file has none; the
    # file's own are the ones trimesh put in its cache at construction.
    if "vertex_normals" not in geometry._cache:
        return None
    normals = np.array(geometry.vertex_normals, dtype=np.float64)
    if normals.shape != (len(geometry.vertices), 3) or not np.isfinite(normals).all():
        return None
    return normals


def _file_uvs(geometry) -> np.ndarray | None:
    uv = getattr(getattr(geometry, "visual", None), "uv", None)
    if uv is None:
        return None
    uv = np.array(uv, dtype=np.float64)
    if uv.ndim != 2 or uv.shape[0] != len(geometry.vertices) or uv.shape[1] < 2:
        return None
    uv = np.ascontiguousarray(uv[:, :2])
    return uv if np.isfinite(uv).all() else None


def _obj_source_face(obj_faces: _ObjFaceLines, faces: np.ndarray):
    """The ``f`` line of each triangle trimesh made from an OBJ, or None.

    trimesh parses the face lines in one of two ways. When every line has
    the same number of numbers it reads them as one (P, k) array: triangles
    stay as they are, quads become every quad's first triangle then every
    quad's second one, larger polygons become consecutive fans. Otherwise it
    loops over the lines: a quad becomes two consecutive triangles, a
    polygon a consecutive fan, a line with fewer than three vertices nothing.
    The result is checked (triangle count, and triangles of one polygon
    sharing an edge) so that a trimesh that does otherwise gives None, not a
    wrong map.
    """
    sizes = obj_faces.sizes
    if len(sizes) == 0:
        return None
    lines = np.arange(len(sizes), dtype=np.int64)
    if obj_faces.uniform and sizes[0] == 4:
        source_face = np.concatenate([lines, lines])
    else:
        source_face = np.repeat(lines, np.maximum(sizes - 2, 0))
    if len(source_face) != len(faces) or not _polygons_hold_together(source_face, faces):
        return None
    return source_face


def _polygons_hold_together(source_face: np.ndarray, faces: np.ndarray) -> bool:
    """Whether each triangle shares an edge with the previous triangle of its
    polygon, as a quad's halves and a fan's triangles do.

    Vertex indices suffice: trimesh gives one vertex to each distinct
    (position, uv, normal) reference, and a polygon's triangles reuse its
    references.
    """
    order = np.argsort(source_face, kind="stable")
    same = source_face[order][1:] == source_face[order][:-1]
    if not same.any():
        return True
    corners = faces[order]
    first, second = corners[:-1][same], corners[1:][same]
    shared = (first[:, :, None] == second[:, None, :]).any(axis=2).sum(axis=1)
    return bool((shared >= 2).all())


def _holdings(geometries) -> str:
    """What a scene without triangles holds, e.g. "1 point cloud with 100 points"."""
    clouds, points, paths, empty, other = 0, 0, 0, 0, {}
    for geometry in geometries:
        kind = type(geometry).__name__
        if kind == "PointCloud":
            clouds += 1
            points += len(geometry.vertices)
        elif kind in ("Path2D", "Path3D"):
            paths += 1
        elif kind == "Trimesh":
            empty += 1
        else:
            other[kind] = other.get(kind, 0) + 1
    parts = []
    if clouds:
        parts.append(f"{_count(clouds, 'point cloud')} with {_count(points, 'point')}")
    if paths:
        parts.append(_count(paths, "path") + " (lines or curves)")
    if empty:
        parts.append(_count(empty, "mesh") + " without faces")
    parts.extend(_count(n, kind) for kind, n in other.items())
    return ", ".join(parts) if parts else "nothing"


def _count(n: int, noun: str) -> str:
    if n == 1:
        return f"1 {noun}"
    return f"{n} {noun}es" if noun.endswith("sh") else f"{n} {noun}s"
