"""The replay scripts of a logged session: its log, its subagents' logs and its sidecar (§2.8).

`load_session_scripts` reads a session log (plain or zstd-compressed, told by its bytes),
derives one entry per call (`entries.py`), applies the override sidecar found beside it
(`override.py`) and adds the scripts of the subagent logs beside it, primary first and then by
`createdAt` and id, which is the order live sessions claim them in. DSH names the files
`session.jsonl`, `session.1.jsonl`, … and `replay.override.json`, or the same with `.zstd`
after `.jsonl`; the corpus prefixes each with `SCENARIO--`.
"""

from __future__ import annotations

import glob
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from dshkit.harness.llm import jsonio
from dshkit.harness.session import Session, parse_session_log

from .entries import ReplayError, SessionScript, derive_replay_script
from .override import parse_override

__all__ = ["load_log_session", "load_session_scripts", "log_stem"]

_log = logging.getLogger("dshkit.harness.replay")
_COMPRESSED = r"(?:\.zstd|\.zst)?"


def log_stem(path: Path) -> tuple[str, str]:
    """`(NAME, SUFFIX)` of `NAME.jsonl` or `NAME.jsonl.zstd`: siblings share NAME and take the
    same SUFFIX (`session.1.jsonl.zstd` beside `session.jsonl.zstd`)."""
    m = re.fullmatch(r"(.*)\.jsonl(" + _COMPRESSED + r")", path.name)
    return (m.group(1), m.group(2)) if m else (path.name, "")


def _children_of(primary: Path) -> list[Path]:
    """`NAME.1.jsonl`, `NAME.2.jsonl`, … next to `NAME.jsonl` (each may be compressed),
    contiguous from 1."""
    stem, _ = log_stem(primary)
    pattern = re.compile(re.escape(stem) + r"\.(\d+)\.jsonl" + _COMPRESSED)
    found: dict[int, Path] = {}
    for p in sorted(primary.parent.glob(f"{glob.escape(stem)}.*.jsonl*")):
        m = pattern.fullmatch(p.name)
        if m is None:
            continue
        n = int(m.group(1))
        if n in found:
            raise ReplayError(f"{primary}: child log {n} is there twice ({found[n].name} and {p.name}); keep one")
        found[n] = p
    numbers = sorted(found)
    if numbers != list(range(1, len(numbers) + 1)):
        raise ReplayError(f"{primary}: child logs must be numbered {stem}.1.jsonl, {stem}.2.jsonl, … without gaps; found {numbers}")
    return [found[n] for n in numbers]


def _override_of(primary: Path) -> Path | None:
    """`replay.override.json` beside `session.jsonl`, or `X--replay.override.json` beside
    `X--session.jsonl` (the corpus naming); `.zstd` after `.jsonl` changes nothing."""
    stem, _ = log_stem(primary)
    candidates = [primary.parent / "replay.override.json"] if stem == "session" else []
    if stem.endswith("session"):
        candidates.insert(0, primary.parent / (stem.removesuffix("session") + "replay.override.json"))
    return next((c for c in candidates if c.is_file()), None)


def load_log_session(path: Path) -> Session:
    """A log as recorded, for replay: validated leniently, not repaired, never written to.
    Unreadable lines after the last `turn/end` (a torn tail) are skipped with a warning; events
    that break a rule are kept as defects (`SessionEvent.defect`), each with a warning."""
    try:
        loaded = parse_session_log(path.read_bytes(), source=str(path), repair=False, lenient=True)
    except OSError as exc:
        raise ReplayError(f"{path}: cannot read the session log: {exc.strerror}") from None
    for defect in loaded.defects:
        _log.warning("%s (kept as a defect; it takes no part in replay)", defect)
    if loaded.dropped_lines:
        _log.warning(
            "%s: skipping %d unreadable line(s) after the last turn/end (a torn tail)",
            path, loaded.dropped_lines,
        )
    return loaded.session


def load_session_scripts(
    path: str | Path,
    *,
    children: Sequence[str | Path] | None = None,
    override: str | Path | Literal[False] | None = None,
    loaded: Session | None = None,
) -> list[SessionScript]:
    """The scripts of a logged session and its subagents: primary first, then children by
    `createdAt` and id (§2.8). `children` defaults to `NAME.N.jsonl` files beside the log;
    `override` to the sidecar beside it (False: none). The sidecar applies to the primary only.
    `loaded` is the primary log when the caller has already loaded it."""
    primary = Path(path)
    side = _override_of(primary) if override is None else (Path(override) if override else None)
    doc: Any = None
    if side is not None:
        try:
            doc = jsonio.loads(side.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:  # ValueError: not JSON, not UTF-8, nested too deeply
            raise ReplayError(f"{side}: cannot read the override sidecar: {exc}") from None
    session: Session | None = loaded
    if session is None and (primary.exists() or not isinstance(doc, list)):
        session = load_log_session(primary)
    if isinstance(doc, list):
        entries = parse_override(doc, None, source=str(side))
    else:
        assert session is not None
        entries = derive_replay_script(session.events, source=str(primary))
        if doc is not None:
            entries = parse_override(doc, entries, source=str(side))
    head = session.header if session is not None else None
    scripts = [
        SessionScript(
            session_id=head.id if head else "",
            created_at=head.created_at if head else 0,
            entries=tuple(entries),
            source=str(primary),
        )
    ]
    child_paths = [Path(c) for c in children] if children is not None else (
        _children_of(primary) if primary.exists() else []
    )
    kids: list[SessionScript] = []
    for child in child_paths:
        s = load_log_session(child)
        events = s.events[s.header.seed_length or 0 :]  # a fork's inherited prefix is not its own
        kids.append(
            SessionScript(
                session_id=s.header.id,
                created_at=s.header.created_at,
                entries=tuple(derive_replay_script(events, source=str(child))),
                source=str(child),
                primary=False,
            )
        )
    kids.sort(key=lambda k: (k.created_at, k.session_id))
    return scripts + kids
