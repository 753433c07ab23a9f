"""``/scenes``: create (file or JSON), list, read, delete, and every refusal."""

import pytest

import sample_meshes
from tests.conftest import TRIANGLE

#: Each test here runs against the embedded store and against an object store (see tests/conftest.py).
pytestmark = pytest.mark.both_stores


def upload(client, filename: str, content: bytes, content_type: str = "application/octet-stream", **form):
    return client.post("/scenes/upload", files={"file": (filename, content, content_type)}, data=form)


def test_create_from_json_answers_201_with_objects_and_bounds(client):
    response = client.post("/scenes", json={"name": "two", "meshes": [
        {"name": "a", **TRIANGLE},
        {"name": "b", **TRIANGLE, "transform": [[1, 0, 0, 5], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]}]})
    assert response.status_code == 201
    scene = response.json()
    assert len(scene["id"]) == 32 and scene["name"] == "two"
    assert scene["triangles"] == 2 and scene["build_ms"] >= 0
    assert [(o["id"], o["name"], o["mesh"], o["triangles"], o["kind"]) for o in scene["objects"]] == [
        (0, "a", 0, 1, "mesh"), (1, "b", 0, 1, "mesh")]
    assert scene["objects"][1]["transform"][0] == [1.0, 0.0, 0.0, 5.0]
    # Exact: no float32 padding such as -2.8e-45 where the triangle starts at 0.
    assert scene["bounds"] == [[0.0, 0.0, 0.0], [6.0, 1.0, 0.0]]
    assert [o["bounds"] for o in scene["objects"]] == [[[0.0, 0.0, 0.0], [1.0, 1.0, 0.0]],
                                                       [[5.0, 0.0, 0.0], [6.0, 1.0, 0.0]]]
    assert client.get(f"/scenes/{scene['id']}").json()["bounds"] == scene["bounds"]


def test_scene_without_objects_has_null_bounds(client, triangle_scene):
    # An empty scene cannot be created (tests/test_service_uploads.py); it can be emptied.
    assert client.delete(f"/scenes/{triangle_scene}/objects/0").status_code == 204
    scene = client.get(f"/scenes/{triangle_scene}").json()
    assert scene["objects"] == [] and scene["bounds"] is None


@pytest.mark.parametrize("name", sample_meshes.FILES)
def test_create_from_each_sample_file(client, name):
    response = upload(client, name, sample_meshes.path(name).read_bytes())
    assert response.status_code == 201, response.text
    scene = response.json()
    assert scene["name"] == name.rsplit(".", 1)[0]
    assert scene["triangles"] > 0 and scene["objects"]


def test_upload_name_field_and_content_type_without_suffix(client):
    response = upload(client, "mesh", sample_meshes.path("gear.stl").read_bytes(), "model/stl", name="cog")
    assert response.status_code == 201, response.text
    assert response.json()["name"] == "cog"


def test_list_get_and_delete(client, triangle_scene):
    listed = client.get("/scenes").json()["scenes"]
    assert [(s["id"], s["object_count"], s["triangles"]) for s in listed] == [(triangle_scene, 1, 1)]
    assert client.get(f"/scenes/{triangle_scene}").json()["objects"][0]["name"] == "tri"
    assert client.delete(f"/scenes/{triangle_scene}").status_code == 204
    response = client.get(f"/scenes/{triangle_scene}")
    assert response.status_code == 404 and triangle_scene in response.json()["detail"]
    assert client.delete(f"/scenes/{triangle_scene}").status_code == 404
    assert client.get("/scenes").json()["scenes"] == []


@pytest.mark.parametrize("scene_id", ["0" * 32, "not-a-scene", "..%2f..%2fetc", "%2e%2e", "A" * 32, "x" * 500])
def test_unknown_or_malformed_scene_ids_are_404(client, scene_id, tmp_path):
    for method, path in (("GET", ""), ("DELETE", ""), ("POST", "/pick"), ("POST", "/objects")):
        response = client.request(method, f"/scenes/{scene_id}{path}", json={})
        assert response.status_code == 404, (method, path, response.text)
        assert response.json()["detail"].startswith(("no scene", "no route"))
    # Nothing was written for them (the store's directory: in S3 mode, this process's cache).
    store = client.app.state.store
    assert sorted(p.name for p in store.data_dir.iterdir()) == ["changes", "scenes", "staging", "trash"]
    assert list(store.scenes_dir.iterdir()) == []


