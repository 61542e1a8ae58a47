"""`dshkit conformance --client`: the stdio protocol proven with the real openai-python driver
and deliberately broken drivers (tests/conformance/broken_clients.py), so no Node is needed.

Each broken driver must fail exactly the scenarios its defect touches, with a reason that says
what happened; the ones that break the protocol must fail with a clear verdict, never a runner
traceback, and a hung driver's whole process group must be gone afterwards.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import select
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from dshkit.cli import main
from dshkit.conformance import client_cli
from dshkit.conformance.client_matrix import (
    BEHAVIOURS,
    ClientRun,
    cell_status,
    matrix_ids,
    render_markdown,
    try_options,
)
from dshkit.conformance.client_protocol import (
    CLIENTS_DIR,
    ProtocolViolation,
    build_task,
    parse_line,
    validate_task,
)
from dshkit.conformance.client_runner import (
    ClientCommand,
    ClientError,
    ClientScenarioResult,
    describe_client,
    resolve_client,
    run_client_catalogue,
)
from dshkit.conformance.report import write_json
from dshkit.conformance.scenario import Scenario
from dshkit.view import render_paths

from .catalogue_runs import catalogue
from .warm_driver import WarmDriver

BROKEN = Path(__file__).resolve().parent / "broken_clients.py"
SUBSET = ("tool-split-arguments", "tool-arguments-byte-exact", "text-reasoning-then-answer",
          "rt-thinking-tool-call", "rt-arguments-not-reencoded")
"""Scenarios the openai-python driver passes, and that the two defects split between them."""
MUST_FAIL = {
    "drops-passback": {"rt-thinking-tool-call", "rt-arguments-not-reencoded"},
    "reencodes-arguments": {"tool-arguments-byte-exact", "rt-arguments-not-reencoded"},
}

EOF_ID = "end-eof-before-finish"
"""Played in the openai-python driver's one run beside SUBSET (it fails there, by the SDK's design)."""


def _scenarios(ids: Sequence[str], **update: float) -> list[Scenario]:
    by_id = {s.id: s for s in catalogue()}
    return [by_id[i].model_copy(update=update) for i in ids]


def _broken(mode: str, env: dict[str, str] | None = None) -> ClientCommand:
    return ClientCommand(name=f"broken-{mode}", argv=(sys.executable, str(BROKEN), mode), env=env or {})


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie left for a parent that does not reap counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _exits_within(pid: int, timeout_s: float) -> bool:
    """Whether the process ends within `timeout_s`, waited for on a pidfd (no polling): SIGKILL is
    delivered when the kernel next runs the process, which on a loaded machine is not at once."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], timeout_s)
        return bool(ready) or not _alive(pid)
    finally:
        os.close(fd)


def _run(cmd: ClientCommand, scenarios: list[Scenario], **kw: object) -> dict[str, ClientScenarioResult]:
    results = asyncio.run(run_client_catalogue(scenarios, cmd, **kw))  # type: ignore[arg-type]
    return {r.id: r for r in results}


def _command(driver: str) -> ClientCommand:
    return resolve_client(driver) if driver == "openai-python" else _broken(driver)


@functools.cache
def _driver_hello(driver: str) -> dict[str, object]:
    """The driver's `hello` from its describe run, as `run_client_catalogue` asks for it first."""
    return asyncio.run(describe_client(_command(driver)))


_WARM: dict[str, WarmDriver] = {}
"""The warm process of a bundled driver, while this module's tests run."""


@pytest.fixture(scope="module", autouse=True)
def _stop_warm_drivers() -> Iterator[None]:
    yield
    while _WARM:
        _WARM.popitem()[1].close()


