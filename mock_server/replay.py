"""Recordings served by the mock server: session logs and cassettes turned into mock scripts.

The one place where something recorded becomes mock-server `Script`s. A session log (plain or
zstd-compressed, its subagents' logs and override sidecar included) becomes one script of
`chunks` steps per logged session, from the entries `dshkit.harness.replay` derives, in the same
order, so that live sessions claim them in first-call order (dsh-testing.md §2.8); serving a step
renders each call's plan on the request's wire (`chunk_wire`, `anthropic.replay`). A cassette
becomes scripts of raw steps that write the recorded reads byte for byte, one script per
recorded session. `replay_scripts` tells the two apart by their first line.
"""

from __future__ import annotations

import base64
import json
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from dshkit.harness.replay.entries import ReplayEntry, SessionScript
from dshkit.harness.replay.override import ready_path
from dshkit.harness.replay.scripts import load_session_scripts
from dshkit.harness.session.compression import decompress_log, is_compressed
from dshkit.mock_server.cassette import (
    _HOP_HEADERS,
    CASSETTE_SUFFIX,
    Cassette,
    CassetteError,
    RecordedExchange,
    cassette_path,
    load_cassette,
)
from dshkit.mock_server.generate.writes import WritePlan, plan_writes
from dshkit.mock_server.routing import HARNESS_SESSION_HEADER, SESSION_HEADER
from dshkit.mock_server.scripts import (
    ChunksSpec,
    ChunksStep,
    Match,
    RawSpec,
    RawStep,
    RawWrite,
    Script,
    Step,
    Timing,
)

__all__ = [
    "MatchMode",
    "cassette_to_scripts",
    "entry_step",
    "replay_scripts",
    "session_log_scripts",
    "session_scripts_to_mock",
]


# --- session logs -----------------------------------------------------------------------------


def entry_step(entry: ReplayEntry, *, ready_dir: Path | None = None, label: str | None = None) -> ChunksStep:
    """The `chunks` step serving one replay entry. A `hang`'s `readyFile` is resolved inside
    `ready_dir` (default: the working directory) and refused when it would leave it."""
    ready = None
    if entry.ready_file is not None:
        path = ready_path(entry.ready_file, ready_dir or Path.cwd(), where=f"{entry.where}.readyFile")
        path.parent.mkdir(parents=True, exist_ok=True)  # inside the workspace: checked above
        ready = str(path)
    return ChunksStep(
        label=label or entry.where or None,
        chunks=ChunksSpec(
            kind=entry.kind, chunks=list(entry.played_chunks), message=entry.message, code=entry.code,
            ready_file=ready,
        ),
    )


def session_scripts_to_mock(
    scripts: Sequence[SessionScript], *, ready_dir: Path | None = None
) -> list[Script]:
    """One mock-server script per logged session with calls, primary first (a session that
    logged no call has none)."""
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
    """Load a session log (its children and sidecar too) as mock-server scripts; a `hang`'s
    `readyFile` goes in `ready_dir`, by default the log's own folder."""
    p = Path(path)
    return session_scripts_to_mock(load_session_scripts(p), ready_dir=ready_dir or p.parent)


def _first_line_type(path: Path) -> object:
    """The `type` of a file's first JSON line (a zstd file's first decompressed line), or None."""
    with path.open("rb") as f:
        head = f.read(4)
        if is_compressed(head):
            first = decompress_log(head + f.read(), source=str(path)).partition(b"\n")[0]
        else:
            first = head + f.readline()
    try:
        value = json.loads(first) if first.strip() else None
    except (ValueError, RecursionError):
        return None
    return value.get("type") if isinstance(value, dict) else None


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
    or a session log (its header line says `"type": "session"`; plain or zstd-compressed, whatever
    its name) served as re-encoded SSE.

    A cassette whose last line is torn (a recorder killed mid-write) still replays what it holds
    completely; the torn line is reported through `warn` (default: a `UserWarning`)."""
    p = Path(path)
    if not p.name.endswith(CASSETTE_SUFFIX) and p.is_file() and _first_line_type(p) == "session":
        return session_log_scripts(p, ready_dir=ready_dir)
    if not cassette_path(p).exists() and not p.exists():
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


# --- cassettes --------------------------------------------------------------------------------

MatchMode = Literal["sequence", "body"]
"""How a replayed cassette's steps claim requests: in recorded order, or by an equal body."""


