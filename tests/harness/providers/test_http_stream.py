"""The shared HTTP half of the httpx adapters (`dshkit.harness.providers.http_stream`), and its
TLS twin for the SDK adapters (`sdk_stream.sdk_ssl_context`)."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from dshkit.harness.llm import ErrorCode, Finish, GenerateOptions, UserMessage
from dshkit.harness.providers.anthropic import AnthropicAdapter
from dshkit.harness.providers.anthropic_sdk import AnthropicSDKAdapter
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.harness.providers.http_stream import HttpAdapter, default_ssl_context
from dshkit.harness.providers.openai_compat import OpenAICompatAdapter
from dshkit.harness.providers.sdk_stream import sdk_ssl_context

_REFUSAL = b'{"error":{"message":"bad key","type":"authentication_error"}}'
_RESPONSE = (
    b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"content-length: %d\r\n\r\n%s" % (len(_REFUSAL), _REFUSAL)
)


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, made by the openssl command."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed (apt-get install openssl)")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )
    return cert, key


@pytest_asyncio.fixture
async def tls_url(certificate: tuple[Path, Path]) -> AsyncIterator[str]:
    """An HTTPS server on 127.0.0.1:0 that refuses every request with a 401."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(_RESPONSE)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass  # a client that refused our certificate hangs up mid-handshake
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"https://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


@pytest.fixture
def fresh_tls_context() -> Iterator[None]:
    """The test changes the process-wide contexts: it gets its own, and later tests new ones."""
    default_ssl_context.cache_clear()
    sdk_ssl_context.cache_clear()
    yield
    default_ssl_context.cache_clear()
    sdk_ssl_context.cache_clear()


async def _finish(adapter: HttpAdapter | OpenAICompatAdapter | AnthropicSDKAdapter) -> Finish:
    options = GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=(UserMessage.text("hi"),))
    try:
        chunks = [c async for c in adapter.stream(options)]
    finally:
        await adapter.aclose()
    assert isinstance(chunks[-1], Finish)
    return chunks[-1]


@pytest.mark.usefixtures("fresh_tls_context")
async def test_every_adapter_verifies_tls_with_the_one_shared_context(
    tls_url: str, certificate: tuple[Path, Path]
) -> None:
    """Loading a CA bundle costs 60-130 ms of CPU, so the adapters share one verifying context
    instead of each building its own: a server whose certificate no CA vouches for is refused,
    and a CA added to the shared context is trusted by every adapter made after."""
    for make in (DeepSeekAdapter, AnthropicAdapter):
        refused = (await _finish(make(tls_url, "sk-x"))).reason.failure
        assert refused is not None and refused.code == ErrorCode.TRANSPORT
        assert "CERTIFICATE_VERIFY_FAILED" in refused.message, refused.message
    default_ssl_context().load_verify_locations(certificate[0])
    for make in (DeepSeekAdapter, AnthropicAdapter):
        trusted = (await _finish(make(tls_url, "sk-x"))).reason.failure
        assert trusted is not None and (trusted.code, trusted.status) == (ErrorCode.AUTH, 401), trusted
    context = default_ssl_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


@pytest.mark.usefixtures("fresh_tls_context")
async def test_the_sdk_adapters_verify_tls_with_their_one_shared_context(
    tls_url: str, certificate: tuple[Path, Path]
) -> None:
    """The SDK adapters' clients get the context each SDK would build for itself (httpx2's), but
    one per process: building it per client was three quarters of an SDK adapter's conformance
    run. Unknown certificates are refused; a CA added to the shared context is trusted by every
    SDK adapter made after (and by none of the httpx adapters, whose context is another)."""
    for make in (OpenAICompatAdapter, AnthropicSDKAdapter):
        refused = (await _finish(make(tls_url, "sk-x"))).reason.failure
        assert refused is not None and refused.code == ErrorCode.TRANSPORT, refused
    sdk_ssl_context().load_verify_locations(certificate[0])
    for make in (OpenAICompatAdapter, AnthropicSDKAdapter):
        trusted = (await _finish(make(tls_url, "sk-x"))).reason.failure
        assert trusted is not None and (trusted.code, trusted.status) == (ErrorCode.AUTH, 401), trusted
    still_refused = (await _finish(DeepSeekAdapter(tls_url, "sk-x"))).reason.failure
    assert still_refused is not None and "CERTIFICATE_VERIFY_FAILED" in still_refused.message, still_refused
    context = sdk_ssl_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


def test_an_http_adapter_without_a_request_builder_cannot_be_made() -> None:
    """`build_request` is the one thing a subclass must add; forgetting it fails at construction,
    not on the first call."""

    class Incomplete(HttpAdapter):
        pass

    with pytest.raises(TypeError, match="build_request"):
        Incomplete(  # type: ignore[abstract]
            base_url="http://127.0.0.1:1", api_key="sk-x", user_id=None, client=None, transport=None,
            connect_timeout_s=1.0, idle_timeout_s=1.0, decoder=lambda: None,  # type: ignore[arg-type,return-value]
        )
