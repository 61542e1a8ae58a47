"""Which file is this, and its page: a session log, a cassette, a journal or conformance reports.

The kind is told from the content, not the name: a session log starts with a `{"type":
"session"}` header line, a cassette with `{"type": "cassette"}`, a journal line carries `path`
and `writes`, and a conformance report is one JSON document with `scenarios` and `summary`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dshkit.harness.llm import HarnessError
from dshkit.harness.session import parse_session_log
from dshkit.mock_server import CassetteError

from .errors import ViewError
from .pages import matrix_page, session_page, wire_page
from .sessions import build_session_view
from .wire import load_cassette_exchanges, load_journal

__all__ = ["KINDS", "detect_kind", "render_paths"]

KINDS = ("session", "cassette", "journal", "conformance")


def _first_json_line(text: str) -> Any:
    for line in text.splitlines():
        if line.strip():
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def detect_kind(path: Path) -> str:
    """One of `KINDS`; raises `ViewError` naming the file when it is none of them."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ViewError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ViewError(f"{path}: cannot read it ({exc})") from None
    first = _first_json_line(text)
    if isinstance(first, Mapping):
        if first.get("type") == "session":
            return "session"
        if first.get("type") == "cassette":
            return "cassette"
        if "writes" in first and "path" in first:
            return "journal"
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, Mapping) and "scenarios" in whole and "summary" in whole:
        return "conformance"
    raise ViewError(
        f"{path}: not a session log, cassette, journal or conformance report; pass a file written by "
        "`dshkit run` (.dshkit/sessions/*.jsonl), `dshkit record` (*.cassette.jsonl), "
        "`dshkit serve --journal FILE` or `dshkit conformance --json FILE`"
    )


def _chat_bodies(journal: Path, session_id: str) -> list[Mapping[str, Any]]:
    """The chat request bodies of `journal` that belong to the session: the adapter names its
    session in a header the server journals, so one journal may hold several runs."""
    if detect_kind(journal) != "journal":
        raise ViewError(f"{journal}: --journal expects a journal written by `dshkit serve --journal FILE`")
    chats = [x for x in load_journal(journal) if x.path.rstrip("/").endswith("/chat/completions")]
    own = [x for x in chats if x.session == session_id]
    return [x.body for x in (own or chats)]


def render_paths(paths: Sequence[Path], *, journal: Path | None = None) -> tuple[str, str]:
    """The page for `paths` and its kind. Several paths are allowed only for conformance reports
    (one column each); `journal` only for a session log."""
    if not paths:
        raise ViewError("no file given")
    kinds = [detect_kind(p) for p in paths]
    kind = kinds[0]
    if len(paths) > 1 and set(kinds) != {"conformance"}:
        raise ViewError("several files can be shown together only when all are conformance reports "
                        f"(got {', '.join(f'{p}: {k}' for p, k in zip(paths, kinds, strict=True))})")
    if journal is not None and kind != "session":
        raise ViewError(f"--journal compares a session log's requests with what was sent; {paths[0]} is a {kind}")
    path = paths[0]
    if kind == "session":
        try:
            loaded = parse_session_log(path.read_bytes(), source=str(path))
        except HarnessError as exc:
            raise ViewError(str(exc)) from None
        sent = _chat_bodies(journal, loaded.session.id) if journal is not None else None
        return session_page(build_session_view(loaded, sent), source=str(path),
                            journal=str(journal) if journal else None), kind
    if kind == "cassette":
        try:
            meta, exchanges = load_cassette_exchanges(path)
        except CassetteError as exc:
            raise ViewError(str(exc)) from None
        return wire_page("cassette", str(path), exchanges, meta), kind
    if kind == "journal":
        return wire_page("journal", str(path), load_journal(path)), kind
    reports = [(str(p), json.loads(p.read_text(encoding="utf-8"))) for p in paths]
    return matrix_page(reports), kind
