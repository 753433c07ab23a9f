"""``/scenes/{id}/closest`` (JSON and binary): exact answers on small inline scenes, and every refusal."""

import numpy as np
import pytest

from service.queries.proximity import CLOSEST_RECORD, CONTAINS_RECORD, SPHERE_RECORD
from tests.conftest import TRIANGLE

#: Above the triangle's inside, beyond its hypotenuse, far off: nearest
#: points (0.25, 0.25, 0), the edge point (0.5, 0.5, 0), the corner (1, 0, 0).
POINTS = np.array([[0.25, 0.25, 2.0], [1.0, 1.0, 0.0], [3.0, -1.0, 0.0]])


def closest(client, scene_id, **body):
    response = client.post(f"/scenes/{scene_id}/closest", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def binary(client, scene_id, points, query=""):
    return client.post(f"/scenes/{scene_id}/closest.bin{query}", content=np.asarray(points, "<f4").tobytes(),
                       headers={"content-type": "application/octet-stream"})


def test_json_closest_is_columnar(client, triangle_scene):
    columns = closest(client, triangle_scene, points=POINTS.tolist())
    assert columns["found"] == [True, True, True]
    assert columns["distance"] == pytest.approx([2.0, np.sqrt(0.5), np.sqrt(5.0)])
    assert columns["object"] == [0, 0, 0] and columns["mesh"] == [0, 0, 0] and columns["triangle"] == [0, 0, 0]
    assert columns["point"] == [pytest.approx([0.25, 0.25, 0]), pytest.approx([0.5, 0.5, 0]),
                                pytest.approx([1, 0, 0])]
    assert columns["u"] == pytest.approx([0.25, 0.5, 1.0]) and columns["v"] == pytest.approx([0.25, 0.5, 0.0])
    assert columns["normal"] == [pytest.approx([0, 0, 1])] * 3


def test_max_distance_and_filters(client, triangle_scene):
    columns = closest(client, triangle_scene, points=POINTS.tolist(), max_distance=1.0)
    assert columns["found"] == [False, True, False]
    assert columns["distance"][0] is None and columns["object"][0] == -1 and columns["triangle"][0] == -1
    assert columns["point"][0] == [None, None, None] and columns["u"][0] is None
    added = client.post(f"/scenes/{triangle_scene}/objects", json={
        "shape": "sphere", "radius": 0.5, "name": "ball",
        "transform": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 3], [0, 0, 0, 1]]})
    assert added.status_code == 201, added.text
    above = [[0.25, 0.25, 2.0]]
    near_ball = closest(client, triangle_scene, points=above)
    assert near_ball["object"] == [1] and near_ball["mesh"] == [-1] and near_ball["triangle"] == [-1]
    assert near_ball["distance"] == pytest.approx([np.sqrt(1 + 0.125) - 0.5])
    assert closest(client, triangle_scene, points=above, exclude=[1])["object"] == [0]
    assert closest(client, triangle_scene, points=above, objects=[0])["object"] == [0]
    assert closest(client, triangle_scene, points=[])["found"] == []
    # A limit whose square overflows a double is no limit at all.
    unbounded = closest(client, triangle_scene, points=[[0.0, 7e16, 6e16]], max_distance=1.4e308)
    assert unbounded["found"] == [True] and unbounded["object"] == [0]


def test_binary_closest_records(client, triangle_scene):
    response = binary(client, triangle_scene, POINTS)
    assert response.status_code == 200 and response.headers["content-type"] == "application/octet-stream"
    assert len(response.content) == 44 * 3
    records = np.frombuffer(response.content, CLOSEST_RECORD)
    assert records["distance"] == pytest.approx([2.0, np.sqrt(0.5), np.sqrt(5.0)])
    assert records["object"].tolist() == [0, 0, 0] and records["triangle"].tolist() == [0, 0, 0]
    assert records["point"][1] == pytest.approx([0.5, 0.5, 0]) and records["normal"][2] == pytest.approx([0, 0, 1])
    assert records["u"][0] == pytest.approx(0.25)
    limited = np.frombuffer(binary(client, triangle_scene, POINTS, "?max_distance=1").content, CLOSEST_RECORD)
    assert limited["object"].tolist() == [-1, 0, -1] and np.isinf(limited["distance"][0])
    assert np.isnan(limited["point"][0]).all()
    masked = np.frombuffer(binary(client, triangle_scene, POINTS, "?mask=0").content, CLOSEST_RECORD)
    assert masked["object"].tolist() == [-1, -1, -1]


