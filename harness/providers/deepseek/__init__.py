"""The DeepSeek provider: serialize → HTTP → SSE → translate, per the seed's walk."""

from .adapter import DEFAULT_BASE_URL, DeepSeekAdapter
from .decoder import StreamDecoder
from .failures import (
    classify_status,
    failure_from_error_object,
    failure_from_exception,
    failure_from_http,
    parse_retry_after_ms,
    request_id_of,
)
from .serialize import REASONING_EFFORTS, DeepSeekConfig, encode_body, resolve_thinking, serialize
from .sse import SSEComment, SSEDecoder, SSEEvent
from .translate import Translator, map_finish_reason, map_usage

__all__ = [
    "DEFAULT_BASE_URL",
    "DeepSeekAdapter",
    "DeepSeekConfig",
    "REASONING_EFFORTS",
    "SSEComment",
    "SSEDecoder",
    "SSEEvent",
    "StreamDecoder",
    "Translator",
    "classify_status",
    "encode_body",
    "failure_from_error_object",
    "failure_from_exception",
    "failure_from_http",
    "map_finish_reason",
    "map_usage",
    "parse_retry_after_ms",
    "request_id_of",
    "resolve_thinking",
    "serialize",
]
