"""bvh.io.load: files read through trimesh into scene descriptions and scenes.

glTF/GLB files are written by trimesh at test time from the sample meshes and
from ../shared/meshes (those tests skip when that folder is absent).
"""

import io
import json
import math
import re
import struct

import numpy as np
import pytest
import trimesh
from trimesh.transformations import rotation_matrix, translation_matrix

import sample_meshes
from bvh.io import wording
from bvh.io.load import SceneDescription, load, read_scene_description, supported_file_types
from testkit.meshes import SHARED_MESHES, sample_mesh, shared_mesh


# ---------------------------------------------------------------- helpers
def trimesh_geometry(path):
    """The one trimesh geometry of a single-mesh file, loaded as the loader does."""
    (geometry,) = trimesh.load_scene(str(path), process=False).geometry.values()
    return geometry


def only_mesh(description: SceneDescription):
    assert len(description.meshes) == 1
    return description.meshes[0]


def instances_by_name(description: SceneDescription):
    named = {instance.name: instance for instance in description.instances}
    assert len(named) == len(description.instances), "instance names repeat"
    return named


def obj_polygons(text):
    """Independent reading of an OBJ's ``v`` and ``f`` lines: (positions,
    list of polygons as position arrays), to check what the loader maps."""
    positions, polygons = [], []
    for line in text.splitlines():
        fields = line.split()
        if fields[:1] == ["v"]:
            positions.append([float(x) for x in fields[1:4]])
        elif fields[:1] == ["f"]:
            polygons.append([int(ref.split("/")[0]) - 1 for ref in fields[1:]])
    positions = np.array(positions)
    return positions, [positions[p] if p else np.zeros((0, 3)) for p in polygons]


def assert_source_face_maps_to_polygons(mesh, polygons):
    """Each polygon of k >= 3 vertices owns exactly k - 2 triangles, and every
    corner of each triangle is a corner of the polygon it is mapped to."""
    sizes = np.array([len(p) for p in polygons])
    owned = np.bincount(mesh.source_face, minlength=len(polygons))
    np.testing.assert_array_equal(owned, np.maximum(sizes - 2, 0))
    padded = np.full((len(polygons), sizes.max(), 3), np.nan)
    for row, corners in zip(padded, polygons):
        row[:len(corners)] = corners
    triangles = mesh.vertices[mesh.faces]                       # (F, 3, 3)
    candidates = padded[mesh.source_face]                       # (F, K, 3)
    close = np.abs(triangles[:, :, None, :] - candidates[:, None, :, :]).max(axis=3) <= 1e-9
    inside = close.any(axis=2).all(axis=1)
    assert inside.all(), f"triangles {np.flatnonzero(~inside)[:5]} are not in their polygons"


def write_files(directory, files: dict):
    for name, data in files.items():
        (directory / name).write_bytes(data)


def export(scene: trimesh.Scene, file_type, directory):
    """``(source, file_type)`` for the loader: GLB as bytes, glTF as a path
    (its buffers are separate files)."""
    if file_type == "glb":
        return scene.export(file_type="glb"), "glb"
    write_files(directory, scene.export(file_type="gltf"))
    return directory / "model.gltf", None


# A parent node with a rotation and translation, children with their own
# transforms (non-uniform scale, mirroring), a grandchild, and a root node.
PARENT = translation_matrix([1.0, 2.0, 3.0]) @ rotation_matrix(0.5, [0, 0, 1])
CHILD_A = translation_matrix([0.0, 5.0, 0.0]) @ np.diag([2.0, 1.0, 0.5, 1.0])
CHILD_B = translation_matrix([0.0, -5.0, 0.0]) @ np.diag([-1.0, 1.0, 1.0, 1.0])
GRANDCHILD = translation_matrix([0.0, 0.0, 4.0]) @ rotation_matrix(1.0, [1, 0, 0])
ROOT = translation_matrix([12.0, 0.0, 0.0])


def hierarchy_scene(shared, other, small):
    """A trimesh scene: ``parent`` (no geometry) -> ``child_a`` and ``child_b``
    (both ``shared``: one geometry, two nodes), ``child_a`` -> ``grandchild``
    (``small``), and ``root_node`` (``other``) under the world."""
    scene = trimesh.Scene()
    scene.graph.update(frame_from=scene.graph.base_frame, frame_to="parent", matrix=PARENT)
    scene.add_geometry(shared, geom_name="shared", node_name="child_a",
                       parent_node_name="parent", transform=CHILD_A)
    scene.graph.update(frame_from="parent", frame_to="child_b", matrix=CHILD_B, geometry="shared")
    scene.add_geometry(small, geom_name="small", node_name="grandchild",
                       parent_node_name="child_a", transform=GRANDCHILD)
    scene.add_geometry(other, geom_name="other", node_name="root_node", transform=ROOT)
    return scene


EXPECTED_WORLD = {
    "child_a": PARENT @ CHILD_A,
    "child_b": PARENT @ CHILD_B,
    "grandchild": PARENT @ CHILD_A @ GRANDCHILD,
    "root_node": ROOT,
}


def check_hierarchy(description, shared, other, small):
    named = instances_by_name(description)
    assert set(named) == set(EXPECTED_WORLD)
    for name, world in EXPECTED_WORLD.items():
        np.testing.assert_allclose(named[name].transform, world, atol=1e-6, err_msg=name)
        assert named[name].transform.dtype == np.float64 and named[name].transform.shape == (4, 4)
    # One mesh for the geometry both children use, so three meshes in all.
    assert len(description.meshes) == 3
    assert named["child_a"].mesh == named["child_b"].mesh
    assert len({named[n].mesh for n in ("child_a", "grandchild", "root_node")}) == 3
    for node, geometry in (("child_a", shared), ("root_node", other), ("grandchild", small)):
        mesh = description.meshes[named[node].mesh]
        # glTF stores float32 positions.
        scale = np.abs(geometry.vertices).max()
        np.testing.assert_allclose(mesh.vertices, geometry.vertices, atol=1e-5 * scale)
        np.testing.assert_array_equal(mesh.faces, geometry.faces)
        np.testing.assert_array_equal(mesh.source_face, np.arange(len(geometry.faces)))
    return named


