"""Small meshes this project makes itself, for tests, demos and benchmarks.

Regenerate them with ``python -m sample_meshes [directory]``; the files beside
this module are its output and are committed. Generation is deterministic:
running it again writes the same bytes.

- ``terrain.obj``: a heightfield (z up), for "drop to ground" picks;
- ``torus.ply``: a closed torus;
- ``gear.stl``: a closed gear-like prism with sharp teeth;
- ``capsule_quads.obj``: quads with texture coordinates;
- ``city_block.glb``: a glTF scene graph, z up, metres: a root node ``city``
  holding ``ground`` and two streets ``street0``/``street1`` of four blocks
  ``block0`` .. ``block7`` each; 46 buildings named ``block2/tower3``,
  ``block5/stepped0``, ``block0/house1``, instances of three shared meshes
  (``box_tower``, ``stepped_tower``, ``gabled_house``) under non-uniform
  scales. ``bvh.load`` makes it 47 objects over 4 meshes.
"""

from pathlib import Path

DIRECTORY = Path(__file__).resolve().parent

#: Closed (watertight, two-manifold) sample meshes: a ray from inside must hit.
CLOSED = ("torus.ply", "gear.stl")

#: Every single-mesh sample file, by name: one mesh, one object at identity.
FILES = ("terrain.obj", "torus.ply", "gear.stl", "capsule_quads.obj")

#: Sample scene graphs: many named objects, instanced meshes, node transforms.
SCENES = ("city_block.glb",)

#: Every sample file, meshes then scenes: what a demo server loads.
ALL = FILES + SCENES


def path(name: str) -> Path:
    """Absolute path of a sample mesh file."""
    return DIRECTORY / name
