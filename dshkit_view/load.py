"""Which file is this, and its page: a session log, a cassette, a journal or conformance reports.

The kind is told from the content, not the name: a session log starts with a `{"type":
"session"}` header line, a cassette with `{"type": "cassette"}`, a journal line carries `path`
and `writes`, and a conformance report is one JSON document with `scenarios` and `summary`. A
zstd-compressed file (DSH writes `session.jsonl.zstd` by default) is decompressed first, told by
its bytes too.
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dshkit.harness.llm import HarnessError, jsonio
from dshkit.harness.session import parse_session_log
from dshkit.harness.session.compression import read_log_bytes
from dshkit.mock_server.cassette import CassetteError

from .errors import ViewError
from .pages import matrix_page, session_page, wire_page
from .sessions import SentRequest, build_session_view
from .wire import WireExchange, load_cassette_exchanges, load_journal

__all__ = ["KINDS", "detect_kind", "merge_journals", "render_paths"]

KINDS = ("session", "cassette", "journal", "conformance")


def _first_json_line(path: Path, text: str) -> Any:
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                return jsonio.loads(line)
            except jsonio.JsonTooDeep as exc:
                raise ViewError(f"{path}:{number}: {exc.problem}") from None
            except ValueError:
                return None
    return None


def _read(path: Path) -> bytes:
    """The file's bytes, decompressed when it is zstd; a `ViewError` naming the file otherwise."""
    try:
        return read_log_bytes(path)
    except FileNotFoundError:
        raise ViewError(f"{path}: no such file") from None
    except OSError as exc:
        raise ViewError(f"{path}: cannot read it ({exc})") from None
    except HarnessError as exc:  # a damaged, truncated or oversized zstd file
        raise ViewError(str(exc)) from None


def detect_kind(path: Path) -> str:
    """One of `KINDS`; raises `ViewError` naming the file when it is none of them."""
    return _kind_of(path, _read(path))