def _played_command(driver: str) -> ClientCommand:
    """How the scenario runs start `driver`: the openai-python driver through a warm process
    (tests/conformance/warm_driver.py) that imports the SDK once for all its runs, instead of
    each run's process importing it (0.8 s of CPU each). The runner still starts, feeds, reads
    and ends a process of its own for each run; the describe runs, the broken drivers and the
    anthropic-python run are fresh processes throughout."""
    if driver != "openai-python":
        return _command(driver)
    if driver not in _WARM:
        _WARM[driver] = WarmDriver(CLIENTS_DIR / "drive_openai.py", "openai")
    return ClientCommand(name=driver, argv=_WARM[driver].argv)


@functools.cache
def _driver_run(driver: str) -> dict[str, ClientScenarioResult]:
    """One run of a driver over its scenarios, shared by the tests that judge it (each
    openai-python run plays the SDK, which is most of this file's time). The tests that
    share a run share an xdist group, so `--dist loadgroup` plays each run once while the runs of
    the different drivers go to different workers."""
    ids = [*SUBSET, EOF_ID] if driver == "openai-python" else SUBSET
    return _run(_played_command(driver), _scenarios(ids), hello=_driver_hello(driver))


def _group(driver: str) -> pytest.MarkDecorator:
    return pytest.mark.xdist_group(f"clients-{driver}")


@pytest.fixture
def openai_results() -> dict[str, ClientScenarioResult]:
    return {i: r for i, r in _driver_run("openai-python").items() if i in SUBSET}


@_group("openai-python")
def test_openai_driver_passes_the_subset(openai_results: dict[str, ClientScenarioResult]) -> None:
    assert {i: r.status for i, r in openai_results.items()} == dict.fromkeys(SUBSET, "pass"), \
        {i: r.diff for i, r in openai_results.items() if r.status == "fail"}
    passback = openai_results["rt-thinking-tool-call"].observations
    assert [o["finish"] for o in passback] == ["tool_calls", "stop"]
    assert passback[0]["reasoning"] == "The user asks about Hangzhou weather. I'll call get_weather."


@_group("openai-python")
def test_openai_driver_reports_what_the_library_really_does() -> None:
    """A clean EOF before any finish: the SDK raises nothing and gives no finish reason, and the
    runner says so instead of calling it a stop."""
    res = _driver_run("openai-python")[EOF_ID]
    assert res.status == "fail"
    assert res.failed == ["step0.finish"]
    assert "expected finish error, the library gave no finish reason and no error" in res.reason
    assert res.observations[0]["content"] == "partial answer"


@pytest.mark.parametrize("mode", [pytest.param(m, marks=_group(m)) for m in sorted(MUST_FAIL)])
def test_broken_driver_fails_exactly_its_scenarios(mode: str) -> None:
    results = _driver_run(mode)
    failed = {i for i, r in results.items() if r.status == "fail"}
    assert failed == MUST_FAIL[mode], {i: r.reason for i, r in results.items()}


@_group("drops-passback")
def test_dropped_passback_is_named_in_the_request_and_the_server_answer() -> None:
    res = _driver_run("drops-passback")["rt-thinking-tool-call"]
    assert "step1.serialize" in res.failed and "step1.finish" in res.failed
    assert "reasoning_content" in res.diff and "<absent>" in res.diff
    assert "The `reasoning_content` in the thinking mode must be passed back" in res.reason


@_group("reencodes-arguments")
def test_reencoded_arguments_show_the_byte_difference() -> None:
    res = _driver_run("reencodes-arguments")["tool-arguments-byte-exact"]
    assert res.failed == ["step0.assemble"]
    assert '\\"ratio\\":1.50' in res.diff and '\\"ratio\\": 1.5,' in res.diff


@pytest.mark.parametrize(("mode", "failed", "words"), [
    ("crash", ["driver"], ["exited with status 1", "RuntimeError: the driver fell over"]),
    ("garbage", ["driver"], ["stdout line 2 is not JSON", "calling the model now"]),
    ("bad-schema", ["driver"], ["violates the protocol schema at `tool_calls[0].arguments`", "is not of type 'string'"]),
    ("silent", ["step0.played"], ["step 0 was not played (the driver stopped early)"]),
])
def test_protocol_breakers_get_a_clear_failure(mode: str, failed: list[str], words: list[str]) -> None:
    res = _run(_broken(mode), _scenarios(["tool-split-arguments"]))["tool-split-arguments"]
    assert res.status == "fail"
    assert res.failed == failed
    text = res.reason + res.diff
    assert all(w in text for w in words), text
    assert "Traceback" not in res.reason


