"""OpenAPI documentation of request bodies that routes parse themselves.

The hot routes read their bodies with ``Model.model_validate_json`` (pydantic's
Rust JSON parser, no intermediate dicts) instead of FastAPI's body
parameters, and some accept more than one content type; :func:`body_doc`
documents those bodies, and :func:`install_schemas` adds the models they
refer to to the schema's components.
"""

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, TypeAdapter

REF_TEMPLATE = "#/components/schemas/{model}"

_definitions: dict[str, dict] = {}


def _schema(annotation) -> dict:
    schema = TypeAdapter(annotation).json_schema(ref_template=REF_TEMPLATE)
    _definitions.update(schema.pop("$defs", {}))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        _definitions[annotation.__name__] = schema
        return {"$ref": REF_TEMPLATE.format(model=annotation.__name__)}
    return schema


def body_doc(json_model=None, multipart: dict | None = None, binary: str | None = None,
             path_parameters: tuple[str, ...] = ()) -> dict:
    """``openapi_extra`` for a route's request body.

    Parameters
    ----------
    json_model : type or annotation, optional
        The ``application/json`` body.
    multipart : dict, optional
        Form fields of a ``multipart/form-data`` body, name to JSON schema.
    binary : str, optional
        Description of an ``application/octet-stream`` body.
    path_parameters : tuple of str
        Path parameters the route reads from ``request.path_params`` rather
        than from its signature (strings).
    """
    content = {}
    if json_model is not None:
        content["application/json"] = {"schema": _schema(json_model)}
    if multipart is not None:
        content["multipart/form-data"] = {"schema": {"type": "object", "properties": multipart,
                                                     "required": ["file"]}}
    if binary is not None:
        content["application/octet-stream"] = {"schema": {"type": "string", "format": "binary",
                                                          "description": binary}}
    extra = {"requestBody": {"required": True, "content": content}}
    if path_parameters:
        extra["parameters"] = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                               for name in path_parameters]
    return extra


def install_schemas(app: FastAPI, secured: bool) -> None:
    """Make ``app.openapi()`` include the models :func:`body_doc` refers to, and,
    when ``secured``, the bearer scheme on every route that needs the key."""
    from .middleware import OPEN_PATHS

    def openapi() -> dict:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description,
                                 routes=app.routes)
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for name, definition in _definitions.items():
                components.setdefault(name, definition)
            if secured:
                schema["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
                for path, operations in schema.get("paths", {}).items():
                    if path not in OPEN_PATHS:
                        for operation in operations.values():
                            operation["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi
