"""The compatibility matrix: clients × the behaviours users hit, from real catalogue runs.

Each behaviour is a handful of catalogue scenarios (fragmented tool arguments, reasoning and its
passback, 429 with `Retry-After`, 500, 529, TCP resets, a clean EOF without a finish, a missing
`[DONE]`, an in-band error), per wire protocol. A cell passes when every one of its scenarios
passes for that client. Every failing cell is rerun with each option set the driver lists under
`tries` in its `hello` (max_retries and the like), and the page says which, if any, fixes it. A
driver's `known` notes (scenario id → the one-line reason its library fails it) are shown beside
the verdicts, and a noted scenario outside the columns is rerun with each option set too.
`render_markdown` writes docs/clients.md; `dshkit conformance --client … --matrix-md FILE` runs it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .client_runner import ClientCommand, ClientScenarioResult, run_client_catalogue
from .report import to_json
from .runner import ScenarioResult, summarize
from .scenario import Scenario

__all__ = ["BEHAVIOURS", "Behaviour", "ClientRun", "cell_status", "matrix_ids", "render_markdown", "try_options"]


_RETRIES = re.compile(r"requests \((\d+) retries")


@dataclass(frozen=True, slots=True)
class Behaviour:
    """One column of the matrix: the scenarios that show it, per protocol."""

    name: str
    chat: tuple[str, ...]
    anthropic: tuple[str, ...] = ()
    note: str = ""
    """Said in the cell when the protocol has no such scenario (why it cannot happen there)."""

    def ids(self, protocol: str) -> tuple[str, ...]:
        return self.anthropic if protocol == "anthropic" else self.chat


BEHAVIOURS: tuple[Behaviour, ...] = (
    Behaviour("fragmented tool arguments",
              ("tool-split-arguments", "tool-token-fragments", "tool-one-char-fragments", "tool-parallel-sequential",
               "tool-chinese-arguments-split-utf8", "tool-arguments-byte-exact"),
              ("an-input-json-fragments",)),
    Behaviour("reasoning and its passback (thinking mode)",
              ("text-reasoning-then-answer", "rt-thinking-tool-call", "rt-three-steps-passback-kept",
               "rt-client-ids-empty-reasoning"),
              ("an-neutral-tool-round-trip", "an-signature-passback")),
    Behaviour("429 with Retry-After", ("http-429-rate-limit",), ("an-429-retry-after",)),
    Behaviour("500", ("http-500-server",), ("an-500-server",)),
    Behaviour("529", ("http-529-overloaded",), ("an-overloaded-529",)),
    Behaviour("TCP reset", ("net-reset-before-headers", "net-reset-after-headers", "net-reset-mid-stream"),
              ("an-reset-before-headers", "an-reset-mid-stream")),
    Behaviour("clean EOF without finish", ("end-eof-before-finish", "end-eof-after-role-only"),
              ("an-eof-before-stop-reason",)),
    Behaviour("missing [DONE]", ("end-eof-after-finish", "end-done-unterminated"), (),
              note="no [DONE] on the Anthropic surface"),
    Behaviour("in-band error", ("err-inband-error-object", "err-event-error"), ("an-error-event-mid-stream",)),
)


def matrix_ids(protocol: str) -> list[str]:
    """Every scenario id behind the matrix's columns on `protocol`."""
    return [i for b in BEHAVIOURS for i in b.ids(protocol)]


@dataclass(slots=True)
class ClientRun:
    """One client's catalogue run and what its option sets changed."""

    name: str
    hello: Mapping[str, Any]
    protocol: str
    results: list[ClientScenarioResult]
    tried: dict[str, list[tuple[dict[str, str], str]]] = field(default_factory=dict)
    """Behaviour name → (option set, cell status with it), for the cells that failed."""
    tried_scenarios: dict[str, list[tuple[dict[str, str], str]]] = field(default_factory=dict)
    """Scenario id → (option set, its status with it), for the failing scenarios the driver's
    `known` notes explain that no column holds."""
    catalogue: int = 0
    """How many catalogue scenarios its wire has (more than `results` when a subset ran)."""

    def to_json(self) -> dict[str, Any]:
        """The client's JSON report, with its wire, the catalogue size and what the option sets did."""
        doc = to_json(self.results, adapter=None, client=self.name, driver=self.hello)
        doc["protocol"] = self.protocol
        doc["catalogue"] = self.catalogue
        doc["tried"] = {b: [{"options": o, "status": st} for o, st in tries] for b, tries in self.tried.items()}
        doc["tried_scenarios"] = {i: [{"options": o, "status": st} for o, st in tries]
                                  for i, tries in self.tried_scenarios.items()}
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ClientRun:
        """A run back from its JSON report (to render a matrix over several invocations)."""
        results = [ClientScenarioResult(id=str(r["id"]), tags=list(r.get("tags", [])), status=r["status"],
                                        reason=str(r.get("reason", "")), info=list(r.get("notes", [])),
                                        failed=list(r.get("failed", [])))
                   for r in doc.get("scenarios", ())]
        tried, tried_scenarios = (
            {str(k): [(dict(t["options"]), str(t["status"])) for t in tries] for k, tries in (doc.get(key) or {}).items()}
            for key in ("tried", "tried_scenarios"))
        return cls(name=str(doc["client"]), hello=dict(doc.get("driver") or {}), protocol=str(doc.get("protocol", "chat")),
                   results=results, tried=tried, tried_scenarios=tried_scenarios,
                   catalogue=int(doc.get("catalogue") or len(results)))

    def known(self, scenario_id: str) -> str | None:
        """The driver's one-line reason its library fails `scenario_id`, if it gave one."""
        known = self.hello.get("known")
        note = known.get(scenario_id) if isinstance(known, Mapping) else None
        return note if isinstance(note, str) and note else None


