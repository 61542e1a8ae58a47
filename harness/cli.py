"""The `dshkit` command: one entry point, one subcommand per capability."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    import conformance.cli
    import dshkit_view.cli
    import mock_server.cli
    import mock_server.record
    from harness import decode, replay, run

    parser = argparse.ArgumentParser(
        prog="dshkit",
        description="Wire-level testing toolkit for LLM agent harnesses and provider adapters.",
    )
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
