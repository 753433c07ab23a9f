"""Mesh files and glTF scene graphs, read through trimesh, as a :class:`bvh.Scene`.

>>> scene = bvh.load("model.glb")
>>> scene = bvh.load(uploaded_bytes, file_type="stl")

The work is split in two. :func:`read_scene_description` turns a file into
plain arrays (a :class:`SceneDescription`: meshes and the instances that place
them) and knows nothing of BVHs; :func:`load` feeds that description into a
new ``bvh.Scene``. Every failure to read a file is a ``ValueError`` whose
message names the file type that was tried.

This module holds the entry points and the dispatch by file type; the
formats' own checks and readers are :mod:`bvh.io.obj`, :mod:`bvh.io.ply`,
:mod:`bvh.io.gltf`, the walk of trimesh's scene :mod:`bvh.io.description`.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from typing import TYPE_CHECKING, NamedTuple

from .archives import ARCHIVES, ZIP_CONTAINERS, LimitExceeded, ReadLimits, check_zip, expand, is_compressed
from .description import (InstanceDescription, InstanceRows, MeshDescription, SceneDescription, SetDescription,
                          describe, merge_descriptions)
from .gltf import check_glb, gltf_document, read_exact_vertices, read_gltf_alpha
from .obj import obj_line_elements, prepare_obj
from .ply import ply_layout, ply_own_scene
from .reading import member_file_type, read_path, read_source, supported_file_types, trimesh_scene
from .wording import label_of, reason

if TYPE_CHECKING:
    from ..scene import Scene

__all__ = [
    "InstanceDescription",
    "InstanceRows",
    "LimitExceeded",
    "ReadLimits",
    "SetDescription",
    "MeshDescription",
    "SceneDescription",
    "load",
    "place_description",
    "read_scene_description",
    "supported_file_types",
]


def load(source, file_type: str | None = None, name: str | None = None, limits: ReadLimits | None = None) -> Scene:
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
    limits : ReadLimits, optional
        How far a compressed file may expand and how large a decoded texture
        may be (see :func:`read_scene_description`); default: no limit.

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
    description = read_scene_description(source, file_type, name, limits)
    # Here rather than at the top, so that this module and read_scene_description
    # stand on their own, without bvh.scene.
    from ..scene import Scene

    label = label_of(description.file_type)
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
    set_ids = []
    for line_set in description.sets:
        try:
            set_ids.append(scene.add_lines(line_set.vertices, line_set.segments, name=line_set.name)
                           if line_set.kind == "lines" else scene.add_points(line_set.vertices, name=line_set.name))
        except ValueError as exc:
            raise ValueError(f"{line_set.kind} {line_set.name!r} of this {label} file: {exc}") from exc
    place_description(scene, description, mesh_ids, set_ids)
    return scene


def place_description(scene: Scene, description: SceneDescription, mesh_ids: list[int], set_ids: list[int],
                      transform=None) -> list[int]:
    """Place the instances of a description whose meshes and sets were added to ``scene``
    as ``mesh_ids`` and ``set_ids``, each transform premultiplied by ``transform`` (4, 4);
    returns the new objects' ids, the meshes' instances' then the sets'.

    The mesh instances are placed in one vectorised edit (``Scene.add_instances``):
    a file of 300,000 nodes is no loop of 300,000 edits.

    Raises
    ------
    ValueError
        Naming the node: "node 'flat' of this GLB file: transform is not invertible ...".
    """
    from ..scene.checks import EntryError

    label = label_of(description.file_type)
    instances = InstanceRows.of(description.instances)
    placed: list[int] = []
    if len(instances):
        transforms = instances.transforms
        if transform is not None:
            transforms = np.asarray(transform, np.float64) @ transforms
        meshes = np.asarray(mesh_ids, np.int64)[instances.meshes]
        try:
            placed = scene.add_instances(meshes, transforms, [name or None for name in instances.names],
                                         instances.masks, instances.pickable).tolist()
        except EntryError as exc:
            raise ValueError(f"node {instances.names[exc.index]!r} of this {label} file: {exc.reason}") from exc
    for instance in description.set_instances:
        world = instance.transform if transform is None else np.asarray(transform, np.float64) @ instance.transform
        kind = description.sets[instance.mesh].kind
        try:
            placed.append(scene.add_instance(None, transform=world, name=instance.name or None,
                                             **{kind: set_ids[instance.mesh]}))
        except ValueError as exc:
            raise ValueError(f"node {instance.name!r} of this {label} file: {exc}") from exc
    return placed


def read_scene_description(source, file_type: str | None = None, name: str | None = None,
                           limits: ReadLimits | None = None) -> SceneDescription:
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
    limits : ReadLimits, optional
        Bounds on what reading may expand: the bytes a compressed file or an
        archive expands to (and their ratio to its size), the pixels of a
        texture that is decoded. Default: no limit.

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
        - non-finite vertex coordinates or transforms, face indices out of range;
        - an archive or compressed file that is damaged, holds no mesh file, or
          one of whose members cannot be read (the message names it).
    LimitExceeded
        (a ``ValueError``) A compressed file or archive that expands past
        ``limits`` (refused as soon as it does, before the rest is expanded),
        a texture whose header declares more pixels than ``limits`` (before
        it is decoded); the message names the member or image and the limit.

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
    - Compressed files and archives (:mod:`bvh.io.archives`): ``zip``, ``tar``,
      ``tar.gz``, ``tar.bz2``, ``tar.xz`` are expanded and every member whose
      suffix is a mesh type read is read as above (its meshes, instances and
      sets follow those of the members before it; other members, such as
      textures and ``.bin`` buffers, are there for a ``.gltf`` to refer to);
      ``obj.gz``, ``stl.bz2``, ``ply.xz``... are one compressed file of that
      type (a path ``model.obj.gz`` says so by its name). ``3mf`` and ``3dxml``
      are checked against ``limits`` before trimesh reads them.
    - Other formats: ``source_face`` is ``arange(F)``. For STL and glTF that is
      exact (they store triangles); for PLY and OFF files with quads or larger
      polygons, trimesh's triangulation does not say which polygon each
      triangle came from, so the map is the identity over triangles.
    - Normals are per-vertex normals stored in the file (OBJ ``vn``, PLY
      ``nx ny nz``, glTF ``NORMAL``), never computed; normals or uvs holding
      a non-finite value are dropped (None) rather than passed on.
    """
    limits = limits or ReadLimits()
    data, path, file_type, resolver = read_source(source, file_type)
    if is_compressed(file_type):
        return _read_compressed(data if data is not None else read_path(path), path, file_type, name, limits)
    return _described(_parse(data, path, file_type, resolver, limits), name)


