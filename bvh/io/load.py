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
import json
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .gltf_materials import mesh_alpha_of_parts

if TYPE_CHECKING:
    from ..scene.scene import Scene

__all__ = [
    "InstanceDescription",
    "SetDescription",
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

# A GLB: a 12-byte header (magic, version, total length), then chunks of an
# 8-byte header (length, type) and their data; the first chunk is the JSON.
_GLB_HEADER_BYTES = 12
_GLB_CHUNK_HEADER_BYTES = 8
_GLB_JSON_CHUNK = 0x4E4F534A
_GLB_BIN_CHUNK = 0x004E4942

# PLY scalar types and their sizes in bytes (both spellings of the standard).
_PLY_TYPES = {
    "char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1",
    "short": "i2", "int16": "i2", "ushort": "u2", "uint16": "u2",
    "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
    "float": "f4", "float32": "f4", "double": "f8", "float64": "f8",
}
_PLY_ENDIAN = {"binary_little_endian": "<", "binary_big_endian": ">", "ascii": None}
# Vertex properties read as texture coordinates, in order of preference.
_PLY_UV_NAMES = (("s", "t"), ("u", "v"), ("texture_u", "texture_v"), ("texture_s", "texture_t"))

# One vertex reference of an OBJ face in each of its four forms: v, v/vt, v//vn, v/vt/vn.
_OBJ_REFERENCE_FORMS = (r"-?\d+", r"-?\d+/-?\d+", r"-?\d+//-?\d+", r"-?\d+/-?\d+/-?\d+")
# A face line whose references are well formed and all of one form (the
# format requires it); trimesh reads no comment after them.
_OBJ_GOOD_FACE = (r"(?:[ \t]+(?:" + "|".join(rf"{form}(?:[ \t]+{form})*" for form in _OBJ_REFERENCE_FORMS)
                  + r"))?[ \t]*$")
# The patterns below are searched in the text with a newline put in front,
# and start with that newline: a literal start lets the search skip ahead fast.
_OBJ_BAD_FACE = re.compile(rf"\nf(?=[ \t])(?!{_OBJ_GOOD_FACE})[^\n]*", re.MULTILINE)
# A v, vt or vn line with too few numbers (x y z; u [v]; x y z).
# (Possessive quantifiers: a line of three numbers fails at once, without
# trying every split of its words.)
_OBJ_SHORT_VERTEX = re.compile(r"\nv(?:(?:[ \t]++[^\s#]++){0,2}+|t|n(?:[ \t]++[^\s#]++){0,2}+)[ \t]*+(?:#[^\n]*)?$",
                               re.MULTILINE)
_OBJ_ELEMENTS = {"v": "vertex", "vt": "texture coordinate", "vn": "normal"}


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
    alpha : bvh.MeshAlpha or None
        The alpha-tested materials of a glTF mesh (``alphaMode`` MASK or
        BLEND, :mod:`bvh.io.gltf_materials`); None for every other mesh.
    """

    name: str
    vertices: np.ndarray
    faces: np.ndarray
    normals: np.ndarray | None
    uvs: np.ndarray | None
    source_face: np.ndarray
    alpha: object = None


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


class SetDescription(NamedTuple):
    """One line set or point set of a file (``bvh.Scene.add_lines`` /
    ``add_points``), in its own space.

    Attributes
    ----------
    name : str
    kind : str
        ``"lines"`` or ``"points"``.
    vertices : (V, 3) float64
        A line set's vertices, a point set's points.
    segments : (E, 2) int64
        A line set's segments (empty for points).
    """

    name: str
    kind: str
    vertices: np.ndarray
    segments: np.ndarray


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
    #: Line and point sets, and their placements (``mesh`` indexes ``sets``).
    sets: list[SetDescription] = field(default_factory=list)
    set_instances: list[InstanceDescription] = field(default_factory=list)


def supported_file_types() -> list[str]:
    """The file types trimesh can read here, sorted (``trimesh.available_formats()``).

    Some of them (``xyz`` point clouds, ``dxf`` drawings) never hold
    triangles; loading one raises the "has no triangles" ``ValueError``.
    """
    import trimesh

    return sorted(trimesh.available_formats())


def load(source, file_type: str | None = None, name: str | None = None) -> Scene:
    """Read a mesh file or a glTF scene graph into a new ``bvh.Scene``.

    Parameters
    ----------
    source : str, os.PathLike, bytes, bytearray, memoryview or binary file object
        A path, the file's bytes, or an object with ``read()`` returning bytes.
    file_type : str, optional
        A trimesh file type (``"obj"``, ``"stl"``, ``"ply"``, ``"off"``, ``"glb"``,
        ``"gltf"``, ... see :func:`supported_file_types`). Required for bytes and
        file objects; for a path it defaults to the path's suffix.
    name : str, optional
        Names the object of a file holding one mesh it does not name (see
        :func:`read_scene_description`).

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
    description = read_scene_description(source, file_type, name)
    # Here rather than at the top, so that this module and read_scene_description
    # stand on their own, without bvh.scene.
    from ..scene.scene import Scene

    label = _label(description.file_type)
    scene = Scene()
    mesh_ids = []
    for mesh in description.meshes:
        try:
            mesh_ids.append(scene.add_mesh(mesh.vertices, mesh.faces, normals=mesh.normals,
                                           uvs=mesh.uvs, name=mesh.name,
                                           source_face=mesh.source_face, alpha=mesh.alpha))
        except ValueError as exc:
            # The scene's message names the argument, not which part of the file it was.
            raise ValueError(f"mesh {mesh.name!r} of this {label} file: {exc}") from exc
    for instance in description.instances:
        try:
            scene.add_instance(mesh_ids[instance.mesh], transform=instance.transform,
                               name=instance.name)
        except ValueError as exc:
            raise ValueError(f"node {instance.name!r} of this {label} file: {exc}") from exc
    set_ids = []
    for line_set in description.sets:
        try:
            set_ids.append(scene.add_lines(line_set.vertices, line_set.segments, name=line_set.name)
                           if line_set.kind == "lines" else scene.add_points(line_set.vertices, name=line_set.name))
        except ValueError as exc:
            raise ValueError(f"{line_set.kind} {line_set.name!r} of this {label} file: {exc}") from exc
    for instance in description.set_instances:
        kind = description.sets[instance.mesh].kind
        try:
            scene.add_instance(None, transform=instance.transform, name=instance.name,
                               **{kind: set_ids[instance.mesh]})
        except ValueError as exc:
            raise ValueError(f"node {instance.name!r} of this {label} file: {exc}") from exc
    return scene


def read_scene_description(source, file_type: str | None = None, name: str | None = None) -> SceneDescription:
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
    name : str, optional
        The name of the mesh and its object when the file holds one mesh
        placed once that the file itself does not name (an STL, PLY or OFF,
        an OBJ without ``o``/``g`` lines, a glTF whose node and mesh have no
        name). Without it such a mesh keeps trimesh's name: the file's name
        for a path (``"gear.stl"``), ``"geometry_0"`` for bytes.

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
          this as STL: ..." (whatever trimesh raised, of any type, is wrapped,
          in words about the file rather than the exception's);
        - OBJ: a malformed ``v``/``vt``/``vn``/``f`` line, a face referring to a
          vertex, texture coordinate or normal the file does not define, a
          last line cut short: "could not read this as OBJ: line 14: face
          refers to vertex 9, but the file defines 8 vertices";
        - GLB: a header length other than the file's size, a chunk running past
          the end, JSON that does not parse, with the byte offset;
        - PLY: fewer rows than the header announces: "the header announces
          1000 faces, but the file holds 512 (its data ends at byte 20480)";
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
    - PLY triangle strips (an ``element tristrips`` with a ``vertex_indices``
      list, strips separated by -1, instead of ``element face``), which
      trimesh does not read, are read here: triangle k of a strip s is
      (s[k], s[k+1], s[k+2]) for even k and (s[k+1], s[k], s[k+2]) for odd k;
      triangles with a repeated vertex (zero area, the strips' turns and
      joins) are dropped, but count for the alternation; ascii and both
      binary byte orders; ``source_face`` is ``arange(F)``. A binary PLY
      whose faces have different vertex counts (which trimesh refuses) is
      read here too, each k-gon as a fan of k - 2 triangles whose
      ``source_face`` is its row.
    - Other formats: ``source_face`` is ``arange(F)``. For STL and glTF that is
      exact (they store triangles); for PLY and OFF files with quads or larger
      polygons, trimesh's triangulation does not say which polygon each
      triangle came from, so the map is the identity over triangles.
    - Normals are per-vertex normals stored in the file (OBJ ``vn``, PLY
      ``nx ny nz``, glTF ``NORMAL``), never computed; normals or uvs holding
      a non-finite value are dropped (None) rather than passed on.
    """
    data, path, file_type, resolver = _read_source(source, file_type)
    obj_faces, scene, document = None, None, None
    # These are checked before trimesh parses them; a path is still handed to
    # trimesh as a path (but for an OBJ), which names the geometry after the file.
    raw = data if data is not None or file_type not in ("obj", "glb", "ply") else _read_path(path)
    obj_lines = None
    if file_type == "obj" and raw:
        data, obj_faces = _prepare_obj(raw)
        obj_lines = _obj_lines(data.decode("utf-8"))
    elif file_type == "glb" and raw:
        document = _check_glb(raw)
    elif file_type == "gltf" and data:
        document = _gltf_document(data, None)
    elif file_type == "ply" and raw:
        layout = _ply_layout(raw)
        names = [] if layout is None else [element.name for element in layout.elements]
        # trimesh reads neither strips nor binary faces of different vertex counts.
        if ("tristrips" in names and "face" not in names) or (layout is not None and "face" in layout.ragged):
            scene = _ply_own_scene(raw, layout, path.name if path is not None else "geometry_0")
    if scene is None:
        scene = _trimesh_scene(data, path, file_type, resolver)
    if file_type in ("glb", "gltf"):
        _read_gltf_alpha(scene, file_type, raw, data, path, document, resolver)
    try:
        description = _describe(scene, file_type, obj_faces, obj_lines)
    except ValueError:
        raise
    except Exception as exc:
        # trimesh computes some attributes lazily, so it can still fail here.
        raise ValueError(f"could not read this as {_label(file_type)}: "
                         f"{_reason(exc, _label(file_type))}") from exc
    if name and file_type == "gltf" and document is None:
        document = _gltf_document(data, path)
    if name and _single_unnamed(description, path, document):
        description.meshes[0] = description.meshes[0]._replace(name=name)
        description.instances[0] = description.instances[0]._replace(name=name)
    return description


def _read_gltf_alpha(scene, file_type: str, raw, data, path, document, resolver) -> None:
    """Tag trimesh's geometries of a glTF with their alpha-tested materials (:mod:`bvh.io.gltf_materials`)."""
    import trimesh

    from .gltf_materials import GltfFile

    if document is None and file_type == "gltf":
        document = _gltf_document(data, path)
    if document is None:
        return
    if resolver is None and path is not None:
        resolver = trimesh.resolvers.FilePathResolver(str(path))
    try:
        GltfFile(document, raw if file_type == "glb" else None, resolver).tag_geometries(
            list(scene.geometry.values()))
    except ValueError as exc:
        raise ValueError(f"could not read the alpha of this {_label(file_type)} file's materials: {exc}") from exc


def _gltf_document(data: bytes | None, path: Path | None) -> dict | None:
    """The JSON of a .gltf (None when it is not an object).

    Raises
    ------
    ValueError
        "could not read this as GLTF: its JSON is not valid at character 2
        (line 1, column 2)".
    """
    try:
        document = json.loads(data if data is not None else _read_path(path))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"could not read this as GLTF: {_reason(exc, 'GLTF')}") from exc
    return document if isinstance(document, dict) else None


