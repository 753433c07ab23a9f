"""``/viewer``: a web page to look at a scene, orbit around it, pick and select with the mouse.

Static files from ``service/static`` (plain HTML, CSS, JavaScript and an SVG
icon, all written for this project, nothing from elsewhere). They answer
without the API key (see ``service.app.open_paths``): the page holds no
data, and asks for the key itself when ``/scenes`` answers 401. ``/``
redirects to the viewer, and ``/favicon.ico`` answers the viewer's icon, for
browsers that ask for it there.
"""

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, RedirectResponse

from ..errors import ClientError

router = APIRouter(tags=["viewer"], include_in_schema=False)

STATIC = Path(__file__).resolve().parents[2] / "static"

SVG = "image/svg+xml"

#: The files the page loads, by the name in its URL (``/viewer/<name>``), with their media types.
ASSETS = {"viewer.js": "text/javascript; charset=utf-8", "viewer.css": "text/css; charset=utf-8", "favicon.svg": SVG}

#: Every path the viewer is served under: these answer without the API key.
VIEWER_PATHS = frozenset({"/", "/favicon.ico", "/viewer", *(f"/viewer/{name}" for name in ASSETS)})

# The page changes with the service: a browser must ask again rather than keep an old copy.
NO_CACHE = {"Cache-Control": "no-cache"}


@router.get("/")
async def root():
    """The service's root: the viewer."""
    # Relative, so that the redirect still lands on the viewer behind a proxy that adds a path prefix.
    return RedirectResponse("viewer", status_code=302)


@router.get("/favicon.ico")
async def favicon():
    """The viewer's icon (an SVG, which browsers take under this name too)."""
    return FileResponse(STATIC / "favicon.svg", media_type=SVG, headers=NO_CACHE)


@router.get("/viewer")
async def viewer_page():
    """The viewer; ``/viewer?scene=<id>`` opens that scene, else it opens the first one."""
    return FileResponse(STATIC / "viewer.html", media_type="text/html; charset=utf-8", headers=NO_CACHE)


@router.get("/viewer/{name}")
async def viewer_asset(name: str):
    """A script, style sheet or icon of the viewer."""
    if name not in ASSETS:
        raise ClientError(404, f"no viewer file {name[:60]!r}")
    return FileResponse(STATIC / name, media_type=ASSETS[name], headers=NO_CACHE)
