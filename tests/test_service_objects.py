"""``/scenes/{id}/objects``: add a file, an inline mesh, an instance or a shape; change; remove."""

import numpy as np
import pytest

import sample_meshes
from tests.conftest import TRIANGLE

#: Each test here runs against the embedded store and against an object store (see tests/conftest.py).
pytestmark = pytest.mark.both_stores

MOVE = [[1, 0, 0, 2], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]


def objects_of(client, scene_id):
    return {o["id"]: o for o in client.get(f"/scenes/{scene_id}").json()["objects"]}


def test_add_inline_mesh_instance_and_shapes(client, triangle_scene):
    path = f"/scenes/{triangle_scene}/objects"
    mesh = client.post(path, json={**TRIANGLE, "name": "second", "transform": MOVE, "mask": 4, "pickable": False})
    assert mesh.status_code == 201, mesh.text
    [added] = mesh.json()["objects"]
    assert (added["id"], added["name"], added["mask"], added["pickable"]) == (1, "second", 4, False)
    instance = client.post(path, json={"mesh": 0, "name": "copy", "transform": MOVE}).json()["objects"][0]
    assert instance["mesh"] == 0 and instance["transform"][0][3] == 2.0
    shapes = [
        {"shape": "sphere", "radius": 0.5},
        {"shape": "box", "size": [1, 2, 3]},
        {"shape": "quad", "size": [1, 2]},
        {"shape": "polygon", "vertices": [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]},
    ]
    for body in shapes:
        response = client.post(path, json=body)
        assert response.status_code == 201, response.text
        [shape] = response.json()["objects"]
        assert shape["kind"] == body["shape"] and shape["mesh"] is None and shape["triangles"] == 0
    assert len(objects_of(client, triangle_scene)) == 7


def test_add_file_places_every_node(client, triangle_scene):
    with open(sample_meshes.path("torus.ply"), "rb") as stream:
        response = client.post(f"/scenes/{triangle_scene}/objects/upload", files={"file": ("torus.ply", stream)},
                               data={"transform": "[[1,0,0,10],[0,1,0,0],[0,0,1,0],[0,0,0,1]]"})
    assert response.status_code == 201, response.text
    [torus] = response.json()["objects"]
    assert torus["triangles"] > 1000 and torus["bounds"][0][0] > 8
    hit = client.post(f"/scenes/{triangle_scene}/pick", json={"origin": [11, 0, 5], "direction": [0, 0, -1]}).json()
    assert hit["object"]["id"] == torus["id"]


@pytest.mark.parametrize("body,status,expected", [
    ({"colour": "red"}, 422, "give an inline mesh (vertices and faces), an instance of an existing mesh (mesh), "
                             "or a shape (shape)"),
    ({"mesh": 7}, 404, "no mesh 7"),
    ({"shape": "cone"}, 422, "shape: Input should be 'sphere', 'box', 'quad' or 'polygon'"),
    ({"shape": "sphere", "size": [1, 1, 1]}, 422, "a sphere takes radius, not size"),
    ({"shape": "sphere", "radius": -1}, 422, "radius: Input should be greater than 0"),
    ({"shape": "box", "size": [1, 1]}, 422, "size of a box has 3 numbers, got 2"),
    ({"shape": "polygon"}, 422, "a polygon needs vertices"),
    ({"shape": "polygon", "vertices": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]}, 422, "polygon"),
    ({"vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]], "faces": [[0, 1, 5]]}, 422, "faces"),
    ({"mesh": 0, "transform": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]]}, 422, "transform"),
    ({"mesh": 0, "transform": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]]}, 422, "transform"),
    ({"mesh": 0, "name": "x" * 300}, 422, "name: String should have at most 256 characters"),
])
def test_refused_additions_change_nothing(client, triangle_scene, body, status, expected):
    before = objects_of(client, triangle_scene)
    response = client.post(f"/scenes/{triangle_scene}/objects", json=body)
    assert response.status_code == status, response.text
    assert expected in response.json()["detail"]
    assert objects_of(client, triangle_scene) == before


