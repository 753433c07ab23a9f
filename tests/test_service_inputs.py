"""Degenerate-but-finite and racing inputs: each answered correctly or refused
with a true message, never a 500.

The cases come from an API fuzzer's findings (issue 13): a field of view whose
radians underflow, a camera far from the world origin, directions too short
to trace, an edit racing the deletion of its object, pixels and rectangles
outside the image, and answers too big to send (``PICK_MAX_RESPONSE_MB``).
"""

import io
import json
import threading
import time

import numpy as np
import pytest
from PIL import Image

from service.api import limits as response_limits
from service.queries.rendering import BACKGROUND

from .conftest import TRIANGLE

#: A camera looking straight down at :data:`TRIANGLE` (pixel (50, 50) sees (0.25, 0.25, 0)).
CAMERA = {"position": [0.25, 0.25, 5], "target": [0.25, 0.25, 0], "up": [0, 1, 0], "fov_y_deg": 30,
          "width": 100, "height": 100}

#: The camera of a render's ``X-Camera`` header when it is 640 x 480.
RENDER_ASPECT = "1.33333"


def post(client, scene_id: str, route: str, body: dict):
    return client.post(f"/scenes/{scene_id}/{route}", json=body)


def detail(response) -> str:
    return response.json()["detail"]


# ------------------------------------------------------ field of view underflow

UNDERFLOW = "fov_y_deg = 5e-324 is too narrow to project: the focal length 1 / tan(fov_y / 2) is not a finite number"


def test_a_field_of_view_whose_radians_underflow_is_422_on_render(client, triangle_scene):
    # 5e-324 passes 0 < fov < 180, but is 0 radians: framing divided by its sine.
    response = client.get(f"/scenes/{triangle_scene}/render?fov_y_deg=5e-324")
    assert response.status_code == 422
    assert detail(response) == ("with position left out, the framed camera is refused: the camera framing the "
                                "scene would stand inf from its target with fov_y_deg = 5e-324; positions must lie "
                                "within 1e+30 of the world origin")
    response = client.get(f"/scenes/{triangle_scene}/render?fov_y_deg=5e-324&position=0,0,5")
    assert response.status_code == 422
    assert detail(response) == f"{UNDERFLOW} (with aspect {RENDER_ASPECT})"


@pytest.mark.parametrize("route, extra", [("pick/camera", {"pixels": [[50, 50]]}), ("select", {"rect": [0, 0, 9, 9]})])
def test_a_field_of_view_whose_radians_underflow_is_422_on_camera_routes(client, triangle_scene, route, extra):
    response = post(client, triangle_scene, route, {**CAMERA, "fov_y_deg": 5e-324, **extra})
    assert response.status_code == 422
    assert detail(response) == f"{UNDERFLOW} (with aspect 1)"


def test_a_narrow_field_of_view_far_away_is_422(client, triangle_scene):
    response = post(client, triangle_scene, "pick/camera",
                    {**CAMERA, "position": [1e29, 0.25, 5], "fov_y_deg": 1e-300, "pixels": [[50, 50]]})
    assert response.status_code == 422
    assert detail(response).startswith("fov_y_deg = 1e-300 is too narrow for a camera ")
    assert detail(response).endswith(" from the world origin: projection @ view would overflow")


def test_a_narrow_but_representable_field_of_view_picks(client, triangle_scene):
    response = post(client, triangle_scene, "pick/camera", {**CAMERA, "fov_y_deg": 1e-10, "pixels": [[50, 50]]})
    assert response.status_code == 200, response.text
    result = response.json()["results"][0]
    assert result["hit"] and result["point"] == pytest.approx([0.25, 0.25, 0.0], abs=1e-12)


# ------------------------------------------------------------ far cameras

#: A triangle 1e12 across around the world origin.
HUGE_TRIANGLE = {"vertices": [[-5e11, -5e11, 0.0], [5e11, -5e11, 0.0], [0.0, 5e11, 0.0]], "faces": [[0, 1, 2]]}