# ------------------------------------------------------------ plain files
@pytest.mark.parametrize("name", sample_meshes.FILES)
def test_sample_mesh_loads_as_trimesh_reads_it(name):
    path = sample_meshes.path(name)
    description = read_scene_description(path)
    mesh = only_mesh(description)
    vertices, faces = sample_mesh(name)
    np.testing.assert_array_equal(mesh.vertices, vertices)
    np.testing.assert_array_equal(mesh.faces, faces)
    assert mesh.vertices.dtype == np.float64 and mesh.faces.dtype == np.int64
    assert mesh.source_face.dtype == np.int64 and mesh.source_face.shape == (len(faces),)
    assert mesh.name == name
    (instance,) = description.instances
    assert instance.mesh == 0 and instance.name == name
    np.testing.assert_array_equal(instance.transform, np.eye(4))
    assert description.file_type == path.suffix[1:]


def test_sample_mesh_attributes():
    path = sample_meshes.path("capsule_quads.obj")
    capsule = only_mesh(read_scene_description(path))
    assert capsule.uvs.shape == (len(capsule.vertices), 2) and capsule.uvs.dtype == np.float64
    np.testing.assert_array_equal(capsule.uvs, trimesh_geometry(path).visual.uv)
    assert capsule.normals is None
    for name in ("terrain.obj", "torus.ply", "gear.stl"):
        mesh = only_mesh(read_scene_description(sample_meshes.path(name)))
        # None of these files stores normals or uvs; none are made up.
        assert mesh.normals is None and mesh.uvs is None, name
    # A binary STL keeps three vertices a triangle: nothing is merged.
    gear = only_mesh(read_scene_description(sample_meshes.path("gear.stl")))
    assert len(gear.vertices) == 3 * len(gear.faces)


@pytest.mark.parametrize("name", sample_meshes.FILES)
def test_bytes_and_file_objects_read_like_the_path(name, tmp_path):
    path = sample_meshes.path(name)
    kind = path.suffix[1:]
    expected = only_mesh(read_scene_description(path))
    data = path.read_bytes()
    with open(path, "rb") as stream:
        from_open_file = read_scene_description(stream, kind)
    renamed = tmp_path / ("model" + path.suffix.upper())
    renamed.write_bytes(data)
    for description in (read_scene_description(data, kind),
                        read_scene_description(bytearray(data), "." + kind.upper()),
                        read_scene_description(memoryview(data), kind),
                        read_scene_description(io.BytesIO(data), kind),
                        from_open_file,
                        read_scene_description(str(renamed)),
                        read_scene_description(renamed, kind)):
        mesh = only_mesh(description)
        np.testing.assert_array_equal(mesh.vertices, expected.vertices)
        np.testing.assert_array_equal(mesh.faces, expected.faces)
        np.testing.assert_array_equal(mesh.source_face, expected.source_face)
        assert (mesh.uvs is None) == (expected.uvs is None)
        assert description.file_type == kind


def test_file_type_is_required_for_bytes_and_file_objects():
    data = sample_meshes.path("gear.stl").read_bytes()
    with pytest.raises(ValueError, match="file_type is required when source is bytes"):
        read_scene_description(data)
    with pytest.raises(ValueError, match="file_type is required when source is a file object"):
        read_scene_description(io.BytesIO(data))


def test_bad_sources_are_refused(tmp_path):
    with open(sample_meshes.path("terrain.obj")) as text_stream:
        with pytest.raises(ValueError, match=r"binary mode \('rb'\)"):
            read_scene_description(text_stream, "obj")
    with pytest.raises(ValueError, match="no file at .*absent.obj"):
        read_scene_description(tmp_path / "absent.obj")
    with pytest.raises(ValueError, match="no file at"):
        read_scene_description(tmp_path)
    no_suffix = tmp_path / "model"
    no_suffix.write_bytes(sample_meshes.path("gear.stl").read_bytes())
    with pytest.raises(ValueError, match="cannot tell the file type of .*model.*pass file_type"):
        read_scene_description(no_suffix)
    assert len(only_mesh(read_scene_description(no_suffix, "stl")).faces) == 224
    with pytest.raises(ValueError, match="source must be a path, bytes or a binary file object, not int"):
        read_scene_description(42, "stl")
    with pytest.raises(ValueError, match="file_type must be a string"):
        read_scene_description(b"solid", 3)


def test_unsupported_file_type_lists_the_supported_ones(tmp_path):
    odd = tmp_path / "model.abc"
    odd.write_bytes(b"v 0 0 0\n")
    listed = r".*".join(["glb", "obj", "off", "ply", "stl"])
    with pytest.raises(ValueError, match=rf"unsupported file type 'abc': trimesh reads .*{listed}"):
        read_scene_description(odd)
    with pytest.raises(ValueError, match=r"unsupported file type 'fbx'"):
        read_scene_description(b"\0" * 100, "FBX")
    assert {"obj", "stl", "ply", "off", "glb", "gltf"} <= set(supported_file_types())


# ------------------------------------------------------------------ glTF
@pytest.mark.parametrize("file_type", ["glb", "gltf"])
def test_gltf_hierarchy_and_shared_mesh_from_sample_meshes(file_type, tmp_path):
    torus = trimesh_geometry(sample_meshes.path("torus.ply"))
    capsule = trimesh_geometry(sample_meshes.path("capsule_quads.obj"))
    gear = trimesh_geometry(sample_meshes.path("gear.stl"))
    source, kind = export(hierarchy_scene(torus, capsule, gear), file_type, tmp_path)
    description = read_scene_description(source, kind)
    assert description.file_type == file_type
    named = check_hierarchy(description, torus, capsule, gear)
    if file_type == "gltf":
        # A file object named after its path finds the buffers beside it too.
        with open(source, "rb") as stream:
            check_hierarchy(read_scene_description(stream, "gltf"), torus, capsule, gear)
    # Texture coordinates survive the round trip through glTF's flipped v.
    capsule_mesh = description.meshes[named["root_node"].mesh]
    np.testing.assert_allclose(capsule_mesh.uvs, capsule.visual.uv, atol=1e-6)
    assert description.meshes[named["child_a"].mesh].uvs is None


def test_gltf_from_shared_meshes(tmp_path):
    shared_mesh("suzanne")  # skips when ../shared is absent
    suzanne = trimesh_geometry(SHARED_MESHES / "suzanne.obj")
    spot = trimesh_geometry(SHARED_MESHES / "spot.obj")
    cow = trimesh_geometry(SHARED_MESHES / "cow.obj")
    glb = hierarchy_scene(suzanne, spot, cow).export(file_type="glb", include_normals=True)
    description = read_scene_description(io.BytesIO(glb), "glb")
    named = check_hierarchy(description, suzanne, spot, cow)
    suzanne_mesh = description.meshes[named["child_b"].mesh]
    # Suzanne's OBJ has vn normals; they travel as glTF NORMAL.
    np.testing.assert_allclose(suzanne_mesh.normals, suzanne.vertex_normals, atol=1e-6)
    spot_mesh = description.meshes[named["root_node"].mesh]
    np.testing.assert_allclose(spot_mesh.uvs, spot.visual.uv, atol=1e-6)


