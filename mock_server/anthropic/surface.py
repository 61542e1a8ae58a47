"""The Anthropic Messages wire as one :class:`~dshkit.mock_server.surface.Surface`.

It holds what is particular to this wire: which paths serve it, which headers carry the key,
how an error is shaped (in DeepSeek's envelope as recorded on this route, or in Anthropic's
own), which `type` each status gets, and where faults cut its streams; and it calls the
package's other modules for the rest: `validation` (the request rules and model names),
`render` (a reply as the Messages events or body) and `replay` (a logged call as a reply).
DeepSeek serves this wire from the same gateway as Chat Completions, so its responses carry
the same gateway headers.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from dshkit.mock_server.anthropic import render
from dshkit.mock_server.anthropic.validation import PASSBACK_MESSAGE, validate_messages
from dshkit.mock_server.chat import deepseek_headers
from dshkit.mock_server.generate.encode import Framing
from dshkit.mock_server.generate.reply import Reply, tool_call_id
from dshkit.mock_server.output import Rendering, Template
from dshkit.mock_server.scripts import ChunksSpec, FaultStep, StreamSpec
from dshkit.mock_server.surface import Body, Call, Cuts, Replay, Surface, json_body
from dshkit.mock_server.validation import ChatRequest, Rejection, bearer_key, error_body


def _placeholder_ids(ids: tuple[str, str]) -> tuple[str, str]:
    """Fixed values of the lengths of this response's id and signature (a UUID or `msg_01…`, and
    the id again or an `Eq…==` signature), so filling them in moves no event's end."""
    msg_id, signature = ids
    fake_id = ("dshkit-cached-message-id" + "0" * len(msg_id))[: len(msg_id)]
    fake_signature = fake_id if signature == msg_id else ("dshkitcachedsignature" + "0" * len(signature))[: len(signature)]
    return fake_id, fake_signature


#: `json.dumps` of a string, called straight (C): spelled on every request served from the cache.
_json_string = json.encoder.encode_basestring_ascii


def _spell_ids(ids: tuple[str, str]) -> tuple[bytes, ...]:
    # Quoted with their JSON keys: inside a string value the quotes would be escaped.
    return b'"id":%s' % _json_string(ids[0]).encode(), b'"signature":%s' % _json_string(ids[1]).encode()


_IDS_TEMPLATE = Template(placeholder=_placeholder_ids, spell=_spell_ids)

if TYPE_CHECKING:
    from dshkit.harness.llm import LlmFailure, StreamChunk
    from dshkit.mock_server.runtime import ServerConfig

__all__ = [
    "ANTHROPIC_PATHS",
    "AnthropicSurface",
    "Envelope",
    "check_anthropic_auth",
    "envelope_for",
    "error_body_for",
    "error_type",
]

ANTHROPIC_PATHS = ("/anthropic/v1/messages", "/anthropic/messages")
Envelope = Literal["deepseek", "anthropic"]
#: The server option: one envelope for every status, or `evidence`, each status in the
#: envelope the recordings support (:func:`envelope_for`).
EnvelopeMode = Literal["evidence", "deepseek", "anthropic"]

_STATUS_TYPES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def check_anthropic_auth(headers: Mapping[str, str], api_key: str | None) -> None:
    """`Authorization: Bearer <key>` or `x-api-key: <key>`; `Authorization` wins when both come."""
    if api_key is None:
        return
    auth = headers.get("Authorization")
    if auth is not None:
        if bearer_key(auth) == api_key:  # the scheme in any case (RFC 7235)
            return
        reason = "the api key in `Authorization` is invalid"
    else:
        key = headers.get("x-api-key")
        if key == api_key:
            return
        reason = "the api key in `x-api-key` is invalid" if key else "no api key was sent"
    # As on the chat route, no part of any key is echoed back.
    raise Rejection(
        401,
        f"Authentication Fails, {reason} (send `x-api-key: <key>` or `Authorization: Bearer "
        "<key>` with the key the mock server was started with)",
        type="authentication_error",
    )


def envelope_for(status: int, mode: EnvelopeMode = "evidence") -> Envelope:
    """The envelope an error of `status` is sent in on this route.

    `evidence` follows what was recorded: DeepSeek's own 400 on `/anthropic` (corpus `ds01`)
    and its 401/402 on the chat route, served by the same gateway, are in the OpenAI-style
    envelope, so every 4xx but 429 is; no DeepSeek body was ever recorded for 429, 5xx or 529
    on either route, so those use the envelope this wire documents, which is what its
    clients parse (`@ai-sdk/anthropic` shows only the status text for any other body).
    """
    if mode != "evidence":
        return mode
    return "anthropic" if status == 429 or status >= 500 else "deepseek"