def _single_unnamed(description: SceneDescription, path: Path | None, document: dict | None) -> bool:
    """Whether the file holds one mesh placed once, which the file itself does
    not name (trimesh then invents "geometry_0", or uses the file's name)."""
    if len(description.meshes) != 1 or len(description.instances) != 1:
        return False
    if description.file_type in ("glb", "gltf"):
        if document is None:
            return False
        nodes = [node for node in document.get("nodes", []) if isinstance(node, dict) and "mesh" in node]
        meshes = document.get("meshes", [])
        if len(nodes) != 1 or "name" in nodes[0]:
            return False
        mesh = nodes[0]["mesh"]
        return not (isinstance(mesh, int) and 0 <= mesh < len(meshes) and isinstance(meshes[mesh], dict)
                    and "name" in meshes[mesh])
    given = description.instances[0].name
    return bool(re.fullmatch(r"geometry(_\d+)?", given)) or (path is not None and given == path.name)


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
            raise ValueError(f"could not read the file object: {_reason(exc, 'mesh')}") from exc
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

    The text is checked first (:func:`_check_obj`). ``usemtl`` lines are
    removed so trimesh sees one run of faces: it would otherwise make one
    mesh per material with the faces regrouped, and the map back to the
    file's faces would be lost. Materials are not used here.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        # OBJ is ASCII in practice; other bytes only occur in names and comments.
        text = data.decode("latin-1")
    text = text.replace("\r\n", "\n")
    if "\n " in text or "\n\t" in text or text[:1] in (" ", "\t"):
        # Indented lines: trimesh reads an indented v but skips an indented f.
        text = re.sub(r"^[ \t]+", "", text, flags=re.MULTILINE)
    face_lines = re.findall(r"^f[ \t]+([^\n]*)$", text, flags=re.MULTILINE)
    _check_obj(text, face_lines)
    text = re.sub(r"^[ \t]*usemtl\b[^\n]*$", "", text, flags=re.MULTILINE)
    sizes = np.array([len(line.split()) for line in face_lines], dtype=np.int64)
    # trimesh reads the faces as one array only when every line has the same
    # number of numbers ("1/2/3" counts three), and triangulates differently then.
    uniform = len({len(line.replace("/", " ").split()) for line in face_lines}) <= 1
    return text.encode("utf-8"), _ObjFaceLines(sizes, uniform)


