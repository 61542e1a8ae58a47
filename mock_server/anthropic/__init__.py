"""DeepSeek's second wire: the Anthropic Messages surface (`/anthropic/v1/messages`).

DeepSeek serves Anthropic's Messages API next to Chat Completions (Claude Code and apps built on
the `anthropic` SDK point at `https://api.deepseek.com/anthropic`). This package holds everything
that differs between the two surfaces, one module per concern: `surface` (`AnthropicSurface`,
this wire's :class:`~dshkit.mock_server.surface.Surface`: paths, auth, error bodies, the pieces
faults send and where they cut), `validation` (`validate_messages`, model names), `render` (the
stream events and the non-streaming body) and `replay` (logged chunks as a reply). The package itself exports nothing:
the renderers, the quirk names (`render`) and DeepSeek's passback message (`validation`) are
imported from their modules. The server's scripts, faults, routing and
journal are shared. The contract, for clients of the mock and for the rest of `mock_server`:

**Paths.** `POST /anthropic/v1/messages` (what the SDK calls, given `base_url=<mock>/anthropic`)
and `POST /anthropic/messages` (DeepSeek's alias for direct HTTP callers). A query string such
as `?beta=true` is ignored. Other `/anthropic/...` paths answer 404.

**Auth.** With an API key configured, `Authorization: Bearer <key>` or `x-api-key: <key>`; when
both are sent, `Authorization` decides. `anthropic-version` and `anthropic-beta` are ignored.

**Models** (DeepSeek's newest page): the DeepSeek names of `validation.MODELS` are served as on
the chat route; names starting `claude-opus` → `deepseek-v4-pro`, any other `claude…` →
`deepseek-flash`; a `[1m]` suffix (Claude Code's 1M-context marker) is stripped first; any
other name → 400. The response's `model` is the DeepSeek name.

**Validation** (:func:`~dshkit.mock_server.anthropic.validation.validate_messages`, first problem wins, nothing consumes a step):
`model`, `max_tokens` and `messages` are required; known fields are type-checked (DeepSeek's
strict deserializer: "Failed to deserialize the JSON body into the target type: <path>: …");
ignored fields (`top_k`, `service_tier`, `container`, `mcp_servers`, `cache_control`, the
`anthropic-*` headers) and unknown top-level fields are accepted silently. Content blocks DeepSeek
does not support (`document`, `search_result`, `redacted_thinking`, `mcp_*`, …) → 400. Every
`tool_use` must be answered by a `tool_result` in the next user turn, every `tool_result` must
answer a `tool_use` of the turn before, once; `tool_use` ids and tool names are unique;
`thinking.type` is `enabled`, `disabled` or `adaptive` → 400 otherwise. With thinking on
(the default; only `{"type": "disabled"}` turns it off), an assistant turn with `tool_use` and no
`thinking` block → 400 with DeepSeek's real message, and `tool_choice: {"type": "tool"}` → 400;
a `thinking` block needs a `signature` key (any string). `temperature` must lie in [0, 2] when
thinking is off. `output_config.effort` takes DeepSeek's effort words.

**Errors.** By default each status in the envelope the recordings support
(:func:`~dshkit.mock_server.anthropic.surface.envelope_for`): every 4xx but 429 in DeepSeek's
envelope as recorded on this route (the OpenAI-style `{"error": {"message", "type", "param",
"code"}}`, no `request_id`), 429 and 5xx in Anthropic's `{"type": "error", "error": {"type",
"message"}, "request_id"}` (no DeepSeek body was recorded for those). The server option
`anthropic_envelope="deepseek"`/`"anthropic"` (or a step's `deepseek_envelope`/
`anthropic_envelope` quirk) sends one of them for every status. On this surface `error.type`
follows the status the way Anthropic names them (:func:`~dshkit.mock_server.anthropic.surface.error_type`: 429 `rate_limit_error`,
500 `api_error`, 529 `overloaded_error`, …) unless a fault step sets `type`.

**Script steps** are logical replies rendered by the surface the request came to:
- `reply` (a fresh message id per response, fresh `tool_use` ids when the step answers
  again): `reasoning` → one `thinking` block (only when thinking is on; its signature is the
  message id, as DeepSeek does), `content` → one `text` block, each of `tool_calls` → one
  `tool_use` block (`arguments` streamed byte for byte as `input_json_delta.partial_json`, parsed
  into `input` for non-streaming bodies). `stream.split`/`text`/`reasoning`/`arguments` cut the
  deltas, `stream.writes` cuts the bytes, `stream.framing` picks LF or CRLF, `timing` applies as
  on the chat route, and `stream.quirks` takes the names of :data:`ANTHROPIC_QUIRKS` (chat quirk
  names are ignored here, and these are ignored on the chat route). `finish_reason` maps to
  `stop_reason`: stop → `end_turn` (`stop_sequence` when one of the request's
  `stop_sequences` cut the text), length → `max_tokens`, tool_calls → `tool_use`,
  content_filter → `refusal`, insufficient_system_resource → an in-band `error` event
  (`overloaded_error`) instead of `message_delta`. A script `usage` in Chat Completions shape is
  converted (input = prompt − cache hits, `cache_read_input_tokens` = hits); one that already
  has `input_tokens` is sent as is.
- `fault`: every fault works; HTTP faults use this surface's envelope and types, stream faults
  cut the Anthropic events where they cut the chat events (the `[DONE]` of the chat route is
  `message_stop` here), `inband_error`/`event_error` send `event: error` with an
  `overloaded_error` unless `type`/`message` say otherwise, `overloaded` answers 529.
- `raw`: the bytes as scripted (cassette replay uses this).
- `chunks` (session-log replay): served as a reply built from the chunks' text, reasoning and
  tool calls, cut where the logged deltas were cut (:func:`~dshkit.mock_server.anthropic.replay.chunk_replay`); a logged failure
  becomes an HTTP error before any content, an in-band `error` event after it, a plain EOF for
  a closed stream or a reset for a transport failure.

**Stream shape** (:func:`encode_events`): `event: <type>` + `data: <json>` + blank line, in the
order `message_start` (UUID id, input-side usage, `output_tokens: 1`), the blocks with contiguous
indices (`content_block_start`, one `ping` after the first start, the deltas, a
`signature_delta` before a thinking block's stop, `content_block_stop`), `message_delta`
(`stop_reason`, `stop_sequence`, cumulative usage repeating the input counters),
`message_stop`. The journal keeps every request (`Journal.messages()` lists this surface's).
"""


__all__ = [
]
