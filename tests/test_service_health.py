"""``/health``, ``/ready``, ``/metrics``, the API key, the upload limit, OpenAPI, and no 500 for any input."""

import asyncio
import itertools

import pytest

import sample_meshes
from service.middleware import BodyLimit, BodyTooLarge
from tests.conftest import TRIANGLE, TestClient


def test_health_and_ready(client):
    assert client.get("/health").json() == {"status": "ok"}
    assert client.get("/ready").json() == {"status": "ready", "scenes": 0}


def test_not_ready_before_start_up(tmp_path, monkeypatch):
    from service import deps
    from service.app import create_app
    from service.settings import Settings

    monkeypatch.setattr(deps, "READY_WAIT_SECONDS", 0.1)
    # Without entering the client, the lifespan (which opens the scenes) never runs.
    client = TestClient(create_app(Settings(data_dir=tmp_path)))
    assert client.get("/health").status_code == 200
    response = client.get("/ready")
    assert response.status_code == 503 and response.json()["status"] == "starting"
    response = client.get("/scenes")
    assert response.status_code == 503 and response.headers["retry-after"] == "1"
    assert "still opening its saved scenes" in response.json()["detail"]
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
    for path in ("/health", "/ready", "/metrics", "/docs", "/openapi.json"):
        assert client.get(path).status_code == 200, path
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
    schema = client.get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert schema["paths"]["/scenes/{scene_id}/pick"]["post"]["security"] == [{"bearer": []}]
    assert "security" not in schema["paths"]["/health"]["get"]


def test_upload_over_the_limit_is_413(make_client):
    client = make_client(max_upload_mb=0.01)
    with open(sample_meshes.path("torus.ply"), "rb") as stream:
        response = client.post("/scenes", files={"file": ("torus.ply", stream)})
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
    assert "application/octet-stream" in paths["/scenes/{scene_id}/pick/batch"]["post"]["requestBody"]["content"]


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
    routes = [("POST", "/scenes"), ("POST", f"/scenes/{triangle_scene}/objects"),
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
