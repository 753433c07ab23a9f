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


# ---------------------------------------------------------------- city block
#: Seed of the city's layout: the same seed, the same city, byte for byte.
CITY_SEED = 6


def _square(half: float, z: float) -> np.ndarray:
    """Corners of a square centred on the z axis, anticlockwise seen from above."""
    return np.array([[-half, -half, z], [half, -half, z], [half, half, z], [-half, half, z]])


def stepped_solid(tiers) -> trimesh.Trimesh:
    """A closed stack of square prisms, each narrower than the one below.

    ``tiers`` is ``[(half_width, top_z), ...]`` from the bottom (which stands
    on z = 0) up. The walls of each tier and the ring of each step share
    their corners, so the solid is closed and two-manifold, with no faces
    inside it; one tier is a plain box.
    """
    vertices, faces, bottom_z = [], [], 0.0
    for tier, (half, top_z) in enumerate(tiers):
        base = 8 * tier
        vertices += [_square(half, bottom_z), _square(half, top_z)]
        for k in range(4):                                     # walls, facing out
            k1 = (k + 1) % 4
            faces += [[base + k, base + k1, base + 4 + k1], [base + k, base + 4 + k1, base + 4 + k]]
        if tier > 0:                                           # step ring, facing +z
            below = base - 4                                  # top corners of the tier below
            for k in range(4):
                k1 = (k + 1) % 4
                faces += [[below + k, below + k1, base + k1], [below + k, base + k1, base + k]]
        bottom_z = top_z
    faces += [[0, 2, 1], [0, 3, 2]]                            # floor, facing -z
    top = 8 * (len(tiers) - 1) + 4
    faces += [[top, top + 1, top + 2], [top, top + 2, top + 3]]  # roof, facing +z
    return trimesh.Trimesh(np.vstack(vertices), np.array(faces), process=False)


def gabled_house(eaves: float = 0.6) -> trimesh.Trimesh:
    """A closed house: walls up to ``eaves``, a pitched roof with its ridge
    along x at z = 1, gable ends facing +-x; footprint [-0.5, 0.5]^2."""
    profile = np.array([[-0.5, 0.0], [0.5, 0.0], [0.5, eaves], [0.0, 1.0], [-0.5, eaves]])  # (y, z)
    n = len(profile)
    west = np.column_stack([np.full(n, -0.5), profile])
    east = np.column_stack([np.full(n, 0.5), profile])
    vertices = np.vstack([west, east])
    faces = []
    for k in range(n):                                         # floor, walls and roof planes
        k1 = (k + 1) % n
        faces += [[k, k1, n + k1], [k, n + k1, n + k]]
    for k in range(1, n - 1):                                  # gable ends, fans
        faces += [[0, k + 1, k], [n, n + k, n + k + 1]]
    return trimesh.Trimesh(vertices, np.array(faces), process=False)


def ground_grid(cells: int = 16) -> trimesh.Trimesh:
    """A flat grid over [-0.5, 0.5]^2 at z = 0, facing +z."""
    xs = np.linspace(-0.5, 0.5, cells + 1)
    x, y = np.meshgrid(xs, xs, indexing="xy")
    vertices = np.column_stack([x.ravel(), y.ravel(), np.zeros(x.size)])
    i, j = np.meshgrid(np.arange(cells), np.arange(cells), indexing="xy")
    a = (j * (cells + 1) + i).ravel()
    b, c, d = a + 1, a + cells + 1, a + cells + 2
    faces = np.concatenate([np.column_stack([a, b, d]), np.column_stack([a, d, c])])
    return trimesh.Trimesh(vertices, faces, process=False)


def _trs(x: float = 0.0, y: float = 0.0, z: float = 0.0, degrees: float = 0.0,
         scale=(1.0, 1.0, 1.0)) -> np.ndarray:
    """Translate @ rotate about z @ scale, as one 4x4 matrix."""
    matrix = trimesh.transformations.rotation_matrix(np.radians(degrees), [0.0, 0.0, 1.0])
    matrix[:3, :3] = matrix[:3, :3] * np.asarray(scale, dtype=np.float64)
    matrix[:3, 3] = [x, y, z]
    return matrix


#: Node name prefix of each building mesh: ``block2/tower3`` is a box tower.
BUILDING_KINDS = {"box_tower": "tower", "stepped_tower": "stepped", "gabled_house": "house"}