def _obj_error(text: str, position: int, problem: str) -> ValueError:
    """"could not read this as OBJ: line 14: ..." for the line holding ``position``;
    a last line without its newline is said to be cut short."""
    line = text.count("\n", 0, position) + 1
    if "\n" not in text[position:] and not text.endswith("\n"):
        problem += " (it is the last line and has no line end: the file looks cut short)"
    return ValueError(f"could not read this as OBJ: line {line}: {problem}")


def _check_obj(text: str, face_lines: list[str]) -> None:
    """Refuse an OBJ whose ``v``/``vt``/``vn``/``f`` lines are malformed or whose
    faces refer to elements the file does not define.

    Whole-text regular expressions and one numpy parse keep this cheap; the
    line-by-line search for the culprit only runs once something is wrong.
    A file cut inside a number that leaves a well-formed line (``f 10 11 12``
    cut to ``f 10 11 1``) cannot be told from an intact one.

    Raises
    ------
    ValueError
        "could not read this as OBJ: line 14: face refers to vertex 9, but the
        file defines 8 vertices", with the line number and the index as the
        file wrote them (1-based, or negative counting back).
    """
    lined = "\n" + text
    short = _OBJ_SHORT_VERTEX.search(lined)
    if short is not None:
        keyword, *numbers = short.group(0).split("#")[0].split()
        needed = {"v": "3 numbers (x y z)", "vt": "at least 1 number (u [v])", "vn": "3 numbers (x y z)"}[keyword]
        raise _obj_error(text, short.start(),
                         f"a '{keyword}' line needs {needed}, but this one has {len(numbers)}")
    bad = _OBJ_BAD_FACE.search(lined)
    if bad is not None:
        raise _obj_error(text, bad.start(), _obj_face_problem(bad.group(0)))
    last_line = text[text.rfind("\n") + 1:]
    if last_line.split()[:1] == ["f"] and len(last_line.split()) < 4:
        # Faces of one or two vertices are skipped elsewhere; at the very end,
        # without a line end, one is the remains of a cut.
        raise _obj_error(text, len(text) - len(last_line),
                         f"a face needs at least 3 vertices, but this one has {len(last_line.split()) - 1}")
    if not face_lines:
        return
    counts = {keyword: lined.count(f"\n{keyword} ") + lined.count(f"\n{keyword}\t") for keyword in _OBJ_ELEMENTS}
    if _obj_references_in_range(" ".join(face_lines), counts):
        return
    for match in re.finditer(r"^f[ \t]+([^\n#]*)", text, flags=re.MULTILINE):
        for reference in match.group(1).split():
            for keyword, number in zip(("v", "vt", "vn"), reference.split("/")):
                if number and not _obj_index_valid(int(number), counts[keyword]):
                    raise _obj_error(text, match.start(), _obj_range_problem(keyword, int(number), counts[keyword]))


def _obj_number_problem(text: str) -> str | None:
    """Where a ``v``/``vt``/``vn`` line holds something other than numbers
    (what makes trimesh's parse fail), as "line 5: ...", or None."""
    for match in re.finditer(r"^(?:v|vt|vn)[ \t]+([^\n#]*)", text, flags=re.MULTILINE):
        for word in match.group(1).split():
            try:
                float(word)
            except ValueError:
                line = text.count("\n", 0, match.start()) + 1
                return f"line {line}: {word!r} is not a number"
    return None


