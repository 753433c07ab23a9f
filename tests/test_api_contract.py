"""The OpenAPI is the wire: requests generated from ``/openapi.json`` (schemathesis), every answer
checked against it; and the refusals every route shares (405 with ``Allow``, 415, errors as ``ErrorOut``).

``bench/fuzz.py`` runs the same checks for hours; here each operation gets a
bounded number of generated requests, aimed at live scene and object ids.
"""

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from bench import fuzz

from tests.conftest import TRIANGLE

#: Generated requests per operation in the fuzzing phase (the coverage phase adds its own boundary cases).
EXAMPLES_PER_OPERATION = 30

# The schema must exist when pytest collects the tests (one per operation; schemathesis' lazy
# `from_fixture` fails on pytest 9.2), so the app is made at import, on a data directory of its own;
# its scenes are made by the fixture, when the tests run.
_DATA = tempfile.TemporaryDirectory(prefix="pick-contract-")
WORLD = fuzz.create(Path(_DATA.name) / "data")
schema = WORLD.schema


@pytest.fixture(scope="module")
def api_world() -> fuzz.World:
    fuzz.populate(WORLD)
    return WORLD


# Derandomised, like tests/test_properties.py: CI must not find a new example on its own and fail a
# submission by chance; `python -m bench.fuzz` is where new examples are looked for.
@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_every_answer_is_as_documented(case, api_world):
    fuzz.call_and_check(case, api_world)


def test_the_live_ids_outlive_the_fuzzing(api_world):
    # The ids requests are aimed at must stay live (DELETEs get objects of their own), or every
    # request would stop at 404 before the logic under test.
    client = api_world.client
    for scene_id in api_world.scenes:
        objects = client.get(f"/scenes/{scene_id}").json()["objects"]
        assert {info["id"] for info in objects} >= set(api_world.objects)


# ------------------------------------------------------------------ the document itself

ERROR_OUT = {"$ref": "#/components/schemas/ErrorOut"}


def _operations(document: dict):
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            yield path, method, operation


def test_every_refusal_is_documented_as_error_out(client):
    document = client.get("/openapi.json").json()
    assert not {"HTTPValidationError", "ValidationError"} & set(document["components"]["schemas"])
    for path, method, operation in _operations(document):
        for status, response in operation["responses"].items():
            if int(status) >= 400 and path != "/ready":
                assert response["content"] == {"application/json": {"schema": ERROR_OUT}}, (method, path, status)
        if "requestBody" in operation:
            assert {"413", "415", "422"} <= set(operation["responses"]), (method, path)
        if path.startswith("/scenes"):
            assert "503" in operation["responses"], (method, path)
        if "{" in path:
            assert {"404", "422"} <= set(operation["responses"]), (method, path)
        for parameter in operation.get("parameters", []):
            # A query or path parameter is left out, never null.
            assert "null" not in str(parameter["schema"]), (method, path, parameter)


def test_json_answers_document_their_model(client):
    document = client.get("/openapi.json").json()
    for path, method, operation in _operations(document):
        for status, response in operation["responses"].items():
            if status.startswith("2"):
                for media, content in response.get("content", {}).items():
                    assert content["schema"] != {"type": "string"} or media != "application/json", (method, path)
    paths = document["paths"]
    ok = paths["/scenes/{scene_id}/pick/batch"]["post"]["responses"]["200"]["content"]
    assert ok == {"application/json": {"schema": {"$ref": "#/components/schemas/BatchPickResult"}}}
    packed = paths["/scenes/{scene_id}/pick/batch.bin"]["post"]["responses"]["200"]["content"]
    assert list(packed) == ["application/octet-stream"] and packed["application/octet-stream"]["schema"]["format"] == \
        "binary"
    png = paths["/scenes/{scene_id}/render"]["get"]["responses"]["200"]
    # Client generators keep the answer as bytes by its application/octet-stream, which Accept selects.
    assert list(png["content"]) == ["image/png", "application/octet-stream"]
    assert png["content"]["image/png"]["schema"] == {"type": "string", "format": "binary"}
    assert "X-Camera" in png["headers"]
    assert paths["/scenes"]["post"]["responses"]["201"]["content"]["application/json"]["schema"] == \
        {"$ref": "#/components/schemas/SceneOut"}


