"""The sample meshes: reproducible from their generator, small, and the city
block a real scene graph of named, instanced buildings."""

import fnmatch
import json
import re
import struct
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
import trimesh

import bvh
import sample_meshes
from sample_meshes.__main__ import BUILDING_KINDS, city_block_glb, gabled_house, stepped_solid

ROOT = Path(__file__).resolve().parents[1]
CITY = sample_meshes.path("city_block.glb")
BUILDING = re.compile(r"^block[0-7]/(tower|stepped|house)\d+$")


@pytest.fixture(scope="module")
def city():
    return bvh.load(CITY)


def glb_json(data: bytes) -> dict:
    """The JSON chunk of a GLB file."""
    magic, version, length = struct.unpack("<4sII", data[:12])
    assert magic == b"glTF" and version == 2 and length == len(data)
    chunk_length, chunk_type = struct.unpack("<I4s", data[12:20])
    assert chunk_type == b"JSON"
    return json.loads(data[20:20 + chunk_length])


def test_generator_reproduces_the_committed_files(tmp_path):
    done = subprocess.run([sys.executable, "-m", "sample_meshes", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(sample_meshes.ALL)
    for name in sample_meshes.ALL:
        assert (tmp_path / name).read_bytes() == sample_meshes.path(name).read_bytes(), \
            f"{name} differs from what python -m sample_meshes writes: regenerate and commit it"
        assert name in done.stdout


def test_city_export_is_deterministic_in_process():
    assert city_block_glb() == city_block_glb() == CITY.read_bytes()


def test_sample_files_are_registered_and_small():
    assert set(sample_meshes.ALL) == set(sample_meshes.FILES) | set(sample_meshes.SCENES)
    on_disk = {p.name for p in sample_meshes.DIRECTORY.iterdir()
               if p.suffix in {".obj", ".ply", ".stl", ".glb", ".gltf", ".off"}}
    assert on_disk == set(sample_meshes.ALL)
    assert set(sample_meshes.CLOSED) <= set(sample_meshes.FILES)
    total = sum(sample_meshes.path(name).stat().st_size for name in sample_meshes.ALL)
    assert total <= 5 * 1024 * 1024, f"sample meshes take {total} bytes, more than 5 MB"


def test_package_data_ships_every_sample_file():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["sample_meshes"]
    for name in sample_meshes.ALL:
        assert any(fnmatch.fnmatch(name, pattern) for pattern in patterns), (name, patterns)


def test_building_meshes_are_closed_solids_in_a_unit_frame():
    for mesh in (stepped_solid([(0.5, 1.0)]), stepped_solid([(0.5, 0.55), (0.36, 0.8), (0.2, 1.0)]),
                 gabled_house()):
        assert mesh.is_watertight and mesh.is_winding_consistent and mesh.volume > 0
        np.testing.assert_allclose(mesh.bounds, [[-0.5, -0.5, 0.0], [0.5, 0.5, 1.0]])
    assert stepped_solid([(0.5, 1.0)]).volume == pytest.approx(1.0)


def test_city_file_is_a_node_hierarchy_over_shared_meshes():
    document = glb_json(CITY.read_bytes())
    nodes = document["nodes"]
    (scene,) = document["scenes"]
    (root,) = scene["nodes"]
    assert nodes[root]["name"] == "city"
    children = {nodes[i]["name"]: nodes[i] for i in nodes[root]["children"]}
    assert set(children) == {"ground", "street0", "street1"}
    blocks = [nodes[i] for street in ("street0", "street1") for i in children[street]["children"]]
    assert sorted(block["name"] for block in blocks) == [f"block{k}" for k in range(8)]
    buildings = [nodes[i] for block in blocks for i in block["children"]]
    assert all(BUILDING.match(b["name"]) and "mesh" in b for b in buildings)
    assert all(b["name"].startswith(block["name"] + "/") for block in blocks
               for b in (nodes[i] for i in block["children"]))
    assert sorted(m["name"] for m in document["meshes"]) == sorted(list(BUILDING_KINDS) + ["ground"])
    uses = np.bincount([b["mesh"] for b in buildings], minlength=len(document["meshes"]))
    assert (np.sort(uses)[-3:] >= 3).all(), "each building mesh is shared by several buildings"


def test_city_loads_as_dozens_of_named_instances(city):
    objects = city.objects
    names = [o.name for o in objects]
    assert len(objects) >= 36 and len(set(names)) == len(names)
    buildings = [o for o in objects if o.name != "ground"]
    assert sorted(set(names) - {o.name for o in buildings}) == ["ground"]
    assert all(BUILDING.match(o.name) for o in buildings)
    meshes = {m.id: m.name for m in city.meshes}
    assert len(meshes) == 4 < len(objects)
    kinds = {prefix: kind for kind, prefix in BUILDING_KINDS.items()}
    for o in buildings:
        assert meshes[o.mesh] == kinds[o.name.split("/")[1].rstrip("0123456789")], o.name
    # Non-uniform scales, and turned blocks composed through the hierarchy.
    scales = np.array([np.linalg.norm(o.transform[:3, :3], axis=0) for o in buildings])
    spread = np.ptp(scales, axis=1)
    assert (spread > 0.1).all() and (spread > 5.0).sum() >= len(buildings) // 2
    angles = {round(float(np.degrees(np.arctan2(o.transform[1, 0], o.transform[0, 0]))) % 90)
              for o in buildings}
    assert len(angles) > 3
    lo, hi = city.bounds
    assert lo[2] == pytest.approx(0.0, abs=1e-6) and 40.0 < hi[2] < 100.0


def test_a_ray_down_onto_each_roof_hits_that_building(city):
    buildings = [o for o in city.objects if o.name != "ground"]
    # Each unit mesh is centred on its local z axis and has its highest point there.
    tops = np.array([(o.transform @ [0.0, 0.0, 1.0, 1.0])[:3] for o in buildings])
    origins = tops + [0.0, 0.0, 200.0]
    hits = city.intersect(origins, np.tile([0.0, 0.0, -1.0], (len(buildings), 1)))
    names = {o.id: o.name for o in city.objects}
    assert [names.get(int(i)) for i in hits.object] == [o.name for o in buildings]
    np.testing.assert_allclose(hits.t, 200.0, atol=1e-3)
    # Beside every building, between the blocks, the ground is hit at z = 0.
    street = np.array([[x, 0.0, 300.0] for x in (-62.0, 0.0, 62.0)])
    hits = city.intersect(street, np.tile([0.0, 0.0, -1.0], (3, 1)))
    assert [names[int(i)] for i in hits.object] == ["ground"] * 3
    np.testing.assert_allclose(hits.point[:, 2], 0.0, atol=1e-4)


def test_city_reads_back_through_trimesh_with_its_names(city):
    scene = trimesh.load_scene(CITY)
    assert set(scene.graph.nodes_geometry) == {o.name for o in city.objects}
    assert {"city", "street0", "street1"} | {f"block{k}" for k in range(8)} <= set(scene.graph.nodes)
    assert len(scene.geometry) == 4