def _obj_index_valid(index: int, count: int) -> bool:
    # 1-based, or negative counting back from the last one defined.
    return 1 <= index <= count or -count <= index <= -1


def _obj_range_problem(keyword: str, index: int, count: int) -> str:
    noun = _OBJ_ELEMENTS[keyword]
    if index == 0:
        return f"face refers to {noun} 0, but OBJ numbers them from 1"
    plural = "vertices" if noun == "vertex" else noun + "s"
    return f"face refers to {noun} {index}, but the file defines {count} {noun if count == 1 else plural}"


def _obj_references_in_range(references: str, counts: dict) -> bool:
    """Whether every v (and vt, vn, when all faces write their references in
    one form) index among the face references is within what the file defines."""
    # "//" marks a reference without a texture coordinate; 0 stands in for it.
    spelled = references.replace("//", "/0/")
    first = spelled.split(maxsplit=1)[0]
    per_reference = first.count("/") + 1
    one_form = r"-?\d+" + r"/-?\d+" * (per_reference - 1)
    if re.fullmatch(rf"\s*+(?:{one_form}\s++)*+", spelled + " ") is None:
        # References of several forms: check the vertex indices only.
        spelled, per_reference = re.sub(r"/[^ \t]*", "", references), 1
    # The references are well formed (checked before), so the parse reads every number.
    table = np.fromstring(spelled.replace("/", " "), dtype=np.int64, sep=" ").reshape(-1, per_reference)
    for column, keyword in enumerate(("v", "vt", "vn")[:per_reference]):
        index, count = table[:, column], counts[keyword]
        if keyword == "vt" and "//" in references:
            index = index[index != 0]
        valid = ((index >= 1) & (index <= count)) | ((index <= -1) & (index >= -count))
        if not valid.all():
            return False
    return True


def _obj_face_problem(line: str) -> str:
    """What is wrong with a face line :data:`_OBJ_BAD_FACE` matched."""
    references = line.split()[1:]
    form = re.compile("|".join(f"({form})" for form in _OBJ_REFERENCE_FORMS))
    for reference in references:
        if form.fullmatch(reference) is None:
            return (f"face vertex {reference!r} is not a vertex reference (v, v/vt, v//vn or v/vt/vn, "
                    "whole numbers)")
    shapes = [form.fullmatch(reference).lastindex for reference in references]
    first = references[0]
    other = next((reference for reference, shape in zip(references, shapes) if shape != shapes[0]), None)
    if other is None:
        # Each reference is fine: what separates them is not a space or a tab.
        return f"face line {line.strip()!r} separates its vertices by something other than spaces or tabs"
    return f"face vertex {other!r} is not written like the first one on its line ({first!r})"


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
        located = _obj_number_problem(data.decode("utf-8")) if file_type == "obj" else None
        if located is not None:
            raise ValueError(f"could not read this as OBJ: {located}") from exc
        raise ValueError(f"could not read this as {label}: {_reason(exc, label)}"
                         f"{_hint(data, path, file_type, findable)}") from exc
    if not scene.geometry:
        # Only the STL hint applies: trimesh read the .gltf's buffers if it got here.
        raise ValueError(f"could not read this as {label}: no geometry in it (not a valid "
                         f"{label} file, or an empty one){_hint(data, path, file_type, True)}")
    return scene


def _reason(exc: BaseException, label: str) -> str:
    """What went wrong, in words for the client: never the exception's type
    name, and parser internals replaced by what they mean for the file."""
    if isinstance(exc, ImportError) and exc.name == "charset_normalizer":
        # trimesh guesses the encoding of non-UTF-8 text with that optional module.
        return "it is not UTF-8 text"
    if isinstance(exc, json.JSONDecodeError):
        return f"its JSON is not valid at character {exc.pos + 1} (line {exc.lineno}, column {exc.colno})"
    if isinstance(exc, UnicodeDecodeError):
        return f"byte {exc.start} is not UTF-8 text"
    if isinstance(exc, (IndexError, KeyError)):
        # numpy's and dict's wording ("index 8 is out of bounds for axis 0")
        # speaks of trimesh's arrays, not of the file.
        return f"it refers to data that is not in the file (damaged, or not {_a(label)} file)"
    if isinstance(exc, (TypeError, AttributeError, NameError)):
        # trimesh met a structure it did not expect (a missing entry, a wrong type).
        return f"its content is not laid out as the {label} format says (damaged, or not {_a(label)} file)"
    if isinstance(exc, struct.error) or "buffer is smaller than requested" in str(exc):
        return f"it ends before the data it announces (truncated, or not {_a(label)} file)"
    message = " ".join(str(exc).split())
    if any(words in message for words in ("could not be read to its end", "could not convert string to",
                                          "invalid literal for")):
        return "it holds text where numbers should be"
    if any(words in message for words in ("cannot reshape array", "inhomogeneous shape", "values to unpack",
                                          "invalid shape in fixed-type tuple", "is not in list")):
        # numpy's and Python's words for rows or headers of the wrong length.
        return f"its rows or header do not hold the values the {label} format needs (damaged or truncated)"
    if not message:
        return f"the file is damaged or not {_a(label)} file"
    if len(message) > _MAX_REASON_CHARS:
        message = message[:_MAX_REASON_CHARS] + "..."
    return message


def _a(label: str) -> str:
    """``label`` with its indefinite article, as read aloud: "an OBJ", "a PLY"."""
    return f"an {label}" if label[:1] in "AEFHILMNORSX" else f"a {label}"


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


