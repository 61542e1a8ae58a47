"""Provider-neutral LLM vocabulary: blocks, messages, stream chunks, assembly, errors, retry.

This package imports nothing else from dshkit; every other package builds on it.
"""

from .adapter import Adapter, AdapterCapabilities
from .assembler import BlockAssembler
from .chunks import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    LlmFailure,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    Usage,
)
from .codec import chunk_to_json, message_to_json
from .errors import ErrorCode, HarnessError, UsageError
from .messages import (
    AssistantMessage,
    ContentBlock,
    Message,
    ReasoningBlock,
    SystemMessage,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultMessage,
    UserMessage,
)
from .options import GenerateOptions, ToolSchema
from .stream_state import StreamState

__all__ = [
    "Adapter",
    "AdapterCapabilities",
    "AssistantMessage",
    "BlockAssembler",
    "BlockEnd",
    "BlockStart",
    "ContentBlock",
    "ErrorCode",
    "Finish",
    "FinishReason",
    "GenerateOptions",
    "HarnessError",
    "LlmFailure",
    "Message",
    "ReasoningBlock",
    "ReasoningDelta",
    "StreamChunk",
    "StreamState",
    "SystemMessage",
    "TextBlock",
    "TextDelta",
    "TokenUsage",
    "ToolCallBlock",
    "ToolCallDelta",
    "ToolResultBlock",
    "ToolResultMessage",
    "ToolSchema",
    "Usage",
    "UsageError",
    "UserMessage",
    "chunk_to_json",
    "message_to_json",
]