def test_refused_file_additions(client, triangle_scene):
    path = f"/scenes/{triangle_scene}/objects/upload"
    response = client.post(path, files={"file": ("a.xyz", b"1 2 3")})
    assert response.status_code == 415
    response = client.post(path, files={"file": ("a.obj", b"v 0 0 0\n")})
    assert response.status_code == 422 and "a.obj" in response.json()["detail"]
    response = client.post(path, files={"file": ("t.ply", sample_meshes.path("torus.ply").read_bytes())},
                           data={"transform": "[[1,0,0]]"})
    assert response.status_code == 422 and response.json()["detail"].startswith("form field transform: ")
    assert list(objects_of(client, triangle_scene)) == [0]


def test_patch_changes_all_given_fields(client, triangle_scene):
    path = f"/scenes/{triangle_scene}/objects/0"
    response = client.patch(path, json={"transform": MOVE, "name": "moved", "mask": 6, "pickable": False})
    assert response.status_code == 200, response.text
    changed = response.json()
    assert (changed["name"], changed["mask"], changed["pickable"]) == ("moved", 6, False)
    assert changed["bounds"][0][0] == pytest.approx(2.0, abs=1e-6)
    assert client.get(path).json() == changed
    assert client.patch(path, json={"name": None}).json()["name"] is None


@pytest.mark.parametrize("body,status,expected", [
    ({}, 422, "nothing to change"),
    ({"transform": [[0] * 4] * 4, "name": "never"}, 422, "transform"),
    ({"transform": None}, 422, "transform cannot be null"),
    ({"mask": 2 ** 32}, 422, "mask: Input should be less than or equal to 4294967295"),
    ({"pickable": "yes"}, 422, "pickable: Input should be a valid boolean"),
    ({"name": 5}, 422, "name: Input should be a valid string"),
])
def test_refused_patches_change_nothing(client, triangle_scene, body, status, expected):
    before = objects_of(client, triangle_scene)
    response = client.patch(f"/scenes/{triangle_scene}/objects/0", json=body)
    assert response.status_code == status, response.text
    assert expected in response.json()["detail"]
    assert objects_of(client, triangle_scene) == before


def test_unknown_objects_are_404(client, triangle_scene):
    for method in ("GET", "PATCH", "DELETE"):
        response = client.request(method, f"/scenes/{triangle_scene}/objects/5", json={"name": "x"})
        assert response.status_code == 404 and "no object 5" in response.json()["detail"], method
    response = client.get(f"/scenes/{triangle_scene}/objects/zero")
    assert response.status_code == 422 and "object_id: Input should be a valid integer" in response.json()["detail"]
    # "¹" is a digit to str.isdigit() but not to int(): refused in words, not a 500.
    response = client.patch(f"/scenes/{triangle_scene}/objects/%C2%B9", json={"name": "x"})
    assert response.status_code == 422 and "object_id: Input should be a valid integer" in response.json()["detail"]
    huge = 2 ** 119
    response = client.patch(f"/scenes/{triangle_scene}/objects",
                            json=[{"id": 0, "name": "a"}, {"id": huge, "transform": np.eye(4).tolist()}])
    assert response.status_code == 422
    assert response.json()["detail"] == f"[1].id: Input should be less than or equal to {2 ** 63 - 1}, got {huge}"


def test_delete_object_and_ids_are_not_reused(client, triangle_scene):
    assert client.delete(f"/scenes/{triangle_scene}/objects/0").status_code == 204
    assert client.delete(f"/scenes/{triangle_scene}/objects/0").status_code == 404
    assert objects_of(client, triangle_scene) == {}
    assert client.post(f"/scenes/{triangle_scene}/pick", json={"origin": [0.2, 0.2, 1],
                                                               "direction": [0, 0, -1]}).json() == {"hit": False}
    added = client.post(f"/scenes/{triangle_scene}/objects", json={"mesh": 0}).json()["objects"][0]
    assert added["id"] == 1