# ------------------------------------------------------------------- GLB
def _check_glb(data: bytes) -> dict:
    """The JSON of a GLB whose header and chunk lengths agree with its size.

    Raises
    ------
    ValueError
        "could not read this as GLB: byte 12: the JSON chunk says it holds
        812 bytes, but only 400 follow it (the file is truncated)", and the
        like for the header's total length, a cut chunk header, JSON that does
        not parse, and a BIN chunk shorter than the buffer the JSON declares.
    """
    size = len(data)

    def refuse(problem):
        return ValueError(f"could not read this as GLB: {problem}")

    if size < _GLB_HEADER_BYTES:
        raise refuse(f"the file has {size} bytes, fewer than the {_GLB_HEADER_BYTES}-byte GLB header")
    if data[:4] != b"glTF":
        raise refuse("it does not start with 'glTF' (bytes 0-3), so it is not a GLB file")
    (length,) = struct.unpack_from("<I", data, 8)
    if length != size:
        cause = "the file is truncated" if length > size else "bytes follow the end it declares"
        raise refuse(f"the header (byte 8) says the file has {length} bytes, but it has {size}: {cause}")
    offset, document, binary = _GLB_HEADER_BYTES, None, None
    while offset < size:
        if offset + _GLB_CHUNK_HEADER_BYTES > size:
            raise refuse(f"byte {offset}: the file ends inside a chunk header")
        chunk_length, chunk_type = struct.unpack_from("<II", data, offset)
        kind = {_GLB_JSON_CHUNK: "JSON", _GLB_BIN_CHUNK: "BIN"}.get(chunk_type, f"0x{chunk_type:08x}")
        start = offset + _GLB_CHUNK_HEADER_BYTES
        if start + chunk_length > size:
            raise refuse(f"byte {offset}: the {kind} chunk says it holds {chunk_length} bytes, but only "
                         f"{size - start} follow it (the file is truncated)")
        if document is None:
            if chunk_type != _GLB_JSON_CHUNK:
                raise refuse(f"byte {offset}: the first chunk is {kind}, not JSON")
            try:
                document = json.loads(data[start:start + chunk_length])
            except json.JSONDecodeError as exc:
                raise refuse(f"byte {start + exc.pos}: the JSON chunk is not valid JSON") from exc
            except UnicodeDecodeError as exc:
                raise refuse(f"byte {start + exc.start}: the JSON chunk is not UTF-8 text") from exc
        elif chunk_type == _GLB_BIN_CHUNK and binary is None:
            binary = chunk_length
        offset = start + chunk_length
    if document is None:
        raise refuse("it has no JSON chunk")
    buffers = document.get("buffers") if isinstance(document, dict) else None
    if isinstance(buffers, list) and buffers and isinstance(buffers[0], dict) and "uri" not in buffers[0]:
        declared = buffers[0].get("byteLength")
        if isinstance(declared, int) and declared > (binary or 0):
            raise refuse(f"the JSON says buffer 0 holds {declared} bytes, but the BIN chunk holds {binary or 0}")
    return document if isinstance(document, dict) else {}


# ------------------------------------------------------------------- PLY
class _PlyElement(NamedTuple):
    """One ``element`` of a PLY header.

    Attributes
    ----------
    name : str
    count : int
        Rows the header announces.
    properties : list of (str, str or (str, str))
        Name and numpy type code (``"f4"``) of each property; for a list,
        the codes of its count and of its items.
    """

    name: str
    count: int
    properties: list


class _PlyLayout(NamedTuple):
    """Where each element's rows lie in a PLY whose body holds all of them.

    Attributes
    ----------
    endian : str or None
        ``"<"`` or ``">"`` for a binary file, None for ascii.
    elements : list of _PlyElement
    starts : list of int
        Byte offset (binary) or token index (ascii) of each element's first row.
    tokens : list of bytes or None
        The body split at whitespace (ascii only).
    ragged : frozenset of str
        Elements of a binary file whose list lengths vary from row to row.
    """

    endian: str | None
    elements: list
    starts: list
    tokens: list | None
    ragged: frozenset


_PLY_PLURALS = {"vertex": "vertices", "face": "faces", "tristrips": "triangle strips", "edge": "edges"}


def _ply_header(data: bytes):
    """``(format, elements, body offset)`` of a PLY header, or None when the
    header is not one this reads (trimesh then says what it makes of it)."""
    end = data.find(b"end_header", 0, 1 << 20)
    if not data.startswith(b"ply") or end < 0:
        return None
    body = data.find(b"\n", end)
    if body < 0:
        return None
    try:
        lines = data[:end].decode("ascii").splitlines()
    except UnicodeDecodeError:
        return None
    file_format, elements = None, []
    for line in lines[1:]:
        words = line.split()
        if not words or words[0] in ("comment", "obj_info"):
            continue
        if words[0] == "format" and len(words) >= 2 and words[1] in _PLY_ENDIAN:
            file_format = words[1]
        elif words[0] == "element" and len(words) == 3 and words[2].isdigit():
            elements.append(_PlyElement(words[1], int(words[2]), []))
        elif words[0] == "property" and elements and len(words) == 3 and words[1] in _PLY_TYPES:
            elements[-1].properties.append((words[2], _PLY_TYPES[words[1]]))
        elif (words[0] == "property" and elements and len(words) == 5 and words[1] == "list"
              and words[2] in _PLY_TYPES and words[3] in _PLY_TYPES):
            elements[-1].properties.append((words[4], (_PLY_TYPES[words[2]], _PLY_TYPES[words[3]])))
        else:
            return None
    if file_format is None:
        return None
    return file_format, elements, body + 1