def test_gltf_mesh_of_several_primitives_is_one_mesh_per_node(tmp_path):
    torus = trimesh_geometry(sample_meshes.path("torus.ply"))
    gear = trimesh_geometry(sample_meshes.path("gear.stl"))
    scene = trimesh.Scene()
    scene.add_geometry(torus, geom_name="torus", node_name="first", transform=ROOT)
    scene.add_geometry(gear, geom_name="gear", node_name="second")
    files = scene.export(file_type="gltf")
    gltf = json.loads(files["model.gltf"])
    # One glTF mesh with both primitives, used by both nodes.
    first, second = (next(i for i, node in enumerate(gltf["nodes"]) if node.get("name") == name)
                     for name in ("first", "second"))
    combined = gltf["nodes"][first]["mesh"]
    other = gltf["nodes"][second]["mesh"]
    gltf["meshes"][combined]["primitives"] += gltf["meshes"][other]["primitives"]
    gltf["nodes"][second]["mesh"] = combined
    files["model.gltf"] = json.dumps(gltf).encode()
    write_files(tmp_path, files)

    description = read_scene_description(tmp_path / "model.gltf")
    named = instances_by_name(description)
    assert set(named) == {"first", "second"}
    mesh = only_mesh(description)
    assert len(mesh.faces) == len(torus.faces) + len(gear.faces)
    np.testing.assert_allclose(mesh.vertices, np.concatenate([torus.vertices, gear.vertices]), atol=1e-5)
    np.testing.assert_array_equal(mesh.faces[len(torus.faces):], gear.faces + len(torus.vertices))
    np.testing.assert_allclose(named["first"].transform, ROOT)
    np.testing.assert_allclose(named["second"].transform, np.eye(4))


def test_gltf_unnamed_node_is_named_by_its_index(tmp_path):
    scene = trimesh.Scene()
    scene.add_geometry(trimesh.creation.box(), node_name="box", transform=ROOT)
    files = scene.export(file_type="gltf")
    gltf = json.loads(files["model.gltf"])
    index = next(i for i, node in enumerate(gltf["nodes"]) if node.get("name") == "box")
    del gltf["nodes"][index]["name"]
    files["model.gltf"] = json.dumps(gltf).encode()
    write_files(tmp_path, files)
    (instance,) = read_scene_description(tmp_path / "model.gltf").instances
    assert instance.name == str(index)
    np.testing.assert_allclose(instance.transform, ROOT)


def test_gltf_points_and_lines_beside_triangles_are_sets():
    cloud = trimesh.PointCloud(np.random.default_rng(1).random((100, 3)))
    lines = trimesh.load_path(np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]))
    box = trimesh.creation.box()
    scene = trimesh.Scene()
    scene.add_geometry(cloud, node_name="cloud")
    scene.add_geometry(lines, node_name="lines")
    scene.add_geometry(box, node_name="box")
    description = read_scene_description(scene.export(file_type="glb"), "glb")
    assert [instance.name for instance in description.instances] == ["box"]
    assert len(only_mesh(description).faces) == 12
    # Points and lines are line and point sets (tests/test_lines_points.py picks them).
    assert sorted(s.kind for s in description.sets) == ["lines", "points"]
    assert sorted(i.name for i in description.set_instances) == ["cloud", "lines"]


def test_point_clouds_load_and_a_file_without_geometry_says_what_it_holds():
    cloud = trimesh.PointCloud(np.random.default_rng(2).random((100, 3)))
    (points,) = read_scene_description(cloud.export(file_type="ply"), "ply").sets
    assert points.kind == "points" and points.vertices.shape == (100, 3)
    assert [s.kind for s in read_scene_description(b"0 0 0\n1 2 3\n", "xyz").sets] == ["points"]
    # An OBJ's bare vertices are no point cloud (OBJ points are `p` elements, not read).
    two_points = "it holds 1 point cloud with 2 points"
    with pytest.raises(ValueError, match=f"this OBJ file has no triangles: {two_points}"):
        read_scene_description(b"v 0 0 0\nv 1 2 3\n", "obj")


# ------------------------------------------------------------------- OBJ
def grid_obj(n=3, header="", corners=None):
    """An n x n grid of quads with ``vt`` and ``vn`` per vertex (uv = (x, y),
    normal = (x, y, 1)), faces ``f v/vt/vn``; ``corners`` picks the corners
    of each face (default: the whole quad)."""
    lines = [header] if header else []
    for j in range(n + 1):
        for i in range(n + 1):
            lines += [f"v {i} {j} {0.1 * i * j}", f"vt {i / n} {j / n}", f"vn {i} {j} 1"]
    for j in range(n):
        for i in range(n):
            a = j * (n + 1) + i + 1
            quad = [a, a + 1, a + n + 2, a + n + 1]
            refs = corners(quad) if corners else quad
            lines.append("f " + " ".join(f"{k}/{k}/{k}" for k in refs))
    return "\n".join(lines) + "\n"


def positions_only(text):
    """The OBJ with ``f`` lines reduced to vertex indices (no vt, vn)."""
    lines = [" ".join(["f"] + [ref.split("/")[0] for ref in line.split()[1:]]) if line.startswith("f ")
             else line for line in text.splitlines()]
    return "\n".join(lines) + "\n"


def check_grid_attributes(mesh, n=3):
    assert mesh.uvs is not None and mesh.normals is not None
    x, y = mesh.vertices[:, 0], mesh.vertices[:, 1]
    np.testing.assert_allclose(mesh.uvs, np.column_stack([x / n, y / n]))
    np.testing.assert_allclose(mesh.normals, np.column_stack([x, y, np.ones_like(x)]))


@pytest.mark.parametrize("material", ["missing mtl", "missing texture"])
def test_obj_with_missing_material_files_still_loads(material, tmp_path):
    if material == "missing texture":
        (tmp_path / "model.mtl").write_text("newmtl skin\nKd 1 1 1\nmap_Kd textures/absent.png\n")
    path = tmp_path / "model.obj"
    path.write_text(grid_obj(header="mtllib model.mtl\nusemtl skin"))
    for description in (read_scene_description(path), read_scene_description(path.read_bytes(), "obj")):
        mesh = only_mesh(description)
        assert len(mesh.faces) == 18
        check_grid_attributes(mesh)


