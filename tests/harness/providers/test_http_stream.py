"""The shared HTTP half of the httpx adapters (`dshkit.harness.providers.http_stream`)."""

from __future__ import annotations

import ssl

import pytest

from dshkit.harness.providers.anthropic import AnthropicAdapter
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.harness.providers.http_stream import default_ssl_context


async def test_new_adapters_reuse_one_verifying_tls_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading a CA bundle costs 60-130 ms of CPU; an adapter per call (as a conformance run makes)
    must not pay it each time, and sharing must not turn verification off."""
    first = DeepSeekAdapter("https://example.invalid", "sk-x")
    loads: list[object] = []
    original = ssl.SSLContext.load_verify_locations

    def counting(self: ssl.SSLContext, *args: object, **kwargs: object) -> None:
        loads.append(args)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counting)
    adapters = [DeepSeekAdapter("https://example.invalid", "sk-x") for _ in range(5)]
    adapters += [AnthropicAdapter("https://example.invalid", "sk-x") for _ in range(5)]
    try:
        assert loads == []
    finally:
        for adapter in [first, *adapters]:
            await adapter.aclose()
    context = default_ssl_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


def test_an_http_adapter_without_a_request_builder_cannot_be_made() -> None:
    """`build_request` is the one thing a subclass must add; forgetting it fails at construction,
    not on the first call."""
    from dshkit.harness.providers.http_stream import HttpAdapter

    class Incomplete(HttpAdapter):
        pass

    with pytest.raises(TypeError, match="build_request"):
        Incomplete(  # type: ignore[abstract]
            base_url="http://127.0.0.1:1", api_key="sk-x", user_id=None, client=None, transport=None,
            connect_timeout_s=1.0, idle_timeout_s=1.0, decoder=lambda: None,  # type: ignore[arg-type,return-value]
        )