def _ply_layout(data: bytes) -> _PlyLayout | None:
    """Check that the body of a PLY holds every row its header announces.

    Returns
    -------
    _PlyLayout or None
        None when the header is not one this reads.

    Raises
    ------
    ValueError
        "could not read this as PLY: the header announces 1000 faces, but the
        file holds 512 (its data ends at byte 20480): it is truncated".
    """
    header = _ply_header(data)
    if header is None:
        return None
    file_format, elements, body = header
    endian = _PLY_ENDIAN[file_format]
    tokens = None if endian else data[body:].split()
    position, starts, ragged = (body if endian else 0), [], set()
    for element in elements:
        starts.append(position)
        if endian:
            found, position, uniform = _ply_binary_rows(data, position, element, endian)
            if not uniform:
                ragged.add(element.name)
        else:
            found, position = _ply_ascii_rows(tokens, position, element)
        if found < element.count:
            noun = _PLY_PLURALS.get(element.name, f"'{element.name}' rows")
            lines = data.count(b"\n") + (not data.endswith(b"\n"))
            where = f"its data ends at byte {len(data)}" if endian else f"its text ends at line {lines}"
            raise ValueError(f"could not read this as PLY: the header announces {element.count} {noun}, "
                             f"but the file holds {found} ({where}): it is truncated")
    return _PlyLayout(endian, elements, starts, tokens, frozenset(ragged))


