"""`python -m dshkit.mock_server serve` (the `dshkit serve` command) as a subprocess."""

from __future__ import annotations

import json
import re
import signal
import socket
from pathlib import Path

import httpx
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from dshkit.mock_server import cli
from dshkit.mock_server.__main__ import main
from dshkit.mock_server.journal import json_line

from .cli_process import SHARES_PLAIN_SERVE, ServeProcess
from .wire import chat


@pytest.fixture
def serve() -> object:
    started: list[ServeProcess] = []

    def start(*args: str) -> ServeProcess:
        p = ServeProcess(*args)
        started.append(p)
        return p

    yield start
    for p in started:
        p.kill()


def test_ready_then_request_and_result_lines_then_a_summary_at_sigint(serve, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """One process for the lines a run prints (ready, then request and result per request, a
    rejected one included), the journal it keeps, and the summary SIGINT makes it print: of the
    steps it played, the ones it never reached and the requests it refused."""
    journal = tmp_path / "j.jsonl"
    p = serve("--sequence", "success,rate_limit,success,rate_limit", "--seed", "42", "--journal", str(journal),
              "--api-key", "sk-cli")
    assert p.ready["type"] == "ready" and p.ready["seed"] == 42
    assert p.ready["base_url"] == f"http://127.0.0.1:{p.ready['port']}"
    headers = {"Authorization": "Bearer sk-cli", "X-Mock-Session": "cli"}
    with httpx.Client(base_url=p.base_url, timeout=2, headers=headers) as c:
        assert c.post("/v1/chat/completions", json=chat()).status_code == 200
        assert c.post("/chat/completions", json=chat()).status_code == 429
        bad = c.post("/chat/completions", json={"model": "deepseek-chat"})  # no messages
        assert bad.status_code == 400
    lines = [p.next_line() for _ in range(6)]
    assert [(x["type"], x["behavior"], x["session"], x["step"]) for x in lines] == [
        ("request", "success", "cli", 0), ("result", "success", "cli", 0),
        ("request", "rate_limit", "cli", 1), ("result", "rate_limit", "cli", 1),
        ("request", "rejected", "cli", None), ("result", "rejected", "cli", None)]
    assert lines[1]["outcome"] == "completed" and lines[3]["status"] == 429
    assert lines[5]["outcome"] == "rejected" and lines[5]["status"] == 400
    code, rest = p.stop(signal.SIGINT)
    assert code == 130
    text = journal.read_text()
    assert len(text.splitlines()) == 3 and "sk-cli" not in text and "sk-cli" not in rest + p.stderr
    summary = json.loads(rest.splitlines()[-1])
    assert summary["type"] == "summary" and summary["requests"] == 3
    assert summary["outcomes"] == {"completed": 2, "rejected": 1}
    assert [u.split(" of session")[0] for u in summary["unused_steps"]] == ["sequence[2] (success)", "sequence[3] (rate_limit)"]
    (rejection,) = summary["rejections"]
    assert rejection["status"] == 400 and "messages" in rejection["reason"]
    err = p.stderr
    assert "dshkit serve: 3 request(s) (2 completed, 1 rejected)" in err
    assert "unused scripted steps: 2" in err and "rejected #3 /chat/completions → 400" in err


def test_sigterm_closes_a_stalled_stream(serve) -> None:  # type: ignore[no-untyped-def]
    p = serve("--sequence", "stall")
    with httpx.Client(timeout=httpx.Timeout(5.0)) as c, c.stream(
        "POST", p.base_url + "/chat/completions", json=chat()
    ) as r:
        assert r.status_code == 200
        assert p.next_line()["type"] == "request"  # the server is now holding the stream
        p.proc.send_signal(signal.SIGTERM)
        with pytest.raises(httpx.HTTPError):
            for _ in r.iter_raw():
                pass
    code, rest = p.stop(None)
    assert code == 143
    result = json.loads(rest.splitlines()[0])
    assert result["type"] == "result" and result["outcome"] == "closed"


@SHARES_PLAIN_SERVE
def test_default_reply_without_script(plain_serve: ServeProcess) -> None:
    with httpx.Client(timeout=2) as c:
        r = c.post(plain_serve.base_url + "/chat/completions", json=chat("hello there", stream=False))
    assert r.json()["choices"][0]["message"]["content"] == 'You said: "hello there"'


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sequence", "nope"], "steps[0].fault"),
        (["--sequence", "success,connection_refused"], "only as the first"),
        (["--sequence", "connection_refused,success"], "explicit non-zero --port"),
        (["--listen-delay-ms", "5"], "only allowed with"),
        (["--weights", "success=1"], "needs `random`"),
        (["--sequence", "random", "--weights", "nope=1"], "unknown fault"),
        (["--script", "/nonexistent.yaml"], "cannot read script file"),
    ],
)
def test_bad_options_exit_2_with_a_message(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    # Rejected before any socket or loop exists, so this runs in-process.
    assert main(["serve", *args]) == 2
    out, err = capsys.readouterr()
    assert message in err and out == ""


def test_connection_refused_phase(serve) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = serve("--sequence", "connection_refused,success", "--port", str(port), "--listen-delay-ms", "1000")
    assert p.ready["type"] == "unavailable" and p.ready["listen_delay_ms"] == 1000
    with pytest.raises(httpx.ConnectError):
        httpx.post(f"http://127.0.0.1:{port}/chat/completions", json=chat(), timeout=1)
    ready = p.next_line(timeout=10)
    assert ready["type"] == "ready" and ready["port"] == port
    assert httpx.post(ready["base_url"] + "/chat/completions", json=chat(), timeout=2).status_code == 200


def test_serve_help_lists_every_fault_and_examples(capsys: pytest.CaptureFixture[str]) -> None:
    from dshkit.mock_server.faults import FAULTS

    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and "dshkit serve --sequence rate_limit,success" in out
    listed = set(re.findall(r"[a-z_]+", out.split("fault names (for")[1]))
    assert set(FAULTS) <= listed


def test_a_misspelt_fault_name_gets_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--sequence", "rate_limt"]) == 2
    assert "unknown fault `rate_limt` (did you mean `rate_limit`?)" in capsys.readouterr().err


_TEXT = st.one_of(st.none(), st.text(), st.sampled_from(["default", "reply", "completed", "s\ud800", "a\"b\\\n\x00é"]))
_NUMBER = st.one_of(st.none(), st.integers(-(2**70), 2**70), st.booleans(), st.floats(allow_nan=True))


#: The values the handlers put in their events, so the template spells every line.
_PLAIN_TEXT = st.one_of(st.none(), st.just("s\ud800"), st.sampled_from(["default", "reply", "a\"b\\\n\x00é"]), st.text())
_PLAIN_INT = st.integers(0, 10**12)
_OPTIONAL_INT = st.one_of(st.none(), _PLAIN_INT)


@given(st.one_of(
    st.fixed_dictionaries({"type": st.just("result"), "seq": _PLAIN_INT, "session": _PLAIN_TEXT, "script": _PLAIN_TEXT,
                           "step": _OPTIONAL_INT, "behavior": _PLAIN_TEXT, "status": _OPTIONAL_INT,
                           "outcome": _PLAIN_TEXT, "writes": _PLAIN_INT, "bytes": _PLAIN_INT}),
    st.fixed_dictionaries({"type": st.just("request"), "seq": _PLAIN_INT, "path": _PLAIN_TEXT, "session": _PLAIN_TEXT,
                           "script": _PLAIN_TEXT, "step": _OPTIONAL_INT, "script_behavior": _PLAIN_TEXT,
                           "behavior": _PLAIN_TEXT}),
))
@example({"type": "result", "seq": 7, "session": "s\udc80", "script": None, "step": None, "behavior": "reply",
          "status": None, "outcome": "completed", "writes": 1, "bytes": 900})
@example({"type": "request", "seq": 3, "path": "/chat/completions", "session": "s", "script": None, "step": True,
          "script_behavior": "default", "behavior": "default"})  # a bool spells `true`, not 1
@example({"type": "result", "seq": True, "session": "s", "script": None, "step": None, "behavior": "reply",
          "status": 200, "outcome": "completed", "writes": 1, "bytes": 900})
def test_the_handlers_telemetry_lines_are_json_line_of_the_event(event: dict[str, object]) -> None:
    """The events as the handlers make them (ints, strings and None, a lone surrogate now and
    then), which the template spells: the very line `json_line` gives."""
    assert cli._event_line(event) == json_line(event)


@given(st.one_of(
    st.fixed_dictionaries({"type": st.just("result"), "seq": _NUMBER, "session": _TEXT, "script": _TEXT,
                           "step": _NUMBER, "behavior": _TEXT, "status": _NUMBER, "outcome": _TEXT,
                           "writes": _NUMBER, "bytes": _NUMBER}),
    st.fixed_dictionaries({"type": st.just("request"), "seq": _NUMBER, "path": _TEXT, "session": _TEXT,
                           "script": _TEXT, "step": _NUMBER, "script_behavior": _TEXT, "behavior": _TEXT}),
    st.dictionaries(st.text(max_size=8), st.one_of(_TEXT, _NUMBER), max_size=4),
))
def test_telemetry_lines_are_json_line_of_the_event(event: dict[str, object]) -> None:
    """The per-request lines spelled from a template are the very text `json_line` gives the
    event, whatever its values (lone surrogates, quotes, bools, NaN, a worker's extra key)."""
    assert cli._event_line(event) == json_line(event)
    assert cli._event_line({**event, "worker": 2}) == json_line({**event, "worker": 2})
