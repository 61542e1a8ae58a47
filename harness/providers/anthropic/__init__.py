"""The Anthropic Messages provider (DeepSeek's second wire, `https://api.deepseek.com/anthropic`):
serialize → HTTP → SSE → translate, the same walk as the Chat Completions wire (`openai_chat`)."""

from .adapter import DEFAULT_BASE_URL, AnthropicAdapter
from .decoder import FastStreamDecoder, StreamDecoder
from .serialize import AnthropicConfig, encode_body, serialize
from .translate import Translator

__all__ = [
    "AnthropicAdapter",
    "AnthropicConfig",
    "DEFAULT_BASE_URL",
    "FastStreamDecoder",
    "StreamDecoder",
    "Translator",
    "encode_body",
    "serialize",
]
