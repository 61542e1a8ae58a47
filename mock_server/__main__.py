"""`python -m dshkit.mock_server serve ...`: the `dshkit serve` command without the root CLI."""

from __future__ import annotations

import argparse
import sys

from dshkit.mock_server import record
from dshkit.mock_server.cli import register


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dshkit.mock_server")
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub)
    record.register(sub)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
