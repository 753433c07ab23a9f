"""Small meshes this project makes itself, for tests, demos and benchmarks.

Regenerate them with ``python -m sample_meshes``; the files beside this module
are its output and are committed.
"""

from pathlib import Path

DIRECTORY = Path(__file__).resolve().parent

#: Closed (watertight, two-manifold) sample meshes: a ray from inside must hit.
CLOSED = ("torus.ply", "gear.stl")

#: Every sample mesh file, by name.
FILES = ("terrain.obj", "torus.ply", "gear.stl", "capsule_quads.obj")


def path(name: str) -> Path:
    """Absolute path of a sample mesh file."""
    return DIRECTORY / name
