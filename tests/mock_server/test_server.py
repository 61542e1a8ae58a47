"""MockServer: scripts in every form it takes, its options, its lifecycle, and the
connection-level defences it sets up (the listen backlog and the header/idle/body timeouts)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import selectors
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, get_args

import httpx
import pytest

from dshkit.mock_server import MockServer, Script
from dshkit.mock_server.routing import Router
from dshkit.mock_server.scripts import FaultName, FaultStep, ScriptError, parse_script
from dshkit.mock_server.server import sequence_script

from ..together import Played, play_together

REQUEST = {"model": "deepseek-chat", "messages": [{"role": "user", "content": "hi"}]}
BODY = json.dumps(REQUEST).encode()


async def read_until_closed(reader: asyncio.StreamReader, limit: float = 10) -> bytes:
    """Everything the server sends until it closes; fails (not hangs) after `limit` seconds."""
    async with asyncio.timeout(limit):
        return await reader.read()


# -- scripts ---------------------------------------------------------------------------------


@pytest.mark.parametrize("repeat_last", [False, True])
def test_a_sequence_of_fault_names_is_the_script_validation_makes(repeat_last: bool) -> None:
    """`--sequence` builds its script without the script validator: every field of it and of
    each step (the defaults included, and which fields count as set) is what validation gives."""
    names = list(get_args(FaultName))
    built = sequence_script(",".join(names), repeat_last=repeat_last)
    validated = parse_script({"name": "sequence", "repeat_last": repeat_last, "steps": names}, source="--sequence")
    assert built == validated
    assert built.model_dump_json() == validated.model_dump_json()
    assert built.model_fields_set == validated.model_fields_set
    for made, valid in zip(built.steps, validated.steps, strict=True):
        assert type(made) is FaultStep
        for a, b in ((made, valid), (made.stream, valid.stream), (made.stream.writes, valid.stream.writes),
                     (made.timing, valid.timing)):
            assert a.model_fields_set == b.model_fields_set
        assert made.stream.quirks is not built.steps[0].stream.quirks or made is built.steps[0]  # a list each


@pytest.mark.parametrize(("names", "field"), [("success,rate_limt", "steps[1].fault"), (" , ", "steps")])
def test_a_sequence_with_a_name_that_is_no_fault_fails_as_a_script_does(names: str, field: str) -> None:
    with pytest.raises(ScriptError) as e:
        sequence_script(names)
    assert e.value.field == field and e.value.source == "--sequence"


async def _contents(server: MockServer, http: httpx.AsyncClient, n: int) -> list[str]:
    """The reply texts of `n` requests, each from a new session (each claims the next script)."""
    out = []
    for i in range(n):
        r = await http.post(server.url, headers={"X-Mock-Session": f"s{i}"}, json={
            "model": "deepseek-chat", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200, r.text
        out.append(r.json()["choices"][0]["message"]["content"])
    return out


async def test_mock_server_takes_a_mapping_and_a_list_of_steps_as_scripts(http: httpx.AsyncClient) -> None:
    # as the dshkit_script marker does: a whole script as a mapping, or its steps as a list
    async with MockServer(
            {"name": "whole", "steps": [{"reply": {"content": "from the mapping"}}]},
            [{"reply": {"content": "from the list"}}]) as server:
        server.add_script({"steps": [{"reply": {"content": "added later"}}]})
        assert await _contents(server, http, 3) == ["from the mapping", "from the list", "added later"]
        assert [s.name for s in server.router.scripts] == ["whole", "inline-2", "script"]


@pytest.mark.parametrize(("source", "message"), [
    ({"steps": [{"reply": {"contnt": "x"}}]}, "MockServer script argument 2: steps[0].reply.contnt: unknown key"),
    ([{"fault": "no_such_fault"}], "MockServer script argument 2: steps[0].fault: unknown fault `no_such_fault`"),
    (5, "MockServer script argument 2: 5 (int) is not a script (pass Script.of(...), a file path, a mapping"),
    (b"steps: []", "MockServer script argument 2: b'steps: []' (bytes) is not a script"),
])
def test_an_inline_script_that_is_not_valid_names_its_argument(source: object, message: str) -> None:
    with pytest.raises(ScriptError) as e:
        MockServer(Script.of("rate_limit"), source)  # type: ignore[arg-type]
    assert str(e.value).startswith(message), str(e.value)


# -- options -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("options", "message"), [
    ({"port": 70000}, "port must be an integer 0-65535"),
    ({"port": True}, "port must be an integer 0-65535"),
    ({"backlog": 0}, "backlog must be 1-2147483647"),
    ({"max_body_bytes": 0}, "max_body_bytes must be an integer >= 1"),
    ({"max_body_bytes": 1.5}, "max_body_bytes must be an integer >= 1"),
    ({"idle_timeout": 0}, "idle_timeout must be > 0 seconds"),
    ({"weights": {"rate_limt": 1}}, "random weight for unknown fault 'rate_limt'"),
    ({"weights": {"random": 1}}, "random weight for unknown fault 'random'"),
    ({"weights": {"success": -1}}, "random weight for 'success' must be finite and >= 0"),
    ({"weights": {"success": float("inf")}}, "random weight for 'success' must be finite and >= 0"),
    ({"weights": {"success": float("nan")}}, "random weight for 'success' must be finite and >= 0"),
    ({"weights": {"success": 0, "empty": 0}}, "random weights need at least one positive entry"),
    ({"router": Router([])}, "pass scripts or a router, not both"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_a_bad_option_is_refused_before_anything_starts(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as e:
        MockServer(Script.replies("x"), **options)
    assert str(e.value).startswith(message), str(e.value)


async def test_random_weights_are_the_ones_a_random_step_draws_from(http: httpx.AsyncClient) -> None:
    """Weights given to the server replace the defaults: a fault weighted 0 is never drawn."""
    async with MockServer(sequence="random", repeat_last=True, weights={"rate_limit": 1, "success": 0}) as server:
        statuses = {(await http.post(server.url, json=REQUEST)).status_code for _ in range(5)}
    assert statuses == {429}
    assert {e.behavior for e in server.journal} == {"rate_limit"}


# -- lifecycle -----------------------------------------------------------------------------------


async def test_addresses_are_known_once_bound_and_a_closed_server_serves_no_more(http: httpx.AsyncClient) -> None:
    server = MockServer()
    with pytest.raises(RuntimeError, match="not started"):
        server.base_url  # noqa: B018 (the property raises)
    assert repr(server).startswith("<MockServer not started seed=")
    async with server:
        assert await server.start() is server  # starting again is a no-op
        assert server.port > 0 and server.base_url == f"http://127.0.0.1:{server.port}"
        assert server.url == server.base_url + "/chat/completions"
        assert server.anthropic_base_url == server.base_url + "/anthropic"
        assert server.make_url("v1/models") == server.make_url("/v1/models") == server.base_url + "/v1/models"
        assert (await http.get(server.make_url("/v1/models"))).status_code == 200
    await server.close()  # idempotent
    with pytest.raises(httpx.ConnectError):
        await http.get(server.make_url("/v1/models"))
    with pytest.raises(RuntimeError, match="cannot be restarted"):
        await server.start()  # closed after it served: refused, not a silent no-op
    closed = MockServer()
    await closed.close()
    with pytest.raises(RuntimeError, match="cannot be restarted"):
        await closed.start()


def test_a_sync_server_serves_from_its_own_thread_until_closed() -> None:
    serving: list[threading.Thread] = []  # the thread each telemetry event is sent from
    with MockServer(Script.replies("from the thread"),
                    on_event=lambda event: serving.append(threading.current_thread())) as server:
        r = httpx.post(server.url, json={**REQUEST, "stream": False}, timeout=30)
        assert r.json()["choices"][0]["message"]["content"] == "from the thread"
        (thread,) = set(serving)
        assert thread is not threading.current_thread() and thread.is_alive()
    assert not thread.is_alive()
    server.close_thread()  # idempotent
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.make_url("/models"), timeout=30)


@pytest.mark.parametrize("front", [True, False], ids=["front", "aiohttp"])
async def test_closing_the_server_ends_a_stalled_stream(front: bool) -> None:
    async with MockServer(Script.of("stall"), front=front) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%b"
                     % (len(BODY), BODY))
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        await server.close()
        with contextlib.suppress(ConnectionError):
            await read_until_closed(reader)  # ends (EOF or reset) instead of hanging
        writer.close()
    assert server.journal.last.outcome == "closed"


async def test_a_malformed_request_is_logged_on_one_line_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """aiohttp answers it with a 400 and logs the client's mistake as an error with its
    traceback; the server's log keeps the line and names the problem instead."""
    async with MockServer() as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n")
        assert (await read_until_closed(reader)).startswith(b"HTTP/1.0 400 Bad Request")
        writer.close()
    records = [r for r in caplog.records if r.name == "dshkit.mock_server.http"]
    assert len(records) == 1 and records[0].exc_info is None
    assert records[0].getMessage().endswith(": 400 Invalid character in Content-Length")