def test_hung_driver_is_killed_with_its_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    cmd = _broken("hang-child", {"BROKEN_CLIENT_PIDFILE": str(pidfile)})
    res = _run(cmd, _scenarios(["tool-split-arguments"], budget_s=1.0))["tool-split-arguments"]
    assert res.status == "fail" and res.failed == ["driver"]
    assert res.reason.startswith("timeout: the driver did not finish within the scenario's 1 s budget")
    assert _exits_within(int(pidfile.read_text()), 30.0)


def test_driver_that_never_says_hello_fails_within_the_startup_time() -> None:
    # `slow-hello` sleeps for an hour before its hello, so no startup time is ever enough: a short one
    res = _run(_broken("slow-hello"), _scenarios(["tool-split-arguments"]), hello={"type": "hello"},
               startup_s=0.3)["tool-split-arguments"]
    assert res.status == "fail"
    assert "printed no `hello` line within 0.3 s" in res.reason


def test_a_driver_whose_library_is_missing_does_not_describe_itself(tmp_path: Path) -> None:
    """The bundled drivers answer a describe request before importing their library; one whose
    package is not installed must still fail the describe (as the import would have), naming the
    package, rather than pass it and crash in every scenario."""
    driver = tmp_path / "drive_ghost.py"
    driver.write_text(f"import sys\nsys.path.insert(0, {str(CLIENTS_DIR)!r})\nimport driverkit\n"
                      "DRIVER = driverkit.Driver('ghost', protocols=['chat'], packages=['dshkit-ghost-library'])\n"
                      "DRIVER.answer_describe()\nimport dshkit_ghost_library\n")
    with pytest.raises(ClientError, match=r"client 'ghost' did not describe itself: the driver exited with status 1 "
                                          r"before printing `hello`(.|\n)*ghost: not installed: dshkit-ghost-library"):
        asyncio.run(describe_client(ClientCommand(name="ghost", argv=(sys.executable, str(driver)))))


def test_parse_line_locates_what_is_wrong() -> None:
    with pytest.raises(ProtocolViolation, match=r"stdout line 3 is not UTF-8"):
        parse_line(b"\xff\xfe\n", 3, expect="observation")
    with pytest.raises(ProtocolViolation, match=r"'observation' message where the protocol expects 'hello'"):
        parse_line(b'{"type": "observation"}\n', 1, expect="hello")
    with pytest.raises(ProtocolViolation, match=r"at `the line`: 'step' is a required property"):
        parse_line(json.dumps({"type": "observation"}).encode(), 2, expect="observation")


def test_every_catalogue_task_is_valid_against_the_task_schema() -> None:
    for sc in catalogue():
        for protocol in sc.protocols:
            validate_task(build_task(sc, protocol=protocol, base_url="http://127.0.0.1:1", api_key="sk-x"))


def test_every_catalogue_task_offers_each_tool_once() -> None:
    """DeepSeek's Anthropic surface (and the mock) answer 400 to a tool name defined twice, so a
    task that offered the tool its model calls twice failed every client that sends the list."""
    for sc in catalogue():
        for protocol in sc.protocols:
            names = [t["name"] for t in build_task(sc, protocol=protocol, base_url="http://127.0.0.1:1",
                                                    api_key="sk-x")["tools"]]
            assert len(names) == len(set(names)), (sc.id, names)


