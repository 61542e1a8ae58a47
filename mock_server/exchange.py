"""One request/response exchange: the only place the mock server writes to a socket.

An :class:`Exchange` wraps the aiohttp request, its journal entry and the server runtime. It
sends headers, writes pre-encoded bytes (each write journaled with a monotonic timestamp),
waits in ways that end early when the server closes, holds a stream open, and resets a
connection with a TCP RST. Replies are generated and encoded once, before the first write
(and a reply served again is filled in from a cached template), so the write loop only moves
bytes; without a write plan or pacing it moves them in a few large batches rather than one
`send()` per SSE event (the hot path in `bench/server.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import random
import socket
import struct
import time
import zlib
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict, overload

from aiohttp import web

from dshkit.mock_server.chunk_wire import wire_plan
from dshkit.mock_server.defaults import apply_stop
from dshkit.mock_server.generate.completion import build_completion
from dshkit.mock_server.generate.encode import encode_stream
from dshkit.mock_server.generate.reply import Era, Reply, StreamMeta, make_meta, tool_call_id
from dshkit.mock_server.generate.split import FragmentPlan
from dshkit.mock_server.generate.writes import plan_writes
from dshkit.mock_server.journal import Journal, JournalEntry, Write
from dshkit.mock_server.scripts import ChunksSpec, RawSpec, StreamSpec, Timing, WriteSpec
from dshkit.mock_server.validation import ChatRequest, error_body

__all__ = ["SSE_HEADERS", "Exchange", "Runtime", "ServerConfig", "Surface"]

#: Which wire a request came to: Chat Completions, or the Anthropic Messages surface.
Surface = Literal["chat", "anthropic"]

log = logging.getLogger("dshkit.mock_server")

SSE_HEADERS: Mapping[str, str] = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    "Connection": "keep-alive",
}
JSON_HEADERS: Mapping[str, str] = {"Content-Type": "application/json"}
KEEP_ALIVE = b": keep-alive\n\n"
_PER_EVENT = WriteSpec()
#: The most bytes one coalesced transport write carries (and the write buffer may hold before
#: the writer waits for the client to read).
BATCH_BYTES = 0x10000

#: Test pressure, not production incidence (upstream's defaults, dsh-testing.md §1.6).
DEFAULT_WEIGHTS: Mapping[str, float] = {
    "success": 48,
    "slow_success": 10,
    "partial_disconnect": 10,
    "connection_reset": 5,
    "stream_disconnect": 5,
    "empty": 5,
    "rate_limit": 5,
    "server_error": 4,
    "max_tokens": 2,
    "stall": 2,
    "service_unavailable": 2,
    "partial_eof": 1,
    "malformed_json": 1,
}


class _GeneratorArgs(TypedDict):
    """The generator arguments a reply's stream and its JSON body share (one request, one step)."""

    model: str
    thinking: bool
    split: FragmentPlan
    seed: int
    meta: StreamMeta
    era: Era
    prompt_tokens: int
    max_tokens: int | None
    logprobs: int | None


@dataclass(slots=True, kw_only=True)
class ServerConfig:
    """Settings fixed when a server starts."""

    api_key: str | None = None
    era: Era = "v4"
    seed: int = 0
    max_body_bytes: int = 16 * 1024 * 1024
    idle_timeout: float = 60.0
    """Seconds a connection may wait for a complete request head (from opening or from the end
    of the previous response), and a request body may take to arrive."""
    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    on_event: Callable[[dict[str, Any]], None] | None = None
    anthropic_envelope: Literal["deepseek", "anthropic"] = "deepseek"
    """The error envelope of the Anthropic surface (DeepSeek's OpenAI-style one by default)."""
    anthropic_unknown_model: Literal["reject", "flash"] = "reject"
    """The Anthropic surface's answer to a model that is neither DeepSeek's nor `claude…`."""


