"""``/pick``, ``/pick/batch`` (JSON and binary), ``/pick/camera`` and ``/select``: exact answers
on small inline scenes, and every refusal."""

import numpy as np
import pytest

from bvh.camera import look_at, perspective
from service.api.bodies import parse_plain_ray
from service.queries.picking import RECORD
from service.api.schemas import PickRequest
from tests.conftest import TRIANGLE

SCALED = [[2, 0, 0, 5], [0, 2, 0, 0], [0, 0, 2, 0], [0, 0, 0, 1]]


def pick(client, scene_id, **body):
    response = client.post(f"/scenes/{scene_id}/pick", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_single_pick_fields(client, triangle_scene):
    hit = pick(client, triangle_scene, origin=[0.1, 0.7, 1.0], direction=[0, 0, -2])
    assert hit["hit"] is True
    assert hit["t"] == pytest.approx(0.5) and hit["distance"] == pytest.approx(1.0)
    assert hit["point"] == pytest.approx([0.1, 0.7, 0.0])
    assert hit["object"] == {"id": 0, "name": "tri"}
    assert hit["mesh"] == 0 and hit["triangle"] == 0
    assert hit["barycentric"] == pytest.approx([0.2, 0.1, 0.7])
    assert hit["normal"] == pytest.approx([0, 0, 1]) and hit["shading_normal"] == pytest.approx([0, 0, 1])
    assert hit["uv"] is None and hit["front_face"] is True
    assert hit["nearest_vertex"]["index"] == 2 and hit["nearest_vertex"]["point"] == pytest.approx([0, 1, 0])
    assert hit["nearest_edge"] == [2, 0]


def test_miss_is_only_hit_false(client, triangle_scene):
    assert pick(client, triangle_scene, origin=[2, 2, 1], direction=[0, 0, -1]) == {"hit": False}


def test_snapping_is_in_world_space_after_a_move(client, triangle_scene):
    assert client.patch(f"/scenes/{triangle_scene}/objects/0", json={"transform": SCALED}).status_code == 200
    hit = pick(client, triangle_scene, origin=[5.2, 1.4, 3], direction=[0, 0, -1])
    assert hit["t"] == pytest.approx(3.0)
    assert hit["barycentric"] == pytest.approx([0.2, 0.1, 0.7])
    assert hit["nearest_vertex"] == {"index": 2, "point": pytest.approx([5.0, 2.0, 0.0])}
    assert hit["nearest_edge"] == [2, 0]


def test_shape_hits_have_no_mesh_fields(client, triangle_scene):
    added = client.post(f"/scenes/{triangle_scene}/objects", json={
        "shape": "sphere", "radius": 1.0, "name": "ball",
        "transform": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, -10], [0, 0, 0, 1]]})
    assert added.status_code == 201, added.text
    hit = pick(client, triangle_scene, origin=[0, 0, -5], direction=[0, 0, -1])
    assert hit["object"] == {"id": 1, "name": "ball"} and hit["t"] == pytest.approx(4.0)
    assert hit["normal"] == pytest.approx([0, 0, 1])
    for field in ("mesh", "triangle", "barycentric", "nearest_vertex", "nearest_edge", "uv"):
        assert hit[field] is None, field
    through = pick(client, triangle_scene, origin=[0, 0, -5], direction=[0, 0, -1], all_hits=True)["hits"]
    # In and out of the ball: outward normals, the ray meeting the front and then the back.
    assert [(h["object"]["id"], h["t"], h["mesh"], h["normal"], h["shading_normal"], h["uv"], h["front_face"])
            for h in through] == [
        (1, pytest.approx(4.0), None, pytest.approx([0, 0, 1]), pytest.approx([0, 0, 1]), None, True),
        (1, pytest.approx(6.0), None, pytest.approx([0, 0, -1]), pytest.approx([0, 0, -1]), None, False)]
    assert through[0] == hit


