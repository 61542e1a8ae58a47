"""`dshkit decode`: formats, detection, --status, --pretty, deterministic output, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dshkit.cli import main
from dshkit.harness.decode import CaptureError, decode_capture, detect_format

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed-walk.sse"

CHUNKS = [
    {"id": "x1", "object": "chat.completion.chunk", "created": 1, "model": "deepseek-v4-flash", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
    {"id": "x1", "object": "chat.completion.chunk", "created": 1, "model": "deepseek-v4-flash", "choices": [{"index": 0, "delta": {"content": "Hello 你好"}, "finish_reason": None}]},
    {"id": "x1", "object": "chat.completion.chunk", "created": 1, "model": "deepseek-v4-flash", "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 5, "completion_tokens": 2}},
]
SSE = "".join(f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in CHUNKS).encode() + b"data: [DONE]\n\n"
JSONL = "\n".join(json.dumps(c, ensure_ascii=False) for c in CHUNKS).encode() + b"\n"
JSON_ARRAY = json.dumps(CHUNKS, ensure_ascii=False, indent=1).encode()
ERROR_BODY = b'{"error":{"message":"Authentication Fails, Your api key: ****abcd is invalid","type":"authentication_error","param":null,"code":"invalid_request_error"}}'


def cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize(("data", "fmt"), [(SSE, "sse"), (JSONL, "jsonl"), (JSON_ARRAY, "json"), (ERROR_BODY, "error"), (b": keep-alive\n\n" + SSE, "sse"), (b"\n\n  " + JSON_ARRAY, "json")])
def test_detect_format(data: bytes, fmt: str) -> None:
    assert detect_format(data) == fmt


def test_detect_format_undetectable() -> None:
    with pytest.raises(CaptureError, match="pass --format"):
        detect_format(b"hello world\n")


@pytest.mark.parametrize(("data", "fmt"), [(SSE, "sse"), (JSONL, "jsonl"), (JSON_ARRAY, "json")])
def test_each_stream_format_gives_the_same_result(tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes, fmt: str) -> None:
    path = write(tmp_path, f"capture.{fmt}", data)
    reference = decode_capture(SSE).to_json()
    for extra in ([], ["--format", fmt]):
        code, out, err = cli(["decode", path, *extra], capsys)
        assert (code, err) == (0, "")
        doc = json.loads(out)
        assert set(doc) == {"chunks", "message", "usage", "finish", "meta"}
        assert doc["finish"] == {"kind": "stop"}
        assert doc["usage"] == {"inputTokens": 5, "outputTokens": 2}
        assert doc["message"]["content"] == [{"type": "text", "text": "Hello 你好"}]
        assert doc["message"]["role"] == "assistant"
        assert doc["meta"] == {"id": "x1", "model": "deepseek-v4-flash", "systemFingerprint": None, "doneMissing": False}
        assert doc["chunks"][0] == {"type": "block-start", "index": 0, "blockType": "text"}
        assert doc["chunks"][-1]["type"] == "finish"
        # the same chunks as the SSE capture, chunk for chunk (only the message id may differ)
        assert doc["chunks"] == reference["chunks"]
        assert {**doc["message"], "id": None} == {**reference["message"], "id": None}


def test_error_body_detected_and_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "err.json", ERROR_BODY)
    code, out, _ = cli(["decode", path], capsys)
    failure = json.loads(out)["finish"]["failure"]
    assert code == 0 and (failure["status"], failure["code"]) == (400, "INVALID_REQUEST")
    code, out, _ = cli(["decode", path, "--status", "401"], capsys)
    failure = json.loads(out)["finish"]["failure"]
    assert code == 0 and (failure["status"], failure["code"]) == (401, "AUTH")
    assert failure["providerError"] == {"type": "authentication_error", "code": "invalid_request_error", "param": None}
    # --status turns any body into an HTTP error body, even a non-JSON one
    text = write(tmp_path, "err.txt", b"upstream gateway timeout")
    code, out, _ = cli(["decode", text, "--status", "504"], capsys)
    failure = json.loads(out)["finish"]["failure"]
    assert code == 0 and failure["code"] == "SERVER" and "upstream gateway timeout" in failure["message"]
    assert json.loads(out)["message"]["content"] == []


def test_pretty(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["decode", str(SEED), "--pretty"], capsys)
    assert code == 0
    assert "── reasoning ──" in out
    assert "── tool call read (" in out
    assert '{"file_path":"README.md"}' in out
    assert "finish: tool-calls" in out
    assert out.splitlines()[-2].startswith("usage: input ")


def test_pretty_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["decode", write(tmp_path, "e.json", ERROR_BODY), "--status", "401", "--pretty"], capsys)
    assert code == 0 and "finish: error — AUTH: Authentication Fails" in out and "(HTTP 401)" in out


def test_seed_walk_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(["decode", str(SEED)], capsys)
    doc = json.loads(out)
    assert code == 0
    calls = [b for b in doc["message"]["content"] if b["type"] == "tool-call"]
    assert [(c["name"], c["arguments"]) for c in calls] == [("read", '{"file_path":"README.md"}')]
    assert doc["finish"] == {"kind": "tool-calls"}


def test_output_is_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    # one run in another process, one here: two interpreters, each with its own hash seed
    other = subprocess.run([sys.executable, "-m", "dshkit.cli", "decode", str(SEED)], capture_output=True,
                           check=True, cwd=REPO, text=True).stdout
    code, here, _ = cli(["decode", str(SEED)], capsys)
    assert code == 0 and here == other and here
    # the message id is derived from the input: other bytes, other id
    other = decode_capture(SSE).message_id
    assert other == decode_capture(SSE).message_id != decode_capture(JSONL).message_id


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(SSE)))
    code, out, _ = cli(["decode", "-"], capsys)
    assert code == 0 and json.loads(out)["finish"] == {"kind": "stop"}


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [("missing.sse", None, "cannot read"), ("empty.sse", b"", "empty"), ("blank.sse", b"  \n\n", "empty"), ("prose.txt", b"just some text\n", "pass --format")],
)
def test_exit_2_for_missing_empty_or_undetectable(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, data: bytes | None, reason: str) -> None:
    path = str(tmp_path / name) if data is None else write(tmp_path, name, data)
    code, out, err = cli(["decode", path], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and reason in err and name in err


def test_exit_0_with_malformed_payload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "bad.sse", SSE.replace(b'"Hello', b'Hello', 1))
    code, out, _ = cli(["decode", path], capsys)
    finish = json.loads(out)["finish"]
    assert code == 0 and finish["kind"] == "error" and finish["failure"]["code"] == "MALFORMED_RESPONSE"


def test_exit_0_with_truncated_stream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "cut.sse", SSE[: SSE.index(b"data:", 10)] + b'data: {"cho')
    code, out, _ = cli(["decode", path], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["finish"]["failure"]["code"] == "STREAM_CLOSED"
    assert doc["meta"]["doneMissing"] is True


def test_bad_json_array_with_forced_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(["decode", write(tmp_path, "x.json", b"[1, 2"), "--format", "json"], capsys)
    assert code == 2 and "not a JSON array" in err


# --- recorded documents: cassettes and session logs --------------------------------------------

RECORDINGS = REPO / "recordings"


def _session_log(answer: str = "Hello!") -> bytes:
    from dshkit.harness.llm import AssistantMessage, TextBlock, UserMessage
    from dshkit.harness.llm.chunks import TextDelta
    from dshkit.harness.llm.messages import ModelSource
    from dshkit.harness.session import Session, SessionHeader
    from dshkit.harness.session.jsonl import dump_session

    s = Session(SessionHeader.new(id="decode-me", created_at=1), clock=lambda: 5)
    s.append("turn/start", {"turn": 1})
    s.append("step/start", {"turn": 1, "step": 1})
    s.append_user_message(UserMessage.text("hi"))
    seqs = [s.append_chunk(1, 1, TextDelta(index=0, text=t)).seq for t in ["He", "ll", "o!"]]
    message = AssistantMessage(content=(TextBlock(text=answer),), source=ModelSource(provider="deepseek", model="m"))
    s.append_assistant_message(1, 1, message, source_event_seqs=seqs)
    s.append("step/end", {"turn": 1, "step": 1})
    s.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    return dump_session(s).encode()


def test_cassette_is_detected_and_decoded_exchange_by_exchange(capsys: pytest.CaptureFixture[str]) -> None:
    path = RECORDINGS / "rate-limit-then-success.cassette.jsonl"
    assert detect_format(path.read_bytes()) == "cassette"
    code, out, _ = cli(["decode", str(path)], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["format"] == "cassette"
    assert [x["status"] for x in doc["exchanges"]] == [429, 200]
    first, second = (x["decoded"] for x in doc["exchanges"])
    assert first["finish"]["failure"]["code"] == "RATE_LIMIT"
    assert second["finish"] == {"kind": "stop"} and second["message"]["content"][-1]["type"] == "text"
    code, out, _ = cli(["decode", str(path), "--pretty"], capsys)
    assert "exchange 1: POST /chat/completions → 429" in out and "finish: error — RATE_LIMIT" in out


def test_session_log_is_detected_and_each_call_checked_against_its_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _session_log()
    assert detect_format(good) == "session"
    code, out, _ = cli(["decode", write(tmp_path, "s.jsonl", good)], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["format"] == "session" and doc["header"]["id"] == "decode-me"
    [call] = doc["calls"]
    assert (call["turn"], call["step"], call["matchesLogged"]) == (1, 1, True)
    assert call["message"]["content"] == [{"type": "text", "text": "Hello!"}]
    # a log whose message disagrees with its own chunks says so
    code, out, _ = cli(["decode", write(tmp_path, "bad.jsonl", _session_log("Bye!")), "--pretty"], capsys)
    assert code == 0 and "turn 1 step 1 call 1: DIFFERS from the logged message" in out


def test_upstream_session_log_with_defects_decodes(capsys: pytest.CaptureFixture[str]) -> None:
    from ..conftest import DSH_UPSTREAM, corpus_missing

    path = DSH_UPSTREAM / "apps/web/tests/snapshots/cordis-tool-round/session.jsonl"
    if not path.is_file():
        pytest.skip(corpus_missing(path))
    code, out, _ = cli(["decode", str(path)], capsys)
    doc = json.loads(out)
    assert code == 0 and len(doc["calls"]) == 7
    assert len(doc["defects"]) == 7 and all("sourceEventSeqs" in d for d in doc["defects"])
    # its messages are kept as defects, so no call has a logged message to compare with
    assert {c["matchesLogged"] for c in doc["calls"]} == {None}


def test_broken_documents_exit_2_with_a_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cassette = b'{"type":"cassette","version":1}\n{"type":"exchange","status":"x"}\n'
    code, _, err = cli(["decode", write(tmp_path, "c.cassette.jsonl", cassette)], capsys)
    assert code == 2 and "not a readable cassette" in err
    session = b'{"type":"session","version":7,"id":"x","createdAt":0}\n'
    code, _, err = cli(["decode", write(tmp_path, "s.jsonl", session)], capsys)
    assert code == 2 and "not a readable session log" in err and "version 7" in err
