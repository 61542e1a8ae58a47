"""Retry classification and delays (dsh-core.md §2.6, §3.9)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshkit.harness.llm import LlmFailure
from dshkit.harness.llm.errors import UsageError
from dshkit.harness.llm.retry import (
    DEFAULT_RETRYABLE_CODES,
    MAX_TIMER_DELAY_MS,
    Backoff,
    RetryPolicy,
    is_retryable,
    retry_delay_ms,
)

NO_JITTER = RetryPolicy(backoff=Backoff(jitter_ratio=0))


def failure(code: str = "SERVER", after: float | None = None) -> LlmFailure:
    return LlmFailure(message="x", code=code, provider_retry_after_ms=after)


def test_defaults() -> None:
    policy = RetryPolicy()
    assert policy.mode == "normal" and policy.max_retries == 5
    assert set(DEFAULT_RETRYABLE_CODES) == {"EMPTY_RESPONSE", "RATE_LIMIT", "SERVER", "TIMEOUT", "TRANSPORT"}
    assert (policy.backoff.initial_delay_ms, policy.backoff.max_delay_ms, policy.backoff.jitter_ratio) == (500, 10_000, 0.1)


@pytest.mark.parametrize("code", ["EMPTY_RESPONSE", "RATE_LIMIT", "SERVER", "TIMEOUT", "TRANSPORT"])
def test_retryable(code: str) -> None:
    assert is_retryable(failure(code))


@pytest.mark.parametrize(
    "code",
    ["STREAM_CLOSED", "MALFORMED_RESPONSE", "AUTH", "QUOTA", "INVALID_REQUEST", "CONTEXT_WINDOW_EXCEEDED", "CONTENT_FILTER", "ABORTED"],
)
def test_not_retryable(code: str) -> None:
    assert not is_retryable(failure(code))
    assert retry_delay_ms(RetryPolicy(), failure(code), 1) is None
    assert is_retryable(failure(code), RetryPolicy(mode="always"))


def test_exponential_delays_capped() -> None:
    delays = [retry_delay_ms(NO_JITTER, failure(), n) for n in range(1, 6)]
    assert delays == [500, 1000, 2000, 4000, 8000]
    capped = RetryPolicy(max_retries=10, backoff=Backoff(jitter_ratio=0))
    assert retry_delay_ms(capped, failure(), 6) == 10_000
    assert retry_delay_ms(capped, failure(), 10) == 10_000


def test_gives_up_after_max_retries_in_normal_mode() -> None:
    assert retry_delay_ms(NO_JITTER, failure(), 5) == 8000
    assert retry_delay_ms(NO_JITTER, failure(), 6) is None
    always = RetryPolicy(mode="always", backoff=Backoff(jitter_ratio=0))
    assert retry_delay_ms(always, failure("AUTH"), 100) == 10_000


def test_retry_after_used_verbatim_within_max() -> None:
    policy = RetryPolicy()  # with jitter: Retry-After must not be jittered
    assert retry_delay_ms(policy, failure("RATE_LIMIT", 1234.5), 1, random=lambda: 0.99) == 1234.5
    assert retry_delay_ms(policy, failure("RATE_LIMIT", 10_000), 3, random=lambda: 0.0) == 10_000


def test_retry_after_beyond_max() -> None:
    # normal mode gives up rather than retry early; always mode falls back to local backoff
    assert retry_delay_ms(RetryPolicy(), failure("RATE_LIMIT", 10_001), 1) is None
    always = RetryPolicy(mode="always", backoff=Backoff(jitter_ratio=0))
    assert retry_delay_ms(always, failure("RATE_LIMIT", 60_000), 2) == 1000


def test_jitter_bounds_with_injected_random() -> None:
    policy = RetryPolicy()  # jitter 0.1
    assert retry_delay_ms(policy, failure(), 1, random=lambda: 0.0) == pytest.approx(450)
    assert retry_delay_ms(policy, failure(), 1, random=lambda: 0.5) == pytest.approx(500)
    assert retry_delay_ms(policy, failure(), 1, random=lambda: 1.0) == pytest.approx(550)
    # the jittered delay is capped at max again
    assert retry_delay_ms(RetryPolicy(max_retries=9), failure(), 9, random=lambda: 1.0) == 10_000


@given(st.integers(1, 5), st.floats(0, 1, exclude_max=True))
def test_jitter_property(retry: int, r: float) -> None:
    delay = retry_delay_ms(RetryPolicy(), failure(), retry, random=lambda: r)
    base = min(500 * 2 ** (retry - 1), 10_000)
    assert delay is not None and base * 0.9 - 1e-9 <= delay <= min(base * 1.1, 10_000) + 1e-9


@pytest.mark.parametrize(
    "make",
    [
        lambda: Backoff(initial_delay_ms=0),
        lambda: Backoff(max_delay_ms=MAX_TIMER_DELAY_MS + 1),
        lambda: Backoff(initial_delay_ms=2000, max_delay_ms=1000),
        lambda: Backoff(jitter_ratio=1.5),
        lambda: Backoff(jitter_ratio=-0.1),
        lambda: RetryPolicy(mode="sometimes"),  # type: ignore[arg-type]
        lambda: RetryPolicy(max_retries=-1),
        lambda: RetryPolicy(retryable_codes=("A", "A")),
        lambda: RetryPolicy(retryable_codes=("",)),
    ],
)
def test_validation(make: object) -> None:
    with pytest.raises(UsageError):
        make()  # type: ignore[operator]


def test_policy_key() -> None:
    a = RetryPolicy(retryable_codes=("SERVER", "AUTH"))
    b = RetryPolicy(retryable_codes=("AUTH", "SERVER"))
    assert a.key == b.key == '["normal",5,["AUTH","SERVER"],500,10000,0.1]'
    assert RetryPolicy(mode="always").key == '["always",500,10000,0.1]'
    assert RetryPolicy(max_retries=3).key != RetryPolicy().key
