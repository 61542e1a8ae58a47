"""The fast front against aiohttp: the same requests give the same bytes and the same journal.

Every test here sends identical raw bytes to two servers with the same seed and scripts, one
with the front (`MockServer()`, the default) and one without (`MockServer(front=False)`), and
compares what came back byte for byte, `Date` and `created` aside (they follow the clock). The
requests cover what the front takes (model calls on both wires, faults, scripted steps,
pipelined and keep-alive requests, large responses) and what it must hand to aiohttp (other
paths and methods, HTTP/1.0, chunked or compressed bodies, odd headers), and a hypothesis test
draws request heads of every kind.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dshkit.mock_server import MockServer
from dshkit.mock_server.faults import FAULTS

pytestmark = pytest.mark.xdist_group("front")

SEED = 20261203
_DATE = re.compile(rb"\r\nDate: [^\r]*\r\n")
_CREATED = re.compile(rb'"created": ?\d+')
#: Faults whose end is a reset or a hold: compared by their journal, not their bytes (data in
#: flight when a reset arrives may be dropped by the kernel, and a hold never ends by itself).
_UNREAD = {"connection_reset", "stream_disconnect", "partial_disconnect", "stall", "stall_after",
           "reasoning_stall", "hold_after_finish", "random"}


def _script(tmp: Any) -> dict[str, Any]:
    sse = tmp / "recorded.sse"
    sse.write_bytes(b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n')
    return {
        "name": "steps",
        "session": "scripted",
        "steps": [
            {"reply": {"content": "Hello from a script", "reasoning": "Think first."}},
            {"reply": {"content": "paced"}, "stream": {"writes": {"events_per_write": 1}},
             "timing": {"chunk_delay_ms": 1}},
            {"reply": {"content": "tool", "tool_calls": [{"name": "f", "arguments": {"a": 1}}]}},
            {"raw": {"file": str(sse)}},
            {"raw": {"status": 200, "headers": {"Content-Type": "text/event-stream"},
                     "writes": [{"text": "data: {}\n\n"}, {"b64": "AAE="}]}},
            {"fault": "keep_alive"},
            "rate_limit",
            {"reply": {"content": "ends"}},
        ],
    }


class _Finished:
    """Counts the `result` events of a server (sent once a request's journal entry is closed)."""

    def __init__(self) -> None:
        self.count = 0
        self._cond = threading.Condition()

    def __call__(self, event: dict[str, Any]) -> None:
        if event["type"] == "result":
            with self._cond:
                self.count += 1
                self._cond.notify_all()

    def wait_for(self, count: int) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: self.count >= count, 30), f"{self.count} of {count} finished"


class _Pair:
    """(with the front, without it): the same seed and script, each on its own thread's loop."""

    def __init__(self, script: str) -> None:
        self.finished = [_Finished(), _Finished()]
        self.servers = [
            MockServer(script, seed=SEED, unscripted="default", front=front, on_event=done).start_in_thread()
            for front, done in zip((True, False), self.finished, strict=True)
        ]
        self._marks = [0, 0]
        self._pool = ThreadPoolExecutor(2)

    def start_over(self) -> None:
        """Both servers' sessions start over; the journals are compared from here on."""
        counts = [len(server.journal.entries) for server in self.servers]
        # A test that failed may leave one server a request ahead (ids and trace ids would differ
        # in every test after it): say so instead.
        assert counts[0] == counts[1], f"an earlier test left the journals at {counts}"
        for i, server in enumerate(self.servers):
            server.router.reset()
            self._marks[i] = len(server.journal.entries)

    def exchange(self, requests: list[bytes], *, pipelined: bool) -> tuple[bytes, bytes]:
        """The same conversation with both servers at once (their waits overlap)."""
        fast, plain = self._pool.map(lambda server: _exchange(server.port, requests, pipelined=pipelined),
                                     self.servers)
        return fast, plain

    def journals(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """What each journal says of the requests since :meth:`start_over`, once all finished."""
        served = len(self.servers[1].journal.entries)
        for finished in self.finished:
            finished.wait_for(served)
        fast, plain = (_journal(server.journal.entries[mark:])
                       for server, mark in zip(self.servers, self._marks, strict=True))
        return fast, plain

    def close(self) -> None:
        self._pool.shutdown()
        for server in self.servers:
            server.close_thread()


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Pair]:
    tmp = tmp_path_factory.mktemp("front")
    (tmp / "steps.json").write_text(json.dumps(_script(tmp)))
    both = _Pair(str(tmp / "steps.json"))
    yield both
    both.close()