def _ply_binary_rows(data: bytes, offset: int, element: _PlyElement, endian: str) -> tuple[int, int, bool]:
    """``(complete rows found, byte offset after them, whether all rows found
    have the same length)`` of one element, up to its count."""
    sizes = [np.dtype(kind).itemsize if isinstance(kind, str) else None for _, kind in element.properties]
    if None not in sizes:
        row = sum(sizes)
        found = element.count if row == 0 else min(element.count, (len(data) - offset) // row)
        return found, offset + found * row, True
    found, offset = _ply_uniform_rows(data, offset, element, endian)
    uniform = True
    while found < element.count:
        uniform = False
        position = offset
        for _, kind in element.properties:
            if isinstance(kind, str):
                position += np.dtype(kind).itemsize
                continue
            count_type, item_type = np.dtype(endian + kind[0]), np.dtype(kind[1])
            if position + count_type.itemsize > len(data):
                return found, offset, uniform
            count = int(np.frombuffer(data, count_type, 1, position)[0])
            if count < 0:
                raise ValueError(f"could not read this as PLY: byte {position}: a list of "
                                 f"{element.name!r} has a negative length {count}")
            position += count_type.itemsize + count * item_type.itemsize
        if position > len(data):
            return found, offset, uniform
        found, offset = found + 1, position
    return found, offset, uniform


def _ply_uniform_rows(data: bytes, offset: int, element: _PlyElement, endian: str) -> tuple[int, int]:
    """``(rows, byte offset after them)`` of the leading rows of an element
    with lists whose lists all have the first row's lengths (every face a
    triangle, say): checked at once with a strided view of the count bytes,
    so that only rows after a change of length are walked one by one."""
    position, layout = offset, []
    for _, kind in element.properties:
        if isinstance(kind, str):
            position += np.dtype(kind).itemsize
            continue
        count_type = np.dtype(endian + kind[0])
        if position + count_type.itemsize > len(data):
            return 0, offset
        count = int(np.frombuffer(data, count_type, 1, position)[0])
        if count < 0:
            # Walked row by row, which says where.
            return 0, offset
        layout.append((position - offset, count_type, count))
        position += count_type.itemsize + max(count, 0) * np.dtype(kind[1]).itemsize
    row = position - offset
    rows = min(element.count, (len(data) - offset) // row)
    same = np.ones(rows, dtype=bool)
    for at, count_type, count in layout:
        counts = np.ndarray((rows,), count_type, data, offset + at, (row,))
        same &= counts == count
    rows = rows if same.all() else int(np.argmin(same))
    return rows, offset + rows * row


def _ply_ascii_rows(tokens: list, start: int, element: _PlyElement) -> tuple[int, int]:
    """``(complete rows found, token index after them)`` of one element, up to its count."""
    if all(isinstance(kind, str) for _, kind in element.properties):
        width = len(element.properties)
        found = element.count if width == 0 else min(element.count, (len(tokens) - start) // width)
        return found, start + found * width
    found = 0
    while found < element.count:
        position = start
        for _, kind in element.properties:
            if isinstance(kind, str):
                position += 1
                continue
            if position >= len(tokens):
                return found, start
            try:
                count = int(tokens[position])
            except ValueError:
                raise ValueError(f"could not read this as PLY: row {found + 1} of {element.name!r}: "
                                 f"the list length {tokens[position].decode(errors='replace')!r} "
                                 "is not a whole number") from None
            if count < 0:
                raise ValueError(f"could not read this as PLY: row {found + 1} of {element.name!r} has a negative "
                                 f"list length {count}")
            position += 1 + count
        if position > len(tokens):
            return found, start
        found, start = found + 1, position
    return found, start


def _strips_to_triangles(strips) -> np.ndarray:
    """Triangles of PLY triangle strips.

    Parameters
    ----------
    strips : list of (n,) int arrays
        The rows of a ``tristrips`` element; ``-1`` separates strips within a row.

    Returns
    -------
    (F, 3) int64
        Triangle k of a strip s is (s[k], s[k+1], s[k+2]) for even k and
        (s[k+1], s[k], s[k+2]) for odd k, so all keep one winding.
        Triangles with a repeated vertex are dropped: strips repeat a vertex
        on purpose to turn or to join, and such a triangle has no area; it
        still counts for the alternation of the ones after it.
    """
    triangles = []
    for row in strips:
        row = np.asarray(row, dtype=np.int64)
        breaks = np.flatnonzero(row == -1)
        for strip in np.split(row, breaks):
            strip = strip[1:] if len(strip) and strip[0] == -1 else strip
            if len(strip) < 3:
                continue
            first, second, third = strip[:-2].copy(), strip[1:-1].copy(), strip[2:]
            odd = np.arange(len(first)) % 2 == 1
            first[odd], second[odd] = strip[1:-1][odd], strip[:-2][odd]
            triangles.append(np.column_stack([first, second, third]))
    if not triangles:
        return np.empty((0, 3), dtype=np.int64)
    triangles = np.concatenate(triangles)
    distinct = ((triangles[:, 0] != triangles[:, 1]) & (triangles[:, 1] != triangles[:, 2])
                & (triangles[:, 0] != triangles[:, 2]))
    return triangles[distinct]


def _ply_own_scene(data: bytes, layout: _PlyLayout, name: str):
    """A trimesh scene of one mesh from a PLY trimesh does not read: faces
    stored as triangle strips (trimesh reads the vertices as a point cloud,
    and no strips), or a binary face element whose polygons have different
    vertex counts (trimesh refuses it).

    Positions, ``nx ny nz`` normals and texture coordinates (``s t``, ``u v``,
    ``texture_u texture_v``) come from the vertex element, which must hold
    scalar properties only. Polygons become fans (k - 2 triangles of a
    k-gon, ``source_face`` their row); strips become triangles as
    :func:`_strips_to_triangles` says (``source_face`` the identity).
    ``name`` names the geometry, as trimesh would.
    """
    import trimesh

    names = [element.name for element in layout.elements]
    if "vertex" not in names:
        raise ValueError("could not read this as PLY: it has faces or triangle strips but no vertex element")
    vertex_element = layout.elements[names.index("vertex")]
    vertex_start = layout.starts[names.index("vertex")]
    if any(not isinstance(kind, str) for _, kind in vertex_element.properties):
        raise ValueError("could not read this as PLY: its vertices have list properties, which are not "
                         "read beside triangle strips or polygons of mixed sizes")
    columns = {name: index for index, (name, _) in enumerate(vertex_element.properties)}
    if not {"x", "y", "z"} <= set(columns):
        raise ValueError("could not read this as PLY: its vertices have no x, y and z")
    if layout.endian:
        row_type = np.dtype([(name, layout.endian + kind) for name, kind in vertex_element.properties])
        table = np.frombuffer(data, row_type, vertex_element.count, vertex_start)
        column = lambda name: table[name].astype(np.float64)  # noqa: E731
    else:
        width = len(vertex_element.properties)
        words = layout.tokens[vertex_start:vertex_start + width * vertex_element.count]
        try:
            values = np.array(words, dtype=np.float64).reshape(vertex_element.count, width)
        except ValueError:
            raise ValueError("could not read this as PLY: a vertex row holds something other than "
                             "numbers") from None
        column = lambda name: values[:, columns[name]]  # noqa: E731
    vertices = np.column_stack([column("x"), column("y"), column("z")])
    normals = (np.column_stack([column("nx"), column("ny"), column("nz")])
               if {"nx", "ny", "nz"} <= set(columns) else None)
    uv = next((np.column_stack([column(u), column(v)]) for u, v in _PLY_UV_NAMES
               if {u, v} <= set(columns)), None)

    if "face" in names:
        element = layout.elements[names.index("face")]
        polygons = _ply_list_rows(data, layout, element, layout.starts[names.index("face")])
        faces, source_face = _fans(polygons)
        what = "a face"
    else:
        element = layout.elements[names.index("tristrips")]
        strips = _ply_list_rows(data, layout, element, layout.starts[names.index("tristrips")])
        faces = _strips_to_triangles(strips)
        source_face = np.arange(len(faces), dtype=np.int64)
        what = "a triangle strip"
    if len(faces) and (faces.min() < 0 or faces.max() >= len(vertices)):
        bad = faces[(faces < 0) | (faces >= len(vertices))][0]
        rule = "; only -1 separates strips" if what == "a triangle strip" else ""
        raise ValueError(f"could not read this as PLY: {what} refers to vertex {bad}, but the file "
                         f"has {len(vertices)} vertices (0..{len(vertices) - 1}){rule}")
    visual = trimesh.visual.TextureVisuals(uv=uv) if uv is not None else None
    mesh = trimesh.Trimesh(vertices, faces, vertex_normals=normals, visual=visual, process=False)
    mesh.metadata["source_face"] = source_face
    scene = trimesh.Scene()
    scene.add_geometry(mesh, geom_name=name, node_name=name)
    return scene


def _fans(polygons: list) -> tuple[np.ndarray, np.ndarray]:
    """``(triangles (F, 3) int64, polygon of each (F,) int64)``: polygon
    (p0, ..., pk) as the fan (p0, p1, p2), (p0, p2, p3), ...; rows of fewer
    than 3 vertices give none."""
    sizes = np.array([len(polygon) for polygon in polygons], dtype=np.int64)
    if not len(sizes) or sizes.max() < 3:
        return np.empty((0, 3), dtype=np.int64), np.empty(0, dtype=np.int64)
    flat = np.concatenate(polygons).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    per_polygon = np.maximum(sizes - 2, 0)
    polygon = np.repeat(np.arange(len(sizes)), per_polygon)
    step = np.arange(len(polygon)) - np.repeat(np.cumsum(per_polygon) - per_polygon, per_polygon)
    first = starts[polygon]
    triangles = np.column_stack([flat[first], flat[first + step + 1], flat[first + step + 2]])
    return triangles, polygon


def _ply_list_rows(data: bytes, layout: _PlyLayout, element: _PlyElement, start: int) -> list:
    """The ``vertex_indices`` (or ``vertex_index``) list of each row of a
    ``face`` or ``tristrips`` element; other properties are skipped."""
    lists = [name for name, kind in element.properties if not isinstance(kind, str)]
    wanted = next((name for name in ("vertex_indices", "vertex_index") if name in lists), None)
    if wanted is None:
        raise ValueError(f"could not read this as PLY: its {element.name} element has no vertex_indices list")
    what = "a triangle strip" if element.name == "tristrips" else "a face"
    rows, position = [], start
    for _ in range(element.count):
        for name, kind in element.properties:
            if isinstance(kind, str):
                position += np.dtype(kind).itemsize if layout.endian else 1
            elif layout.endian:
                count_type = np.dtype(layout.endian + kind[0])
                item_type = np.dtype(layout.endian + kind[1])
                count = int(np.frombuffer(data, count_type, 1, position)[0])
                position += count_type.itemsize
                if name == wanted:
                    rows.append(np.frombuffer(data, item_type, count, position).astype(np.int64))
                position += count * item_type.itemsize
            else:
                count = int(layout.tokens[position])
                if name == wanted:
                    try:
                        rows.append(np.array(layout.tokens[position + 1:position + 1 + count], dtype=np.int64))
                    except ValueError:
                        raise ValueError(f"could not read this as PLY: {what} holds something other than "
                                         "whole numbers") from None
                position += 1 + count
    return rows


def _is_text(data: bytes) -> bool:
    try:
        data.decode("ascii")
    except UnicodeDecodeError:
        return False
    return True


def _describe(scene, file_type: str, obj_faces, obj_lines=None) -> SceneDescription:
    """Meshes and instances of a trimesh scene, and its line and point sets
    (``Path3D`` and ``PointCloud`` geometry; an OBJ's ``l`` lines, which
    trimesh reads as a point cloud of all the file's vertices, from
    ``obj_lines``)."""
    label = _label(file_type)
    graph = scene.graph
    # Instance node -> (world transform, names of its triangle geometries).
    placements: dict[str, tuple[np.ndarray, list[str]]] = {}
    set_index: dict[str, int] = {}
    sets: list[SetDescription] = []
    set_instances: list[InstanceDescription] = []
    if obj_lines is not None:
        sets.append(SetDescription("lines", "lines", *obj_lines))
        set_instances.append(InstanceDescription(0, np.eye(4), "lines"))
    for node in graph.nodes_geometry:
        transform, geometry_name = graph[node]
        geometry = scene.geometry.get(geometry_name)
        if geometry is not None and file_type != "obj" and not _has_triangles(geometry):
            found = _line_point_set(str(geometry_name), geometry, label)
            if found is not None:
                if geometry_name not in set_index:
                    set_index[geometry_name] = len(sets)
                    sets.append(found)
                transform = np.array(transform, dtype=np.float64)
                if transform.shape != (4, 4) or not np.isfinite(transform).all():
                    raise ValueError(f"this {label} file has a non-finite transform on node {node!r}")
                set_instances.append(InstanceDescription(set_index[geometry_name], transform, str(node)))
            continue
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

    if not placements and not set_instances:
        raise ValueError(f"this {label} file has no triangles: it holds "
                         f"{_holdings(scene.geometry.values())}")

    description = SceneDescription(file_type=file_type, sets=sets, set_instances=set_instances)
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


def _line_point_set(name: str, geometry, label: str) -> SetDescription | None:
    """A trimesh ``PointCloud`` as a point set, a ``Path3D`` as a line set
    (each entity's polyline as consecutive segments; a closed entity, a
    glTF LINE_LOOP, repeats its first point last), or None for anything else."""
    kind = type(geometry).__name__
    if kind not in ("PointCloud", "Path3D"):
        return None
    vertices = np.array(geometry.vertices, dtype=np.float64).reshape(-1, 3)
    if not np.isfinite(vertices).all():
        raise ValueError(f"this {label} file has non-finite coordinates in {name!r}")
    if kind == "PointCloud":
        return None if len(vertices) == 0 else SetDescription(name, "points", vertices, np.zeros((0, 2), np.int64))
    pairs = [np.stack([np.asarray(entity.points)[:-1], np.asarray(entity.points)[1:]], axis=1)
             for entity in geometry.entities if len(entity.points) >= 2]
    if not pairs:
        return None
    return SetDescription(name, "lines", vertices, np.concatenate(pairs).astype(np.int64))


def _obj_lines(text: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``(vertices, segments)`` of an OBJ's ``l`` lines (polylines: each pair
    of consecutive references a segment; ``v/vt`` references, negative ones
    counting back from the vertices defined so far), or None without any."""
    if not re.search(r"^l[ \t]", text, flags=re.MULTILINE):
        return None
    vertices, segments = [], []
    for line in text.split("\n"):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] == "v" and len(words) >= 4:
            vertices.append([float(w) for w in words[1:4]])
        elif words[0] == "l":
            refs = []
            for word in words[1:]:
                index = int(word.split("/")[0])
                index = index - 1 if index > 0 else len(vertices) + index
                if not 0 <= index < len(vertices):
                    raise ValueError(f"could not read this as OBJ: a line element refers to vertex {word}, but "
                                     f"{_count(len(vertices), 'vertex')} are defined before it")
                refs.append(index)
            segments.extend(zip(refs[:-1], refs[1:]))
    if not segments:
        return None
    return np.array(vertices, dtype=np.float64), np.array(segments, dtype=np.int64)


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
        outside = (part_faces < 0) | (part_faces >= count)
        if outside.any():
            # As the file numbers them: from 0 in the formats that reach here (OBJ is checked before).
            bad = int(part_faces[outside][0])
            raise ValueError(f"could not read this as {label}: a face of mesh {name!r} refers to vertex {bad}, "
                             f"but the mesh has {_count(count, 'vertex')} (0..{count - 1})")
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
    if len(parts) == 1 and "source_face" in parts[0].metadata:
        # Set by the PLY reader of this module, which knows each triangle's polygon.
        source_face = np.asarray(parts[0].metadata["source_face"], dtype=np.int64)
    if source_face is None:
        source_face = np.arange(len(faces), dtype=np.int64)
    alpha = mesh_alpha_of_parts(parts, [len(part.vertices) for part in parts], [len(part.faces) for part in parts])
    return MeshDescription(str(name), vertices, faces, normals, uvs, source_face, alpha)


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
    if noun == "vertex":
        return f"{n} vertices"
    return f"{n} {noun}es" if noun.endswith("sh") else f"{n} {noun}s"
