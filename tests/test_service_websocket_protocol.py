"""service.live.protocol: the frames of one turn of the event loop leave in one write."""

import asyncio

from service.live.protocol import CorkedTransport


class RecordingTransport(asyncio.Transport):
    def __init__(self):
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data):
        self.writes.append(bytes(data))

    def is_closing(self):
        return self.closed or self.aborted

    def close(self):
        self.closed = True

    def abort(self):
        self.aborted = True

    def get_extra_info(self, name, default=None):
        return {"peername": ("127.0.0.1", 5)}.get(name, default)


def test_writes_of_one_turn_leave_together_at_its_end():
    async def main():
        inner = RecordingTransport()
        corked = CorkedTransport(inner, asyncio.get_running_loop())
        corked.write(b"one")
        corked.write(b"")
        corked.write(b"two")
        assert inner.writes == []
        await asyncio.sleep(0)
        assert inner.writes == [b"onetwo"]
        corked.write(b"three")
        await asyncio.sleep(0)
        assert inner.writes == [b"onetwo", b"three"]
        # Everything but write is the real transport's.
        assert corked.get_extra_info("peername") == ("127.0.0.1", 5)

    asyncio.run(main())


def test_a_close_sends_what_is_kept_first_and_an_abort_drops_it():
    async def main():
        inner = RecordingTransport()
        corked = CorkedTransport(inner, asyncio.get_running_loop())
        corked.write(b"last words")
        corked.close()
        assert inner.writes == [b"last words"] and inner.closed
        await asyncio.sleep(0)
        assert inner.writes == [b"last words"]

        other = RecordingTransport()
        corked = CorkedTransport(other, asyncio.get_running_loop())
        corked.write(b"never")
        corked.abort()
        await asyncio.sleep(0)
        assert other.writes == [] and other.aborted

    asyncio.run(main())
