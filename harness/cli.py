"""The `dshkit` command: one entry point, one subcommand per capability."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import metadata
from urllib.parse import urlsplit

__all__ = ["build_parser", "http_url", "main", "package_version", "positive_float", "positive_int"]


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


def package_version() -> str:
    """The installed dshkit version, from the package metadata (the one source of truth: the
    version in pyproject.toml, as installed); `unknown` when run from a tree never installed."""
    try:
        return metadata.version("dshkit")
    except metadata.PackageNotFoundError:
        return "unknown"


_EPILOG = """\
examples:
  dshkit run "Read README.md and tell me what the project does."   one agent turn, shown live
  dshkit view .dshkit/sessions/ID.jsonl            that session as one self-contained HTML page
  dshkit serve --sequence rate_limit,success       a mock DeepSeek server on 127.0.0.1
  dshkit record --upstream URL --out recordings/NAME   record a cassette through a proxy
  dshkit replay .dshkit/sessions/ID.jsonl          re-run a session against its recorded calls
  dshkit decode capture.sse                        what the adapter makes of captured bytes
  dshkit conformance --adapter mod:factory         hold an adapter to the conformance catalogue

`dshkit COMMAND --help` shows each command's options and more examples.
"""


def build_parser() -> argparse.ArgumentParser:
    import conformance.cli
    import dshkit_view.cli
    import mock_server.cli
    import mock_server.record
    from harness import decode, replay, run

    parser = argparse.ArgumentParser(
        prog="dshkit",
        description="Wire-level testing toolkit for LLM agent harnesses and provider adapters.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"dshkit {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    decode.register(sub)
    run.register(sub)
    mock_server.cli.register(sub)
    conformance.cli.register(sub)
    mock_server.record.register(sub)
    replay.register(sub)
    dshkit_view.cli.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return code


if __name__ == "__main__":
    sys.exit(main())