def city_block(seed: int = CITY_SEED) -> trimesh.Scene:
    """A small city as a scene graph, z up, metres.

    ``city`` (the root) holds ``ground`` (one grid scaled to cover the city)
    and two streets, ``street0`` and ``street1``, each a row of four blocks
    ``block0`` .. ``block7`` with their own placement (two blocks turned).
    A block holds buildings on a 3 x 3 grid of lots, named ``block2/tower3``,
    ``block5/stepped0``, ``block0/house1``: every building is an instance of
    one of three shared unit meshes (a box tower, a stepped tower, a gabled
    house), scaled non-uniformly, turned and moved by its node. Buildings
    never overlap, so a ray straight down onto a roof hits that building.
    """
    rng = np.random.default_rng(seed)
    meshes = {
        "box_tower": stepped_solid([(0.5, 1.0)]),
        "stepped_tower": stepped_solid([(0.5, 0.55), (0.36, 0.8), (0.2, 1.0)]),
        "gabled_house": gabled_house(),
        "ground": ground_grid(),
    }
    scene = trimesh.Scene()
    # trimesh writes the base frame as the glTF scene itself, not as a node:
    # "city" hangs below it so that the file has one named root node.
    scene.graph.update(frame_to="city", frame_from=scene.graph.base_frame, matrix=np.eye(4))
    block_pitch, lot = 62.0, 16.0          # blocks 48 m wide between 14 m streets
    scene.graph.update(frame_to="ground", frame_from="city", geometry="ground",
                       matrix=_trs(scale=(4 * block_pitch + 20.0, 2 * block_pitch + 20.0, 1.0)))
    scene.geometry["ground"] = meshes["ground"]
    block_turn = {3: 90.0, 6: 8.0}
    for street in range(2):
        street_name = f"street{street}"
        scene.graph.update(frame_to=street_name, frame_from="city",
                           matrix=_trs(y=(street - 0.5) * block_pitch))
        for column in range(4):
            block = 4 * street + column
            block_name = f"block{block}"
            scene.graph.update(frame_to=block_name, frame_from=street_name,
                               matrix=_trs(x=(column - 1.5) * block_pitch, degrees=block_turn.get(block, 0.0)))
            downtown = column in (1, 2)
            weights = [0.5, 0.4, 0.1] if downtown else [0.25, 0.0, 0.75]
            lots = np.sort(rng.choice(9, size=int(rng.integers(5, 8)), replace=False))
            counters = dict.fromkeys(BUILDING_KINDS, 0)
            for lot_index in lots.tolist():
                kind = list(BUILDING_KINDS)[int(rng.choice(3, p=weights))]
                if kind == "gabled_house":
                    # Turned freely, so kept within a lot whatever the angle.
                    width, depth = rng.uniform(7.0, 10.0), rng.uniform(6.0, 9.0)
                    height = rng.uniform(7.0, 10.0)
                    degrees = float(rng.choice([0.0, 90.0]) + rng.uniform(-20.0, 20.0))
                    reach = np.hypot(width, depth) / 2
                else:
                    width, depth = rng.uniform(8.0, 13.0), rng.uniform(8.0, 13.0)
                    height = rng.uniform(15.0, 45.0) if kind == "box_tower" else rng.uniform(35.0, 80.0)
                    degrees = float(rng.choice([0.0, 90.0]))
                    reach = max(width, depth) / 2
                slack = max(lot / 2 - 0.5 - reach, 0.0)
                x = (lot_index % 3 - 1) * lot + rng.uniform(-slack, slack)
                y = (lot_index // 3 - 1) * lot + rng.uniform(-slack, slack)
                name = f"{block_name}/{BUILDING_KINDS[kind]}{counters[kind]}"
                counters[kind] += 1
                scene.graph.update(frame_to=name, frame_from=block_name, geometry=kind,
                                   matrix=_trs(x, y, degrees=degrees, scale=(width, depth, height)))
                scene.geometry[kind] = meshes[kind]
    return scene


def city_block_glb(seed: int = CITY_SEED) -> bytes:
    """:func:`city_block` as GLB bytes."""
    return city_block(seed).export(file_type="glb")


def main(directory: Path = DIRECTORY) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    terrain().export(directory / "terrain.obj", include_normals=False, include_texture=False)
    torus().export(directory / "torus.ply")
    gear().export(directory / "gear.stl")
    (directory / "capsule_quads.obj").write_text(capsule_quads_obj())
    (directory / "city_block.glb").write_bytes(city_block_glb())
    for name in sorted(p.name for p in directory.iterdir() if p.suffix in {".obj", ".ply", ".stl", ".glb"}):
        print(f"{name}: {(directory / name).stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DIRECTORY)
