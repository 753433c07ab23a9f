"""``/viewer``: a web page to look at a scene, orbit around it, pick and select with the mouse.

Static files from ``service/static`` (plain HTML, CSS and JavaScript, nothing
from elsewhere). They answer without the API key (see
``service.middleware.OPEN_PATHS``): the page holds no data, and asks for the
key itself when ``/scenes`` answers 401.
"""

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

from ..errors import ClientError

router = APIRouter(tags=["viewer"], include_in_schema=False)

STATIC = Path(__file__).resolve().parent.parent / "static"

#: The files the page loads, by the name in its URL (``/viewer/<name>``), with their media types.
ASSETS = {"viewer.js": "text/javascript; charset=utf-8", "viewer.css": "text/css; charset=utf-8"}

#: Every path the viewer is served under: these answer without the API key.
VIEWER_PATHS = frozenset({"/viewer", *(f"/viewer/{name}" for name in ASSETS)})

# The page changes with the service: a browser must ask again rather than keep an old copy.
NO_CACHE = {"Cache-Control": "no-cache"}


@router.get("/viewer")
async def viewer_page():
    """The viewer; ``/viewer?scene=<id>`` opens that scene."""
    return FileResponse(STATIC / "viewer.html", media_type="text/html; charset=utf-8", headers=NO_CACHE)


@router.get("/viewer/{name}")
async def viewer_asset(name: str):
    """A script or style sheet of the viewer."""
    if name not in ASSETS:
        raise ClientError(404, f"no viewer file {name[:60]!r}")
    return FileResponse(STATIC / name, media_type=ASSETS[name], headers=NO_CACHE)
