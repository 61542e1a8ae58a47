"""The `dshkit` command: one entry point, one subcommand per capability.

Each subcommand lives in its own module with a `register(subparsers)` function (`dshkit.run`,
`dshkit.decode`, `dshkit.replay`, and the libraries' own `dshkit.mock_server.cli`, `dshkit.mock_server.record`,
`dshkit.conformance.cli`, `dshkit.view.cli`). `main` imports only the module of the command it is given,
so `dshkit run` never pays for loading the recorder, the conformance catalogue or the view, and the
top-level help (`dshkit --help`, `--version`, a mistyped command) imports none of them: it lists
each command with the one-line summary kept in `SUMMARIES` (a test holds it equal to what each
module registers).

Usage errors teach: a mistyped command or flag gets a did-you-mean, and a subcommand's bad flag
prints that subcommand's usage, not the top-level one.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Sequence
from importlib import import_module

__all__ = ["COMMANDS", "SUMMARIES", "build_parser", "main", "package_version"]

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

SUMMARIES: dict[str, str] = {
    "decode": "decode a wire capture into chunks, message, usage and finish",
    "run": "run one turn of the agent, showing the flow live",
    "serve": "run the mock DeepSeek server",
    "conformance": "run the adapter conformance catalogue (or the server checks with --server)",
    "record": "record exchanges with a DeepSeek-compatible endpoint into a cassette",
    "replay": "re-run a session log's prompts against its recorded model calls",
    "view": "write a self-contained HTML view of a session log, cassette, journal or conformance report",
}
"""Each subcommand's one-line help as its module registers it, so `dshkit --help` can list the
commands without importing them."""


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


def build_parser(only: str | None = None, *, lazy: bool = False) -> argparse.ArgumentParser:
    """The `dshkit` parser with every subcommand, or with just `only` (one of `COMMANDS`), whose
    module alone is then imported. A subcommand's own help and usage are the same either way.
    `lazy` lists every command by its summary without importing any (the top-level help): such
    a parser can print help and usage errors but cannot run a command."""
    parser = argparse.ArgumentParser(
        prog="dshkit",
        description="Wire-level testing toolkit for LLM agent harnesses and provider adapters.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in [only] if only is not None else COMMANDS:
        if lazy:
            sub.add_parser(name, help=SUMMARIES[name], add_help=False)
        else:
            import_module(COMMANDS[name]).register(sub)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand `argv` names when it is a known one and comes first (global options such
    as `--version` come before it and need the whole parser)."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    """`; did you mean 'x'?` for the choices close to `word` (flags compared without their
    dashes, so `--bogus` is not taken for `--verbose`), or nothing."""
    bare = {c.lstrip("-"): c for c in choices}
    near = difflib.get_close_matches(word.lstrip("-"), list(bare), n=2, cutoff=0.7)
    return f"; did you mean {' or '.join(repr(bare[n]) for n in near)}?" if near else ""


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]  # type: ignore[no-any-return]
    raise KeyError(name)  # pragma: no cover - every dshkit parser has its subcommands


def _unknown_command(parser: argparse.ArgumentParser, word: str) -> None:
    """Exit 2: `word` is not a command; the closest ones are suggested."""
    parser.error(f"unknown command {word!r}{_did_you_mean(word, list(COMMANDS))} "
                 f"(commands: {', '.join(COMMANDS)}; `dshkit --help` describes them)")


_PARSERS: dict[str, argparse.ArgumentParser] = {}
"""Each command's parser, built on its first `main` call in this process. Building one (every
option, its help, argparse's message lookups) cost more than some commands' whole work on a
small file, and callers that run `main` many times in one process (the test suite, a harness
driving dshkit in-process) paid it on every call. A parser holds no state of a call: defaults
that depend on the environment are read when the command runs, and `_parse` gives each call its
own copy of a list default (`append` options), so no call can change what the next one sees."""


def _command_parser(command: str) -> argparse.ArgumentParser:
    parser = _PARSERS.get(command)
    if parser is None:
        parser = _PARSERS[command] = build_parser(command)
    return parser


def _parse(parser: argparse.ArgumentParser, command: str, arguments: list[str]) -> argparse.Namespace:
    """Parse a subcommand's line; what the subcommand does not know is an error in *its* usage,
    with the closest flag suggested."""
    args, extras = parser.parse_known_args(arguments)
    for action in _subparser(parser, command)._actions:
        value = getattr(args, action.dest, None)
        if isinstance(value, list) and value is action.default:  # the parser's own list: this call's copy
            setattr(args, action.dest, list(value))
    if extras:
        sub = _subparser(parser, command)
        flags = [o for action in sub._actions for o in action.option_strings]
        first = next((e for e in extras if e.startswith("-")), extras[0])
        hint = _did_you_mean(first.split("=", 1)[0], flags) if first.startswith("-") else ""
        sub.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    command = _command_of(arguments)
    if command is None:
        # Top-level help, --version or a usage error: no subcommand module is needed for any.
        lazy = build_parser(lazy=True)
        if arguments and not arguments[0].startswith("-"):
            _unknown_command(lazy, arguments[0])
        parsed = lazy.parse_args(arguments)  # exits, unless global options came before a command
        command = parsed.command
        arguments = arguments[arguments.index(command):] if command in arguments else arguments
    if command == "serve":  # imported before the server, to start it sooner (see `serving`)
        from dshkit.mock_server.startup import serving

        with serving(own_process=argv is None):  # no argv: this process is the command
            return _run(command, arguments)
    return _run(command, arguments)


def _run(command: str, arguments: list[str]) -> int:
    parser = _command_parser(command)
    args = _parse(parser, command, arguments)
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