OBJ_FACE_CASES = {
    # every line the same: trimesh reads one (P, 4) array, then splits all quads
    "quads v/vt/vn": grid_obj(),
    "quads plain": positions_only(grid_obj()),
    "pentagons": "\n".join([f"v {math.cos(a)} {math.sin(a)} {z}" for z in (0, 1)
                            for a in np.linspace(0, 2 * math.pi, 5, endpoint=False)]
                           + ["f 1 2 3 4 5", "f 6 7 8 9 10"]) + "\n",
    # mixed lines: trimesh loops, with quads and fans as consecutive triangles
    "mixed with a two-vertex line": "\n".join(
        [f"v {i % 4} {i // 4} {0.01 * i * i}" for i in range(16)]
        + ["f 1 2 6 5", "f 2 3 7", "f 3 4", "f 3 4 8 12 11 7", "f 6 7 11 10", "f 9 10 14"]) + "\n",
    # faces of several materials stay one mesh in file order
    "materials interleaved": grid_obj(header="mtllib absent.mtl").replace(
        "f 1/", "usemtl red\nf 1/").replace("f 2/", "usemtl blue\nf 2/").replace(
        "f 6/", "usemtl red\nf 6/"),
    "triangles and quads with uvs": grid_obj(corners=lambda q: q if q[0] % 2 else q[:3]),
}


@pytest.mark.parametrize("case", OBJ_FACE_CASES)
def test_obj_source_face_maps_triangles_to_polygons(case):
    text = OBJ_FACE_CASES[case]
    mesh = only_mesh(read_scene_description(text.encode(), "obj"))
    _, polygons = obj_polygons(text)
    assert_source_face_maps_to_polygons(mesh, polygons)
    if "v/vt/vn" in case or "materials" in case:
        check_grid_attributes(mesh)


def test_capsule_quads_source_face():
    path = sample_meshes.path("capsule_quads.obj")
    mesh = only_mesh(read_scene_description(path))
    _, polygons = obj_polygons(path.read_text())
    assert_source_face_maps_to_polygons(mesh, polygons)
    assert len(polygons) == 288 and len(mesh.faces) == 528


@pytest.mark.parametrize("name", ["suzanne", "spot"])
def test_shared_obj_files(name):
    shared_mesh(name)  # skips when ../shared is absent
    path = SHARED_MESHES / f"{name}.obj"
    mesh = only_mesh(read_scene_description(path))
    _, polygons = obj_polygons(path.read_text())
    assert_source_face_maps_to_polygons(mesh, polygons)
    if name == "suzanne":
        # 468 quads and 32 triangles, with vn normals
        assert len(polygons) == 500 and len(mesh.faces) == 968
        assert mesh.normals.shape == (len(mesh.vertices), 3) and mesh.uvs is None
    else:
        # texture coordinates and no material at all
        assert mesh.uvs.shape == (len(mesh.vertices), 2) and mesh.normals is None


# ---------------------------------------------------------------- refusals
GEAR_STL = sample_meshes.path("gear.stl").read_bytes()
TORUS_PLY = sample_meshes.path("torus.ply").read_bytes()
BOX_GLB = trimesh.Scene(trimesh.creation.box()).export(file_type="glb")


@pytest.mark.parametrize("file_type", ["stl", "obj", "ply", "off", "glb", "gltf"])
def test_empty_file_names_the_format(file_type):
    with pytest.raises(ValueError, match=rf"^could not read this as {file_type.upper()}: the file is empty$"):
        read_scene_description(b"", file_type)


@pytest.mark.parametrize("file_type", ["stl", "obj", "ply", "off", "glb", "gltf", "zip"])
def test_garbage_names_the_format(file_type):
    rng = np.random.default_rng(3)
    for data in (b"this is not a mesh file\n" * 3, rng.integers(0, 256, 500, dtype=np.uint8).tobytes()):
        with pytest.raises(ValueError, match=rf"^could not read this as {file_type.upper()}: "):
            read_scene_description(data, file_type)


