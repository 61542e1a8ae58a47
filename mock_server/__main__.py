"""`python -m dshkit.mock_server serve ...`: the `dshkit serve` command without the root CLI."""

from __future__ import annotations

import argparse
import sys

from dshkit.mock_server.startup import serving


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["serve"]:  # before the server is imported, to start it sooner (see `serving`)
        with serving(own_process=argv is None):  # no argv: this process is the command
            return _run(arguments)
    return _run(arguments)


def _run(arguments: list[str]) -> int:
    from dshkit.mock_server import record
    from dshkit.mock_server.cli import register

    parser = argparse.ArgumentParser(prog="python -m dshkit.mock_server")
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub)
    record.register(sub)
    args = parser.parse_args(arguments)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