# -- connection-level defences ------------------------------------------------------------------

CLIENTS = 400


def connect_all(port: int, n: int, timeout: float = 3.0) -> tuple[int, list[socket.socket]]:
    """Open `n` non-blocking connections while the server accepts none (its loop is busy in
    this very call), and return how many the kernel completed and the sockets.

    A connection completes only if the listen queue has room for it: past the backlog the
    kernel drops the SYN and the socket stays unconnected until the deadline.
    """
    socks: list[socket.socket] = []
    with selectors.DefaultSelector() as sel:
        for _ in range(n):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            socks.append(s)
            sel.register(s, selectors.EVENT_WRITE)
        connected = 0
        deadline = time.monotonic() + timeout
        while connected < n and (left := deadline - time.monotonic()) > 0:
            for key, _ in sel.select(left):
                sel.unregister(key.fileobj)
                if key.fileobj.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:  # type: ignore[union-attr]
                    connected += 1
    return connected, socks


async def test_400_clients_connecting_at_once_are_all_queued() -> None:
    async with MockServer() as server:
        connected, socks = connect_all(server.port, CLIENTS)
        for s in socks:
            s.close()
        assert connected == CLIENTS, f"only {connected} of {CLIENTS} connections were queued"

        # And served: 400 concurrent requests, each answered.
        async def one() -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"GET /models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = await reader.read()
            writer.close()
            return data

        async with asyncio.timeout(60):
            answers = await asyncio.gather(*(one() for _ in range(CLIENTS)))
    assert all(a.startswith(b"HTTP/1.1 200") for a in answers)