def test_truncated_files_name_the_format(tmp_path):
    half = GEAR_STL[: len(GEAR_STL) // 2]
    announced = r"a binary STL header announcing 224 triangles, 11284 bytes, but the data has 5642 bytes"
    with pytest.raises(ValueError, match=rf"^could not read this as STL: .*{announced}"):
        read_scene_description(half, "stl")
    truncated = tmp_path / "truncated.stl"
    truncated.write_bytes(half)
    with pytest.raises(ValueError, match=rf"^could not read this as STL: .*{announced}"):
        read_scene_description(truncated)
    with pytest.raises(ValueError, match=r"^could not read this as GLB: "):
        read_scene_description(BOX_GLB[: len(BOX_GLB) // 2], "glb")
    with pytest.raises(ValueError, match=r"^could not read this as GLB: "):
        read_scene_description(BOX_GLB[:-8], "glb")
    with pytest.raises(ValueError, match=r"^could not read this as PLY: "):
        read_scene_description(TORUS_PLY[:3000], "ply")


def test_gltf_bytes_with_external_buffers_say_to_use_the_path():
    files = trimesh.Scene(trimesh.creation.box()).export(file_type="gltf")
    with pytest.raises(ValueError, match=r"^could not read this as GLTF: .*must be loaded from its path"):
        read_scene_description(files["model.gltf"], "gltf")


def test_non_finite_coordinates_are_refused():
    with pytest.raises(ValueError, match=r"this OBJ file has non-finite vertex coordinates "
                                         r"\(NaN or infinity\) in mesh 'geometry': 1 of 3 vertices"):
        read_scene_description(b"v 0 0 0\nv nan 1 0\nv 0 1 0\nf 1 2 3\n", "obj")
    # A binary STL of one triangle: header, count, then normal, corners, attribute.
    triangle = np.zeros(1, dtype=[("normal", "<f4", 3), ("corners", "<f4", (3, 3)), ("attribute", "<u2")])
    triangle["corners"] = [[0, 0, 0], [1, 0, 0], [0, np.inf, 0]]
    stl = b"\0" * 80 + np.uint32(1).tobytes() + triangle.tobytes()
    with pytest.raises(ValueError, match="this STL file has non-finite vertex coordinates"):
        read_scene_description(stl, "stl")


def test_face_indices_out_of_range_are_refused():
    ply = (b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
           b"property float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n"
           b"0 0 0\n1 0 0\n0 1 0\n3 0 1 7\n")
    with pytest.raises(ValueError) as caught:
        read_scene_description(ply, "ply")
    assert str(caught.value) == ("could not read this as PLY: a face of mesh 'geometry_0' refers to vertex 7, "
                                 "but the mesh has 3 vertices (0..2)")
    with pytest.raises(ValueError, match=r"^could not read this as OBJ: "):
        read_scene_description(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n", "obj")


# What Python and numpy say when trimesh meets a damaged file: never passed on.
INTERNALS = re.compile(r"[A-Z][a-z]+(Error|Exception)\b|out of bounds for axis|unmatched data|reshape|"
                       r"values to unpack|inhomogeneous|NoneType|local variable|invalid literal|not in list")


@pytest.mark.parametrize("file_type, data", [
    ("stl", GEAR_STL), ("ply", TORUS_PLY), ("glb", BOX_GLB),
    ("obj", grid_obj(header="mtllib a.mtl").encode()),
    ("off", trimesh.creation.box().export(file_type="off").encode()),
    ("stl", trimesh.creation.box().export(file_type="stl_ascii").encode()),
    ("ply", trimesh.creation.box().export(file_type="ply", encoding="ascii")),
], ids=["stl", "ply", "glb", "obj", "off", "ascii stl", "ascii ply"])
def test_damaged_files_raise_only_value_error(file_type, data):
    """Truncations and byte flips anywhere: the loader reads the file or
    raises ValueError naming the format, in its own words, whatever trimesh
    raised inside."""
    rng = np.random.default_rng(4)
    damaged = [data[:cut] for cut in rng.integers(1, len(data), 25)]
    for _ in range(25):
        flipped = bytearray(data)
        for at in rng.integers(0, len(data), 3):
            flipped[at] = int(rng.integers(0, 256))
        damaged.append(bytes(flipped))
    for item in damaged:
        try:
            description = read_scene_description(item, file_type)
        except ValueError as exc:
            assert str(exc).startswith((f"could not read this as {file_type.upper()}: ",
                                        f"this {file_type.upper()} file ")), str(exc)
            assert not INTERNALS.search(str(exc)), str(exc)
        else:
            for mesh in description.meshes:
                assert np.isfinite(mesh.vertices).all()
                assert 0 <= mesh.faces.min() and mesh.faces.max() < len(mesh.vertices)


# ------------------------------------------------------------- bvh.load
def test_load_refuses_files_before_touching_the_scene():
    with pytest.raises(ValueError, match="could not read this as STL: the file is empty"):
        load(b"", "stl")


def test_load_gltf_objects_named_after_nodes(tmp_path):
    torus = trimesh_geometry(sample_meshes.path("torus.ply"))
    capsule = trimesh_geometry(sample_meshes.path("capsule_quads.obj"))
    gear = trimesh_geometry(sample_meshes.path("gear.stl"))
    glb = hierarchy_scene(torus, capsule, gear).export(file_type="glb")
    scene = load(glb, "glb")
    objects = {info.name: info for info in scene.objects}
    assert set(objects) == set(EXPECTED_WORLD)
    assert len(scene.meshes) == 3 and len(scene) == 4
    assert objects["child_a"].mesh == objects["child_b"].mesh
    for name, world in EXPECTED_WORLD.items():
        np.testing.assert_allclose(objects[name].transform, world, atol=1e-6)
    assert scene.triangle_count == 2 * len(torus.faces) + len(capsule.faces) + len(gear.faces)
    capsule_mesh = scene.meshes[objects["root_node"].mesh]
    assert capsule_mesh.has_uvs and capsule_mesh.triangles == len(capsule.faces)

    # A ray straight down onto the top triangle of the stretched torus hits it.
    target = objects["child_a"]
    local = scene.mesh_vertices(target.mesh)[scene.mesh_faces(target.mesh)].mean(axis=1)
    world = local @ target.transform[:3, :3].T + target.transform[:3, 3]
    top = int(np.argmax(world[:, 2]))
    origin = world[top] + [0.0, 0.0, 10.0]
    hits = scene.intersect(origin[None], np.array([[0.0, 0.0, -1.0]]))
    assert hits.object[0] == target.id and hits.mesh[0] == target.mesh
    assert hits.triangle[0] == top
    np.testing.assert_allclose(hits.point[0], world[top], atol=1e-9)
    np.testing.assert_allclose(hits.t[0], 10.0, atol=1e-9)


def test_load_names_the_node_whose_transform_the_scene_refuses():
    scene = trimesh.Scene()
    scene.add_geometry(trimesh.creation.box(), node_name="flat", transform=np.diag([1.0, 1.0, 0.0, 1.0]))
    glb = scene.export(file_type="glb")
    assert instances_by_name(read_scene_description(glb, "glb"))["flat"].transform[2, 2] == 0
    with pytest.raises(ValueError, match=r"^node 'flat' of this GLB file: transform is not invertible"):
        load(glb, "glb")


def test_load_obj_keeps_source_faces_and_attributes():
    path = sample_meshes.path("capsule_quads.obj")
    description = read_scene_description(path)
    scene = load(path)
    (info,) = scene.objects
    assert info.name == "capsule_quads.obj" and info.kind == "mesh"
    (mesh,) = scene.meshes
    assert mesh.has_uvs and not mesh.has_normals and mesh.triangles == 528
    np.testing.assert_array_equal(scene.source_face(info.mesh), only_mesh(description).source_face)
    np.testing.assert_array_equal(scene.mesh_faces(info.mesh), only_mesh(description).faces)


# ------------------------------------------ exact refusals of damaged files
SQUARE_OBJ = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 1 1\n"


@pytest.mark.parametrize("text, message", [
    (SQUARE_OBJ + "f 1 2 3\nf 1 3 9\n", "line 9: face refers to vertex 9, but the file defines 4 vertices"),
    (SQUARE_OBJ + "f 1 2 3\nf 1 3 -5\n", "line 9: face refers to vertex -5, but the file defines 4 vertices"),
    (SQUARE_OBJ + "f 0 1 2\n", "line 8: face refers to vertex 0, but OBJ numbers them from 1"),
    (SQUARE_OBJ + "f 1/1 2/2 3/8\n",
     "line 8: face refers to texture coordinate 8, but the file defines 3 texture coordinates"),
    (SQUARE_OBJ + "f 1 2 3.5\n",
     "line 8: face vertex '3.5' is not a vertex reference (v, v/vt, v//vn or v/vt/vn, whole numbers)"),
    (SQUARE_OBJ + "f 1/1 2/2 3\n", "line 8: face vertex '3' is not written like the first one on its line ('1/1')"),
    ("v 0 0 0\nv 1 0\nv 0 1 0\nf 1 2 3\n", "line 2: a 'v' line needs 3 numbers (x y z), but this one has 2"),
    ("v 0 0 0\nv 1 0 x\nv 0 1 0\nf 1 2 3\n", "line 2: 'x' is not a number"),
    # Cut inside the last face line: the file has no final line end.
    (SQUARE_OBJ + "f 1/1 2/2 3/3\nf 1/1 3/3 4/",
     "line 9: face vertex '4/' is not a vertex reference (v, v/vt, v//vn or v/vt/vn, whole numbers) "
     "(it is the last line and has no line end: the file looks cut short)"),
    (SQUARE_OBJ + "f 1 2 3\nf 1 3",
     "line 9: a face needs at least 3 vertices, but this one has 2 "
     "(it is the last line and has no line end: the file looks cut short)"),
], ids=["vertex beyond", "negative beyond", "vertex 0", "uv beyond", "not a number", "mixed forms",
        "short vertex", "vertex not a number", "cut in a reference", "cut after two vertices"])
def test_damaged_obj_names_the_line(text, message):
    with pytest.raises(ValueError) as caught:
        read_scene_description(text.encode(), "obj")
    assert str(caught.value) == f"could not read this as OBJ: {message}"


def test_obj_with_negative_references_and_no_final_line_end_still_loads():
    mesh = only_mesh(read_scene_description((SQUARE_OBJ + "f -4 -3 -2\nf 1 3 4").encode(), "obj"))
    assert len(mesh.faces) == 2
    with pytest.raises(ValueError) as caught:
        read_scene_description((SQUARE_OBJ + "f 1 2 3 # first\n").encode(), "obj")
    assert str(caught.value) == ("could not read this as OBJ: line 8: face vertex '#' is not a vertex reference "
                                 "(v, v/vt, v//vn or v/vt/vn, whole numbers)")


def glb_of(document: dict, binary: bytes = b"") -> bytes:
    """A GLB from a JSON document and a BIN chunk, lengths as the format says."""
    text = json.dumps(document).encode()
    text += b" " * (-len(text) % 4)
    binary += b"\0" * (-len(binary) % 4)
    chunks = len(text).to_bytes(4, "little") + b"JSON" + text
    if binary:
        chunks += len(binary).to_bytes(4, "little") + b"BIN\0" + binary
    return b"glTF" + (2).to_bytes(4, "little") + (12 + len(chunks)).to_bytes(4, "little") + chunks


def test_damaged_glb_names_the_byte():
    def refusal(data):
        with pytest.raises(ValueError) as caught:
            read_scene_description(data, "glb")
        return str(caught.value)

    size = len(BOX_GLB)
    assert refusal(BOX_GLB[:size // 2]) == (f"could not read this as GLB: the header (byte 8) says the file has "
                                            f"{size} bytes, but it has {size // 2}: the file is truncated")
    assert refusal(BOX_GLB[:7]) == "could not read this as GLB: the file has 7 bytes, fewer than the 12-byte GLB header"
    # The header's length agrees with the cut file, the JSON chunk's does not.
    cut = bytearray(BOX_GLB[:40])
    cut[8:12] = (40).to_bytes(4, "little")
    json_length = int.from_bytes(BOX_GLB[12:16], "little")
    assert refusal(bytes(cut)) == (f"could not read this as GLB: byte 12: the JSON chunk says it holds {json_length} "
                                   f"bytes, but only 20 follow it (the file is truncated)")
    broken = glb_of({"asset": {"version": "2.0"}})
    broken = broken[:30] + b"\x01" + broken[31:]
    assert refusal(broken) == "could not read this as GLB: byte 30: the JSON chunk is not valid JSON"
    short_bin = glb_of({"asset": {"version": "2.0"}, "buffers": [{"byteLength": 96}]}, b"\0" * 8)
    assert refusal(short_bin) == ("could not read this as GLB: the JSON says buffer 0 holds 96 bytes, "
                                  "but the BIN chunk holds 8")
    assert refusal(b"GLTF" + BOX_GLB[4:]) == ("could not read this as GLB: it does not start with 'glTF' (bytes 0-3), "
                                              "so it is not a GLB file")


def test_gltf_that_is_not_json_says_where():
    with pytest.raises(ValueError) as caught:
        read_scene_description(b'{"asset": {"version": "2.0"', "gltf")
    assert str(caught.value) == "could not read this as GLTF: its JSON is not valid at character 28 (line 1, column 28)"


def test_gltf_laid_out_wrongly_says_so_in_words():
    document = {"asset": {"version": "2.0"}, "meshes": [{"primitives": [{"attributes": {"POSITION": 5}}]}],
                "nodes": [{"mesh": 0}]}
    with pytest.raises(ValueError) as caught:
        read_scene_description(json.dumps(document).encode(), "gltf")
    assert str(caught.value).startswith("could not read this as GLTF: its content is not laid out as the GLTF "
                                        "format says (damaged, or not a GLTF file)")


def test_truncated_ply_says_how_many_rows_it_holds():
    with pytest.raises(ValueError) as caught:
        read_scene_description(TORUS_PLY[:3000], "ply")
    assert str(caught.value) == ("could not read this as PLY: the header announces 1152 vertices, but the file "
                                 "holds 231 (its data ends at byte 3000): it is truncated")
    with pytest.raises(ValueError) as caught:
        read_scene_description(TORUS_PLY[:-5], "ply")
    assert str(caught.value) == (f"could not read this as PLY: the header announces 2304 faces, but the file holds "
                                 f"2303 (its data ends at byte {len(TORUS_PLY) - 5}): it is truncated")
    text = (b"ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\nproperty float z\n"
            b"element face 2\nproperty list uchar int vertex_indices\nend_header\n"
            b"0 0 0\n1 0 0\n1 1 0\n0 1 0\n3 0 1 2\n3 0 2")
    with pytest.raises(ValueError) as caught:
        read_scene_description(text, "ply")
    assert str(caught.value) == ("could not read this as PLY: the header announces 2 faces, but the file holds 1 "
                                 "(its text ends at line 15): it is truncated")


# ---------------------------------------------------- PLY triangle strips
STRIP_VERTICES = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [2, 0, 0], [2, 1, 0], [3, 3, 3]]
# Row 0: a strip of 4 (two triangles), a -1, a strip with a repeated vertex
# (a degenerate turn, dropped but counted for the alternation); row 1: one triangle.
STRIP_ROWS = [[0, 1, 2, 3, -1, 1, 4, 3, 3, 5, 6], [4, 5, 6]]
STRIP_TRIANGLES = [[0, 1, 2], [2, 1, 3],        # k = 0 even, k = 1 odd
                   [1, 4, 3],                   # second strip, k = 0
                   # k = 1 (4, 3, 3) and k = 2 (3, 3, 5) repeat a vertex: dropped
                   [5, 3, 6],                   # k = 3, odd: (s[4], s[3], s[5])
                   [4, 5, 6]]


def strip_ply(file_format: str, normals: bool = False) -> bytes:
    properties = "property float x\nproperty float y\nproperty float z\n"
    if normals:
        properties += "property float nx\nproperty float ny\nproperty float nz\n"
    header = (f"ply\nformat {file_format} 1.0\nelement vertex {len(STRIP_VERTICES)}\n{properties}"
              f"element tristrips {len(STRIP_ROWS)}\nproperty list int int vertex_indices\nend_header\n").encode()
    vertices = np.array(STRIP_VERTICES, dtype=np.float64)
    if normals:
        vertices = np.column_stack([vertices, np.tile([0.0, 0.0, 1.0], (len(vertices), 1))])
    if file_format == "ascii":
        body = "".join(" ".join(f"{x:g}" for x in row) + "\n" for row in vertices)
        body += "".join(" ".join(str(i) for i in [len(row), *row]) + "\n" for row in STRIP_ROWS)
        return header + body.encode()
    order = "<" if file_format == "binary_little_endian" else ">"
    body = vertices.astype(order + "f4").tobytes()
    for row in STRIP_ROWS:
        body += np.array([len(row), *row], dtype=order + "i4").tobytes()
    return header + body


@pytest.mark.parametrize("file_format", ["ascii", "binary_little_endian", "binary_big_endian"])
def test_ply_triangle_strips_become_triangles(file_format):
    mesh = only_mesh(read_scene_description(strip_ply(file_format), "ply"))
    np.testing.assert_array_equal(mesh.faces, STRIP_TRIANGLES)
    np.testing.assert_array_equal(mesh.vertices, STRIP_VERTICES)
    np.testing.assert_array_equal(mesh.source_face, np.arange(len(STRIP_TRIANGLES)))
    assert mesh.normals is None and mesh.uvs is None


def test_ply_triangle_strips_keep_normals_and_load_as_a_scene(tmp_path):
    path = tmp_path / "strips.ply"
    path.write_bytes(strip_ply("binary_little_endian", normals=True))
    mesh = only_mesh(read_scene_description(path))
    assert mesh.name == "strips.ply"
    np.testing.assert_array_equal(mesh.normals, np.tile([0.0, 0.0, 1.0], (len(STRIP_VERTICES), 1)))
    scene = load(path)
    assert scene.triangle_count == len(STRIP_TRIANGLES)


def test_ply_triangle_strip_beyond_the_vertices_is_refused():
    data = strip_ply("ascii").replace(b"3 4 5 6\n", b"3 4 5 9\n")
    with pytest.raises(ValueError) as caught:
        read_scene_description(data, "ply")
    assert str(caught.value) == ("could not read this as PLY: a triangle strip refers to vertex 9, but the file has "
                                 "7 vertices (0..6); only -1 separates strips")


def test_truncated_ply_strips_are_refused():
    data = strip_ply("binary_little_endian")
    with pytest.raises(ValueError) as caught:
        read_scene_description(data[:-6], "ply")
    assert str(caught.value) == (f"could not read this as PLY: the header announces 2 triangle strips, but the file "
                                 f"holds 1 (its data ends at byte {len(data) - 6}): it is truncated")


# ------------------------------------------------------------- naming
def test_name_names_a_single_mesh_the_file_does_not_name():
    box = trimesh.creation.box()
    unnamed = {"stl": box.export(file_type="stl"), "obj": box.export(file_type="obj").encode(),
               "ply": box.export(file_type="ply"), "ply strips": strip_ply("ascii")}
    for key, data in unnamed.items():
        description = read_scene_description(data, key.split()[0], name="gear")
        assert (only_mesh(description).name, description.instances[0].name) == ("gear", "gear"), key
    named_obj = ("o cube\n" + box.export(file_type="obj")).encode()
    assert read_scene_description(named_obj, "obj", name="gear").instances[0].name == "cube"
    # trimesh's own export names its node and mesh "geometry_0" in the file.
    assert read_scene_description(BOX_GLB, "glb", name="gear").instances[0].name == "geometry_0"
    assert read_scene_description(unnamed["stl"], "stl").instances[0].name == "geometry_0"


def test_name_names_an_unnamed_gltf_node():
    document = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}], "nodes": [{"mesh": 0}],
                "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "mode": 4}]}],
                "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
                               "max": [1, 1, 0], "min": [0, 0, 0]}],
                "bufferViews": [{"buffer": 0, "byteLength": 36}], "buffers": [{"byteLength": 36}]}
    triangle = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype="<f4").tobytes()
    assert read_scene_description(glb_of(document, triangle), "glb", name="gear").instances[0].name == "gear"
    document["nodes"][0]["name"] = "bracket"
    assert read_scene_description(glb_of(document, triangle), "glb", name="gear").instances[0].name == "bracket"


