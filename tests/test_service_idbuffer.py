"""``/scenes/{id}/idbuffer``: every pixel against ``/pick/camera`` of its centre, the binary
layout and its headers, gzip on request, limits and refusals."""

import gzip

import numpy as np

from .test_service_select import box_on_ground

#: From above and aside: ground, box and a sphere, with the sky around them.
CAMERA = {"position": [6.0, -7.0, 6.0], "target": [0.5, 0.5, 0.0], "up": [0.0, 0.0, 1.0], "fov_y_deg": 50.0,
          "width": 40, "height": 30}


def scene_with_a_sphere(client) -> str:
    scene = box_on_ground(client)
    response = client.post(f"/scenes/{scene}/objects", json={
        "shape": "sphere", "radius": 0.7, "name": "ball", "transform": [[1, 0, 0, 2.5], [0, 1, 0, -1], [0, 0, 1, 0.7],
                                                                         [0, 0, 0, 1]]})
    assert response.status_code in (200, 201), response.text
    return scene


def planes(response, pixels: int) -> dict:
    """The planes of an answer, by the names of its X-Idbuffer-Fields header."""
    data = response.content
    kinds = {"int32": "<i4", "float32": "<f4", "float16": "<f2"}
    found, offset = {}, 0
    for field in response.headers["x-idbuffer-fields"].split(","):
        name, kind = field.split(":")
        kind, _, count = kind.partition("x")
        count = int(count or 1)
        dtype = np.dtype(kinds[kind])
        found[name] = np.frombuffer(data, dtype, pixels * count, offset).reshape(pixels, count).squeeze()
        offset += dtype.itemsize * pixels * count
    assert offset == len(data)
    return found


def test_every_pixel_is_what_a_camera_pick_of_its_centre_answers(client):
    scene = scene_with_a_sphere(client)
    response = client.post(f"/scenes/{scene}/idbuffer", json={**CAMERA, "normal": True, "barycentric": True})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/octet-stream"
    assert response.headers["x-idbuffer-width"] == "40" and response.headers["x-idbuffer-height"] == "30"
    assert response.headers["x-idbuffer-fields"] == ("object:int32,triangle:int32,depth:float32,"
                                                     "barycentric:float32x2,normal:float16x3")
    buffer = planes(response, 40 * 30)
    centres = [[x + 0.5, y + 0.5] for y in range(30) for x in range(40)]
    picks = client.post(f"/scenes/{scene}/pick/camera", json={**CAMERA, "pixels": centres})
    assert picks.status_code == 200, picks.text
    results = picks.json()["results"]
    objects = [result["object"]["id"] if result["hit"] else -1 for result in results]
    assert buffer["object"].tolist() == objects
    assert {-1, 0, 1, 2} <= set(objects), "the image should show sky, ground, box and ball"
    assert buffer["triangle"].tolist() == [result["triangle"] if result["hit"] and result["triangle"] is not None
                                           else -1 for result in results]
    for pixel, result in enumerate(results):
        if not result["hit"]:
            assert np.isinf(buffer["depth"][pixel]) and np.isnan(buffer["normal"][pixel].astype(float)).all()
            continue
        assert buffer["depth"][pixel] == np.float32(result["t"])
        assert np.allclose(buffer["normal"][pixel].astype(float), result["normal"], atol=2e-3)
        if result["barycentric"] is None:
            assert np.isnan(buffer["barycentric"][pixel]).all()
        else:
            assert np.allclose(buffer["barycentric"][pixel], result["barycentric"][1:], atol=1e-6)


def test_the_planes_asked_for_and_gzip(client):
    scene = scene_with_a_sphere(client)
    plain = client.post(f"/scenes/{scene}/idbuffer", json=CAMERA, headers={"accept-encoding": "identity"})
    assert plain.status_code == 200
    assert "content-encoding" not in plain.headers and plain.headers["vary"] == "Accept-Encoding"
    assert plain.headers["x-idbuffer-fields"] == "object:int32,triangle:int32,depth:float32"
    assert len(plain.content) == 12 * 40 * 30
    for accept in ("gzip", "br;q=1.0, gzip;q=0.5", "*"):
        with client.stream("POST", f"/scenes/{scene}/idbuffer", json=CAMERA,
                           headers={"accept-encoding": accept}) as compressed:
            raw = b"".join(compressed.iter_raw())
            assert compressed.headers["content-encoding"] == "gzip"
        assert gzip.decompress(raw) == plain.content and len(raw) < len(plain.content) / 3
    for refused in ("gzip;q=0", "br", "*;q=0"):
        response = client.post(f"/scenes/{scene}/idbuffer", json=CAMERA, headers={"accept-encoding": refused})
        assert "content-encoding" not in response.headers and response.content == plain.content
    normals = client.post(f"/scenes/{scene}/idbuffer", json={**CAMERA, "normal": True})
    assert normals.headers["x-idbuffer-fields"] == "object:int32,triangle:int32,depth:float32,normal:float16x3"
    assert len(normals.content) == 18 * 40 * 30


def test_filters_apply(client):
    scene = scene_with_a_sphere(client)
    everything = planes(client.post(f"/scenes/{scene}/idbuffer", json=CAMERA), 1200)
    without_ground = planes(client.post(f"/scenes/{scene}/idbuffer", json={**CAMERA, "exclude": [0]}), 1200)
    assert 0 in everything["object"] and 0 not in without_ground["object"]
    assert (without_ground["object"][everything["object"] == 2] == 2).all()


def test_limits_and_refusals(make_client):
    client = make_client(max_idbuffer_pixels=1000, max_response_mb=0.02)
    scene = scene_with_a_sphere(client)
    cases = [
        ({**CAMERA, "width": 50, "height": 30}, 413, "a 50x30 ID buffer has 1500 pixels; the limit is 1000 "
                                                     "(PICK_MAX_IDBUFFER_PIXELS): ask for a smaller image"),
        ({**CAMERA, "width": 30, "height": 30, "normal": True, "barycentric": True}, 413,
         "a 30x30 ID buffer could answer up to 23,400 bytes; the limit is 0.02 MiB (PICK_MAX_RESPONSE_MB): "
         "ask for a smaller image, or leave out normal and barycentric"),
        ({**CAMERA, "width": 30, "height": 30, "target": CAMERA["position"]}, 422,
         "target must differ from position, both are [6.0, -7.0, 6.0]"),
        ({**CAMERA, "width": 30, "height": 30, "depth": True}, 422, None),
        ({**CAMERA, "width": 30, "height": 30, "exclude": [99]}, 404, "no object 99 in this scene"),
    ]
    for body, status, message in cases:
        response = client.post(f"/scenes/{scene}/idbuffer", json=body)
        assert response.status_code == status, (body, response.text)
        if message is not None:
            assert response.json()["detail"] == message
    assert client.post("/scenes/nope/idbuffer", json=CAMERA).status_code == 404


def test_the_layout_is_documented(client):
    operation = client.get("/openapi.json").json()["paths"]["/scenes/{scene_id}/idbuffer"]["post"]
    answer = operation["responses"]["200"]
    layout = answer["content"]["application/octet-stream"]["schema"]["description"]
    for words in ("object int32", "triangle int32", "depth float32", "+inf on a miss", "float16 × 3",
                  "little-endian", "gzip"):
        assert words in layout
    assert {"X-Idbuffer-Width", "X-Idbuffer-Height", "X-Idbuffer-Fields"} <= set(answer["headers"])
    examples = operation["requestBody"]["content"]["application/json"]["examples"]
    assert examples["with normals and barycentrics"]["value"]["normal"] is True
