"""`SlotChunks`: a `StreamState` mixin that builds the three per-delta chunks by writing their
slots, for decoders' fast paths only (the plain `StreamState` builds them with their constructors).

The chunk classes are frozen slotted dataclasses, whose generated `__init__` parses keywords and
sets each field through `object.__setattr__`: on a long stream that is about a fifth of the whole
decode. Writing the slots directly builds the very same instance (equal, same hash, same repr) in
a quarter of the time. The writers are checked against the classes' fields when this module is
imported, so a field added to a chunk fails here, loudly, instead of leaving a slot unset; the
differential tests hold the fast decoders to the plain ones. `reasoning_deltas`, `text_deltas` and
`tool_call_deltas` build a run of chunks of one block the same way, each slot for the whole run in
one loop in C.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import fields
from itertools import repeat
from typing import Any

from dshkit.harness.llm.chunks import ReasoningDelta, TextDelta, ToolCallDelta

__all__ = ["SlotChunks", "reasoning_deltas", "text_deltas", "tool_call_deltas"]

_new = object.__new__


def _setters(cls: type, names: tuple[str, ...]) -> tuple[Callable[[Any, Any], None], ...]:
    """The slot setters of `cls`'s fields, in the order of `names`, which must name them all."""
    have = sorted(f.name for f in fields(cls))
    if have != sorted(names):
        raise TypeError(f"{cls.__name__} has the fields {have}, not {sorted(names)}: update {__name__}")
    return tuple(vars(cls)[name].__set__ for name in names)


_R_INDEX, _R_TEXT, _R_TYPE = _setters(ReasoningDelta, ("index", "text", "type"))
_T_INDEX, _T_TEXT, _T_TYPE = _setters(TextDelta, ("index", "text", "type"))
_C_INDEX, _C_ID, _C_NAME, _C_ARGUMENTS, _C_TYPE = _setters(
    ToolCallDelta, ("index", "id", "name", "arguments_delta", "type")
)


def _reasoning_delta(index: int, text: str) -> ReasoningDelta:
    chunk: ReasoningDelta = _new(ReasoningDelta)
    _R_INDEX(chunk, index)
    _R_TEXT(chunk, text)
    _R_TYPE(chunk, "reasoning-delta")
    return chunk


def _text_delta(index: int, text: str) -> TextDelta:
    chunk: TextDelta = _new(TextDelta)
    _T_INDEX(chunk, index)
    _T_TEXT(chunk, text)
    _T_TYPE(chunk, "text-delta")
    return chunk


def _tool_call_delta(index: int, id_: str, name: str | None, fragment: str) -> ToolCallDelta:
    chunk: ToolCallDelta = _new(ToolCallDelta)
    _C_INDEX(chunk, index)
    _C_ID(chunk, id_)
    _C_NAME(chunk, name)
    _C_ARGUMENTS(chunk, fragment)
    _C_TYPE(chunk, "tool-call-delta")
    return chunk


def _fill(setter: Callable[[Any, Any], None], chunks: list[Any], values: Iterable[Any]) -> None:
    deque(map(setter, chunks, values), 0)  # the loop in C: no Python frame per chunk


def reasoning_deltas(index: int, texts: list[str]) -> list[ReasoningDelta]:
    """`[_reasoning_delta(index, t) for t in texts]`, each slot written for all chunks at once."""
    chunks: list[ReasoningDelta] = list(map(_new, repeat(ReasoningDelta, len(texts))))
    _fill(_R_INDEX, chunks, repeat(index))
    _fill(_R_TEXT, chunks, texts)
    _fill(_R_TYPE, chunks, repeat("reasoning-delta"))
    return chunks


def text_deltas(index: int, texts: list[str]) -> list[TextDelta]:
    """`[_text_delta(index, t) for t in texts]`, built as `reasoning_deltas` builds its chunks."""
    chunks: list[TextDelta] = list(map(_new, repeat(TextDelta, len(texts))))
    _fill(_T_INDEX, chunks, repeat(index))
    _fill(_T_TEXT, chunks, texts)
    _fill(_T_TYPE, chunks, repeat("text-delta"))
    return chunks


def tool_call_deltas(index: int, id_: str, name: str | None, fragments: list[str]) -> list[ToolCallDelta]:
    """`[_tool_call_delta(index, id_, name, f) for f in fragments]`, built the same way."""
    chunks: list[ToolCallDelta] = list(map(_new, repeat(ToolCallDelta, len(fragments))))
    _fill(_C_INDEX, chunks, repeat(index))
    _fill(_C_ID, chunks, repeat(id_))
    _fill(_C_NAME, chunks, repeat(name))
    _fill(_C_ARGUMENTS, chunks, fragments)
    _fill(_C_TYPE, chunks, repeat("tool-call-delta"))
    return chunks


class SlotChunks:
    """Put it before a `StreamState` subclass (`class Fast(SlotChunks, Translator)`): same
    bookkeeping, same chunks, the per-delta ones built by slot writes."""

    __slots__ = ()

    reasoning_delta = staticmethod(_reasoning_delta)
    text_delta = staticmethod(_text_delta)
    tool_call_delta = staticmethod(_tool_call_delta)