# The four exchanges below each wait out the server's idle timeout (or a scripted delay longer
# than it): played together once (`tests/together.py`), each test judges its own.


async def _slowloris() -> tuple[bytes, bytes, int]:
    async with MockServer(idle_timeout=0.3) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: app")
        partial = await read_until_closed(reader)
        writer.close()
        # A connection that never sends a byte is closed the same way.
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        silent = await read_until_closed(reader)
        writer.close()
        return partial, silent, len(server.journal)


async def _idle_keep_alive() -> bytes:
    async with MockServer(idle_timeout=0.3) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%b"
                     % (len(BODY), BODY))
        data = await read_until_closed(reader)
        writer.close()
    return data


async def _slow_body() -> tuple[bytes, str | None]:
    async with MockServer(idle_timeout=0.3) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%b"
                     % (len(BODY), BODY[:10]))
        data = await read_until_closed(reader)
        writer.close()
    return data, server.journal.last.outcome


async def _slow_response() -> bytes:
    script = Script.of({"reply": {"content": "late"}, "timing": {"headers_delay_ms": 900}})
    async with MockServer(script, idle_timeout=0.3) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     b"Content-Length: %d\r\n\r\n%b" % (len(BODY), BODY))
        data = await read_until_closed(reader)
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    return data


TIMED: dict[str, Callable[[], Awaitable[Any]]] = {
    "slowloris": _slowloris, "idle keep-alive": _idle_keep_alive, "slow body": _slow_body,
    "slow response": _slow_response,
}
timed_group = pytest.mark.xdist_group("connection_timeouts")


@pytest.fixture(scope="module")
def timed() -> Played[str, Any]:
    return play_together(TIMED)


@timed_group
def test_slowloris_partial_header_is_closed_after_the_timeout(timed: Played[str, Any]) -> None:
    partial, silent, requests = timed["slowloris"]
    assert partial == b""
    assert silent == b""  # a connection that never sent a byte
    assert requests == 0  # no request was ever complete


@timed_group
def test_idle_keep_alive_connection_is_closed_after_its_response(timed: Played[str, Any]) -> None:
    data = timed["idle keep-alive"]
    assert data.startswith(b"HTTP/1.1 200") and b'"You said: \\"hi\\""' in data


@timed_group
def test_slow_body_gets_408(timed: Played[str, Any]) -> None:
    data, outcome = timed["slow body"]
    head, _, rest = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408") and b"did not arrive within 0.3 s" in rest
    assert outcome == "rejected"


@timed_group
def test_a_slow_response_is_not_cut_by_the_idle_timeout(timed: Played[str, Any]) -> None:
    """The timeout guards request heads and bodies, never the server's own (scripted) delays."""
    data = timed["slow response"]
    assert data.startswith(b"HTTP/1.1 200") and b"late" in data
