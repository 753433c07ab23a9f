"""``/scenes/{id}/render`` and the ``/viewer`` page: the image, its camera, and every refusal."""

import io
import json
import re

import numpy as np
import pytest
from PIL import Image

from service.queries.rendering import BACKGROUND
from tests.conftest import TRIANGLE

#: Looking straight down at :data:`TRIANGLE` from above its inside; image y runs along -world y.
DOWN_AT_TRIANGLE = {"position": "0.25,0.25,3", "target": "0.25,0.25,0", "up": "0,1,0", "width": 64, "height": 48}


def cube(centre, half=1.0) -> dict:
    """An inline closed cube mesh (12 triangles) of half-size ``half`` around ``centre``."""
    corners = [[centre[0] + sx * half, centre[1] + sy * half, centre[2] + sz * half]
               for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
    faces = [[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
             [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]]
    return {"vertices": corners, "faces": faces}


def make_scene(client, *meshes, name="render test") -> str:
    response = client.post("/scenes", json={"name": name, "meshes": list(meshes)})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def render(client, scene_id, **query) -> tuple[np.ndarray, dict]:
    """The decoded image ``(H, W, 3)`` and the camera of its ``X-Camera`` header."""
    response = client.get(f"/scenes/{scene_id}/render", params=query)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    image = Image.open(io.BytesIO(response.content))
    assert image.format == "PNG" and image.mode == "RGB"
    return np.asarray(image), json.loads(response.headers["x-camera"])


def is_background(image: np.ndarray) -> np.ndarray:
    return (image == np.array(BACKGROUND, np.uint8)).all(axis=-1)


def picked_objects(client, scene_id, camera: dict) -> np.ndarray:
    """``(H, W)`` object id (-1 on a miss) that ``/pick/camera`` finds at each pixel centre of ``camera``."""
    ys, xs = np.mgrid[0:camera["height"], 0:camera["width"]]
    pixels = np.stack([xs.ravel() + 0.5, ys.ravel() + 0.5], axis=1).tolist()
    response = client.post(f"/scenes/{scene_id}/pick/camera", json={**camera, "pixels": pixels})
    assert response.status_code == 200, response.text
    ids = [result["object"]["id"] if result["hit"] else -1 for result in response.json()["results"]]
    return np.array(ids).reshape(camera["height"], camera["width"])


def test_png_of_the_asked_size_shows_the_object_over_the_background(client, triangle_scene):
    image, camera = render(client, triangle_scene, **DOWN_AT_TRIANGLE)
    assert image.shape == (48, 64, 3)
    assert camera == {"position": [0.25, 0.25, 3.0], "target": [0.25, 0.25, 0.0], "up": [0.0, 1.0, 0.0],
                      "fov_y_deg": 45.0, "width": 64, "height": 48}
    # The centre looks at (0.25, 0.25, 0), inside the triangle; the corners of a 45° view from 3 up do not.
    assert not is_background(image)[24, 32]
    for row, column in ((0, 0), (0, 63), (47, 0), (47, 63)):
        assert is_background(image)[row, column]
    # One object, one colour, brightest where the rays meet the triangle squarely: in the centre.
    colours = image[~is_background(image)].astype(int)
    assert (colours.max(axis=0) - colours.min(axis=0) <= 10).all()
    assert (image[24, 32] == colours.max(axis=0)).all() and colours.max() > 200


def test_every_pixel_shows_what_a_pick_at_its_centre_hits(client):
    beside = {**TRIANGLE, "transform": [[1, 0, 0, -1], [0, 1, 0, -3], [0, 0, 1, 0], [0, 0, 0, 1]]}
    scene_id = make_scene(client, cube([0, 0, 0]), cube([2.5, 0.5, 0], 0.7), beside)
    image, camera = render(client, scene_id, width=40, height=30)
    objects = picked_objects(client, scene_id, camera)
    assert set(np.unique(objects)) == {-1, 0, 1, 2}
    np.testing.assert_array_equal(is_background(image), objects == -1)
    # One colour family per object: no two objects share a hue where both are lit.
    brightest = {oid: tuple(image[objects == oid].max(axis=0)) for oid in (0, 1, 2)}
    assert len(set(brightest.values())) == 3


def test_default_framing_shows_the_whole_scene_centred(client):
    scene_id = make_scene(client, cube([10.0, -5.0, 3.0], half=2.0))
    image, camera = render(client, scene_id, width=80, height=60)
    assert camera["target"] == pytest.approx([10.0, -5.0, 3.0])
    assert camera["up"] == [0.0, 0.0, 1.0] and camera["fov_y_deg"] == 45.0
    assert not is_background(image)[30, 40]
    # Nothing is cut off: the image's border is background all round.
    background = is_background(image)
    assert background[0].all() and background[-1].all() and background[:, 0].all() and background[:, -1].all()
    # A z-up default view looks down on the scene from above its horizon.
    assert camera["position"][2] > camera["target"][2]


def test_the_returned_camera_renders_the_same_image(client):
    scene_id = make_scene(client, cube([1.0, 2.0, 3.0]), TRIANGLE)
    default = client.get(f"/scenes/{scene_id}/render", params={"width": 50, "height": 40, "up": "0,1,0"})
    camera = json.loads(default.headers["x-camera"])
    explicit = client.get(f"/scenes/{scene_id}/render", params={
        **{name: ",".join(repr(c) for c in camera[name]) for name in ("position", "target", "up")},
        "fov_y_deg": repr(camera["fov_y_deg"]), "width": camera["width"], "height": camera["height"]})
    assert explicit.status_code == 200
    assert explicit.content == default.content
    assert json.loads(explicit.headers["x-camera"]) == camera


def test_only_given_target_or_position_is_kept(client):
    scene_id = make_scene(client, cube([0, 0, 0]))
    _, camera = render(client, scene_id, target="0.5,0,0", width=8, height=8)
    assert camera["target"] == [0.5, 0.0, 0.0] and camera["position"] != [0.5, 0.0, 0.0]
    _, camera = render(client, scene_id, position="0,-9,1", width=8, height=8)
    assert camera["position"] == [0.0, -9.0, 1.0] and camera["target"] == pytest.approx([0, 0, 0])


def test_highlight_tints_only_the_highlighted_object(client):
    scene_id = make_scene(client, cube([0, 0, 0]), cube([3, 0, 0]))
    plain, camera = render(client, scene_id, width=48, height=36)
    objects = picked_objects(client, scene_id, camera)
    tinted, _ = render(client, scene_id, width=48, height=36, highlight="1")
    changed = (plain != tinted).any(axis=-1)
    assert changed[objects == 1].all()
    assert not changed[objects != 1].any()
    # Ids of no live object tint nothing; an empty list is no highlight.
    for highlight in ("7", ""):
        same, _ = render(client, scene_id, width=48, height=36, highlight=highlight)
        np.testing.assert_array_equal(same, plain)


def test_mask_hides_objects(client):
    scene_id = make_scene(client, cube([0, 0, 0]), cube([3, 0, 0]))
    assert client.patch(f"/scenes/{scene_id}/objects/0", json={"mask": 1}).status_code == 200
    _, camera = render(client, scene_id, width=40, height=30)
    objects = picked_objects(client, scene_id, camera)
    masked, _ = render(client, scene_id, width=40, height=30, mask=2)
    np.testing.assert_array_equal(is_background(masked), objects != 1)


def test_empty_scene_is_all_background(client):
    # A scene is created with at least one mesh; removing its only object empties it.
    scene_id = make_scene(client, TRIANGLE)
    assert client.delete(f"/scenes/{scene_id}/objects/0").status_code == 204
    image, _ = render(client, scene_id, width=16, height=12)
    assert is_background(image).all()


@pytest.mark.parametrize("query, message", [
    ("width=0", "width: Input should be greater than or equal to 1"),
    ("height=-3", "height: Input should be greater than or equal to 1"),
    ("width=4097", "width: Input should be less than or equal to 4096"),
    ("height=abc", "height: Input should be a valid integer"),
    ("width=2.5", "width: Input should be a valid integer"),
    ("fov_y_deg=0", "fov_y_deg: Input should be greater than 0"),
    ("fov_y_deg=180", "fov_y_deg: Input should be less than 180"),
    ("fov_y_deg=nan", "fov_y_deg: Input should be a finite number"),
    ("fov_y_deg=inf", "fov_y_deg: Input should be a finite number"),
    ("fov_y_deg=wide", "fov_y_deg: Input should be a valid number"),
    ("fov_y_deg=1e-300", "with position left out, the framed camera is refused: the camera framing the scene "
                         "would stand "),
    ("fov_y_deg=1e-300", " from its target with fov_y_deg = 1e-300; positions must lie within 1e+30 of the world "
                         "origin"),
    ("position=1,2", "position must be three comma-separated numbers x,y,z, got 2 values"),
    ("position=1,2,3,4", "position must be three comma-separated numbers x,y,z, got 4 values"),
    ("position=", "position must be three comma-separated numbers x,y,z, got 1 value"),
    ("position=1,x,3", "position must be three comma-separated numbers x,y,z, 'x' is not a number"),
    ("position=nan,0,0", "position must hold finite numbers, got 'nan'"),
    ("position=1e400,0,0", "position must hold finite numbers, got '1e400'"),
    ("target=0,inf,0", "target must hold finite numbers, got 'inf'"),
    ("target=0;0;0", "target must be three comma-separated numbers x,y,z, got 1 value"),
    ("up=0,0,0", "up must not be the zero vector"),
    ("up=0,1", "up must be three comma-separated numbers"),
    ("position=0,0,5&target=0,0,5", "target must differ from position"),
    ("position=0,0,5&target=0,0,0&up=0,0,2", "must not be parallel to the view direction"),
    ("position=1e300,0,0&target=0,0,0", "position must lie within"),
    ("highlight=1,-2", "highlight must be comma-separated object ids (integers >= 0), got '-2'"),
    ("highlight=one", "highlight must be comma-separated object ids"),
    ("highlight=%C2%B2", "highlight must be comma-separated object ids"),
    ("highlight=99999999999999999999", "highlight: object id 99999999999999999999 is out of range"),
    ("mask=-1", "mask: Input should be greater than or equal to 0"),
    ("mask=4294967296", "mask: Input should be less than or equal to 4294967295"),
    ("fov=60", "unknown query parameter: fov"),
])
def test_bad_query_is_422_naming_the_parameter(client, triangle_scene, query, message):
    response = client.get(f"/scenes/{triangle_scene}/render?{query}")
    assert response.status_code == 422, response.text
    assert message in response.json()["detail"]


def test_unknown_scene_is_404(client):
    response = client.get("/scenes/" + "0" * 32 + "/render")
    assert response.status_code == 404
    assert response.json()["detail"] == "no scene '" + "0" * 32 + "'"
    assert client.get("/scenes/not-an-id/render").status_code == 404


def test_too_many_pixels_is_413(make_client):
    client = make_client(max_rays=1000)
    scene_id = make_scene(client, TRIANGLE)
    response = client.get(f"/scenes/{scene_id}/render", params={"width": 50, "height": 21})
    assert response.status_code == 413
    assert response.json()["detail"] == ("1050 pixels (50x21) in one request; the limit is 1000 (PICK_MAX_RAYS)")
    assert client.get(f"/scenes/{scene_id}/render", params={"width": 50, "height": 20}).status_code == 200
    # The default size is 640x480, over this limit too.
    assert client.get(f"/scenes/{scene_id}/render").status_code == 413


def test_viewer_page_loads_only_its_own_files(client):
    response = client.get("/viewer")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    page = response.text
    for element_id in ("render", "pick-status", "pick-object", "pick-triangle", "pick-distance",
                       "pick-barycentric", "pick-normal", "selection-list", "scene-list", "key-form"):
        assert f'id="{element_id}"' in page, element_id
    assert '<script src="http' not in page
    references = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert references and not any(re.match(r"(?:[a-z]+:)?//", reference) for reference in references)
    for reference in references:
        asset = client.get("/" + reference)
        assert asset.status_code == 200, reference
    script = client.get("/viewer/viewer.js")
    assert script.headers["content-type"].startswith("text/javascript")
    assert "import " not in script.text and "http://" not in script.text and "https://" not in script.text
    assert client.get("/viewer/viewer.css").headers["content-type"].startswith("text/css")
    assert client.get("/viewer/viewer.html").status_code == 404
    assert client.get("/viewer/..%2Fapp.py").status_code == 404


def test_viewer_is_open_while_render_needs_the_key(make_client):
    client = make_client(api_key="s3cret")
    good = {"Authorization": "Bearer s3cret"}
    for path in ("/viewer", "/viewer/viewer.js", "/viewer/viewer.css"):
        assert client.get(path).status_code == 200, path
    scene_id = make_scene_with_key(client, good)
    response = client.get(f"/scenes/{scene_id}/render")
    assert response.status_code == 401 and response.json()["detail"].startswith("missing API key")
    assert client.get(f"/scenes/{scene_id}/render", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get(f"/scenes/{scene_id}/render", headers=good).status_code == 200
    # The page is no door to anything else under /viewer.
    assert client.get("/viewer/other").status_code == 401
    schema = client.get("/openapi.json", headers=good).json()
    assert schema["paths"]["/scenes/{scene_id}/render"]["get"]["security"] == [{"bearer": []}]


def make_scene_with_key(client, headers) -> str:
    response = client.post("/scenes", json={"meshes": [TRIANGLE]}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["id"]