def _session_of(x: RecordedExchange) -> str:
    # The session headers `routing.session_of` reads; no API-key fallback: keys are scrubbed.
    h = {k.lower(): v for k, v in x.request.headers.items()}
    return h.get(SESSION_HEADER.lower()) or h.get(HARNESS_SESSION_HEADER) or ""


def _writes(x: RecordedExchange, scale: float, resplit: int | None) -> tuple[float, list[RawWrite]]:
    """(delay before the first write, the writes with the delay after each), in ms; recorded
    delays are multiplied by `scale`."""
    reads = [r for r in x.reads if r.data]
    if not reads:
        return 0.0, []
    if resplit is None:
        pieces = [(r.data, r.dt_ms) for r in reads]
    else:
        # New boundaries from a seeded plan; each new write starting in an old read takes that
        # read's delay, so the pacing stays roughly where it was.
        starts: dict[int, float] = {}
        pos = 0
        for r in reads:
            starts[pos] = r.dt_ms
            pos += len(r.data)
        plan = WritePlan(events_per_write=0, random_max=24, seed=resplit, inside_utf8=True)
        pieces = []
        pos = 0
        for piece in plan_writes(b"".join(r.data for r in reads), plan):
            dt = sum(d for s, d in starts.items() if pos <= s < pos + len(piece))
            pieces.append((piece, dt))
            pos += len(piece)
    first = pieces[0][1] * scale
    writes: list[RawWrite] = []
    for i, (data, _) in enumerate(pieces):
        after = pieces[i + 1][1] * scale if i + 1 < len(pieces) else 0.0
        try:
            writes.append(RawWrite(text=data.decode("utf-8"), delay_ms=after))
        except UnicodeDecodeError:
            writes.append(RawWrite(b64=base64.b64encode(data).decode("ascii"), delay_ms=after))
    return first, writes


def cassette_to_scripts(
    cassette: Cassette,
    *,
    speed: float = 1.0,
    resplit: int | None = None,
    match: MatchMode = "sequence",
    name: str | None = None,
) -> list[Script]:
    """Mock-server scripts of raw steps that serve the cassette's chat exchanges byte for byte.

    Exchanges are grouped by the session header they were recorded with (one script per
    recorded session, in first-request order, so live sessions claim them as §2.8 binds); with
    `match="body"` each step answers only a request whose body equals the recorded one.
    `speed` scales the recorded delays (0: no waiting); `resplit` re-cuts the bytes with a
    seeded plan to try other read boundaries.
    """
    if speed < 0:
        raise ValueError(f"speed must be >= 0, got {speed}")
    base = name or Path(cassette.source).name.removesuffix(CASSETTE_SUFFIX)
    scale = 0.0 if speed == 0 else 1.0 / speed
    groups: dict[str, list[tuple[int, RecordedExchange]]] = {}
    for n, x in enumerate(cassette.exchanges, 1):
        if x.is_chat:
            groups.setdefault(_session_of(x), []).append((n, x))
    scripts: list[Script] = []
    for g, items in enumerate(groups.values()):
        steps: list[Step] = []
        for n, x in items:
            first, writes = _writes(x, scale, resplit)
            headers = {k: v for k, v in x.headers.items() if k.lower() not in _HOP_HEADERS}
            steps.append(
                RawStep(
                    label=f"exchange {n}: {x.summary()}",
                    match=Match(body=x.request.body) if match == "body" and x.request.body is not None else None,
                    timing=Timing(headers_delay_ms=round(x.headers_ms * scale)),
                    raw=RawSpec(status=x.status, headers=headers, writes=writes, first_write_delay_ms=first,
                                end="reset" if x.cut is not None else "eof"),
                )
            )
        if steps:
            scripts.append(Script(name=base if len(groups) == 1 else f"{base}#{g}", steps=steps, recorded=True))
    if not scripts:
        raise CassetteError(
            "the cassette holds no POST …/chat/completions or /anthropic/…/messages exchange to replay", source=cassette.source
        )
    return scripts