@pytest.mark.parametrize("filename,content_type,expected", [
    ("points.xyz", "application/octet-stream", "unsupported file type '.xyz'"),
    ("notes.docx", "application/octet-stream", "unsupported file type '.docx'"),
    ("mesh", "application/octet-stream", "cannot tell the type"),
    ("mesh", "image/png", "cannot tell the type of file 'mesh' from its content type 'image/png'"),
])
def test_unknown_file_types_are_415(client, filename, content_type, expected):
    response = upload(client, filename, b"solid x\nendsolid x\n", content_type)
    assert response.status_code == 415
    assert expected in response.json()["detail"]


def test_unknown_body_type_is_415(client):
    response = client.post("/scenes", content=b"hello", headers={"content-type": "text/plain"})
    assert response.status_code == 415 and "unsupported content type 'text/plain'" in response.json()["detail"]


TORUS = sample_meshes.path("torus.ply").read_bytes()


@pytest.mark.parametrize("filename,content,expected", [
    ("empty.obj", b"", "is empty"),
    ("truncated.ply", TORUS[: len(TORUS) // 2], "truncated.ply"),
    ("header-only.ply", TORUS[:200], "header-only.ply"),
    ("noise.stl", bytes(range(256)) * 3, "noise.stl"),
    ("points.obj", b"v 0 0 0\nv 1 0 0\nv 0 1 0\n", "no triangles"),
    ("garbage.glb", b"glTF\x02\x00\x00\x00garbage", "garbage.glb"),
    ("nan.obj", b"v 0 0 nan\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", "nan.obj"),
])
def test_unreadable_files_are_422(client, filename, content, expected):
    response = upload(client, filename, content)
    assert response.status_code == 422, response.text
    assert expected in response.json()["detail"]
    assert client.get("/scenes").json()["scenes"] == []


@pytest.mark.parametrize("body,expected", [
    ({"meshes": [{"vertices": [[0, 0, "NaN"], [1, 0, 0], [0, 1, 0]], "faces": [[0, 1, 2]]}]},
     "meshes[0].vertices[0][2]: Input should be a valid number, got 'NaN'"),
    ({"meshes": [{"vertices": [[0, 0], [1, 0, 0], [0, 1, 0]], "faces": [[0, 1, 2]]}]},
     "meshes[0].vertices[0]: List should have at least 3 items"),
    ({"meshes": [{"vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]], "faces": [[0, 1, 3]]}]},
     "meshes[0].faces[0][2]: vertex 3 does not exist, the mesh has 3 vertices (0..2)"),
    ({"meshes": [{"vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]], "faces": [[0, 1, -1]]}]},
     "meshes[0].faces[0][2]: Input should be greater than or equal to 0"),
    ({"meshes": [{**TRIANGLE, "transform": [[0] * 4] * 4}]}, "meshes[0]: "),
    ({"meshes": [{**TRIANGLE, "colour": "red"}]}, "meshes[0].colour: unknown field"),
    ({"meshes": [{"vertices": [[0, 0, True], [1, 0, 0], [0, 1, 0]], "faces": [[0, 1, 2]]}]},
     "got True"),
    ({"meshes": "none"}, "meshes: Input should be a valid array"),
])
def test_invalid_json_scenes_are_422(client, body, expected):
    response = client.post("/scenes", json=body)
    assert response.status_code == 422, response.text
    assert expected in response.json()["detail"]


def test_json_nan_literals_and_broken_json_are_422(client):
    for text, expected in ((b'{"meshes": [{"vertices": [[0, 0, NaN], [1, 0, 0], [0, 1, 0]], "faces": [[0, 1, 2]]}]}',
                            "finite number"),
                           (b'{"meshes": [{"vertices": [[0, 0, Infinity]', "not valid JSON"),
                           (b'', "not valid JSON"),
                           (b'[1, 2]', "Input should be an object")):
        response = client.post("/scenes", content=text, headers={"content-type": "application/json"})
        assert response.status_code == 422, text
        assert expected in response.json()["detail"], response.json()


def test_multipart_without_file_is_422(client):
    response = client.post("/scenes/upload", data={"name": "x"}, files={"other": ("a.obj", b"v 0 0 0", "text/plain")})
    assert response.status_code == 422 and "'file' part" in response.json()["detail"]
