"""Lines and points over HTTP: uploads of files holding them, picks with world and pixel
tolerances (``/pick``, ``/pick/batch``, ``/pick/camera``), the answers' fields, refusals."""

import numpy as np
import pytest

from service.queries.picking import PRIMITIVE_RECORD, RECORD

#: A floor at z = 0 ([-1, 1]^2), a polyline along x at z = 0.5, a point above the floor.
OBJ = (b"v -1 -1 0\nv 1 -1 0\nv 1 1 0\nv -1 1 0\nf 1 2 3\nf 1 3 4\n"
       b"v -1 0 0.5\nv 0 0 0.5\nv 1 0 0.5\nl 5 6 7\n")


def upload(client, filename: str, content: bytes):
    response = client.post("/scenes/upload", files={"file": (filename, content, "application/octet-stream")})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def pick(client, scene_id, **body):
    response = client.post(f"/scenes/{scene_id}/pick", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_obj_lines_upload_and_pick(client):
    scene = upload(client, "wire.obj", OBJ)
    kinds = sorted(o["kind"] for o in client.get(f"/scenes/{scene}").json()["objects"])
    assert kinds == ["lines", "mesh"]
    hit = pick(client, scene, origin=[0.5, 0.01, 2], direction=[0, 0, -1], line_tolerance=0.02)
    assert hit["primitive"] == "segment" and hit["segment"] == {"index": 1, "s": pytest.approx(0.5)}
    assert hit["t"] == pytest.approx(1.5) and hit["ray_distance"] == pytest.approx(0.01)
    assert hit["point"] == pytest.approx([0.5, 0, 0.5]) and hit["normal"] is None
    assert hit["mesh"] is None and hit["triangle"] is None and hit["set"] == 0
    # Without a tolerance the floor is hit.
    floor = pick(client, scene, origin=[0.5, 0.01, 2], direction=[0, 0, -1])
    assert floor["primitive"] == "triangle" and floor["ray_distance"] == 0.0
    # every-hit picks skip lines and points, and take the options all the same.
    every = pick(client, scene, origin=[0.5, 0.01, 2], direction=[0, 0, -1], line_tolerance=0.02, all_hits=True)
    assert [h["triangle"] is not None for h in every["hits"]] == [True]


def test_ply_point_cloud_upload_and_camera_pick(client):
    trimesh = pytest.importorskip("trimesh")
    points = np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.0], [-0.5, 0.2, 0.0]])
    scene = upload(client, "cloud.ply", trimesh.PointCloud(points).export(file_type="ply"))
    (info,) = client.get(f"/scenes/{scene}").json()["objects"]
    assert info["kind"] == "points"
    camera = {"position": [0, 0, 5], "target": [0, 0, 0], "up": [0, 1, 0], "fov_y_deg": 60, "width": 64,
              "height": 48}
    # Pixel (32, 24) looks at the origin; two pixels off it, a 3-pixel tolerance still picks the point.
    body = {**camera, "pixels": [[32, 24], [34, 24], [40, 24]], "point_pixels": 3}
    response = client.post(f"/scenes/{scene}/pick/camera", json=body)
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert [r["hit"] for r in results] == [True, True, False]
    assert results[1]["primitive"] == "point" and results[1]["point_index"] == 0
    assert results[1]["point"] == pytest.approx([0, 0, 0], abs=1e-6)
    assert client.post(f"/scenes/{scene}/pick/camera", json={**body, "point_pixels": 1}).json()[
        "results"][1]["hit"] is False


def test_batch_columns(client):
    scene = upload(client, "wire.obj", OBJ)
    response = client.post(f"/scenes/{scene}/pick/batch", json={
        "origins": [[0.5, 0.01, 2], [0.5, 0.5, 2], [5, 5, 5]], "directions": [[0, 0, -1]] * 3,
        "line_tolerance": 0.02})
    assert response.status_code == 200, response.text
    columns = response.json()
    assert columns["primitive"] == [2, 0, -1]
    assert columns["segment"] == [1, -1, -1] and columns["point_index"] == [-1, -1, -1]
    assert columns["s"][0] == pytest.approx(0.5) and columns["s"][1:] == [None, None]


@pytest.mark.parametrize("body, expected", [
    ({"line_tolerance": -1}, "line_tolerance"),
    ({"point_tolerance": "wide"}, "point_tolerance"),
])
def test_tolerance_refusals(client, triangle_scene, body, expected):
    response = client.post(f"/scenes/{triangle_scene}/pick", json={"origin": [0, 0, 1], "direction": [0, 0, -1],
                                                                   **body})
    assert response.status_code == 422 and expected in response.text


