"""The fast front: model calls read and answered below aiohttp, everything else through it.

aiohttp costs about as much per request as the whole of a minimal server (on a one-request
connection its request machinery, response objects and connection bookkeeping are half the CPU
of a cached reply). The front is an asyncio protocol that listens in aiohttp's place. For each
request on a connection it reads the head itself and takes the request only when it is plainly
a model call:

* `POST` to one of the surfaces' paths (no query string), `HTTP/1.1`;
* a head of printable ASCII within 8190 bytes, every field `name: value` with a token name,
  a `Host` field, and no field twice that aiohttp allows once;
* a single `Content-Length`, within the body limit, and the whole body already received;
* no `Transfer-Encoding`, `Expect` or `Upgrade`, and `Connection` (if any) `close` or
  `keep-alive`.

Such a request is answered by the same code aiohttp's handler runs (:func:`~dshkit.mock_server.
handlers.model_answer`: the journal, routing, faults and rendering are shared), written by a
:class:`FrontExchange` straight onto the transport: the status line, headers (aiohttp's order,
`Date` and `Server` included), chunked framing and terminator are the bytes aiohttp would send,
which `tests/mock_server/test_front.py` holds it to request by request.

The first request that is anything else (another path or method, HTTP/1.0, chunked or partial
bodies, odd or non-ASCII headers, a head longer than 8190 bytes) hands the connection over to
aiohttp for good: a new aiohttp protocol takes the transport (`transport.set_protocol`) and is
fed the bytes read so far, so aiohttp's own answers, limits and timeouts apply unchanged. A
connection is handed over only between responses.

Like aiohttp, the front closes a connection that sends no complete request head within the
idle timeout (after opening or after a response), cancels the handler of a client that hangs
up, and answers requests pipelined on one connection in order. `MockServer(fast_path=False)`
(`dshkit serve --plain-path`) serves everything through aiohttp.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Mapping
from http import HTTPStatus

from aiohttp.http import SERVER_SOFTWARE
from multidict import CIMultiDict, CIMultiDictProxy

from dshkit.mock_server.exchange import JSON_HEADERS, Exchange
from dshkit.mock_server.handlers import Answer, Incoming, decode_body
from dshkit.mock_server.journal import JournalEntry, Write
from dshkit.mock_server.routing import Router
from dshkit.mock_server.runtime import Runtime

__all__ = ["Front", "FrontExchange"]

log = logging.getLogger("dshkit.mock_server")

#: A head longer than this is aiohttp's to answer (its limit for one line, so a shorter head
#: never meets aiohttp's limits).
MAX_HEAD = 8190
#: Unread request bytes a busy connection buffers before it stops reading from the socket.
MAX_BUFFER = 1 << 20
#: One header field: a token name, a colon, optional spaces, then a value of printable ASCII that
#: neither starts nor ends with a space (it may be empty).
_FIELD = r"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ ]*((?:[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?)"
#: A head the front may take: a `POST` request line of HTTP/1.1 (the path is looked up as it is),
#: then only well-formed fields (each after its CRLF).
_HEAD = re.compile(rb"POST ([^ ]*) HTTP/1\.1((?:\r\n" + _FIELD.encode("ascii") + rb")*)")
#: The fields of a head `_HEAD` took, as (name, value) pairs.
_FIELDS = re.compile("\r\n" + _FIELD)
#: Fields after which aiohttp, not the front, must read the request.
_HAND_OFF_FIELDS = frozenset({"transfer-encoding", "expect", "upgrade", "sec-websocket-key1"})
#: Fields aiohttp's parser refuses to see twice (it answers 400).
_SINGLETONS = frozenset({"content-length", "content-location", "content-range", "content-type", "etag",
                         "host", "max-forwards", "server", "transfer-encoding", "user-agent"})
#: More fields than aiohttp's parser reads: aiohttp answers.
_MAX_FIELDS = 100
#: The field names `_parse` looks at (any other passes as it is).
_SPECIAL = _SINGLETONS | _HAND_OFF_FIELDS | {"connection"}
_REASONS = {s.value: s.phrase for s in HTTPStatus}
_TERMINATOR = b"0\r\n\r\n"


class _Date:
    """The `Date` header's value, formatted once a second (RFC 9110's IMF-fixdate, in English
    whatever the locale, as aiohttp writes it)."""

    second = -1
    text = ""
    _DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
    _MONTHS = ("", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

    @classmethod
    def now(cls) -> str:
        second = int(time.time())
        if second != cls.second:
            t = time.gmtime(second)
            cls.second = second
            cls.text = (f"{cls._DAYS[t.tm_wday]}, {t.tm_mday:02d} {cls._MONTHS[t.tm_mon]} {t.tm_year:04d} "
                        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} GMT")
        return cls.text


class Front:
    """The protocol factory of a listening socket: one :class:`_Connection` per connection."""

    def __init__(
        self,
        runtime: Runtime,
        router: Router,
        answers: Mapping[str, Answer],
        fallback: Callable[[], asyncio.Protocol],
    ) -> None:
        self.runtime = runtime
        self.router = router
        self.answers = {path.encode("ascii"): answer for path, answer in answers.items()}
        self.fallback = fallback
        """Makes the aiohttp protocol a handed-over connection continues on."""
        self.connections: set[_Connection] = set()
        self.tasks: set[asyncio.Task[None]] = set()

    def __call__(self) -> _Connection:
        return _Connection(self)

    async def close(self, timeout: float) -> None:
        """Close idle connections, give answers in flight `timeout` seconds, then drop the rest."""
        for conn in list(self.connections):
            if conn.task is None and conn.transport is not None:
                conn.transport.close()
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=timeout)
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.abort()
        for task in list(self.tasks):
            task.cancel()


class _Request:
    """A request the front takes: what :class:`Incoming` needs, its answer and the connection's fate."""

    __slots__ = ("answer", "body", "headers", "keep_alive", "path")

    def __init__(self, answer: Answer, path: str, headers: CIMultiDictProxy[str], body: bytes,
                 keep_alive: bool) -> None:
        self.answer = answer
        self.path = path
        self.headers = headers
        self.body = body
        self.keep_alive = keep_alive

    async def read_body(self, limit: int, timeout: float) -> bytes:
        # Whole and within the limit already (`_parse` hands larger bodies to aiohttp).
        return decode_body(self.body, self.headers.get("Content-Encoding"), limit)