def ply_header(file_format: str, vertex_properties: str, count_vertices: int, rest: str) -> bytes:
    return (f"ply\nformat {file_format} 1.0\nelement vertex {count_vertices}\n{vertex_properties}"
            f"{rest}end_header\n").encode()


XYZ = "property float x\nproperty float y\nproperty float z\n"
STRIPS = "element tristrips 1\nproperty list int int vertex_indices\n"
SIGNED_LISTS = ply_header("binary_little_endian", XYZ, 1, "element face 1\nproperty list char int vertex_indices\n")


@pytest.mark.parametrize("data, message", [
    (b"glTF" + (2).to_bytes(4, "little") + (16).to_bytes(4, "little") + b"\0" * 4,
     "byte 12: the file ends inside a chunk header"),
    (b"glTF" + (2).to_bytes(4, "little") + (20).to_bytes(4, "little") + (0).to_bytes(4, "little") + b"BIN\0",
     "byte 12: the first chunk is BIN, not JSON"),
    (b"glTF" + (2).to_bytes(4, "little") + (12).to_bytes(4, "little"), "it has no JSON chunk"),
    (b"glTF" + (2).to_bytes(4, "little") + (24).to_bytes(4, "little") + (4).to_bytes(4, "little") + b"JSON\xff   ",
     "byte 20: the JSON chunk is not UTF-8 text"),
    (BOX_GLB + b"\0" * 4,
     f"the header (byte 8) says the file has {len(BOX_GLB)} bytes, but it has {len(BOX_GLB) + 4}: bytes follow "
     f"the end it declares"),
], ids=["cut chunk header", "bin first", "no json", "json not utf-8", "bytes after the end"])
def test_glb_refusals(data, message):
    with pytest.raises(ValueError) as caught:
        read_scene_description(data, "glb")
    assert str(caught.value) == f"could not read this as GLB: {message}"