def test_all_hits_sorted_by_t(client, triangle_scene):
    client.post(f"/scenes/{triangle_scene}/objects", json={
        "mesh": 0, "name": "below", "transform": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, -1], [0, 0, 0, 1]]})
    answer = pick(client, triangle_scene, origin=[0.2, 0.2, 1], direction=[0, 0, -1], all_hits=True)
    assert [(h["object"]["name"], h["t"]) for h in answer["hits"]] == [("tri", pytest.approx(1.0)),
                                                                       ("below", pytest.approx(2.0))]
    assert answer["hits"][1]["point"] == pytest.approx([0.2, 0.2, -1.0])
    assert answer["hits"][1]["normal"] == pytest.approx([0, 0, 1])
    assert pick(client, triangle_scene, origin=[5, 5, 1], direction=[0, 0, -1], all_hits=True) == {"hits": []}


#: The unit triangle with texture coordinates and vertex normals, as an OBJ file.
TRIANGLE_OBJ = b"""v 0 0 0
v 1 0 0
v 0 1 0
vt 0 0
vt 1 0
vt 0 1
vn 0 0 1
vn 0 0 1
vn 0 0.6 0.8
f 1/1/1 2/2/2 3/3/3
"""


def test_all_hits_carry_normals_and_uvs_as_single_picks_do(client):
    """Each crossing of an all_hits pick is the result a single pick gives for
    it: the first one equal to the single pick, normals and uv filled alike."""
    created = client.post("/scenes/upload", files={"file": ("tri.obj", TRIANGLE_OBJ)})
    assert created.status_code == 201, created.text
    scene = created.json()["id"]
    below = client.post(f"/scenes/{scene}/objects", json={
        "mesh": 0, "name": "below", "transform": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, -1], [0, 0, 0, 1]]})
    assert below.status_code == 201, below.text
    down = {"origin": [0.25, 0.5, 1], "direction": [0, 0, -2]}
    single = pick(client, scene, **down)
    through = pick(client, scene, **down, all_hits=True)["hits"]
    assert len(through) == 2 and through[0] == single
    second = pick(client, scene, **down, tmin=0.75)
    assert through[1] == second and second["object"]["name"] == "below"
    for hit in through:
        # Vertex normals (0, 0, 1), (0, 0, 1), (0, 0.6, 0.8) weighted 0.25, 0.25, 0.5.
        assert hit["shading_normal"] == pytest.approx(np.array([0, 0.3, 0.9]) / np.hypot(0.3, 0.9))
        assert hit["uv"] == pytest.approx([0.25, 0.5]) and hit["normal"] == pytest.approx([0, 0, 1])
        assert hit["front_face"] is True


def test_pick_options(client, triangle_scene):
    scene = triangle_scene
    client.post(f"/scenes/{scene}/objects", json={
        "mesh": 0, "name": "below", "transform": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, -1], [0, 0, 0, 1]]})
    down = {"origin": [0.2, 0.2, 1], "direction": [0, 0, -1]}
    assert pick(client, scene, **down, tmax=0.5) == {"hit": False}
    assert pick(client, scene, **down, tmin=1.5)["object"]["id"] == 1
    assert pick(client, scene, **down, exclude=[0])["object"]["id"] == 1
    assert pick(client, scene, **down, objects=[1])["object"]["id"] == 1
    assert client.patch(f"/scenes/{scene}/objects/0", json={"mask": 2}).status_code == 200
    assert pick(client, scene, **down, mask=1)["object"]["id"] == 1
    assert pick(client, scene, **down, mask=2)["object"]["id"] == 0
    up = {"origin": [0.2, 0.2, -0.5], "direction": [0, 0, 1]}
    client.delete(f"/scenes/{scene}/objects/1")
    assert pick(client, scene, **up)["front_face"] is False
    assert pick(client, scene, **up, cull_backfaces=True) == {"hit": False}
    assert client.patch(f"/scenes/{scene}/objects/0", json={"pickable": False}).status_code == 200
    assert pick(client, scene, **down) == {"hit": False}