def _parse(front: Front, buf: bytearray, end: int) -> tuple[_Request, int] | None:
    """The request whose head ends at `end` (before its blank line) and its length in `buf`,
    or None when aiohttp must read it (see the module docstring)."""
    head = bytes(buf[:end])
    if head.count(b"\r\n") >= _MAX_FIELDS:
        return None
    m = _HEAD.fullmatch(head)
    if m is None:
        return None
    answer = front.answers.get(m[1])
    if answer is None:
        return None
    fields: list[tuple[str, str]] = _FIELDS.findall(m[2].decode("ascii"))
    seen: set[str] = set()
    length: int | None = None
    keep_alive = True
    for name, value in fields:
        lower = name.lower()
        if lower not in _SPECIAL:
            continue
        if lower in _SINGLETONS:
            if lower in seen:
                return None
            seen.add(lower)
        if lower == "content-length":
            if not value.isdigit():
                return None
            length = int(value)
        elif lower == "connection":
            token = value.lower()
            if token == "close":
                keep_alive = False
            elif token != "keep-alive":
                return None
        elif lower in _HAND_OFF_FIELDS:
            return None
    if length is None or length > front.runtime.config.max_body_bytes or "host" not in seen:
        return None
    start = end + 4
    if len(buf) < start + length:
        return None  # the body is still arriving: aiohttp reads it, with its timeout
    body = bytes(buf[start:start + length])
    request = _Request(answer, m[1].decode("ascii"), CIMultiDictProxy(CIMultiDict(fields)), body, keep_alive)
    return request, start + length


