"""`StreamState`: the provider-neutral half of turning one response into `StreamChunk`s.

Every adapter does the same bookkeeping whatever its wire looks like: open a block with the next
index (emitting `BlockStart`), append deltas to it (emitting `ReasoningDelta`/`TextDelta`/
`ToolCallDelta`), close the open blocks in the order they were opened (emitting `BlockEnd` with
the assembled block), and end with one `Finish` by the same rules: a reason → open blocks closed,
usage, then the finish (a `stop` with no block at all is an EMPTY_RESPONSE error); no reason →
an error finish that leaves the partial blocks open. Keeping this in one place means the
DeepSeek, OpenAI-SDK and Anthropic adapters cannot drift apart on those rules; each provider
keeps only its own parsing (which wire field opens which block, how a finish reason or usage
object maps) and hands the results here.

The DeepSeek translator runs this once per wire delta, ten thousand times per long stream, so
the delta methods build their chunks through slot setters (see `_slot_setters`) and a provider
translator may subclass `StreamState` to reach its state without an indirection.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import fields
from typing import Any

from .chunks import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishMeta,
    FinishReason,
    LlmFailure,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    Usage,
)
from .errors import ErrorCode
from .messages import ContentBlock, ReasoningBlock, TextBlock, ToolCallBlock

__all__ = ["BlockState", "StreamState"]

EMPTY_RESPONSE_MESSAGE = "model returned a completed response with no content"
"""The failure message of a `stop` finish that came without any block."""


class BlockState:
    """One block of the response while it streams: its index, kind and the parts so far.

    `kind` is `reasoning`, `text`, `tool-call`, or another block type a provider passes through;
    a provider with more to keep per block (a signature, the raw start) subclasses this and
    overrides `block()`."""

    __slots__ = ("index", "kind", "parts", "id", "name", "closed")

    def __init__(self, kind: str) -> None:
        self.index = -1
        """Set by `StreamState.open_block`."""
        self.kind = kind
        self.parts: list[str] = []
        self.id = ""
        self.name = ""
        self.closed = False

    def block(self) -> ContentBlock:
        """The assembled block, as its `BlockEnd` carries it."""
        text = "".join(self.parts)
        if self.kind == "reasoning":
            return ReasoningBlock(text=text)
        if self.kind == "tool-call":
            return ToolCallBlock(id=self.id, name=self.name, arguments=text)
        return TextBlock(text=text)


# Fast constructors for the three chunks made once per wire delta. The chunk classes are frozen
# slotted dataclasses, whose generated `__init__` sets each field through `object.__setattr__`
# after parsing keywords: about half of a translator's time per delta. Writing the slots
# directly builds the very same instance (equal, same hash, same repr) in less than half the
# time. Only used while the classes have exactly the fields written here; otherwise (a field
# added to `chunks`), the ordinary constructor runs and nothing can be left unset.
_new = object.__new__
_UNKEYED: Any = object()


def _slot_setters(cls: type, names: tuple[str, ...]) -> tuple[Callable[[Any, Any], None], ...] | None:
    if tuple(sorted(f.name for f in fields(cls))) != tuple(sorted(names)):
        return None
    return tuple(vars(cls)[name].__set__ for name in names)


_REASONING = _slot_setters(ReasoningDelta, ("index", "text", "type"))
_TEXT = _slot_setters(TextDelta, ("index", "text", "type"))
_TOOL = _slot_setters(ToolCallDelta, ("index", "id", "arguments_delta", "name", "type"))


class StreamState:
    """The blocks, usage, response ids and end of one response (see the module docstring).

    `reasoning`/`text` are the response's one reasoning and one text block of a wire that has
    a single stream of each (OpenAI-style `delta.content`); `keyed` maps a provider's own block
    key (a tool call's wire index, an Anthropic content block index) to its block."""

    __slots__ = (
        "blocks",
        "keyed",
        "reasoning",
        "text",
        "token_usage",
        "id",
        "model",
        "system_fingerprint",
        "finished",
    )

    def __init__(self) -> None:
        self.blocks: list[BlockState] = []
        """Every block opened, in opening order (a block's index is its position here)."""
        self.keyed: dict[Any, BlockState] = {}
        self.reasoning: BlockState | None = None
        self.text: BlockState | None = None
        self.token_usage: TokenUsage | None = None
        """The usage to report before the finish (the last one the provider sent)."""
        self.id: str | None = None
        self.model: str | None = None
        self.system_fingerprint: str | None = None
        self.finished = False
        """A terminal `Finish` has been produced; later input is ignored."""

    # --- blocks ----------------------------------------------------------------------------

    def open_block(self, block: BlockState, out: list[StreamChunk], key: Hashable = _UNKEYED) -> BlockState:
        """Give `block` the next index, emit its `BlockStart`, and file it under `key` if one is
        given (`None` is a key like any other: a tool call the SDK gave no index)."""
        block.index = len(self.blocks)
        self.blocks.append(block)
        if key is not _UNKEYED:
            self.keyed[key] = block
        out.append(BlockStart(index=block.index, block_type=block.kind))
        return block

    def add_reasoning(self, text: str, out: list[StreamChunk]) -> None:
        """Append to the reasoning block (opened on first use) and emit the delta."""
        block = self.reasoning
        if block is None:
            block = self.reasoning = self.open_block(BlockState("reasoning"), out)
        # `append_reasoning`, inlined: this runs once per wire delta and a call costs as much
        # as building the chunk.
        block.parts.append(text)
        if _REASONING is None:
            out.append(ReasoningDelta(index=block.index, text=text))
            return
        chunk: ReasoningDelta = _new(ReasoningDelta)
        set_index, set_text, set_type = _REASONING
        set_index(chunk, block.index)
        set_text(chunk, text)
        set_type(chunk, "reasoning-delta")
        out.append(chunk)

    def add_text(self, text: str, out: list[StreamChunk]) -> None:
        """Append to the text block (opened on first use) and emit the delta."""
        block = self.text
        if block is None:
            block = self.text = self.open_block(BlockState("text"), out)
        block.parts.append(text)  # `append_text`, inlined (see `add_reasoning`)
        if _TEXT is None:
            out.append(TextDelta(index=block.index, text=text))
            return
        chunk: TextDelta = _new(TextDelta)
        set_index, set_text, set_type = _TEXT
        set_index(chunk, block.index)
        set_text(chunk, text)
        set_type(chunk, "text-delta")
        out.append(chunk)

    def append_reasoning(self, block: BlockState, text: str, out: list[StreamChunk]) -> None:
        """Append `text` to `block` and emit its `ReasoningDelta`."""
        block.parts.append(text)
        if _REASONING is None:
            out.append(ReasoningDelta(index=block.index, text=text))
            return
        chunk: ReasoningDelta = _new(ReasoningDelta)
        set_index, set_text, set_type = _REASONING
        set_index(chunk, block.index)
        set_text(chunk, text)
        set_type(chunk, "reasoning-delta")
        out.append(chunk)

    def append_text(self, block: BlockState, text: str, out: list[StreamChunk]) -> None:
        """Append `text` to `block` and emit its `TextDelta`."""
        block.parts.append(text)
        if _TEXT is None:
            out.append(TextDelta(index=block.index, text=text))
            return
        chunk: TextDelta = _new(TextDelta)
        set_index, set_text, set_type = _TEXT
        set_index(chunk, block.index)
        set_text(chunk, text)
        set_type(chunk, "text-delta")
        out.append(chunk)

    def tool_call(self, key: Hashable, out: list[StreamChunk]) -> BlockState:
        """The tool-call block filed under `key`, opened on first use."""
        call = self.keyed.get(key)
        if call is None:
            call = self.open_block(BlockState("tool-call"), out, key)
        return call

    def add_tool_delta(
        self, call: BlockState, id_: str | None, name: str | None, fragment: str, out: list[StreamChunk]
    ) -> None:
        """Append an arguments fragment to a tool call and emit its `ToolCallDelta`.

        The id and the name come from the first delta that carries them: a repeated or
        changed one neither concatenates nor replaces."""
        if id_ and not call.id:
            call.id = id_
        if name and not call.name:
            call.name = name
        call.parts.append(fragment)  # `append_arguments`, inlined (see `add_reasoning`)
        if _TOOL is None:
            out.append(ToolCallDelta(index=call.index, id=call.id, name=call.name or None, arguments_delta=fragment))
            return
        chunk: ToolCallDelta = _new(ToolCallDelta)
        set_index, set_id, set_arguments, set_name, set_type = _TOOL
        set_index(chunk, call.index)
        set_id(chunk, call.id)
        set_arguments(chunk, fragment)
        set_name(chunk, call.name or None)
        set_type(chunk, "tool-call-delta")
        out.append(chunk)

    def append_arguments(self, call: BlockState, fragment: str, out: list[StreamChunk]) -> None:
        """Append `fragment` to `call`'s arguments and emit its `ToolCallDelta`."""
        call.parts.append(fragment)
        if _TOOL is None:
            out.append(ToolCallDelta(index=call.index, id=call.id, name=call.name or None, arguments_delta=fragment))
            return
        chunk: ToolCallDelta = _new(ToolCallDelta)
        set_index, set_id, set_arguments, set_name, set_type = _TOOL
        set_index(chunk, call.index)
        set_id(chunk, call.id)
        set_arguments(chunk, fragment)
        set_name(chunk, call.name or None)
        set_type(chunk, "tool-call-delta")
        out.append(chunk)

    def close_block(self, block: BlockState, out: list[StreamChunk]) -> None:
        """Emit `block`'s `BlockEnd`, once."""
        if not block.closed:
            block.closed = True
            out.append(BlockEnd(index=block.index, block=block.block()))

    # --- the end ---------------------------------------------------------------------------

    def meta(self, done_missing: bool = False) -> FinishMeta:
        """The response ids as a finish carries them."""
        return FinishMeta(
            id=self.id,
            model=self.model,
            system_fingerprint=self.system_fingerprint,
            done_missing=done_missing,
        )

    def fail(self, failure: LlmFailure, *, keep_usage: bool = False, done_missing: bool = False) -> list[StreamChunk]:
        """End early with an error finish carrying the response ids. Open blocks stay open
        (they are the partial message); with `keep_usage` the usage received so far goes out
        first (billed work, such as a provider's in-band error that came with usage)."""
        self.finished = True
        finish = Finish(reason=FinishReason(kind="error", failure=failure), meta=self.meta(done_missing))
        if keep_usage and self.token_usage is not None:
            return [Usage(usage=self.token_usage), finish]
        return [finish]

    def finish(
        self,
        reason: FinishReason | None,
        *,
        unfinished: LlmFailure,
        done_missing: bool = False,
        empty_message: str = EMPTY_RESPONSE_MESSAGE,
        replay_state: Callable[[], Any] | None = None,
    ) -> list[StreamChunk]:
        """The end of the stream, by the rules every adapter shares.

        Without a `reason` (the provider never said why it stopped) the finish is the
        `unfinished` failure and the open blocks stay open. With one, the open blocks close in
        opening order, the usage follows, then the finish; a `stop` with no block at all is an
        EMPTY_RESPONSE error instead. `replay_state` makes the envelope a successful finish
        carries. `done_missing` flags a stream whose end marker never came."""
        if self.finished:
            return []
        if reason is None:
            return self.fail(unfinished, done_missing=done_missing)
        self.finished = True
        out: list[StreamChunk] = []
        for block in self.blocks:
            self.close_block(block, out)
        if self.token_usage is not None:
            out.append(Usage(usage=self.token_usage))
        if reason.kind == "stop" and not self.blocks:
            reason = FinishReason(kind="error", failure=LlmFailure(message=empty_message, code=ErrorCode.EMPTY_RESPONSE))
        state = replay_state() if replay_state is not None and reason.ok else None
        out.append(Finish(reason=reason, meta=self.meta(done_missing), replay_state=state))
        return out