def _cell(results: Sequence[ScenarioResult], ids: Sequence[str]) -> list[ScenarioResult]:
    by_id = {r.id: r for r in results}
    return [by_id[i] for i in ids if i in by_id]


def cell_status(results: Sequence[ScenarioResult], ids: Sequence[str]) -> str:
    """`pass`, `fail`, `n/a` (all n/a) or `—` (no such scenario ran)."""
    cell = _cell(results, ids)
    if not cell:
        return "—"
    if any(r.status == "fail" for r in cell):
        return "fail"
    return "n/a" if all(r.status == "n/a" for r in cell) else "pass"


def _retries(results: Sequence[ScenarioResult]) -> int:
    """The most retries the client made for one call in `results` (from the journal notes)."""
    found = [int(m.group(1)) for r in results for note in r.info if (m := _RETRIES.search(note))]
    return max(found, default=0)


async def try_options(
    run: ClientRun, cmd: ClientCommand, scenarios: Sequence[Scenario], *, concurrency: int = 4,
    on_result: Callable[[ScenarioResult, int, int], None] | None = None,
) -> None:
    """Rerun each failing cell of `run` with every option set its driver lists under `tries`, and
    each failing scenario its driver's `known` notes explain that no column holds."""
    tries = [dict(t) for t in run.hello.get("tries", ())]
    by_id = {s.id: s for s in scenarios}
    for b in BEHAVIOURS:
        ids = b.ids(run.protocol)
        if cell_status(run.results, ids) != "fail":
            continue
        chosen = [by_id[i] for i in ids if i in by_id]
        for options in tries:
            again = await run_client_catalogue(chosen, cmd, hello=run.hello, protocol=run.protocol,
                                               client_options=options, concurrency=concurrency, on_result=on_result)
            run.tried.setdefault(b.name, []).append((options, cell_status(again, ids)))
    in_columns = set(matrix_ids(run.protocol))
    noted = [by_id[r.id] for r in run.results
             if r.status == "fail" and r.id in by_id and r.id not in in_columns and run.known(r.id)]
    for options in tries if noted else ():
        again = await run_client_catalogue(noted, cmd, hello=run.hello, protocol=run.protocol,
                                           client_options=options, concurrency=concurrency, on_result=on_result)
        status = {r.id: r.status for r in again}
        for sc in noted:
            run.tried_scenarios.setdefault(sc.id, []).append((options, status.get(sc.id, "—")))


def _gist(r: ScenarioResult) -> str:
    """A failure in one line: the first summary the checks gave, else the first failed check."""
    timeout = r.reason.startswith("timeout:")
    summary = r.reason.split("; ", 1)[1] if "; " in r.reason and not timeout else r.reason
    return summary.replace("|", "\\|").replace("\n", " ")[:240]


def _options(options: Mapping[str, str]) -> str:
    return ", ".join(f"`{k}={v}`" for k, v in options.items()) or "defaults"


def _tried(tried: Sequence[tuple[Mapping[str, str], str]]) -> str:
    """What the option sets did: `Tried: A → fail; B → pass (fixed by B).`"""
    fixed = [o for o, s in tried if s == "pass"]
    verdict = (f"fixed by {' or '.join(_options(o) for o in fixed)}" if fixed
               else "no option the driver offers fixes it")
    return "Tried: " + "; ".join(f"{_options(o)} → {s}" for o, s in tried) + f" ({verdict})."


def _explained(run: ClientRun, r: ScenarioResult) -> str:
    """A failing scenario in one line: the driver's known reason first, when it gave one."""
    note = run.known(r.id)
    gist = _gist(r)
    return f"{_escape(note)} (seen: {gist})" if note else gist


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _versions(hello: Mapping[str, Any]) -> str:
    libs = ", ".join(f"{k} {v}" for k, v in (hello.get("libraries") or {}).items())
    runtime = hello.get("runtime")
    return libs + (f" ({runtime})" if runtime else "")


