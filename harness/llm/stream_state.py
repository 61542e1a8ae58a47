"""`StreamState`: the provider-neutral half of turning one response into `StreamChunk`s.

Every adapter does the same bookkeeping whatever its wire looks like: open a block with the next
index (emitting `BlockStart`), append deltas to it (emitting `ReasoningDelta`/`TextDelta`/
`ToolCallDelta`), close the open blocks in the order they were opened (emitting `BlockEnd` with
the assembled block), and end with one `Finish` by the same rules: a reason → open blocks closed,
usage, then the finish (a `stop` with no block at all is an EMPTY_RESPONSE error); no reason →
an error finish that leaves the partial blocks open. Keeping this in one place means the
DeepSeek, OpenAI-SDK and Anthropic adapters cannot drift apart on those rules; each provider
keeps only its own parsing (which wire field opens which block, how a finish reason or usage
object maps) and hands the results here. The three chunks made once per wire delta (`ReasoningDelta`, `TextDelta`, `ToolCallDelta`) are
built by three small static methods, so that a decoder's fast path can build the very same values
another way without touching the bookkeeping (see `dshkit.harness.providers.slot_chunks`); a
provider translator subclasses `StreamState` to reach its state without an indirection.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
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


_UNKEYED: Any = object()


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
        block.parts.append(text)
        out.append(self.reasoning_delta(block.index, text))

    def add_text(self, text: str, out: list[StreamChunk]) -> None:
        """Append to the text block (opened on first use) and emit the delta."""
        block = self.text
        if block is None:
            block = self.text = self.open_block(BlockState("text"), out)
        block.parts.append(text)
        out.append(self.text_delta(block.index, text))

    def append_reasoning(self, block: BlockState, text: str, out: list[StreamChunk]) -> None:
        """Append `text` to `block` and emit its `ReasoningDelta`."""
        block.parts.append(text)
        out.append(self.reasoning_delta(block.index, text))

    def append_text(self, block: BlockState, text: str, out: list[StreamChunk]) -> None:
        """Append `text` to `block` and emit its `TextDelta`."""
        block.parts.append(text)
        out.append(self.text_delta(block.index, text))

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
        call.parts.append(fragment)
        out.append(self.tool_call_delta(call.index, call.id, call.name or None, fragment))

    def append_arguments(self, call: BlockState, fragment: str, out: list[StreamChunk]) -> None:
        """Append `fragment` to `call`'s arguments and emit its `ToolCallDelta`."""
        call.parts.append(fragment)
        out.append(self.tool_call_delta(call.index, call.id, call.name or None, fragment))

    # --- the per-delta chunks ---------------------------------------------------------------

    @staticmethod
    def reasoning_delta(index: int, text: str) -> ReasoningDelta:
        """The chunk of one reasoning fragment."""
        return ReasoningDelta(index=index, text=text)

    @staticmethod
    def text_delta(index: int, text: str) -> TextDelta:
        """The chunk of one text fragment."""
        return TextDelta(index=index, text=text)

    @staticmethod
    def tool_call_delta(index: int, id_: str, name: str | None, fragment: str) -> ToolCallDelta:
        """The chunk of one tool-call arguments fragment."""
        return ToolCallDelta(index=index, id=id_, name=name, arguments_delta=fragment)

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