class FilledEvents(Sequence[bytes]):
    """The SSE events of a stream filled in from a template, cut out of the whole stream only
    when asked for: coalesced writes take `joined` as it is, so the common path never slices."""

    __slots__ = ("joined", "_ends")

    def __init__(self, joined: bytes, ends: list[int]) -> None:
        self.joined = joined
        self._ends = ends

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, index: int) -> bytes: ...
    @overload
    def __getitem__(self, index: slice) -> list[bytes]: ...
    def __getitem__(self, index: int | slice) -> bytes | list[bytes]:
        if isinstance(index, slice):
            return list(self)[index]
        index = range(len(self._ends))[index]  # negative indices, and IndexError when out of range
        return self.joined[self._ends[index - 1] if index else 0 : self._ends[index]]

    def __iter__(self) -> Iterator[bytes]:
        start = 0
        for end in self._ends:
            yield self.joined[start:end]
            start = end

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


class _Template:
    """One cached stream with placeholder envelope fields: the events joined, where each event
    ends, and how many placeholders of each kind come before each end."""

    __slots__ = ("id_from", "created_from", "blob", "ends", "ids_before", "created_before", "parts", "between")

    def __init__(self, events: list[bytes], id_from: bytes, created_from: bytes) -> None:
        self.id_from = id_from
        self.created_from = created_from
        self.blob = b"".join(events)
        # Where every chunk spells the id, the same bytes, then `created` (the usual envelope),
        # the stream is kept cut at those spans: filling it in is then one join, no search.
        self.parts: list[bytes] | None = None
        self.between = b""
        first = self.blob.find(id_from)
        if first >= 0:
            then = self.blob.find(created_from, first)
            if then >= 0:
                self.between = self.blob[first + len(id_from) : then]
                span = id_from + self.between + created_from
                if self.blob.count(span) == self.blob.count(id_from) == self.blob.count(created_from):
                    self.parts = self.blob.split(span)
        self.ends: list[int] = []
        self.ids_before: list[int] = []
        self.created_before: list[int] = []
        end = ids = created = 0
        for e in events:
            end += len(e)
            ids += e.count(id_from)
            created += e.count(created_from)
            self.ends.append(end)
            self.ids_before.append(ids)
            self.created_before.append(created)

    def fill(self, id_to: bytes, created_to: bytes) -> FilledEvents:
        """The stream with the placeholders replaced (one join, or two replaces over the whole
        stream); the event ends shift by the length differences (computed only when they differ)."""
        if self.parts is not None:
            blob = (id_to + self.between + created_to).join(self.parts)
        else:
            blob = self.blob.replace(self.id_from, id_to).replace(self.created_from, created_to)
        d_id = len(id_to) - len(self.id_from)
        d_created = len(created_to) - len(self.created_from)
        ends = self.ends
        if d_id or d_created:
            ends = [
                end + ids * d_id + created * d_created
                for end, ids, created in zip(ends, self.ids_before, self.created_before, strict=True)
            ]
        return FilledEvents(blob, ends)


