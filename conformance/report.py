"""Reports of a run: the JSON document, JUnit XML, the closing table and the live progress line.

All four read the same list of `ScenarioResult`s, so they always count the same things. The
JSON shape is `{"adapter", ["server",] "scenarios": [{"id", "title", "tags", "status", "reason",
"failed", "seconds", "notes", "diff"?}], "summary": {"pass", "fail", "n/a"}}` (a client run has
`"client"` and `"driver"` in place of `"adapter"`, and its scenarios add the driver's
`"observations"` and, when failing, the end of its `"stderr"`): `title` is the scenario's
catalogue title (what situation it plays; empty for a server check), `reason` says
why a scenario failed or is n/a, `failed` names the failed checks, `notes` holds the
differences reported as information. JUnit uses the checklist area as classname and the
scenario id as test name; its suite `time` is the run's wall time (scenarios run concurrently,
so their own times add up to more).
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from dshkit.harness.llm import jsonio

from .runner import ScenarioResult, summarize

__all__ = ["Progress", "render_table", "to_json", "to_junit", "wall_seconds", "write_json", "write_junit"]


def to_json(
    results: Sequence[ScenarioResult], *, adapter: str | None, server: str | None = None,
    client: str | None = None, driver: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON report document; a client run names the `client` and its `driver` (the
    driver's hello: libraries, versions, options) instead of an adapter."""
    doc: dict[str, Any] = {"client": client, "driver": dict(driver or {})} if client is not None else {"adapter": adapter}
    if server is not None:
        doc["server"] = server
    doc["scenarios"] = [r.to_json() for r in results]
    doc["summary"] = summarize(results)
    return doc


def write_json(
    path: str | Path, results: Sequence[ScenarioResult], *, adapter: str | None, server: str | None = None,
    client: str | None = None, driver: Mapping[str, Any] | None = None,
) -> None:
    doc = to_json(results, adapter=adapter, server=server, client=client, driver=driver)
    text = jsonio.dumps(doc, compact=False, indent=2)  # strict JSON, UTF-8 whatever a reason holds
    Path(path).write_text(text + "\n", encoding="utf-8")


def to_junit(results: Sequence[ScenarioResult], *, name: str) -> ET.Element:
    """A `<testsuites>` element: one `<testcase classname=AREA name=ID>` per scenario."""
    counts = summarize(results)
    seconds = wall_seconds(results)
    root = ET.Element("testsuites", name=name, tests=str(len(results)), failures=str(counts["fail"]),
                      skipped=str(counts["n/a"]), errors="0", time=f"{seconds:.3f}")
    suite = ET.SubElement(root, "testsuite", name=name, tests=str(len(results)),
                          failures=str(counts["fail"]), skipped=str(counts["n/a"]), errors="0",
                          time=f"{seconds:.3f}")
    for r in results:
        case = ET.SubElement(suite, "testcase", classname=r.area, name=r.id, time=f"{r.seconds:.3f}")
        if r.status == "fail":
            failure = ET.SubElement(case, "failure", message=r.reason or "failed", type="conformance")
            failure.text = r.diff
        elif r.status == "n/a":
            ET.SubElement(case, "skipped", message=r.reason or "not applicable")
        if r.info:
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join(r.info)
    return root


def wall_seconds(results: Sequence[ScenarioResult]) -> float:
    """From the first scenario's start to the last one's end; the plain sum of their times
    when start times are unknown (results built by hand)."""
    timed = [r for r in results if r.started_at is not None]
    if not timed:
        return sum(r.seconds for r in results)
    return max(r.started_at + r.seconds for r in timed if r.started_at is not None) - min(
        r.started_at for r in timed if r.started_at is not None
    )


def write_junit(path: str | Path, results: Sequence[ScenarioResult], *, name: str) -> None:
    tree = ET.ElementTree(to_junit(results, name=name))
    ET.indent(tree)
    tree.write(str(path), encoding="utf-8", xml_declaration=True)


def _named(r: ScenarioResult) -> str:
    """`area/id`, and the scenario's title when it has one, so a failure says what it played."""
    return f"{r.area}/{r.id}" + (f" ({r.title})" if r.title else "")


def render_table(results: Sequence[ScenarioResult], *, title: str) -> str:
    """The closing table: one row per checklist area, then the failures (with their scenario's
    title) and n/a by id."""
    areas: dict[str, dict[str, int]] = {}
    for r in results:
        row = areas.setdefault(r.area, {"pass": 0, "fail": 0, "n/a": 0})
        row[r.status] += 1
    width = max([len("area"), *(len(a) for a in areas)])
    lines = [title, f"{'area':<{width}}  {'pass':>5} {'fail':>5} {'n/a':>5}"]
    lines.append("-" * (width + 19))
    for area in sorted(areas):
        row = areas[area]
        lines.append(f"{area:<{width}}  {row['pass']:>5} {row['fail']:>5} {row['n/a']:>5}")
    total = summarize(results)
    lines.append("-" * (width + 19))
    lines.append(f"{'total':<{width}}  {total['pass']:>5} {total['fail']:>5} {total['n/a']:>5}")
    for r in results:
        if r.status == "fail":
            lines.append(f"FAIL {_named(r)}: {r.reason}")
    for r in results:
        if r.status == "n/a":
            lines.append(f"n/a  {r.area}/{r.id}: {r.reason}")
    return "\n".join(lines)


class Progress:
    """A live one-line counter on a terminal (`\\r`-rewritten); silent on anything else."""

    def __init__(self, stream: TextIO | None = None, *, enabled: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.counts = {"pass": 0, "fail": 0, "n/a": 0}

    def __call__(self, result: ScenarioResult, done: int, total: int) -> None:
        self.counts[result.status] += 1
        if not self.enabled:
            return
        c = self.counts
        line = f"[{done:>3}/{total}] pass {c['pass']} fail {c['fail']} n/a {c['n/a']}  {result.id}"
        self.stream.write("\r\x1b[K" + line[:120])
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
