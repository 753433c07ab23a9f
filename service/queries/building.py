"""Turning request bodies and file descriptions into meshes and objects of a ``bvh.Scene``.

Adding to a live scene is split in two (see ``SceneStore.edit``): building
the meshes' BVHs, which queries need not wait for, and placing the objects,
which queries must see all at once.
"""

import numpy as np

import bvh
from bvh.io.load import SceneDescription, place_description

from ..api.schemas import MeshIn


def add_file_meshes(scene: bvh.Scene, description: SceneDescription) -> list[int]:
    """Build and add each mesh of a file, then each line and point set; returns their ids in
    file order, the meshes' then the sets'."""
    return [scene.add_mesh(mesh.vertices, mesh.faces, normals=mesh.normals, uvs=mesh.uvs, name=mesh.name,
                           source_face=mesh.source_face, alpha=mesh.alpha)
            for mesh in description.meshes] + [
        scene.add_lines(found.vertices, found.segments, name=found.name) if found.kind == "lines"
        else scene.add_points(found.vertices, name=found.name) for found in description.sets]


def place_file_instances(scene: bvh.Scene, description: SceneDescription, mesh_ids: list[int],
                         transform: np.ndarray | None = None) -> list[int]:
    """One object per node of the file, its transform premultiplied by ``transform``
    (``bvh.io.load.place_description``: the mesh instances in one vectorised edit)."""
    first_set = len(description.meshes)
    return place_description(scene, description, mesh_ids[:first_set], mesh_ids[first_set:], transform)


def add_inline_meshes(scene: bvh.Scene, meshes: list[MeshIn]) -> list[int]:
    """Build and add each inline mesh; returns their mesh ids."""
    ids = []
    for index, mesh in enumerate(meshes):
        try:
            ids.append(scene.add_mesh(np.asarray(mesh.vertices, np.float64), np.asarray(mesh.faces, np.int64),
                                      name=mesh.name))
        except ValueError as error:
            raise ValueError(f"meshes[{index}]: {error}") from error
    return ids


def place_inline_meshes(scene: bvh.Scene, meshes: list[MeshIn], mesh_ids: list[int]) -> list[int]:
    """One object per inline mesh, with its transform and name."""
    placed = []
    for index, (mesh, mesh_id) in enumerate(zip(meshes, mesh_ids)):
        try:
            placed.append(scene.add_instance(mesh_id, transform=matrix_or_none(mesh.transform), name=mesh.name))
        except ValueError as error:
            raise ValueError(f"meshes[{index}]: {error}") from error
    return placed


def matrix_or_none(rows) -> np.ndarray | None:
    return None if rows is None else np.asarray(rows, np.float64)
