"""The Anthropic Messages provider (DeepSeek's second wire, `https://api.deepseek.com/anthropic`):
serialize → HTTP → SSE → translate, the same walk as the Chat Completions wire (`openai_chat`).
The package exports the adapter and its configuration; the wire's parts are imported from their
modules (`serialize`, `decoder`, `translate`, `failures`)."""

from .adapter import AnthropicAdapter
from .serialize import AnthropicConfig

__all__ = [
    "AnthropicAdapter",
    "AnthropicConfig",
]
