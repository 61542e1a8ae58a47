"""The catalogue against both real adapters."""

from __future__ import annotations

from conformance import load_catalogue, run_catalogue
from harness.providers.deepseek import DeepSeekAdapter
from harness.providers.openai_compat import OpenAICompatAdapter

#: What the openai SDK hides from OpenAICompatAdapter (declared on its capabilities).
SDK_NOT_APPLICABLE = {
    "sse-blocks-without-data", "sse-byte-order-mark", "end-eof-after-finish-flagged",
    "end-done-unterminated-flagged", "end-done-without-finish-reason", "err-inband-error-keeps-usage",
}


async def test_catalogue_passes_on_deepseek_adapter() -> None:
    results = await run_catalogue(load_catalogue(), DeepSeekAdapter)
    assert {r.id: r.diff for r in results if r.status != "pass"} == {}


async def test_catalogue_on_openai_compat_adapter() -> None:
    results = await run_catalogue(load_catalogue(), OpenAICompatAdapter)
    assert {r.id: r.diff for r in results if r.status == "fail"} == {}
    assert {r.id for r in results if r.status == "n/a"} == SDK_NOT_APPLICABLE
    reasons = {r.id: r.reason for r in results if r.status == "n/a"}
    assert reasons["err-inband-error-keeps-usage"] == (
        "the adapter declares no error_usage capability (reads the usage on the chunk that carries an in-band error)"
    )
