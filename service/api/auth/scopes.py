"""Which scope each request needs, and which scene it touches: the one table of access.

Scopes are levels, each implying the ones below it: ``read`` (picks and every
other query, exports, every ``GET``, the live channel's picks), ``edit``
(plus edits, uploads, new scenes, the live channel's edits) and ``admin``
(plus deleting a scene, ``/metrics``).

The rule reads the HTTP method and the path's segments, so it holds for the
raw path of a request and for a route's template alike (a path parameter is
one opaque segment): the middleware checks requests with it before any
routing, and the OpenAPI document and the tests apply it to every route's
template. Anything it does not know to be a read is an edit: a new route
that changes a scene is never open to a ``read`` token by omission, and a new
query route is simply refused to it until its name joins :data:`QUERY_ACTIONS`.
"""

from enum import IntEnum


class Scope(IntEnum):
    """A token's level; a higher one includes every lower one. ``NONE``: a signed token
    that names none of this service's scopes (it may do nothing but authenticate)."""

    NONE = 0
    READ = 1
    EDIT = 2
    ADMIN = 3

    @property
    def label(self) -> str:
        """The scope's name in a token's ``scope`` claim (``read``, ``edit``, ``admin``)."""
        return self.name.lower()


#: The scope names a token's ``scope`` claim may hold, to their level.
SCOPE_NAMES = {scope.label: scope for scope in (Scope.READ, Scope.EDIT, Scope.ADMIN)}

#: The last path segment (without a ``.bin`` suffix) of the ``POST`` routes under
#: ``/scenes/{scene_id}/`` that ask a question of a scene and change nothing.
QUERY_ACTIONS = frozenset({"pick", "batch", "camera", "select", "closest", "sphere-cast", "contains", "overlap",
                           "idbuffer"})

#: ``GET`` paths that need more than ``read``.
ADMIN_READS = frozenset({"/metrics"})

#: The paths a ``POST`` to creates a scene (a scene-restricted token may not: see :func:`scene_of`).
CREATE_PATHS = frozenset({"/scenes", "/scenes/upload"})

#: The methods that read: ``GET`` (a WebSocket's upgrade counts as one), ``HEAD``, ``OPTIONS``.
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

#: What each message of the live channel needs; a binary frame (a batch of picks) is ``"binary"``.
LIVE_MESSAGE_SCOPES = {"pick": Scope.READ, "batch_options": Scope.READ, "binary": Scope.READ, "edit": Scope.EDIT}


def _segments(path: str) -> list[str]:
    return path.strip("/").split("/")


def required_scope(method: str, path: str) -> Scope:
    """The scope a request (or a route, from its template) needs.

    Parameters
    ----------
    method : str
        The HTTP method, upper case; a WebSocket's upgrade is ``GET``.
    path : str
        The request's path, or a route's template (``/scenes/{scene_id}/pick``).

    Returns
    -------
    Scope
        ``ADMIN`` for ``DELETE /scenes/{id}`` and the :data:`ADMIN_READS`;
        ``READ`` for the other reads and for a ``POST`` to a query under
        a scene (:data:`QUERY_ACTIONS`); ``EDIT`` for everything else.
    """
    if method in READ_METHODS:
        return Scope.ADMIN if path in ADMIN_READS else Scope.READ
    segments = _segments(path)
    if method == "DELETE":
        return Scope.ADMIN if len(segments) == 2 and segments[0] == "scenes" else Scope.EDIT
    if method == "POST" and len(segments) >= 3 and segments[0] == "scenes":
        action = segments[-1]
        if action.endswith(".bin"):
            action = action[:-4]
        if action in QUERY_ACTIONS:
            return Scope.READ
    return Scope.EDIT


def scene_of(method: str, path: str) -> str | None:
    """The scene id a request's path names (``/scenes/{scene_id}/...``), None for a path
    that names none (``/scenes`` itself, ``POST /scenes/upload``, ``/metrics``, ...)."""
    if method == "POST" and path in CREATE_PATHS:
        return None
    segments = _segments(path)
    if len(segments) >= 2 and segments[0] == "scenes":
        return segments[1]
    return None


def creates_scene(method: str, path: str) -> bool:
    """Whether the request makes a new scene (``POST /scenes``, ``POST /scenes/upload``)."""
    return method == "POST" and path in CREATE_PATHS