def _kind_of(path: Path, data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ViewError(f"{path}: cannot read it ({exc})") from None
    first = _first_json_line(path, text)
    if isinstance(first, Mapping):
        if first.get("type") == "session":
            return "session"
        if first.get("type") == "cassette":
            return "cassette"
        if "writes" in first and "path" in first:
            return "journal"
    try:
        whole = jsonio.loads(text)
    except jsonio.JsonTooDeep as exc:
        raise ViewError(f"{path}" + (f":{exc.line}" if exc.line else "") + f": {exc.problem}") from None
    except ValueError:
        whole = None
    if isinstance(whole, Mapping) and "scenarios" in whole and "summary" in whole:
        return "conformance"
    raise ViewError(
        f"{path}: not a session log, cassette, journal or conformance report; pass a file written by "
        "`dshkit run` (.dshkit/sessions/*.jsonl), `dshkit record` (*.cassette.jsonl), "
        "`dshkit serve --journal FILE` or `dshkit conformance --json FILE`"
    )


def _chat_requests(journal: Path) -> list[SentRequest]:
    """The chat requests of `journal` with the session each named; one journal may hold several
    runs, and `build_session_view` pairs the log's requests with them by identity."""
    data = _read(journal)
    if _kind_of(journal, data) != "journal":
        raise ViewError(f"{journal}: --journal expects a journal written by `dshkit serve --journal FILE`")
    return [SentRequest(body=x.body, session=x.session) for x in load_journal(journal, data.decode("utf-8"))
            if x.path.rstrip("/").endswith("/chat/completions") and isinstance(x.body, Mapping)]


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Pause the cyclic garbage collector while a page is built. A long log makes hundreds of
    thousands of small objects that all stay alive until the page is written, and each full
    collection would walk all of them again for nothing (a fifth of the time of a 1,000-step
    log); reference counting still frees everything at once, and the collector runs again after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def merge_journals(journals: Sequence[tuple[Path, Sequence[WireExchange]]]) -> list[WireExchange]:
    """The exchanges of several journals (`dshkit serve` instances behind a load balancer) as one
    list: ordered by arrival on the servers' monotonic clocks (one clock for every instance on one
    machine; across machines the order within each journal is kept and the interleaving is only
    approximate), numbered 1… again, each noting the journal and the number it had there."""
    tagged = [
        (x.started_s if x.started_s is not None else 0.0, n, i, path, x)
        for n, (path, exchanges) in enumerate(journals)
        for i, x in enumerate(exchanges)
    ]
    tagged.sort(key=lambda t: (t[0], t[1], t[2]))
    out = []
    for number, (_, _, _, path, x) in enumerate(tagged, 1):
        where = f"{path.name} #{x.number}"
        out.append(dataclasses.replace(x, number=number, note=f"{where} · {x.note}" if x.note else where))
    return out


def render_paths(paths: Sequence[Path], *, journal: Path | None = None, plain: bool = False) -> tuple[str, str]:
    """The page for `paths` and its kind. Several paths are allowed for conformance reports (one
    column each) and for mock-server journals (merged into one page, `merge_journals`); `journal`
    only for a session log. `plain` rebuilds a session log's requests by replaying it event by
    event (the reference path, for comparison): the same page, more slowly."""
    with _no_cycle_collection():
        return _render(paths, journal, plain)


def _render(paths: Sequence[Path], journal: Path | None, plain: bool = False) -> tuple[str, str]:
    if not paths:
        raise ViewError("no file given")
    contents = [_read(p) for p in paths]
    kinds = [_kind_of(p, data) for p, data in zip(paths, contents, strict=True)]
    kind = kinds[0]
    if len(paths) > 1 and set(kinds) == {"journal"}:
        merged = merge_journals([(p, load_journal(p, data.decode("utf-8"))) for p, data in zip(paths, contents, strict=True)])
        return wire_page("journal", ", ".join(str(p) for p in paths), merged), "journal"
    if len(paths) > 1 and set(kinds) != {"conformance"}:
        raise ViewError("several files can be shown together only when all are conformance reports "
                        "(one column each) or all mock-server journals (merged into one page) "
                        f"(got {', '.join(f'{p}: {k}' for p, k in zip(paths, kinds, strict=True))})")
    if journal is not None and kind != "session":
        raise ViewError(f"--journal compares a session log's requests with what was sent; {paths[0]} is a {kind}")
    path = paths[0]
    if kind == "session":
        try:
            loaded = parse_session_log(contents[0], source=str(path))
        except HarnessError as exc:
            raise ViewError(str(exc)) from None
        sent = _chat_requests(journal) if journal is not None else None
        return session_page(build_session_view(loaded, sent, plain=plain), source=str(path),
                            journal=str(journal) if journal else None), kind
    if kind == "cassette":
        try:
            meta, exchanges = load_cassette_exchanges(path)
        except CassetteError as exc:
            raise ViewError(str(exc)) from None
        return wire_page("cassette", str(path), exchanges, meta), kind
    if kind == "journal":
        return wire_page("journal", str(path), load_journal(path, contents[0].decode("utf-8"))), kind
    reports = [(str(p), _checked_report(p, jsonio.loads(data))) for p, data in zip(paths, contents, strict=True)]
    return matrix_page(reports), kind


_STATUSES = ("pass", "fail", "n/a")
# Optional fields of a report's scenario: the JSON type each must have.
_SCENARIO_FIELDS: dict[str, tuple[type, str]] = {
    "tags": (list, "a list of strings"), "reason": (str, "a string"), "failed": (list, "a list of strings"),
    "notes": (list, "a list of strings"), "diff": (str, "a string"), "title": (str, "a string"),
    "stderr": (str, "a string"), "seconds": (float, "a number of seconds >= 0"),
}


def _checked_report(path: Path, doc: Any) -> Mapping[str, Any]:
    """A conformance report (`dshkit conformance --json`) whose shape the page can rely on; a
    `ViewError` naming the file and the field otherwise."""

    def bad(field: str, wanted: str, value: Any) -> ViewError:
        return ViewError(f"{path}: {field} must be {wanted}, got {jsonio.dumps(value)[:60]}; is this a report "
                         "written by `dshkit conformance --json FILE`?")

    scenarios = doc["scenarios"]
    if not isinstance(scenarios, list):
        raise bad("scenarios", "a list of scenario results", scenarios)
    for i, sc in enumerate(scenarios):
        where = f"scenarios[{i}]"
        if not isinstance(sc, Mapping):
            raise bad(where, "an object with id and status", sc)
        if not isinstance(sc.get("id"), str) or not sc["id"]:
            raise bad(f"{where}.id", "a non-empty string", sc.get("id"))
        if sc.get("status") not in _STATUSES:
            raise bad(f"{where}.status", "one of pass, fail, n/a", sc.get("status"))
        for name, (kind, wanted) in _SCENARIO_FIELDS.items():
            value = sc.get(name)
            if value is None:
                continue
            if kind is float:
                ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e9
            else:
                ok = isinstance(value, kind) and (not isinstance(value, list) or all(isinstance(v, str) for v in value))
            if not ok:
                raise bad(f"{where}.{name}", wanted, value)
    summary = doc["summary"]
    if not isinstance(summary, Mapping):
        raise bad("summary", "an object of counts (pass, fail, n/a)", summary)
    for name, value in summary.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise bad(f"summary.{name}", "a count (an integer >= 0)", value)
    for name in ("adapter", "server", "client"):
        if doc.get(name) is not None and not isinstance(doc[name], str):
            raise bad(name, "a string", doc[name])
    if doc.get("driver") is not None and not isinstance(doc["driver"], Mapping):
        raise bad("driver", "an object (the driver's hello)", doc["driver"])
    checked: Mapping[str, Any] = doc
    return checked
