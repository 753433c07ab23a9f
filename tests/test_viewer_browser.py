"""The ``/viewer`` page in a real headless Chromium, against a real ``python -m service``.

The service runs with an API key, so the page must ask for it; ``/`` leads to
the page, which opens the first scene by itself (an empty service gets the
curl line that uploads one instead, and never a broken image) and shows the
project's icon; a click on the image must pick what that pixel shows (the
panel agrees with a direct ``/pick/camera`` on the camera the page rendered
with, its numbers each on one line), a drag must select (left to right a
window: what lies wholly inside; right to left a crossing: what it touches,
each drawn its own way), and orbiting and zooming must move the camera the
picks use.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs
them; ``testkit.browser`` points Selenium at both, so Selenium Manager never
downloads a browser or a driver).
"""

import json
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from testkit.browser import NO_CHROMIUM, chromium, chromium_installed

pytestmark = pytest.mark.skipif(not chromium_installed(), reason=NO_CHROMIUM)

pytest.importorskip("selenium.webdriver", reason="selenium is not installed: pip install -e '.[test]'")
import httpx  # noqa: E402  (after the skips: nothing to import when the test cannot run)
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.actions.action_builder import ActionBuilder  # noqa: E402
from selenium.webdriver.common.actions.mouse_button import MouseButton  # noqa: E402
from selenium.webdriver.common.actions.wheel_input import ScrollOrigin  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

import bvh  # noqa: E402
from service.queries.rendering import BACKGROUND  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED_MESHES = Path(__file__).resolve().parents[2] / "shared" / "meshes"
BUNNY = SHARED_MESHES / "stanford-bunny.obj"
TORUS = REPO / "sample_meshes" / "torus.ply"

API_KEY = "viewer-test-key"
AUTH = {"Authorization": f"Bearer {API_KEY}"}

