"""The Chat Completions wire: DeepSeek's `/chat/completions` as one :class:`Surface`.

It holds what is particular to this wire and calls the modules that do the work: `validation`
(auth and the request rules), `generate` (a reply as chunks, SSE events and the non-streaming
completion), `chunk_wire` (a logged call back to the wire). A reply is rendered with the
request's model, thinking mode, stop strings and `stream_options`; the completion id and
`created` differ per response, everything else is the step's. Every response carries the
headers DeepSeek's gateway sends (:func:`deepseek_headers`).
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from dshkit.mock_server.chunk_wire import wire_plan
from dshkit.mock_server.defaults import apply_stop
from dshkit.mock_server.generate.chunks import generate_chunks
from dshkit.mock_server.generate.completion import build_completion
from dshkit.mock_server.generate.encode import Framing, encode_events, encode_stream
from dshkit.mock_server.generate.reply import Reply, StreamMeta, make_meta, tool_call_id
from dshkit.mock_server.output import Rendering, Template
from dshkit.mock_server.scripts import ChunksSpec, FaultStep, StreamSpec
from dshkit.mock_server.surface import Body, Call, Cuts, Replay, Surface, json_body
from dshkit.mock_server.validation import ChatRequest, check_auth, error_body, validate_chat

if TYPE_CHECKING:
    from dshkit.harness.llm import LlmFailure, StreamChunk
    from dshkit.mock_server.runtime import ServerConfig

__all__ = ["CHAT_PATHS", "ChatSurface", "deepseek_headers"]

CHAT_PATHS = ("/chat/completions", "/v1/chat/completions", "/beta/chat/completions")

#: Per-response placeholders for the stream cache: as long as a uuid and a present-day Unix
#: time, so filling them in moves no event's end.
_ID = "dshkit-cached-stream-id-000000000000"
_CREATED = 9_876_543_210


def deepseek_headers(trace_id: str) -> dict[str, str]:
    """The headers DeepSeek's gateway adds to every response, on both of its wires.

    A trace id (32 hex digits) and two CORS headers; no `x-request-id` (docs/mock_server.md,
    "Response headers", gives the evidence).
    """
    return {
        "x-ds-trace-id": trace_id,
        "vary": "origin, access-control-request-method, access-control-request-headers",
        "access-control-allow-credentials": "true",
    }


#: `json.dumps` of a string, called straight (C): spelled on every request served from the cache.
_json_string = json.encoder.encode_basestring_ascii


def _spell(meta: StreamMeta) -> tuple[bytes, ...]:
    # Quoted as JSON keys: inside a string value the quotes would be escaped, so content can
    # never match.
    return b'"id":%s' % _json_string(meta.id).encode(), b'"created":%d' % meta.created


def _placeholder(meta: StreamMeta) -> StreamMeta:
    return dataclasses.replace(meta, id=_ID, created=_CREATED)


#: The completion id and `created` differ per response; everything else is the step's.
_TEMPLATE = Template(placeholder=_placeholder, spell=_spell)


class ChatSurface(Surface):
    """DeepSeek's Chat Completions (S1–S41): OpenAI-style chunks, `data:` events, `[DONE]`."""

    validates_body_only = True

    name = "chat"
    paths = CHAT_PATHS
    # The role opener comes before the first reasoning delta; a tool call's opener and its
    # first fragment follow the role opener.
    cuts = Cuts(reasoning=1, first_argument=3)

    def authorize(self, headers: Mapping[str, str], api_key: str | None) -> None:
        check_auth(headers, api_key)

    def validate(
        self, raw: bytes, *, path: str, headers: Mapping[str, str], config: ServerConfig
    ) -> ChatRequest:
        return validate_chat(raw, path=path, headers=headers, era=config.era)

    def response_headers(self, trace_id: str) -> Mapping[str, str]:
        return deepseek_headers(trace_id)

    def error(
        self, call: Call, status: int, message: str, type: str, code: str | None, headers: Mapping[str, str] | None
    ) -> Body:
        return json_body(status, error_body(message, type, code), headers)

    # -- replies -------------------------------------------------------------------------

    def _meta(self, call: Call, seed: int) -> StreamMeta:
        return make_meta(call.chat.response_model, seed=seed, era=call.config.era,
                         created=call.created, repeat=call.repeat)

    def _generator_args(self, call: Call, spec: StreamSpec, logprobs: int | None) -> dict[str, Any]:
        """What the stream and the non-streaming body share: from the request and the step."""
        chat = call.chat
        return {
            "model": chat.response_model,
            "thinking": spec.thinking if spec.thinking is not None else chat.thinking,
            "split": spec.fragment_plan(),
            "seed": spec.seed if spec.seed is not None else call.seed,
            "era": call.config.era,
            "prompt_tokens": chat.prompt_tokens,
            "max_tokens": chat.max_tokens,
            "logprobs": logprobs if logprobs is not None else chat.logprobs,
        }

    def _prepare(self, call: Call, reply: Reply, seed: int) -> Reply:
        """The reply this response sends: fresh call ids on a repeat, text cut at a stop string."""
        if call.repeat and reply.tool_calls and any(c.id is None for c in reply.tool_calls):
            # A repeated step would mint the same call ids again (they come from the seed).
            rng = random.Random(f"ids:{seed}:repeat:{call.repeat}")
            calls = tuple(
                c if c.id is not None else dataclasses.replace(c, id=tool_call_id(i, rng))
                for i, c in enumerate(reply.tool_calls)
            )
            reply = dataclasses.replace(reply, tool_calls=calls)
        stop = call.chat.stop
        if stop and reply.content:
            content, cut = apply_stop(reply.content, stop)
            if cut:
                return dataclasses.replace(reply, content=content, finish_reason="stop")
        return reply

    def stream(
        self, call: Call, reply: Reply, spec: StreamSpec, *, done: bool = True, logprobs: int | None = None
    ) -> Rendering[StreamMeta]:
        options = call.chat.body.get("stream_options")
        # DeepSeek sends usage whether or not it was asked for (ds16); only an explicit
        # `include_usage: false` leaves it out, as OpenAI-style servers do.
        include_usage = not (isinstance(options, dict) and options.get("include_usage") is False)
        args = self._generator_args(call, spec, logprobs)
        prepared = self._prepare(call, reply, args["seed"])
        meta = self._meta(call, args["seed"])
        quirks, framing = spec.quirks, spec.framing

        def render(m: StreamMeta) -> list[bytes]:
            chunks = generate_chunks(prepared, quirks=quirks, meta=m, include_usage=include_usage, **args)
            return encode_events(chunks, framing, done=done, quirks=quirks)

        def fast(m: StreamMeta) -> Sequence[bytes]:
            return encode_stream(prepared, quirks=quirks, framing=framing, done=done,
                                 include_usage=include_usage, meta=m, **args)

        key = (self.name, prepared, tuple(quirks), framing, done, include_usage,
               *args.values(), meta.model, meta.system_fingerprint)
        return Rendering(render=render, fast=fast, envelope=meta, key=key, template=_TEMPLATE)

    def body(self, call: Call, reply: Reply, spec: StreamSpec, *, logprobs: int | None = None) -> Body:
        args = self._generator_args(call, spec, logprobs)
        prepared = self._prepare(call, reply, args["seed"])
        completion = build_completion(prepared, meta=self._meta(call, args["seed"]), **args)
        return json_body(200, completion)

    def replay(
        self, call: Call, chunks: Sequence[StreamChunk], failure: LlmFailure | None, spec: ChunksSpec
    ) -> Replay:
        plan = wire_plan(chunks, self._meta(call, call.seed), failure=failure,
                         hang=spec.kind == "hang", framing=spec.framing)
        if plan.body is not None:
            err = json.loads(plan.body).get("error")
            return Replay(body=Body(status=plan.status, data=plan.body, headers=plan.headers,
                                    error=err if isinstance(err, dict) else None))
        return Replay(events=plan.events, headers={**self.stream_headers, **plan.headers}, end=plan.end)

    # -- the pieces faults send ----------------------------------------------------------

    def inband_error(self, call: Call, step: FaultStep, *, event_line: bool) -> bytes:
        err = {
            "error": {
                "message": step.message or "mock in-band error after the stream started",
                "type": step.type or "server_error",
                "param": None,
                "code": step.code or "mock_inband_error",
            }
        }
        return (b"event: error\n" if event_line else b"") + b"data: " + json.dumps(err).encode() + b"\n\n"

    def malformed(self, call: Call, what: Literal["json", "event"]) -> tuple[bytes, list[bytes]]:
        if what == "json":
            data = b"{not-json"
        else:
            chunk = {
                "id": "mock-malformed",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": call.request.response_model if call.request else "deepseek-v4-flash",
                "choices": [None],
            }
            data = json.dumps(chunk).encode()
        return data, [b"data: " + data + b"\n\n", b"data: [DONE]\n\n"]

    def done_unterminated(self, framing: Framing) -> bytes:
        return b"data: [DONE]" + (b"\r\n" if framing == "crlf" else b"\n")