def test_json_refusals(make_client):
    client = make_client(max_rays=2)
    scene = client.post("/scenes", json={"meshes": [TRIANGLE]}).json()["id"]
    path = f"/scenes/{scene}/closest"
    response = client.post(path, json={"points": POINTS.tolist()})
    assert response.status_code == 413
    assert response.json()["detail"] == "3 points in one request; the limit is 2 (PICK_MAX_RAYS)"
    response = client.post(path, json={"points": [[0, 0]]})
    assert response.status_code == 422 and "points" in response.json()["detail"]
    response = client.post(path, json={"points": [[0, 0, 1]], "max_distance": -1})
    assert response.status_code == 422 and "max_distance" in response.json()["detail"]
    response = client.post(path, json={"points": [[0, 0, 1]], "radius": 1})
    assert response.status_code == 422 and "radius" in response.json()["detail"]
    response = client.post(path, json={"points": [[0, 0, 1e31]]})
    assert response.status_code == 422
    assert response.json()["detail"] == "points must lie within 1e+30 of the world origin (row 0)"
    response = client.post(path + "?max_distance=1", json={"points": [[0, 0, 1]]})
    assert response.status_code == 422
    assert response.json()["detail"] == (f"query options (max_distance) are for the binary form, POST {path}.bin; "
                                         "a JSON query takes its options in the body")
    response = client.post(path, json={"points": [[0, 0, 1]], "objects": [7]})
    assert response.status_code == 404 and response.json()["detail"] == "no object 7 in this scene"
    response = client.post("/scenes/nope/closest", json={"points": [[0, 0, 1]]})
    assert response.status_code == 404


def test_binary_refusals(make_client):
    client = make_client(max_rays=2)
    scene = client.post("/scenes", json={"meshes": [TRIANGLE]}).json()["id"]
    assert binary(client, scene, POINTS).status_code == 413
    response = client.post(f"/scenes/{scene}/closest.bin", content=b"\0" * 13,
                           headers={"content-type": "application/octet-stream"})
    assert response.status_code == 422
    assert response.json()["detail"] == ("the binary body has 13 bytes, which is not a whole number of points "
                                         "(12 bytes each: 3 little-endian float32)")
    response = client.post(f"/scenes/{scene}/closest.bin", content=b"",
                           headers={"content-type": "application/octet-stream"})
    assert response.status_code == 422
    assert response.json()["detail"] == "the binary body is empty: send at least one point"
    response = binary(client, scene, [[0, np.nan, 0]])
    assert response.status_code == 422
    assert response.json()["detail"] == "points contain NaN or infinite values (first at row 0)"
    for query, expected in (("?max_distance=-1", "max_distance"), ("?mask=-3", "mask"),
                            ("?objects=99", "no object 99"), ("?max_distance=abc", "max_distance")):
        response = binary(client, scene, [[0, 0, 1]], query)
        assert response.status_code in (404, 422), (query, response.text)
        assert expected in response.json()["detail"], (query, response.json())
    response = client.post(f"/scenes/{scene}/closest", content=b"x", headers={"content-type": "text/csv"})
    assert response.status_code == 415
    response = client.post(f"/scenes/{scene}/closest", content=b"\0" * 12,
                           headers={"content-type": "application/octet-stream"})
    assert response.status_code == 415 and response.json() == {
        "detail": f"this route reads application/json: send application/octet-stream to POST /scenes/{scene}/closest.bin"}


