"""One request/response exchange: the only place the mock server writes to a socket.

An :class:`Exchange` holds a request's journal entry and its connection and moves bytes,
nothing else: it sends a status line and headers, writes (each write journaled with a monotonic
timestamp), sends a whole response at once, waits in ways that end early when the server
closes, holds a stream open, and resets a connection with a TCP RST. What to send is decided
before (:mod:`~dshkit.mock_server.respond`, by the request's surface); every response also
carries the headers the exchange was opened with (the surface's trace id).

Two kinds write: :class:`AiohttpExchange` through aiohttp's response objects (the plain path,
and every request the front does not take), and
:class:`~dshkit.mock_server.front.FrontExchange` straight onto the transport for the requests
the fast front serves (:mod:`~dshkit.mock_server.front`). A client cannot tell them apart: the
front writes the bytes aiohttp would, which a differential test holds it to.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import socket
import struct
import time
from collections.abc import Mapping

from aiohttp import HttpVersion11, web

from dshkit.mock_server.journal import JournalEntry, Write

__all__ = ["JSON_HEADERS", "SSE_HEADERS", "AiohttpExchange", "Exchange"]

SSE_HEADERS: Mapping[str, str] = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    "Connection": "keep-alive",
}
JSON_HEADERS: Mapping[str, str] = {"Content-Type": "application/json"}


class Exchange(abc.ABC):
    """The write side of one request (what both kinds share: waits, holds, resets)."""

    @property
    @abc.abstractmethod
    def transport(self) -> asyncio.Transport | None:
        """The request's connection (None once it is gone)."""

    def __init__(self, entry: JournalEntry, closing: asyncio.Event, headers: Mapping[str, str]) -> None:
        self.entry = entry
        self.closing = closing
        """Set when the server closes: every wait and hold ends then."""
        self.headers = headers
        """Sent with every response of this exchange (they win over a response's own)."""

    @property
    @abc.abstractmethod
    def started(self) -> bool:
        """Whether a status line went out (then no other response can be sent)."""

    @abc.abstractmethod
    async def start(self, status: int, headers: Mapping[str, str]) -> None:
        """Send the status line and headers now; the body follows in writes."""

    @abc.abstractmethod
    async def write(self, data: bytes) -> None:
        """One network write of `data`: one HTTP chunk (an empty write sends nothing)."""

    @abc.abstractmethod
    async def send(self, status: int, headers: Mapping[str, str], body: bytes) -> str:
        """A whole response at once: headers, body and (chunked) terminator in one `send()`."""

    @abc.abstractmethod
    async def end(self) -> str:
        """Finish the body cleanly (the chunked terminator; then the connection may close)."""

    async def wait(self, seconds: float) -> bool:
        """Sleep, but wake early when the server closes; True if the full time passed."""
        if seconds <= 0:
            return not self.closing.is_set()
        try:
            await asyncio.wait_for(self.closing.wait(), seconds)
        except TimeoutError:
            return True
        return False

    async def hold(self) -> str:
        """Keep the connection open, sending nothing, until the client leaves or the server closes."""
        self.entry.outcome = "stalled"
        await self.closing.wait()
        self.reset()
        return "closed"

    def reset(self) -> str:
        """Drop the connection with a TCP RST (SO_LINGER 0), headers sent or not."""
        transport = self.transport
        if transport is not None:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        return "reset"


class AiohttpExchange(Exchange):
    """An exchange written through aiohttp's response objects."""

    def __init__(
        self,
        request: web.Request,
        entry: JournalEntry,
        closing: asyncio.Event,
        headers: Mapping[str, str],
    ) -> None:
        super().__init__(entry, closing, headers)
        self.request = request
        self.resp: web.StreamResponse | None = None
        """The response once started; None while nothing was sent."""
        self._direct: asyncio.Transport | None = None

    @property
    def transport(self) -> asyncio.Transport | None:
        return self.request.transport

    @property
    def started(self) -> bool:
        return self.resp is not None

    def _adopt(self, resp: web.StreamResponse) -> web.StreamResponse:
        """Make `resp` this exchange's response, with the exchange's headers."""
        for name, value in self.headers.items():
            resp.headers[name] = value  # case-insensitive: replaces a response's own spelling
        if not self.request.keep_alive and "Connection" in resp.headers:
            # aiohttp closes the connection after this response but keeps a `Connection` header
            # the response brought (the wire's streaming headers say `keep-alive`): say `close`
            # in its place (without one, aiohttp adds `close` itself, last).
            resp.headers["Connection"] = "close"
        self.resp = resp
        self.entry.status = resp.status
        return resp

    async def start(self, status: int, headers: Mapping[str, str]) -> None:
        """Send the status line and headers now; the body follows in writes."""
        resp = self._adopt(web.StreamResponse(status=status, headers=headers))  # aiohttp copies them
        await resp.prepare(self.request)

    async def write(self, data: bytes) -> None:
        """One network write of `data`: one HTTP chunk, one `send()` (an empty write sends nothing).

        Once aiohttp has sent the headers and a first chunk of a chunked response, a chunk that
        finds the socket's buffer empty is framed here and handed to the request's transport:
        the bytes aiohttp's writer would send, for less CPU (through aiohttp's writer a raw step
        of 200 writes cost about a third more server CPU). A chunk that finds data still queued
        goes through aiohttp's writer, which waits for the client to read.
        """
        resp = self.resp
        assert resp is not None, "start() must be called before write()"
        self.entry.writes.append(Write(time.monotonic(), data))
        direct = self._direct
        if direct is not None and data and not direct.get_write_buffer_size():
            if direct.is_closing():
                raise ConnectionResetError("the client closed the connection")
            direct.write(b"%x\r\n%b\r\n" % (len(data), data))
            return
        await resp.write(data)
        if direct is None and data and resp.headers.get("Transfer-Encoding") == "chunked" and not resp.compression:
            self._direct = self.request.transport

    async def send(self, status: int, headers: Mapping[str, str], body: bytes) -> str:
        """A whole response at once: headers, body and (chunked) terminator in one `send()`.

        The framing is the one :meth:`start` and :meth:`write` give, so a client cannot tell
        the two apart: chunked on HTTP/1.1; an HTTP/1.0 client gets the body written after the
        headers and the connection closed, as any response of unknown length.
        """
        if self.request.version < HttpVersion11:
            await self.start(status, headers)
            await self.write(body)
            return await self.end()
        resp = web.Response(status=status, headers=headers, body=body)  # aiohttp copies them
        self._adopt(resp)
        resp.enable_chunked_encoding()
        self.entry.writes.append(Write(time.monotonic(), body))
        await resp.prepare(self.request)
        await resp.write_eof()
        # Sent: aiohttp keeps the response as long as the connection is busy with it, and a
        # body kept that long costs its size per open connection (the journal keeps its own
        # reference as long as it needs one).
        resp.body = None
        return "completed"

    async def end(self) -> str:
        """Finish the body cleanly (the chunked terminator; then the connection may close)."""
        if self.resp is None:
            await self.start(200, JSON_HEADERS)
        assert self.resp is not None
        await self.resp.write_eof()
        return "completed"
