"""Provider adapters, one subpackage per wire dialect or client library (`deepseek/` on the
OpenAI-style chat base `openai_chat/`, `openai_compat/` on the openai SDK, `anthropic/`,
`anthropic_sdk/`), and what they all share, once: the SSE decoder (`sse`), failures as data
(`failures`), the stream life cycle (`stream`) with its httpx and SDK sources (`http_stream`,
`sdk_stream`), and the slot-written chunks of the fast decoders (`slot_chunks`)."""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from .http_stream import (
        HttpAdapter,
        HttpSource,
        HttpWire,
        checked_api_key,
        default_ssl_context,
        harness_headers,
    )
    from .sdk_stream import SdkSource
    from .stream import WireDecoder, WireSource, run_stream

__all__ = [
    "HttpAdapter",
    "HttpSource",
    "HttpWire",
    "SdkSource",
    "WireDecoder",
    "WireSource",
    "checked_api_key",
    "default_ssl_context",
    "harness_headers",
    "run_stream",
]

_HOME = {
    "HttpAdapter": "http_stream", "HttpSource": "http_stream", "HttpWire": "http_stream",
    "checked_api_key": "http_stream", "default_ssl_context": "http_stream", "harness_headers": "http_stream",
    "SdkSource": "sdk_stream", "WireDecoder": "stream", "WireSource": "stream", "run_stream": "stream",
}
"""Where each name of the adapter-writing surface lives; imported on first use, so importing one
provider subpackage does not load the others' shared modules (the SDK source imports no SDK,
but keeps `dshkit run`'s start-up to what its adapter needs)."""


def __getattr__(name: str) -> _typing.Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_importlib.import_module(f"{__name__}.{home}"), name)