def _exchange(port: int, requests: list[bytes], *, pipelined: bool) -> bytes:
    """Send `requests` on one connection (all at once, or each after the previous response)
    and return everything read until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        out = bytearray()
        if pipelined:
            sock.sendall(b"".join(requests))
        else:
            reader = sock.makefile("rb")
            for request in requests[:-1]:
                sock.sendall(request)
                out += _read_response(reader)
            sock.sendall(requests[-1])
            out += reader.read()
            return bytes(out)
        while chunk := sock.recv(1 << 16):
            out += chunk
        return bytes(out)


def _read_response(reader: Any) -> bytes:
    """One chunked response, as sent (a Content-Length body too)."""
    head = bytearray()
    while not head.endswith(b"\r\n\r\n"):
        line = reader.readline()
        assert line, f"the connection closed inside a response head: {bytes(head)!r}"
        head += line
    out = bytearray(head)
    if b"transfer-encoding: chunked" in head.lower():
        while True:
            size_line = reader.readline()
            out += size_line
            size = int(size_line.strip(), 16)
            out += reader.read(size + 2)
            if size == 0:
                return bytes(out)
    length = re.search(rb"(?i)content-length: (\d+)", head)
    if length:
        out += reader.read(int(length[1]))
    return bytes(out)


def _masked(data: bytes) -> list[tuple[bytes, tuple[int, ...], bytes]]:
    """The responses in `data`, each as (head, chunk sizes, body), `Date` and `created` masked
    (a body is masked whole: a dripped stream may cut a timestamp between two chunks)."""
    out = []
    rest = data
    while rest:
        end = rest.find(b"\r\n\r\n")
        if end < 0:
            out.append((rest, (), b""))
            break
        head, rest = rest[:end + 4], rest[end + 4:]
        sizes: list[int] = []
        body = bytearray()
        if b"transfer-encoding: chunked" in head.lower():
            while rest:
                line, _, rest = rest.partition(b"\r\n")
                size = int(line, 16)
                sizes.append(size)
                body += rest[:size]
                rest = rest[size + 2:]
                if size == 0:
                    break
        else:
            length = re.search(rb"(?i)\r\ncontent-length: (\d+)", head)
            cut = int(length[1]) if length else len(rest)
            body, rest = bytearray(rest[:cut]), rest[cut:]
        out.append((_DATE.sub(b"\r\nDate: -\r\n", head), tuple(sizes), _CREATED.sub(b'"created":0', bytes(body))))
    return out


def _journal(entries: list[Any]) -> list[dict[str, Any]]:
    """What the journal says of each request, without times; the writes as their sizes and
    their bytes joined (`created` masked)."""
    out = []
    for entry in entries:
        rec = entry.to_json()
        rec.pop("t")
        rec["writes"] = [w["size"] for w in rec["writes"]]
        rec["data"] = _CREATED.sub(b'"created":0', entry.data)
        out.append(rec)
    return out


def _post(path: str, body: bytes | dict[str, Any], *, extra: bytes = b"", close: bool = False) -> bytes:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn = b"Connection: close\r\n" if close else b""
    return (b"POST %b HTTP/1.1\r\nHost: mock\r\nContent-Type: application/json\r\n%b%b"
            b"Content-Length: %d\r\n\r\n%b" % (path.encode(), extra, conn, len(data), data))


CHAT = "/chat/completions"
MESSAGES = "/anthropic/v1/messages"


def _chat(text: str = "hello", **more: Any) -> dict[str, Any]:
    return {"model": "deepseek-v4-flash", "messages": [{"role": "user", "content": text}], "stream": True, **more}


def _anthropic(text: str = "hello", **more: Any) -> dict[str, Any]:
    return {"model": "deepseek-v4-flash", "max_tokens": 64,
            "messages": [{"role": "user", "content": text}], "stream": True, **more}


def _conversations() -> dict[str, list[bytes]]:
    gz = gzip.compress(json.dumps(_chat("zipped")).encode())
    chunked = json.dumps(_chat("chunked")).encode()
    convs: dict[str, list[bytes]] = {
        "chat-stream": [_post(CHAT, _chat(), close=True)],
        "chat-whole": [_post(CHAT, _chat(stream=False), close=True)],
        "chat-keep-alive-three": [_post(CHAT, _chat("one")), _post("/v1/chat/completions", _chat("two")),
                                  _post("/beta/chat/completions", _chat("three"), close=True)],
        "anthropic-stream": [_post(MESSAGES, _anthropic(), close=True)],
        "anthropic-whole": [_post("/anthropic/messages", _anthropic(stream=False), close=True)],
        "both-wires-on-one-connection": [_post(MESSAGES, _anthropic("a")), _post(CHAT, _chat("b"), close=True)],
        "invalid-json": [_post(CHAT, b"{not json", close=True)],
        "missing-model": [_post(CHAT, {"messages": []}, close=True)],
        "empty-body": [_post(CHAT, b"", close=True)],
        "anthropic-invalid": [_post(MESSAGES, {"model": "x"}, close=True)],
        "unknown-fault": [_post(CHAT, _chat(), extra=b"X-Mock-Behavior: nope\r\n", close=True)],
        # every step of the script, then one more (exhausted: a 418)
        "scripted-session": [_post(CHAT, _chat("s"), extra=b"X-Mock-Session: scripted\r\n")
                             for _ in range(8)] + [_post(CHAT, _chat("s"), extra=b"X-Mock-Session: scripted\r\n",
                                                         close=True)],
        "large-reply": [_post(CHAT, _chat("large " * 20_000), close=True)],  # ~6 MB: over the socket buffers
        "lowercase-and-spaced-fields": [
            b"POST /chat/completions HTTP/1.1\r\nhost: mock\r\ncontent-type:application/json\r\n"
            b"x-mock-session:    spaced\r\nconnection: Close\r\ncontent-length: %d\r\n\r\n%b"
            % (len(json.dumps(_chat()).encode()), json.dumps(_chat()).encode())],
        # handed to aiohttp: the front must give the connection over with what it read
        "models-then-post": [b"GET /models HTTP/1.1\r\nHost: mock\r\n\r\n", _post(CHAT, _chat(), close=True)],
        "post-then-models-then-post": [_post(CHAT, _chat("x")), b"GET /v1/models HTTP/1.1\r\nHost: m\r\n\r\n",
                                       _post(CHAT, _chat("y"), close=True)],
        "not-found": [b"POST /nowhere HTTP/1.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"],
        "query-string": [_post(CHAT + "?x=1", _chat(), close=True)],
        "http-1.0": [_post(CHAT, _chat()).replace(b"HTTP/1.1", b"HTTP/1.0", 1)],
        "chunked-body": [b"POST /chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n"
                         b"\r\n%x\r\n%b\r\n0\r\n\r\n" % (len(chunked), chunked)],
        "gzip-body": [_post(CHAT, gz, extra=b"Content-Encoding: gzip\r\n", close=True)],
        "bad-gzip-body": [_post(CHAT, b"not gzip", extra=b"Content-Encoding: gzip\r\n", close=True)],
        "expect-continue": [_post(CHAT, _chat(), extra=b"Expect: 100-continue\r\n", close=True)],
        "non-ascii-field": [_post(CHAT, _chat(), extra="X-Mock-Session: s\u00e9\r\n".encode(), close=True)],
        "undecodable-field": [_post(CHAT, _chat(), extra=b"X-Mock-Session: \xff\xfe\r\n", close=True)],
        "two-content-lengths": [_post(CHAT, _chat(), extra=b"Content-Length: 999\r\n", close=True)],
        "folded-field": [_post(CHAT, _chat(), extra=b"X-A: one\r\n two\r\n", close=True)],
        "large-head": [_post(CHAT, _chat(), extra=b"X-Big: " + b"a" * 20_000 + b"\r\n", close=True)],
        "missing-host": [_post(CHAT, _chat(), close=True).replace(b"Host: mock\r\n", b"")],
        "host-twice": [_post(CHAT, _chat(), extra=b"host: other\r\n", close=True)],
        "content-type-twice": [_post(CHAT, _chat(), extra=b"Content-Type: text/plain\r\n", close=True)],
        "odd-connection-token": [_post(CHAT, _chat(), extra=b"Connection: upgrade\r\n", close=True)],
        "too-large-declared": [b"POST /chat/completions HTTP/1.1\r\nContent-Length: 99999999\r\n"
                               b"Connection: close\r\n\r\n{}"],
    }
    for name in FAULTS:
        if name not in _UNREAD:
            convs[f"fault-{name}"] = [_post(CHAT, _chat(), extra=b"X-Mock-Behavior: %b\r\n" % name.encode(),
                                            close=True)]
            if not name.startswith("slow_"):  # paced writes: the chat wire's are enough
                convs[f"anthropic-fault-{name}"] = [_post(MESSAGES, _anthropic(), extra=b"X-Mock-Behavior: %b\r\n"
                                                          % name.encode(), close=True)]
    return convs


CONVERSATIONS = _conversations()


#: A conversation of one request reads the same either way; those of several also go pipelined.
_CASES = [(name, False) for name in sorted(CONVERSATIONS)] + [
    (name, True) for name in sorted(CONVERSATIONS) if len(CONVERSATIONS[name]) > 1]


@pytest.mark.parametrize(("name", "pipelined"), _CASES,
                         ids=[f"{n}-{'pipelined' if p else 'in-turn'}" for n, p in _CASES])
def test_front_sends_the_bytes_aiohttp_sends(pair: _Pair, name: str, pipelined: bool) -> None:
    pair.start_over()
    fast, plain = pair.exchange(CONVERSATIONS[name], pipelined=pipelined)
    assert fast.startswith(b"HTTP/1."), f"{name}: the front sent {fast[:80]!r}"
    assert _masked(fast) == _masked(plain), name
    fast_journal, plain_journal = pair.journals()
    assert fast_journal == plain_journal, name


@pytest.mark.parametrize("name", ["chat-stream", "anthropic-stream", "chat-whole", "both-wires-on-one-connection",
                                  "fault-keep_alive"])
def test_the_head_says_close_when_the_connection_closes_after(pair: _Pair, name: str) -> None:
    """A response the server closes the connection after says `Connection: close`, once (the
    wire's streaming headers bring `keep-alive`; RFC 9112 9.6), on both paths; a response the
    connection stays open after keeps its `keep-alive`."""
    pair.start_over()
    answers = pair.exchange(CONVERSATIONS[name], pipelined=False)
    for answer in answers:
        heads = [head for head, _, _ in _masked(answer)]
        connection = [re.findall(rb"(?im)^connection: *([^\r]*)\r$", head) for head in heads]
        assert connection[-1] == [b"close"], (name, heads[-1])
        assert all(values in ([], [b"keep-alive"]) for values in connection[:-1]), (name, heads)
    pair.journals()


@pytest.mark.parametrize("fault", sorted(_UNREAD - {"random"}))
def test_resets_and_holds_end_as_with_aiohttp(pair: _Pair, fault: str) -> None:
    """A reset ends both connections the same way; a hold lasts until the client leaves, and
    the journal records each the same."""
    pair.start_over()
    request = _post(CHAT, _chat(), extra=b"X-Mock-Behavior: %b\r\n" % fault.encode(), close=True)
    holds = fault in {"stall", "stall_after", "reasoning_stall", "hold_after_finish"}
    for server in pair.servers:
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
            sock.sendall(request)
            if holds:
                head = b""
                while b"\r\n\r\n" not in head:  # the answer started: then the client leaves
                    chunk = sock.recv(1 << 16)
                    assert chunk, f"{fault}: the connection closed before the answer started"
                    head += chunk
            else:
                with _any_end():
                    while sock.recv(1 << 16):
                        pass
    fast_journal, plain_journal = pair.journals()
    assert fast_journal == plain_journal
    assert [e["outcome"] for e in fast_journal] == (["client_closed"] if holds else ["reset"])


class _any_end:
    """A read that ends with EOF or with a reset, whichever the kernel reports."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        return exc_type is None or issubclass(exc_type, ConnectionResetError)


_NAMES = st.sampled_from(["Content-Type", "content-type", "X-Mock-Session", "x-mock-session",
                          "Authorization", "X-Other", "Accept", "User-Agent"])
_VALUES = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12)


