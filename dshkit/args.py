"""Argparse value types shared by the subcommands: each rejects a bad value as a usage error
(exit 2, naming the value) before any work starts."""

from __future__ import annotations

import argparse
from pathlib import Path
from urllib.parse import urlsplit

__all__ = [
    "backlog",
    "byte_limit",
    "http_url",
    "non_empty",
    "non_negative_int",
    "output_file",
    "port_number",
    "positive_float",
    "positive_int",
]

#: The largest value a C `int` holds: the kernel's listen backlog is one.
_C_INT_MAX = 2**31 - 1


def _whole(text: str, wanted: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}") from None


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


def non_negative_int(text: str) -> int:
    """An argparse type for counts, limits and delays where 0 means "none" (`--max-retries 0`:
    never retry)."""
    value = _whole(text, "a whole number >= 0")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def port_number(text: str) -> int:
    """An argparse type for a TCP port to listen on: 0 (any free port) to 65535, checked before
    anything tries to bind."""
    value = _whole(text, "a port number 0-65535")
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is out of range; use 0-65535 (0: any free port)")
    return value


def byte_limit(text: str) -> int:
    """An argparse type for a size limit in bytes: at least 1 (a limit of 0 or less would refuse
    every request body)."""
    value = _whole(text, "a number of bytes >= 1")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte, got {value}")
    return value


def backlog(text: str) -> int:
    """An argparse type for a listen backlog: 1 to 2147483647 (the kernel caps it at its own
    `somaxconn`)."""
    value = _whole(text, f"a whole number 1-{_C_INT_MAX}")
    if not 1 <= value <= _C_INT_MAX:
        raise argparse.ArgumentTypeError(f"{value} is out of range; use 1-{_C_INT_MAX}")
    return value


def non_empty(text: str) -> str:
    """An argparse type for a name that must not be empty or blank (a model id, a label)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"must not be empty, got {text!r}")
    return text


def output_file(text: str) -> str:
    """An argparse type for a file the command writes: not empty, not an existing directory, and
    under a path whose existing part is a directory (missing folders are created by the writer).
    Checked before any work starts, so a long run never ends in a write that cannot happen."""
    if not text:
        raise argparse.ArgumentTypeError("must be a file path, got ''")
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory; give the path of a file to write")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise argparse.ArgumentTypeError(
                    f"{text!r} cannot be created: {str(parent)!r} is a file, not a directory")
            break
    return text
