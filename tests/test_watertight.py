"""No ray slips through a closed mesh at a shared vertex or edge.

A ray aimed exactly at a point of the surface must meet the surface at that
point or before it, whatever triangle it is attributed to. The targets are
the vertices and edge midpoints of the mesh exactly as the BVH stores it
(centred float32 vertices, converted back exactly in float64); the origins
are just inside, a thousandth of the mesh size along the inward normal.
"""

import numpy as np
import pytest

import bvh
from testkit.meshes import SHARED_CLOSED, sample_mesh, shared_mesh

#: At most this many vertex and edge targets per mesh.
MAX_TARGETS = 20_000


def stored_vertices(mesh: bvh.MeshBVH, vertices: np.ndarray) -> np.ndarray:
    """The vertices as the BVH holds them, in world coordinates."""
    return (vertices - mesh.offset).astype(np.float32).astype(np.float64) + mesh.offset


def vertex_normals(vertices, faces):
    face_normals = np.cross(vertices[faces[:, 1]] - vertices[faces[:, 0]], vertices[faces[:, 2]] - vertices[faces[:, 0]])
    normals = np.zeros_like(vertices)
    for k in range(3):
        np.add.at(normals, faces[:, k], face_normals)
    return normals / np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-300)


def targets_and_origins(mesh, vertices, faces, rng):
    exact = stored_vertices(mesh, vertices)
    normals = vertex_normals(exact, faces)
    edges = np.unique(np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1), axis=0)
    vertex_ids = np.unique(faces)
    if len(vertex_ids) > MAX_TARGETS:
        vertex_ids = rng.choice(vertex_ids, MAX_TARGETS, replace=False)
    if len(edges) > MAX_TARGETS:
        edges = edges[rng.choice(len(edges), MAX_TARGETS, replace=False)]
    targets = np.concatenate([exact[vertex_ids], (exact[edges[:, 0]] + exact[edges[:, 1]]) / 2])
    inward = -np.concatenate([normals[vertex_ids], normals[edges[:, 0]] + normals[edges[:, 1]]])
    inward /= np.maximum(np.linalg.norm(inward, axis=1, keepdims=True), 1e-300)
    size = np.linalg.norm(exact.max(axis=0) - exact.min(axis=0))
    origins = targets + 1e-3 * size * inward
    return origins, targets - origins


def leaks(vertices, faces, seed=0):
    """Rays that miss, or hit beyond their target (t = 1 at the target) by
    more than the float64 ray itself can resolve: far from the origin, the
    rounding of ``target - origin`` moves the ray off the target by a few
    ulps of the coordinates."""
    mesh = bvh.build(vertices, faces)
    origins, directions = targets_and_origins(mesh, vertices, faces, np.random.default_rng(seed))
    hits = mesh.intersect(origins, directions)
    assert not np.isnan(hits.t).any()
    resolution = 4 * np.finfo(np.float64).eps * np.abs(origins).max(axis=1) / np.linalg.norm(directions, axis=1)
    bad = ~(hits.t <= 1.0 + 1e-9 + resolution)
    return int(bad.sum()), len(origins)


@pytest.mark.parametrize("name", ["torus.ply", "gear.stl"])
def test_sample_closed_meshes_do_not_leak(name):
    vertices, faces = sample_mesh(name, merge=True)
    count, total = leaks(vertices, faces)
    assert count == 0, f"{count} of {total} rays leaked"


@pytest.mark.parametrize("scale, shift", [(1e-4, 0.0), (1e4, 0.0), (1.0, 1e6), (1e-4, -1e6)])
def test_scaled_and_far_closed_meshes_do_not_leak(scale, shift):
    vertices, faces = sample_mesh("torus.ply", merge=True)
    count, total = leaks(vertices * scale + shift, faces)
    assert count == 0, f"{count} of {total} rays leaked"


@pytest.mark.parametrize("name", SHARED_CLOSED)
def test_shared_closed_meshes_do_not_leak(name):
    vertices, faces = shared_mesh(name, merge=True)
    count, total = leaks(vertices, faces)
    assert count == 0, f"{count} of {total} rays leaked"
