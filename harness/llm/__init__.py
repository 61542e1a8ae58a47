"""Provider-neutral LLM vocabulary: blocks, messages, stream chunks, assembly, errors, retry.

This package imports nothing else from dshkit; every other package builds on it. It exports what
an adapter's writer and a caller of an adapter need (docs/api.md); the other chunk and block kinds
(`TextDelta`, `BlockStart`, `ReasoningBlock`, …), the JSON codec and the rest are imported from
their own modules (`chunks`, `messages`, `codec`, `errors`, …).

The names below are imported from their modules on first use (PEP 562), so importing one
module of the package does not load the rest: the mock server (`dshkit serve`) needs only
`errors` and `jsonio`, not the messages, chunks, assembler and codec.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from dshkit.harness.lazy import lazy_attributes as _lazy_attributes

if _TYPE_CHECKING:
    from .adapter import Adapter, AdapterCapabilities
    from .assembler import BlockAssembler
    from .chunks import Finish, FinishReason, LlmFailure, StreamChunk, TokenUsage
    from .errors import ErrorCode, HarnessError
    from .messages import AssistantMessage, Message, TextBlock, ToolCallBlock, UserMessage
    from .options import GenerateOptions, ToolSchema
    from .stream_state import StreamState

_LAZY: dict[str, str] = {
    "Adapter": "adapter",
    "AdapterCapabilities": "adapter",
    "AssistantMessage": "messages",
    "BlockAssembler": "assembler",
    "ErrorCode": "errors",
    "Finish": "chunks",
    "FinishReason": "chunks",
    "GenerateOptions": "options",
    "HarnessError": "errors",
    "LlmFailure": "chunks",
    "Message": "messages",
    "StreamChunk": "chunks",
    "StreamState": "stream_state",
    "TextBlock": "messages",
    "TokenUsage": "chunks",
    "ToolCallBlock": "messages",
    "ToolSchema": "options",
    "UserMessage": "messages",
}
"""Each name of `__all__` and the module of this package that defines it."""


__getattr__ = _lazy_attributes(__name__, _LAZY)


__all__ = [
    "Adapter",
    "AdapterCapabilities",
    "AssistantMessage",
    "BlockAssembler",
    "ErrorCode",
    "Finish",
    "FinishReason",
    "GenerateOptions",
    "HarnessError",
    "LlmFailure",
    "Message",
    "StreamChunk",
    "StreamState",
    "TextBlock",
    "TokenUsage",
    "ToolCallBlock",
    "ToolSchema",
    "UserMessage",
]
