"""Batch edits (``PATCH /scenes/{id}/objects``, JSON and binary) and vertex updates
(``PUT /scenes/{id}/meshes/{mesh}/vertices``): all or nothing, refusals in our words."""

import numpy as np
import pytest

from service.queries.editing import BINARY_MOVE
from tests.conftest import TRIANGLE
from testkit.meshes import pick_rays, sample_mesh
from testkit.reference.raycast import closest_hits

#: Each test here runs against the embedded store and against an object store (see tests/conftest.py).
pytestmark = pytest.mark.both_stores

OCTET = {"content-type": "application/octet-stream"}


def translation(x: float, y: float = 0.0) -> list:
    return [[1, 0, 0, x], [0, 1, 0, y], [0, 0, 1, 0], [0, 0, 0, 1]]


@pytest.fixture
def row_scene(client) -> str:
    """Five triangles: object k at x = 2k."""
    objects = [{"mesh": 0, "transform": translation(2.0 * k), "name": f"o{k}"} for k in range(1, 5)]
    scene_id = client.post("/scenes", json={"meshes": [{"name": "o0", **TRIANGLE}]}).json()["id"]
    for entry in objects:
        assert client.post(f"/scenes/{scene_id}/objects", json=entry).status_code == 201
    return scene_id


def objects_of(client, scene_id) -> dict:
    return {o["id"]: o for o in client.get(f"/scenes/{scene_id}").json()["objects"]}


def binary_moves(ids, rows) -> bytes:
    records = np.zeros(len(ids), BINARY_MOVE)
    records["id"] = ids
    records["rows"] = np.asarray(rows, np.float32)
    return records.tobytes()


def test_a_json_batch_changes_every_entry_in_one_edit(client, row_scene):
    before = objects_of(client, row_scene)
    version = client.patch(f"/scenes/{row_scene}/objects/1", json={"name": "one"}).json()
    assert version["name"] == "one"
    answer = client.patch(f"/scenes/{row_scene}/objects", json=[
        {"id": 1, "transform": translation(20.0)}, {"id": 3, "pickable": False, "mask": 2, "name": "three"}])
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["count"] == 2 and [o["id"] for o in body["objects"]] == [1, 3]
    after = objects_of(client, row_scene)
    assert after[1]["transform"] == translation(20.0) and after[1]["name"] == "one"
    assert (after[3]["pickable"], after[3]["mask"], after[3]["name"]) == (False, 2, "three")
    assert after[3]["transform"] == before[3]["transform"]
    assert body["version"] == client.patch(f"/scenes/{row_scene}/objects", json=[{"id": 4, "name": "x"}]
                                           ).json()["version"] - 1
    hit = client.post(f"/scenes/{row_scene}/pick", json={"origin": [20.2, 0.2, 1], "direction": [0, 0, -1]}).json()
    assert hit["object"]["id"] == 1


def test_a_binary_batch_moves_objects(client, row_scene):
    rows = [np.array(translation(30.0 + k))[:3] for k in range(3)]
    answer = client.patch(f"/scenes/{row_scene}/objects.bin", content=binary_moves([0, 2, 4], rows), headers=OCTET)
    assert answer.status_code == 200, answer.text
    assert answer.json()["count"] == 3 and answer.json()["objects"] is None
    after = objects_of(client, row_scene)
    assert [after[k]["transform"][0][3] for k in (0, 2, 4)] == [30.0, 31.0, 32.0]
    assert after[1]["transform"][0][3] == 2.0


@pytest.mark.parametrize("body, status, message", [
    ([{"id": 1, "transform": translation(9.0)}, {"id": 99, "name": "x"}], 404, "entry 1: no object 99 in this scene"),
    ([{"id": 1, "name": "a"}, {"id": 1, "mask": 1}], 422, "body[1]: object 1 appears twice in the batch"),
    ([{"id": 2, "transform": translation(9.0)}, {"id": 1, "transform": [[0, 0, 0, 0]] * 3 + [[0, 0, 0, 1]]}], 422,
     "transforms[1] (object 1): "),
    ([], 422, "at least 1 item"),
    ([{"id": 1}], 422, "nothing to change: give transform, pickable, mask or name"),
    ([{"id": 1, "mask": None}], 422, "mask cannot be null"),
    ({"id": 1, "name": "x"}, 422, 'a batch is a JSON list of entries {"id", "transform"?, '),
])
def test_a_refused_json_batch_changes_nothing(client, row_scene, body, status, message):
    before = client.get(f"/scenes/{row_scene}").json()
    answer = client.patch(f"/scenes/{row_scene}/objects", json=body)
    assert answer.status_code == status, answer.text
    assert message in answer.json()["detail"]
    assert client.get(f"/scenes/{row_scene}").json() == before


@pytest.mark.parametrize("body, message", [
    (b"", "a binary batch is records of 52 bytes (int32 id, 12 float32); got 0 bytes"),
    (b"\0" * 53, "got 53 bytes"),
    (binary_moves([1, -3], [np.eye(4)[:3]] * 2), "record 1: object id -3 is negative"),
    (binary_moves([1, 2], [np.eye(4)[:3], np.full((3, 4), np.nan)]),
     "record 1 (object 2): the transform has a NaN or infinite entry"),
    (binary_moves([1, 7], [np.eye(4)[:3]] * 2), "transforms[1] (object 7): no object 7 in this scene"),
])
def test_a_refused_binary_batch_changes_nothing(client, row_scene, body, message):
    before = client.get(f"/scenes/{row_scene}").json()
    answer = client.patch(f"/scenes/{row_scene}/objects.bin", content=body, headers=OCTET)
    assert answer.status_code in (404, 422), answer.text
    assert message in answer.json()["detail"]
    assert client.get(f"/scenes/{row_scene}").json() == before


