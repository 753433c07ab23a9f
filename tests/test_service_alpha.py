"""Alpha-tested picks through the service: an uploaded glTF keeps its MASK and BLEND materials, and
``alpha_test`` and ``alpha_cutoff`` go from the pick options to the kernels (issue 17)."""

import numpy as np
import pytest

from service.queries.picking import RECORD

from testkit.scenes.alpha import TEXELS, checker_card_scene, checkerboard, grid_rays


def upload(client, glb: bytes) -> str:
    response = client.post("/scenes/upload", files={"file": ("card.glb", glb, "application/octet-stream")})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def names(client, scene_id: str) -> dict:
    return {entry["name"]: entry["id"] for entry in client.get(f"/scenes/{scene_id}").json()["objects"]}


def pick(client, scene_id, **body):
    response = client.post(f"/scenes/{scene_id}/pick", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_pick_through_an_uploaded_gltf(client):
    scene_id = upload(client, checker_card_scene()[0])
    ids = names(client, scene_id)
    origins, _ = grid_rays(0.0, 1.0, 0.0, 1.0)
    column = np.floor(origins[:, 0] * TEXELS).astype(int)
    row = np.floor((1.0 - origins[:, 1]) * TEXELS).astype(int)
    opaque = checkerboard()[row, column] == 255
    for origin, solid in zip(origins[:8].tolist(), opaque[:8]):
        hit = pick(client, scene_id, origin=origin, direction=[0, 0, -1])
        assert hit["object"]["id"] == ids["card" if solid else "wall"]
        through = pick(client, scene_id, origin=origin, direction=[0, 0, -1], alpha_test=False)
        assert through["object"]["id"] == ids["card"]
        every = pick(client, scene_id, origin=origin, direction=[0, 0, -1], all_hits=True)["hits"]
        assert [h["object"]["id"] for h in every] == ([ids["card"]] if solid else []) + [ids["wall"]]
    batch = client.post(f"/scenes/{scene_id}/pick/batch", json={
        "origins": origins.tolist(), "directions": [[0, 0, -1]] * origins.shape[0]}).json()
    assert batch["object"] == np.where(opaque, ids["card"], ids["wall"]).tolist()


def test_blend_cutoff_per_pick_and_binary_batch(client):
    mask = np.tile(np.round(np.linspace(0, 255, TEXELS)).astype(np.uint8), (TEXELS, 1))
    scene_id = upload(client, checker_card_scene(mode="BLEND", mask=mask)[0])
    ids = names(client, scene_id)
    origins, directions = grid_rays(0.0, 1.0, 0.0, 1.0)
    column = np.floor(origins[:, 0] * TEXELS).astype(int)
    rays = np.hstack([origins, directions]).astype("<f4").tobytes()
    for cutoff in (0.25, 0.5, 0.75):
        expected = np.where(mask[0, column] / 255.0 >= cutoff, ids["card"], ids["wall"])
        answer = client.post(f"/scenes/{scene_id}/pick/batch", json={
            "origins": origins.tolist(), "directions": directions.tolist(), "alpha_cutoff": cutoff}).json()
        assert answer["object"] == expected.tolist()
        binary = client.post(f"/scenes/{scene_id}/pick/batch.bin", params={"alpha_cutoff": cutoff}, content=rays,
                             headers={"content-type": "application/octet-stream"})
        assert binary.status_code == 200, binary.text
        assert np.frombuffer(binary.content, RECORD)["object"].tolist() == expected.tolist()
    off = client.post(f"/scenes/{scene_id}/pick/batch.bin", params={"alpha_test": "false"}, content=rays,
                      headers={"content-type": "application/octet-stream"})
    assert (np.frombuffer(off.content, RECORD)["object"] == ids["card"]).all()


def test_camera_pick_sees_through_transparent_texels(client):
    scene_id = upload(client, checker_card_scene()[0])
    ids = names(client, scene_id)
    # Looking down -z at the card's texel (row 0, column 1), which is transparent, and (0, 0), opaque.
    body = {"position": [0.1875, 0.9375, 5], "target": [0.1875, 0.9375, 0], "up": [0, 1, 0], "fov_y_deg": 1,
            "width": 2, "height": 2, "pixels": [[1, 1]]}
    assert client.post(f"/scenes/{scene_id}/pick/camera", json=body).json()["results"][0]["object"]["id"] \
        == ids["wall"]
    body.update(position=[0.0625, 0.9375, 5], target=[0.0625, 0.9375, 0])
    assert client.post(f"/scenes/{scene_id}/pick/camera", json=body).json()["results"][0]["object"]["id"] \
        == ids["card"]


@pytest.mark.parametrize("options, detail", [
    ({"alpha_cutoff": 1.5}, "alpha_cutoff: Input should be less than or equal to 1"),
    ({"alpha_cutoff": -0.1}, "alpha_cutoff: Input should be greater than or equal to 0"),
    ({"alpha_test": "yes"}, "alpha_test: Input should be a valid boolean"),
])
def test_bad_alpha_options_are_422(client, triangle_scene, options, detail):
    response = client.post(f"/scenes/{triangle_scene}/pick", json={"origin": [0, 0, 1], "direction": [0, 0, -1],
                                                                    **options})
    assert response.status_code == 422
    assert response.json()["detail"].startswith(detail), response.json()


def test_openapi_lists_the_alpha_options(client):
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    for name in ("PickRequest", "BatchPickRequest"):
        properties = schema[name]["properties"]
        assert properties["alpha_test"]["default"] is True
        assert properties["alpha_cutoff"]["maximum"] == 1 and properties["alpha_cutoff"]["default"] == 0.5