def test_response_limit(make_client):
    client = make_client(max_response_mb=0.001)
    scene = client.post("/scenes", json={"meshes": [TRIANGLE]}).json()["id"]
    response = client.post(f"/scenes/{scene}/closest", json={"points": [[0, 0, 1]] * 40})
    assert response.status_code == 413 and "PICK_MAX_RESPONSE_MB" in response.json()["detail"]
    assert "binary form (44 bytes per point)" in response.json()["detail"]


def test_binary_answers_are_held_to_their_own_record_sizes(make_client):
    """A binary sphere cast answers 44-byte records and a containment query 8-byte ones: each is
    refused 413 exactly when its own records would exceed PICK_MAX_RESPONSE_MB."""
    limit = 0.001  # 1,048 bytes
    client = make_client(max_response_mb=limit)
    scene = client.post("/scenes", json={"meshes": [TRIANGLE]}).json()["id"]
    octets = {"content-type": "application/octet-stream"}
    for path, record, item, query in (("sphere-cast", SPHERE_RECORD, [0.25, 0.25, 1, 0, 0, -1], "?radius=0.1"),
                                      ("contains", CONTAINS_RECORD, [0.25, 0.25, 1], "")):
        most = int(limit * 2**20) // record.itemsize
        within = client.post(f"/scenes/{scene}/{path}.bin{query}", content=np.array([item] * most, "<f4").tobytes(),
                             headers=octets)
        assert within.status_code == 200, (path, within.text)
        assert len(within.content) == most * record.itemsize
        over = client.post(f"/scenes/{scene}/{path}.bin{query}", content=np.array([item] * (most + 1), "<f4").tobytes(),
                           headers=octets)
        assert over.status_code == 413, (path, over.text)
        assert f"{(most + 1) * record.itemsize:,} bytes" in over.json()["detail"]


def overlap(client, scene_id, **body):
    return client.post(f"/scenes/{scene_id}/overlap", json=body)


def test_overlap_objects_and_triangles(client, triangle_scene):
    added = client.post(f"/scenes/{triangle_scene}/objects", json={
        "mesh": 0, "name": "far", "transform": [[1, 0, 0, 10], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]})
    assert added.status_code == 201, added.text
    response = overlap(client, triangle_scene, shape={"kind": "sphere", "center": [0.25, 0.25, 0.5], "radius": 1})
    assert response.status_code == 200, response.text
    assert response.json() == {"objects": [{"id": 0, "name": "tri", "triangles": None}]}
    box = {"kind": "aabb", "min": [-1, -1, -1], "max": [11, 1, 1]}
    both = overlap(client, triangle_scene, shape=box, mode="triangles").json()
    assert both == {"objects": [{"id": 0, "name": "tri", "triangles": [0]}, {"id": 1, "name": "far", "triangles": [0]}]}
    assert overlap(client, triangle_scene, shape=box, exclude=[0]).json()["objects"] == [
        {"id": 1, "name": "far", "triangles": None}]
    # Just above the triangle: a capsule of radius 0.1 at height 0.2 misses it, 0.3 touches.
    capsule = {"kind": "capsule", "a": [0.2, 0.2, 0.2], "b": [0.3, 0.3, 0.2]}
    assert overlap(client, triangle_scene, shape={**capsule, "radius": 0.1}).json() == {"objects": []}
    assert len(overlap(client, triangle_scene, shape={**capsule, "radius": 0.3}).json()["objects"]) == 1
    obb = {"kind": "obb", "center": [10.2, 0.2, 0], "axes": [[0, 0, 1], [1, 0, 0], [0, 1, 0]], "half_size": [1, 0.1, 0.1]}
    assert [o["id"] for o in overlap(client, triangle_scene, shape=obb).json()["objects"]] == [1]
    below = {"kind": "convex", "planes": [[0, 0, -1, -0.5]]}
    assert overlap(client, triangle_scene, shape=below).json() == {"objects": []}


