"""The Anthropic Messages provider (DeepSeek's second wire, `https://api.deepseek.com/anthropic`):
serialize → HTTP → SSE → translate, the same walk as the Chat Completions wire (`openai_chat`)."""

from .adapter import ANTHROPIC_VERSION, DEFAULT_BASE_URL, AnthropicAdapter
from .decoder import FastStreamDecoder, StreamDecoder
from .failures import failure_from_error_event, failure_from_exception, failure_from_response
from .serialize import (
    ANTHROPIC_EFFORTS,
    DEFAULT_MAX_TOKENS,
    REPLAY_PROTOCOL,
    AnthropicConfig,
    encode_body,
    resolve_thinking,
    serialize,
)
from .translate import Translator, events_from_message, map_stop_reason, map_usage

__all__ = [
    "ANTHROPIC_EFFORTS",
    "ANTHROPIC_VERSION",
    "AnthropicAdapter",
    "AnthropicConfig",
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_TOKENS",
    "FastStreamDecoder",
    "REPLAY_PROTOCOL",
    "StreamDecoder",
    "Translator",
    "encode_body",
    "events_from_message",
    "failure_from_error_event",
    "failure_from_exception",
    "failure_from_response",
    "map_stop_reason",
    "map_usage",
    "resolve_thinking",
    "serialize",
]
