"""Session logs served as SSE: replay scripts of `chunks` steps for the mock server.

`dshkit.harness.session` (replay_scripts) derives one entry per logged model call (overrides, children and placeholders
included); this module turns each `SessionScript` into a mock-server `Script` of `chunks` steps,
in the same order, so that live sessions claim them in first-call order (dsh-testing.md §2.8)
and the real adapter parses what :mod:`dshkit.mock_server.chunk_wire` re-encodes.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from dshkit.harness.session import ReplayEntry, SessionScript, load_session_scripts
from dshkit.mock_server.cassette import (
    CASSETTE_SUFFIX,
    CassetteError,
    MatchMode,
    cassette_path,
    cassette_to_scripts,
    load_cassette,
)
from dshkit.mock_server.scripts import ChunksSpec, ChunksStep, Script, Step

__all__ = ["entry_step", "replay_scripts", "session_log_scripts", "session_scripts_to_mock"]


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
        steps: list[Step] = [
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


def replay_scripts(
    path: str | Path,
    *,
    speed: float = 1.0,
    resplit: int | None = None,
    match: MatchMode = "sequence",
    ready_dir: Path | None = None,
    warn: Callable[[str], None] | None = None,
) -> list[Script]:
    """Scripts replaying `path`: a cassette (`NAME`, `NAME.cassette.jsonl`) served byte for byte,
    or a session log (its header line says `"type": "session"`) served as re-encoded SSE.

    A cassette whose last line is torn (a recorder killed mid-write) still replays what it holds
    completely; the torn line is reported through `warn` (default: a `UserWarning`)."""
    p = Path(path)
    if not p.name.endswith(CASSETTE_SUFFIX) and p.suffix == ".jsonl" and p.is_file():
        with p.open("rb") as f:
            first = f.readline()
        try:
            kind = json.loads(first).get("type") if first.strip() else None
        except (ValueError, AttributeError):
            kind = None
        if kind == "session":
            return session_log_scripts(p, ready_dir=ready_dir)
    elif not cassette_path(p).exists() and not p.exists():
        raise CassetteError(
            "no such cassette or session log", source=str(cassette_path(p)),
            hint="record one with `dshkit record --upstream URL --out NAME`",
        )
    cassette = load_cassette(p)
    if cassette.torn_line is not None:
        message = (
            f"{cassette.source}:{cassette.torn_line}: the last line is torn (the recorder stopped "
            f"in the middle of writing it) and is not replayed; the {len(cassette.exchanges)} "
            "complete exchange(s) before it are"
        )
        if warn is None:
            warnings.warn(message, UserWarning, stacklevel=2)
        else:
            warn(message)
    return cassette_to_scripts(cassette, speed=speed, resplit=resplit, match=match)