#: True most of the time (hypothesis leans to a sampled list's first element).
_MOSTLY = st.sampled_from([True] * 9 + [False])


@st.composite
def _requests(draw: st.DrawFn) -> bytes:
    """A request head of any kind, mostly one the front takes (so both sides are exercised)."""
    method = draw(st.sampled_from([b"POST"] * 8 + [b"GET", b"PUT"]))
    path = draw(st.sampled_from([CHAT, MESSAGES, "/v1/chat/completions", "/anthropic/messages"] * 2
                                + ["/models", CHAT + "?a=b", "/x"]))
    version = draw(st.sampled_from([b"HTTP/1.1"] * 6 + [b"HTTP/1.0"]))
    wire = _anthropic if "anthropic" in path else _chat
    body = draw(st.sampled_from([json.dumps(wire(draw(st.text(max_size=20)))).encode()] * 4 + [
        json.dumps(wire("x", stream=False)).encode(), b"{", b"", b"[]", json.dumps({"model": 1}).encode(),
    ]))
    # mostly distinct names; sometimes a name twice (aiohttp refuses some of them twice)
    fields = draw(st.lists(st.tuples(_NAMES, _VALUES), max_size=4,
                           unique_by=(lambda f: f[0].lower()) if draw(_MOSTLY) else None))
    if draw(_MOSTLY):  # mostly with a Host (HTTP/1.1 needs one), in any spelling
        fields.append((draw(st.sampled_from(["Host", "host", "HOST"])), "mock"))
    head = [b"%b %b %b" % (method, path.encode(), version)]
    for name, value in fields:
        sep = draw(st.sampled_from([b": ", b":", b":   "]))
        head.append(name.encode() + sep + value.strip().encode())
    head.append(b"Content-Length: %d" % len(body))
    head.append(draw(st.sampled_from([b"Connection: close", b"connection: CLOSE"])))
    order = draw(st.permutations(head[1:]))
    return b"\r\n".join([head[0], *order]) + b"\r\n\r\n" + body


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(request=_requests())
def test_any_request_head_gets_the_same_answer(pair: _Pair, request: bytes) -> None:
    pair.start_over()
    fast, plain = pair.exchange([request], pipelined=True)
    event(f"status {fast[9:12].decode(errors='replace')}")  # --hypothesis-show-statistics
    assert _masked(fast) == _masked(plain)
    fast_journal, plain_journal = pair.journals()
    assert fast_journal == plain_journal


