"""`dshkit view PATH`: write the HTML view of a file and print its path (`--open` opens it)."""

from __future__ import annotations

import argparse
import re
import sys
import webbrowser
from pathlib import Path
from typing import Any

from .errors import ViewError
from .load import render_paths

__all__ = ["DEFAULT_VIEWS_DIR", "register", "view_command", "view_path_for"]

DEFAULT_VIEWS_DIR = Path(".dshkit") / "views"
"""Where views go by default: beside the sessions `dshkit run` writes, never inside `recordings/`."""

EPILOG = """\
examples:
  dshkit view .dshkit/sessions/ID.jsonl                 timeline of a session written by `dshkit run`
  dshkit view .dshkit/sessions/ID.jsonl --journal j.jsonl   …and diff each rebuilt request against
                                                        what `dshkit serve --journal j.jsonl` received
  dshkit view recordings/readme-walk.cassette.jsonl     every recorded read of a cassette, over time
  dshkit view j1.jsonl j2.jsonl                         journals of several `dshkit serve` instances,
                                                        merged into one page in arrival order
  dshkit view a.json b.json                             scenario × report matrix of conformance
                                                        reports (`dshkit conformance --json a.json`)
  dshkit view --open -o /tmp/walk.html SESSION.jsonl    write to a chosen file and open a browser

The page is one file: no server, no network, nothing fetched (inline style, no script).
"""


_SURROGATE = re.compile("[\ud800-\udfff]")


def view_path_for(source: Path) -> Path:
    """The default output file of a view: `.dshkit/views/<name>.html` under the current directory."""
    name = source.name
    for suffix in (".cassette.jsonl", ".jsonl", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return DEFAULT_VIEWS_DIR / f"{name}.html"


def view_command(args: argparse.Namespace) -> int:
    from dshkit.bundled import resolve

    paths = [resolve(p) for p in args.paths]
    try:
        html, _kind = render_paths(paths, journal=Path(args.journal) if args.journal else None)
    except ViewError as exc:
        print(f"dshkit view: {exc}", file=sys.stderr)
        return 2
    out = Path(args.output) if args.output else view_path_for(paths[0])
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        # A lone surrogate from a log (`"\\ud800"`) has no UTF-8 form; the page shows U+FFFD.
        if _SURROGATE.search(html):
            html = _SURROGATE.sub("\ufffd", html)
        out.write_text(html, encoding="utf-8")
    except OSError as exc:
        print(f"dshkit view: cannot write {out}: {exc}", file=sys.stderr)
        return 1
    print(out)
    if args.open and not webbrowser.open(out.resolve().as_uri()):
        print(f"dshkit view: no browser could be started; open {out} by hand", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "view",
        help="write a self-contained HTML view of a session log, cassette, journal or conformance report",
        description=(
            "Write one HTML file showing a session log (turns, steps, each model call with its request "
            "rebuilt from the log, shown as what it adds to the one before; chunk arrival; reasoning, "
            "answer and tool-call argument fragments; tool results, usage, retries and failures), a "
            "cassette or mock-server journal (each exchange, how it ended and its SSE events over time) "
            "or conformance JSON reports (a scenario × report matrix grouped by area, n/a reasons, "
            "each failure's diff). Every text is printed once and linked after, so a page grows with "
            "the log. Prints the path of the file. Exit status: 0 written, 1 cannot write, 2 a file "
            "it cannot show."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="a session log, cassette, journal, several journals (merged into one page), or "
                   "one or more conformance JSON reports")
    p.add_argument("--journal", metavar="FILE",
                   help="a mock-server journal (dshkit serve --journal FILE) to diff each rebuilt request against")
    p.add_argument("-o", "--output", metavar="FILE", help="where to write the page (default: .dshkit/views/NAME.html)")
    p.add_argument("--open", action="store_true", help="open the page in the default browser after writing it")
    p.set_defaults(func=view_command)
