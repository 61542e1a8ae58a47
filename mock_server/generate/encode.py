"""Encoding: chunk dicts become SSE events, byte for byte as DeepSeek frames them.

Each chunk is one `data: <compact JSON>` event followed by a blank line (S19), raw non-ASCII
text left unescaped, and `data: [DONE]` ends the stream (S20). :func:`encode_stream` does
generation and encoding in one step and, for a plain DeepSeek stream, fills byte templates
instead of building a dict per chunk: the server's fast path renders with it, its plain path
with `encode_events(generate_chunks(...))`, and the two are byte-identical.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import msgspec

from dshkit.mock_server.generate.chunks import generate_chunks
from dshkit.mock_server.generate.events import BodyWriter, JoinedEvents
from dshkit.mock_server.generate.reply import Era, Reply, StreamMeta, make_meta
from dshkit.mock_server.generate.split import (
    FragmentPlan,
    JoinedPieces,
    SplitPlan,
    cut_joined,
    reply_usage,
)

__all__ = [
    "ENCODE_QUIRKS",
    "Framing",
    "encode_events",
    "encode_sse",
    "encode_stream",
    "frame_jsonl",
]

Framing = Literal["lf", "crlf"]

#: The quirks (:data:`~dshkit.mock_server.generate.chunks.QUIRKS`) that act on framing, applied by
#: :func:`encode_events`, not by :func:`~dshkit.mock_server.generate.chunks.generate_chunks`.
ENCODE_QUIRKS = frozenset({"comments", "data_no_space"})


def _make_encoder() -> Callable[[Any], str]:
    # DeepSeek sends compact JSON with raw (unescaped) non-ASCII text. One encoder is built
    # once: `json.dumps` with custom arguments builds a new one per call, which dominated
    # the server's per-chunk cost (bench/server.py).
    enc = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
    c_make = getattr(json.encoder, "c_make_encoder", None)
    if c_make is None:  # pragma: no cover - CPython always has the C accelerator
        return enc.encode
    c_enc = c_make(
        None, enc.default, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )
    return lambda obj: "".join(c_enc(obj, 0))


_encode = _make_encoder()
_escape: Callable[[str], str] = json.encoder.encode_basestring
#: A dict of strings and integers as compact UTF-8 JSON (what `_encode(obj).encode()` gives it).
_dumps_plain: Callable[[Any], bytes] = msgspec.json.Encoder().encode
_CHUNK_KEYS = ["id", "object", "created", "model", "system_fingerprint", "choices", "usage"]
_CHOICE_KEYS = ["index", "delta", "logprobs", "finish_reason"]


def _dumps(obj: Any) -> bytes:
    return _utf8(_encode(obj), obj)


def _utf8(text: str, obj: Any) -> bytes:
    """`text` as UTF-8; a lone surrogate (a replayed log's `"\\ud800"`) is sent as its JSON
    escape instead, the line then ASCII-escaped throughout, as the log holds it."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode("ascii")


class _ChunkEncoder:
    """Encodes chunks byte-identically to `_dumps`, reusing the envelope bytes of a stream."""

    __slots__ = ("_key", "_prefix")

    def __init__(self) -> None:
        self._key: tuple[Any, ...] | None = None
        self._prefix = ""

    def __call__(self, chunk: Mapping[str, Any]) -> bytes:
        # Fast path only for the exact shape generate_chunks() makes (same keys, same order);
        # anything else goes through the full encoder.
        if list(chunk) != _CHUNK_KEYS:
            return _dumps(chunk)
        choices = chunk["choices"]
        if len(choices) != 1 or list(choices[0]) != _CHOICE_KEYS or choices[0]["index"] != 0:
            return _dumps(chunk)
        key = (chunk["id"], chunk["object"], chunk["created"], chunk["model"],
               chunk["system_fingerprint"])
        if key != self._key:
            head = {k: chunk[k] for k in _CHUNK_KEYS[:5]}
            self._prefix = _encode(head)[:-1] + ',"choices":[{"index":0,"delta":'
            self._key = key
        c = choices[0]
        lp, fin, usage = c["logprobs"], c["finish_reason"], chunk["usage"]
        return _utf8("".join((
            self._prefix,
            _encode(c["delta"]),
            ',"logprobs":',
            "null" if lp is None else _encode(lp),
            ',"finish_reason":',
            "null" if fin is None else _encode(fin),
            '}],"usage":',
            "null" if usage is None else _encode(usage),
            "}",
        )), chunk)


def encode_events(
    chunks: Iterable[Mapping[str, Any] | bytes],
    framing: Framing = "lf",
    *,
    done: bool = True,
    quirks: Iterable[str] = (),
) -> list[bytes]:
    """Frame each chunk as one SSE event (`data: <one-line JSON>` + blank line, S19).

    A `bytes` item is taken as already-encoded JSON. `done` appends `data: [DONE]` (S20).
    The framing quirks `comments` and `data_no_space` apply here.
    """
    q = frozenset(quirks)
    eol = b"\r\n" if framing == "crlf" else b"\n"
    prefix = b"data:" if "data_no_space" in q else b"data: "
    tail = eol + eol
    comment = b": OPENROUTER PROCESSING" + tail if "comments" in q else b""
    encode = _ChunkEncoder()
    out: list[bytes] = []
    for chunk in chunks:
        body = chunk if isinstance(chunk, bytes) else encode(chunk)
        if comment:
            out.append(comment)
        out.append(prefix + body + tail)
    if done:
        out.append(prefix + b"[DONE]" + tail)
    return out


def encode_stream(
    reply: Reply,
    *,
    model: str = "deepseek-v4-flash",
    thinking: bool = True,
    quirks: Iterable[str] = (),
    split: FragmentPlan | SplitPlan | None = None,
    seed: int = 0,
    meta: StreamMeta | None = None,
    era: Era = "v4",
    prompt_tokens: int = 16,
    max_tokens: int | None = None,
    logprobs: int | None = None,
    framing: Framing = "lf",
    done: bool = True,
    include_usage: bool = True,
) -> Sequence[bytes]:
    """`encode_events(generate_chunks(...))` in one step: the SSE events of a reply.

    Byte-identical to the two-step form. A plain DeepSeek stream (no quirks, no logprobs) is
    written from byte templates straight into one bytes object (:class:`JoinedEvents`), with no
    dict and no object per chunk (the server's fast path renders with this).
    """
    q = frozenset(quirks)
    if not (q or logprobs is not None or reply.usage is not None or not include_usage):
        pieces = cut_joined(reply, thinking=thinking, split=split, seed=seed, max_tokens=max_tokens)
        if pieces is not None:
            meta = meta or make_meta(model, seed=seed, era=era)
            usage = reply_usage(reply, pieces, prompt_tokens)  # reply.usage is None on this path
            try:
                events = _template_events(meta, pieces, usage, thinking=thinking, framing=framing, done=done)
            except UnicodeEncodeError:
                events = None  # a lone surrogate: the line is ASCII-escaped, as encode_events does
            if events is not None:
                return events
    chunks = generate_chunks(
        reply, model=model, thinking=thinking, quirks=q, split=split, seed=seed, meta=meta,
        era=era, prompt_tokens=prompt_tokens, max_tokens=max_tokens, logprobs=logprobs,
        include_usage=include_usage,
    )
    return encode_events(chunks, framing, done=done, quirks=q)


def _template_events(
    meta: StreamMeta,
    pieces: JoinedPieces,
    usage: Mapping[str, Any],
    *,
    thinking: bool,
    framing: Framing,
    done: bool,
) -> JoinedEvents | None:
    """A plain DeepSeek stream from byte templates: the envelope is encoded once, every string's
    fragments framed at once, all of it written into the one bytes object sent (None: a piece
    of the envelope holds the fragments' joiner)."""
    eol = b"\r\n" if framing == "crlf" else b"\n"
    envelope = {
        "id": meta.id,
        "object": "chat.completion.chunk",
        "created": meta.created,
        "model": meta.model,
        "system_fingerprint": meta.system_fingerprint,
    }
    if type(meta.created) is int and type(usage.get("prompt_tokens")) is int:
        # Strings and integers only (a computed usage is integers): msgspec writes them as the
        # standard encoder does, compact and UTF-8, and refuses a lone surrogate with the same
        # UnicodeEncodeError, in a fraction of its time.
        head_bytes, usage_bytes = _dumps_plain(envelope)[:-1], _dumps_plain(usage)
    else:
        head_bytes, usage_bytes = _encode(envelope)[:-1].encode("utf-8"), _encode(usage).encode()
    pre = b"data: " + head_bytes + b',"choices":[{"index":0,"delta":'
    post = b',"logprobs":null,"finish_reason":null}],"usage":null}' + eol + eol
    esc = _escape
    out = BodyWriter()
    if thinking:
        out.add(pre + b'{"role":"assistant","content":null,"reasoning_content":""}' + post)
        out.run(pre + b'{"content":null,"reasoning_content":', pieces.reasoning, b"}" + post)
        out.run(pre + b'{"content":', pieces.content, b',"reasoning_content":null}' + post)
    else:
        out.add(pre + b'{"role":"assistant","content":""}' + post)
        out.run(pre + b'{"content":', pieces.content, b"}" + post)
    for i, (call_id, name, frags) in enumerate(pieces.calls):
        out.add(
            pre + b'{"tool_calls":[{"index":%d,"id":%b,"type":"function","function":{"name":%b,'
            b'"arguments":""}}]}' % (i, esc(call_id).encode(), esc(name).encode()) + post
        )
        out.run(pre + b'{"tool_calls":[{"index":%d,"function":{"arguments":' % i, frags, b"}}]}" + post)
    finish_delta = b'{"content":"","reasoning_content":null}' if thinking else b'{"content":""}'
    out.add(
        pre + finish_delta + b',"logprobs":null,"finish_reason":'
        + esc(pieces.finish_reason).encode() + b'}],"usage":' + usage_bytes
        + b"}" + eol + eol
    )
    if done:
        out.add(b"data: [DONE]" + eol + eol)
    body = out.joined()
    return None if body is None else JoinedEvents(body, terminator=eol + eol)


def encode_sse(
    chunks: Iterable[Mapping[str, Any] | bytes],
    framing: Framing = "lf",
    *,
    done: bool = True,
    quirks: Iterable[str] = (),
) -> bytes:
    """The SSE body for `chunks`: every event of :func:`encode_events`, joined."""
    return b"".join(encode_events(chunks, framing, done=done, quirks=quirks))


def frame_jsonl(data: bytes, framing: Framing = "lf", *, done: bool = True) -> bytes:
    """Frame a file of JSONL chunk lines as SSE: each non-blank line byte for byte, then `[DONE]` (S35)."""
    lines = [line.rstrip(b"\r") for line in data.split(b"\n")]
    return encode_sse([line for line in lines if line.strip()], framing, done=done)