@pytest.mark.parametrize("data, message", [
    (SIGNED_LISTS + np.zeros(3, "<f4").tobytes() + b"\xff",
     f"byte {len(SIGNED_LISTS) + 12}: a list of 'face' has a negative length -1"),
    (ply_header("ascii", XYZ, 1, "element face 1\nproperty list uchar int vertex_indices\n") + b"0 0 0\nthree 0 0 0\n",
     "row 1 of 'face': the list length 'three' is not a whole number"),
    (ply_header("ascii", XYZ, 1, STRIPS) + b"0 0 0\n-2 0 0 0\n",
     "row 1 of 'tristrips' has a negative list length -2"),
    (ply_header("ascii", XYZ + "property list uchar float weights\n", 1, STRIPS) + b"0 0 0 1 1\n3 0 0 0\n",
     "its vertices have list properties, which are not read beside triangle strips or polygons of mixed sizes"),
    (ply_header("ascii", "property float a\n", 1, STRIPS) + b"0\n3 0 0 0\n", "its vertices have no x, y and z"),
    (ply_header("ascii", XYZ, 1, STRIPS) + b"0 zero 0\n3 0 0 0\n", "a vertex row holds something other than numbers"),
    (ply_header("ascii", XYZ, 1, "element tristrips 1\nproperty list int int corners\n") + b"0 0 0\n3 0 0 0\n",
     "its tristrips element has no vertex_indices list"),
    (ply_header("ascii", XYZ, 1, STRIPS) + b"0 0 0\n3 0 x 0\n",
     "a triangle strip holds something other than whole numbers"),
    (b"ply\nformat ascii 1.0\n" + STRIPS.encode() + b"end_header\n3 0 1 2\n",
     "it has faces or triangle strips but no vertex element"),
], ids=["negative list length", "list length not a number", "ascii negative list length", "vertex lists", "no xyz", "vertex not a number",
        "no vertex_indices", "strip not a number", "no vertices"])
