"""The recordings and examples shipped inside the package, so the `--help` texts work anywhere.

`dshkit serve --replay recordings/readme-walk`, `dshkit run --replay recordings/readme-walk`,
`dshkit view recordings/readme-walk.cassette.jsonl` and `dshkit decode examples/seed-walk.sse`
name files of dshkit's repository. The wheel ships copies of them (`dshkit/recordings/`,
`dshkit/examples/`), and :func:`resolve` falls back to those copies: a relative path that names
nothing where it is given, and starts with `recordings/` or `examples/`, is read from the
package. A file of the user's own with that name always wins.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["BUNDLED_DIRS", "bundled_path", "resolve"]

BUNDLED_DIRS = ("recordings", "examples")
"""The folders of the repository the package ships (the `--help` texts' examples)."""
_CASSETTE_SUFFIX = ".cassette.jsonl"  # as dshkit.mock_server.cassette (not imported: a cold start)


def _exists(path: Path) -> bool:
    return path.exists() or (not path.name.endswith(_CASSETTE_SUFFIX)
                             and path.with_name(path.name + _CASSETTE_SUFFIX).exists())


def bundled_path(path: str | os.PathLike[str]) -> Path | None:
    """The package's copy of `recordings/...` or `examples/...`, or None when it ships none."""
    p = Path(path)
    if p.is_absolute() or not p.parts or p.parts[0] not in BUNDLED_DIRS or ".." in p.parts:
        return None
    candidate = Path(__file__).resolve().parent / p
    return candidate if _exists(candidate) else None


def resolve(path: str | os.PathLike[str]) -> Path:
    """`path` itself when it names something (a cassette `NAME` counts when `NAME.cassette.jsonl`
    exists), else the package's copy when it ships one, else `path` unchanged (so the caller's
    error names what the user typed)."""
    p = Path(path)
    if _exists(p):
        return p
    return bundled_path(p) or p
