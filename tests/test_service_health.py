"""``/health``, ``/ready``, ``/metrics``, the API key, the upload limit, OpenAPI, and no 500 for any input."""

import asyncio
import itertools
import os
import socket
import subprocess
import sys

import pytest

import sample_meshes
from service.api.middleware import BodyLimit, BodyTooLarge
from tests.conftest import TRIANGLE, TestClient


def test_health_and_ready(client):
    assert client.get("/health").json() == {"status": "ok"}
    assert client.get("/ready").json() == {"status": "ready", "scenes": 0}


def test_not_ready_before_start_up(tmp_path, monkeypatch):
    from service.api import deps
    from service.app import create_app
    from service.settings import Settings

    monkeypatch.setattr(deps, "READY_WAIT_SECONDS", 0.1)
    # Without entering the client, the lifespan (which opens the scenes) never runs.
    client = TestClient(create_app(Settings(data_dir=tmp_path)))
    assert client.get("/health").status_code == 200
    response = client.get("/ready")
    assert response.status_code == 503
    assert response.json() == {"status": "starting", "scenes": 0, "waiting_for": "opening the saved scenes"}
    response = client.get("/scenes")
    assert response.status_code == 503 and response.headers["retry-after"] == "1"
    assert response.json()["detail"] == "the service is still starting: opening the saved scenes; retry shortly"
    response = client.post("/scenes/" + "0" * 32 + "/pick", json={"origin": [0, 0, 1], "direction": [0, 0, -1]})
    assert response.status_code == 503


def test_metrics_count_requests_rays_scenes_and_triangles(client, triangle_scene):
    client.post(f"/scenes/{triangle_scene}/pick", json={"origin": [0.2, 0.2, 1], "direction": [0, 0, -1]})
    client.post(f"/scenes/{triangle_scene}/pick", json={"origin": [0.2, 0.2], "direction": [0, 0, -1]})
    client.post(f"/scenes/{triangle_scene}/pick/batch", json={"origins": [[0, 0, 1]] * 5, "directions": [[0, 0, -1]] * 5})
    client.get("/no/such/route")
    text = client.get("/metrics").text
    assert 'pick_http_requests_total{method="POST",route="/scenes/{scene_id}/pick",status="200"} 1.0' in text
    assert 'pick_http_requests_total{method="POST",route="/scenes/{scene_id}/pick",status="422"} 1.0' in text
    assert 'pick_http_requests_total{method="GET",route="unmatched",status="404"} 1.0' in text
    assert 'pick_http_request_duration_seconds_bucket{le="0.0005",method="POST",route="/scenes"}' in text
    assert "pick_rays_cast_total 6.0" in text
    assert "pick_scenes 1.0" in text and "pick_triangles 1.0" in text


def test_api_key(make_client):
    client = make_client(api_key="s3cret")
    for path in ("/health", "/ready", "/metrics", "/viewer", "/viewer/viewer.js", "/favicon.ico"):
        assert client.get(path).status_code == 200, path
    # The API's own documentation follows the key (PICK_OPEN_DOCS opens it: below).
    for path in DOCS:
        assert client.get(path).status_code == 401, path
        assert client.get(path, headers={"Authorization": "Bearer s3cret"}).status_code == 200, path
    for headers, detail in (({}, "missing API key"), ({"Authorization": "Bearer wrong"}, "wrong API key"),
                            ({"Authorization": "Basic czNjcmV0"}, "missing API key"),
                            ({"Authorization": "s3cret"}, "missing API key")):
        response = client.get("/scenes", headers=headers)
        assert response.status_code == 401 and response.json()["detail"].startswith(detail)
        assert response.headers["www-authenticate"].startswith("Bearer")
        response = client.post("/scenes/" + "0" * 32 + "/pick", headers=headers, json={})
        assert response.status_code == 401
    good = {"Authorization": "Bearer s3cret"}
    assert client.get("/scenes", headers=good).status_code == 200
    created = client.post("/scenes", json={"meshes": [TRIANGLE]}, headers=good)
    assert created.status_code == 201
    response = client.post(f"/scenes/{created.json()['id']}/pick", headers=good,
                           json={"origin": [0.2, 0.2, 1], "direction": [0, 0, -1]})
    assert response.json()["hit"] is True
    schema = client.get("/openapi.json", headers=good).json()
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert schema["paths"]["/scenes/{scene_id}/pick"]["post"]["security"] == [{"bearer": []}]
    assert "security" not in schema["paths"]["/health"]["get"]


#: The API's documentation, as FastAPI serves it.
DOCS = ("/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json")