def test_the_default_render_of_a_scene_1e12_across_shows_it(client):
    # Framing puts the eye ~2e12 away: that camera was taken for orthographic and cast NaN rays.
    scene = client.post("/scenes", json={"meshes": [HUGE_TRIANGLE]}).json()["id"]
    response = client.get(f"/scenes/{scene}/render")
    assert response.status_code == 200, response.text
    image = np.asarray(Image.open(io.BytesIO(response.content)))
    assert image.shape == (480, 640, 3)
    assert tuple(image[240, 320]) != BACKGROUND
    camera = json.loads(response.headers["X-Camera"])
    distance = float(np.linalg.norm(np.subtract(camera["position"], camera["target"])))
    assert distance > 1e12
    # the centre pixel's ray reaches the target, at the camera's distance
    picked = post(client, scene, "pick/camera", {**camera, "pixels": [[320, 240]]}).json()["results"][0]
    assert picked["hit"] and picked["object"]["id"] == 0
    assert picked["t"] == pytest.approx(distance, rel=1e-9)
    assert np.allclose(picked["point"], camera["target"], rtol=0, atol=1e-6 * distance)


def test_the_default_render_of_a_scene_too_big_to_frame_says_why(client):
    vertices = [[-4e36, -4e36, 0.0], [4e36, -4e36, 0.0], [0.0, 4e36, 0.0]]
    scene = client.post("/scenes", json={"meshes": [{"vertices": vertices, "faces": [[0, 1, 2]]}]}).json()["id"]
    response = client.get(f"/scenes/{scene}/render")
    assert response.status_code == 422
    assert detail(response).startswith("with position left out, the framed camera is refused: the camera framing "
                                       "the scene would stand ")
    assert detail(response).endswith(" from its target with fov_y_deg = 45.0; positions must lie within 1e+30 of "
                                     "the world origin")


# -------------------------------------------------------- tiny directions

TOO_SHORT = "is too short to trace: length 1.2e-300, the shortest accepted is 1e-150"


@pytest.mark.parametrize("extra", [{}, {"tmin": 0.0}], ids=["fast path", "full path"])
def test_a_direction_too_short_to_trace_is_422_with_its_length(client, triangle_scene, extra):
    response = post(client, triangle_scene, "pick", {"origin": [0.2, 0.2, 1], "direction": [0, 0, -1.2e-300],
                                                     **extra})
    assert response.status_code == 422
    assert detail(response) == f"direction row 0 {TOO_SHORT}"


def test_a_direction_too_short_to_trace_is_422_in_a_batch(client, triangle_scene):
    response = post(client, triangle_scene, "pick/batch", {"origins": [[0.2, 0.2, 1]] * 2,
                                                           "directions": [[0, 0, -1], [0, 0, -1.2e-300]]})
    assert response.status_code == 422
    assert detail(response) == f"direction row 1 {TOO_SHORT}"


def test_a_short_direction_above_the_limit_is_traced_parametrically(client, triangle_scene):
    response = post(client, triangle_scene, "pick", {"origin": [0.2, 0.2, 1], "direction": [0, 0, -2e-150]})
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["hit"] and result["t"] == pytest.approx(5e149, rel=1e-9)
    assert result["distance"] == pytest.approx(1.0, rel=1e-9)
    batch = post(client, triangle_scene, "pick/batch", {"origins": [[0.2, 0.2, 1]], "directions": [[0, 0, -2e-150]]})
    assert batch.status_code == 200 and batch.json()["t"][0] == pytest.approx(5e149, rel=1e-9)


# ------------------------------------------------------ edits racing deletes

RACE_ROUNDS = 120
RACE_SECONDS = 15.0