def test_object_update_offers_null_only_for_the_name(client, triangle_scene):
    properties = client.get("/openapi.json").json()["components"]["schemas"]["ObjectUpdate"]["properties"]
    assert "null" not in str(properties["transform"]) + str(properties["pickable"]) + str(properties["mask"])
    assert {"type": "null"} in properties["name"]["anyOf"]
    for field in ("transform", "pickable", "mask"):
        response = client.patch(f"/scenes/{triangle_scene}/objects/0", json={field: None})
        assert response.status_code == 422 and response.json() == {"detail": f"{field} cannot be null"}
    renamed = client.patch(f"/scenes/{triangle_scene}/objects/0", json={"name": None})
    assert renamed.status_code == 200 and renamed.json()["name"] is None


def test_a_secured_service_documents_401(make_client):
    client = make_client(api_key="secret")
    # The document follows the key too (PICK_OPEN_DOCS opens it).
    assert client.get("/openapi.json").status_code == 401
    document = client.get("/openapi.json", headers={"Authorization": "Bearer secret"}).json()
    assert document["components"]["securitySchemes"] == {"bearer": {"type": "http", "scheme": "bearer"}}
    for path, method, operation in _operations(document):
        if path in ("/health", "/ready", "/metrics"):
            assert "401" not in operation["responses"] and "security" not in operation
        else:
            assert operation["security"] == [{"bearer": []}], (method, path)
            assert operation["responses"]["401"]["content"]["application/json"]["schema"] == ERROR_OUT


# ------------------------------------------------------------------ 405 and OPTIONS

@pytest.mark.parametrize("method, path, allowed", [
    ("PUT", "/scenes", "GET, OPTIONS, POST"),
    ("PATCH", "/scenes/{scene}", "DELETE, GET, OPTIONS"),
    ("POST", "/scenes/{scene}/objects/0", "DELETE, GET, OPTIONS, PATCH"),
    ("GET", "/scenes/{scene}/pick", "OPTIONS, POST"),
    ("DELETE", "/health", "GET, OPTIONS"),
])
def test_405_allows_every_method_of_the_path(client, triangle_scene, method, path, allowed):
    url = path.format(scene=triangle_scene)
    response = client.request(method, url)
    assert response.status_code == 405
    assert response.headers["allow"] == allowed
    assert response.json() == {"detail": f"{method} is not a method of {url}: it takes {allowed}"}


def test_options_lists_the_methods_of_the_path(client, triangle_scene):
    response = client.options(f"/scenes/{triangle_scene}/objects/0")
    assert response.status_code == 204 and response.content == b""
    assert response.headers["allow"] == "DELETE, GET, OPTIONS, PATCH"


def test_an_unknown_path_says_so(client):
    response = client.get("/nowhere")
    assert response.status_code == 404 and response.json() == {"detail": "no route '/nowhere': /docs lists the API"}


# ------------------------------------------------------------------ content types

JSON_ROUTES = [("POST", "/scenes"), ("POST", "/scenes/{scene}/objects"), ("PATCH", "/scenes/{scene}/objects/0"),
               ("POST", "/scenes/{scene}/pick"), ("POST", "/scenes/{scene}/pick/batch"),
               ("POST", "/scenes/{scene}/pick/camera"), ("POST", "/scenes/{scene}/select"),
               ("PATCH", "/scenes/{scene}/objects"), ("PUT", "/scenes/{scene}/meshes/0/vertices"),
               ("POST", "/scenes/{scene}/closest")]

@pytest.mark.parametrize("method, path", JSON_ROUTES)
def test_json_must_say_it_is_json(client, triangle_scene, method, path):
    url = path.format(scene=triangle_scene)
    accepted = "application/json"
    body = b'{"origin": [0.2, 0.2, 1], "direction": [0, 0, -1]}'
    plain = client.request(method, url, content=body, headers={"content-type": "text/plain"})
    assert plain.status_code == 415
    assert plain.json() == {"detail": f"unsupported content type 'text/plain': send Content-Type: {accepted}"}
    # What curl -d sends when not told otherwise.
    form = client.request(method, url, content=body, headers={"content-type": "application/x-www-form-urlencoded"})
    assert form.status_code == 415
    assert form.json() == {"detail": f"unsupported content type 'application/x-www-form-urlencoded': send "
                                     f"Content-Type: {accepted} (with curl, add -H 'Content-Type: "
                                     f"application/json' to -d)"}
    missing = client.request(method, url, content=body)
    assert "content-type" not in missing.request.headers
    assert missing.status_code == 415
    assert missing.json() == {"detail": f"the request has no Content-Type header: send Content-Type: {accepted}"}


