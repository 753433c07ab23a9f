"""``/scenes/{id}/live``: one WebSocket for picks, edits and the scene's change events.

The connection itself is :class:`service.live.session.LiveSession`; the
protocol, :data:`~service.live.session.PROTOCOL`, is also in the OpenAPI
document, on the ``GET`` of this path.
"""

from fastapi import APIRouter, WebSocket
from fastapi.responses import Response

from ..deps import StoredSceneDep
from ..errors import ClientError
from ..openapi import messages_doc
from ..schemas import (AuthMessage, BatchOptionsAnswer, BatchOptionsMessage, EditAnswer, EditMessage, ErrorMessage,
                       ErrorOut, EventMessage, HelloMessage, PickAnswer, PickMessage, ResyncMessage)
from ...live.session import PATH, PROTOCOL, LiveSession

router = APIRouter(tags=["live"])


@router.websocket(PATH)
async def live(websocket: WebSocket, scene_id: str):
    await LiveSession(websocket, scene_id).run()


@router.get(PATH, status_code=101, response_class=Response,
            responses={101: {"description": PROTOCOL},
                       426: {"model": ErrorOut, "description": "a plain HTTP GET: this path is a WebSocket"}},
            openapi_extra=messages_doc(
                client=[AuthMessage, PickMessage, EditMessage, BatchOptionsMessage],
                server=[HelloMessage, PickAnswer, EditAnswer, BatchOptionsAnswer, ErrorMessage, EventMessage,
                        ResyncMessage]))
async def live_over_http(stored: StoredSceneDep):
    """The live channel: picks, edits and the scene's change events over one WebSocket."""
    raise ClientError(426, f"/scenes/{stored.id}/live is a WebSocket: open it with a WebSocket client "
                           "(ws:// or wss://), which sends this GET with 'Upgrade: websocket'",
                      headers={"Upgrade": "websocket", "Connection": "Upgrade"})
