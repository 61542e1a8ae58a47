"""The page of one or more conformance reports: a scenario × report matrix and each failure.

Rows are grouped by checklist area (the scenario's `area:` tag), each group under its title
with the pass/fail/n-a counts of every report; a row names the scenario by id and title. A
column is one report, named by what it checked (adapter, client or server) and by its file, so
two reports of one adapter stay apart. An n/a cell says why; a failed cell links to the failure
below, where every failure is a closed `<details>` (its summary is one line: scenario, report,
reason), so a long list of failures stays a list. The page uses the whole window and the matrix
scrolls inside its own box when it is wider than that.

Reports are read generically: any JSON document with `scenarios` (`id`, `tags`, `status`,
`reason`, `diff`, ...) and `summary`, whichever command wrote it (`dshkit conformance`, its
`--server` checks, a client run). A scenario's title is the report's `title` field when it has
one, else the bundled catalogue's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from .html import count, diff_block, esc, page

__all__ = ["AREA_TITLES", "column_names", "matrix_page"]

AREA_TITLES = {
    "sse": "SSE framing",
    "stream-end": "How a stream ends",
    "text": "Text and reasoning deltas",
    "tools": "Tool-call deltas",
    "finish-usage": "Finish reason and usage",
    "shapes": "Chunk shapes other servers send",
    "errors": "Failures as data",
    "transport": "Transport, timing and cancellation",
    "serialize": "The request body",
    "round-trip": "Multi-step round trips",
    "anthropic": "The Anthropic Messages surface",
    "server-requests": "Server: requests and status codes",
    "server-json": "Server: non-streamed answers",
    "server-stream": "Server: the stream",
    "server-beta": "Server: beta endpoints",
    "an-requests": "Anthropic server: requests",
    "an-json": "Anthropic server: non-streamed answers",
    "an-stream": "Anthropic server: the stream",
}
"""Headings of the catalogue's areas; an area not listed here is headed by its name."""

_STATUS_CLASS = {"pass": "pass", "fail": "fail", "n/a": "na"}
_CODE = re.compile(r"`([^`]+)`")


@functools.cache
def _catalogue_titles() -> dict[str, str]:
    """Scenario id → title, from the bundled catalogue (empty when it cannot be loaded)."""
    try:
        from dshkit.conformance import load_catalogue

        return {s.id: s.title for s in load_catalogue()}
    except Exception:  # noqa: BLE001 - titles are a nicety; the page is complete without them
        return {}


def _subject(doc: Mapping[str, Any], name: str) -> str:
    for key, prefix in (("adapter", ""), ("client", "client "), ("server", "server ")):
        value = doc.get(key)
        if isinstance(value, str) and value:
            return prefix + value
    return name


def _short(subject: str) -> str:
    """`deepseek:DeepSeekAdapter` for `dshkit.harness.providers.deepseek:DeepSeekAdapter`."""
    if subject.startswith(("server ", "client ")) or ":" not in subject:
        return subject
    module, _, factory = subject.rpartition(":")
    return f"{module.rsplit('.', 1)[-1]}:{factory}"


def _title(text: str) -> str:
    """A catalogue title, escaped, its `backticked` parts set as code."""
    return _CODE.sub(r"<code>\1</code>", esc(text))


def column_names(names: Sequence[str], subjects: Sequence[str]) -> list[tuple[str, str]]:
    """(what was checked, which file) of each report, short but all different: the file's name
    or as many of its parent folders as tell two files apart, then `#2`, `#3` for the same file."""
    parts = [PurePath(n).parts or (n,) for n in names]
    depth = 1
    while depth < max(len(p) for p in parts) and len({p[-depth:] for p in parts}) < len(parts):
        depth += 1
    files = ["/".join(p[-depth:]) for p in parts]
    out: list[tuple[str, str]] = []
    seen: dict[tuple[str, str], int] = {}
    for subject, file in zip(subjects, files, strict=True):
        key = (_short(subject), file)
        seen[key] = seen.get(key, 0) + 1
        out.append((key[0], file if seen[key] == 1 else f"{file} #{seen[key]}"))
    return out


def _area(scenario: Mapping[str, Any]) -> str:
    tags = scenario.get("tags")
    for tag in tags if isinstance(tags, list) else ():
        if isinstance(tag, str) and tag.startswith("area:"):
            return tag.removeprefix("area:")
    area = scenario.get("area")
    return area if isinstance(area, str) and area else "other"


def _driver(doc: Mapping[str, Any]) -> str:
    """A client report's library versions, as `dshkit conformance --client` recorded them."""
    driver = doc.get("driver")
    libraries = driver.get("libraries") if isinstance(driver, Mapping) else None
    if not isinstance(libraries, Mapping) or not libraries:
        return ""
    return ", ".join(f"{esc(k)} {esc(v)}" for k, v in libraries.items())


def _summary(counts: Mapping[str, int]) -> str:
    return " · ".join(f"{counts.get(k, 0)} {k}" for k in ("pass", "fail", "n/a") if counts.get(k, 0)) or "nothing run"


