"""The stream vocabulary: `StreamChunk` variants, `TokenUsage`, `FinishReason` and `LlmFailure`.

An adapter turns wire bytes into these chunks; the loop logs each one as `assistant/chunk` and
folds them with `BlockAssembler`. The shapes are DSH's (so DSH logs import unchanged) plus two
dshkit extensions: `LlmFailure.provider_error` and `Finish.meta`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from .messages import ContentBlock

__all__ = [
    "BlockEnd",
    "BlockStart",
    "BlockType",
    "Finish",
    "FinishKind",
    "FinishMeta",
    "FinishReason",
    "LlmFailure",
    "ProviderError",
    "ReasoningDelta",
    "StreamChunk",
    "TextDelta",
    "TokenUsage",
    "ToolCallDelta",
    "Usage",
]

BlockType: TypeAlias = str
"""`text`, `reasoning`, `tool-call`, … (merge-extensible, so a plain string)."""

FinishKind: TypeAlias = str
"""`stop`, `tool-calls`, `max-tokens`, `error`, `aborted` (merge-extensible)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenUsage:
    """Token counts of one call. The counts are disjoint: billed input is
    `input_tokens + cache_read_tokens + cache_write_tokens`."""

    input_tokens: int
    """Uncached input only."""
    output_tokens: int
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    """Part of `output_tokens` spent on reasoning."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderError:
    """The provider's own error fields, kept next to our failure class (dshkit extension)."""

    type: str | None = None
    code: str | None = None
    param: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LlmFailure:
    """Serializable facts about a failed call."""

    message: str
    code: str
    """Our class of failure: `RATE_LIMIT`, `SERVER`, `STREAM_CLOSED`, … (see `ErrorCode`)."""
    status: int | None = None
    provider_retry_after_ms: float | None = None
    request_id: str | None = None
    provider_error: ProviderError | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishReason:
    """Why a stream ended. `failure` is set exactly for `error` and `aborted`."""

    kind: FinishKind
    failure: LlmFailure | None = None

    @property
    def ok(self) -> bool:
        return self.kind not in ("error", "aborted")


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishMeta:
    """Response facts kept for telemetry (dshkit extension; DSH-log import ignores it)."""

    id: str | None = None
    model: str | None = None
    system_fingerprint: str | None = None
    done_missing: bool = False
    """The stream ended after a finish_reason but without a complete `data: [DONE]` event."""
    request_id: str | None = None


# --- the seven chunk variants ------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockStart:
    index: int
    block_type: BlockType
    type: Literal["block-start"] = "block-start"


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    index: int
    text: str
    type: Literal["text-delta"] = "text-delta"


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningDelta:
    index: int
    text: str
    type: Literal["reasoning-delta"] = "reasoning-delta"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallDelta:
    index: int
    id: str
    arguments_delta: str
    name: str | None = None
    type: Literal["tool-call-delta"] = "tool-call-delta"


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockEnd:
    index: int
    block: ContentBlock
    """The authoritative assembled block."""
    type: Literal["block-end"] = "block-end"


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    usage: TokenUsage
    type: Literal["usage"] = "usage"


@dataclass(frozen=True, slots=True, kw_only=True)
class Finish:
    """The terminal chunk. Failures are finishes of kind `error`/`aborted`, never exceptions."""

    reason: FinishReason
    replay_state: Any = None
    meta: FinishMeta | None = None
    type: Literal["finish"] = "finish"

    @classmethod
    def error(cls, message: str, code: str, *, meta: FinishMeta | None = None, **fields: Any) -> Finish:
        """An error finish: `fields` are the other `LlmFailure` fields (`status`,
        `provider_retry_after_ms`, `request_id`, `provider_error`)."""
        return cls.failed(LlmFailure(message=message, code=code, **fields), meta=meta)

    @classmethod
    def failed(cls, failure: LlmFailure, *, meta: FinishMeta | None = None) -> Finish:
        """An error finish for a failure already made (by a provider's failure mapping)."""
        return cls(reason=FinishReason(kind="error", failure=failure), meta=meta)

    @classmethod
    def aborted(cls, message: str = "request aborted by caller") -> Finish:
        """The finish of a call the caller aborted (`GenerateOptions.signal` was set)."""
        from .errors import ErrorCode  # errors builds on this module

        failure = LlmFailure(message=message, code=ErrorCode.ABORTED)
        return cls(reason=FinishReason(kind="aborted", failure=failure))


StreamChunk: TypeAlias = (
    BlockStart | TextDelta | ReasoningDelta | ToolCallDelta | BlockEnd | Usage | Finish
)