def _described(parsed: "_Parsed", name: str | None) -> SceneDescription:
    """The description of a parsed source, its one unnamed mesh named ``name``."""
    try:
        description = describe(parsed.scene, parsed.file_type, parsed.obj_faces, parsed.obj_lines)
    except ValueError:
        raise
    except Exception as exc:
        # trimesh computes some attributes lazily, so it can still fail here.
        raise ValueError(f"could not read this as {label_of(parsed.file_type)}: "
                         f"{reason(exc, label_of(parsed.file_type))}") from exc
    document = parsed.document
    if name and parsed.file_type == "gltf" and document is None:
        document = gltf_document(parsed.data, parsed.path)
    if name and _single_unnamed(description, parsed.path, document):
        description.meshes[0] = description.meshes[0]._replace(name=name)
        description.instances[0] = description.instances[0]._replace(name=name)
    return description


def _read_compressed(data: bytes, path: Path | None, file_type: str, name: str | None,
                     limits: ReadLimits) -> SceneDescription:
    """The meshes of every mesh file of an archive, or of a compressed file, expanded within ``limits``."""
    import trimesh

    label = label_of(file_type)
    if not data:
        raise ValueError(f"could not read this as {label}: the file is empty")
    inner_name = None
    if file_type not in ARCHIVES:
        inner, _, compression = file_type.rpartition(".")
        if not inner:
            raise ValueError(f"could not read this as {label}: say which type of file it compresses, as "
                             f"file_type='obj.{compression}' (or a file name ending in .obj.{compression})")
        if path is not None:
            inner_name = path.name[:-len(compression) - 1]
    members = expand(data, file_type, label, limits, inner_name)
    readable = [(member, member_file_type(member)) for member in members]
    readable = [(member, kind) for member, kind in readable if kind is not None]
    if not readable:
        names = ", ".join(repr(member) for member in list(members)[:5]) or "nothing"
        raise ValueError(f"could not read this as {label}: it holds no mesh file (it holds {names}"
                         f"{', ...' if len(members) > 5 else ''})")
    descriptions = []
    for member, kind in readable:
        folder = member.rpartition("/")[0]
        # A .gltf finds its buffers and images beside it in the archive.
        resolver = trimesh.resolvers.ZipResolver(members, namespace=folder or None)
        try:
            parsed = _parse(members[member], None, kind, resolver, limits)
            descriptions.append(_described(parsed, name if len(readable) == 1 else None))
        except LimitExceeded:
            raise
        except ValueError as exc:
            raise ValueError(f"member {member!r} of this {label} file: {exc}") from exc
    return merge_descriptions(descriptions, file_type)


class _Parsed(NamedTuple):
    """A source read by trimesh (``scene``), with what the checks made
    before trimesh parsed it learnt: a glTF's JSON, an OBJ's face lines and
    line elements."""

    scene: object
    file_type: str
    data: bytes | None
    path: Path | None
    document: dict | None
    obj_faces: object
    obj_lines: tuple | None


def _parse(data: bytes | None, path: Path | None, file_type: str, resolver, limits: ReadLimits) -> _Parsed:
    """A source (:func:`read_source`) read as its file type says (see :func:`read_scene_description`)."""
    obj_faces, scene, document = None, None, None
    # These are checked before trimesh parses them; a path is still handed to
    # trimesh as a path (but for an OBJ), which names the geometry after the file.
    raw = data if data is not None or file_type not in ("obj", "glb", "ply", *ZIP_CONTAINERS) else read_path(path)
    obj_lines = None
    if file_type == "obj" and raw:
        data, obj_faces = prepare_obj(raw)
        obj_lines = obj_line_elements(data.decode("utf-8"))
    elif file_type == "glb" and raw:
        document = check_glb(raw)
    elif file_type == "gltf" and data:
        document = gltf_document(data, None)
    elif file_type == "ply" and raw:
        layout = ply_layout(raw)
        names = [] if layout is None else [element.name for element in layout.elements]
        # trimesh reads neither strips nor binary faces of different vertex counts.
        if ("tristrips" in names and "face" not in names) or (layout is not None and "face" in layout.ragged):
            scene = ply_own_scene(raw, layout, path.name if path is not None else "geometry_0")
    elif file_type in ZIP_CONTAINERS and raw:
        check_zip(raw, label_of(file_type), limits)
    if scene is None:
        scene = trimesh_scene(data, path, file_type, resolver)
    if file_type in ("glb", "gltf"):
        read_gltf_alpha(scene, file_type, raw, data, path, document, resolver, limits.texture_pixels)
        read_exact_vertices(scene, file_type, raw, data, path, document, resolver)
    return _Parsed(scene, file_type, data, path, document, obj_faces, obj_lines)


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