class _EncodedStreams:
    """Encoded SSE streams of recent replies, so a step served again is not generated again.

    Generation is deterministic given the reply, the step's stream settings and the request's
    generator arguments, except for the two envelope fields that differ per response: the
    completion id and `created`. A stream is therefore stored once as a template with
    placeholders in those two fields and filled in per response. A template is kept only after
    it proved to fill in to exactly the stream encoded the normal way (else that key is marked
    uncacheable), so a quirk that reshapes the envelope can never be served wrong.
    """

    # As long as a uuid and a present-day Unix time, so filling them in moves no event's end.
    _ID = "dshkit-cached-stream-id-000000000000"
    _CREATED = 9_876_543_210
    # Quoted as JSON keys: inside a string value the quotes would be escaped, so content can
    # never match.
    _ID_FROM = b'"id":"%s"' % _ID.encode()
    _CREATED_FROM = b'"created":%d' % _CREATED
    SIZE = 32

    def __init__(self) -> None:
        self._templates: dict[Hashable, _Template | None] = {}

    def encode(
        self, key: Hashable, meta: StreamMeta, encode: Callable[[StreamMeta], list[bytes]]
    ) -> Sequence[bytes]:
        """The events `encode(meta)` returns, from the template stored under `key` if any."""
        if key in self._templates:
            template = self._templates[key]
            return self._fill(template, meta) if template is not None else encode(meta)
        events = encode(meta)
        template = _Template(
            encode(dataclasses.replace(meta, id=self._ID, created=self._CREATED)), self._ID_FROM, self._CREATED_FROM
        )
        if len(self._templates) >= self.SIZE:
            del self._templates[next(iter(self._templates))]  # the oldest
        self._templates[key] = template if self._fill(template, meta) == events else None
        return events

    def _fill(self, template: _Template, meta: StreamMeta) -> FilledEvents:
        id_to = b'"id":%s' % json.dumps(meta.id).encode()
        created_to = b'"created":%d' % meta.created
        return template.fill(id_to, created_to)


class Runtime:
    """Server-wide state the handlers share; lives on the server's event loop."""

    def __init__(self, config: ServerConfig, journal: Journal) -> None:
        self.config = config
        self.journal = journal
        self.closing = asyncio.Event()
        self.random = random.Random(f"random-mode:{config.seed}")
        self.active: set[Exchange] = set()
        self._served: dict[tuple[str, int | None], int] = {}
        self.encoded = _EncodedStreams()

    def repeat_of(self, session: str, step: int | None) -> int:
        """How many times `step` (None: the default reply) already answered `session`; counts
        this request."""
        key = (session, step)
        n = self._served.get(key, 0)
        self._served[key] = n + 1
        return n

    def emit(self, event: dict[str, Any]) -> None:
        """Telemetry for the CLI; an observer's exception never alters wire behaviour."""
        if self.config.on_event is not None:
            try:
                self.config.on_event(event)
            except Exception:  # telemetry must not break serving
                log.debug("on_event observer failed", exc_info=True)


def _batches(pieces: Sequence[bytes], limit: int | None = None) -> list[bytes]:
    """`pieces` joined into consecutive batches of at most `limit` bytes (default
    :data:`BATCH_BYTES`); a piece longer than that is a batch of its own. Empty pieces vanish:
    joined, they add nothing to the body."""
    limit = BATCH_BYTES if limit is None else limit
    if isinstance(pieces, FilledEvents) and len(pieces.joined) <= limit:
        return [pieces.joined] if pieces.joined else []
    out: list[bytes] = []
    run: list[bytes] = []
    size = 0
    for p in pieces:
        if size + len(p) > limit and run:
            out.append(b"".join(run))
            run, size = [], 0
        run.append(p)
        size += len(p)
    if size:
        out.append(b"".join(run))
    return out


def _chunked_transport(resp: web.StreamResponse) -> tuple[asyncio.Transport, Any] | None:
    """The transport and writer behind a prepared chunked response, if it is safe to write to
    the transport directly (no compression, chunked framing); else None."""
    writer = getattr(resp, "_payload_writer", None)
    transport = getattr(writer, "transport", None)
    if (
        transport is None
        or not getattr(writer, "chunked", False)
        or getattr(writer, "_compress", None) is not None
        or not hasattr(writer, "drain")
    ):
        return None
    return transport, writer


class _HeldHeadersResponse(web.StreamResponse):
    """A stream response whose headers aiohttp keeps until the first body write (as it does for a
    plain `Response`), so headers and a whole short body leave in one `send()`. Only for bodies
    written right after `prepare()`: a client waiting on headers alone must not wait longer."""

    _send_headers_immediately = False


