"""uvicorn's WebSocket protocol with the writes of one turn of the event loop sent together.

uvicorn's sans-I/O WebSocket protocol hands every frame to the transport as it
is made, and the transport sends it at once: one ``send`` system call per
answer. A client pipelining picks on the live channel gets its answers one
call each, and those calls were 44% of the process's time in a profile of
``bench.live`` (50,000 pipelined picks). :class:`CorkedWebSocketProtocol`
gives uvicorn's protocol a transport that keeps the frames written during one
turn of the loop and sends them in one call when the turn ends (as Linux's
``TCP_CORK`` does for a socket, without holding anything past the turn): a
lone answer leaves as soon as the loop has run the callbacks already due, and
a burst of answers leaves in one write. Everything but ``write`` goes to the
real transport; a close sends what is kept first.
"""

import asyncio

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol


class CorkedTransport:
    """A transport whose writes of one loop turn go out in one write at its end."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop):
        self._transport = transport
        self._loop = loop
        self._kept: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not data:
            return
        if not self._kept:
            self._loop.call_soon(self.flush)
        self._kept.append(data)

    def flush(self) -> None:
        """Send what is kept now (the loop calls this at the end of the turn)."""
        if not self._kept:
            return
        data = b"".join(self._kept)
        self._kept = []
        if not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._kept = []
        self._transport.abort()

    def __getattr__(self, name):
        return getattr(self._transport, name)


class CorkedWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's ``websockets-sansio`` protocol over a :class:`CorkedTransport`."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(CorkedTransport(transport, self.loop))
