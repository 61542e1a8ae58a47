"""The `grep` tool's matcher, run as a child process (`python -I -S grep_worker.py`).

A pattern such as `(a+)+$` on a line of many `a`s backtracks for hours, and Python's `re` holds
the GIL for the whole of one `search()`: in a thread it would still freeze the event loop, and
no thread can be stopped. A process can: the parent kills it at the call's deadline or when the
turn is cancelled. The parent keeps reading files through its `FileSystem` (so the workspace
confinement stays in one place) and sends each file's text; this process only compiles the
pattern and answers with the numbers of the matching lines. Only the standard library is
imported, so the child starts in milliseconds and needs nothing from the parent's path.

Protocol, one JSON object per line each way:
  parent: {"pattern": P}                     child: {"ok": true} | {"error": MESSAGE}
  parent: {"text": T, "max": N}  (per file)  child: {"lines": [n, ...]}  (at most N, 1-based)
The parent closes stdin when done.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

__all__ = ["main"]


def _send(out: Any, obj: object) -> None:
    out.write(json.dumps(obj) + "\n")
    out.flush()


def main() -> int:
    source, out = sys.stdin, sys.stdout
    header = source.readline()
    if not header:
        return 0
    try:
        pattern = re.compile(json.loads(header)["pattern"])
    except Exception as exc:  # noqa: BLE001 - re.error, OverflowError, RecursionError: all a bad pattern
        _send(out, {"error": str(exc) or type(exc).__name__})
        return 0
    _send(out, {"ok": True})
    for raw in source:
        request = json.loads(raw)
        left = int(request["max"])
        lines: list[int] = []
        if left > 0:
            for n, line in enumerate(request["text"].split("\n"), start=1):
                if pattern.search(line):
                    lines.append(n)
                    if len(lines) >= left:
                        break
        _send(out, {"lines": lines})
    return 0


if __name__ == "__main__":
    sys.exit(main())
