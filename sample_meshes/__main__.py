"""Write the sample meshes: ``python -m sample_meshes [directory]``."""

import sys
from pathlib import Path

import numpy as np
import trimesh

from . import DIRECTORY


def terrain(size: int = 64, extent: float = 100.0) -> trimesh.Trimesh:
    """A heightfield over a ``size`` x ``size`` grid: rolling hills and a ridge,
    for "drop to ground" picks straight down."""
    xs = np.linspace(-extent / 2, extent / 2, size)
    x, y = np.meshgrid(xs, xs, indexing="xy")
    z = 4.0 * np.sin(x / 9.0) * np.cos(y / 13.0) + 6.0 * np.exp(-((x - 10.0) ** 2) / 200.0)
    vertices = np.column_stack([x.ravel(), y.ravel(), z.ravel()])
    i, j = np.meshgrid(np.arange(size - 1), np.arange(size - 1), indexing="xy")
    a = (j * size + i).ravel()
    b, c, d = a + 1, a + size, a + size + 1
    faces = np.concatenate([np.column_stack([a, b, d]), np.column_stack([a, d, c])])
    return trimesh.Trimesh(vertices, faces, process=False)


def torus() -> trimesh.Trimesh:
    """A closed torus, outward normals."""
    return trimesh.creation.torus(major_radius=1.0, minor_radius=0.35, major_sections=48, minor_sections=24)


def gear(teeth: int = 14, inner: float = 0.8, outer: float = 1.0, thickness: float = 0.25) -> trimesh.Trimesh:
    """A closed gear-like prism: a star-shaped outline with sharp teeth,
    capped top and bottom by fans around the centre, sides as quads."""
    angles = np.linspace(0.0, 2.0 * np.pi, 4 * teeth, endpoint=False)
    radius = np.tile([inner, outer, outer, inner], teeth)
    ring = np.column_stack([radius * np.cos(angles), radius * np.sin(angles)])
    n = len(ring)
    bottom = np.column_stack([ring, np.zeros(n)])
    top = np.column_stack([ring, np.full(n, thickness)])
    vertices = np.vstack([bottom, top, [[0.0, 0.0, 0.0], [0.0, 0.0, thickness]]])
    cb, ct = 2 * n, 2 * n + 1
    k = np.arange(n)
    k1 = (k + 1) % n
    faces = np.concatenate([
        np.column_stack([np.full(n, cb), k1, k]),              # bottom, facing -z
        np.column_stack([np.full(n, ct), n + k, n + k1]),      # top, facing +z
        np.column_stack([k, k1, n + k1]),                      # sides, facing out
        np.column_stack([k, n + k1, n + k]),
    ])
    return trimesh.Trimesh(vertices, faces, process=False)


def capsule_quads_obj(rings: int = 12, segments: int = 24) -> str:
    """A UV sphere stretched into a capsule, written as OBJ quads with texture
    coordinates (and triangles at the poles), as a modelling tool would."""
    lines = ["# capsule of quads with texture coordinates, made by python -m sample_meshes"]
    for r in range(rings + 1):
        phi = np.pi * r / rings
        for s in range(segments + 1):
            theta = 2.0 * np.pi * s / segments
            x, y, z = np.sin(phi) * np.cos(theta), np.sin(phi) * np.sin(theta), np.cos(phi)
            z = z + (0.5 if z > 0 else -0.5)
            lines.append(f"v {x:.6f} {y:.6f} {z:.6f}")
            lines.append(f"vt {s / segments:.6f} {1.0 - r / rings:.6f}")
    for r in range(rings):
        for s in range(segments):
            a = r * (segments + 1) + s + 1
            b, c, d = a + 1, a + segments + 2, a + segments + 1
            if r == 0:
                lines.append(f"f {a}/{a} {d}/{d} {c}/{c}")
            elif r == rings - 1:
                lines.append(f"f {a}/{a} {c}/{c} {b}/{b}")
            else:
                lines.append(f"f {a}/{a} {d}/{d} {c}/{c} {b}/{b}")
    return "\n".join(lines) + "\n"


def main(directory: Path = DIRECTORY) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    terrain().export(directory / "terrain.obj", include_normals=False, include_texture=False)
    torus().export(directory / "torus.ply")
    gear().export(directory / "gear.stl")
    (directory / "capsule_quads.obj").write_text(capsule_quads_obj())
    for name in sorted(p.name for p in directory.iterdir() if p.suffix in {".obj", ".ply", ".stl"}):
        print(f"{name}: {(directory / name).stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DIRECTORY)
