"""The OpenAI-style Chat Completions base that the DeepSeek and openai-SDK adapters extend:
`GenerateOptions` → request body (`serialize`, with a server family's `ChatProfile`) and wire
chunks → `StreamChunk`s (`Translator`; `StreamDecoder` from body bytes, `FastStreamDecoder` the
same with its fast paths)."""

from .decoder import StreamDecoder
from .fast_decoder import FastStreamDecoder
from .profile import ChatProfile
from .serialize import encode_body, serialize
from .translate import Translator

__all__ = [
    "ChatProfile",
    "FastStreamDecoder",
    "StreamDecoder",
    "Translator",
    "encode_body",
    "serialize",
]