def test_overlap_refusals(client, triangle_scene):
    for shape, expected in (
            ({"kind": "cone", "center": [0, 0, 0]}, "shape"),
            ({"kind": "sphere", "center": [0, 0], "radius": 1}, "center"),
            ({"kind": "sphere", "center": [0, 0, 0], "radius": -1}, "radius"),
            ({"kind": "aabb", "min": [1, 1, 1], "max": [0, 0, 0]}, "min"),
            ({"kind": "obb", "center": [0, 0, 0], "axes": [[1, 0, 0], [1, 0, 0], [0, 0, 1]], "half_size": [1, 1, 1]},
             "orthonormal")):
        response = overlap(client, triangle_scene, shape=shape)
        assert response.status_code == 422, (shape, response.text)
        assert expected in response.json()["detail"], (shape, response.json())
    response = overlap(client, triangle_scene, shape={"kind": "sphere", "center": [0, 0, 0], "radius": 1},
                       objects=[9])
    assert response.status_code == 404 and response.json()["detail"] == "no object 9 in this scene"


#: Straight down onto the triangle's inside, down beside it, down past its corner (1, 0).
CASTS = np.array([[0.25, 0.25, 2.0, 0, 0, -1], [2.0, 2.0, 2.0, 0, 0, -1], [1.1, 0.0, 2.0, 0, 0, -1]])


def test_json_sphere_cast_is_columnar(client, triangle_scene):
    response = client.post(f"/scenes/{triangle_scene}/sphere-cast",
                           json={"origins": CASTS[:, :3].tolist(), "directions": CASTS[:, 3:].tolist(), "radius": 0.5})
    assert response.status_code == 200, response.text
    columns = response.json()
    assert columns["hit"] == [True, False, True]
    # Face contact: the centre stops at height r; corner contact: at height sqrt(r^2 - 0.1^2).
    assert columns["t"] == [pytest.approx(1.5), None, pytest.approx(2.0 - np.sqrt(0.25 - 0.01))]
    assert columns["object"] == [0, -1, 0] and columns["triangle"] == [0, -1, 0]
    assert columns["point"][0] == pytest.approx([0.25, 0.25, 0]) and columns["point"][2] == pytest.approx([1, 0, 0])
    assert columns["normal"][0] == pytest.approx([0, 0, 1])
    assert columns["normal"][2] == pytest.approx([0.2, 0, np.sqrt(0.24) * 2])
    assert columns["point"][1] == [None, None, None] and columns["u"][1] is None
    rays = client.post(f"/scenes/{triangle_scene}/pick/batch",
                       json={"origins": CASTS[:, :3].tolist(), "directions": CASTS[:, 3:].tolist()}).json()
    zero = client.post(f"/scenes/{triangle_scene}/sphere-cast",
                       json={"origins": CASTS[:, :3].tolist(), "directions": CASTS[:, 3:].tolist(), "radius": 0}).json()
    assert zero["hit"] == rays["hit"] and zero["t"] == rays["t"] and zero["triangle"] == rays["triangle"]
    window = client.post(f"/scenes/{triangle_scene}/sphere-cast",
                         json={"origins": CASTS[:, :3].tolist(), "directions": CASTS[:, 3:].tolist(), "radius": 0.5,
                               "tmax": 1.0}).json()
    assert window["hit"] == [False, False, False]


def test_binary_sphere_cast_records(client, triangle_scene):
    def cast(query):
        return client.post(f"/scenes/{triangle_scene}/sphere-cast.bin{query}", content=CASTS.astype("<f4").tobytes(),
                           headers={"content-type": "application/octet-stream"})

    response = cast("?radius=0.5")
    assert response.status_code == 200 and len(response.content) == 44 * 3
    records = np.frombuffer(response.content, SPHERE_RECORD)
    assert records["t"][0] == pytest.approx(1.5) and np.isinf(records["t"][1])
    assert records["object"].tolist() == [0, -1, 0] and records["triangle"].tolist() == [0, -1, 0]
    assert records["point"][2] == pytest.approx([1, 0, 0])
    response = cast("")
    assert response.status_code == 422
    assert response.json()["detail"] == "radius: Field required"
    for query, expected in (("?radius=-1", "radius"), ("?radius=1&tmin=2&tmax=1", "must not be less than"),
                            ("?radius=1&objects=99", "no object 99")):
        response = cast(query)
        assert response.status_code in (404, 422) and expected in response.json()["detail"], (query, response.text)


