"""The `dshkit` command: one entry point, one subcommand per capability.

Each subcommand lives in its own module with a `register(subparsers)` function (`dshkit.run`,
`dshkit.decode`, `dshkit.replay`, and the libraries' own `dshkit.mock_server.cli`, `dshkit.mock_server.record`,
`dshkit.conformance.cli`, `dshkit.view.cli`). `main` imports only the module of the command it is given,
so `dshkit run` never pays for loading the recorder, the conformance catalogue or the view; the
whole table is imported only to print the top-level help or to reject an unknown command.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import import_module

__all__ = ["COMMANDS", "build_parser", "main", "package_version"]

COMMANDS: dict[str, str] = {
    "decode": "dshkit.decode",
    "run": "dshkit.run",
    "serve": "dshkit.mock_server.cli",
    "conformance": "dshkit.conformance.cli",
    "record": "dshkit.mock_server.record",
    "replay": "dshkit.replay",
    "view": "dshkit.view.cli",
}
"""Each subcommand and the module whose `register(subparsers)` adds it, in the order `dshkit
--help` lists them."""


def package_version() -> str:
    """The installed dshkit version, from the package metadata (the one source of truth: the
    version in pyproject.toml, as installed); `unknown` when run from a tree never installed."""
    from importlib import metadata  # read only for --version: its import costs a cold start ~25 ms

    try:
        return metadata.version("dshkit")
    except metadata.PackageNotFoundError:
        return "unknown"


class _VersionAction(argparse.Action):
    """`--version`: prints the package version, looked up only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show program's version number and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        print(f"dshkit {package_version()}")  # on stdout, as argparse's own version action does
        parser.exit()


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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The `dshkit` parser with every subcommand, or with just `only` (one of `COMMANDS`), whose
    module alone is then imported. A subcommand's own help and usage are the same either way."""
    parser = argparse.ArgumentParser(
        prog="dshkit",
        description="Wire-level testing toolkit for LLM agent harnesses and provider adapters.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in [only] if only is not None else COMMANDS:
        import_module(COMMANDS[name]).register(sub)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand `argv` names when it is a known one and comes first (global options such
    as `--version` come before it and need the whole parser)."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_of(arguments))
    args = parser.parse_args(arguments)
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
