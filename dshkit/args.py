"""Argparse value types shared by the subcommands: each rejects a bad value as a usage error
(exit 2, naming the value) before any work starts."""

from __future__ import annotations

import argparse
from urllib.parse import urlsplit

__all__ = ["http_url", "non_negative_int", "positive_float", "positive_int"]


def positive_int(text: str) -> int:
    """An argparse type for counts that must be at least 1 (a zero or negative step budget
    would never end a turn)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """An argparse type for limits where 0 means "none" (`--max-retries 0`: never retry)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def positive_float(text: str) -> float:
    """An argparse type for durations in seconds that must be above zero (zero would time out
    every call at once)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds above 0, got {text}")
    return value


def http_url(text: str) -> str:
    """An argparse type for endpoint URLs: checked before any connection is tried, so a missing
    scheme is a usage error at once instead of a run of retries that end in a transport error."""
    try:
        parts = urlsplit(text)
        port = parts.port  # raises on a port that is not a number in 0..65535
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an http(s) URL; write it with its scheme, e.g. http://{text.split('://')[-1] or 'localhost:8000'}"
        )
    if port == 0:
        raise argparse.ArgumentTypeError(f"{text!r} names port 0, which no server listens on")
    return text
