"""The `dshkit` command: one entry point, one subcommand per capability."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "main"]


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