@pytest.mark.parametrize("body,expected", [
    ({"origin": [0, 0, "NaN"], "direction": [0, 0, -1]}, "origin[2]: Input should be a valid number, got 'NaN'"),
    ({"origin": [0, 0, "1"], "direction": [0, 0, -1]}, "origin[2]: Input should be a valid number, got '1'"),
    ({"origin": [0, 0, 1], "direction": [0, 0, "-inf"]}, "direction[2]: Input should be a valid number"),
    ({"origin": [0, 0, 1], "direction": [0, 0, 0]}, "direction must not be the zero vector"),
    ({"origin": [0, 0], "direction": [0, 0, -1]}, "origin: List should have at least 3 items after validation, not 2"),
    ({"origin": [0, 0, 1, 1], "direction": [0, 0, -1]}, "origin: List should have at most 3 items"),
    ({"origin": [0, 0, True], "direction": [0, 0, -1]}, "origin[2]: Input should be a valid number, got True"),
    ({"origin": "here", "direction": [0, 0, -1]}, "origin: Input should be a valid array"),
    ({"direction": [0, 0, -1]}, "origin: Field required"),
    ({"origin": [0, 0, 1], "direction": [0, 0, -1], "tmin": 2, "tmax": 1}, "tmax (1.0) must not be less than"),
    ({"origin": [0, 0, 1], "direction": [0, 0, -1], "tmin": -1}, "tmin: Input should be greater than or equal"),
    ({"origin": [0, 0, 1], "direction": [0, 0, -1], "mask": -1}, "mask: Input should be greater than or equal"),
    ({"origin": [0, 0, 1], "direction": [0, 0, -1], "colour": 1}, "colour: unknown field"),
    ({"origin": [0, 0, 1e31], "direction": [0, 0, -1]}, "origins must lie within"),
])
def test_invalid_picks_are_422(client, triangle_scene, body, expected):
    response = client.post(f"/scenes/{triangle_scene}/pick", json=body)
    assert response.status_code == 422, response.text
    assert expected in response.json()["detail"]


