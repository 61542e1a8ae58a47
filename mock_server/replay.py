"""Session logs served as SSE: replay scripts of `chunks` steps for the mock server.

`harness.replay` derives one entry per logged model call (overrides, children and placeholders
included); this module turns each `SessionScript` into a mock-server `Script` of `chunks` steps,
in the same order, so that live sessions claim them in first-call order (dsh-testing.md §2.8)
and the real adapter parses what :mod:`mock_server.chunk_wire` re-encodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness.replay import ReplayEntry, SessionScript, load_session_scripts
from mock_server.scripts import ChunksSpec, ChunksStep, Script

__all__ = ["entry_step", "session_log_scripts", "session_scripts_to_mock"]


def entry_step(entry: ReplayEntry, *, ready_dir: Path | None = None, label: str | None = None) -> ChunksStep:
    """The `chunks` step serving one replay entry."""
    ready = entry.ready_file
    if ready is not None and ready_dir is not None and not Path(ready).is_absolute():
        ready = str(ready_dir / ready)
    chunks = list(entry.chunks)
    if entry.kind == "hang":
        chunks = [
            {"type": "block-start", "index": 0, "blockType": "text"},
            {"type": "text-delta", "index": 0, "text": "partial"},
        ]
    return ChunksStep(
        label=label or entry.where or None,
        chunks=ChunksSpec(
            kind=entry.kind, chunks=chunks, message=entry.message, code=entry.code, ready_file=ready
        ),
    )


def session_scripts_to_mock(
    scripts: Sequence[SessionScript], *, ready_dir: Path | None = None
) -> list[Script]:
    """One mock-server script per logged session, primary first."""
    out: list[Script] = []
    for i, s in enumerate(scripts):
        steps = [
            entry_step(e, ready_dir=ready_dir, label=f"call {k + 1} ({e.where or e.kind})")
            for k, e in enumerate(s.entries)
        ]
        if not steps:
            continue
        out.append(Script(name=f"{Path(s.source).name}#{i}", steps=steps))
    return out


def session_log_scripts(path: str | Path, *, ready_dir: Path | None = None) -> list[Script]:
    """Load a session log (its children and sidecar too) as mock-server scripts."""
    return session_scripts_to_mock(load_session_scripts(path), ready_dir=ready_dir)
