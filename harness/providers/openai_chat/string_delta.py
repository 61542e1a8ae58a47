"""`StringDelta`: a delta of one string that `FastStreamDecoder` has learned the bytes of, so that
a line with those bytes around another string has only that string parsed.

Most deltas of a long stream add one string to one block: reasoning (`{"content": null,
"reasoning_content": "…"}` in DeepSeek's stream), text, or the arguments of one tool call. A
server writes them all alike but for the string, so once one of them has been translated, the
bytes of its line before and after the string are remembered (`learn`). A later line with those
very bytes around a slot that msgspec reads as exactly one string is that same delta with that
string (a JSON string is one token, and the bytes around it are tokenised as they were), and its
translation is one append to the same block: no dict is built and none is looked into. Any
other line takes the decoder's other paths, so the chunks stay those of the plain decoder.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

from dshkit.harness.llm import StreamChunk
from dshkit.harness.llm.stream_state import BlockState, StreamState

from .decoder import scan_once

__all__ = ["StringDelta", "learn", "one_string"]

_PROBE = "dshkit-probe"


class StringDelta:
    """The learned bytes of one kind of one-string delta, and the block its strings go to."""

    __slots__ = ("block", "piece", "line", "end", "stop", "chunk")

    def __init__(self, block: BlockState, piece: bytes, line: bytes, end: bytes,
                 chunk: Callable[[str], StreamChunk] | None) -> None:
        self.block = block
        """The open block its strings are appended to."""
        self.piece = piece
        """The line's bytes up to the string, after the decoder's `_line_head`."""
        self.line = line
        """The line's bytes up to the string."""
        self.end = end
        """The line's bytes after the string."""
        self.stop = -len(end)
        self.chunk = chunk
        """The chunk of one string for a reasoning or text block (which an empty string does
        not get: the translator drops it); None for a tool call, whose chunk carries its id and
        name as they are when it is made."""


def one_string(delta: dict[str, Any]) -> tuple[str, str] | None:
    """(block kind, key of the string) when `Translator.feed_delta` turns `delta`, and `delta`
    with any other string in that place, into one append to one block: a non-empty reasoning
    string and no content; a non-empty text string and no reasoning; the arguments of one tool
    call by wire index, and no id, name, content or reasoning. None for anything else."""
    calls = delta.get("tool_calls")
    reasoning = delta.get("reasoning_content")
    content = delta.get("content")
    if calls:
        if reasoning is not None or delta.get("reasoning") is not None or content is not None:
            return None
        if type(calls) is not list or len(calls) != 1 or type(calls[0]) is not dict:
            return None
        entry = calls[0]
        function = entry.get("function")
        if type(entry.get("index")) is not int or entry.get("id") or type(function) is not dict:
            return None
        if function.get("name") or type(function.get("arguments")) is not str:
            return None
        return "tool-call", "arguments"
    if type(reasoning) is str and reasoning and content is None:
        return "reasoning", "reasoning_content"
    if type(content) is str and content and reasoning is None and delta.get("reasoning") is None:
        return "text", "content"
    return None


def _holder(delta: Any, kind: str) -> Any:
    """The object `one_string`'s key is in."""
    return delta["tool_calls"][0]["function"] if kind == "tool-call" else delta


def learn(slot: bytes, delta: dict[str, Any], kind: str, key: str, state: StreamState,
          line_head: bytes, head_rest: bytes, tail: bytes) -> StringDelta | None:
    """The `StringDelta` of `delta` (kind and key from `one_string`), just translated by
    `state`, whose slot bytes were `slot` in a line of `line_head + head_rest + slot + tail`;
    None when the string's place is not proved. It is proved as the envelope is: with a
    probe string in that place, `json.loads` must read the very same delta with the probe in
    the string's place."""
    try:
        text = slot.decode("utf-8")
    except UnicodeDecodeError:
        return None
    at = text.rfind(f'"{key}"')  # the last: of a repeated key, the value read is the last one
    if at < 0:
        return None
    start = at + len(key) + 2
    while text[start : start + 1] in (" ", "\t", ":"):
        start += 1  # a colon and whitespace (the probe refuses anything else)
    try:
        value, stop = scan_once(text, start)
        probed = json.loads(text[:start] + json.dumps(_PROBE) + text[stop:])
        expected = json.loads(text)
    except (StopIteration, ValueError, RecursionError):
        return None
    if value != _holder(expected, kind)[key]:
        return None
    _holder(expected, kind)[key] = _PROBE
    if probed != expected:
        return None
    block: BlockState | None
    chunk: Callable[[str], StreamChunk] | None = None
    if kind == "tool-call":
        block = state.keyed.get(delta["tool_calls"][0]["index"])
    elif kind == "reasoning":
        block = state.reasoning
        chunk = partial(state.reasoning_delta, block.index) if block is not None else None
    else:
        block = state.text
        chunk = partial(state.text_delta, block.index) if block is not None else None
    if block is None:
        return None
    piece = head_rest + text[:start].encode("utf-8")
    return StringDelta(block, piece, line_head + piece, text[stop:].encode("utf-8") + tail, chunk)
