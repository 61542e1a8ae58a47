"""Provider-neutral LLM vocabulary: blocks, messages, stream chunks, assembly, errors, retry.

This package imports nothing else from dshkit; every other package builds on it. It exports what
an adapter's writer and a caller of an adapter need (docs/api.md); the other chunk and block kinds
(`TextDelta`, `BlockStart`, `ReasoningBlock`, …), the JSON codec and the rest are imported from
their own modules (`chunks`, `messages`, `codec`, `errors`, …).
"""

from .adapter import Adapter, AdapterCapabilities
from .assembler import BlockAssembler
from .chunks import Finish, FinishReason, LlmFailure, StreamChunk, TokenUsage
from .errors import ErrorCode, HarnessError
from .messages import AssistantMessage, Message, TextBlock, ToolCallBlock, UserMessage
from .options import GenerateOptions, ToolSchema
from .stream_state import StreamState

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