class _Connection(asyncio.Protocol):
    """One client connection while the front serves it."""

    def __init__(self, front: Front) -> None:
        self.front = front
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.task: asyncio.Task[None] | None = None
        """The answer in flight (None between requests)."""
        self._timer: asyncio.TimerHandle | None = None
        self._paused = False
        self._drained: asyncio.Future[None] | None = None
        self._reading = True

    # -- asyncio callbacks -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.front.connections.add(self)
        self._arm()

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if self.task is None:
            self._next()
        elif len(self.buf) > MAX_BUFFER and self._reading and self.transport is not None:
            self._reading = False
            self.transport.pause_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.front.connections.discard(self)
        self.transport = None
        self._disarm()
        if self.task is not None:
            self.task.cancel()  # as aiohttp's handler cancellation does
        self._wake()

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    # -- the requests ------------------------------------------------------------------

    def _next(self) -> None:
        """Take the next request in the buffer, if it is whole; or hand the connection over."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        buf = self.buf
        if not buf:
            return
        end = buf.find(b"\r\n\r\n", 0, MAX_HEAD + 4)
        if end < 0 or end > MAX_HEAD:
            if len(buf) > MAX_HEAD:
                self._hand_off()
            return  # the head is still arriving (the idle timer is armed)
        parsed = _parse(self.front, buf, end)
        if parsed is None:
            self._hand_off()
            return
        request, size = parsed
        del buf[:size]
        self._disarm()
        if not self._reading:
            self._reading = True
            transport.resume_reading()
        task = asyncio.get_running_loop().create_task(self._answer(request))
        self.task = task
        self.front.tasks.add(task)
        task.add_done_callback(self.front.tasks.discard)

    async def _answer(self, request: _Request) -> None:
        front = self.front
        rt = front.runtime
        x: FrontExchange | None = None

        def open_x(entry: JournalEntry, headers: Mapping[str, str]) -> Exchange:
            nonlocal x
            x = FrontExchange(self, request.keep_alive, entry, rt.closing, headers)
            return x

        incoming = Incoming("POST", request.path, request.headers, request.read_body, front.router)
        try:
            await request.answer(rt, incoming, open_x)
            if not self._gone():
                if x is None or not x.started:  # every answer starts a response; never hang a client
                    raise RuntimeError("the handler returned without a response")
                if not x.ended:
                    x.finish()  # a handler that returns before its end: aiohttp writes the terminator
        except asyncio.CancelledError:
            return  # the client hung up (or the server closes): nothing more to write
        except Exception:
            log.exception("mock server front failed on POST %s", request.path)
            if self.transport is not None:
                self.transport.abort()
            return
        finally:
            self.task = None
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if not request.keep_alive:
            transport.close()
            return
        self._arm()
        self._next()

    def _hand_off(self) -> None:
        """aiohttp serves this connection from now on, starting with the bytes read so far."""
        transport = self.transport
        assert transport is not None and self.task is None
        self._disarm()
        self.front.connections.discard(self)
        if not self._reading:
            self._reading = True
            transport.resume_reading()
        protocol = self.front.fallback()
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        if self._paused:
            protocol.pause_writing()
        data, self.buf = bytes(self.buf), bytearray()
        self.transport = None
        if data:
            protocol.data_received(data)

    # -- timers and flow control -------------------------------------------------------

    def _arm(self) -> None:
        """Close the connection unless a complete request head arrives within the idle timeout."""
        self._disarm()
        self._timer = asyncio.get_running_loop().call_later(
            self.front.runtime.config.idle_timeout, self._idle)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _idle(self) -> None:
        self._timer = None
        if self.task is None and self.transport is not None:
            self.transport.close()

    def _gone(self) -> bool:
        return self.transport is None or self.transport.is_closing()

    async def drain(self) -> None:
        """Wait while the socket's buffer is over its high-water mark."""
        while self._paused and self.transport is not None:
            fut = asyncio.get_running_loop().create_future()
            self._drained = fut
            await fut

    def _wake(self) -> None:
        fut, self._drained = self._drained, None
        if fut is not None and not fut.done():
            fut.set_result(None)


#: Response heads by (status, the response's headers, the exchange's header names, keep-alive):
#: the text aiohttp would send, with `%s` where the exchange's values and the date go.
_HEADS: dict[tuple[object, ...], tuple[str, bool]] = {}
_MAX_HEADS = 256