def test_pixel_tolerance_refusals(client, triangle_scene):
    camera = {"position": [0, 0, 5], "target": [0, 0, 0], "up": [0, 1, 0], "fov_y_deg": 60, "width": 64,
              "height": 48, "pixels": [[32, 24]]}
    response = client.post(f"/scenes/{triangle_scene}/pick/camera", json={**camera, "line_pixels": -2})
    assert response.status_code == 422 and "line_pixels" in response.text
    response = client.post(f"/scenes/{triangle_scene}/pick/camera", json={**camera, "point_pixels": 900})
    assert response.status_code == 422 and "45 degrees" in response.text


def test_binary_batch_takes_tolerances_in_the_query(client):
    scene = upload(client, "wire.obj", OBJ)
    rays = np.array([[0.5, 0.01, 2, 0, 0, -1]], "<f4")
    records = []
    for query in ("", "?line_tolerance=0.02"):
        response = client.post(f"/scenes/{scene}/pick/batch.bin{query}", content=rays.tobytes(),
                               headers={"content-type": "application/octet-stream"})
        assert response.status_code == 200, response.text
        records.append(np.frombuffer(response.content, RECORD)[0])
    assert records[0]["triangle"] >= 0 and records[0]["t"] == pytest.approx(2.0)
    assert records[1]["triangle"] == -1 and records[1]["t"] == pytest.approx(1.5)
    assert np.isnan(records[1]["normal"]).all()
    refused = client.post(f"/scenes/{scene}/pick/batch?line_tolerance=0.1", json={"origins": [], "directions": []})
    assert refused.status_code == 422 and "binary form" in refused.text


def binary_batch(client, scene, rays, query=""):
    response = client.post(f"/scenes/{scene}/pick/batch.bin{query}", content=np.asarray(rays, "<f4").tobytes(),
                           headers={"content-type": "application/octet-stream"})
    assert response.status_code == 200, response.text
    return response.content


def test_binary_batch_records_say_what_was_hit(client):
    trimesh = pytest.importorskip("trimesh")
    wire = upload(client, "wire.obj", OBJ)
    # A segment (index 1, half way along), the floor, a miss.
    rays = [[0.5, 0.01, 2, 0, 0, -1], [0.5, 0.5, 2, 0, 0, -1], [5, 5, 2, 0, 0, -1]]
    query = "?line_tolerance=0.02&records=primitive"
    answer = binary_batch(client, wire, rays, query)
    assert len(answer) == 3 * 44
    records = np.frombuffer(answer, PRIMITIVE_RECORD)
    assert records["primitive"].tolist() == [2, 0, -1]
    assert records["index"].tolist() == [1, -1, -1]
    assert records["s"][0] == pytest.approx(0.5) and np.isnan(records["s"][1:]).all()
    assert records["object"][0] >= 0 and records["triangle"][0] == -1 and records["t"][0] == pytest.approx(1.5)
    # The first 32 bytes of each record are the surface record, as without records=primitive.
    surface = np.frombuffer(binary_batch(client, wire, rays, "?line_tolerance=0.02"), RECORD)
    assert np.frombuffer(answer, np.uint8).reshape(3, 44)[:, :32].tobytes() == surface.tobytes()
    assert binary_batch(client, wire, rays, "?line_tolerance=0.02&records=surface") == surface.tobytes()
    # A point's record carries its index.
    points = np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.0], [-0.5, 0.2, 0.0]])
    cloud = upload(client, "cloud.ply", trimesh.PointCloud(points).export(file_type="ply"))
    records = np.frombuffer(binary_batch(client, cloud, [[0.5, 0.5, 3, 0, 0, -1]], "?point_tolerance=0.01"
                                                                                      "&records=primitive"),
                            PRIMITIVE_RECORD)
    assert records["primitive"].tolist() == [3] and records["index"].tolist() == [1]
    assert records["t"][0] == pytest.approx(3.0) and np.isnan(records["s"][0])


def test_binary_batch_record_layout_refusals(client):
    wire = upload(client, "wire.obj", OBJ)
    rays = np.array([[0.5, 0.01, 2, 0, 0, -1]], "<f4").tobytes()
    refused = client.post(f"/scenes/{wire}/pick/batch.bin?records=wide", content=rays,
                          headers={"content-type": "application/octet-stream"})
    assert refused.status_code == 422 and "records" in refused.text and "primitive" in refused.text
    refused = client.post(f"/scenes/{wire}/pick/batch?records=primitive", json={"origins": [], "directions": []})
    assert refused.status_code == 422 and "query options (records) are for the binary form" in refused.text