class Exchange:
    """The write side of one request."""

    def __init__(self, request: web.Request, entry: JournalEntry, runtime: Runtime) -> None:
        self.request = request
        self.entry = entry
        self.runtime = runtime
        self.chat: ChatRequest | None = None
        """The validated chat request; None until validation passed (and off the chat path)."""
        self.seed = 0
        """The step's seed (:meth:`step_seed`): ids, split plans and write plans derive from it."""
        self.repeat = 0
        """How many earlier requests of this session the same step (or the default reply)
        answered. Mixed into the completion id and generated tool-call ids so that each
        response has its own, as DeepSeek's do; split and write plans stay the step's."""
        self.resp: web.StreamResponse | None = None
        self.surface: Surface = "chat"
        """The wire replies, faults and errors are rendered for."""
        self.quirks: frozenset[str] = frozenset()
        """The answering step's quirks (the Anthropic surface reads its envelope quirk here)."""

    @staticmethod
    def step_seed(server_seed: int, session: str, step: int | None) -> int:
        """A seed stable per (server seed, session, step), whatever the arrival order."""
        return zlib.crc32(f"{server_seed}:{session}:{step}".encode("utf-8", "surrogateescape"))

    @property
    def streaming(self) -> bool:
        """Whether the answer is SSE: the request asked to stream, or it is not a chat request."""
        return self.chat is None or self.chat.stream

    # -- raw I/O ---------------------------------------------------------------------------

    async def start(
        self, status: int = 200, headers: Mapping[str, str] = SSE_HEADERS, *, hold_headers: bool = False
    ) -> web.StreamResponse:
        """Send the status line and headers now (`hold_headers`: with the first body write, for a
        body that follows at once)."""
        cls = _HeldHeadersResponse if hold_headers else web.StreamResponse
        resp = cls(status=status, headers=dict(headers))
        resp.headers["x-ds-trace-id"] = f"{self.seed:08x}{self.entry.seq:08x}"
        self.resp = resp
        self.entry.status = status
        await resp.prepare(self.request)
        return resp

    async def write(self, data: bytes) -> None:
        assert self.resp is not None, "start() must be called before write()"
        self.entry.writes.append(Write(time.monotonic(), data))
        await self.resp.write(data)

    async def write_all(
        self, writes: Sequence[bytes], delay: float = 0.0, *, coalesce: bool = False, finish: bool = False
    ) -> bool:
        """Write each piece, waiting `delay` seconds after each; False if the server closed.

        With `coalesce` (a stream with neither a write plan nor pacing) consecutive pieces are
        joined into batches of up to :data:`BATCH_BYTES`, one transport write and one journal
        entry each: a typical reply then costs one `send()` instead of one per SSE event. The
        loop gets a turn between batches so a long stream cannot delay other streams' first
        bytes. Without `coalesce` every piece stays its own write (split and write plans,
        replayed reads). With `finish` as well, the body ends with the last batch: it goes out
        with the chunked terminator (and the headers, if nothing was sent yet) in one `send()`.
        """
        resp = self.resp
        assert resp is not None, "start() must be called before write_all()"
        if coalesce and not delay:
            writes = _batches(writes)
        log = self.entry.writes
        mono = time.monotonic
        if not delay:
            fast = _chunked_transport(resp)
            if fast is not None:
                # The hot path: one transport.write (one send) per write or batch, framed as
                # HTTP chunks here instead of through aiohttp's per-write machinery.
                transport, writer = fast
                last = None
                if finish and coalesce and writes:
                    # aiohttp's write_eof sends held headers, the chunk and the terminator at once.
                    *writes, last = writes
                send_headers = getattr(writer, "send_headers", None)
                if send_headers is not None and writes:
                    send_headers()  # aiohttp may still hold them for the first payload write
                for i, data in enumerate(writes):
                    if transport.is_closing():
                        raise ConnectionResetError("the client closed the connection")
                    log.append(Write(mono(), data))
                    if data:  # an empty chunk would be the chunked terminator, ending the body
                        transport.write(b"%x\r\n%b\r\n" % (len(data), data))
                    if transport.get_write_buffer_size() > BATCH_BYTES:
                        await writer.drain()
                    elif coalesce and (i + 1 < len(writes) or last is not None):
                        await asyncio.sleep(0)  # let other streams write between batches
                if last is not None:
                    if transport.is_closing():
                        raise ConnectionResetError("the client closed the connection")
                    log.append(Write(mono(), last))
                    await resp.write_eof(last)
                return True
        for data in writes:
            log.append(Write(mono(), data))
            await resp.write(data)
            if delay and not await self.wait(delay):
                return False
        return True

    async def end(self) -> str:
        """Finish the body cleanly (the chunked terminator; then the connection may close)."""
        if self.resp is None:
            await self.start(200, JSON_HEADERS)
        assert self.resp is not None
        await self.resp.write_eof()
        return "completed"

    async def wait(self, seconds: float) -> bool:
        """Sleep, but wake early when the server closes; True if the full time passed."""
        if seconds <= 0:
            return not self.runtime.closing.is_set()
        try:
            await asyncio.wait_for(self.runtime.closing.wait(), seconds)
        except TimeoutError:
            return True
        return False

    async def hold(self) -> str:
        """Keep the connection open, sending nothing, until the client leaves or the server closes."""
        self.entry.outcome = "stalled"
        await self.runtime.closing.wait()
        self.reset()
        return "closed"

    def reset(self) -> str:
        """Drop the connection with a TCP RST (SO_LINGER 0), headers sent or not."""
        transport = self.request.transport
        if transport is not None:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        return "reset"

    async def send_json(
        self,
        status: int,
        body: Mapping[str, Any],
        headers: Mapping[str, str] | None = None,
    ) -> str:
        """A JSON response: an error envelope (DeepSeek's, or the mock's 418) or a plain body."""
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        err = body.get("error")
        self.entry.error = dict(err) if isinstance(err, Mapping) else None
        await self.start(status, {**JSON_HEADERS, **(headers or {})})
        await self.write(data)
        return await self.end()

    async def error(
        self,
        status: int,
        message: str,
        type: str = "invalid_request_error",
        code: str | None = "invalid_request_error",
        headers: Mapping[str, str] | None = None,
    ) -> str:
        if self.surface == "anthropic":
            from dshkit.mock_server.anthropic.surface import error_body_for, error_type

            envelope = self.runtime.config.anthropic_envelope
            if "anthropic_envelope" in self.quirks:
                envelope = "anthropic"
            # The chat route's generic types become the type Anthropic names for the status
            # (413 `request_too_large`, 500 `api_error`); specific ones (a fault's) stay.
            if type in ("invalid_request_error", "server_error"):
                type = error_type(status)
            body = error_body_for(
                status, message, type, code, envelope=envelope,
                request_id=(headers or {}).get("x-request-id")
                or f"req_{self.seed:08x}{self.entry.seq:08x}",
            )
            return await self.send_json(status, body, headers)
        return await self.send_json(status, error_body(message, type, code), headers)

    async def keep_alive_phase(self, timing: Timing, filler: bytes = KEEP_ALIVE) -> bool:
        """Wait `first_byte_delay_ms`, sending `filler` every `keep_alive_interval_ms` (S21, S17)."""
        remaining = timing.first_byte_delay_ms / 1000
        interval = timing.keep_alive_interval_ms / 1000
        while remaining > 0:
            await self.write(filler)
            step = min(interval, remaining)
            if not await self.wait(step):
                return False
            remaining -= step
        return True

    # -- replies ---------------------------------------------------------------------------

    def _chat(self) -> ChatRequest:
        assert self.chat is not None, "replies need a validated chat request"
        return self.chat

    def _meta(self, seed: int) -> StreamMeta:
        chat = self._chat()
        return make_meta(
            chat.response_model, seed=seed, era=self.runtime.config.era, created=int(time.time()),
            repeat=self.repeat,
        )

    def _generator_args(self, spec: StreamSpec, logprobs: int | None) -> _GeneratorArgs:
        """The arguments `encode_stream` and `build_completion` share, from the request and step."""
        chat = self._chat()
        seed = spec.seed if spec.seed is not None else self.seed
        return _GeneratorArgs(
            model=chat.response_model,
            thinking=spec.thinking if spec.thinking is not None else chat.thinking,
            split=spec.fragment_plan(),
            seed=seed,
            meta=self._meta(seed),
            era=self.runtime.config.era,
            prompt_tokens=chat.prompt_tokens,
            max_tokens=chat.max_tokens,
            logprobs=logprobs if logprobs is not None else chat.logprobs,
        )

    def _prepare(self, reply: Reply, spec: StreamSpec) -> Reply:
        chat = self._chat()
        if self.repeat and any(c.id is None for c in reply.tool_calls):
            # A repeated step would mint the same call ids again (they come from the seed).
            seed = spec.seed if spec.seed is not None else self.seed
            rng = random.Random(f"ids:{seed}:repeat:{self.repeat}")
            calls = tuple(
                c if c.id is not None else dataclasses.replace(c, id=tool_call_id(i, rng))
                for i, c in enumerate(reply.tool_calls)
            )
            reply = dataclasses.replace(reply, tool_calls=calls)
        if chat.stop and reply.content:
            content, cut = apply_stop(reply.content, chat.stop)
            if cut:
                return dataclasses.replace(reply, content=content, finish_reason="stop")
        return reply

    def events(
        self, reply: Reply, spec: StreamSpec, *, done: bool = True, logprobs: int | None = None
    ) -> Sequence[bytes]:
        """The SSE events of a reply, one bytes object per event (no network splitting yet)."""
        if self.surface == "anthropic":
            from dshkit.mock_server.anthropic import render

            args = self._generator_args(spec, None)
            return render.encode_events(
                reply, model=args["model"], thinking=args["thinking"], split=args["split"],
                seed=args["seed"], prompt_tokens=args["prompt_tokens"],
                max_tokens=args["max_tokens"], stop=self._chat().stop, quirks=spec.quirks,
                framing=spec.framing, done=done,
            )
        options = self._chat().body.get("stream_options")
        # DeepSeek sends usage whether or not it was asked for (ds16); only an explicit
        # `include_usage: false` leaves it out, as OpenAI-style servers do.
        include_usage = not (isinstance(options, dict) and options.get("include_usage") is False)
        prepared = self._prepare(reply, spec)
        args = self._generator_args(spec, logprobs)
        meta = args["meta"]
        rest: dict[str, Any] = {k: v for k, v in args.items() if k != "meta"}
        key: Hashable = (prepared, tuple(spec.quirks), spec.framing, done, include_usage,
                         tuple(sorted(rest.items())), meta.model, meta.system_fingerprint)
        try:
            hash(key)
        except TypeError:  # a reply carrying a usage mapping: its text stands in for it
            key = repr(key)

        def encode(m: StreamMeta) -> list[bytes]:
            return encode_stream(
                prepared, quirks=spec.quirks, framing=spec.framing, done=done,
                include_usage=include_usage, meta=m, **rest,
            )

        return self.runtime.encoded.encode(key, meta, encode)

    def completion(self, reply: Reply, spec: StreamSpec, *, logprobs: int | None = None) -> bytes:
        """The non-streaming JSON body of a reply."""
        if self.surface == "anthropic":
            from dshkit.mock_server.anthropic import render

            args = self._generator_args(spec, None)
            message = render.build_message(
                reply, model=args["model"], thinking=args["thinking"], split=args["split"],
                seed=args["seed"], prompt_tokens=args["prompt_tokens"],
                max_tokens=args["max_tokens"], stop=self._chat().stop, quirks=spec.quirks,
            )
            return json.dumps(message, ensure_ascii=False).encode("utf-8")
        body = build_completion(self._prepare(reply, spec), **self._generator_args(spec, logprobs))
        return json.dumps(body, ensure_ascii=False).encode("utf-8")

    def _writes(self, events: Sequence[bytes], spec: WriteSpec) -> Sequence[bytes]:
        """The network writes for `events`: one per event by default (no scan), else as planned."""
        if spec == _PER_EVENT:
            return events
        return plan_writes(b"".join(events), spec.to_plan(self.seed))

    async def _stream(
        self,
        writes: Sequence[bytes],
        headers: Mapping[str, str],
        timing: Timing,
        plan: WriteSpec,
        *,
        finish: bool = False,
    ) -> str | None:
        """Headers, keep-alives, then `writes`; "reset" when the server closed on the way.
        Unless the script gave a write plan (even `events_per_write: 1`) the events are
        coalesced into batches. `finish`: the body ends with these writes (see `write_all`)."""
        coalesce = not plan.model_fields_set  # a script that wrote any `writes` gets exactly those
        # Headers wait for the body only when nothing is scheduled in between.
        at_once = finish and coalesce and not timing.first_byte_delay_ms and not timing.chunk_delay_ms
        await self.start(200, headers, hold_headers=at_once)
        if not await self.keep_alive_phase(timing):
            return self.reset()
        if not await self.write_all(writes, timing.chunk_delay_ms / 1000, coalesce=coalesce, finish=finish):
            return self.reset()
        return None

    async def _headers_delay(self, timing: Timing) -> bool:
        """Wait `headers_delay_ms`; False if the server closed meanwhile."""
        return not timing.headers_delay_ms or await self.wait(timing.headers_delay_ms / 1000)

    async def serve_reply(
        self,
        reply: Reply,
        spec: StreamSpec,
        timing: Timing,
        *,
        logprobs: int | None = None,
    ) -> str:
        """Answer with a whole reply: SSE when the request streams, else one JSON body."""
        if not await self._headers_delay(timing):
            return self.reset()
        if not self._chat().stream:
            if self.surface == "anthropic" and reply.finish_reason == "insufficient_system_resource":
                # No stop_reason says "the server ran out"; a whole body says it with a 529.
                return await self.error(529, "Overloaded", "overloaded_error", "overloaded_error")
            body = self.completion(reply, spec, logprobs=logprobs)
            await self.start(200, JSON_HEADERS)
            # S17: queueing shows as blank lines ahead of a non-streaming body.
            if not await self.keep_alive_phase(timing, b"\n"):
                return self.reset()
            await self.write(body)
            return await self.end()
        writes = self._writes(self.events(reply, spec, logprobs=logprobs), spec.writes)
        return await self._stream(writes, SSE_HEADERS, timing, spec.writes, finish=True) or await self.end()

    async def serve_raw(self, raw: RawSpec, timing: Timing) -> str:
        """Serve bytes exactly as scripted (S35)."""
        if not await self._headers_delay(timing):
            return self.reset()
        await self.start(raw.status, raw.headers)
        if not await self.keep_alive_phase(timing):
            return self.reset()
        chunk_delay = timing.chunk_delay_ms / 1000
        writes = raw.writes_with_delays(self.seed)
        first = raw.first_write_delay_ms / 1000
        if not chunk_delay and not first and not any(d for _, d in writes):
            await self.write_all([w for w, _ in writes])
            return self.reset() if raw.end == "reset" else await self.end()
        # Delays are kept on a schedule from one clock reading, not slept one after another, so
        # the time each write takes does not add up (a replayed cassette keeps its gaps).
        clock = asyncio.get_running_loop().time
        due = clock() + first
        if first and not await self.wait(due - clock()):
            return self.reset()
        for data, delay in writes:
            await self.write(data)
            due += delay + chunk_delay
            if (delay or chunk_delay) and not await self.wait(due - clock()):
                return self.reset()
        return self.reset() if raw.end == "reset" else await self.end()

    async def _serve_anthropic_chunks(
        self, chunks: Sequence[Any], failure: Any, spec: ChunksSpec, timing: Timing
    ) -> str:
        """A logged call on the Anthropic surface: the same reply, in this protocol's events."""
        from dshkit.mock_server.anthropic import render
        from dshkit.mock_server.anthropic.replay import chunk_replay

        plan = chunk_replay(chunks, failure, hang=spec.kind == "hang")
        if not await self._headers_delay(timing):
            return self.reset()
        if plan.end == "http":
            return await self.error(plan.status, plan.message, plan.error_type or "server_error")
        chat = self._chat()
        events = render.encode_events(
            plan.reply, model=chat.response_model, thinking=True, split=plan.split,
            seed=self.seed, prompt_tokens=chat.prompt_tokens, framing=spec.framing,
        )
        if not chat.stream:
            if plan.end != "close":
                return await self.error(500, plan.message or "the logged call failed", "api_error")
            body = render.build_message(
                plan.reply, model=chat.response_model, thinking=True, split=plan.split,
                seed=self.seed, prompt_tokens=chat.prompt_tokens,
            )
            return await self.send_json(200, body)
        if plan.end in ("eof", "reset", "error_event"):
            # No message_delta/message_stop: the call did not finish.
            events = [e for e in events if b'"message_delta"' not in e and b'"message_stop"' not in e]
        if plan.end == "error_event":
            events.append(render.error_event(plan.error_type or "api_error", plan.message, spec.framing))
        if plan.end == "reset" and not events:
            return self.reset()
        writes = self._writes(events, spec.writes)
        stopped = await self._stream(writes, SSE_HEADERS, timing, spec.writes)
        if stopped is not None:
            return stopped
        if plan.end == "hold":
            if spec.ready_file:
                Path(spec.ready_file).touch()
            return await self.hold()
        if plan.end == "reset":
            return self.reset()
        return await self.end()

    async def serve_chunks(self, spec: ChunksSpec, timing: Timing) -> str:
        """Serve a logged call's chunks as DeepSeek SSE (or the HTTP error they stand for)."""
        from dshkit.harness.llm import LlmFailure, chunk_from_json
        from dshkit.harness.replay import ReplayError, fill_from_request, request_strings

        chat = self._chat()
        messages = chat.body.get("messages")
        chunks_json: Any = spec.chunks
        if "{{fromRequest:" in json.dumps(chunks_json, ensure_ascii=False):
            try:
                chunks_json = fill_from_request(chunks_json, request_strings(messages))
            except ReplayError as exc:
                # The request drifted from the recording: a mock-side answer a harness must not
                # retry into, like a script that ran dry.
                return await self.error(418, f"replay: {exc}", "mock_error", "mock_replay_placeholder")
        chunks = [chunk_from_json(c, f"chunks[{i}]") for i, c in enumerate(chunks_json)]
        failure = None
        if spec.kind == "throw":
            failure = LlmFailure(
                message=spec.message or "", code=spec.code or "UNKNOWN", status=spec.status
            )
        if self.surface == "anthropic":
            return await self._serve_anthropic_chunks(chunks, failure, spec, timing)
        plan = wire_plan(
            chunks,
            self._meta(self.seed),
            failure=failure,
            hang=spec.kind == "hang",
            framing=spec.framing,
        )
        if not await self._headers_delay(timing):
            return self.reset()
        if plan.body is not None:
            return await self.send_json(plan.status, json.loads(plan.body), plan.headers)
        if plan.end == "reset" and not plan.events:
            return self.reset()
        writes = self._writes(plan.events, spec.writes)
        stopped = await self._stream(writes, {**SSE_HEADERS, **plan.headers}, timing, spec.writes)
        if stopped is not None:
            return stopped
        if plan.end == "hold":
            if spec.ready_file:
                Path(spec.ready_file).touch()
            return await self.hold()
        if plan.end == "reset":
            return self.reset()
        return await self.end()