def _head_template(
    status: int, headers: Mapping[str, str], mine: Mapping[str, str], keep_alive: bool
) -> tuple[str, bool]:
    """aiohttp's head for a chunked response: the response's headers in their order, the
    exchange's (replacing a response's own spelling, case-insensitively), then
    `Transfer-Encoding`, a default `Content-Type`, `Date`, `Server` and, when the connection
    closes after, `Connection: close` (in place of a `keep-alive` the headers brought); and
    whether the date has a slot (a response may bring its own)."""
    for name, value in (*headers.items(), *((name, "") for name in mine)):
        if "\r" in name or "\n" in name or "\r" in value or "\n" in value:
            raise ValueError("Newline or carriage return character detected in HTTP status message or header.")
    slot = "\r"  # stands for a value filled in per response: no header may hold one (checked above)
    fields = CIMultiDict([(name.replace("%", "%%"), value.replace("%", "%%")) for name, value in headers.items()])
    for name in mine:
        fields[name] = slot
    fields["Transfer-Encoding"] = "chunked"
    fields.setdefault("Content-Type", "application/octet-stream")
    dated = "Date" not in fields
    if dated:
        fields["Date"] = slot
    fields.setdefault("Server", SERVER_SOFTWARE.replace("%", "%%"))
    if not keep_alive:  # the connection closes after: say so, whatever the headers brought
        fields["Connection"] = "close"
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, '')}", *(f"{name}: {value}" for name, value in fields.items())]
    return "".join(f"{line.replace(slot, '%s')}\r\n" for line in lines) + "\r\n", dated


class FrontExchange(Exchange):
    """An exchange the front writes straight onto its connection's transport."""

    def __init__(
        self,
        conn: _Connection,
        keep_alive: bool,
        entry: JournalEntry,
        closing: asyncio.Event,
        headers: Mapping[str, str],
    ) -> None:
        super().__init__(entry, closing, headers)
        self._conn = conn
        self._keep_alive = keep_alive
        self._started = False
        self.ended = False

    @property
    def transport(self) -> asyncio.Transport | None:
        return self._conn.transport

    @property
    def started(self) -> bool:
        return self._started

    def _live(self) -> asyncio.Transport:
        transport = self._conn.transport
        if transport is None or transport.is_closing():
            raise ConnectionResetError("the client closed the connection")
        return transport

    def _head(self, status: int, headers: Mapping[str, str]) -> bytes:
        """The status line and headers aiohttp would send for a chunked response."""
        mine = self.headers
        key = (status, tuple(headers.items()), tuple(mine), self._keep_alive)
        made = _HEADS.get(key)
        if made is None:
            made = _head_template(status, headers, mine, self._keep_alive)
            if len(_HEADS) >= _MAX_HEADS:
                _HEADS.clear()
            _HEADS[key] = made
        template, dated = made
        self._started = True
        self.entry.status = status
        values = tuple(mine.values())
        if any("\r" in v or "\n" in v for v in values):
            raise ValueError("Newline or carriage return character detected in HTTP status message or header.")
        return (template % ((*values, _Date.now()) if dated else values)).encode("utf-8")

    async def start(self, status: int, headers: Mapping[str, str]) -> None:
        transport = self._live()
        transport.write(self._head(status, headers))
        await self._conn.drain()

    async def write(self, data: bytes) -> None:
        assert self._started, "start() must be called before write()"
        self.entry.writes.append(Write(time.monotonic(), data))
        if not data:
            return
        transport = self._live()
        transport.write(b"%x\r\n%b\r\n" % (len(data), data))
        await self._conn.drain()

    async def send(self, status: int, headers: Mapping[str, str], body: bytes) -> str:
        transport = self._live()
        head = self._head(status, headers)
        self.entry.writes.append(Write(time.monotonic(), body))
        if body:  # head, chunk and terminator in one send() (sendmsg, no copy, from Python 3.12)
            transport.writelines((head + b"%x\r\n" % len(body), body, b"\r\n0\r\n\r\n"))
        else:
            transport.write(head + _TERMINATOR)
        self.ended = True
        await self._conn.drain()
        return "completed"

    async def end(self) -> str:
        if not self._started:
            await self.start(200, JSON_HEADERS)
        self._live()
        self.finish()
        await self._conn.drain()
        return "completed"

    def finish(self) -> None:
        """The chunked terminator."""
        transport = self._conn.transport
        if transport is not None and not self.ended:
            transport.write(_TERMINATOR)
        self.ended = True

    def reset(self) -> str:
        self.ended = True
        return super().reset()
