"""A file's content as plain arrays (:class:`SceneDescription`: meshes, line
and point sets, and the instances that place them), and the walk of
trimesh's scene graph that makes it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .glb_writer import EXTRAS_KEY
from .gltf_materials import mesh_alpha_of_parts
from .obj import obj_source_face
from .wording import label_of, quantity


#: Every bit of an object's mask (``bvh.scene.checks.ALL_BITS``; this module stands without ``bvh.scene``).
ALL_BITS = 0xFFFFFFFF


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
        The scene-graph node's name (or the name its ``extras.bvh_pick`` gives).
    mask : int or None
        From the node's ``extras.bvh_pick`` (:mod:`bvh.io.glb_writer`); None: every bit.
    pickable : bool or None
        From the node's ``extras.bvh_pick``; None: pickable.
    """

    mesh: int
    transform: np.ndarray
    name: str
    mask: int | None = None
    pickable: bool | None = None


class InstanceRows(Sequence):
    """Many instances as three columns rather than one :class:`InstanceDescription`
    each (a file of 300,000 nodes is then three objects, not 300,000 tuples for
    the garbage collector to walk); a sequence of :class:`InstanceDescription`
    made on demand, and what :func:`bvh.io.load.place_description` places at once.

    Attributes
    ----------
    meshes : (N,) int64
    transforms : (N, 4, 4) float64
    names : list of N str
    masks : (N,) int64
        Every bit (0xFFFFFFFF) where the file says nothing.
    pickable : (N,) bool
    """

    def __init__(self, meshes: np.ndarray, transforms: np.ndarray, names: list[str],
                 masks: np.ndarray | None = None, pickable: np.ndarray | None = None):
        self.meshes = meshes
        self.transforms = transforms
        self.names = names
        self.masks = np.full(len(names), ALL_BITS, np.int64) if masks is None else masks
        self.pickable = np.ones(len(names), bool) if pickable is None else pickable

    @classmethod
    def of(cls, instances) -> "InstanceRows":
        """The columns of a sequence of :class:`InstanceDescription`."""
        if isinstance(instances, InstanceRows):
            return instances
        transforms = np.stack([instance.transform for instance in instances]) if instances else np.zeros((0, 4, 4))
        return cls(np.array([instance.mesh for instance in instances], np.int64), transforms,
                   [instance.name for instance in instances],
                   np.array([ALL_BITS if instance.mask is None else instance.mask for instance in instances], np.int64),
                   np.array([instance.pickable is not False for instance in instances], bool))

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return InstanceDescription(int(self.meshes[index]), self.transforms[index], self.names[index],
                                   int(self.masks[index]), bool(self.pickable[index]))


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


@dataclass
class SceneDescription:
    """The triangles of a file as meshes and instances, before any BVH is built.

    Attributes
    ----------
    file_type : str
        The trimesh file type the source was read as, e.g. ``"glb"``.
    meshes : list of MeshDescription
        Each distinct mesh once, however many nodes use it.
    instances : list of InstanceDescription, or InstanceRows
        One per scene-graph node that carries triangles, in trimesh's node order.
    """

    file_type: str
    meshes: list[MeshDescription] = field(default_factory=list)
    instances: list[InstanceDescription] = field(default_factory=list)
    #: Line and point sets, and their placements (``mesh`` indexes ``sets``).
    sets: list[SetDescription] = field(default_factory=list)
    set_instances: list[InstanceDescription] = field(default_factory=list)


