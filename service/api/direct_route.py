"""The hottest endpoint without FastAPI's per-request machinery.

FastAPI's handler solves the endpoint's dependencies, parses query, header
and cookie parameters and validates the response on every request, and its
router and exception middleware walk several layers before reaching an
endpoint; on ``/pick`` that costs more than the pick itself. Two pieces
take a route around that:

- :class:`DirectRoute`, an ``APIRoute`` whose handler is the endpoint
  itself (``APIRoute.get_route_handler`` is FastAPI's documented hook): it
  is documented in the OpenAPI schema and matched by the router like any
  route;
- :class:`DirectRoutes`, an ASGI middleware, the innermost one, that sends
  requests for those routes straight to their endpoints. It sets
  ``scope["route"]`` as the router would (the request metrics label by it)
  and answers an ``HTTPException`` or a client's hang-up with the app's own
  handlers; anything else goes up to the app's handler of unexpected errors,
  as from any route.
"""

from fastapi import HTTPException
from fastapi.routing import APIRoute
from starlette.requests import ClientDisconnect, Request
from starlette.types import ASGIApp, Receive, Scope, Send


class DirectRoute(APIRoute):
    """An ``APIRoute`` whose endpoint is ``async def endpoint(request) -> Response``."""

    def get_route_handler(self):
        return self.endpoint


class DirectRoutes:
    """Answer requests for the given :class:`DirectRoute` s before FastAPI's router sees them.

    Parameters
    ----------
    app : ASGI app
        What every other request goes to.
    routes : list of DirectRoute
        Matched in order, by method and path (string path parameters only).
    http_error : async callable ``(request, HTTPException) -> Response``
        The app's handler of HTTP errors, so errors read the same either way.
    client_hung_up : async callable ``(request, ClientDisconnect) -> Response``
        The app's handler of a client that hangs up before its body is read.
    """

    def __init__(self, app: ASGIApp, routes: list[DirectRoute], http_error, client_hung_up):
        self.app = app
        self.routes = [(route.path_regex, route.methods, route) for route in routes]
        self.http_error = http_error
        self.client_hung_up = client_hung_up

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            method = scope["method"]
            for path_regex, methods, route in self.routes:
                match = path_regex.match(path)
                if match is not None and method in methods:
                    scope["route"] = route
                    scope["endpoint"] = route.endpoint
                    scope["path_params"] = match.groupdict()
                    request = Request(scope, receive, send)
                    try:
                        response = await route.endpoint(request)
                    except HTTPException as error:
                        response = await self.http_error(request, error)
                    except ClientDisconnect as error:
                        response = await self.client_hung_up(request, error)
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)