def test_a_batch_in_another_media_type_is_refused(client, row_scene):
    path = f"/scenes/{row_scene}/objects"
    answer = client.patch(path, content=b"id=1", headers={"content-type": "text/plain"})
    assert answer.status_code == 415
    assert answer.json() == {"detail": "unsupported content type 'text/plain': send Content-Type: application/json"}
    # Each form has its own route, and each names the other.
    answer = client.patch(path, content=binary_moves([0], [np.eye(4)[:3]]), headers=OCTET)
    assert answer.status_code == 415 and answer.json() == {
        "detail": f"this route reads application/json: send application/octet-stream to PATCH {path}.bin"}
    answer = client.patch(f"{path}.bin", json=[{"id": 0, "name": "x"}])
    assert answer.status_code == 415 and answer.json() == {
        "detail": f"this route reads application/octet-stream: send application/json to PATCH {path}"}


def test_a_batch_for_an_unknown_scene_is_404(client):
    answer = client.patch(f"/scenes/{'0' * 32}/objects", json=[{"id": 0, "name": "x"}])
    assert answer.status_code == 404 and "no scene" in answer.json()["detail"]


def test_new_vertices_are_picked_as_a_fresh_build_would_be(client):
    vertices, faces = sample_mesh("torus.ply")
    scene_id = client.post("/scenes", json={"meshes": [{"vertices": vertices.tolist(), "faces": faces.tolist()}]}
                           ).json()["id"]
    offset = 10.0 * np.abs(vertices).max()
    assert client.post(f"/scenes/{scene_id}/objects", json={"mesh": 0, "transform": translation(offset)}
                       ).status_code == 201
    rng = np.random.default_rng(7)
    # Float32 on the wire: the engine then holds exactly these values.
    bulged = (vertices * (1.0 + 0.3 * rng.random((vertices.shape[0], 1)))).astype(np.float32)
    answer = client.put(f"/scenes/{scene_id}/meshes/0/vertices.bin", content=bulged.tobytes(), headers=OCTET)
    assert answer.status_code == 200, answer.text
    assert answer.json()["objects"] == [0, 1] and answer.json()["vertices"] == vertices.shape[0]
    for shift, oid in ((0.0, 0), (offset, 1)):
        placed = bulged.astype(np.float64) + [shift, 0, 0]
        origins, directions = pick_rays(placed, 200, rng)
        triangle, t, _, _, edge = closest_hits(placed, faces, origins, directions)
        clear = np.abs(edge) > 1e-9
        answer = client.post(f"/scenes/{scene_id}/pick/batch", json={"origins": origins[clear].tolist(),
                                                               "directions": directions[clear].tolist()})
        assert answer.status_code == 200, answer.text
        columns = answer.json()
        assert columns["triangle"] == triangle[clear].tolist()
        assert columns["object"] == np.where(triangle[clear] >= 0, oid, -1).tolist()
        hit = triangle[clear] >= 0
        assert hit.sum() > 100
        assert np.allclose(np.array(columns["t"], float)[hit], t[clear][hit], rtol=1e-9, atol=0)


@pytest.mark.parametrize("content, headers, status, message", [
    ({"vertices": [[0, 0, 0], [1, 0, 0]]}, None, 422, "refit needs the mesh's 3 vertices, got 2"),
    (np.zeros((4, 3), np.float32).tobytes(), OCTET, 422, "refit needs the mesh's 3 vertices, got 4"),
    (np.array([[0, 0, 0], [1, 0, np.nan], [0, 1, 0]], np.float32).tobytes(), OCTET, 422,
     "vertex 1 has a NaN or infinite coordinate"),
    (np.array([[0, 0, 0], [np.inf, 0, 0], [0, 1, 0]], np.float32).tobytes(), OCTET, 422,
     "vertex 1 has a NaN or infinite coordinate"),
    (b"\0" * 13, OCTET, 422, "binary vertices are 12 bytes each (three float32); got 13 bytes"),
    ({"vertices": [[0, 0, 0], [1, 0, "NaN"], [0, 1, 0]]}, None, 422, "vertices[1][2]"),
])
def test_refused_vertices_change_nothing(client, triangle_scene, content, headers, status, message):
    before = client.get(f"/scenes/{triangle_scene}").json()
    url = f"/scenes/{triangle_scene}/meshes/0/vertices"
    if headers is None:
        answer = client.put(url, json=content)
    else:
        answer = client.put(f"{url}.bin", content=content, headers=headers)
    assert answer.status_code == status, answer.text
    assert message in answer.json()["detail"]
    assert client.get(f"/scenes/{triangle_scene}").json() == before


def test_vertices_of_an_unknown_mesh_are_404(client, triangle_scene):
    answer = client.put(f"/scenes/{triangle_scene}/meshes/5/vertices", json={"vertices": TRIANGLE["vertices"]})
    assert answer.status_code == 404 and "mesh 5" in answer.json()["detail"]
