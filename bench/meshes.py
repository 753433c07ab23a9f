"""Meshes for the benchmark: the shared real meshes and a generated big one."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

#: ``../shared/meshes`` seen from the project root.
SHARED_MESHES = os.path.normpath(os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "shared", "meshes"))

BIG_NAME = "displaced-icosphere"


@dataclass
class Mesh:
    name: str
    vertices: np.ndarray  # (V, 3) float64
    faces: np.ndarray  # (F, 3) int64

    @property
    def triangle_count(self) -> int:
        return len(self.faces)

    @property
    def bounds(self) -> np.ndarray:
        return np.array([self.vertices.min(axis=0), self.vertices.max(axis=0)])

    @property
    def triangles32(self) -> np.ndarray:
        """(F, 3, 3) float32 triangle soup, as Embree gets it."""
        return np.ascontiguousarray(self.vertices[self.faces], dtype=np.float32)


def _parse_obj(path: str) -> tuple[np.ndarray, np.ndarray]:
    """Minimal OBJ reader (``v`` and ``f`` lines, polygons fanned): the fallback
    when trimesh cannot load a file (e.g. textured OBJ without Pillow)."""
    verts, faces = [], []
    with open(path, "r", errors="replace") as fh:
        for line in fh:
            if line.startswith("v "):
                verts.append([float(x) for x in line.split()[1:4]])
            elif line.startswith("f "):
                idx = []
                for tok in line.split()[1:]:
                    i = int(tok.split("/")[0])
                    idx.append(i - 1 if i > 0 else len(verts) + i)
                for k in range(1, len(idx) - 1):
                    faces.append((idx[0], idx[k], idx[k + 1]))
    return np.asarray(verts, dtype=np.float64), np.asarray(faces, dtype=np.int64)


def load_mesh(path: str) -> Mesh:
    name = os.path.splitext(os.path.basename(path))[0]
    try:
        import trimesh

        tm = trimesh.load(path, force="mesh", process=False)
        vertices, faces = np.asarray(tm.vertices, dtype=np.float64), np.asarray(tm.faces, dtype=np.int64)
    except Exception:  # trimesh needs Pillow for textured OBJ files
        vertices, faces = _parse_obj(path)
    return Mesh(name, np.ascontiguousarray(vertices), np.ascontiguousarray(faces))


def shared_mesh_paths(folder: str = SHARED_MESHES) -> list[str]:
    if not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.lower().endswith(".obj"))


def displaced_icosphere(subdivisions: int = 8, seed: int = 12345) -> Mesh:
    """An icosphere (``20 * 4**subdivisions`` triangles: 1,310,720 at 8) with a
    deterministic low-frequency radial displacement, so it is not a sphere."""
    import trimesh

    sphere = trimesh.creation.icosphere(subdivisions=subdivisions)
    unit = np.asarray(sphere.vertices, dtype=np.float64)
    unit /= np.linalg.norm(unit, axis=1)[:, None]
    rng = np.random.default_rng(seed)
    radius = np.ones(len(unit))
    for _ in range(6):  # a few random plane waves of low frequency
        k = rng.normal(size=3)
        k *= rng.uniform(1.5, 5.0) / np.linalg.norm(k)
        radius += rng.uniform(0.03, 0.08) * np.sin(unit @ k + rng.uniform(0, 2 * np.pi))
    vertices = unit * radius[:, None] * np.array([1.0, 0.8, 0.6])  # and squashed
    n = len(sphere.faces)
    return Mesh(f"{BIG_NAME}-{n / 1e6:.1f}M", np.ascontiguousarray(vertices), np.asarray(sphere.faces, dtype=np.int64))
