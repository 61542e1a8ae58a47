"""`client_matrix`: the client × behaviour matrix, its reruns with the driver's option sets, and
the client reports it is drawn from."""

from __future__ import annotations

import asyncio
import json

from dshkit.conformance.client_matrix import (
    BEHAVIOURS,
    ClientRun,
    cell_status,
    matrix_ids,
    render_markdown,
    try_options,
)

from .catalogue_runs import catalogue
from .client_runs import broken, broken_run, driver_hello, group, result, scenarios


def test_matrix_columns_name_catalogue_scenarios_of_their_wire() -> None:
    by_id = {s.id: s for s in catalogue()}
    for b in BEHAVIOURS:
        for protocol in ("chat", "anthropic"):
            for sid in b.ids(protocol):
                assert sid in by_id and protocol in by_id[sid].protocols, (b.name, protocol, sid)


def test_matrix_page_explains_each_failing_cell_and_what_options_did() -> None:
    fragments = BEHAVIOURS[0]
    results = [result(sid, "pass") for b in BEHAVIOURS for sid in b.chat]
    results[0] = result(fragments.chat[0], "fail", "failed: step0.assemble; step0.assemble: expected a, got b")
    run = ClientRun(name="demo", hello={"libraries": {"demo-lib": "1.2.3"}, "runtime": "python 3.11"},
                    protocol="chat", results=results,
                    tried={fragments.name: [({"max_retries": "0"}, "fail"), ({"max_retries": "5"}, "pass")]})
    assert cell_status(results, fragments.chat) == "fail"
    assert cell_status(results, BEHAVIOURS[2].chat) == "pass"
    assert cell_status(results, ()) == "—"
    page = render_markdown([run], date="2026-01-02", command="dshkit conformance --client demo --matrix-md FILE")
    assert "Generated on 2026-01-02 by `dshkit conformance --client demo --matrix-md FILE`" in page
    assert "| demo | **fail** [1] | pass |" in page
    assert "| demo | chat | demo-lib 1.2.3 (python 3.11) |" in page
    assert (f"1. **demo / {fragments.name}**: `{fragments.chat[0]}`: step0.assemble: expected a, got b." in page)
    assert "`max_retries=0` → fail; `max_retries=5` → pass (fixed by `max_retries=5`)" in page


def test_client_run_survives_its_json_report() -> None:
    """`--json-dir` renders the matrix from reports written by earlier invocations."""
    results = [result("http-429-rate-limit", "fail", "failed: step0.finish; step0.finish: expected x, got y")]
    results[0].info.append("step0.requests: the client sent 3 requests (2 retries, 2009 ms, 2005 ms after the previous answer)")
    run = ClientRun(name="demo", hello={"libraries": {"demo-lib": "1"}}, protocol="chat", results=results,
                    tried={"429 with Retry-After": [({"max_retries": "0"}, "pass")]}, catalogue=200)
    back = ClientRun.from_json(json.loads(json.dumps(run.to_json())))
    assert (back.name, back.protocol, back.catalogue, back.tried) == ("demo", "chat", 200, run.tried)
    assert [(r.id, r.status, r.reason, r.info) for r in back.results] == [(r.id, r.status, r.reason, r.info) for r in results]
    page = render_markdown([back], date="2026-01-02", command="x")
    assert "0 / 1 / 0 (1 of 200 run)" in page


@group("drops-passback")
def test_a_known_defect_outside_the_columns_gets_its_reason_and_the_options_tried() -> None:
    """A driver's `known` note explains a failing scenario no column holds: the matrix reruns it
    with each of the driver's `tries` and the page gives the note, what was seen and the verdict.
    (The first run is the drops-passback driver's shared one; the `known` note changes nothing
    in how a scenario is played.)"""
    sid = "rt-arguments-not-reencoded"
    assert sid not in matrix_ids("chat")
    cmd = broken("drops-passback")
    hello = {**driver_hello("drops-passback"), "known": {sid: "drops `reasoning_content` from the turn it sends back"}}
    played = scenarios([sid, "tool-split-arguments"])
    results = [broken_run("drops-passback")[s.id] for s in played]
    assert {r.id: r.status for r in results} == {sid: "fail", "tool-split-arguments": "pass"}
    run = ClientRun(name="broken", hello=hello, protocol="chat", results=results)
    asyncio.run(try_options(run, cmd, played))
    assert run.tried_scenarios == {sid: [({"max_retries": "0"}, "fail"), ({"max_retries": "5"}, "fail")]}
    back = ClientRun.from_json(json.loads(json.dumps(run.to_json())))
    assert back.tried_scenarios == run.tried_scenarios and back.known(sid) == hello["known"][sid]
    page = render_markdown([back], date="2026-01-02", command="x")
    line = next(x for x in page.splitlines() if x.startswith(f"- `{sid}`"))
    assert line.startswith(f"- `{sid}`: drops `reasoning_content` from the turn it sends back (seen: step")
    assert line.endswith("). Tried: `max_retries=0` → fail; `max_retries=5` → fail (no option the driver offers fixes it).")
    back.hello["known"]["tool-split-arguments"] = "a note the library outgrew"
    page = render_markdown([back], date="2026-01-02", command="x")
    assert "- the driver's `known` note on `tool-split-arguments` is stale: it passed in this run" in page
