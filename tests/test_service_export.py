"""A scene given back: ``GET /scenes/{id}/export.glb`` read by a GLB parser of this test's own
(nodes, extras, exact matrices, each mesh once), checked against a float64 brute force over
the triangles it holds, and uploaded again to the same picks; ``GET .../meshes/{mesh}/vertices``
and ``.../faces`` equal to the scene's arrays in both forms."""

import json
import struct

import numpy as np
import pytest
import trimesh

from bvh.io import glb_writer
from testkit.meshes import grid_mesh, sample_mesh
from testkit.reference.raycast import closest_hits
from tests.test_scene import random_transform

OCTET = {"accept": "application/octet-stream"}


def parse_glb(data: bytes) -> tuple[dict, bytes]:
    """The JSON and BIN chunks of a GLB, checked as glTF 2.0 §4.4 frames them."""
    magic, version, length = struct.unpack_from("<4sII", data)
    assert (magic, version, length) == (b"glTF", 2, len(data))
    json_length, kind = struct.unpack_from("<II", data, 12)
    assert kind == 0x4E4F534A and json_length % 4 == 0
    document = json.loads(data[20:20 + json_length])
    rest = data[20 + json_length:]
    if not rest:
        return document, b""
    bin_length, kind = struct.unpack_from("<II", rest)
    assert kind == 0x004E4942 and bin_length % 4 == 0 and len(rest) == 8 + bin_length
    assert document["buffers"] == [{"byteLength": bin_length}]
    return document, rest[8:]


def view_array(document: dict, binary: bytes, view: int, dtype: str, width: int) -> np.ndarray:
    entry = document["bufferViews"][view]
    start = entry.get("byteOffset", 0)
    return np.frombuffer(binary[start:start + entry["byteLength"]], dtype).reshape(-1, width)


def glb_meshes(document: dict, binary: bytes) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each glTF mesh's ``(POSITION float32, exact float64 or None, faces)``."""
    meshes = []
    for mesh in document["meshes"]:
        (primitive,) = mesh["primitives"]
        assert primitive["mode"] == 4
        positions = document["accessors"][primitive["attributes"]["POSITION"]]
        indices = document["accessors"][primitive["indices"]]
        assert (positions["componentType"], positions["type"]) == (5126, "VEC3")
        assert (indices["componentType"], indices["type"]) == (5125, "SCALAR")
        vertices = view_array(document, binary, positions["bufferView"], "<f4", 3)
        faces = view_array(document, binary, indices["bufferView"], "<u4", 3)
        assert len(vertices) == positions["count"] and faces.size == indices["count"]
        assert positions["min"] == vertices.min(axis=0).tolist() and positions["max"] == vertices.max(axis=0).tolist()
        exact = mesh["extras"]["bvh_pick"].get("vertices_float64")
        meshes.append((vertices, None if exact is None else view_array(document, binary, exact, "<f8", 3), faces))
    return meshes


def node_matrix(node: dict) -> np.ndarray:
    """A node's matrix as rows (glTF writes it column-major; absent: the identity)."""
    return np.array(node["matrix"]).reshape(4, 4).T if "matrix" in node else np.eye(4)


def created(response) -> dict:
    assert response.status_code == 201, response.text
    return response.json()


def torus():
    vertices, faces = sample_mesh("torus.ply")
    return vertices, faces