@pytest.mark.asyncio
async def test_an_idle_connection_is_closed_after_the_idle_timeout() -> None:
    """No complete head within the idle timeout (nothing, or half a head): closed, as aiohttp does."""
    async with MockServer(idle_timeout=0.2) as server:
        for sent in (b"", b"POST /chat/completions HTTP/1.1\r\nHost: x\r\n"):
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(sent)
            assert await asyncio.wait_for(reader.read(), 30) == b""
            writer.close()


@pytest.mark.asyncio
async def test_a_client_that_hangs_up_cancels_its_answer() -> None:
    """A stalled answer ends when its client leaves (the handler is cancelled), journaled as
    `client_closed`, while the server goes on serving."""
    finished = asyncio.Event()
    outcomes: list[str] = []

    def seen(event: dict[str, Any]) -> None:
        if event["type"] == "result":
            outcomes.append(event["outcome"])
            finished.set()

    async with MockServer(on_event=seen) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(_post(CHAT, _chat(), extra=b"X-Mock-Behavior: stall\r\n"))
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
        writer.close()
        await asyncio.wait_for(finished.wait(), 30)
        assert outcomes == ["client_closed"]
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(_post(CHAT, _chat(), close=True))
        assert (await asyncio.wait_for(reader.read(), 30)).startswith(b"HTTP/1.1 200")
        writer.close()


@pytest.mark.asyncio
async def test_closing_the_server_ends_idle_and_busy_front_connections() -> None:
    server = MockServer()
    await server.start()
    idle_r, idle_w = await asyncio.open_connection("127.0.0.1", server.port)
    idle_w.write(_post(CHAT, _chat()))  # answered, then kept alive
    await idle_r.readuntil(b"0\r\n\r\n")
    busy_r, busy_w = await asyncio.open_connection("127.0.0.1", server.port)
    busy_w.write(_post(CHAT, _chat(), extra=b"X-Mock-Behavior: stall\r\n"))
    await busy_r.readuntil(b"\r\n\r\n")
    await asyncio.wait_for(server.close(), 30)
    for reader in (idle_r, busy_r):
        with _any_end():
            assert await asyncio.wait_for(reader.read(), 30) in (b"", b"0\r\n\r\n")
    for writer in (idle_w, busy_w):
        writer.close()