def matrix_page(reports: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """Rows are scenario ids (catalogue order of the first report), columns one per report."""
    subjects = [_subject(doc, name) for name, doc in reports]
    columns = column_names([name for name, _ in reports], subjects)
    order: list[str] = []
    rows_of: dict[str, Mapping[str, Any]] = {}
    cells: dict[tuple[str, int], Mapping[str, Any]] = {}
    for col, (_, doc) in enumerate(reports):
        scenarios = doc.get("scenarios")
        for scenario in scenarios if isinstance(scenarios, list) else ():
            if not isinstance(scenario, Mapping):
                continue
            sid = str(scenario.get("id"))
            if sid not in rows_of:
                order.append(sid)
                rows_of[sid] = scenario
            cells[(sid, col)] = scenario
    titles: dict[str, str] = {}
    for sid in order:
        given = next((c.get("title") for c in (cells.get((sid, k)) for k in range(len(reports))) if c and c.get("title")), None)
        if isinstance(given, str):
            titles[sid] = given
    if len(titles) < len(order):
        titles = {**_catalogue_titles(), **titles}
    areas: dict[str, list[str]] = {}
    for sid in order:
        areas.setdefault(_area(rows_of[sid]), []).append(sid)

    head = ["<thead><tr><th>scenario</th>"]
    for (short, file), subject, (_, doc) in zip(columns, subjects, reports, strict=True):
        libraries = _driver(doc)
        summary = doc.get("summary") if isinstance(doc.get("summary"), Mapping) else {}
        head.append(f"<th title=\"{esc(subject)}\">{esc(short)}<small>{esc(file)}</small>"
                    f"{f'<small>{libraries}</small>' if libraries else ''}"
                    f"<small class=\"counts\">{esc(_summary(summary or {}))}</small></th>")
    head.append("</tr></thead>")
    body: list[str] = []
    failures: list[str] = []
    for area, sids in areas.items():
        heading = AREA_TITLES.get(area, area)
        body.append(f"<tbody data-area=\"{esc(area)}\"><tr class=\"area\"><th>{esc(heading)} "
                    f"<small>· area {esc(area)} · {count(len(sids), 'scenario')}</small></th>")
        for col in range(len(reports)):
            tally = {"pass": 0, "fail": 0, "n/a": 0}
            for sid in sids:
                status = str((cells.get((sid, col)) or {}).get("status"))
                if status in tally:
                    tally[status] += 1
            body.append(f"<th class=\"tally\">{esc(_summary(tally))}</th>")
        body.append("</tr>")
        for sid in sids:
            title = titles.get(sid)
            row = [f"<tr data-scenario=\"{esc(sid)}\"><th><code>{esc(sid)}</code>"
                   f"{f' <span class=title>{_title(title)}</span>' if title else ''}</th>"]
            for col, (short, file) in enumerate(columns):
                cell = cells.get((sid, col))
                if cell is None:
                    row.append("<td class=\"missing\" title=\"not in this report\">—</td>")
                    continue
                status = str(cell.get("status"))
                reason = str(cell.get("reason") or "")
                cls = _STATUS_CLASS.get(status, "na")
                if status == "fail":
                    anchor = f"d-{col}-{len(failures)}"
                    row.append(f"<td class=\"fail\"><a href=\"#{anchor}\" title=\"{esc(reason)}\">fail</a></td>")
                    failures.append(_failure(sid, title, f"{short} · {file}", cell, anchor))
                elif status == "n/a":
                    why = f"<span class=\"reason\">{esc(reason)}</span>" if reason else ""
                    row.append(f"<td class=\"na\">n/a{why}</td>")
                else:
                    row.append(f"<td class=\"{cls}\">{esc(status)}</td>")
            body.append("".join(row) + "</tr>")
        body.append("</tbody>")

    kinds = {s.split(" ", 1)[0] if s.startswith(("server ", "client ")) else "adapter" for s in subjects}
    noun = {"adapter": "adapter", "client": "client", "server": "server"}[kinds.pop()] if len(kinds) == 1 else "report"
    parts = [
        f"<header><h1>Conformance: {count(len(order), 'scenario')} × {count(len(reports), noun)}</h1>",
        "<p class=\"summary\">" + "".join(
            f"<span title=\"{esc(subject)}\">{esc(short)} ({esc(file)}): {esc(_summary(doc.get('summary') or {}))}</span>"
            for (short, file), subject, (_, doc) in zip(columns, subjects, reports, strict=True)
        ) + "</p></header><main>",
        "<div class=\"matrix-box\"><table class=\"matrix\">", *head, *body, "</table></div>",
        f"<h2>Failures <small class=\"note\">({len(failures)}, each closed: open one to see its diff)</small></h2>"
        if failures else "<h2>Failures</h2>",
        *(failures or ["<p class=\"ok\">no failures</p>"]), "</main>",
    ]
    return page("dshkit view · conformance", parts, wide=True)


def _failure(sid: str, title: str | None, column: str, cell: Mapping[str, Any], anchor: str) -> str:
    """One failure, closed: the summary names it, the diff (and a client's stderr) inside. The
    cell's link points inside the `<details>`, so following it opens the failure."""
    reason = str(cell.get("reason") or "")
    failed = cell.get("failed")
    checks = ", ".join(str(f) for f in failed) if isinstance(failed, list) and failed else ""
    stderr = cell.get("stderr")
    return (
        f"<details class=\"failure-diff\" data-scenario=\"{esc(sid)}\"><summary><code>{esc(sid)}</code>"
        f"{f' {_title(title)}' if title else ''} · <b>{esc(column)}</b>"
        f"{f' · <span class=reason>{esc(reason)}</span>' if reason else ''}</summary>"
        f"<div class=\"failure-body\" id=\"{esc(anchor)}\">"
        f"{f'<p>failed checks: {esc(checks)}</p>' if checks else ''}"
        f"{diff_block(str(cell.get('diff') or '').splitlines())}"
        f"{f'<h4>stderr</h4><pre>{esc(stderr)}</pre>' if isinstance(stderr, str) and stderr else ''}"
        "</div></details>"
    )