def test_ply_refusals(data, message):
    with pytest.raises(ValueError) as caught:
        read_scene_description(data, "ply")
    assert str(caught.value) == f"could not read this as PLY: {message}"


def test_binary_ply_with_mixed_polygons_is_read_as_fans():
    """trimesh refuses binary faces of different vertex counts; they are read here."""
    header = ply_header("binary_little_endian", XYZ, 5,
                        "element face 3\nproperty list uchar int vertex_indices\nproperty uchar flags\n")
    body = (np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [2, 0, 0]], "<f4").tobytes()
            + bytes([3]) + np.array([0, 1, 2], "<i4").tobytes() + bytes([7])
            + bytes([4]) + np.array([0, 1, 2, 3], "<i4").tobytes() + bytes([7])
            + bytes([5]) + np.array([4, 2, 1, 0, 3], "<i4").tobytes() + bytes([7]))
    mesh = only_mesh(read_scene_description(header + body, "ply"))
    np.testing.assert_array_equal(mesh.faces, [[0, 1, 2], [0, 1, 2], [0, 2, 3], [4, 2, 1], [4, 1, 0], [4, 0, 3]])
    np.testing.assert_array_equal(mesh.source_face, [0, 1, 1, 2, 2, 2])
    wrong = body.replace(np.array([4, 2, 1, 0, 3], "<i4").tobytes(), np.array([4, 2, 1, 0, 9], "<i4").tobytes())
    with pytest.raises(ValueError) as caught:
        read_scene_description(header + wrong, "ply")
    assert str(caught.value) == ("could not read this as PLY: a face refers to vertex 9, but the file has "
                                 "5 vertices (0..4)")
    with pytest.raises(ValueError) as caught:
        read_scene_description(header + body[:-3], "ply")
    assert str(caught.value) == (f"could not read this as PLY: the header announces 3 faces, but the file holds 2 "
                                 f"(its data ends at byte {len(header + body) - 3}): it is truncated")


@pytest.mark.parametrize("text, message", [
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1\v2\v3\n",
     "line 4: face line 'f 1\\x0b2\\x0b3' separates its vertices by something other than spaces or tabs"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nvt\nf 1 2 3\n",
     "line 4: a 'vt' line needs at least 1 number (u [v]), but this one has 0"),
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nvn 0 1\nf 1 2 3\n", "line 4: a 'vn' line needs 3 numbers (x y z), but this one has 2"),
], ids=["vertical tabs", "empty vt", "short vn"])
def test_more_obj_refusals(text, message):
    with pytest.raises(ValueError) as caught:
        read_scene_description(text.encode(), "obj")
    assert str(caught.value) == f"could not read this as OBJ: {message}"


@pytest.mark.parametrize("error, reason", [
    (ValueError("string or file could not be read to its end due to unmatched data"),
     "it holds text where numbers should be"),
    (ValueError("cannot reshape array of size 7 into shape (3)"),
     "its rows or header do not hold the values the OFF format needs (damaged or truncated)"),
    (IndexError("index 8 is out of bounds for axis 0 with size 3"),
     "it refers to data that is not in the file (damaged, or not an OFF file)"),
    (struct.error("unpack requires a buffer of 4 bytes"),
     "it ends before the data it announces (truncated, or not an OFF file)"),
    (TypeError("'NoneType' object is not subscriptable"),
     "its content is not laid out as the OFF format says (damaged, or not an OFF file)"),
    (UnicodeDecodeError("utf-8", b"ab\xff", 2, 3, "invalid start byte"),
     "byte 2 is not UTF-8 text"),
    (RuntimeError(), "the file is damaged or not an OFF file"),
    (RuntimeError("OFF file is missing the vertex/face count line"), "OFF file is missing the vertex/face count line"),
], ids=["numbers", "rows", "index", "struct", "layout", "utf-8", "no message", "trimesh's words"])
def test_reasons_speak_of_the_file(error, reason):
    assert wording.reason(error, "OFF") == reason


def test_load_names_the_single_unnamed_object():
    scene = load(trimesh.creation.box().export(file_type="stl"), "stl", name="gear")
    assert [info.name for info in scene.objects] == ["gear"]


def test_obj_with_indented_lines_and_crlf_loads_whole():
    mesh = only_mesh(read_scene_description(b"  v 0 0 0\r\n\tv 1 0 0\r\n v 0 1 0\r\n  f 1 2 3\r\n", "obj"))
    np.testing.assert_array_equal(mesh.faces, [[0, 1, 2]])
