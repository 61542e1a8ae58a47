"""Retry classification and the provider retry policy (dsh-core.md §2.6, §3.9).

The loop retries a failed call inside the same step. This module only decides: whether a
failure is retryable under a policy, and how long to wait before attempt `retry` (1-based).
Time and randomness are injected so tests assert on delays instead of waiting for them.
"""

from __future__ import annotations

import json
import random as _random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from .chunks import LlmFailure
from .errors import ErrorCode, UsageError

__all__ = [
    "DEFAULT_RETRYABLE_CODES",
    "MAX_TIMER_DELAY_MS",
    "Backoff",
    "RetryPolicy",
    "is_retryable",
    "retry_delay_ms",
]

MAX_TIMER_DELAY_MS = 2**31 - 1
DEFAULT_RETRYABLE_CODES: tuple[str, ...] = (
    ErrorCode.EMPTY_RESPONSE,
    ErrorCode.RATE_LIMIT,
    ErrorCode.SERVER,
    ErrorCode.TIMEOUT,
    ErrorCode.TRANSPORT,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Backoff:
    """Exponential backoff: `initial * 2**(retry-1)`, capped at `max`, with ± `jitter` spread."""

    initial_delay_ms: float = 500
    max_delay_ms: float = 10_000
    jitter_ratio: float = 0.1

    def __post_init__(self) -> None:
        for name in ("initial_delay_ms", "max_delay_ms"):
            value = getattr(self, name)
            if not (0 < value <= MAX_TIMER_DELAY_MS):
                raise UsageError(f"Backoff.{name} must be in (0, {MAX_TIMER_DELAY_MS}], got {value}")
        if self.initial_delay_ms > self.max_delay_ms:
            raise UsageError("Backoff.initial_delay_ms must not exceed max_delay_ms")
        if not (0 <= self.jitter_ratio <= 1):
            raise UsageError(f"Backoff.jitter_ratio must be in [0, 1], got {self.jitter_ratio}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """`normal` retries the listed codes up to `max_retries` times; `always` retries every
    failure without bound (for unattended runs)."""

    mode: Literal["normal", "always"] = "normal"
    max_retries: int = 5
    retryable_codes: tuple[str, ...] = DEFAULT_RETRYABLE_CODES
    backoff: Backoff = field(default_factory=Backoff)

    def __post_init__(self) -> None:
        if self.mode not in ("normal", "always"):
            raise UsageError(f"RetryPolicy.mode must be 'normal' or 'always', got {self.mode!r}")
        if self.max_retries < 0:
            raise UsageError("RetryPolicy.max_retries must be a non-negative integer")
        codes = self.retryable_codes
        if any(not c for c in codes) or len(set(codes)) != len(codes):
            raise UsageError("RetryPolicy.retryable_codes must be non-empty unique strings")

    @property
    def key(self) -> str:
        """Identity of the policy, so a retry chain restarts when the policy changes."""
        b = self.backoff
        if self.mode == "always":
            parts: list[object] = [self.mode, b.initial_delay_ms, b.max_delay_ms, b.jitter_ratio]
        else:
            parts = [
                self.mode,
                self.max_retries,
                sorted(self.retryable_codes),
                b.initial_delay_ms,
                b.max_delay_ms,
                b.jitter_ratio,
            ]
        return json.dumps(parts, separators=(",", ":"))


def is_retryable(failure: LlmFailure, policy: RetryPolicy | None = None) -> bool:
    """Whether `failure` is worth another attempt under `policy` (default policy if None)."""
    policy = policy or RetryPolicy()
    return policy.mode == "always" or failure.code in policy.retryable_codes


def retry_delay_ms(
    policy: RetryPolicy,
    failure: LlmFailure,
    retry: int,
    *,
    random: Callable[[], float] = _random.random,
) -> float | None:
    """The wait before attempt `retry` (1-based), or None when the policy gives up.

    A provider's Retry-After within `max_delay_ms` is used verbatim (no jitter); a longer one
    makes the normal policy give up rather than hammer the provider early.
    """
    if not is_retryable(failure, policy):
        return None
    if policy.mode == "normal" and retry > policy.max_retries:
        return None
    b = policy.backoff
    after = failure.provider_retry_after_ms
    if after is not None and after > 0:
        if after <= b.max_delay_ms:
            return after
        if policy.mode == "normal":
            return None
    base = min(b.initial_delay_ms * 2.0 ** (retry - 1), b.max_delay_ms)
    j = b.jitter_ratio
    spread: float = 1 - j + 2 * j * random()
    return min(base * spread, b.max_delay_ms)