def test_sphere_cast_refusals(client, triangle_scene):
    path = f"/scenes/{triangle_scene}/sphere-cast"
    for body, expected in (({"origins": [[0, 0, 1]], "directions": [[0, 0, -1]]}, "radius"),
                           ({"origins": [[0, 0, 1]], "directions": [[0, 0, -1]], "radius": -1}, "radius"),
                           ({"origins": [[0, 0, 1]], "directions": [[0, 0, 0]], "radius": 1}, "non-zero"),
                           ({"origins": [[0, 0, 1]], "directions": [], "radius": 1}, "same length")):
        response = client.post(path, json=body)
        assert response.status_code == 422 and expected in response.json()["detail"], (body, response.text)
    response = client.post(path + "?radius=1", json={"origins": [[0, 0, 1]], "directions": [[0, 0, -1]], "radius": 1})
    assert response.status_code == 422
    assert response.json()["detail"] == (f"query options (radius) are for the binary form, POST {path}.bin; "
                                         "a JSON query takes its options in the body")


def test_contains_and_signed_distance(client):
    cube = {"name": "cube", "vertices": [[x, y, z] for z in (0, 1) for y in (0, 1) for x in (0, 1)],
            "faces": [[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 5], [0, 5, 4], [2, 6, 7], [2, 7, 3],
                      [0, 4, 6], [0, 6, 2], [1, 3, 7], [1, 7, 5]]}
    scene = client.post("/scenes", json={"meshes": [cube]}).json()["id"]
    points = [[0.5, 0.5, 0.25], [2.0, 0.5, 0.5], [0.5, 0.5, -3.0]]
    response = client.post(f"/scenes/{scene}/contains", json={"points": points})
    assert response.status_code == 200, response.text
    assert response.json() == {"inside": [True, False, False], "object": [0, -1, -1], "signed_distance": None}
    signed = client.post(f"/scenes/{scene}/contains", json={"points": points, "signed_distance": True}).json()
    assert signed["signed_distance"] == pytest.approx([-0.25, 1.0, 3.0])
    assert client.post(f"/scenes/{scene}/contains", json={"points": points, "exclude": [0]}).json()["inside"] == [
        False, False, False]
    records = np.frombuffer(client.post(f"/scenes/{scene}/contains.bin?signed_distance=true",
                                        content=np.asarray(points, "<f4").tobytes(),
                                        headers={"content-type": "application/octet-stream"}).content,
                            CONTAINS_RECORD)
    assert records["object"].tolist() == [0, -1, -1]
    assert records["signed_distance"] == pytest.approx([-0.25, 1.0, 3.0])
    plain = np.frombuffer(client.post(f"/scenes/{scene}/contains.bin", content=np.asarray(points, "<f4").tobytes(),
                                      headers={"content-type": "application/octet-stream"}).content,
                          CONTAINS_RECORD)
    assert np.isnan(plain["signed_distance"]).all()
    assert client.post(f"/scenes/{scene}/contains", json={"points": []}).json() == {
        "inside": [], "object": [], "signed_distance": None}


def test_contains_refusals(client, triangle_scene):
    path = f"/scenes/{triangle_scene}/contains"
    response = client.post(path, content=b'{"points": [[0, 0, Infinity]]}', headers={"content-type": "application/json"})
    assert response.status_code == 422
    response = client.post(path, json={"points": [[0, 0, 1e31]]})
    assert response.status_code == 422
    assert response.json()["detail"] == "points must lie within 1e+30 of the world origin (row 0)"
    response = client.post(path + "?signed_distance=true", json={"points": [[0, 0, 1]]})
    assert response.status_code == 422 and "for the binary form" in response.json()["detail"]
    response = client.post(path + ".bin", content=b"\0" * 5, headers={"content-type": "application/octet-stream"})
    assert response.status_code == 422 and "not a whole number of points" in response.json()["detail"]