def race(first, second) -> None:
    """Run ``first`` and ``second`` on two threads released together."""
    barrier = threading.Barrier(2)
    errors = []

    def run(action):
        try:
            barrier.wait(timeout=10)
            action()
        except BaseException as error:  # noqa: BLE001 (reported on the test's thread)
            errors.append(error)

    threads = [threading.Thread(target=run, args=(action,)) for action in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    if errors:
        raise errors[0]


def test_a_patch_racing_the_delete_of_its_object_is_200_or_404(client, triangle_scene):
    # The edit was saved, then the route read the object back from the scene:
    # a DELETE landing in between made that read a KeyError, a 500.
    base = f"/scenes/{triangle_scene}/objects"
    outcomes = {200: 0, 404: 0}
    deadline = time.monotonic() + RACE_SECONDS
    for round_ in range(RACE_ROUNDS):
        if time.monotonic() > deadline:
            break
        oid = client.post(base, json={"mesh": 0, "name": "victim"}).json()["objects"][0]["id"]
        answers = {}
        race(lambda: answers.__setitem__("patch", client.patch(f"{base}/{oid}", json={"name": f"moved {round_}"})),
             lambda: answers.__setitem__("delete", client.delete(f"{base}/{oid}")))
        patch, delete = answers["patch"], answers["delete"]
        assert delete.status_code == 204, delete.text
        assert patch.status_code in outcomes, patch.text
        outcomes[patch.status_code] += 1
        if patch.status_code == 200:
            # the object as the edit left it
            assert patch.json()["id"] == oid and patch.json()["name"] == f"moved {round_}"
        else:
            assert detail(patch) == f"no object {oid} in this scene"
    assert sum(outcomes.values()) >= 20
    assert client.get(base.rsplit("/", 1)[0]).status_code == 200


def test_a_post_racing_the_delete_of_its_new_object_answers_what_it_made(client, triangle_scene):
    base = f"/scenes/{triangle_scene}/objects"
    deleted_in_the_race = 0
    deadline = time.monotonic() + RACE_SECONDS
    next_id = client.post(base, json={"mesh": 0}).json()["objects"][0]["id"] + 1
    for round_ in range(RACE_ROUNDS):
        if time.monotonic() > deadline:
            break
        answers = {}

        def delete_the_next_object(oid=next_id):
            # ids are given in order and never reused: keep deleting the one the POST will make
            stop = time.monotonic() + 5
            while time.monotonic() < stop:
                response = client.delete(f"{base}/{oid}")
                if response.status_code == 204:
                    answers["deleted"] = True
                    return
                assert response.status_code == 404, response.text
                if "post" in answers:
                    return

        race(lambda: answers.__setitem__("post", client.post(base, json={"mesh": 0, "name": f"new {round_}"})),
             delete_the_next_object)
        response = answers["post"]
        assert response.status_code == 201, response.text
        (made,) = response.json()["objects"]
        assert made["id"] == next_id and made["name"] == f"new {round_}" and made["kind"] == "mesh"
        if answers.get("deleted"):
            deleted_in_the_race += 1
            assert client.get(f"{base}/{next_id}").status_code == 404
        next_id += 1
    assert deleted_in_the_race > 0


# --------------------------------------------------- outside the image

def test_pixels_outside_the_image_are_422_naming_the_first(client, triangle_scene):
    inside = post(client, triangle_scene, "pick/camera", {**CAMERA, "pixels": [[0, 0], [100, 100], [50, 50]]})
    assert inside.status_code == 200, inside.text
    for pixels, expected in (([[1, 1], [100.5, 3], [-1, -1]], "pixels[1] = [100.5, 3.0]"),
                             ([[-0.25, 3]], "pixels[0] = [-0.25, 3.0]"),
                             ([[3, 1e6]], "pixels[0] = [3.0, 1000000.0]")):
        response = post(client, triangle_scene, "pick/camera", {**CAMERA, "pixels": pixels})
        assert response.status_code == 422
        assert detail(response) == (f"{expected} lies outside the 100x100 image: x must be within [0, 100] "
                                    "and y within [0, 100]")


def test_a_select_rect_takes_its_corners_in_either_order(client, triangle_scene):
    expected = {"objects": [{"id": 0, "name": "tri", "triangles": [0]}]}
    for rect in ([40, 40, 60, 60], [60, 60, 40, 40], [60, 40, 40, 60], [40, 60, 60, 40]):
        response = post(client, triangle_scene, "select", {**CAMERA, "rect": rect, "mode": "triangles"})
        assert response.status_code == 200 and response.json() == expected, (rect, response.text)
    # partly outside the image is a marquee dragged past its edge
    response = post(client, triangle_scene, "select", {**CAMERA, "rect": [40, 40, 160, -60]})
    assert response.status_code == 200 and [o["id"] for o in response.json()["objects"]] == [0]


@pytest.mark.parametrize("rect", [[150, 150, 200, 200], [-20, 10, 0, 20], [10, 100, 20, 130], [120, 10, 101, 20]])
def test_a_select_rect_wholly_outside_the_image_is_422(client, triangle_scene, rect):
    response = post(client, triangle_scene, "select", {**CAMERA, "rect": rect})
    assert response.status_code == 422
    shown = [float(value) for value in rect]
    assert detail(response) == (f"rect {shown} lies wholly outside the 100x100 image: "
                                "it must overlap [0, 100] x [0, 100]")


# ------------------------------------------------------------ answer size

LIMIT_NOTE = "MiB (PICK_MAX_RESPONSE_MB)"


def test_a_camera_pick_too_big_to_answer_is_413_before_any_work(make_client):
    client = make_client(max_response_mb=0.001)  # 1,048 bytes
    scene = client.post("/scenes", json={"meshes": [{"name": "tri", **TRIANGLE}]}).json()["id"]
    assert post(client, scene, "pick/camera", {**CAMERA, "pixels": [[50, 50]]}).status_code == 200
    size = response_limits.camera_pick(2, client.app.state.store.get(scene).view)
    # an invalid camera (target == position) is not even looked at: the size is checked first
    response = post(client, scene, "pick/camera", {**CAMERA, "target": CAMERA["position"], "pixels": [[50, 50]] * 2})
    assert response.status_code == 413
    assert detail(response) == (f"a camera pick of 2 pixels could answer up to {size:,} bytes; the limit is 0.001 "
                                f"{LIMIT_NOTE}: send fewer pixels per request")


def test_the_default_limit_refuses_a_camera_pick_of_the_default_ray_limit(client, triangle_scene):
    # 4,000,000 pixels (PICK_MAX_RAYS) once answered some 600 MB of JSON.
    view = client.app.state.store.get(triangle_scene).view
    assert response_limits.camera_pick(4_000_000, view) > 128 * 2**20
    per_pixel = response_limits.camera_pick(2, view) - response_limits.camera_pick(1, view)
    over = (128 * 2**20 - response_limits.camera_pick(0, view)) // per_pixel + 1
    response = post(client, triangle_scene, "pick/camera", {**CAMERA, "pixels": [[50, 50]] * over})
    assert response.status_code == 413
    assert detail(response).startswith(f"a camera pick of {over} pixels could answer up to 128.0 MiB")
    assert detail(response).endswith(f"; the limit is 128 {LIMIT_NOTE}: send fewer pixels per request")


def test_batches_too_big_to_answer_are_413(make_client):
    client = make_client(max_response_mb=0.001)
    scene = client.post("/scenes", json={"meshes": [TRIANGLE]}).json()["id"]
    rays = {"origins": [[0.2, 0.2, 1]] * 3, "directions": [[0, 0, -1]] * 3}
    assert post(client, scene, "pick/batch", rays).status_code == 200
    response = post(client, scene, "pick/batch", {"origins": [[0.2, 0.2, 1]] * 4, "directions": [[0, 0, -1]] * 4})
    assert response.status_code == 413
    assert detail(response) == (f"a JSON batch of 4 rays could answer up to {response_limits.json_batch(4):,} bytes; "
                                f"the limit is 0.001 {LIMIT_NOTE}: send fewer rays, or use the binary form "
                                "(32 bytes per ray)")
    # binary: 32 bytes a ray, so 32 rays (1,024 bytes) fit and 33 do not
    headers = {"content-type": "application/octet-stream"}
    ray = np.array([[0.2, 0.2, 1, 0, 0, -1]], "<f4")
    fits = client.post(f"/scenes/{scene}/pick/batch.bin", content=np.repeat(ray, 32, axis=0).tobytes(),
                       headers=headers)
    assert fits.status_code == 200 and len(fits.content) == 1024
    response = client.post(f"/scenes/{scene}/pick/batch.bin", content=np.repeat(ray, 33, axis=0).tobytes(),
                           headers=headers)
    assert response.status_code == 413
    assert detail(response) == (f"a binary batch of 33 rays could answer up to 1,056 bytes; the limit is 0.001 "
                                f"{LIMIT_NOTE}: send fewer rays per request")


def test_json_bodies_sure_to_hold_too_many_items_are_413_before_parsing(make_client):
    """Every item of a valid body opens its arrays, and nothing else in these bodies opens more than a
    few: a body with too many is refused from its bytes. Shown by bodies that are not even valid JSON
    (parsing would say 422): they are refused 413 first."""
    client = make_client(max_rays=100)
    scene = client.post("/scenes", json={"meshes": [TRIANGLE]}).json()["id"]
    cut = b"]"  # the end of the body is missing: invalid JSON
    batch = b'{"origins": [' + b",".join([b"[0.2,0.2,1]"] * 200) + b'], "directions": [' + \
        b",".join([b"[0,0,-1]"] * 200) + cut
    points = b'{"points": [' + b",".join([b"[0.2,0.2,1]"] * 200) + cut
    camera = json.dumps({**CAMERA, "pixels": []}).encode()[:-2] + b",".join([b"[50,50]"] * 200) + cut
    for path, body, message in (("pick/batch", batch, "at least 199 rays in one request"),
                                ("sphere-cast", batch, "at least 199 rays in one request"),
                                ("closest", points, "at least 198 points in one request"),
                                ("contains", points, "at least 198 points in one request"),
                                ("pick/camera", camera, "at least 191 pixels in one request")):
        response = client.post(f"/scenes/{scene}/{path}", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 413, (path, response.text)
        assert detail(response) == f"{message}; the limit is 100 (PICK_MAX_RAYS)", path


def test_json_bodies_long_for_their_items_are_still_answered(make_client):
    """Whitespace and long numbers make a body long, not its items many: no refusal from its length."""
    client = make_client(max_rays=10, max_response_mb=0.01)
    scene = client.post("/scenes", json={"meshes": [TRIANGLE]}).json()["id"]
    padding = " " * 100_000
    long_number = "0." + "2" * 5_000
    rays = {"origins": [[long_number, 0.2, 1]] * 10, "directions": [[0, 0, -1]] * 10}
    body = json.dumps(rays).replace('"' + long_number + '"', long_number) + padding
    response = client.post(f"/scenes/{scene}/pick/batch", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text
    assert response.json()["hit"] == [True] * 10
    camera = json.dumps({**CAMERA, "pixels": [[50, 50]] * 3}) + padding
    response = client.post(f"/scenes/{scene}/pick/camera", content=camera, headers={"content-type": "application/json"})
    assert response.status_code == 200 and len(response.json()["results"]) == 3, response.text


def test_an_all_hits_pick_too_big_to_answer_is_413(make_client):
    client = make_client(max_response_mb=0.001)
    scene = client.post("/scenes", json={"meshes": [{"name": "tri", **TRIANGLE}]}).json()["id"]
    ray = {"origin": [0.2, 0.2, 1], "direction": [0, 0, -1], "all_hits": True}
    assert len(post(client, scene, "pick", ray).json()["hits"]) == 1
    below = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, -1], [0, 0, 0, 1]]
    client.post(f"/scenes/{scene}/objects", json={"mesh": 0, "name": "tri", "transform": below})
    response = post(client, scene, "pick", ray)
    assert response.status_code == 413
    size = response_limits.all_hits(2, client.app.state.store.get(scene).view)
    assert detail(response) == (f"an all_hits pick crossing 2 surfaces could answer up to {size:,} bytes; the limit "
                                f"is 0.001 {LIMIT_NOTE}: narrow it with tmin and tmax, mask, objects or exclude")


def test_a_selection_too_big_to_answer_is_413(make_client):
    client = make_client(max_response_mb=0.0001)  # 104 bytes
    # a strip of 20 triangles under the camera
    xs = np.linspace(0.0, 0.5, 11)
    vertices = [[x, y, 0.0] for x in xs for y in (0.0, 0.5)]
    faces = [[2 * k, 2 * k + 2, 2 * k + 1] for k in range(10)] + [[2 * k + 1, 2 * k + 2, 2 * k + 3] for k in range(10)]
    strip = {"name": "tri", "vertices": vertices, "faces": faces}
    scene = client.post("/scenes", json={"meshes": [strip]}).json()["id"]
    body = {**CAMERA, "rect": [0, 0, 100, 100]}
    assert post(client, scene, "select", body).status_code == 200
    response = post(client, scene, "select", {**body, "mode": "triangles"})
    assert response.status_code == 413
    size = response_limits.selection(1, 20, 19, client.app.state.store.get(scene).view)
    assert detail(response) == (f"a selection of 1 objects and 20 triangles could answer up to {size:,} bytes; the "
                                f"limit is 0.0001 {LIMIT_NOTE}: select a smaller rect, or in mode \"objects\"")


def test_a_render_too_big_to_answer_is_413(make_client):
    client = make_client(max_response_mb=0.5)
    scene = client.post("/scenes", json={"meshes": [TRIANGLE]}).json()["id"]
    assert client.get(f"/scenes/{scene}/render?width=320&height=240").status_code == 200
    response = client.get(f"/scenes/{scene}/render")
    assert response.status_code == 413
    assert detail(response) == (f"a 640x480 render could answer up to 0.9 MiB; the limit is 0.5 {LIMIT_NOTE}: "
                                "ask for a smaller image")


def test_the_size_bounds_hold_for_real_answers(client):
    # Long names with characters JSON escapes, hits and misses, numbers of every length.
    name = "\u0001\"\\é" * 30
    scene = client.post("/scenes", json={"meshes": [{"name": name, **TRIANGLE}]}).json()["id"]
    client.post(f"/scenes/{scene}/objects", json={"shape": "sphere", "radius": 0.1, "name": name,
                                                   "transform": [[1, 0, 0, 0.2], [0, 1, 0, 0.2], [0, 0, 1, 0.5],
                                                                 [0, 0, 0, 1]]})
    view = client.app.state.store.get(scene).view
    rng = np.random.default_rng(5)
    pixels = rng.uniform(0, 100, (200, 2)).tolist()
    camera = post(client, scene, "pick/camera", {**CAMERA, "pixels": pixels})
    assert camera.status_code == 200 and len(camera.content) <= response_limits.camera_pick(200, view)
    origins = np.column_stack([rng.uniform(-0.5, 1.0, (300, 2)), np.full(300, 1.0)]).tolist()
    batch = post(client, scene, "pick/batch", {"origins": origins, "directions": [[0, 0, -1.0]] * 300})
    assert batch.status_code == 200 and len(batch.content) <= response_limits.json_batch(300)
    every = post(client, scene, "pick", {"origin": [0.2, 0.2, 1], "direction": [0, 0, -1], "all_hits": True})
    crossed = len(every.json()["hits"])
    assert crossed == 3 and len(every.content) <= response_limits.all_hits(crossed, view)
    selected = post(client, scene, "select", {**CAMERA, "rect": [0, 0, 100, 100], "mode": "triangles"})
    assert selected.status_code == 200 and len(selected.content) <= response_limits.selection(2, 1, 0, view)
    png = client.get(f"/scenes/{scene}/render?width=97&height=31")
    assert png.status_code == 200 and len(png.content) <= response_limits.png(97, 31)
