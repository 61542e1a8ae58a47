"""The server bench's load generator (`bench/loadgen.c`) counts what its threads saw, together.

The bench's goals rest on its figures: events and responses summed over every thread, an error
for every response short of its events, and a new number in every request that asks for one,
whichever thread sends it. Each check runs the compiled client against a small asyncio server
in this process that answers every request with one fixed stream in one write (so a response
is read whole and a run's events are exactly its responses times the stream's events) and
keeps every number it was sent.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EVENTS = 7
"""`data: ` lines in every response the server sends."""
BODY = b"".join(b'data: {"n": %d}\n\n' % i for i in range(EVENTS - 1)) + b"data: [DONE]\n\n"
RUN_SECONDS = (0.05, 0.3, 1.0, 3.0, 10.0)
"""How long a run lasts: the next, longer one only where some thread finished no response
(a machine too busy to serve one in time), so the checks never rest on how fast it is."""


def _response(close: bool) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
    head += b"Connection: close\r\n\r\n" if close else b"\r\n"
    return head + b"%x\r\n%b\r\n0\r\n\r\n" % (len(BODY), BODY)


@dataclass
class Server:
    port: int = 0
    seen: list[bytes] = field(default_factory=list)
    """Every request body received, in order."""


class _Stream(asyncio.Protocol):
    def __init__(self, server: Server, live: set[asyncio.Transport]) -> None:
        self.server, self.buf, self.live = server, b"", live

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.live.add(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.live.discard(self.transport)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while (end := self.buf.find(b"\r\n\r\n")) >= 0:
            head = self.buf[:end].lower()
            length = int(head.split(b"content-length:")[1].split(b"\r\n")[0])
            if len(self.buf) < end + 4 + length:
                return
            self.server.seen.append(self.buf[end + 4:end + 4 + length])
            self.buf = self.buf[end + 4 + length:]
            close = b"connection: close" in head
            self.transport.write(_response(close))  # the whole response in one write
            if close:
                self.transport.close()
                return


@pytest.fixture(scope="module")
def loadgen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler (`cc`) to build bench/loadgen.c with")
    exe = tmp_path_factory.mktemp("loadgen") / "loadgen"
    subprocess.run([cc, "-O2", "-pthread", "-Wall", "-Werror", "-o", str(exe), str(ROOT / "bench" / "loadgen.c")],
                   check=True, capture_output=True, text=True)
    return exe


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server()
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stop: asyncio.Future[None] = loop.create_future()

    async def serve() -> None:
        live: set[asyncio.Transport] = set()
        srv = await loop.create_server(lambda: _Stream(state, live), "127.0.0.1", 0, backlog=512)
        state.port = srv.sockets[0].getsockname()[1]
        ready.set()
        await stop
        srv.close()
        # Connections whose client left as the run ended may not have seen their EOF yet: close
        # them here, and let their connection_lost run, or the closed loop leaves them to the GC
        # (a ResourceWarning that fails whichever test the collector happens to run in). That
        # includes connections accepted just before the close whose transport is still being
        # made (asyncio's accept tasks): each is waited for, then closed like the rest.
        while True:
            for transport in list(live):
                transport.abort()
            while live:
                await asyncio.sleep(0)  # one loop pass: the aborts' connection_lost callbacks run
            accepting = asyncio.all_tasks() - {asyncio.current_task()}
            if not accepting:
                break
            await asyncio.gather(*accepting, return_exceptions=True)
        await srv.wait_closed()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    ready.wait()
    try:
        yield state
    finally:
        loop.call_soon_threadsafe(stop.set_result, None)
        thread.join()
        loop.close()


def _run(exe: Path, server: Server, tmp_path: Path, *, conns: int, keepalive: bool, expect: int,
         threads: int | None) -> dict[str, Any]:
    req = tmp_path / "req.http"
    req.write_bytes(b"POST /s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 8\r\n"
                    + (b"" if keepalive else b"Connection: close\r\n") + b"\r\n@@@@@@@@")
    for seconds in RUN_SECONDS:
        args = [str(exe), str(server.port), str(req), str(conns), str(seconds), "1" if keepalive else "0", str(expect)]
        done = subprocess.run(args + ([] if threads is None else [str(threads)]),
                              capture_output=True, text=True, check=True, timeout=60)
        out: dict[str, Any] = json.loads(done.stdout)
        if min(out["thread_responses"]) > 0:
            return out
    raise AssertionError(f"a client thread finished no response in {RUN_SECONDS[-1]} s: {out}")


@pytest.mark.parametrize("keepalive", [True, False], ids=["ka", "close"])
@pytest.mark.parametrize(("conns", "threads"), [(3, None), (5, 2), (2, 3)],
                         ids=["one-thread-by-default", "two-threads", "no-more-threads-than-conns"])
def test_threads_split_the_connections_and_their_counts_add_up(
        loadgen: Path, server: Server, tmp_path: Path, conns: int, threads: int | None, keepalive: bool) -> None:
    out = _run(loadgen, server, tmp_path, conns=conns, keepalive=keepalive, expect=EVENTS, threads=threads)
    want = min(threads or 1, conns)
    assert out["threads"] == want
    # as even a split as goes, and every connection in one
    split = [conns // want + (i < conns % want) for i in range(want)]
    assert out["thread_conns"] == split
    responses = out["responses"]
    assert responses == sum(out["thread_responses"])
    assert out["events"] == responses * EVENTS
    assert out["errors"] == 0
    assert out["bytes"] == responses * len(_response(not keepalive))


def test_a_short_response_is_an_error_in_every_thread(loadgen: Path, server: Server, tmp_path: Path) -> None:
    out = _run(loadgen, server, tmp_path, conns=4, keepalive=False, expect=EVENTS + 1, threads=2)
    assert out["responses"] == out["errors"]
    assert out["events"] == out["responses"] * EVENTS


def test_every_request_carries_a_number_no_other_thread_sent(loadgen: Path, server: Server, tmp_path: Path) -> None:
    out = _run(loadgen, server, tmp_path, conns=4, keepalive=True, expect=EVENTS, threads=2)
    seen = server.seen
    assert len(seen) >= out["responses"]
    assert all(len(body) == 8 and int(body, 16) >= 0 for body in seen)
    assert len(set(seen)) == len(seen), "two requests carried the same number"
