"""Answering one routed request: a reply, raw bytes, a logged call or an error, onto the socket.

A :class:`Responder` joins the three parts of an answer: the request's :class:`Call` (fixed
context; its surface renders), the server's :class:`~dshkit.mock_server.output.Output` (plain
or fast path: how generated events are rendered and cut into writes) and the
:class:`~dshkit.mock_server.exchange.Exchange` (the bytes). Timing lives here: the headers
delay, keep-alive comments before the first byte (S17, S21), pacing after every write and the
schedule of recorded delays. The faults (:mod:`~dshkit.mock_server.faults`) are written with
the same pieces.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dshkit.mock_server.exchange import JSON_HEADERS, Exchange
from dshkit.mock_server.generate.reply import Reply
from dshkit.mock_server.generate.writes import plan_writes
from dshkit.mock_server.output import Output
from dshkit.mock_server.scripts import ChunksSpec, RawSpec, StreamSpec, Timing, WriteSpec
from dshkit.mock_server.surface import Body, Call

__all__ = ["KEEP_ALIVE", "Responder"]

KEEP_ALIVE = b": keep-alive\n\n"

End = Literal["close", "eof", "hold", "reset"]


@dataclass(frozen=True, slots=True)
class Responder:
    """How one request is answered: its call, the server's output path and its exchange."""

    call: Call
    output: Output
    x: Exchange

    # -- rendering -----------------------------------------------------------------------

    def events(
        self, reply: Reply, spec: StreamSpec, *, done: bool = True, logprobs: int | None = None
    ) -> Sequence[bytes]:
        """The SSE events of a reply on this request's wire, one bytes object per event."""
        return self.output.events(self.call.surface.stream(self.call, reply, spec, done=done, logprobs=logprobs))

    def body(self, reply: Reply, spec: StreamSpec, *, logprobs: int | None = None) -> Body:
        """The non-streaming response of a reply on this request's wire."""
        return self.call.surface.body(self.call, reply, spec, logprobs=logprobs)

    # -- whole responses -----------------------------------------------------------------

    async def send(self, body: Body) -> str:
        """A whole response (an error, or a JSON body)."""
        self.x.entry.error = body.error
        return await self.x.send(body.status, body.headers, body.data)

    async def error(
        self,
        status: int,
        message: str,
        type: str = "invalid_request_error",
        code: str | None = "invalid_request_error",
        headers: Mapping[str, str] | None = None,
    ) -> str:
        """An HTTP error in the envelope of this request's wire."""
        return await self.send(self.call.surface.error(self.call, status, message, type, code, headers))

    async def json(self, status: int, obj: Mapping[str, Any]) -> str:
        """A JSON document as the whole response."""
        data = json.dumps(obj, ensure_ascii=False).encode("utf-8")
        return await self.x.send(status, JSON_HEADERS, data)

    # -- timing --------------------------------------------------------------------------

    async def keep_alive(self, timing: Timing, filler: bytes = KEEP_ALIVE) -> bool:
        """Wait `first_byte_delay_ms`, sending `filler` every `keep_alive_interval_ms` (S21, S17)."""
        remaining = timing.first_byte_delay_ms / 1000
        interval = timing.keep_alive_interval_ms / 1000
        while remaining > 0:
            await self.x.write(filler)
            step = min(interval, remaining)
            if not await self.x.wait(step):
                return False
            remaining -= step
        return True

    async def headers_delay(self, timing: Timing) -> bool:
        """Wait `headers_delay_ms`; False if the server closed meanwhile."""
        return not timing.headers_delay_ms or await self.x.wait(timing.headers_delay_ms / 1000)

    async def write_all(self, writes: Sequence[bytes], delay: float = 0.0) -> bool:
        """Write each piece, waiting `delay` seconds after each; False if the server closed."""
        for data in writes:
            await self.x.write(data)
            if delay and not await self.x.wait(delay):
                return False
        return True

    async def finish(self, end: End, ready_file: str | None = None) -> str:
        """End the response as `end` says (`hold` touches `ready_file` first)."""
        if end == "hold":
            if ready_file:
                Path(ready_file).touch()
            return await self.x.hold()
        if end == "reset":
            return self.x.reset()
        return await self.x.end()

    # -- streams -------------------------------------------------------------------------

    async def stream(
        self,
        events: Sequence[bytes],
        timing: Timing,
        *,
        writes: WriteSpec | None = None,
        delay: float = 0.0,
        headers: Mapping[str, str] | None = None,
        tail: bytes = b"",
        end: End = "close",
        ready_file: str | None = None,
    ) -> str:
        """Headers (default: the wire's streaming headers), keep-alives, the events (cut as
        `writes` plans, `delay` seconds after each write), `tail` as one more write, then the end.

        A script that wrote any `writes` plan (even `events_per_write: 1`) gets exactly those
        writes; otherwise the output chooses them, and may send the whole stream as one response
        when nothing is scheduled between its headers and its end.
        """
        headers = headers if headers is not None else self.call.surface.stream_headers
        plan = writes if writes is not None and writes.model_fields_set else None  # the script's own
        pieces = events
        if plan is not None and plan != WriteSpec():
            pieces = plan_writes(b"".join(events), plan.to_plan(self.call.seed))
        if plan is None and not delay:
            if end in ("close", "eof") and not tail and not timing.first_byte_delay_ms:
                whole = self.output.whole(pieces)
                if whole is not None:
                    return await self.x.send(200, headers, whole)
            pieces = self.output.writes(pieces)
        await self.x.start(200, headers)
        if not await self.keep_alive(timing):
            return self.x.reset()
        if not await self.write_all(pieces, delay):
            return self.x.reset()
        if tail:
            await self.x.write(tail)
        return await self.finish(end, ready_file)

    async def reply(self, reply: Reply, spec: StreamSpec, timing: Timing, *, logprobs: int | None = None) -> str:
        """Answer with a whole reply: SSE when the request streams, else one JSON body."""
        if not await self.headers_delay(timing):
            return self.x.reset()
        if self.call.streaming:
            events = self.events(reply, spec, logprobs=logprobs)
            return await self.stream(events, timing, writes=spec.writes, delay=timing.chunk_delay_ms / 1000)
        body = self.body(reply, spec, logprobs=logprobs)
        if body.status != 200 or not timing.first_byte_delay_ms:
            return await self.send(body)
        await self.x.start(200, body.headers)
        # S17: queueing shows as blank lines ahead of a non-streaming body.
        if not await self.keep_alive(timing, b"\n"):
            return self.x.reset()
        await self.x.write(body.data)
        return await self.x.end()

    async def raw(self, raw: RawSpec, timing: Timing) -> str:
        """Serve bytes exactly as scripted (S35): every scripted write is its own write.

        A `file` served without a `write_plan`, delays or a reset is cut into writes the way a
        generated stream without a write plan is: the output chooses (the fast path sends it
        as one response, the plain path one write per event).
        """
        if not await self.headers_delay(timing):
            return self.x.reset()
        if (raw.file is not None and raw.write_plan is None and raw.end == "eof" and not raw.first_write_delay_ms
                and not timing.chunk_delay_ms and not timing.first_byte_delay_ms):
            whole = self.output.whole([raw.file_data()])
            if whole is not None:
                return await self.x.send(raw.status, raw.headers, whole)
        await self.x.start(raw.status, raw.headers)
        if not await self.keep_alive(timing):
            return self.x.reset()
        end: End = "reset" if raw.end == "reset" else "close"
        chunk_delay = timing.chunk_delay_ms / 1000
        writes = raw.writes_with_delays(self.call.seed)
        first = raw.first_write_delay_ms / 1000
        if not chunk_delay and not first and not any(d for _, d in writes):
            await self.write_all([w for w, _ in writes])
            return await self.finish(end)
        # Delays are kept on a schedule from one clock reading, not slept one after another, so
        # the time each write takes does not add up (a replayed cassette keeps its gaps).
        clock = asyncio.get_running_loop().time
        due = clock() + first
        if first and not await self.x.wait(due - clock()):
            return self.x.reset()
        for data, delay in writes:
            await self.x.write(data)
            due += delay + chunk_delay
            if (delay or chunk_delay) and not await self.x.wait(due - clock()):
                return self.x.reset()
        return await self.finish(end)

    async def chunks(self, spec: ChunksSpec, timing: Timing) -> str:
        """Serve a logged call's chunks as this wire sends them (or the HTTP error they stand for)."""
        from dshkit.harness.llm import LlmFailure
        from dshkit.harness.llm.codec import chunk_from_json
        from dshkit.harness.replay.entries import ReplayError
        from dshkit.harness.replay.placeholders import fill_from_request, request_strings

        chunks_json: Any = spec.chunks
        if "{{fromRequest:" in json.dumps(chunks_json, ensure_ascii=False):
            try:
                chunks_json = fill_from_request(chunks_json, request_strings(self.call.chat.body.get("messages")))
            except ReplayError as exc:
                # The request drifted from the recording: a mock-side answer a harness must not
                # retry into, like a script that ran dry.
                return await self.error(418, f"replay: {exc}", "mock_error", "mock_replay_placeholder")
        chunks = [chunk_from_json(c, f"chunks[{i}]") for i, c in enumerate(chunks_json)]
        failure = None
        if spec.kind == "throw":
            failure = LlmFailure(message=spec.message or "", code=spec.code or "UNKNOWN", status=spec.status)
        plan = self.call.surface.replay(self.call, chunks, failure, spec)
        if not await self.headers_delay(timing):
            return self.x.reset()
        if plan.body is not None:
            return await self.send(plan.body)
        if plan.end == "reset" and not plan.events:
            return self.x.reset()
        return await self.stream(plan.events, timing, writes=spec.writes, delay=timing.chunk_delay_ms / 1000,
                                 headers=plan.headers, end=plan.end, ready_file=spec.ready_file)
