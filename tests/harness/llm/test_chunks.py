"""The stream vocabulary: the `Finish` constructors adapters build their failures with, and
which finishes count as a success."""

from __future__ import annotations

import pytest

from dshkit.harness.llm import ErrorCode, Finish, FinishReason, LlmFailure
from dshkit.harness.llm.chunks import FinishMeta, ProviderError


def test_finish_constructors() -> None:
    assert Finish.error("bad key", ErrorCode.AUTH) == Finish(
        reason=FinishReason(kind="error", failure=LlmFailure(message="bad key", code=ErrorCode.AUTH))
    )
    meta = FinishMeta(id="x")
    made = Finish.error(
        "slow down", ErrorCode.RATE_LIMIT, meta=meta, status=429, provider_retry_after_ms=2000.0,
        provider_error=ProviderError(type="rate_limit"),
    )
    assert made.meta == meta
    assert made.reason.failure == LlmFailure(
        message="slow down", code=ErrorCode.RATE_LIMIT, status=429, provider_retry_after_ms=2000.0,
        provider_error=ProviderError(type="rate_limit"),
    )
    failure = LlmFailure(message="m", code=ErrorCode.SERVER, status=503)
    assert Finish.failed(failure) == Finish(reason=FinishReason(kind="error", failure=failure))
    assert not Finish.failed(failure).reason.ok
    aborted = Finish.aborted()
    assert aborted.reason == FinishReason(
        kind="aborted", failure=LlmFailure(message="request aborted by caller", code=ErrorCode.ABORTED)
    )
    assert not aborted.reason.ok
    assert Finish.aborted("DeepSeek request aborted by caller").reason.failure == LlmFailure(
        message="DeepSeek request aborted by caller", code=ErrorCode.ABORTED
    )
    with pytest.raises(TypeError):
        Finish.error("m", ErrorCode.SERVER, not_a_field=1)


def test_only_error_and_aborted_finishes_are_failures() -> None:
    ok = ["stop", "tool-calls", "max-tokens", "pause_turn"]  # the kinds are merge-extensible
    assert [FinishReason(kind=k).ok for k in ok] == [True] * len(ok)
    assert [FinishReason(kind=k).ok for k in ("error", "aborted")] == [False, False]
