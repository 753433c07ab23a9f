"""The HTTP surface: routes, request bodies, errors, the OpenAPI and the middleware."""