def error_type(status: int) -> str:
    """Anthropic's `error.type` for an HTTP status (`api_error` for statuses it does not name)."""
    return _STATUS_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def error_body_for(
    status: int,
    message: str,
    type: str | None = None,
    code: str | None = None,
    *,
    envelope: Envelope = "deepseek",
    request_id: str | None = None,
) -> dict[str, Any]:
    """The error body this surface sends: DeepSeek's envelope, or Anthropic's."""
    kind = type or error_type(status)
    if envelope == "anthropic":
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
        body["request_id"] = request_id or "req_mock"
        return body
    return error_body(message, kind, code if code is not None else kind)


#: The code of the errors this wire makes up itself (the chat route's generic one).
_CODE = "invalid_request_error"
#: A logged call's ending → how the stream ends here (an in-band error still closes cleanly).
_REPLAY_ENDS: Mapping[str, Literal["close", "eof", "hold", "reset"]] = {
    "close": "close", "hold": "hold", "eof": "eof", "reset": "reset", "error_event": "close",
}


class AnthropicSurface(Surface):
    """The Messages API at `/anthropic/v1/messages`: `event:` + `data:` records, `message_stop`."""

    validates_body_only = True

    name = "anthropic"
    paths = ANTHROPIC_PATHS
    # message_start, the thinking block's start and its ping come before the first reasoning
    # delta; the tool_use block's start, the ping and its first input_json_delta follow message_start.
    cuts = Cuts(reasoning=3, first_argument=4)

    def authorize(self, headers: Mapping[str, str], api_key: str | None) -> None:
        check_anthropic_auth(headers, api_key)

    def validate(
        self, raw: bytes, *, path: str, headers: Mapping[str, str], config: ServerConfig
    ) -> ChatRequest:
        return validate_messages(raw, path=path, headers=headers, era=config.era,
                                 unknown_model=config.anthropic_unknown_model)

    def response_headers(self, trace_id: str) -> Mapping[str, str]:
        return deepseek_headers(trace_id)

    def error(
        self, call: Call, status: int, message: str, type: str, code: str | None, headers: Mapping[str, str] | None
    ) -> Body:
        envelope = envelope_for(status, call.config.anthropic_envelope)
        if "anthropic_envelope" in call.quirks:
            envelope = "anthropic"
        elif "deepseek_envelope" in call.quirks:
            envelope = "deepseek"
        # The chat route's generic types become the type Anthropic names for the status
        # (413 `request_too_large`, 500 `api_error`); specific ones (a fault's) stay.
        if type in ("invalid_request_error", "server_error"):
            type = error_type(status)
        extra = dict(headers or {})
        request_id = extra.get("x-request-id") or f"req_{call.seed:08x}{call.seq:08x}"
        if envelope == "anthropic":
            extra["request-id"] = request_id  # Anthropic's server names the request in both places
        body = error_body_for(status, message, type, code, envelope=envelope, request_id=request_id)
        return json_body(status, body, extra)

    def fault_type(self, status: int, type: str) -> str:
        return error_type(status)  # this wire names errors by status (429 rate_limit_error, …)

    def fault_message(self, fault: str, message: str) -> str:
        return PASSBACK_MESSAGE if fault == "reasoning_passback" else message

    # -- replies -------------------------------------------------------------------------

    def _render_args(self, call: Call, spec: StreamSpec) -> dict[str, Any]:
        chat = call.chat
        return {
            "model": chat.response_model,
            "thinking": spec.thinking if spec.thinking is not None else chat.thinking,
            "split": spec.fragment_plan(),
            "seed": spec.seed if spec.seed is not None else call.seed,
            "prompt_tokens": chat.prompt_tokens,
            "max_tokens": chat.max_tokens,
            "stop": chat.stop,
            "quirks": tuple(spec.quirks),
            "repeat": call.repeat,
        }

    @staticmethod
    def _prepare(call: Call, reply: Reply, seed: int) -> Reply:
        """Fresh `tool_use` ids when the step answers again (they come from the seed), as on
        the chat route; the message id and signature follow `repeat` in the renderer."""
        if not call.repeat or all(c.id is not None for c in reply.tool_calls):
            return reply
        rng = random.Random(f"ids:{seed}:repeat:{call.repeat}")
        calls = tuple(
            c if c.id is not None else dataclasses.replace(c, id=tool_call_id(i, rng))
            for i, c in enumerate(reply.tool_calls)
        )
        return dataclasses.replace(reply, tool_calls=calls)

    def stream(
        self, call: Call, reply: Reply, spec: StreamSpec, *, done: bool = True, logprobs: int | None = None
    ) -> Rendering[tuple[str, str]]:
        args = self._render_args(call, spec)
        reply = self._prepare(call, reply, args["seed"])
        framing = spec.framing
        # The message id and signature are this response's own (fresh when the step answers
        # again): the envelope the stream cache fills in, so a repeated step stays cached.
        repeat = args.pop("repeat")
        anthropic_ids = "anthropic_ids" in args["quirks"]
        msg_id = render.message_id(args["seed"], anthropic=anthropic_ids, repeat=repeat)
        ids = (msg_id, render.signature(msg_id, args["seed"], anthropic_ids, repeat))

        def events(e: tuple[str, str]) -> list[bytes]:
            return render.encode_events(reply, framing=framing, done=done, ids=e, **args)

        def fast(e: tuple[str, str]) -> Sequence[bytes]:
            return render.encode_events_fast(reply, framing=framing, done=done, ids=e, **args)

        key = (self.name, reply, framing, done, *args.values())
        return Rendering(render=events, fast=fast, envelope=ids, key=key, template=_IDS_TEMPLATE)

    def body(self, call: Call, reply: Reply, spec: StreamSpec, *, logprobs: int | None = None) -> Body:
        if reply.finish_reason == "insufficient_system_resource":
            # No stop_reason says "the server ran out"; a whole body says it with a 529.
            return self.error(call, 529, "Overloaded", "overloaded_error", "overloaded_error", None)
        args = self._render_args(call, spec)
        return json_body(200, render.build_message(self._prepare(call, reply, args["seed"]), **args))

    def replay(
        self, call: Call, chunks: Sequence[StreamChunk], failure: LlmFailure | None, spec: ChunksSpec
    ) -> Replay:
        """The same reply, in this protocol's events."""
        # Imported here: it pulls in the harness's replay and session code, which a server that
        # never replays a logged call does not need to load before it is ready.
        from dshkit.mock_server.anthropic.replay import chunk_replay

        plan = chunk_replay(chunks, failure, hang=spec.kind == "hang")
        if plan.end == "http":
            error = self.error(call, plan.status, plan.message, plan.error_type or "server_error", _CODE, None)
            return Replay(body=error)
        chat = call.chat
        args: dict[str, Any] = {"model": chat.response_model, "thinking": True, "split": plan.split,
                                "seed": call.seed, "prompt_tokens": chat.prompt_tokens, "repeat": call.repeat}
        if not chat.stream:
            if plan.end != "close":
                failed = plan.message or "the logged call failed"
                return Replay(body=self.error(call, 500, failed, "api_error", _CODE, None))
            return Replay(body=json_body(200, render.build_message(plan.reply, **args)))
        events = render.encode_events(plan.reply, framing=spec.framing, **args)
        if plan.end in ("eof", "reset", "error_event"):
            # No message_delta/message_stop: the call did not finish.
            events = [e for e in events if b'"message_delta"' not in e and b'"message_stop"' not in e]
        if plan.end == "error_event":
            events.append(render.error_event(plan.error_type or "api_error", plan.message, spec.framing))
        return Replay(events=events, headers=self.stream_headers, end=_REPLAY_ENDS[plan.end])

    # -- the pieces faults send ----------------------------------------------------------

    def inband_error(self, call: Call, step: FaultStep, *, event_line: bool) -> bytes:
        # Both in-band faults send Anthropic's `error` event (AN69).
        return render.error_event(
            step.type or "overloaded_error", step.message or "Overloaded", step.stream.framing,
            data_only="data_only" in step.stream.quirks,
        )

    def malformed(self, call: Call, what: Literal["json", "event"]) -> tuple[bytes, list[bytes]]:
        if what == "json":
            name, data = b"message_start", b"{not-json"
        else:
            # A delta for a block that was never started (the anthropic SDK raises IndexError).
            bad = {"type": "content_block_delta", "index": 7, "delta": None}
            name, data = b"content_block_delta", json.dumps(bad).encode()
        return data, [
            b"event: " + name + b"\ndata: " + data + b"\n\n",
            b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
        ]

    def done_unterminated(self, framing: Framing) -> bytes:
        # AN44: the pending `message_stop` is never dispatched by a conforming parser.
        eol = b"\r\n" if framing == "crlf" else b"\n"
        return b"event: message_stop" + eol + b'data: {"type":"message_stop"}' + eol
