"""The session view's model and page, without a browser: what a log says reaches the page."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import zstandard

from dshkit.cli import main
from dshkit.harness.loop import rebuild_requests
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.harness.session import parse_session_log
from dshkit.mock_server import MockServer, Script
from dshkit.view import ViewError, render_paths
from dshkit.view.load import detect_kind
from dshkit.view.sessions import SentRequest, build_session_view

from ..harness.loop.test_header import title_log_text
from .conftest import ARGUMENTS, FRAGMENT_POINTS, Walk

REPO = Path(__file__).resolve().parents[2]


def _fragments() -> list[str]:
    cuts = [0, *FRAGMENT_POINTS, len(ARGUMENTS)]
    return [ARGUMENTS[a:b] for a, b in itertools.pairwise(cuts)]


def test_the_timeline_holds_each_call_its_fragments_retry_and_usage(walk: Walk) -> None:
    journal = [json.loads(line)["body"] for line in walk.journal.read_text().splitlines()]
    view = build_session_view(parse_session_log(walk.log.read_bytes()), journal)
    assert [t.turn for t in view.turns] == [1] and view.turns[0].end == {"kind": "completed"}
    (first, second, third) = view.calls
    # the failed attempt: an error finish with the 429, then the retry in the same step
    assert first.finish is not None and first.finish["reason"]["failure"]["code"] == "RATE_LIMIT"
    kinds = [item.kind for item in view.turns[0].steps[0].items]
    assert kinds == ["user", "call", "retry", "call", "tool-call", "tool-result"]
    # arguments stay the fragments the wire delivered, in order (block 1, after the reasoning);
    # the first delta is the call's identity (id and name) with empty arguments
    assert second.fragments() == {1: ["", *_fragments()]}
    assert second.usage is not None and third.usage is not None
    # every rebuilt request is exactly what the server received
    assert [c.request for c in view.calls] == journal and not any(c.diff for c in view.calls)


def test_a_request_that_differs_from_the_log_shows_as_a_diff(walk: Walk, tmp_path: Path) -> None:
    entries = [json.loads(line) for line in walk.journal.read_text().splitlines()]
    entries[-1]["body"]["messages"][1]["content"] = "something the log never held"  # the user's text
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("".join(json.dumps(e) + "\n" for e in entries))
    view = build_session_view(parse_session_log(walk.log.read_bytes()), [e["body"] for e in entries])
    assert [bool(c.diff) for c in view.calls] == [False, False, True]
    changed = [line for line in view.calls[2].diff if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    assert changed == ['-      "content": "What is this project?"', '+      "content": "something the log never held"']
    html, kind = render_paths([walk.log], journal=tampered)
    assert kind == "session" and "1 request differs from what was sent" in html


def test_log_text_is_escaped_and_nothing_is_fetched(walk: Walk) -> None:
    html, _ = render_paths([walk.log])
    text = re.sub(r"<[^>]+>", "", html)  # the answer streams as several spans
    assert "It forges &lt;widgets&gt; &amp; tests them." in text and "<widgets>" not in html
    for fetching in ("<script", "<link", "src=", "@import", "url("):
        assert fetching not in html


@pytest.mark.parametrize(
    ("name", "kind"),
    [("tool-call-split-args.cassette.jsonl", "cassette"), ("plain-text.cassette.jsonl", "cassette")],
)
def test_cassettes_are_recognised(name: str, kind: str) -> None:
    assert detect_kind(REPO / "recordings" / name) == kind


def test_cassette_page_shows_the_wire_fragments() -> None:
    html, kind = render_paths([REPO / "recordings" / "tool-call-split-args.cassette.jsonl"])
    assert kind == "cassette" and html.count('class="fragment"') > 2


def test_journal_page(walk: Walk) -> None:
    html, kind = render_paths([walk.journal])
    assert kind == "journal" and 'data-status="429"' in html and html.count('class="fragment"') == 1 + len(_fragments())


def test_conformance_reports_make_a_matrix(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    a.write_text(json.dumps({"adapter": "deepseek", "scenarios": [{"id": "A1", "tags": [], "status": "pass"}],
                             "summary": {"pass": 1, "fail": 0, "n/a": 0}}))
    b.write_text(json.dumps({"adapter": "broken", "scenarios": [
        {"id": "A1", "tags": [], "status": "fail", "diff": "--- expected\n+++ actual\n-1\n+2\n"}],
        "summary": {"pass": 0, "fail": 1, "n/a": 0}}))
    html, kind = render_paths([a, b])
    assert kind == "conformance"
    assert '<td class="pass">pass</td><td class="fail"><a href="#d-1-0" title="">fail</a></td>' in html
    assert 'id="d-1-0"' in html and '<span class="add">+2</span>' in html


def test_a_file_it_cannot_show_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("hello\n")
    with pytest.raises(ViewError, match="not a session log, cassette, journal or conformance report"):
        render_paths([bad])
    assert main(["view", str(bad)]) == 2
    assert "notes.txt: not a session log" in capsys.readouterr().err
    assert main(["view", str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_cli_writes_the_page_and_prints_its_path(walk: Walk, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "v" / "walk.html"
    code = main(["view", str(walk.log), "--journal", str(walk.journal), "-o", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert printed.out.strip() == str(out)
    assert "0 requests differ from what was sent" in out.read_text()


def test_make_run_prints_the_view_of_its_walk() -> None:
    if not (REPO / ".venv" / "bin" / "dshkit").exists():
        pytest.skip("`make run` needs the project's .venv (made by `make test` or `make run`)")
    # -o: never reinstall from inside the suite, even when pyproject.toml is newer than the stamp
    result = subprocess.run(["make", "-s", "-o", ".venv/.installed-stamp", "run"], cwd=REPO,
                            capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("view: .dshkit/views/make-run-")
    page = (REPO / last.removeprefix("view: ")).read_text()
    assert 'data-finish="tool-calls"' in page and 'data-finish="stop"' in page


def test_replay_prints_a_diff_and_exits_1_when_a_result_differs(
    walk: Walk, capsys: pytest.CaptureFixture[str]
) -> None:
    # Replaying with the real tools in the same workspace gives the same results...
    assert main(["replay", str(walk.log), "--tools", "builtin", "--workspace", str(walk.workspace)]) == 0
    capsys.readouterr()
    # ...and after the README changed, the tool result differs: a diff, exit 1.
    (walk.workspace / "README.md").write_text("# Gadget Works\n")
    assert main(["replay", str(walk.log), "--tools", "builtin", "--workspace", str(walk.workspace)]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["tool_results_equal"] is False
    err = captured.err.splitlines()
    assert "tool result 1 differs:" in err and "--- logged tool result 1" in err
    assert any(line.startswith("-") and "Widget Forge" in line for line in err)
    assert any(line.startswith("+") and "Gadget Works" in line for line in err)


def test_upstream_dsh_logs_render_even_when_requests_cannot_be_rebuilt(dsh_sessions: Path) -> None:
    # DSH's logs name their tools instead of carrying schemas: the timeline still renders and each
    # call says why its request was not rebuilt.
    logs = sorted(dsh_sessions.glob("*--session.jsonl"))
    assert logs
    for log in logs:
        html, kind = render_paths([log])
        assert kind == "session" and 'class="turn"' in html, log.name
    html, _ = render_paths([dsh_sessions / "empty-response-retry--session.jsonl"])
    assert "request not rebuilt: JsonShapeError" in html and 'class="retry"' in html


def test_a_journal_of_several_sessions_is_matched_by_session_id(walk: Walk, tmp_path: Path) -> None:
    entries = [json.loads(line) for line in walk.journal.read_text().splitlines()]
    assert {e["session"] for e in entries} == {parse_session_log(walk.log.read_bytes()).session.id}
    other = [{**e, "session": "another-run", "body": {**e["body"], "model": "other"}} for e in entries]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(e) + "\n" for pair in zip(other, entries, strict=True) for e in pair))
    html, _ = render_paths([walk.log], journal=mixed)
    assert "0 requests differ from what was sent" in html


def test_open_hands_the_page_to_the_browser(walk: Walk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    import webbrowser

    opened = tmp_path / "opened.txt"
    recorder = tmp_path / "browser.py"
    recorder.write_text(f"import sys\nopen({str(opened)!r}, 'w').write(sys.argv[1])\n")
    out = tmp_path / "page.html"
    monkeypatch.setenv("BROWSER", f"{sys.executable} {recorder} %s")
    # webbrowser reads $BROWSER on its first use in a process: here it starts over, as in a new one
    monkeypatch.setattr(webbrowser, "_tryorder", None)
    monkeypatch.setattr(webbrowser, "_browsers", {})
    assert main(["view", str(walk.log), "-o", str(out), "--open"]) == 0, capsys.readouterr().err
    assert opened.read_text() == out.resolve().as_uri()


def test_an_http_error_answer_shows_its_error_body() -> None:
    html, _ = render_paths([REPO / "recordings" / "bad-request-400.cassette.jsonl"])
    assert 'data-status="400"' in html and 'class="failure"' in html and "invalid_request_error" in html


async def _send_as_dsh(requests: list[Any], order: list[int], journal: Path) -> None:
    """Send the rebuilt requests through the real adapter to a journaling mock server, in
    `order`: DSH sends the title request beside step 1, so it may arrive first or second."""
    steps = [{"reply": {"content": "answer"}} for _ in requests]
    async with MockServer(Script.of(*steps), journal=journal) as server:
        adapter = DeepSeekAdapter(server.base_url, "sk-view")
        try:
            for i in order:
                assert [c async for c in adapter.stream(requests[i])]
        finally:
            await adapter.aclose()


@pytest.mark.parametrize("order", [[1, 0], [0, 1]], ids=["title-second", "title-first"])
@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "zstd"])
async def test_the_title_request_is_shown_and_paired_by_identity(
    order: list[int], compressed: bool, tmp_path: Path
) -> None:
    text = title_log_text()
    log = tmp_path / ("session.jsonl.zstd" if compressed else "session.jsonl")
    log.write_bytes(zstandard.ZstdCompressor().compress(text.encode()) if compressed else text.encode())
    loaded = parse_session_log(log.read_bytes(), lenient=True)
    requests = rebuild_requests(list(loaded.session.events), session_id=loaded.session.id)
    assert [r.purpose for r in requests] == ["session-title", None]
    journal = tmp_path / "journal.jsonl"
    await _send_as_dsh(requests, order, journal)
    html, kind = render_paths([log], journal=journal)
    assert kind == "session" and "0 requests differ from what was sent" in html
    assert 'data-purpose="session-title"' in html and "1 auxiliary request<" in html and "no rebuilt request matches" not in html
    sent = [json.loads(line) for line in journal.read_text().splitlines()]
    view = build_session_view(loaded, [SentRequest(body=e["body"], session=e["session"]) for e in sent])
    (title,), (call,) = view.auxiliary, view.calls
    assert title.sent == title.request and title.request is not None and title.request["thinking"] == {"type": "disabled"}
    assert call.sent == call.request and call.request is not None and "tools" in call.request
    kinds = [item.kind for item in view.turns[0].steps[0].items]
    assert kinds.index("title-request") < kinds.index("call")  # at its place in the log


async def test_a_title_request_that_differs_shows_its_own_diff(tmp_path: Path) -> None:
    log = tmp_path / "session.jsonl"
    log.write_text(title_log_text())
    loaded = parse_session_log(log.read_bytes(), lenient=True)
    requests = rebuild_requests(list(loaded.session.events), session_id=loaded.session.id)
    journal = tmp_path / "journal.jsonl"
    await _send_as_dsh(requests, [1, 0], journal)
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    entries[1]["body"]["max_tokens"] = 64  # the title request, sent second, asked for more
    sent = [SentRequest(body=e["body"], session=e["session"]) for e in entries]
    view = build_session_view(loaded, sent)
    assert view.calls[0].diff == [] and view.journal_extra == 0
    changed = [line for line in view.auxiliary[0].diff if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    assert changed == ['-  "max_tokens": 32', '+  "max_tokens": 64']


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"seq": 1, "path": "/chat/completions", "t": "soon", "writes": []}, "journal.jsonl:1: t must be a number"),
        ({"seq": 1, "path": "/chat/completions", "t": 1.0, "writes": [{"t": None}, 3]},
         "writes[0] must be an object with t and exactly one of text or b64"),
        ({"seq": 1, "path": "/chat/completions", "writes": [{"t": "x", "text": "data: {}"}]}, "writes[0].t must be a number"),
        ({"seq": 1, "path": "/chat/completions", "writes": [{"b64": "!!"}]}, "writes[0]: b64 is not base64"),
        # the envelope the mock server writes: a hand-edited field is named (issue 18)
        ({"seq": "abc", "path": "/chat/completions", "writes": []}, "journal.jsonl:1: seq must be an integer >= 1"),
        ({"seq": 1, "path": "/chat/completions", "writes": 5}, "journal.jsonl:1: writes must be a list of writes"),
        ({"seq": 1, "path": 7, "writes": []}, "journal.jsonl:1: path must be a string"),
        ({"seq": 1, "path": "/", "status": "200", "writes": []}, "journal.jsonl:1: status must be an HTTP status"),
        ({"seq": 1, "path": "/", "session": ["s"], "writes": []}, "journal.jsonl:1: session must be a string or null"),
        ({"seq": 1, "path": "/", "headers": {"a": 1}, "writes": []}, "journal.jsonl:1: headers.a must be a string"),
        ({"seq": 1, "path": "/", "t": 1e308, "writes": []}, "journal.jsonl:1: t must be a number of seconds"),
        ({"seq": 1, "path": "/", "writes": [{"t": 1, "text": 5}]}, "journal.jsonl:1: writes[0].text must be a string"),
    ],
)
def test_a_damaged_journal_is_a_located_error(line: dict[str, Any], message: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    journal = tmp_path / "journal.jsonl"
    journal.write_text(json.dumps(line) + "\n")
    with pytest.raises(ViewError, match=re.escape(message)):
        render_paths([journal])
    assert main(["view", str(journal), "-o", str(tmp_path / "out.html")]) == 2
    assert message in capsys.readouterr().err


def test_odd_shapes_inside_a_journal_still_render(tmp_path: Path) -> None:
    # the wire is data: any SSE payload, status or field type shows without a crash
    events = ['data: {"choices": 5}', 'data: {"choices": [{"delta": {"tool_calls": {"a": 1}}}]}',
              'data: {"choices": [{"delta": {"tool_calls": [{"index": "x", "function": {"arguments": 7}}]}}]}',
              "data: " + "[" * 5000, "data: [DONE]"]
    entry = {"seq": 1, "path": "/chat/completions", "status": 200, "outcome": "completed", "session": "s",
             "body": {"messages": "not a list"}, "writes": [{"t": 1.0, "text": "\n\n".join(events) + "\n\n"}]}
    journal = tmp_path / "journal.jsonl"
    journal.write_text(json.dumps(entry) + "\n")
    html, kind = render_paths([journal])
    assert kind == "journal" and 'class="fragment"' in html and "1 exchange<" in html


def test_reports_with_unknown_fields_still_make_a_matrix(tmp_path: Path) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"client": "my-client", "driver": {"libraries": {"openai": "1.2"}}, "extra": [1],
                               "scenarios": [{"id": "x", "tags": ["area:sse"], "status": "pass", "more": {}},
                                             {"id": "y", "status": "n/a", "title": "why <not>"}],
                               "summary": {"pass": 1, "n/a": 1}}))
    html, kind = render_paths([odd])
    assert kind == "conformance" and "client my-client" in html and "openai 1.2" in html
    assert "why &lt;not&gt;" in html and "× 1 client" in html


@pytest.mark.parametrize(("change", "message"), [
    ({"scenarios": "A1"}, "scenarios must be a list of scenario results, got \"A1\""),
    ({"scenarios": [3]}, "scenarios[0] must be an object with id and status, got 3"),
    ({"scenarios": [{"id": "x", "tags": "area:sse", "status": "pass"}]}, "scenarios[0].tags must be a list of strings"),
    ({"scenarios": [{"id": "x", "status": "weird"}]}, "scenarios[0].status must be one of pass, fail, n/a"),
    ({"scenarios": [{"id": 5, "status": "pass"}]}, "scenarios[0].id must be a non-empty string"),
    ({"scenarios": [{"id": "x", "status": "pass", "seconds": "slow"}]}, "scenarios[0].seconds must be a number"),
    ({"summary": {"pass": "many"}}, "summary.pass must be a count"),
    ({"summary": 5}, "summary must be an object of counts"),
    ({"driver": "node"}, "driver must be an object"),
])
def test_a_report_of_the_wrong_shape_names_the_field(change: dict[str, Any], message: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `scenarios` a string, a status that is a number, … made `dshkit view` trace back."""
    report = tmp_path / "odd.json"
    report.write_text(json.dumps({"adapter": "a:b", "scenarios": [{"id": "x", "status": "pass"}],
                                  "summary": {"pass": 1}, **change}))
    assert main(["view", str(report), "-o", str(tmp_path / "out.html")]) == 2
    err = capsys.readouterr().err
    assert f"{report}: {message}" in err and "Traceback" not in err