#: The first start after a change to bvh/ compiles numba's kernels: minutes.
READY_TIMEOUT = 600.0
#: A render, a pick or a selection, including the browser's part.
UI_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def running_service(directory: Path, **settings: str):
    """Base URL of a ``python -m service`` on a free port, data in ``directory``, with an API key
    and ``settings`` (``PICK_*`` variables); stopped afterwards."""
    port = free_port()
    env = {name: value for name, value in os.environ.items() if not name.startswith("PICK_")}
    env.update(PICK_HOST="127.0.0.1", PICK_PORT=str(port), PICK_DATA_DIR=str(directory / "data"),
               PICK_API_KEY=API_KEY, PICK_LOG_LEVEL="warning", **settings)
    log_path = directory / "server.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "service"], cwd=REPO, env=env, stdout=log,
                                   stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            if process.poll() is not None:
                pytest.fail(f"the service exited with {process.returncode}:\n{log_path.read_text()}")
            try:
                if httpx.get(f"{base}/ready", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the service was not ready within {READY_TIMEOUT:.0f} s:\n{log_path.read_text()}")
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The service the tests upload scenes to."""
    with running_service(tmp_path_factory.mktemp("viewer-server")) as base:
        yield base


@pytest.fixture(scope="module")
def empty_server(tmp_path_factory):
    """A service that holds no scene, and never will."""
    with running_service(tmp_path_factory.mktemp("empty-server")) as base:
        yield base


@pytest.fixture(scope="module")
def scene_id(server) -> str:
    """The Stanford bunny from ../shared/meshes, or the sample torus in a clone without that folder."""
    path = BUNNY if BUNNY.exists() else TORUS
    with open(path, "rb") as stream:
        response = httpx.post(f"{server}/scenes/upload", files={"file": (path.name, stream)}, data={"name": path.stem},
                              headers=AUTH, timeout=120)
    assert response.status_code == 201, response.text
    return response.json()["id"]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Debian Chromium through its own chromedriver."""
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as driver:
        yield driver


def wait_for(driver, condition, what: str, timeout: float = UI_TIMEOUT):
    return WebDriverWait(driver, timeout).until(lambda _: condition(), message=f"waiting for {what}")


def renders(driver) -> int:
    return int(driver.find_element(By.ID, "render").get_attribute("data-renders") or 0)


def shown_camera(driver) -> dict:
    return json.loads(driver.find_element(By.ID, "render").get_attribute("data-camera"))


def give_key_when_asked(driver, done, what: str) -> None:
    """Wait until ``done()`` or the key form; give the API key in the form if it came first, then wait for ``done()``."""
    key_form = driver.find_element(By.ID, "key-form")
    wait_for(driver, lambda: key_form.is_displayed() or done(), f"the key form or {what}")
    if not done() and key_form.is_displayed():
        driver.find_element(By.ID, "api-key").send_keys(API_KEY)
        key_form.find_element(By.TAG_NAME, "button").click()
    wait_for(driver, done, what)


def open_viewer(driver, server: str, scene: str) -> None:
    """Load ``/viewer?scene=...``, give the API key when the page asks, and wait for the first image."""
    driver.get(f"{server}/viewer?scene={scene}")
    give_key_when_asked(driver, lambda: renders(driver) > 0, "the first render")


def pixel_colour(driver, x: int, y: int) -> list[int]:
    """RGB of the image on screen at pixel (x, y), read back through a canvas."""
    return driver.execute_script("""
        const image = document.getElementById("render");
        const canvas = document.createElement("canvas");
        canvas.width = image.naturalWidth;
        canvas.height = image.naturalHeight;
        const context = canvas.getContext("2d");
        context.drawImage(image, 0, 0);
        return Array.from(context.getImageData(arguments[0], arguments[1], 1, 1).data.slice(0, 3));
    """, x, y)


def direct_pick(server: str, scene: str, camera: dict, pixel) -> dict:
    response = httpx.post(f"{server}/scenes/{scene}/pick/camera", json={**camera, "pixels": [pixel]}, headers=AUTH)
    assert response.status_code == 200, response.text
    return response.json()["results"][0]


def click_offset(server: str, scene: str, camera: dict) -> tuple[int, int]:
    """Where to click, from the image's centre: the centre when it shows the mesh (the bunny), else
    the nearest pixel whose neighbours all hit too (the torus shows its hole in the middle)."""
    width, height = camera["width"], camera["height"]
    candidates = sorted(((dx, dy) for dx in range(-width // 2 + 8, width // 2 - 8, 8)
                         for dy in range(-height // 2 + 8, height // 2 - 8, 8)), key=lambda d: d[0] ** 2 + d[1] ** 2)
    for dx, dy in candidates:
        around = [[width / 2 + dx + ex, height / 2 + dy + ey] for ex, ey in ((0, 0), (-3, 0), (3, 0), (0, -3), (0, 3))]
        response = httpx.post(f"{server}/scenes/{scene}/pick/camera", json={**camera, "pixels": around},
                              headers=AUTH)
        if all(result["hit"] for result in response.json()["results"]):
            return dx, dy
    pytest.fail("the default view shows no surface to click")


def click_and_read_panel(driver, dx: int, dy: int) -> dict:
    image = driver.find_element(By.ID, "render")
    status = driver.find_element(By.ID, "pick-status")
    actions = ActionChains(driver)
    if (dx, dy) == (0, 0):
        actions.move_to_element(image)
    else:
        actions.move_to_element_with_offset(image, dx, dy)
    actions.click().perform()
    wait_for(driver, lambda: status.text in ("hit", "miss"), "the pick's answer")
    text = {field: driver.find_element(By.ID, f"pick-{field}").text
            for field in ("status", "object", "triangle", "distance", "barycentric", "normal")}
    text["object_id"] = driver.find_element(By.ID, "pick-object").get_attribute("data-id")
    text["pixel"] = json.loads(driver.find_element(By.ID, "marker").get_attribute("data-pixel"))
    return text


def assert_panel_matches(panel: dict, expected: dict) -> None:
    assert panel["status"] == "hit"
    assert expected["hit"] is True
    assert panel["object_id"] == str(expected["object"]["id"])
    assert panel["object"].startswith(f"{expected['object']['id']} (")
    assert panel["triangle"] == str(expected["triangle"])
    assert panel["distance"] == f"{expected['distance']:.6f}"
    assert panel["barycentric"] == ", ".join(f"{w:.4f}" for w in expected["barycentric"])
    assert panel["normal"] == ", ".join(f"{n:.4f}" for n in expected["normal"])


def assert_no_script_errors(driver) -> None:
    # A 401 before the key is given is expected; anything else severe is a bug in the page.
    errors = [entry["message"] for entry in driver.get_log("browser")
              if entry["level"] == "SEVERE" and "401" not in entry["message"]]
    assert not errors, errors


def test_click_picks_what_the_pixel_shows(server, scene_id, browser, tmp_path_factory):
    open_viewer(browser, server, scene_id)
    camera = shown_camera(browser)
    image = browser.find_element(By.ID, "render")
    assert browser.execute_script("return [arguments[0].naturalWidth, arguments[0].naturalHeight]", image) == [
        camera["width"], camera["height"]]
    assert camera["up"] == [0.0, 0.0, 1.0]
    dx, dy = click_offset(server, scene_id, camera)
    if BUNNY.exists():
        assert (dx, dy) == (0, 0), "the bunny is framed at the centre of the view"
    panel = click_and_read_panel(browser, dx, dy)
    # The page sends the centre of the clicked pixel, which is the centre of the image here.
    assert all(abs(coordinate - (size / 2 + offset)) <= 1.0 for coordinate, size, offset
               in zip(panel["pixel"], (camera["width"], camera["height"]), (dx, dy)))
    assert all(coordinate % 1 == 0.5 for coordinate in panel["pixel"])
    assert_panel_matches(panel, direct_pick(server, scene_id, camera, panel["pixel"]))
    assert browser.execute_script("return window.viewer.lastPick.camera") == camera
    # What the pixel shows is the object, not the grey background.
    assert pixel_colour(browser, int(panel["pixel"][0]), int(panel["pixel"][1])) != list(BACKGROUND)
    assert browser.find_element(By.ID, "marker").is_displayed()
    browser.save_screenshot(str(tmp_path_factory.getbasetemp() / "viewer_click.png"))
    assert_no_script_errors(browser)


def test_drag_selects_and_highlights(server, scene_id, browser):
    open_viewer(browser, server, scene_id)
    camera = shown_camera(browser)
    before = renders(browser)
    width, height = camera["width"], camera["height"]
    dx, dy = click_offset(server, scene_id, camera)
    centre = (int(width / 2 + dx), int(height / 2 + dy))
    colour_before = pixel_colour(browser, *centre)
    image = browser.find_element(By.ID, "render")
    # Right to left: a crossing marquee, which takes what it touches.
    (ActionChains(browser).move_to_element_with_offset(image, width // 3, -height // 3).click_and_hold()
     .move_by_offset(-20, 20).move_by_offset(-(2 * width // 3 - 20), 2 * height // 3 - 20).release().perform())
    selection = browser.find_element(By.ID, "selection-list")
    wait_for(browser, lambda: selection.find_elements(By.TAG_NAME, "li"), "the selection")
    listed = [item.get_attribute("data-id") for item in selection.find_elements(By.TAG_NAME, "li")]
    expected = httpx.post(f"{server}/scenes/{scene_id}/select", headers=AUTH,
                          json={**camera, "rect": [width / 2 - width // 3, height / 2 - height // 3,
                                                   width / 2 + width // 3, height / 2 + height // 3]}).json()
    assert listed == [str(item["id"]) for item in expected["objects"]] == ["0"]
    assert browser.execute_script("return window.viewer.lastSelect.containment") == "crossing"
    # The selection is drawn: a render with highlight=0 from the same camera, in another colour.
    wait_for(browser, lambda: renders(browser) > before, "the highlighted render")
    assert shown_camera(browser) == camera
    assert browser.execute_script("return window.viewer.highlight") == [0]
    assert pixel_colour(browser, *centre) != colour_before
    assert not browser.find_element(By.ID, "marquee").is_displayed()
    assert_no_script_errors(browser)


def test_orbit_and_zoom_move_the_camera_that_picks_use(server, scene_id, browser):
    open_viewer(browser, server, scene_id)
    start = shown_camera(browser)
    image = browser.find_element(By.ID, "render")
    count = renders(browser)

    def settled_camera() -> dict:
        # Moves send renders one after another: wait until the last has landed.
        wait_for(browser, lambda: renders(browser) > count and
                 not browser.execute_script("return window.viewer.rendering"), "the new view")
        return shown_camera(browser)

    actions = ActionBuilder(browser)
    actions.pointer_action.move_to(image).pointer_down(MouseButton.RIGHT).move_by(40, 0).move_by(40, 10)
    actions.pointer_action.pointer_up(MouseButton.RIGHT)
    actions.perform()
    orbited = settled_camera()
    assert orbited["target"] == start["target"] and orbited["position"] != start["position"]
    radius = [sum((p - t) ** 2 for p, t in zip(camera["position"], camera["target"])) ** 0.5
              for camera in (start, orbited)]
    assert radius[1] == pytest.approx(radius[0], rel=1e-9)
    # The right button's context menu never opened, so the page still takes the next click.
    count = renders(browser)
    ActionChains(browser).scroll_from_origin(ScrollOrigin.from_element(image), 0, 200).perform()
    zoomed = settled_camera()
    assert sum((p - t) ** 2 for p, t in zip(zoomed["position"], zoomed["target"])) ** 0.5 > radius[1] * 1.05

    dx, dy = click_offset(server, scene_id, zoomed)
    panel = click_and_read_panel(browser, dx, dy)
    assert_panel_matches(panel, direct_pick(server, scene_id, zoomed, panel["pixel"]))
    assert_no_script_errors(browser)


# ------------------------------------------------------------------ root, first scene, empty service, icon


def listed_scene_ids(server: str) -> list[str]:
    response = httpx.get(f"{server}/scenes", headers=AUTH)
    assert response.status_code == 200, response.text
    return [scene["id"] for scene in response.json()["scenes"]]


def test_root_opens_the_first_scene_without_a_click(server, scene_id, browser):
    browser.get(f"{server}/")
    give_key_when_asked(browser, lambda: renders(browser) > 0, "the first render")
    first = listed_scene_ids(server)[0]
    assert browser.current_url == f"{server}/viewer?scene={first}"
    assert browser.execute_script("return window.viewer.sceneId") == first
    image = browser.find_element(By.ID, "render")
    # A real image, shown: no broken-image icon.
    assert image.is_displayed()
    assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image) > 0
    assert not browser.find_element(By.ID, "empty").is_displayed()
    assert_no_script_errors(browser)


def test_unknown_scene_falls_back_to_the_first(server, scene_id, browser):
    browser.get(f"{server}/viewer?scene=no-such-scene")
    give_key_when_asked(browser, lambda: renders(browser) > 0, "the first render")
    assert browser.execute_script("return window.viewer.sceneId") == listed_scene_ids(server)[0]
    status = browser.find_element(By.ID, "status")
    assert status.text == 'no scene "no-such-scene" here: showing the first one'


def test_an_empty_service_says_how_to_upload(empty_server, browser):
    browser.get(f"{empty_server}/")
    empty = browser.find_element(By.ID, "empty")
    give_key_when_asked(browser, empty.is_displayed, "the empty-service message")
    assert "No scenes yet — upload one" in empty.text
    command = browser.find_element(By.ID, "upload-command").text
    assert command == f'curl -F file=@mesh.obj -H "Authorization: Bearer <your key>" {empty_server}/scenes/upload'
    # Nothing rendered, nothing broken: the image stays hidden.
    assert not browser.find_element(By.ID, "render").is_displayed()
    assert renders(browser) == 0
    assert_no_script_errors(browser)


def test_the_page_has_its_icon(server, browser):
    browser.get(f"{server}/viewer")
    icon = browser.execute_script("""
        const link = document.querySelector('link[rel="icon"]');
        const response = await fetch(link.href);
        return [link.href, response.status, response.headers.get("content-type"), (await response.text()).slice(0, 4)];
    """)
    assert icon == [f"{server}/viewer/favicon.svg", 200, "image/svg+xml", "<svg"]
    response = httpx.get(f"{server}/favicon.ico")
    assert response.status_code == 200 and response.headers["content-type"] == "image/svg+xml"


# --------------------------------------------------------------- numbers, window and crossing marquees


def test_pick_panel_numbers_stay_on_one_line(server, scene_id, browser):
    open_viewer(browser, server, scene_id)
    dx, dy = click_offset(server, scene_id, shown_camera(browser))
    click_and_read_panel(browser, dx, dy)
    lines = browser.execute_script("""
        return Array.from(document.querySelectorAll("aside dd")).map((dd) => {
            const range = document.createRange();
            range.selectNodeContents(dd);
            const tops = new Set(Array.from(range.getClientRects()).map((rect) => Math.round(rect.top)));
            return [dd.id, dd.textContent, tops.size, dd.scrollWidth <= dd.clientWidth];
        });
    """)
    assert all(count == 1 and fits for _, _, count, fits in lines), lines
    assert {name for name, *_ in lines} >= {"pick-barycentric", "pick-normal", "pick-distance"}


#: A unit box standing in the middle of a 10 x 10 ground, one object each.
GROUND = {"name": "ground", "vertices": [[-5, -5, 0], [5, -5, 0], [5, 5, 0], [-5, 5, 0]],
          "faces": [[0, 1, 2], [0, 2, 3]]}
BOX_CORNERS = [[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (0.0, 1.0)]
BOX = {"name": "box", "vertices": BOX_CORNERS,
       "faces": [[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                 [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]]}


@pytest.fixture(scope="module")
def box_on_ground(server) -> str:
    response = httpx.post(f"{server}/scenes", json={"name": "box on ground", "meshes": [GROUND, BOX]}, headers=AUTH)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def box_on_screen(camera: dict) -> tuple[np.ndarray, np.ndarray]:
    """Smallest and largest pixel coordinates of the box's corners seen by ``camera``."""
    seen = bvh.Camera.pinhole(camera["position"], camera["target"], camera["up"], camera["fov_y_deg"],
                              camera["width"], camera["height"])
    pixels = []
    for corner in BOX_CORNERS:
        clip = seen.projection @ seen.view @ np.append(corner, 1.0)
        ndc = clip[:2] / clip[3]
        pixels.append([(ndc[0] + 1) / 2 * camera["width"], (1 - ndc[1]) / 2 * camera["height"]])
    return np.min(pixels, axis=0), np.max(pixels, axis=0)


def drag_marquee(driver, camera: dict, start, end) -> str:
    """Drag with the left button from pixel ``start`` to pixel ``end`` of the image; returns the
    marquee's border style while the button is down."""
    image = driver.find_element(By.ID, "render")
    centre = np.array([camera["width"], camera["height"]]) / 2
    begin = np.round(np.asarray(start) - centre).astype(int)
    step = np.round(np.asarray(end) - np.asarray(start)).astype(int)
    (ActionChains(driver).move_to_element_with_offset(image, *begin.tolist()).click_and_hold()
     .move_by_offset(*(step // 2).tolist()).move_by_offset(*(step - step // 2).tolist()).perform())
    marquee = driver.find_element(By.ID, "marquee")
    assert marquee.is_displayed()
    drawn = (marquee.get_attribute("data-containment"), marquee.value_of_css_property("border-top-style"))
    ActionChains(driver).release().perform()
    return drawn


def selected_names(driver, before: int) -> list[str]:
    wait_for(driver, lambda: renders(driver) > before, "the highlighted render")
    items = driver.find_element(By.ID, "selection-list").find_elements(By.TAG_NAME, "li")
    return sorted(item.text.split(" (")[1].rstrip(")") for item in items)


def test_window_and_crossing_marquees(server, box_on_ground, browser):
    open_viewer(browser, server, box_on_ground)
    camera = shown_camera(browser)
    low, high = box_on_screen(camera)
    low, high = low - 12, high + 12
    assert (low > 0).all() and (high < [camera["width"], camera["height"]]).all()

    # Left to right: a window, drawn solid; the ground reaches beyond it, so only the box is taken.
    before = renders(browser)
    assert drag_marquee(browser, camera, low, high) == ("window", "solid")
    assert selected_names(browser, before) == ["box"]
    sent = browser.execute_script("return window.viewer.lastSelect")
    assert sent["containment"] == "window" and sent["camera"] == camera
    direct = httpx.post(f"{server}/scenes/{box_on_ground}/select", headers=AUTH,
                        json={**camera, "rect": sent["rect"], "containment": "window"}).json()
    assert [item["name"] for item in direct["objects"]] == ["box"]

    # Right to left over the same rectangle: a crossing, drawn dashed; it touches the ground too.
    before = renders(browser)
    assert drag_marquee(browser, camera, [high[0], low[1]], [low[0], high[1]]) == ("crossing", "dashed")
    assert selected_names(browser, before) == ["box", "ground"]
    assert browser.execute_script("return window.viewer.lastSelect.containment") == "crossing"
    assert_no_script_errors(browser)


def draw_lasso(driver, camera: dict, points) -> None:
    """Press at the first of ``points`` (image pixels), pass through the others, release at the last."""
    image = driver.find_element(By.ID, "render")
    centre = np.array([camera["width"], camera["height"]]) / 2
    offsets = [np.round(np.asarray(point) - centre).astype(int) for point in points]
    actions = ActionChains(driver).move_to_element_with_offset(image, *offsets[0].tolist()).click_and_hold()
    for previous, point in zip(offsets, offsets[1:]):
        actions.move_by_offset(*(point - previous).tolist())
    actions.release().perform()


def test_lasso_selects_clockwise_a_window_counter_clockwise_a_crossing(server, box_on_ground, browser):
    open_viewer(browser, server, box_on_ground)
    camera = shown_camera(browser)
    Select(browser.find_element(By.ID, "left-drag")).select_by_value("lasso")
    low, high = box_on_screen(camera)
    low, high = low - 12, high + 12
    middle = (low + high) / 2
    # An octagon around the box's image, clockwise on screen (y down): right along the top first.
    octagon = [[middle[0], low[1]], [high[0], low[1] + 4], [high[0] + 4, middle[1]], [high[0], high[1]],
               [middle[0], high[1] + 4], [low[0], high[1]], [low[0] - 4, middle[1]], [low[0], low[1] + 4]]
    for points, containment, names in ((octagon, "window", ["box"]),
                                       (octagon[::-1], "crossing", ["box", "ground"])):
        before = renders(browser)
        draw_lasso(browser, camera, points)
        assert selected_names(browser, before) == names
        sent = browser.execute_script("return window.viewer.lastSelect")
        assert sent["containment"] == containment and len(sent["polygon"]) >= 8 and not sent["visibleOnly"]
        direct = httpx.post(f"{server}/scenes/{box_on_ground}/select", headers=AUTH,
                            json={**camera, "polygon": sent["polygon"], "containment": containment}).json()
        assert sorted(item["name"] for item in direct["objects"]) == names
    # Visible only: what the region shows, as the service answers for the same polygon.
    browser.find_element(By.ID, "visible-only").click()
    before = renders(browser)
    draw_lasso(browser, camera, octagon[::-1])
    shown = selected_names(browser, before)
    sent = browser.execute_script("return window.viewer.lastSelect")
    assert sent["visibleOnly"] is True
    direct = httpx.post(f"{server}/scenes/{box_on_ground}/select", headers=AUTH,
                        json={**camera, "polygon": sent["polygon"], "visible_only": True}).json()
    assert shown == sorted(item["name"] for item in direct["objects"]) == ["box", "ground"]
    browser.find_element(By.ID, "visible-only").click()
    Select(browser.find_element(By.ID, "left-drag")).select_by_value("select")
    assert_no_script_errors(browser)


def test_hover_from_the_id_buffer_while_the_camera_rests(server, box_on_ground, browser):
    open_viewer(browser, server, box_on_ground)
    stage = browser.find_element(By.ID, "stage")
    image = browser.find_element(By.ID, "render")
    wait_for(browser, lambda: viewer_value(browser, "window.viewer.live"), "the live channel")
    wait_for(browser, lambda: stage.get_attribute("data-idbuffer") == "ready", "the ID buffer")
    camera = shown_camera(browser)
    picks = viewer_value(browser, "window.viewer.hoverPicks")
    lookups = viewer_value(browser, "window.viewer.hoverLookups")
    ids = {item["name"]: item["id"] for item in
           httpx.get(f"{server}/scenes/{box_on_ground}", headers=AUTH).json()["objects"]}
    low, high = box_on_screen(camera)
    for pixel, name in (((low + high) / 2, "box"), (low - 12, "ground")):
        ActionChains(browser).move_to_element_with_offset(image, *offset_from_centre(camera, pixel)).perform()
        wait_for(browser, lambda: stage.get_attribute("data-hover") == str(ids[name]), f"the {name} hovered")
        # What the page looked up is what a pick of that pixel's centre answers.
        centre = (np.floor(np.asarray(pixel).round()) + 0.5).tolist()
        assert direct_pick(server, box_on_ground, camera, centre)["object"]["id"] == ids[name]
    assert viewer_value(browser, "window.viewer.hoverLookups") >= lookups + 2
    assert viewer_value(browser, "window.viewer.hoverPicks") == picks
    requests = browser.execute_script("return performance.getEntriesByType('resource').map((entry) => entry.name)")
    assert sum("/idbuffer" in name for name in requests) == int(stage.get_attribute("data-idbuffer-fetches"))

    # Orbiting drops the buffer: hovers are picks until the camera rests and a new buffer comes.
    fetches = int(stage.get_attribute("data-idbuffer-fetches"))
    actions = ActionBuilder(browser)
    actions.pointer_action.move_to(image).pointer_down(MouseButton.RIGHT).move_by(30, 0)
    actions.pointer_action.pointer_up(MouseButton.RIGHT)
    actions.perform()
    assert stage.get_attribute("data-idbuffer") == ""
    ActionChains(browser).move_to_element_with_offset(image, 5, 5).perform()
    wait_for(browser, lambda: viewer_value(browser, "window.viewer.hoverPicks") > picks, "a hover pick while moving")
    wait_for(browser, lambda: int(stage.get_attribute("data-idbuffer-fetches")) > fetches, "the new view's ID buffer")
    assert stage.get_attribute("data-idbuffer") == "ready"
    assert viewer_value(browser, "window.viewerIdBuffer.camera") == shown_camera(browser)
    assert_no_script_errors(browser)


# ------------------------------------------------------------------ the live channel: hover, drag, a second viewer


def on_screen(camera: dict, point) -> np.ndarray:
    """Pixel coordinates of a world point seen by ``camera``."""
    seen = bvh.Camera.pinhole(camera["position"], camera["target"], camera["up"], camera["fov_y_deg"],
                              camera["width"], camera["height"])
    clip = seen.projection @ seen.view @ np.append(point, 1.0)
    ndc = clip[:2] / clip[3]
    return np.array([(ndc[0] + 1) / 2 * camera["width"], (1 - ndc[1]) / 2 * camera["height"]])


def offset_from_centre(camera: dict, pixel) -> list[int]:
    """ActionChains' offset from the image's centre to ``pixel`` (the image is shown at its own size)."""
    return np.round(np.asarray(pixel) - [camera["width"] / 2, camera["height"] / 2]).astype(int).tolist()


def viewer_value(driver, expression: str):
    return driver.execute_script(f"return {expression}")


def ground_under(server: str, scene: str, camera: dict, pixel, exclude: list[int]) -> dict:
    """What a pick through ``pixel`` that leaves out ``exclude`` hits, asked over HTTP."""
    seen = bvh.Camera.pinhole(camera["position"], camera["target"], camera["up"], camera["fov_y_deg"],
                              camera["width"], camera["height"])
    origins, directions = seen.rays(np.asarray([pixel], np.float64))
    response = httpx.post(f"{server}/scenes/{scene}/pick", headers=AUTH,
                          json={"origin": origins[0].tolist(), "direction": directions[0].tolist(), "exclude": exclude})
    assert response.status_code == 200, response.text
    return response.json()


def test_hover_and_drag_over_the_live_channel_reach_a_second_viewer(server, browser):
    # A scene of its own: the drag moves its box for good.
    response = httpx.post(f"{server}/scenes", json={"name": "live drag", "meshes": [GROUND, BOX]}, headers=AUTH)
    assert response.status_code == 201, response.text
    scene = response.json()["id"]
    ids = {item["name"]: item["id"] for item in response.json()["objects"]}
    ground, box = ids["ground"], ids["box"]

    # Page B first: a second viewer of the scene that only watches.
    open_viewer(browser, server, scene)
    wait_for(browser, lambda: viewer_value(browser, "window.viewer.live"), "page B's live channel")
    page_b = browser.current_window_handle
    camera_b = shown_camera(browser)
    old_centre_b = on_screen(camera_b, [0.0, 0.0, 0.5]).astype(int).tolist()
    # Where the box is to go, and so where to release the mouse: the ground point grabbed (under the
    # box's middle, behind it) moved by as much.
    new_place = np.array([2.5, 1.5, 0.0])
    box_pixel = on_screen(camera_b, [0.0, 0.0, 0.5])
    grabbed = ground_under(server, scene, camera_b, box_pixel, [box])
    assert grabbed["object"]["id"] == ground
    new_centre_b = on_screen(camera_b, new_place + [0.0, 0.0, 0.5]).astype(int).tolist()
    colours_before = [pixel_colour(browser, *old_centre_b), pixel_colour(browser, *new_centre_b)]

    browser.switch_to.new_window("window")
    try:
        open_viewer(browser, server, scene)
        wait_for(browser, lambda: viewer_value(browser, "window.viewer.live"), "page A's live channel")
        camera = shown_camera(browser)
        assert camera == camera_b
        image = browser.find_element(By.ID, "render")
        stage = browser.find_element(By.ID, "stage")

        # Hover: the object under the mouse is outlined, and no HTTP pick is sent for it (a pick over the
        # live channel, or a look-up in the ID buffer once the camera rests).
        ActionChains(browser).move_to_element_with_offset(image, *offset_from_centre(camera, box_pixel)).perform()
        wait_for(browser, lambda: stage.get_attribute("data-hover") == str(box), "the box hovered")
        assert ["hover", box] in json.loads(browser.find_element(By.ID, "overlay").get_attribute("data-drawn"))
        ground_pixel = on_screen(camera, [-3.0, -3.0, 0.0])
        ActionChains(browser).move_to_element_with_offset(image, *offset_from_centre(camera, ground_pixel)).perform()
        wait_for(browser, lambda: stage.get_attribute("data-hover") == str(ground), "the ground hovered")
        assert viewer_value(browser, "window.viewer.hoverPicks + window.viewer.hoverLookups") >= 2
        http_picks = browser.execute_script(
            "return performance.getEntriesByType('resource').map((entry) => entry.name)"
            ".filter((name) => name.includes('/pick'))")
        assert http_picks == []

        # Drag the box with the move tool: press on it, move over the ground, release.
        Select(browser.find_element(By.ID, "left-drag")).select_by_value("move")
        target_pixel = on_screen(camera, np.add(grabbed["point"], new_place))
        start = np.asarray(offset_from_centre(camera, box_pixel))
        step = np.asarray(offset_from_centre(camera, target_pixel)) - start
        (ActionChains(browser).move_to_element_with_offset(image, *start.tolist()).click_and_hold()
         .move_by_offset(*(step // 2).tolist()).perform())
        wait_for(browser, lambda: (viewer_value(browser, "window.viewer.lastDrag?.edits") or 0) > 0,
                 "a first move sent while the button is down")
        assert viewer_value(browser, "window.viewer.dragging") == box
        assert ["drag", box] in json.loads(browser.find_element(By.ID, "overlay").get_attribute("data-drawn"))
        ActionChains(browser).move_by_offset(*(step - step // 2).tolist()).release().perform()
        wait_for(browser, lambda: viewer_value(browser, "window.viewer.lastDrag.done"), "the drag's end")
        drag = viewer_value(browser, "window.viewer.lastDrag")
        assert viewer_value(browser, "window.viewer.dragging") is None

        # (a) The service holds the move: the box slid by the ground's displacement under the mouse.
        stored = httpx.get(f"{server}/scenes/{scene}/objects/{box}", headers=AUTH).json()
        assert stored["transform"] == drag["transform"]
        translation = np.array(stored["transform"])[:3, 3]
        assert translation == pytest.approx(np.subtract(drag["ground"], drag["grab"]), abs=1e-9)
        # The pick under the mouse left the box out: the ground under the release point, the box on it.
        assert drag["on"] == ground
        release = np.asarray(offset_from_centre(camera, box_pixel)) + step + [camera["width"] / 2,
                                                                              camera["height"] / 2]
        expected = ground_under(server, scene, camera, release, [box])
        assert expected["object"]["id"] == ground
        assert drag["ground"] == pytest.approx(expected["point"], abs=0.05)
        assert drag["grab"] == pytest.approx(grabbed["point"], abs=0.05)
        assert translation[2] == pytest.approx(0.0, abs=1e-9)
        assert translation[:2] == pytest.approx(new_place[:2], abs=0.1)
        assert_no_script_errors(browser)
    finally:
        browser.close()
        browser.switch_to.window(page_b)

    # (b) Page B got the moved event, holds the new transform and has drawn the scene since.
    def b_has_it() -> bool:
        return (viewer_value(browser, f"window.viewer.objects[{box}].transform") == stored["transform"] and
                int(browser.find_element(By.ID, "render").get_attribute("data-version") or -1) >= drag["version"])

    wait_for(browser, b_has_it, "page B's table and render at the drag's last version")
    assert viewer_value(browser, "window.viewer.events") > 0
    assert viewer_value(browser, "window.viewer.connects") == 1
    colours_after = [pixel_colour(browser, *old_centre_b), pixel_colour(browser, *new_centre_b)]
    # The box left its old place (the ground shows there now) and stands at the new one.
    assert colours_after[0] != colours_before[0] and colours_after[1] != colours_before[1]
    assert colours_after[1] == pytest.approx(colours_before[0], abs=40)

    # A dropped channel reconnects, and the hello's table brings what it missed.
    moved_again = [[1.0, 0.0, 0.0, -2.0], [0.0, 1.0, 0.0, -2.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
    browser.execute_script("window.viewerLive.socket.close()")
    response = httpx.patch(f"{server}/scenes/{scene}/objects/{box}", json={"transform": moved_again}, headers=AUTH)
    assert response.status_code == 200, response.text
    wait_for(browser, lambda: viewer_value(browser, "window.viewer.connects") == 2 and
             viewer_value(browser, f"window.viewer.objects[{box}].transform") == moved_again,
             "page B reconnected with the table")
    assert viewer_value(browser, "window.viewer.live")

    # Objects added and removed by others show up in the table, and the scene is drawn again.
    response = httpx.post(f"{server}/scenes/{scene}/objects", json={"shape": "sphere", "radius": 0.5, "name": "ball"},
                          headers=AUTH)
    assert response.status_code == 201, response.text
    [added] = response.json()["objects"]
    ball = added["id"]
    wait_for(browser, lambda: viewer_value(browser, f"window.viewer.objects[{ball}]?.name") == "ball",
             "the added ball in page B")
    assert httpx.delete(f"{server}/scenes/{scene}/objects/{box}", headers=AUTH).status_code == 204
    wait_for(browser, lambda: viewer_value(browser, f"{box} in window.viewer.objects") is False,
             "the removed box gone from page B")
    version = viewer_value(browser, "window.viewer.version")
    wait_for(browser, lambda: int(browser.find_element(By.ID, "render").get_attribute("data-version")) >= version,
             "page B drawn without the box")
    assert_no_script_errors(browser)


@pytest.fixture(scope="module")
def wires(server) -> str:
    """A floor with a wire above it and a point beside the wire: a glTF of a box, LINES and POINTS."""
    trimesh = pytest.importorskip("trimesh")
    from trimesh.path.entities import Line

    floor = trimesh.creation.box(extents=[4.0, 4.0, 0.1])
    wire = trimesh.path.Path3D(entities=[Line([0, 1])], vertices=np.array([[-1.5, 0.0, 0.5], [1.5, 0.0, 0.5]]))
    point = trimesh.PointCloud(np.array([[0.0, 1.2, 0.8]]))
    glb = trimesh.Scene([floor, wire, point]).export(file_type="glb")
    response = httpx.post(f"{server}/scenes/upload", files={"file": ("wires.glb", glb)}, data={"name": "wires"},
                          headers=AUTH, timeout=120)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def pixel_showing(server: str, scene: str, camera: dict, primitive: str) -> list[float]:
    """The pixel centre nearest the image's centre whose pick, with the viewer's tolerances, hits a ``primitive``."""
    width, height = camera["width"], camera["height"]
    pixels = [[x + 0.5, y + 0.5] for y in range(2, height - 2, 2) for x in range(2, width - 2, 2)]
    found = []
    for start in range(0, len(pixels), 4096):
        chunk = pixels[start:start + 4096]
        response = httpx.post(f"{server}/scenes/{scene}/pick/camera", headers=AUTH, timeout=60,
                              json={**camera, "pixels": chunk, "line_pixels": 4, "point_pixels": 6})
        assert response.status_code == 200, response.text
        found += [pixel for pixel, result in zip(chunk, response.json()["results"])
                  if result.get("primitive") == primitive]
    # A click may land a pixel off: the pixel whose neighbours show the primitive too.
    for x, y in sorted(found, key=lambda p: (p[0] - width / 2) ** 2 + (p[1] - height / 2) ** 2):
        around = [[x + dx, y + dy] for dx in (-1, 0, 1) for dy in (-1, 0, 1)]
        response = httpx.post(f"{server}/scenes/{scene}/pick/camera", headers=AUTH, timeout=60,
                              json={**camera, "pixels": around, "line_pixels": 4, "point_pixels": 6})
        if all(result.get("primitive") == primitive for result in response.json()["results"]):
            return [x, y]
    pytest.fail(f"the default view shows no {primitive} a click can land on")


@pytest.mark.parametrize("primitive, label", [("segment", "segment 0 (s = "), ("point", "point 0")])
def test_click_picks_a_line_and_a_point(server, wires, browser, primitive, label):
    open_viewer(browser, server, wires)
    camera = shown_camera(browser)
    pixel = pixel_showing(server, wires, camera, primitive)
    panel = click_and_read_panel(browser, int(pixel[0] - 0.5 - camera["width"] / 2),
                                 int(pixel[1] - 0.5 - camera["height"] / 2))
    assert panel["status"] == "hit"
    assert all(abs(a - b) <= 1.0 for a, b in zip(panel["pixel"], pixel))
    assert panel["triangle"].startswith(label)
    assert panel["normal"] == "–" and panel["barycentric"] == "–"
    expected = httpx.post(f"{server}/scenes/{wires}/pick/camera", headers=AUTH,
                          json={**camera, "pixels": [panel["pixel"]], "line_pixels": 4, "point_pixels": 6}).json()
    assert expected["results"][0]["primitive"] == primitive
    assert panel["object_id"] == str(expected["results"][0]["object"]["id"])
    assert panel["distance"] == f"{expected['results'][0]['distance']:.6f}"
    assert_no_script_errors(browser)


@pytest.fixture(scope="module")
def small_hello_server(tmp_path_factory):
    """A service whose live hellos list at most 5 objects (``PICK_INLINE_OBJECTS``)."""
    with running_service(tmp_path_factory.mktemp("small-hello-server"), PICK_INLINE_OBJECTS="5") as base:
        yield base


def test_the_objects_past_a_small_hello_are_paged_and_kept_up_to_date(small_hello_server, browser):
    server = small_hello_server
    boxes = [{"name": f"box{index}", "vertices": [[x + 2.0 * index, y, z] for x, y, z in BOX_CORNERS],
              "faces": BOX["faces"]} for index in range(12)]
    response = httpx.post(f"{server}/scenes", json={"name": "many", "meshes": [GROUND, *boxes]}, headers=AUTH)
    assert response.status_code == 201, response.text
    scene = response.json()["id"]
    assert response.json()["objects_next_after"] == 4

    def everything() -> dict:
        answer = httpx.get(f"{server}/scenes/{scene}/objects", params={"limit": 100}, headers=AUTH).json()
        assert answer["next_after"] is None
        return {str(entry["id"]): entry for entry in answer["objects"]}

    open_viewer(browser, server, scene)
    wait_for(browser, lambda: viewer_value(browser, "window.viewer.complete"), "every object paged")
    # The hello listed 5; the rest came over HTTP, from the hello's cursor on.
    assert viewer_value(browser, "window.viewer.objects") == everything()
    pages = browser.execute_script("return performance.getEntriesByType('resource').map((entry) => entry.name)"
                                   ".filter((name) => name.includes('/objects?'))")
    assert [name.split("?", 1)[1] for name in pages] == ["after=4&limit=10000"]

    # Edits of the paged objects reach the table as events, as those of the hello's.
    moved = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 3.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
    assert httpx.patch(f"{server}/scenes/{scene}/objects/10", json={"transform": moved},
                       headers=AUTH).status_code == 200
    assert httpx.delete(f"{server}/scenes/{scene}/objects/12", headers=AUTH).status_code == 204
    wait_for(browser, lambda: viewer_value(browser, "window.viewer.objects") == everything(),
             "the move and the removal in the table")
    assert viewer_value(browser, "window.viewer.objects[10].transform") == moved

    # A reconnect starts the table afresh from its hello and pages the rest again.
    browser.execute_script("window.viewerLive.socket.close()")
    assert httpx.patch(f"{server}/scenes/{scene}/objects/11", json={"name": "renamed"}, headers=AUTH).status_code == 200
    wait_for(browser, lambda: viewer_value(browser, "window.viewer.connects") == 2 and
             viewer_value(browser, "window.viewer.complete") and
             viewer_value(browser, "window.viewer.objects") == everything(), "the table after the reconnect")
    assert viewer_value(browser, "window.viewer.objects[11].name") == "renamed"
    assert_no_script_errors(browser)