def render_markdown(runs: Sequence[ClientRun], *, date: str, command: str) -> str:
    """docs/clients.md: the matrix, the versions, each failing cell's reason and what the
    option sets did, and every client's whole-catalogue counts."""
    lines = [
        "# Client compatibility",
        "",
        f"Generated on {date} by `{command}` from one real run of the scenario catalogue against",
        "each client library, through the drivers in `conformance/clients/` (each plays one scenario per",
        "process against a mock server of its own; docs/client_protocol.md is the protocol). Rerun it with",
        "`make clients`. A cell passes when every scenario listed for it below passes; `—` means the",
        "catalogue has no such scenario on that client's wire; \"(N retries)\" says the library retried (a",
        "retry is allowed; one sooner than `Retry-After` fails). Failing cells are explained under the table,",
        "with what each option set the driver offers did to them. A client whose library takes seconds of",
        "CPU to import runs only the scenarios behind the columns (`--matrix-scenarios`); its last column",
        "says how many of its wire's scenarios ran.",
        "",
        "| client | " + " | ".join(b.name for b in BEHAVIOURS) + " | whole catalogue (pass / fail / n/a) |",
        "| --- | " + " | ".join("---" for _ in BEHAVIOURS) + " | --- |",
    ]
    notes: list[str] = []
    for run in runs:
        cells = []
        for b in BEHAVIOURS:
            status = cell_status(run.results, b.ids(run.protocol))
            if status == "fail":
                notes.append(f"{run.name} / {b.name}")
                cells.append(f"**fail** [{len(notes)}]")
            elif status == "—" and b.note:
                cells.append(f"— ({b.note})")
            elif status == "pass" and (n := _retries(_cell(run.results, b.ids(run.protocol)))):
                cells.append(f"pass ({n} retries)")
            else:
                cells.append(status)
        total = summarize(run.results)
        subset = f" ({len(run.results)} of {run.catalogue} run)" if 0 < len(run.results) < run.catalogue else ""
        lines.append(f"| {run.name} | " + " | ".join(cells) + f" | {total['pass']} / {total['fail']} / {total['n/a']}{subset} |")
    lines += ["", "## Versions", "", "| client | wire | libraries |", "| --- | --- | --- |"]
    lines += [f"| {run.name} | {run.protocol} | {_versions(run.hello)} |" for run in runs]
    lines += ["", "## Why each failing cell fails", ""]
    n = 0
    for run in runs:
        for b in BEHAVIOURS:
            ids = b.ids(run.protocol)
            if cell_status(run.results, ids) != "fail":
                continue
            n += 1
            failing = [r for r in _cell(run.results, ids) if r.status == "fail"]
            lines.append(f"{n}. **{run.name} / {b.name}**: "
                         + "; ".join(f"`{r.id}`: {_explained(run, r)}" for r in failing) + ".")
            tried = run.tried.get(b.name, [])
            if tried:
                lines.append("   " + _tried(tried))
            else:
                lines.append("   The driver offers no option to try.")
    if not n:
        lines.append("None.")
    lines += ["", "## Scenarios behind each column", ""]
    for b in BEHAVIOURS:
        chat = ", ".join(f"`{i}`" for i in b.chat) or "none"
        anth = ", ".join(f"`{i}`" for i in b.anthropic) or (b.note or "none")
        lines.append(f"- **{b.name}**: chat {chat}; anthropic {anth}.")
    lines += ["", "## Every failing scenario", "",
              "The whole catalogue, not only the columns above (n/a scenarios test what a client cannot be",
              "asked: cancellation, dshkit's own adapter decisions, `[DONE]` versus EOF). Where the driver",
              "traced the library's defect, its one-line reason comes first, then what was seen, then what",
              "each option set the driver offers did.", ""]
    for run in runs:
        failing = [r for r in run.results if r.status == "fail"]
        lines.append(f"### {run.name} ({len(failing)} failing)")
        lines.append("")
        for r in failing:
            reruns = run.tried_scenarios.get(r.id)
            lines.append(f"- `{r.id}`: {_explained(run, r)}" + (f". {_tried(reruns)}" if reruns else ""))
        if not failing:
            lines.append("- none")
        known = run.hello.get("known")
        passed = {r.id for r in run.results if r.status == "pass"}
        stale = sorted(i for i in (known if isinstance(known, Mapping) else ()) if i in passed)
        if stale:  # the library was fixed, or the note was wrong: the driver should drop it
            lines.append("- the driver's `known` note on " + ", ".join(f"`{i}`" for i in stale)
                         + " is stale: it passed in this run")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"