def describe(scene, file_type: str, obj_faces, obj_lines=None) -> SceneDescription:
    """Meshes and instances of a trimesh scene, and its line and point sets
    (``Path3D`` and ``PointCloud`` geometry; an OBJ's ``l`` lines, which
    trimesh reads as a point cloud of all the file's vertices, from
    ``obj_lines``)."""
    label = label_of(file_type)
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
    exported_ids = []
    for node, (transform, geometry_names) in placements.items():
        key = tuple(geometry_names)
        if key not in mesh_index:
            mesh_index[key] = len(description.meshes)
            parts = [scene.geometry[name] for name in geometry_names]
            description.meshes.append(_mesh(geometry_names[0], parts, label, obj_faces))
        transform = np.array(transform, dtype=np.float64)
        if transform.shape != (4, 4) or not np.isfinite(transform).all():
            raise ValueError(f"this {label} file has a non-finite transform on node {node!r}")
        instance = InstanceDescription(mesh_index[key], transform, str(node))
        extras = _node_extras(graph, node, label) if file_type in ("glb", "gltf") else None
        if extras is not None:
            exported_ids.append(extras.pop("id", None))
            instance = instance._replace(**extras)
        description.instances.append(instance)
    if exported_ids and len(exported_ids) == len(description.instances) and None not in exported_ids:
        # A file we exported: its objects in their ids' order (trimesh walks the nodes backwards),
        # so that a scene whose ids run from 0 gets the same ids back.
        # Its meshes in the order those objects first place them, as the file has them.
        order = sorted(range(len(exported_ids)), key=exported_ids.__getitem__)
        instances = [description.instances[index] for index in order]
        first_use = list(dict.fromkeys(instance.mesh for instance in instances))
        renumbered = {old: new for new, old in enumerate(first_use)}
        description.meshes = [description.meshes[old] for old in first_use]
        description.instances = [instance._replace(mesh=renumbered[instance.mesh]) for instance in instances]
    return description


def _node_extras(graph, node, label: str) -> dict | None:
    """What a node's ``extras.bvh_pick`` (:mod:`bvh.io.glb_writer`) says of its object: ``name``,
    ``mask``, ``pickable`` and ``id`` where given; None for a node without them.

    Raises
    ------
    ValueError
        For a value of the wrong type: "node 'a' of this GLB file: extras.bvh_pick.mask must be ...".
    """
    parent = graph.transforms.parents.get(node)
    metadata = graph.transforms.edge_data.get((parent, node), {}).get("metadata")
    given = metadata.get(EXTRAS_KEY) if isinstance(metadata, dict) else None
    if not isinstance(given, dict):
        return None
    found = {}

    def refuse(key, what):
        return ValueError(f"node {node!r} of this {label} file: extras.{EXTRAS_KEY}.{key} must be {what}, "
                          f"got {given[key]!r}")

    if "name" in given:
        if given["name"] is not None and not isinstance(given["name"], str):
            raise refuse("name", "a string or null")
        found["name"] = given["name"] or ""
    if "mask" in given:
        mask = given["mask"]
        if isinstance(mask, bool) or not isinstance(mask, int) or not 0 <= mask <= ALL_BITS:
            raise refuse("mask", "an integer in [0, 0xFFFFFFFF]")
        found["mask"] = mask
    if "pickable" in given:
        if not isinstance(given["pickable"], bool):
            raise refuse("pickable", "true or false")
        found["pickable"] = given["pickable"]
    identifier = given.get("id")
    if isinstance(identifier, int) and not isinstance(identifier, bool):
        found["id"] = identifier
    return found


def merge_descriptions(descriptions: list[SceneDescription], file_type: str) -> SceneDescription:
    """The meshes, sets and instances of several descriptions (an archive's
    members) as one, in order, read as ``file_type``."""
    merged = SceneDescription(file_type=file_type)
    for description in descriptions:
        meshes, sets = len(merged.meshes), len(merged.sets)
        merged.meshes.extend(description.meshes)
        merged.sets.extend(description.sets)
        merged.instances.extend(instance._replace(mesh=instance.mesh + meshes) for instance in description.instances)
        merged.set_instances.extend(instance._replace(mesh=instance.mesh + sets)
                                    for instance in description.set_instances)
    return merged


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
                             f"but the mesh has {quantity(count, 'vertex')} (0..{count - 1})")
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
        source_face = obj_source_face(obj_faces, faces)
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
        parts.append(f"{quantity(clouds, 'point cloud')} with {quantity(points, 'point')}")
    if paths:
        parts.append(quantity(paths, "path") + " (lines or curves)")
    if empty:
        parts.append(quantity(empty, "mesh") + " without faces")
    parts.extend(quantity(n, kind) for kind, n in other.items())
    return ", ".join(parts) if parts else "nothing"