@pytest.mark.parametrize("text,expected", [
    (b'{"origin": [0, 0, NaN], "direction": [0, 0, -1]}', "origin[2]: Input should be a finite number"),
    (b'{"origin": [0, 0, 1e999], "direction": [0, 0, -1]}', "origin[2]: Input should be a finite number"),
    (b'{"origin": [0, 0, 1], "direction": [0, 0, -Infinity]}', "direction[2]: Input should be a finite number"),
    (b'{"origin": [0, 0, 1], "direction": ', "not valid JSON"),
    (b'', "not valid JSON"),
])
def test_non_finite_and_broken_json_are_422(client, triangle_scene, text, expected):
    response = client.post(f"/scenes/{triangle_scene}/pick", content=text, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert expected in response.json()["detail"]


def test_unknown_object_filter_is_404(client, triangle_scene):
    response = client.post(f"/scenes/{triangle_scene}/pick",
                           json={"origin": [0, 0, 1], "direction": [0, 0, -1], "objects": [99]})
    assert response.status_code == 404 and "no object 99" in response.json()["detail"]


RAYS = np.array([[0.2, 0.2, 1, 0, 0, -2], [5, 5, 1, 0, 0, -1], [0.1, 0.7, 1, 0, 0, -1]])


def test_json_batch_is_columnar(client, triangle_scene):
    response = client.post(f"/scenes/{triangle_scene}/pick/batch",
                           json={"origins": RAYS[:, :3].tolist(), "directions": RAYS[:, 3:].tolist()})
    assert response.status_code == 200, response.text
    columns = response.json()
    assert columns["hit"] == [True, False, True]
    assert columns["t"] == [pytest.approx(0.5), None, pytest.approx(1.0)]
    assert columns["object"] == [0, -1, 0] and columns["triangle"] == [0, -1, 0]
    assert columns["u"][1] is None and columns["u"][2] == pytest.approx(0.1)
    assert columns["point"][1] == [None, None, None] and columns["point"][0] == pytest.approx([0.2, 0.2, 0])
    assert columns["normal"][2] == pytest.approx([0, 0, 1])


def test_json_batch_refusals(make_client):
    client = make_client(max_rays=2)
    scene = client.post("/scenes", json={"meshes": [TRIANGLE]}).json()["id"]
    path = f"/scenes/{scene}/pick/batch"
    response = client.post(path, json={"origins": RAYS[:, :3].tolist(), "directions": RAYS[:, 3:].tolist()})
    assert response.status_code == 413 and "3 rays in one request; the limit is 2" in response.json()["detail"]
    response = client.post(path, json={"origins": [[0, 0, 1]], "directions": [[0, 0, -1], [0, 0, 1]]})
    assert response.status_code == 422 and "same length" in response.json()["detail"]
    response = client.post(path, json={"origins": [[0, 0, 1]], "directions": [[0, 0, 0]]})
    assert response.status_code == 422 and "directions must be non-zero: row 0" in response.json()["detail"]
    response = client.post(path + "?tmax=1", json={"origins": [[0, 0, 1]], "directions": [[0, 0, -1]]})
    assert response.status_code == 422 and "for the binary form" in response.json()["detail"]
    assert client.post(path, json={"origins": [], "directions": []}).json()["hit"] == []


def binary(client, scene_id, rays, query=""):
    return client.post(f"/scenes/{scene_id}/pick/batch.bin{query}", content=np.asarray(rays, "<f4").tobytes(),
                       headers={"content-type": "application/octet-stream"})


def test_binary_batch_records(client, triangle_scene):
    response = binary(client, triangle_scene, RAYS)
    assert response.status_code == 200 and response.headers["content-type"] == "application/octet-stream"
    assert len(response.content) == 32 * 3
    records = np.frombuffer(response.content, RECORD)
    assert records["t"][0] == pytest.approx(0.5) and np.isinf(records["t"][1])
    assert records["object"].tolist() == [0, -1, 0] and records["triangle"].tolist() == [0, -1, 0]
    assert records["u"][2] == pytest.approx(0.1) and records["v"][2] == pytest.approx(0.7)
    assert records["normal"][0] == pytest.approx([0, 0, 1])
    missed = np.frombuffer(binary(client, triangle_scene, RAYS, "?tmax=0.1").content, RECORD)
    assert missed["object"].tolist() == [-1, -1, -1]
    only_far = np.frombuffer(binary(client, triangle_scene, RAYS, "?tmin=0.75").content, RECORD)
    assert only_far["object"].tolist() == [-1, -1, 0]


def test_binary_batch_refusals(make_client):
    client = make_client(max_rays=2)
    scene = client.post("/scenes", json={"meshes": [TRIANGLE]}).json()["id"]
    response = binary(client, scene, RAYS)
    assert response.status_code == 413 and "the limit is 2 (PICK_MAX_RAYS)" in response.json()["detail"]
    response = client.post(f"/scenes/{scene}/pick/batch.bin", content=b"\0" * 25,
                           headers={"content-type": "application/octet-stream"})
    assert response.status_code == 422
    assert "25 bytes, which is not a whole number of rays (24 bytes each" in response.json()["detail"]
    response = client.post(f"/scenes/{scene}/pick/batch.bin", content=b"",
                           headers={"content-type": "application/octet-stream"})
    assert response.status_code == 422 and "empty" in response.json()["detail"]
    response = binary(client, scene, [[0, 0, np.nan, 0, 0, 1]])
    assert response.status_code == 422 and "origins contain NaN or infinite values" in response.json()["detail"]
    response = binary(client, scene, [[0, 0, 1, 0, 0, 0]])
    assert response.status_code == 422 and "non-zero" in response.json()["detail"]
    for query, expected in (("?tmin=nan", "tmin"), ("?tmin=2&tmax=1", "must not be less than"),
                            ("?mask=-3", "mask"), ("?objects=99", "no object 99"), ("?tmax=abc", "tmax")):
        response = binary(client, scene, [[0, 0, 1, 0, 0, -1]], query)
        assert response.status_code in (404, 422), (query, response.text)
        assert expected in response.json()["detail"], (query, response.json())
    response = client.post(f"/scenes/{scene}/pick/batch", content=b"x", headers={"content-type": "text/csv"})
    assert response.status_code == 415


CAMERA = {"position": [0.25, 0.25, 5], "target": [0.25, 0.25, 0], "up": [0, 1, 0], "fov_y_deg": 30,
          "width": 100, "height": 100}


def test_camera_pick_pinhole_and_matrices_agree(client, triangle_scene):
    body = {**CAMERA, "pixels": [[50, 50], [0.5, 0.5]]}
    response = client.post(f"/scenes/{triangle_scene}/pick/camera", json=body)
    assert response.status_code == 200, response.text
    centre, corner = response.json()["results"]
    assert centre["hit"] and centre["point"] == pytest.approx([0.25, 0.25, 0], abs=1e-9)
    assert centre["t"] == pytest.approx(5.0) and centre["distance"] == pytest.approx(5.0)
    assert centre["ray"]["origin"] == pytest.approx([0.25, 0.25, 5])
    assert centre["ray"]["direction"] == pytest.approx([0, 0, -1])
    assert corner["hit"] is False
    assert corner["ray"]["direction"][0] < 0 < corner["ray"]["direction"][1]

    view = look_at(CAMERA["position"], CAMERA["target"], CAMERA["up"])
    projection = perspective(30.0, 1.0, 0.01)
    matrices = {"view": view.tolist(), "projection": projection.tolist(), "width": 100, "height": 100,
                "pixels": [[50, 50]]}
    response = client.post(f"/scenes/{triangle_scene}/pick/camera", json=matrices)
    assert response.status_code == 200, response.text
    assert response.json()["results"][0]["point"] == pytest.approx([0.25, 0.25, 0], abs=1e-9)


@pytest.mark.parametrize("change,expected", [
    ({"fov_y_deg": 180}, "fov_y_deg: Input should be less than 180"),
    ({"target": [0.25, 0.25, 5]}, "target must differ from position"),
    ({"up": [0, 0, 1]}, "must not be parallel"),
    ({"width": 0}, "width: Input should be greater than or equal to 1"),
    ({"pixels": [[1, "NaN"]]}, "pixels[0][1]: Input should be a valid number"),
    ({"pixels": []}, "pixels: List should have at least 1 item"),
    ({"view": [[1, 0, 0, 0]] * 4, "projection": [[0] * 4] * 4}, "unknown field"),
])
def test_invalid_cameras_are_422(client, triangle_scene, change, expected):
    response = client.post(f"/scenes/{triangle_scene}/pick/camera", json={**CAMERA, "pixels": [[1, 1]], **change})
    assert response.status_code == 422, response.text
    assert expected in response.json()["detail"]


def test_singular_matrices_are_422(client, triangle_scene):
    response = client.post(f"/scenes/{triangle_scene}/pick/camera", json={
        "view": [[0] * 4] * 4, "projection": [[0] * 4] * 4, "width": 10, "height": 10, "pixels": [[1, 1]]})
    assert response.status_code == 422 and "invertible" in response.json()["detail"]


def test_camera_pixel_limit_is_413(make_client):
    client = make_client(max_rays=2)
    scene = client.post("/scenes", json={"meshes": [TRIANGLE]}).json()["id"]
    response = client.post(f"/scenes/{scene}/pick/camera", json={**CAMERA, "pixels": [[1, 1]] * 3})
    assert response.status_code == 413 and "3 pixels" in response.json()["detail"]


def test_select_objects_and_triangles(client, triangle_scene):
    client.post(f"/scenes/{triangle_scene}/objects", json={
        "shape": "box", "size": [0.1, 0.1, 0.1], "name": "far box",
        "transform": [[1, 0, 0, 3], [0, 1, 0, 3], [0, 0, 1, 0], [0, 0, 0, 1]]})
    centre = {**CAMERA, "rect": [40, 40, 60, 60]}
    response = client.post(f"/scenes/{triangle_scene}/select", json=centre)
    assert response.status_code == 200, response.text
    assert response.json() == {"objects": [{"id": 0, "name": "tri", "triangles": None}]}
    response = client.post(f"/scenes/{triangle_scene}/select", json={**centre, "mode": "triangles"})
    assert response.json() == {"objects": [{"id": 0, "name": "tri", "triangles": [0]}]}
    whole = client.post(f"/scenes/{triangle_scene}/select", json={**CAMERA, "rect": [0, 0, 100, 100]}).json()
    assert [o["id"] for o in whole["objects"]] == [0]
    wide = dict(CAMERA, fov_y_deg=120)
    names = {o["name"] for o in client.post(f"/scenes/{triangle_scene}/select",
                                            json={**wide, "rect": [0, 0, 100, 100]}).json()["objects"]}
    assert names == {"tri", "far box"}
    for change, expected in (({"rect": [1, 1, 1, 5]}, "non-zero width"), ({"mode": "all"}, "mode"),
                             ({"rect": [0, 0, 1]}, "rect: List should have at least 4 items")):
        response = client.post(f"/scenes/{triangle_scene}/select", json={**centre, **change})
        assert response.status_code == 422 and expected in response.json()["detail"], response.text


@pytest.mark.parametrize("body,expected", [
    (b'{"origin": [0.2, 0.2, 1], "direction": [0, 0, -1]}', ([0.2, 0.2, 1], [0, 0, -1])),
    (b'{"direction": [0, 0, -1.5], "origin": [0, 0, 1]}', ([0, 0, 1], [0, 0, -1.5])),
    (b'{"origin": [0.2, 0.2, 1], "direction": [0, 0, 0]}', None),
    (b'{"origin": [0.2, 0.2, 1], "direction": [0, 0, true]}', None),
    (b'{"origin": [0.2, 0.2, "1"], "direction": [0, 0, -1]}', None),
    (b'{"origin": [0.2, 0.2, 1e400], "direction": [0, 0, -1]}', None),
    (b'{"origin": [0.2, 0.2, NaN], "direction": [0, 0, -1]}', None),
    (b'{"origin": [0.2, 0.2, 9007199254740993], "direction": [0, 0, -1]}', None),
    (b'{"origin": [0.2, 0.2], "direction": [0, 0, -1]}', None),
    (b'{"origin": [0.2, 0.2, 1], "direction": [0, 0, -1], "tmin": 0.5}', None),
    (b'{"origin": [0.2, 0.2, 1], "other": [0, 0, -1]}', None),
    (b'[1, 2]', None),
    (b'{"origin": [0.2, 0.2, 1], "direction": [0, 0, -1]', None),
])
def test_the_plain_ray_fast_path_takes_only_bodies_the_model_accepts_as_they_are(body, expected):
    assert parse_plain_ray(body) == expected
    if expected is not None:
        model = PickRequest.model_validate_json(body)
        assert (model.origin, model.direction) == expected and not model.all_hits and model.tmin == 0.0


def test_fast_and_full_pick_paths_answer_alike(client, triangle_scene):
    plain = client.post(f"/scenes/{triangle_scene}/pick", json={"origin": [0.2, 0.2, 1], "direction": [0, 0, -2]})
    full = client.post(f"/scenes/{triangle_scene}/pick", json={"origin": [0.2, 0.2, 1], "direction": [0, 0, -2],
                                                                 "tmin": 0.0, "cull_backfaces": False})
    assert plain.status_code == full.status_code == 200
    assert plain.json() == full.json() and plain.json()["distance"] == pytest.approx(1.0)
