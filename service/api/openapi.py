"""The OpenAPI schema: what every route sends and accepts, as it is on the wire.

The hot routes read their bodies with ``Model.model_validate_json`` (pydantic's
Rust JSON parser, no intermediate dicts) instead of FastAPI's body
parameters; :func:`body_doc` documents those bodies, and
:func:`install_schemas` adds the models they refer to to the schema's
components.

The document is made for client generators (openapi-python-client,
openapi-typescript with openapi-fetch, at their default settings,
``tests/test_generated_clients.py``): each operation reads one content type
(a binary form is a ``.bin`` sibling, a file upload an ``/upload`` one) and
answers one kind of 200, and what a client sends carries no schema
``default`` (:func:`request_defaults_described`).

:func:`install_schemas` also documents, on every operation, the refusals
that come from the service as a whole rather than from one route (the API
key, the body limit, the content type, invalid parameters, start-up), all
as :class:`~service.api.schemas.ErrorOut`: FastAPI's own default for a 422 is a
list of problems, while this service always answers ``{"detail": "..."}``.
"""

import http.client

import orjson

from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, TypeAdapter

from .schemas import ErrorOut

REF_TEMPLATE = "#/components/schemas/{model}"
ERROR_REF = {"$ref": REF_TEMPLATE.format(model=ErrorOut.__name__)}

#: FastAPI's components for its list-shaped 422 body, which this service never sends.
FASTAPI_VALIDATION_SCHEMAS = ("HTTPValidationError", "ValidationError")

#: What each service-wide refusal means, as documented.
ERROR_DESCRIPTIONS = {
    401: "missing or wrong API key (`Authorization: Bearer <key>`)",
    404: "no such scene or object",
    413: ("the request is too large: a body over PICK_MAX_UPLOAD_MB, more rays than PICK_MAX_RAYS, or an answer "
          "that could exceed PICK_MAX_RESPONSE_MB"),
    415: "the body's Content-Type is not one this route reads",
    422: "a value in the request is invalid; the detail says which and why",
    503: ("the service is still starting (opening its saved scenes, compiling the pick path's kernels), or, "
          "with scenes in an object store, the store is not answering or another replica changed the scene "
          "at the same moment as this edit (nothing of it was kept); retry after Retry-After seconds"),
}

#: The refusals a route that queries a scene documents itself (the rest: :func:`document_refusals`).
QUERY_ERRORS = {404: {"model": ErrorOut}, 413: {"model": ErrorOut}, 422: {"model": ErrorOut}}


#: The refusals of a JSON route that has a binary sibling (``service.api.dual_form``).
JSON_FORM_ERRORS = {**QUERY_ERRORS, 415: {"model": ErrorOut}}


def binary_answer(description: str, also: dict | None = None, summary: str = "packed binary records") -> dict:
    """The ``200`` of a route that answers bytes: ``application/octet-stream`` (a string of format
    binary, which generated clients give back as bytes), after the other media types ``also``
    (media type to schema) when the route answers those by default.

    Parameters
    ----------
    description : str
        What the bytes hold.
    summary : str
        The response's description.
    """
    binary = {"schema": {"type": "string", "format": "binary", "description": description}}
    return {200: {"content": {**(also or {}), "application/octet-stream": binary}, "description": summary}}


def binary_form_responses(records: str) -> dict:
    """``responses`` of the ``.bin`` sibling of a query route: binary items in, ``records`` out."""
    return {**JSON_FORM_ERRORS, **binary_answer(records)}


_definitions: dict[str, dict] = {}

