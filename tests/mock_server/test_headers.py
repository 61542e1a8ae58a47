"""dshkit's DeepSeek adapter takes the mock's `x-ds-trace-id` as a failed call's request id.

The headers themselves, on both wires, are checked with the official SDKs in
`tests/mock_server/test_chat.py` (`deepseek_headers` lives in `mock_server/chat.py`).
"""

from __future__ import annotations

import re

from dshkit.harness.llm import GenerateOptions, UserMessage
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.mock_server import MockServerFactory, Script

TRACE = re.compile(r"^[0-9a-f]{32}$")


async def test_dshkit_adapter_takes_the_trace_id_as_the_request_id(dshkit_mock_server: MockServerFactory) -> None:
    server = await dshkit_mock_server(Script.of("server_error"))
    adapter = DeepSeekAdapter(server.base_url, "k")
    try:
        options = GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=(UserMessage.text("hi"),))
        chunks = [c async for c in adapter.stream(options)]
    finally:
        await adapter.aclose()
    failure = chunks[-1].reason.failure  # type: ignore[attr-defined]
    assert failure.code == "SERVER" and failure.request_id is not None and TRACE.match(failure.request_id)
    assert server.journal.last.status == 500