def test_open_docs_opens_the_documentation_and_nothing_else(make_client):
    client = make_client(api_key="s3cret", open_docs=True)
    for path in DOCS:
        assert client.get(path).status_code == 200, path
    assert client.get("/scenes").status_code == 401
    # The document still says which operations need the key.
    schema = client.get("/openapi.json").json()
    assert schema["paths"]["/scenes"]["get"]["security"] == [{"bearer": []}]


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True),
                                            ("[::1]", True), ("localhost", True), ("LocalHost", True),
                                            ("0.0.0.0", False), ("::", False), ("192.168.1.5", False),
                                            ("pick.example", False)])
def test_a_non_loopback_host_needs_a_key_or_an_explicit_opt_in(host, loopback):
    from service.settings import Settings

    assert Settings(host=host).loopback is loopback
    refusal = Settings(host=host).open_to_the_network()
    if loopback:
        assert refusal is None
        return
    assert f"PICK_HOST={host} is not a loopback address" in refusal
    assert "PICK_API_KEY" in refusal and "PICK_ALLOW_OPEN=true" in refusal
    assert Settings(host=host, api_key="s3cret").open_to_the_network() is None
    assert Settings(host=host, allow_open=True).open_to_the_network() is None


def test_python_m_service_refuses_to_listen_open_on_the_network(tmp_path):
    environment = {**os.environ, "PICK_HOST": "0.0.0.0", "PICK_PORT": str(_free_port()),
                   "PICK_DATA_DIR": str(tmp_path), "PICK_WARM_UP": "false"}
    environment.pop("PICK_API_KEY", None)
    environment.pop("PICK_ALLOW_OPEN", None)
    done = subprocess.run([sys.executable, "-m", "service"], env=environment, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    assert "not starting: PICK_HOST=0.0.0.0 is not a loopback address and PICK_API_KEY is not set" in done.stderr
    assert "PICK_ALLOW_OPEN=true" in done.stderr and not list(tmp_path.iterdir())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_upload_over_the_limit_is_413(make_client):
    client = make_client(max_upload_mb=0.01)
    with open(sample_meshes.path("torus.ply"), "rb") as stream:
        response = client.post("/scenes/upload", files={"file": ("torus.ply", stream)})
    assert response.status_code == 413
    assert "larger than the limit of 0.01 MiB (PICK_MAX_UPLOAD_MB)" in response.json()["detail"]
    chunks = (b"x" * 1024 for _ in range(64))
    response = client.post("/scenes", content=chunks, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert client.get("/scenes").json()["scenes"] == []
    assert client.post("/scenes", json={"meshes": [TRIANGLE]}).status_code == 201


def test_body_limit_stops_reading_at_the_limit():
    consumed = []

    async def reading_app(scope, receive, send):
        while True:
            message = await receive()
            if not message.get("more_body"):
                break

    async def receive():
        consumed.append(1)
        return {"type": "http.request", "body": b"x" * 1000, "more_body": True}

    async def send(message):
        raise AssertionError("the app itself answers")

    scope = {"type": "http", "headers": [(b"content-type", b"application/json")]}
    with pytest.raises(BodyTooLarge):
        asyncio.run(BodyLimit(reading_app, limit_mb=4500 / 1048576)(scope, receive, send))
    assert len(consumed) == 5

    sent = []

    async def record(message):
        sent.append(message)

    declared = {"type": "http", "headers": [(b"content-length", b"999999")]}
    asyncio.run(BodyLimit(reading_app, limit_mb=4500 / 1048576)(declared, receive, record))
    assert sent[0]["status"] == 413 and len(consumed) == 5


def test_cors(make_client):
    client = make_client(cors_origins=["https://editor.example"])
    response = client.options("/scenes", headers={"Origin": "https://editor.example",
                                                   "Access-Control-Request-Method": "POST"})
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "https://editor.example"


def test_settings_from_environment(monkeypatch, tmp_path):
    from service.settings import Settings

    monkeypatch.setenv("PICK_CORS_ORIGINS", "https://a.example, https://b.example")
    monkeypatch.setenv("PICK_API_KEY", "")
    monkeypatch.setenv("PICK_MAX_RAYS", "10")
    settings = Settings()
    assert settings.cors_origins == ["https://a.example", "https://b.example"]
    assert settings.api_key is None and settings.max_rays == 10
    assert settings.host == "127.0.0.1" and settings.port == 8000 and settings.max_upload_mb == 200


def test_openapi_documents_every_route(client):
    assert client.get("/docs").status_code == 200
    schema = client.get("/openapi.json").json()
    paths = schema["paths"]
    for path, method in (("/scenes", "post"), ("/scenes", "get"), ("/scenes/{scene_id}", "delete"),
                         ("/scenes/{scene_id}/objects", "post"), ("/scenes/{scene_id}/objects/{object_id}", "patch"),
                         ("/scenes/{scene_id}/pick", "post"), ("/scenes/{scene_id}/pick/batch", "post"),
                         ("/scenes/{scene_id}/pick/camera", "post"), ("/scenes/{scene_id}/select", "post"),
                         ("/health", "get"), ("/ready", "get"), ("/metrics", "get")):
        assert method in paths[path], (path, method)
    pick = paths["/scenes/{scene_id}/pick"]["post"]
    assert pick["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/PickRequest"}
    assert pick["parameters"][0]["name"] == "scene_id"
    assert "PickRequest" in schema["components"]["schemas"]
    assert list(paths["/scenes/{scene_id}/pick/batch"]["post"]["requestBody"]["content"]) == ["application/json"]
    assert list(paths["/scenes/{scene_id}/pick/batch.bin"]["post"]["requestBody"]["content"]) == [
        "application/octet-stream"]


GARBAGE = [b"", b"null", b"[]", b"{}", b'"text"', b"{", b"\xff\xfe\x00", b'{"origin": {}}',
           b'{"meshes": [{"vertices": 1e400}]}', b'{"name": ' + b"[" * 5000 + b"]" * 5000 + b"}",
           b'{"origins": [[1,2,3]], "directions": [[1e308, 1e308, 1e308]]}',
           b'{"position": [0,0,0], "target": [0,0,1e308], "up": [0,1,0], "fov_y_deg": 1e-300, '
           b'"width": 1, "height": 1, "pixels": [[0,0]]}',
           b'{"shape": "polygon", "vertices": [[0,0,0],[0,0,0],[0,0,0]]}',
           b'{"transform": [[1e308,0,0,0],[0,1e308,0,0],[0,0,1e308,0],[0,0,0,1]]}',
           b'{"mesh": 0, "transform": [[1e-300,0,0,0],[0,1e-300,0,0],[0,0,1e-300,0],[0,0,0,1]]}']
CONTENT_TYPES = ["application/json", "application/octet-stream", "multipart/form-data; boundary=x", "text/plain",
                 "multipart/form-data"]


def test_no_input_reaches_a_500(client, triangle_scene):
    # The TestClient raises any exception that reaches the server's error
    # handler, so an unexpected error fails this test even before the status check.
    routes = [("POST", "/scenes"), ("POST", "/scenes/upload"), ("POST", f"/scenes/{triangle_scene}/objects"),
              ("POST", f"/scenes/{triangle_scene}/objects/upload"), ("POST", f"/scenes/{triangle_scene}/pick/batch.bin"),
              ("PATCH", f"/scenes/{triangle_scene}/objects/0"), ("POST", f"/scenes/{triangle_scene}/pick"),
              ("POST", f"/scenes/{triangle_scene}/pick/batch"), ("POST", f"/scenes/{triangle_scene}/pick/camera"),
              ("POST", f"/scenes/{triangle_scene}/select")]
    for (method, path), body, content_type in itertools.product(routes, GARBAGE, CONTENT_TYPES):
        response = client.request(method, path, content=body, headers={"content-type": content_type})
        assert response.status_code < 500, (method, path, body[:60], content_type, response.text)
        assert response.status_code < 300 or isinstance(response.json()["detail"], str), response.text
    assert client.get("/health").status_code == 200


@pytest.mark.parametrize("scale", [1e300, 1e-300, 1e150])
def test_extreme_transforms_never_reach_a_500(client, triangle_scene, scale):
    transform = [[scale, 0, 0, 0], [0, scale, 0, 0], [0, 0, scale, 0], [0, 0, 0, 1]]
    moved = client.patch(f"/scenes/{triangle_scene}/objects/0", json={"transform": transform})
    assert moved.status_code in (200, 422), moved.text
    ray = {"origin": [0.2 * scale, 0.2 * scale, 1], "direction": [0, 0, -1]}
    for path, body in (("pick", ray), ("pick", {**ray, "all_hits": True}),
                       ("pick/batch", {"origins": [ray["origin"]] * 100, "directions": [ray["direction"]] * 100}),
                       ("pick/camera", {"position": [0, 0, 5], "target": [0, 0, 0], "up": [0, 1, 0],
                                        "fov_y_deg": 60, "width": 10, "height": 10, "pixels": [[5, 5]]}),
                       ("select", {"position": [0, 0, 5], "target": [0, 0, 0], "up": [0, 1, 0], "fov_y_deg": 60,
                                   "width": 10, "height": 10, "rect": [0, 0, 10, 10], "mode": "triangles"})):
        response = client.post(f"/scenes/{triangle_scene}/{path}", json=body)
        assert response.status_code < 500, (scale, path, response.text)


# ------------------------------------------------------------------ start-up

class _Gate:
    """A warm-up step that holds until released, so a test can look at ``/ready`` meanwhile."""

    def __init__(self):
        import threading

        self.entered, self.release = threading.Event(), threading.Event()

    def __call__(self):
        self.entered.set()
        assert self.release.wait(30), "the test never released the step"


def _fake_stages(monkeypatch, pick_path, rest, cold=True):
    from service.ops import warmup

    monkeypatch.setattr(warmup, "stages", lambda rng: (pick_path, rest))
    monkeypatch.setattr(warmup, "cache_is_cold", lambda: cold)
    monkeypatch.setattr(warmup.ServiceWarmUp, "_start_helper", lambda self: None)


def test_ready_says_what_start_up_waits_for(tmp_path, monkeypatch, caplog):
    import logging
    import threading

    from service.api import deps
    from service.ops import warmup
    from service.app import create_app, start_up
    from service.settings import Settings

    building, batch, occlusion = _Gate(), _Gate(), _Gate()
    _fake_stages(monkeypatch, [warmup.Step("building scenes", building), warmup.Step("batch picks", batch)],
                 [warmup.Step("occlusion", occlusion)])
    app = create_app(Settings(data_dir=tmp_path, warm_up=True))
    # Without entering the client the lifespan never runs: start_up runs here, as the lifespan would.
    client = TestClient(app)
    caplog.set_level(logging.INFO, logger="service")
    started = []
    opening = threading.Thread(target=lambda: started.append(start_up(app.state.store, True)))
    opening.start()

    assert building.entered.wait(30)
    response = client.get("/ready")
    assert response.status_code == 503 and response.headers["retry-after"] == "1"
    assert response.json() == {"status": "starting", "scenes": 0, "waiting_for":
                               "compiling kernels (step 1 of 3: building scenes); " + warmup.FIRST_START}
    monkeypatch.setattr(deps, "READY_WAIT_SECONDS", 0.1)
    response = client.get("/scenes")
    assert response.status_code == 503
    assert response.json()["detail"] == ("the service is still starting: compiling kernels (step 1 of 3: building "
                                         f"scenes); {warmup.FIRST_START}; retry shortly")
    building.release.set()
    assert batch.entered.wait(30)
    assert client.get("/ready").json()["waiting_for"].startswith("compiling kernels (step 2 of 3: batch picks); ")
    batch.release.set()

    assert occlusion.entered.wait(30)
    opening.join(30)
    response = client.get("/ready")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "scenes": 0, "compiling":
                               "compiling kernels (step 3 of 3: occlusion); a request that needs a kernel not "
                               "compiled yet waits for it"}
    occlusion.release.set()
    started[0].join(30)
    assert client.get("/ready").json() == {"status": "ready", "scenes": 0}

    # Heartbeats come every HEARTBEAT_SECONDS while a gate is held: a slow machine may log one.
    lines = [record.getMessage() for record in caplog.records
             if record.name == "service" and not record.getMessage().startswith("still compiling")]
    assert lines[0].startswith("compiling kernels: step 1/3 building scenes (")
    assert lines[1].startswith("compiling kernels: step 2/3 batch picks (")
    assert lines[2].startswith("ready in ") and ": 0 scenes open; kernels for picks " in lines[2]
    assert lines[3].startswith("compiling kernels: step 3/3 occlusion in the background (")
    assert lines[4].startswith("all kernels ready in ") and "(the background steps took " in lines[4]


def test_start_up_logs_a_heartbeat_while_a_step_compiles(tmp_path, monkeypatch, caplog):
    import logging

    from service.ops import warmup
    from service.app import start_up
    from service.store.store import SceneStore

    monkeypatch.setattr(warmup, "HEARTBEAT_SECONDS", 0.05)
    _fake_stages(monkeypatch, [warmup.Step("batch picks", lambda: __import__("time").sleep(0.3))], [], cold=False)
    caplog.set_level(logging.INFO, logger="service")
    background = start_up(SceneStore(tmp_path), True)
    background.join(30)
    lines = [record.getMessage() for record in caplog.records if record.name == "service"]
    # A warm start's steps take milliseconds: only a slow one is told, as compiling what the cache lacks.
    assert not any(line.startswith("loading kernels from numba's cache: step") for line in lines)
    assert any(line.startswith("still at step 1/1 batch picks (") and
               line.endswith(" s elapsed): compiling what numba's cache lacks") for line in lines), lines
    ready = next(line for line in lines if line.startswith("ready in "))
    assert "kernels for picks loaded from numba's cache" in ready

    compiled = [0]
    monkeypatch.setattr(warmup, "stages", lambda rng: ([], [warmup.Step("occlusion",
                                                                         lambda: compiled.__setitem__(0, 3))]))
    monkeypatch.setattr(warmup, "cache_counts", lambda: (compiled[0], 0))
    start_up(SceneStore(tmp_path), True).join(30)
    lines = [record.getMessage() for record in caplog.records if record.name == "service"]
    assert any(line.startswith("step 1/1 occlusion in the background (") and
               line.endswith(" s elapsed): compiled 3 kernel signatures numba's cache lacked") for line in lines), lines


def test_start_up_failures_are_told(tmp_path, monkeypatch, caplog):
    import logging
    import subprocess
    import sys

    from service.ops import warmup
    from service.app import create_app, start_up
    from service.settings import Settings

    def broken():
        raise RuntimeError("no compiler")

    caplog.set_level(logging.INFO, logger="service")
    # A failing pick path: never ready, and /ready says why.
    _fake_stages(monkeypatch, [warmup.Step("batch picks", broken)], [])
    app = create_app(Settings(data_dir=tmp_path, warm_up=True))
    assert start_up(app.state.store, True) is None
    assert TestClient(app).get("/ready").json()["waiting_for"] == "nothing: start-up failed (see the service's log)"
    assert "start-up failed: the service stays unready" in caplog.text

    # A failing background step: ready all the same.
    _fake_stages(monkeypatch, [], [warmup.Step("occlusion", broken)])
    app = create_app(Settings(data_dir=tmp_path, warm_up=True))
    start_up(app.state.store, True).join(30)
    assert TestClient(app).get("/ready").json() == {"status": "ready", "scenes": 0}
    assert "compiling the remaining kernels failed; queries compile them on first use" in caplog.text

    # The second process that compiles the single-pick kernel fails, or cannot start: this one compiles it.
    from service.store.store import SceneStore

    compiled_here = []
    monkeypatch.setattr(warmup, "stages", lambda rng: ([warmup.Step(warmup.HELPER_STEP,
                                                                     lambda: compiled_here.append(1))], []))
    monkeypatch.setattr(warmup.ServiceWarmUp, "_start_helper", lambda self: subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.exit('out of memory')"], stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE))
    monkeypatch.setattr(warmup.os, "cpu_count", lambda: 2)
    start_up(SceneStore(tmp_path), True).join(30)
    assert compiled_here == [1]
    assert ("the second process compiling the single picks kernel failed (exit status 1: out of memory): "
            "compiling it here") in caplog.text

    monkeypatch.undo()
    monkeypatch.setattr(warmup, "stages", lambda rng: ([warmup.Step(warmup.HELPER_STEP,
                                                                     lambda: compiled_here.append(2))], []))
    monkeypatch.setattr(warmup, "cache_is_cold", lambda: True)
    monkeypatch.setattr(warmup.os, "cpu_count", lambda: 2)

    def cannot_start(*args, **kwargs):
        raise OSError("no such file")

    monkeypatch.setattr(warmup.subprocess, "Popen", cannot_start)
    start_up(SceneStore(tmp_path), True).join(30)
    assert compiled_here == [1, 2]
    assert ("could not start a second process to compile the single picks kernel (no such file): compiling it here"
            in caplog.text)


def test_start_up_warms_the_pick_path_then_the_rest(tmp_path, caplog):
    """The real warm-up: fast on a warm cache (minutes on a cold one, as a first start)."""
    import logging

    from service.ops import warmup
    from service.app import start_up
    from service.store.store import SceneStore

    # DEBUG: on a warm cache the step lines are debug lines.
    caplog.set_level(logging.DEBUG, logger="service")
    store = SceneStore(tmp_path)
    background = start_up(store, True)
    assert store.ready
    background.join(900)
    assert store.compiling is None
    lines = [record.getMessage() for record in caplog.records if record.name == "service"]
    pick_path, rest = warmup.stages(None)
    total = len(pick_path) + len(rest)
    for number, step in enumerate(pick_path + rest, 1):
        where = " in the background" if number > len(pick_path) else ""
        assert any(f"kernels: step {number}/{total} {step.name}{where} (" in line
                   or f"kernels from numba's cache: step {number}/{total} {step.name}{where} (" in line
                   for line in lines), (step.name, lines)
    ready = next(line for line in lines if line.startswith("ready in "))
    assert ": 0 scenes open; kernels for picks " in ready
    assert any(line.startswith("all kernels ready in ") for line in lines)