#: (method, JSON route, the route of its other form, that form's media type)
SIBLINGS = [("POST", "/scenes", "/scenes/upload", "multipart/form-data"),
            ("POST", "/scenes/{scene}/objects", "/scenes/{scene}/objects/upload", "multipart/form-data"),
            ("POST", "/scenes/{scene}/pick/batch", "/scenes/{scene}/pick/batch.bin", "application/octet-stream"),
            ("POST", "/scenes/{scene}/closest", "/scenes/{scene}/closest.bin", "application/octet-stream"),
            ("POST", "/scenes/{scene}/sphere-cast", "/scenes/{scene}/sphere-cast.bin", "application/octet-stream"),
            ("POST", "/scenes/{scene}/contains", "/scenes/{scene}/contains.bin", "application/octet-stream"),
            ("PATCH", "/scenes/{scene}/objects", "/scenes/{scene}/objects.bin", "application/octet-stream"),
            ("PUT", "/scenes/{scene}/meshes/0/vertices", "/scenes/{scene}/meshes/0/vertices.bin",
             "application/octet-stream")]


@pytest.mark.parametrize("method, json_path, other_path, other_media", SIBLINGS)
def test_each_form_names_the_route_of_the_other(client, triangle_scene, method, json_path, other_path, other_media):
    """A route reads one content type (generated clients then know what they send); a body of the
    other form is refused with the route that reads it, both ways, and nothing is read or changed."""
    json_url, other_url = json_path.format(scene=triangle_scene), other_path.format(scene=triangle_scene)
    content_type = other_media + ("; boundary=x" if other_media.startswith("multipart") else "")
    refused = client.request(method, json_url, content=b"--x--\r\n", headers={"content-type": content_type})
    assert refused.status_code == 415 and refused.json() == {
        "detail": f"this route reads application/json: send {other_media} to {method} {other_url}"}
    refused = client.request(method, other_url, json={"points": [[0, 0, 1]]})
    assert refused.status_code == 415 and refused.json() == {
        "detail": f"this route reads {other_media}: send application/json to {method} {json_url}"}
    document = client.get("/openapi.json").json()["paths"]
    for path, media in ((json_path, "application/json"), (other_path, other_media)):
        operation = document[path.replace("{scene}", "{scene_id}").replace("/meshes/0/", "/meshes/{mesh_id}/")]
        assert list(operation[method.lower()]["requestBody"]["content"]) == [media]


def test_json_with_a_charset_is_json(client, triangle_scene):
    ray = b'{"origin": [0.2, 0.2, 1], "direction": [0, 0, -1]}'
    response = client.post(f"/scenes/{triangle_scene}/pick", content=ray,
                           headers={"content-type": "Application/JSON; charset=utf-8"})
    assert response.status_code == 200 and response.json()["hit"] is True
    created = client.post("/scenes", content=json.dumps({"meshes": [TRIANGLE]}).encode(),
                          headers={"content-type": "application/json;charset=UTF-8"})
    assert created.status_code == 201, created.text


def _object_schemas(document: dict, schema: dict) -> list[dict]:
    """The object schemas a request body may be (the choices of a ``oneOf``), references resolved."""
    if "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    choices = schema.get("oneOf", []) + schema.get("anyOf", [])
    return [resolved for choice in choices for resolved in _object_schemas(document, choice)] or [schema]


def test_examples_are_accepted_and_so_is_null_wherever_the_schema_offers_it(client, triangle_scene):
    # Each documented example is accepted; so is each with any one property its schema lets be null set to null.
    document = client.get("/openapi.json").json()
    tried = 0
    for path, method, operation in _operations(document):
        content = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if content is None:
            continue
        for name, example in content["examples"].items():
            body = example["value"]
            url = path.format(scene_id=triangle_scene, object_id=0, mesh_id=0)
            response = client.request(method.upper(), url, json=body)
            assert response.status_code < 300, (method, path, name, response.text)
            # A batch body is a list of entries: each entry stands for the body below.
            listed = isinstance(body, list)
            entry = body[0] if listed else body
            root = content["schema"]
            if listed:
                root = root.get("items") or _object_schemas(document, root)[0]["items"]
            (schema,) = [choice for choice in _object_schemas(document, root)
                         if set(choice.get("required", [])) <= set(entry) <= set(choice["properties"])]
            for field, field_schema in schema["properties"].items():
                if {"type": "null"} in field_schema.get("anyOf", []):
                    nulled = {**entry, field: None}
                    response = client.request(method.upper(), url, json=[nulled] if listed else nulled)
                    assert response.status_code < 300, (method, path, name, field, response.text)
                    tried += 1
    assert tried >= 20
