"""The transports' outbox: what one event-loop iteration sends goes out as one write, in order, over a real
pipe; a lone message waits for no timer; a closed reader stops nothing."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Iterator

import pytest

from sidecar.server.outbox import Outbox


class Pipe:
    """A real pipe whose write end counts the write calls made to it."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)
        view = memoryview(data)
        while view:
            view = view[os.write(self.write_fd, view):]

    def read(self) -> bytes:
        out = b""
        while True:
            try:
                chunk = os.read(self.read_fd, 1 << 20)
            except BlockingIOError:
                return out
            if not chunk:
                return out
            out += chunk

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass


@pytest.fixture
def pipe() -> Iterator[Pipe]:
    p = Pipe()
    yield p
    p.close()


def _message(i: int) -> bytes:
    return f'{{"jsonrpc":"2.0","method":"session/update","params":{{"n":{i}}}}}\n'.encode()


async def test_a_burst_sent_in_one_loop_iteration_is_one_write_in_order(pipe: Pipe) -> None:
    outbox = Outbox(pipe.write)
    for i in range(500):  # a replay: no await between the updates
        outbox.write(_message(i))
    assert pipe.read() == b""
    await asyncio.sleep(0)
    assert pipe.read() == b"".join(_message(i) for i in range(500))
    assert len(pipe.writes) == 1


async def test_a_lone_message_goes_out_in_the_next_loop_iteration(pipe: Pipe) -> None:
    outbox = Outbox(pipe.write)
    outbox.write(b"one\n")
    await asyncio.sleep(0)
    assert pipe.read() == b"one\n"
    outbox.write(b"two\n")
    await asyncio.sleep(0)
    assert pipe.read() == b"two\n"
    assert pipe.writes == [b"one\n", b"two\n"]


async def test_a_long_burst_goes_out_as_it_reaches_the_limit(pipe: Pipe) -> None:
    outbox = Outbox(pipe.write, limit=1000)
    chunks = [bytes([65 + i]) * 300 for i in range(10)]
    for chunk in chunks:
        outbox.write(chunk)
    # 4 × 300 bytes reach the limit: the editor gets the start of the burst while the rest is produced.
    assert pipe.read() == b"".join(chunks[:8])
    assert [len(w) for w in pipe.writes] == [1200, 1200]
    await asyncio.sleep(0)
    assert pipe.read() == b"".join(chunks[8:])


async def test_a_thread_without_a_loop_writes_at_once_after_what_was_gathered(pipe: Pipe) -> None:
    outbox = Outbox(pipe.write)
    outbox.write(b"from the loop\n")
    thread = threading.Thread(target=outbox.write, args=(b"from a thread\n",))
    thread.start()
    thread.join()
    assert pipe.read() == b"from the loop\nfrom a thread\n"
    await asyncio.sleep(0)
    assert pipe.read() == b""


async def test_a_reader_that_went_away_is_logged_once_and_stops_nothing(
        pipe: Pipe, caplog: pytest.LogCaptureFixture) -> None:
    outbox = Outbox(pipe.write)
    os.close(pipe.read_fd)
    with caplog.at_level(logging.ERROR, logger="sidecar.server.outbox"):
        outbox.write(b"lost\n")
        await asyncio.sleep(0)
        outbox.write(b"lost too\n")
        await asyncio.sleep(0)
        outbox.close()
    assert [r.getMessage() for r in caplog.records] == ["the client closed the connection ([Errno 32] Broken pipe)"]
    assert pipe.writes == [b"lost\n"]


def test_close_writes_what_is_left_once_the_loop_has_gone(pipe: Pipe) -> None:
    outbox = Outbox(pipe.write)
    loop = asyncio.new_event_loop()
    loop.call_soon(outbox.write, b"last words\n")
    loop.call_soon(loop.stop)
    loop.run_forever()
    loop.close()  # the flush scheduled in that loop never ran
    assert pipe.read() == b""
    outbox.close()
    assert pipe.read() == b"last words\n"
