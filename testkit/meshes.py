"""Meshes and rays for the tests: sample meshes, ../shared meshes, generators."""

from pathlib import Path

import numpy as np
import pytest
import trimesh

import sample_meshes

SHARED_MESHES = Path(__file__).resolve().parents[1].parent / "shared" / "meshes"

#: ../shared meshes that are closed (README of that folder).
SHARED_CLOSED = ("nefertiti", "cow", "fandisk", "rocker-arm", "homer", "spot")
SHARED_ALL = ("stanford-bunny", "nefertiti", "ogre", "teapot", "suzanne", "cow", "fandisk",
              "rocker-arm", "homer", "spot")


def load_mesh(path, merge: bool = False):
    """``(vertices (V, 3) float64, faces (F, 3) int64)`` of every triangle in a file.

    Reads through ``trimesh.load_scene`` without flattening the scene, which
    would copy texture materials (and need Pillow); ``merge`` welds duplicate
    vertices, as closed-mesh tests need for formats (STL) that store none.
    """
    scene = trimesh.load_scene(str(path), process=False)
    vertices, faces, base = [], [], 0
    for geometry in scene.geometry.values():
        vertices.append(np.asarray(geometry.vertices, np.float64))
        faces.append(np.asarray(geometry.faces, np.int64) + base)
        base += len(geometry.vertices)
    vertices, faces = np.concatenate(vertices), np.concatenate(faces)
    if merge:
        mesh = trimesh.Trimesh(vertices, faces, process=True)
        vertices, faces = np.asarray(mesh.vertices), np.asarray(mesh.faces)
    return vertices, faces


def sample_mesh(name: str, merge: bool = False):
    return load_mesh(sample_meshes.path(name), merge=merge)


def shared_mesh(name: str, merge: bool = False):
    """A mesh from ../shared/meshes; skips the test when that folder is absent."""
    path = SHARED_MESHES / f"{name}.obj"
    if not path.exists():
        pytest.skip(f"{path} is absent: the real meshes live in ../shared beside a CI checkout")
    return load_mesh(path, merge=merge)


def pick_rays(vertices, n, rng, axis_aligned_fraction=0.0):
    """Rays from a sphere around the mesh aimed at random points of its box.

    A fraction of them is made axis-aligned (direction along one axis, origin
    moved so the ray still crosses the box).
    """
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    centre, radius = (lo + hi) / 2, np.linalg.norm(hi - lo)
    on_sphere = rng.normal(size=(n, 3))
    on_sphere /= np.linalg.norm(on_sphere, axis=1, keepdims=True)
    origins = centre + radius * on_sphere
    targets = lo + rng.random((n, 3)) * (hi - lo)
    directions = targets - origins
    k = int(n * axis_aligned_fraction)
    if k:
        axis = rng.integers(0, 3, k)
        sign = rng.choice([-1.0, 1.0], k)
        directions[:k] = 0.0
        directions[np.arange(k), axis] = sign
        origins[:k] = targets[:k]
        origins[np.arange(k), axis] = centre[axis] - sign * radius
    return origins, directions


def grid_mesh(side: int = 40) -> dict:
    """A ``side`` × ``side`` vertex grid: a vertex update of it is a journal record of many pages."""
    u, v = np.meshgrid(np.arange(side, dtype=float), np.arange(side, dtype=float))
    vertices = np.stack([u.ravel(), v.ravel(), np.zeros(side * side)], axis=1) / side
    cells = np.arange(side * side).reshape(side, side)[:-1, :-1].ravel()
    faces = np.concatenate([np.stack([cells, cells + 1, cells + side], axis=1),
                            np.stack([cells + 1, cells + side + 1, cells + side], axis=1)])
    return {"vertices": vertices.tolist(), "faces": faces.tolist()}
