"""Provider adapters, one subpackage per wire dialect or client library (`deepseek/` on the
OpenAI-style chat base `openai_chat/`, `openai_compat/` on the openai SDK, `anthropic/`,
`anthropic_sdk/`), and what they all share, once: the SSE decoder (`sse`), failures as data
(`failures`), the stream life cycle (`stream`) with its httpx and SDK sources (`http_stream`,
`sdk_stream`), and the slot-written chunks of the fast decoders (`slot_chunks`)."""

from __future__ import annotations

import typing as _typing

from dshkit.harness.lazy import lazy_attributes as _lazy_attributes

if _typing.TYPE_CHECKING:
    from .http_stream import HttpAdapter, HttpWire
    from .stream import run_stream

__all__ = [
    "HttpAdapter",
    "HttpWire",
    "run_stream",
]

_HOME = {"HttpAdapter": "http_stream", "HttpWire": "http_stream", "run_stream": "stream"}
"""Where each name of the adapter-writing surface lives; imported on first use, so importing one
provider subpackage does not load the others' shared modules. The rest of that surface
(`HttpSource`, `checked_api_key`, `harness_headers`, `default_ssl_context` in `http_stream`;
`WireSource`, `WireDecoder` in `stream`; `SdkSource` in `sdk_stream`) is imported from its module."""


__getattr__ = _lazy_attributes(__name__, _HOME)