_TRIANGLE = {"vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]], "faces": [[0, 1, 2]]}
_MOVED = [[1, 0, 0, 2], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
_CAMERA = {"position": [0.3, 0.3, 5], "target": [0.3, 0.3, 0], "up": [0, 1, 0], "fov_y_deg": 60,
           "width": 64, "height": 48}

#: Request bodies of each route, by example name, as :func:`body_doc` takes them. Picks aim at
#: (0.25, 0.25), on the first object of a scene made of the triangle above.
EXAMPLES = {
    "scene": {"one triangle": {"name": "one triangle", "meshes": [{"name": "tri", **_TRIANGLE}]}},
    "object": {"shape": {"shape": "sphere", "radius": 0.5, "name": "ball", "transform": _MOVED},
               "instance": {"mesh": 0, "transform": _MOVED, "name": "copy"},
               "inline mesh": {"name": "tri", **_TRIANGLE}},
    "batch_update": {"move and rename": [{"id": 0, "transform": _MOVED, "name": "moved"}]},
    "vertices": {"the same triangle": {"vertices": _TRIANGLE["vertices"]}},
    "update": {"move": {"transform": _MOVED}, "hide from picks": {"pickable": False},
               "rename": {"name": "renamed", "mask": 1}},
    "pick": {"closest hit": {"origin": [0.25, 0.25, 1], "direction": [0, 0, -1]},
             "every hit": {"origin": [0.25, 0.25, 1], "direction": [0, 0, -1], "all_hits": True, "tmax": 10},
             "through foliage, BLEND cut at 0.25": {"origin": [0.25, 0.25, 1], "direction": [0, 0, -1],
                                                    "alpha_cutoff": 0.25},
             "ignoring alpha": {"origin": [0.25, 0.25, 1], "direction": [0, 0, -1], "alpha_test": False},
             "lines and points within a tolerance": {"origin": [0.25, 0.25, 1], "direction": [0, 0, -1],
                                                     "line_tolerance": 0.01, "point_tolerance": 0.02}},
    "batch": {"two rays": {"origins": [[0.25, 0.25, 1], [5, 5, 1]], "directions": [[0, 0, -1], [0, 0, -1]]}},
    "camera": {"pinhole": {**_CAMERA, "pixels": [[32, 24], [0.5, 0.5]]},
               "lines and points within pixels": {**_CAMERA, "pixels": [[32, 24]], "line_pixels": 4,
                                                  "point_pixels": 6},
               "matrices": {"view": [[1, 0, 0, -0.3], [0, 1, 0, -0.3], [0, 0, 1, -5], [0, 0, 0, 1]],
                            "projection": [[1.299, 0, 0, 0], [0, 1.732, 0, 0], [0, 0, -1.002, -0.2002],
                                           [0, 0, -1, 0]],
                            "width": 64, "height": 48, "pixels": [[32, 24]]}},
    "closest": {"two points": {"points": [[0.25, 0.25, 1], [2, 2, 0]]},
                "within a radius": {"points": [[0.25, 0.25, 1]], "max_distance": 2, "mask": 1}},
    "sphere_cast": {"two casts": {"origins": [[0.25, 0.25, 1], [5, 5, 1]], "directions": [[0, 0, -1], [0, 0, -1]],
                                  "radius": 0.1}},
    "contains": {"two points": {"points": [[0.25, 0.25, 1], [2, 2, 0]], "signed_distance": True}},
    "overlap": {"a sphere": {"shape": {"kind": "sphere", "center": [0.25, 0.25, 0.5], "radius": 1}},
                "a box's triangles": {"shape": {"kind": "aabb", "min": [0, 0, -1], "max": [1, 1, 1]},
                                      "mode": "triangles"}},
    "select": {"objects": {**_CAMERA, "rect": [0, 0, 64, 48]},
               "triangles": {**_CAMERA, "rect": [16, 12, 48, 36], "mode": "triangles"},
               "lasso": {**_CAMERA, "polygon": [[10, 8], [54, 10], [40, 24], [56, 40], [8, 42]],
                         "mode": "triangles"},
               "visible only": {**_CAMERA, "polygon": [[10, 8], [54, 10], [40, 24], [56, 40], [8, 42]],
                                "visible_only": True, "samples": 2}},
    "idbuffer": {"ids and depth": _CAMERA,
                 "with normals and barycentrics": {**_CAMERA, "normal": True, "barycentric": True}},
}


def _schema(annotation) -> dict:
    schema = TypeAdapter(annotation).json_schema(ref_template=REF_TEMPLATE)
    _definitions.update(schema.pop("$defs", {}))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        _definitions[annotation.__name__] = schema
        return {"$ref": REF_TEMPLATE.format(model=annotation.__name__)}
    return schema


def body_doc(json_model=None, multipart: dict | None = None, binary: str | None = None,
             path_parameters: tuple[str, ...] = (), examples: dict | None = None) -> dict:
    """``openapi_extra`` for a route's request body.

    Parameters
    ----------
    json_model : type or annotation, optional
        The ``application/json`` body.
    examples : dict, optional
        Example JSON bodies by name, each one the route accepts (on a scene
        that has such objects): they show a client what to send, and the
        contract test sends them.
    multipart : dict, optional
        Form fields of a ``multipart/form-data`` body, name to JSON schema.
    binary : str, optional
        Description of an ``application/octet-stream`` body.
    path_parameters : tuple of str or (str, dict)
        Path parameters the route reads from ``request.path_params`` rather
        than from its signature: a name (a string parameter) or a name and
        its JSON schema.
    """
    content = {}
    if json_model is not None:
        content["application/json"] = {"schema": _schema(json_model)}
        if examples:
            content["application/json"]["examples"] = {name: {"value": value} for name, value in examples.items()}
    if multipart is not None:
        content["multipart/form-data"] = {"schema": {"type": "object", "properties": multipart,
                                                     "required": ["file"]}}
    if binary is not None:
        content["application/octet-stream"] = {"schema": {"type": "string", "format": "binary",
                                                          "description": binary}}
    extra = {"requestBody": {"required": True, "content": content}}
    if path_parameters:
        named = [(entry, {"type": "string"}) if isinstance(entry, str) else entry for entry in path_parameters]
        extra["parameters"] = [{"name": name, "in": "path", "required": True, "schema": schema}
                               for name, schema in named]
    return extra


def messages_doc(client: list[type[BaseModel]], server: list[type[BaseModel]]) -> dict:
    """``openapi_extra`` of a WebSocket's ``GET``: the messages each side sends, as component
    references under ``x-client-messages`` and ``x-server-messages`` (OpenAPI has no words for
    WebSocket messages; the models still land in the components, where clients generate from)."""
    return {"x-client-messages": [_schema(model) for model in client],
            "x-server-messages": [_schema(model) for model in server]}


def _not_null(schema: dict) -> dict:
    """A parameter's schema without FastAPI's ``anyOf [..., null]`` for ``X | None``: a query
    parameter is left out, never null."""
    choices = schema.get("anyOf")
    if choices is None:
        return schema
    kept = [choice for choice in choices if choice.get("type") != "null"]
    rest = {key: value for key, value in schema.items()
            if key != "anyOf" and not (key == "default" and value is None)}
    return {**kept[0], **rest} if len(kept) == 1 else {**rest, "anyOf": kept}


def _describe_default(schema: dict) -> None:
    """Move ``schema``'s ``default`` into its description: a generated client leaves an optional
    value out unless it is given (openapi-python-client sends schema defaults; openapi-typescript
    makes defaulted properties required), and the service applies the same default."""
    if "default" not in schema:
        return
    value = orjson.dumps(schema.pop("default")).decode()
    said = schema.get("description", "").rstrip()
    schema["description"] = f"{said}{'. ' if said and not said.endswith('.') else ' ' if said else ''}Default: {value}."


#: Keywords whose values are schemas (or lists or maps of schemas), for :func:`_without_defaults`.
SUBSCHEMAS = ("items", "anyOf", "oneOf", "allOf", "prefixItems", "additionalProperties", "not")


def _without_defaults(schema) -> None:
    """:func:`_describe_default` on ``schema``, its properties and every schema inside it."""
    if isinstance(schema, list):
        for entry in schema:
            _without_defaults(entry)
        return
    if not isinstance(schema, dict):
        return
    _describe_default(schema)
    for name in schema.get("properties", {}):
        _without_defaults(schema["properties"][name])
    for key in SUBSCHEMAS:
        if key in schema:
            _without_defaults(schema[key])


def _references(node, components: dict, found: set[str]) -> set[str]:
    """The names of the components ``node`` refers to, directly or through other components."""
    if isinstance(node, list):
        for entry in node:
            _references(entry, components, found)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                name = value.rsplit("/", 1)[-1]
                if name not in found and name in components:
                    found.add(name)
                    _references(components[name], components, found)
            else:
                _references(value, components, found)
    return found


def request_defaults_described(schema: dict) -> None:
    """Every schema a client sends (request bodies, query parameters, the live channel's client
    messages) with its defaults in its descriptions instead of ``default`` (:func:`_describe_default`).
    Answers keep theirs: there, every field is always present."""
    components = schema.get("components", {}).get("schemas", {})
    sent: set[str] = set()
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                _without_defaults(parameter.get("schema"))
            for media in operation.get("requestBody", {}).get("content", {}).values():
                _without_defaults(media.get("schema"))
            _references([operation.get("requestBody"), operation.get("parameters"),
                         operation.get("x-client-messages")], components, sent)
    for name in sent:
        _without_defaults(components[name])


def _add_error(responses: dict, status: int) -> None:
    responses.setdefault(str(status), {"description": ERROR_DESCRIPTIONS[status],
                                       "content": {"application/json": {"schema": ERROR_REF}}})


def document_refusals(path: str, operation: dict, secured: bool, open_paths: frozenset) -> None:
    """Document on one operation every refusal the service may answer it with, as ``ErrorOut``."""
    responses = operation.setdefault("responses", {})
    for status, response in responses.items():
        if status.isdigit() and int(status) >= 400:
            for media in response.get("content", {}).values():
                if media.get("schema", {}).get("$ref", "").rsplit("/", 1)[-1] in FASTAPI_VALIDATION_SCHEMAS:
                    media["schema"] = ERROR_REF
            if response.get("description") in (http.client.responses.get(int(status)), "Validation Error"):
                # FastAPI's default description is the status phrase: say what it means here.
                response["description"] = ERROR_DESCRIPTIONS.get(int(status), response["description"])
    parameters = operation.get("parameters", [])
    for parameter in parameters:
        parameter["schema"] = _not_null(parameter.get("schema", {}))
    if "requestBody" in operation:
        for status in (413, 415, 422):
            _add_error(responses, status)
    if parameters:
        _add_error(responses, 422)
    if any(parameter["in"] == "path" for parameter in parameters):
        _add_error(responses, 404)
    if path.startswith("/scenes"):
        _add_error(responses, 503)
    if secured and path not in open_paths:
        operation["security"] = [{"bearer": []}]
        _add_error(responses, 401)
    operation["responses"] = dict(sorted(responses.items()))


def operation_id(route: APIRoute) -> str:
    """A route's ``operationId``: its endpoint's name (``pick_batch_binary``), which generated clients
    name their functions and types after (FastAPI's default adds the path and the method)."""
    return route.name


def install_schemas(app: FastAPI, secured: bool, open_paths: frozenset[str] = frozenset()) -> None:
    """Make ``app.openapi()`` include the models :func:`body_doc` refers to, every
    refusal of every operation, and, when ``secured``, the bearer scheme on every
    route that needs the key (all but ``open_paths``)."""

    def openapi() -> dict:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description,
                                 routes=app.routes)
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for name in FASTAPI_VALIDATION_SCHEMAS:
                components.pop(name, None)
            for name, definition in _definitions.items():
                components.setdefault(name, definition)
            components.setdefault(ErrorOut.__name__, ErrorOut.model_json_schema(ref_template=REF_TEMPLATE))
            schema["components"]["schemas"] = dict(sorted(components.items()))
            if secured:
                schema["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
            for path, operations in schema.get("paths", {}).items():
                for operation in operations.values():
                    document_refusals(path, operation, secured, open_paths)
            request_defaults_described(schema)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi
