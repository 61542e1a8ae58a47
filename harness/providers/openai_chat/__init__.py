"""The OpenAI-style Chat Completions base that the DeepSeek and openai-SDK adapters extend:
`GenerateOptions` → request body (`serialize`, with a server family's `ChatProfile`) and wire
chunks → `StreamChunk`s (`Translator`; `StreamDecoder` from body bytes, `FastStreamDecoder` the
same with its fast paths)."""

from .decoder import StreamDecoder
from .fast_decoder import FastStreamDecoder
from .profile import REASONING_EFFORTS, ChatProfile, DeepSeekConfig, Passback, resolve_thinking
from .serialize import encode_body, serialize
from .translate import Translator, map_finish_reason, map_usage

__all__ = [
    "REASONING_EFFORTS",
    "ChatProfile",
    "DeepSeekConfig",
    "FastStreamDecoder",
    "Passback",
    "StreamDecoder",
    "Translator",
    "encode_body",
    "map_finish_reason",
    "map_usage",
    "resolve_thinking",
    "serialize",
]
