"""A FastAPI route without FastAPI's per-request machinery, for the hottest endpoint.

FastAPI's handler solves the endpoint's dependencies, parses query, header
and cookie parameters and validates the response on every request, even for
an endpoint that takes only the ``Request`` and returns a ``Response``; on
``/pick`` that costs more than the pick. A :class:`DirectRoute` calls such an
endpoint directly (``APIRoute.get_route_handler`` is FastAPI's documented
hook for custom handling) and is still an ``APIRoute``: it is documented in
the OpenAPI schema, matched by the same router and its errors handled by the
same exception handlers.
"""

from fastapi.routing import APIRoute


class DirectRoute(APIRoute):
    """An ``APIRoute`` whose endpoint is ``async def endpoint(request) -> Response``."""

    def get_route_handler(self):
        return self.endpoint