def test_cli_client_mode_exit_codes_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "client.json"
    code = main(["conformance", "--client", f"{sys.executable} {BROKEN} crash", "--only", "tool-split-arguments",
                 "--json", str(report)])
    out = capsys.readouterr().out
    assert code == 1
    assert ("FAIL tools/tool-split-arguments (opener with empty arguments, then fragments without id or name "
            "(the live shape)): failed: driver; the driver exited with status 1") in out
    doc = json.loads(report.read_text())
    assert doc["client"].endswith("crash") and doc["driver"]["client"] == "broken-crash"
    assert doc["summary"] == {"pass": 0, "fail": 1, "n/a": 0}
    assert "RuntimeError" in doc["scenarios"][0]["stderr"]


@pytest.mark.parametrize(("argv", "words"), [
    (["--client", "openai-python", "--adapter", "x:y"], "cannot be combined with --adapter"),
    (["--client", "openai-python", "--client-option", "nonsense"], "must look like KEY=VALUE"),
    (["--client", "openai-python", "--client-option", "speed=11"], "has no option speed (it offers: max_retries)"),
    (["--client", "openai-python", "--protocol", "anthropic"], "speaks chat, not anthropic"),
    (["--client", f"{sys.executable} {BROKEN} slow-hello-typo"], "did not describe itself"),
])
def test_cli_client_usage_errors_exit_2(argv: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", *argv]) == 2
    assert words in capsys.readouterr().err


def test_matrix_columns_name_catalogue_scenarios_of_their_wire() -> None:
    by_id = {s.id: s for s in catalogue()}
    for b in BEHAVIOURS:
        for protocol in ("chat", "anthropic"):
            for sid in b.ids(protocol):
                assert sid in by_id and protocol in by_id[sid].protocols, (b.name, protocol, sid)


def _result(sid: str, status: str, reason: str = "") -> ClientScenarioResult:
    return ClientScenarioResult(id=sid, tags=["A5", "area:tools"], status=status, reason=reason)  # type: ignore[arg-type]


def test_matrix_page_explains_each_failing_cell_and_what_options_did() -> None:
    fragments = BEHAVIOURS[0]
    results = [_result(sid, "pass") for b in BEHAVIOURS for sid in b.chat]
    results[0] = _result(fragments.chat[0], "fail", "failed: step0.assemble; step0.assemble: expected a, got b")
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


def test_client_report_renders_in_dshkit_view(tmp_path: Path) -> None:
    report = tmp_path / "client.json"
    write_json(report, [_result("tool-split-arguments", "pass")], adapter=None, client="demo",
               driver={"libraries": {"demo-lib": "1.2.3"}})
    html, kind = render_paths([report])
    assert kind == "conformance"
    assert '<th title="client demo">client demo' in html and "<small>demo-lib 1.2.3</small>" in html
    assert '<tr data-scenario="tool-split-arguments">' in html and '<td class="pass">pass</td>' in html


def test_client_run_survives_its_json_report() -> None:
    """`--json-dir` renders the matrix from reports written by earlier invocations."""
    results = [_result("http-429-rate-limit", "fail", "failed: step0.finish; step0.finish: expected x, got y")]
    results[0].info.append("step0.requests: the client sent 3 requests (2 retries, 2009 ms, 2005 ms after the previous answer)")
    run = ClientRun(name="demo", hello={"libraries": {"demo-lib": "1"}}, protocol="chat", results=results,
                    tried={"429 with Retry-After": [({"max_retries": "0"}, "pass")]}, catalogue=200)
    back = ClientRun.from_json(json.loads(json.dumps(run.to_json())))
    assert (back.name, back.protocol, back.catalogue, back.tried) == ("demo", "chat", 200, run.tried)
    assert [(r.id, r.status, r.reason, r.info) for r in back.results] == [(r.id, r.status, r.reason, r.info) for r in results]
    page = render_markdown([back], date="2026-01-02", command="x")
    assert "0 / 1 / 0 (1 of 200 run)" in page


@_group("drops-passback")
def test_a_known_defect_outside_the_columns_gets_its_reason_and_the_options_tried() -> None:
    """A driver's `known` note explains a failing scenario no column holds: the matrix reruns it
    with each of the driver's `tries` and the page gives the note, what was seen and the verdict.
    (The first run is the drops-passback driver's shared one; the `known` note changes nothing
    in how a scenario is played.)"""
    sid = "rt-arguments-not-reencoded"
    assert sid not in matrix_ids("chat")
    cmd = _broken("drops-passback")
    hello = {**_driver_hello("drops-passback"), "known": {sid: "drops `reasoning_content` from the turn it sends back"}}
    scenarios = _scenarios([sid, "tool-split-arguments"])
    results = [_driver_run("drops-passback")[s.id] for s in scenarios]
    assert {r.id: r.status for r in results} == {sid: "fail", "tool-split-arguments": "pass"}
    run = ClientRun(name="broken", hello=hello, protocol="chat", results=results)
    asyncio.run(try_options(run, cmd, scenarios))
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


def test_cli_renders_the_matrix_from_saved_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reports, page = tmp_path / "reports", tmp_path / "clients.md"
    reports.mkdir()
    run = ClientRun(name="demo", hello={"libraries": {"demo-lib": "1"}}, protocol="chat",
                    results=[_result("http-500-server", "pass")], catalogue=1)
    (reports / "demo.json").write_text(json.dumps(run.to_json()))
    assert main(["conformance", "--json-dir", str(reports), "--matrix-md", str(page)]) == 0
    assert "| demo | — | — | — | pass |" in page.read_text()
    assert main(["conformance", "--matrix-md", str(page)]) == 2
    assert "needs --json-dir DIR" in capsys.readouterr().err


def test_anthropic_driver_observes_a_reset_mid_stream() -> None:
    """`an-reset-mid-stream`: text, then a TCP reset on the Anthropic wire. The anthropic-python
    driver reports what the SDK did (the partial text, no finish, the error class that escaped)
    and the verdict names it; the scenario is in the matrix's TCP reset column."""
    assert "an-reset-mid-stream" in BEHAVIOURS[5].ids("anthropic") and BEHAVIOURS[5].name == "TCP reset"
    res = _run(resolve_client("anthropic-python"), _scenarios(["an-reset-mid-stream"]),
               protocol="anthropic")["an-reset-mid-stream"]
    (obs,) = res.observations
    assert obs["content"] == "cut short" and obs["finish"] is None
    err = obs["error"]
    assert err is not None and err["class"] and err["status"] is None
    if err["own"]:  # a library that wraps the reset in its own error passes
        assert res.status == "pass", res.reason
    else:  # anthropic 2.x lets the transport's ReadError through (issue: a raw transport error)
        assert res.status == "fail" and res.failed == ["step0.translate"]
        assert f"the library let {err['class']} escape" in res.reason


@pytest.mark.parametrize("content", [b"\xff\xfe not utf-8", b"[" * 5000, b'{"client": "x", "scenarios": 3}',
                                     b'{"client": "x", "scenarios": [{"status": "pass"}]}', b"{,}"])
def test_a_bad_saved_report_is_a_located_usage_error(tmp_path: Path, content: bytes,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    reports, page = tmp_path / "reports", tmp_path / "clients.md"
    reports.mkdir()
    (reports / "bad.json").write_bytes(content)
    assert main(["conformance", "--json-dir", str(reports), "--matrix-md", str(page)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"dshkit conformance: {reports / 'bad.json'}: ") and "Traceback" not in err
    assert not page.exists()


def test_a_report_holding_a_lone_surrogate_is_written_as_strict_json(tmp_path: Path) -> None:
    run = ClientRun(name="demo\ud800", hello={}, protocol="chat",
                    results=[_result("http-500-server", "fail", "got \ud800 back")], catalogue=1)
    reports = tmp_path / "reports"
    client_cli._write(reports / "demo.json", run)
    assert json.loads((reports / "demo.json").read_text(encoding="utf-8"))["client"] == "demo\ud800"
    back = client_cli._reports(reports)
    assert back[0].name == "demo\ud800" and back[0].results[0].reason == "got \ud800 back"