@pytest.fixture
def mixed_scene(client) -> str:
    """Two meshes (the torus, whose vertices are float32 values, and a gear scaled by 0.1, whose
    are not), instanced with turned, mirrored and nearly-identity transforms, repeated and missing
    names, a mask, an unpickable object, and a sphere and a box."""
    rng = np.random.default_rng(7)
    vertices, faces = torus()
    gear_vertices, gear_faces = sample_mesh("gear.stl")
    scene = created(client.post("/scenes", json={"name": "mixed", "meshes": [
        {"name": "torus", "vertices": vertices.tolist(), "faces": faces.tolist()},
        {"name": "gear", "vertices": (gear_vertices * 0.1).tolist(), "faces": gear_faces.tolist(),
         "transform": random_transform(rng).tolist()}]}))
    path = f"/scenes/{scene['id']}/objects"
    nearly = np.eye(4)
    nearly[:3, 3] = [1e-9, -3e-12, 4.0]
    bodies = [{"mesh": 0, "transform": random_transform(rng, mirror=True).tolist(), "name": "copy"},
              {"mesh": 0, "transform": random_transform(rng).tolist(), "name": "copy"},
              {"mesh": 1, "transform": nearly.tolist()},
              {"shape": "sphere", "radius": 0.7, "transform": random_transform(rng).tolist(), "name": "ball"},
              {"mesh": 0, "transform": random_transform(rng).tolist(), "name": "hidden", "pickable": False},
              {"mesh": 1, "transform": random_transform(rng).tolist(), "name": "masked", "mask": 2},
              {"shape": "box", "size": [1, 2, 3], "name": "crate"}]
    for body in bodies:
        created(client.post(path, json=body))
    return scene["id"]


def scene_objects(client, scene_id: str) -> list[dict]:
    response = client.get(f"/scenes/{scene_id}")
    assert response.status_code == 200
    return response.json()["objects"]


def test_the_glb_holds_each_mesh_once_and_every_object_as_a_node(client, mixed_scene):
    response = client.get(f"/scenes/{mixed_scene}/export.glb")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "model/gltf-binary"
    assert int(response.headers["content-length"]) == len(response.content)
    assert response.headers["x-objects-without-geometry"] == "2"
    document, binary = parse_glb(response.content)
    objects = scene_objects(client, mixed_scene)
    nodes = document["nodes"]
    assert len(nodes) == len(objects) == 9
    assert document["scenes"][document["scene"]]["nodes"] == list(range(9))
    extras = document["scenes"][0]["extras"]["bvh_pick"]
    assert extras == {"scene": mixed_scene, "name": "mixed", "version": extras["version"], "objects": 9,
                      "without_geometry": {"sphere": 1, "box": 1}}
    stored = client.app.state.store.get(mixed_scene).scene
    meshes = glb_meshes(document, binary)
    assert [mesh["extras"]["bvh_pick"]["mesh"] for mesh in document["meshes"]] == [0, 1]
    assert [mesh["name"] for mesh in document["meshes"]] == ["torus", "gear"]
    for mesh_id, (positions, exact, faces) in enumerate(meshes):
        original = stored.mesh_vertices(mesh_id)
        assert np.array_equal(positions, original.astype(np.float32))
        assert np.array_equal(faces, stored.mesh_faces(mesh_id))
        # The torus's vertices are float32 values: no float64 copy; the scaled gear's are not.
        assert (exact is None) == (mesh_id == 0)
        assert np.array_equal(original if exact is None else exact, original)
    for node, info in zip(nodes, objects):
        given = node["extras"]["bvh_pick"]
        assert given["id"] == info["id"] and given["name"] == info["name"] and given["kind"] == info["kind"]
        assert (given["mask"], given["pickable"]) == (info["mask"], info["pickable"])
        assert node.get("name") == info["name"]
        # Exact: the matrix's float64 numbers are the object's, to the last bit.
        assert np.array_equal(node_matrix(node), np.array(info["transform"]))
        if info["kind"] == "mesh":
            assert node["mesh"] == given["mesh"] == info["mesh"]
        else:
            assert "mesh" not in node and given["params"] == info["params"]
    assert "matrix" not in nodes[0]            # the torus object of the upload: the identity
    assert node_matrix(nodes[4])[0, 3] == 1e-9
    # trimesh, an independent reader, reads it as two meshes placed seven times.
    read = trimesh.load_scene(trimesh.util.wrap_as_stream(response.content), file_type="glb", process=False)
    assert len(read.geometry) == 2 and len(read.graph.nodes_geometry) == 7


