"""`BlockAssembler`: the one fold from `StreamChunk`s to an `AssistantMessage` (dsh-core.md §2.3).

The loop feeds it every chunk of a call, live or replayed from a session log; blocks are keyed by
chunk index and kept in first-seen order. Fragments collect in lists and are joined only when
read, so assembly is linear in the stream size. Reads never mutate: `blocks()` can be called at
any time, `interrupted_blocks()` gives the prefix kept on cancellation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .chunks import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishMeta,
    FinishReason,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    Usage,
)
from .errors import HarnessError
from .messages import (
    AssistantMessage,
    ContentBlock,
    ModelSource,
    OpaqueSource,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    new_message_id,
)

__all__ = ["BlockAssembler"]

_STOP = FinishReason(kind="stop")


@dataclass(slots=True)
class _Partial:
    block_type: str
    parts: list[str] = field(default_factory=list)
    tool_call_id: str | None = None
    tool_call_name: str | None = None
    block: ContentBlock | None = None


class BlockAssembler:
    """Folds the chunks of one call into blocks, usage and a finish reason."""

    __slots__ = ("_partials", "_order", "usage", "_finish", "meta")

    def __init__(self) -> None:
        self._partials: dict[int, _Partial] = {}
        self._order: list[int] = []
        self.usage: TokenUsage | None = None
        """The last usage chunk seen."""
        self._finish: Finish | None = None
        self.meta: FinishMeta | None = None

    # --- feeding ---------------------------------------------------------------------------

    def _get(self, index: int, block_type: str) -> _Partial:
        partial = self._partials.get(index)
        if partial is None:
            partial = self._partials[index] = _Partial(block_type)
            self._order.append(index)
        return partial

    def feed(self, chunk: StreamChunk) -> None:
        """Apply one chunk. Never raises for the core chunk types."""
        kind_of = type(chunk)
        if kind_of is TextDelta or kind_of is ReasoningDelta:
            # The hot path (most chunks of a stream): one dict lookup and one append.
            partial = self._partials.get(chunk.index)  # type: ignore[union-attr]
            if partial is None:
                partial = self._get(chunk.index, "text" if kind_of is TextDelta else "reasoning")  # type: ignore[union-attr]
            if partial.block is None:  # a straggler after block-end is ignored
                partial.parts.append(chunk.text)  # type: ignore[union-attr]
        elif isinstance(chunk, (TextDelta, ReasoningDelta)):
            kind = "text" if isinstance(chunk, TextDelta) else "reasoning"
            partial = self._get(chunk.index, kind)
            if partial.block is None:  # a straggler after block-end is ignored
                partial.parts.append(chunk.text)
        elif isinstance(chunk, ToolCallDelta):
            partial = self._get(chunk.index, "tool-call")
            if partial.block is None:
                # DSH sets the id from every delta (last wins) and the name only when given.
                partial.tool_call_id = chunk.id
                if chunk.name:
                    partial.tool_call_name = chunk.name
                partial.parts.append(chunk.arguments_delta)
        elif isinstance(chunk, BlockStart):
            self._get(chunk.index, chunk.block_type)  # a duplicate start keeps what it has
        elif isinstance(chunk, BlockEnd):
            partial = self._get(chunk.index, chunk.block.type)
            if partial.block is None:  # the first close wins
                partial.block = chunk.block
        elif isinstance(chunk, Usage):
            self.usage = chunk.usage
        elif isinstance(chunk, Finish):
            self._finish = chunk
            self.meta = chunk.meta

    def feed_all(self, chunks: list[StreamChunk] | tuple[StreamChunk, ...]) -> BlockAssembler:
        for chunk in chunks:
            self.feed(chunk)
        return self

    # --- reading ---------------------------------------------------------------------------

    @property
    def finish_reason(self) -> FinishReason:
        """The last finish seen, or `stop` when none arrived."""
        return self._finish.reason if self._finish is not None else _STOP

    @property
    def replay_state(self) -> Any:
        """The finish's replay envelope, its per-block entries aligned with `blocks()`."""
        state = self._finish.replay_state if self._finish is not None else None
        if not isinstance(state, dict) or not isinstance(state.get("blocks"), list):
            return state
        entries = state["blocks"]
        if len(entries) != len(self._order):
            return None
        if self.finish_reason.kind != "max-tokens":
            return state
        kept = [
            entry
            for index, entry in zip(self._order, entries, strict=True)
            if self._partials[index].block_type != "tool-call"
            and getattr(self._partials[index].block, "type", None) != "tool-call"
        ]
        return {**state, "blocks": kept}

    @property
    def finished(self) -> bool:
        return self._finish is not None

    def _assemble(self, index: int, partial: _Partial) -> ContentBlock:
        if partial.block is not None:
            return partial.block
        kind = partial.block_type
        if kind == "text":
            return TextBlock(text="".join(partial.parts))
        if kind == "reasoning":
            return ReasoningBlock(text="".join(partial.parts))
        if kind == "tool-call":
            return ToolCallBlock(
                id=partial.tool_call_id or f"call-{index}",
                name=partial.tool_call_name or "",
                arguments="".join(partial.parts),
            )
        raise HarnessError(
            f'cannot assemble incomplete block of type "{kind}" at index {index}: '
            "it never received a block-end",
            "INCOMPLETE_BLOCK",
        )

    def blocks(self) -> list[ContentBlock]:
        """Every block in first-seen order; tool calls are dropped after a max-tokens finish
        (their arguments may be cut off)."""
        drop_calls = self.finish_reason.kind == "max-tokens"
        out: list[ContentBlock] = []
        for index in self._order:
            block = self._assemble(index, self._partials[index])
            if drop_calls and block.type == "tool-call":
                continue
            out.append(block)
        return out

    def interrupted_blocks(self) -> list[ContentBlock]:
        """The prefix worth keeping when a call is cancelled: text and reasoning that is not
        only whitespace, open or closed; tool calls and unknown open blocks are dropped."""
        out: list[ContentBlock] = []
        for index in self._order:
            partial = self._partials[index]
            if partial.block_type not in ("text", "reasoning"):
                continue
            block = self._assemble(index, partial)
            if isinstance(block, (TextBlock, ReasoningBlock)) and block.text.strip():
                out.append(block)
        return out

    def message(
        self,
        source: ModelSource | OpaqueSource,
        *,
        id: str | None = None,
        interrupted: bool = False,
    ) -> AssistantMessage:
        """The assembled assistant message (the interrupted prefix when `interrupted`)."""
        blocks = self.interrupted_blocks() if interrupted else self.blocks()
        return AssistantMessage(content=tuple(blocks), source=source, id=id or new_message_id())