def world_triangles(document: dict, binary: bytes):
    """Every mesh node's triangles in world coordinates, from the GLB alone (float64 vertices
    where the file has them), with each triangle's object id and face index."""
    meshes = glb_meshes(document, binary)
    corners, owners, local = [], [], []
    for node in document["nodes"]:
        if "mesh" not in node:
            continue
        positions, exact, faces = meshes[node["mesh"]]
        vertices = (positions.astype(np.float64) if exact is None else exact) @ node_matrix(node)[:3, :3].T
        vertices += node_matrix(node)[:3, 3]
        corners.append(vertices[faces.astype(np.int64)])
        owners.append(np.full(len(faces), node["extras"]["bvh_pick"]["id"]))
        local.append(np.arange(len(faces)))
    corners = np.concatenate(corners)
    return corners.reshape(-1, 3), np.arange(len(corners) * 3).reshape(-1, 3), np.concatenate(owners), \
        np.concatenate(local)


def rays_at(corners: np.ndarray, count: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Rays from all around aimed at points inside random triangles ``corners (T, 3, 3)``."""
    chosen = corners[rng.integers(len(corners), size=count)]
    weights = rng.dirichlet([1.0, 1.0, 1.0], size=count)
    targets = np.einsum("rk,rkc->rc", weights, chosen)
    away = rng.normal(size=(count, 3))
    origins = targets + 20.0 * away / np.linalg.norm(away, axis=1, keepdims=True)
    return origins, targets - origins


def batch(client, scene_id: str, origins, directions, **options) -> dict:
    response = client.post(f"/scenes/{scene_id}/pick/batch",
                           json={"origins": origins.tolist(), "directions": directions.tolist(), **options})
    assert response.status_code == 200, response.text
    return {key: np.array(value, dtype=float if key == "t" else None) for key, value in response.json().items()
            if key in ("hit", "t", "object", "triangle")}


def test_the_export_uploaded_again_gives_the_same_picks(client, mixed_scene):
    glb = client.get(f"/scenes/{mixed_scene}/export.glb").content
    again = created(client.post("/scenes/upload", files={"file": ("mixed.glb", glb, "model/gltf-binary")}))
    original = [info for info in scene_objects(client, mixed_scene) if info["kind"] == "mesh"]
    copied = again["objects"]
    # The mesh objects, in id order (the shapes are not made again): the same names, masks,
    # pickability, meshes and transforms, to the last bit.
    assert len(copied) == len(original) == 7
    for old, new in zip(original, copied):
        assert {key: new[key] for key in ("name", "mask", "pickable", "mesh", "transform", "bounds", "triangles")} \
            == {key: old[key] for key in ("name", "mask", "pickable", "mesh", "transform", "bounds", "triangles")}
    stored = client.app.state.store
    for mesh in (0, 1):
        assert np.array_equal(stored.get(again["id"]).scene.mesh_vertices(mesh),
                              stored.get(mixed_scene).scene.mesh_vertices(mesh))
    # Picks: the original's with its shapes left out, against the copy's, object for object.
    to_copy = {old["id"]: new["id"] for old, new in zip(original, copied)}
    to_copy[-1] = -1
    shapes = [info["id"] for info in scene_objects(client, mixed_scene) if info["kind"] != "mesh"]
    document, binary = parse_glb(glb)
    vertices, faces, owner, local = world_triangles(document, binary)
    origins, directions = rays_at(vertices[faces], 400, np.random.default_rng(3))
    for options, hits in (({}, 300), ({"mask": 2}, 20)):
        before = batch(client, mixed_scene, origins, directions, exclude=shapes, **options)
        after = batch(client, again["id"], origins, directions, **options)
        assert before["hit"].sum() > hits
        assert np.array_equal([to_copy[int(oid)] for oid in before["object"]], after["object"])
        assert np.array_equal(before["triangle"], after["triangle"])
        np.testing.assert_allclose(after["t"][after["hit"]], before["t"][before["hit"]], rtol=1e-12)
    # The GLB's own triangles, flattened and brute-forced in float64, are what the copy picks
    # (the unpickable object left out; rays that graze an edge left to rounding).
    pickable = np.array([info["pickable"] for info in original])[np.searchsorted([o["id"] for o in original], owner)]
    kept = np.flatnonzero(pickable)
    triangle, t, _, _, edge = closest_hits(vertices, faces[kept], origins, directions)
    after = batch(client, again["id"], origins, directions)
    clear = np.abs(edge) > 1e-6
    assert clear.mean() > 0.95
    hit = triangle >= 0
    assert np.array_equal(after["hit"][clear], hit[clear])
    both = clear & hit
    expected = np.array([to_copy[int(oid)] for oid in owner[kept][triangle[both]]])
    assert np.array_equal(after["object"][both], expected)
    assert np.array_equal(after["triangle"][both], local[kept][triangle[both]])
    np.testing.assert_allclose(after["t"][both], t[both], rtol=1e-5, atol=1e-6)


def test_an_instanced_scene_exports_its_mesh_once(client, monkeypatch):
    # A GLB of 1,500 nodes placing one box (made by trimesh: a file without our extras) ...
    scene = trimesh.Scene()
    scene.add_geometry(trimesh.creation.box(), geom_name="box", node_name="n0")
    rng = np.random.default_rng(5)
    for k in range(1, 1500):
        scene.graph.update(frame_to=f"n{k}", matrix=random_transform(rng, spread=50), geometry="box")
    upload = created(client.post("/scenes/upload", files={"file": ("boxes.glb", scene.export(file_type="glb"),
                                                             "model/gltf-binary")}))
    assert len(upload["objects"]) == 1500
    response = client.get(f"/scenes/{upload['id']}/export.glb")
    assert response.status_code == 200
    # ... streamed in blocks, the box written once.
    assert int(response.headers["content-length"]) == len(response.content)
    document, binary = parse_glb(response.content)
    assert len(document["meshes"]) == 1 and len(document["nodes"]) == 1500
    assert {node["mesh"] for node in document["nodes"]} == {0}
    assert [node["extras"]["bvh_pick"]["id"] for node in document["nodes"]] == \
        [info["id"] for info in upload["objects"]]
    assert [node["name"] for node in document["nodes"]] == [info["name"] for info in upload["objects"]]
    assert len(binary) == 8 * 12 + 12 * 12     # 8 float32 vertices, 12 uint32 triangles
    # Past KEPT_NODE_BYTES the nodes are rendered again as they are sent: the same bytes.
    monkeypatch.setattr(glb_writer, "KEPT_NODE_BYTES", 1000)
    again = client.get(f"/scenes/{upload['id']}/export.glb")
    assert again.content == response.content and int(again.headers["content-length"]) == len(again.content)


def test_an_empty_scene_exports_no_nodes(client, triangle_scene):
    client.delete(f"/scenes/{triangle_scene}/objects/0")
    response = client.get(f"/scenes/{triangle_scene}/export.glb")
    document, binary = parse_glb(response.content)
    # glTF's arrays hold at least one item: no nodes, no meshes, a scene without a node list.
    assert "nodes" not in document and "meshes" not in document and binary == b""
    assert document["scenes"] == [{"extras": {"bvh_pick": {"scene": triangle_scene, "name": "one triangle",
                                                           "version": 1, "objects": 0, "without_geometry": {}}}}]
    assert response.headers["x-objects-without-geometry"] == "0"


@pytest.mark.parametrize("side", [4, 80])   # answered at once, and streamed (6,400 vertices)
def test_vertices_and_faces_in_both_forms_are_the_scenes(client, side):
    grid = grid_mesh(side)
    grid["vertices"] = (np.array(grid["vertices"]) * 0.3).tolist()   # not float32 values
    scene_id = created(client.post("/scenes", json={"meshes": [{"name": "grid", **grid}]}))["id"]
    scene = client.app.state.store.get(scene_id).scene
    path = f"/scenes/{scene_id}/meshes/0"
    vertices = client.get(f"{path}/vertices")
    assert vertices.status_code == 200 and vertices.headers["content-type"] == "application/json"
    assert np.array_equal(np.array(vertices.json()["vertices"]), scene.mesh_vertices(0))
    assert list(vertices.json()) == ["vertices"]
    # The JSON routes answer JSON whatever Accept says; the packed forms are the .bin routes.
    faces = client.get(f"{path}/faces", headers=OCTET)
    assert faces.headers["content-type"] == "application/json" and list(faces.json()) == ["faces"]
    assert np.array_equal(np.array(faces.json()["faces"]), scene.mesh_faces(0))
    packed = client.get(f"{path}/vertices.bin")
    assert packed.status_code == 200 and packed.headers["content-type"] == "application/octet-stream"
    assert np.array_equal(np.frombuffer(packed.content, "<f4").reshape(-1, 3), scene.mesh_vertices(0).astype("<f4"))
    packed = client.get(f"{path}/faces.bin")
    assert packed.headers["content-type"] == "application/octet-stream"
    assert np.array_equal(np.frombuffer(packed.content, "<i4").reshape(-1, 3), scene.mesh_faces(0))
    # The binary vertices are the body PUT .../vertices.bin takes: sent back, they change nothing but the version.
    moved = client.put(f"{path}/vertices.bin", content=client.get(f"{path}/vertices.bin").content,
                       headers={"content-type": "application/octet-stream"})
    assert moved.status_code == 200 and moved.json()["vertices"] == side * side
    assert np.array_equal(np.array(client.get(f"{path}/vertices").json()["vertices"]),
                          scene.mesh_vertices(0).astype("<f4").astype(float))


def test_the_glb_is_octet_stream_when_accept_asks_for_that_first(client, triangle_scene):
    """Client generators read application/octet-stream as bytes and drop model/gltf-binary: the route
    declares both, and answers the same bytes as either."""
    path = f"/scenes/{triangle_scene}/export.glb"
    glb = client.get(path)
    assert glb.headers["content-type"] == "model/gltf-binary"
    for accept, media in [(OCTET["accept"], "application/octet-stream"),
                          ("application/octet-stream;q=0.9, */*", "application/octet-stream"),
                          ("model/gltf-binary, application/octet-stream", "model/gltf-binary"),
                          ("application/octet-stream; q=0, */*", "model/gltf-binary")]:
        answer = client.get(path, headers={"accept": accept})
        assert answer.headers["content-type"] == media and answer.content == glb.content, accept


def test_unknown_scenes_and_meshes_are_404(client, triangle_scene):
    for path in [f"/scenes/{triangle_scene}/meshes/1/{name}" for name in ("vertices", "faces", "vertices.bin",
                                                                          "faces.bin")]:
        response = client.get(path)
        assert response.status_code == 404
        assert response.json() == {"detail": f"no mesh 1 in scene {triangle_scene!r}"}
    unknown = "0" * 32
    for path in ("/export.glb", "/meshes/0/vertices", "/meshes/0/faces", "/meshes/0/vertices.bin",
                 "/meshes/0/faces.bin"):
        response = client.get(f"/scenes/{unknown}{path}")
        assert response.status_code == 404 and response.json() == {"detail": f"no scene {unknown!r}"}


def test_the_routes_take_the_api_key(make_client):
    client = make_client(api_key="secret")
    scene_id = created(client.post("/scenes", headers={"Authorization": "Bearer secret"},
                                   json={"meshes": [{"vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]],
                                                     "faces": [[0, 1, 2]]}]}))["id"]
    for path in ("export.glb", "meshes/0/vertices", "meshes/0/faces", "meshes/0/vertices.bin", "meshes/0/faces.bin"):
        assert client.get(f"/scenes/{scene_id}/{path}").status_code == 401
        assert client.get(f"/scenes/{scene_id}/{path}", headers={"Authorization": "Bearer secret"}).status_code == 200
