"""The claimed server items (`CLAIMED_S_ITEMS`, wire.md §13) on the CLI path, `serve --api-key`.

What a client of any server can see is judged by the conformance server checks
(`run_server_checks`, the same code `dshkit conformance --server` runs): one test here runs them
all against the subprocess. The tests after it cover what only the mock can show: replaying a
recording placed on the server (S35), a scripted stream with two tool calls (S26–S28 with
parallel calls, which a real model cannot be made to produce), and the `X-Mock-Behavior` faults
seen over the real CLI (S17, S21, S36). The checks' own strength is proven against deliberately
wrong servers in tests/conformance/test_server_check_strength.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from dshkit.conformance import run_server_checks
from dshkit.mock_server.claims import CLAIMED_S_ITEMS
from dshkit.mock_server.generate.chunks import generate_chunks
from dshkit.mock_server.generate.encode import encode_sse
from dshkit.mock_server.generate.reply import Reply

from .cli_process import ServeProcess
from .wire import parse_sse, reassemble

KEY = "sk-claims-0123"
# One worker runs the module under `--dist loadgroup`, so each of its two `serve` processes starts once.
pytestmark = pytest.mark.xdist_group("claims")
U = [{"role": "user", "content": "hi"}]
SSE_FILE = encode_sse(generate_chunks(Reply(content="replayed"), seed=5), "crlf")
JSONL_LINES = [json.dumps(c, ensure_ascii=False) for c in generate_chunks(Reply(content="é"), seed=6)]
#: Claimed items no client can check from outside (replay needs a recording on the server).
NOT_VISIBLE = {"S35"}


def _scripts(d: Path) -> Path:
    (d / "body.sse").write_bytes(SSE_FILE)
    (d / "chunks.jsonl").write_text("\n".join(JSONL_LINES) + "\n", encoding="utf-8")
    tools = {"reply": {"reasoning": "two calls", "tool_calls": [
        {"name": "a", "arguments": {"x": [1, 2]}}, {"name": "b", "arguments": '{"y": "z"}'}]}}
    path = d / "claims.yaml"
    path.write_text(json.dumps({"scripts": [
        {"session": "tools", "repeat_last": True, "steps": [tools]},
        {"session": "sse", "repeat_last": True, "steps": [{"raw": {"file": "body.sse"}}]},
        {"session": "jsonl", "repeat_last": True, "steps": [{"raw": {"file": "chunks.jsonl"}}]},
    ]}))
    return path


def _serve(d: Path) -> ServeProcess:
    return ServeProcess("--api-key", KEY, "--script", str(_scripts(d)), "--seed", "1", "--unscripted", "default")


class Drained:
    """A `serve` process whose stdout is read to the end by a thread (so a long run never
    blocks on a full pipe); `stop()` returns everything it printed."""

    def __init__(self, proc: ServeProcess) -> None:
        self.proc = proc
        self.out = bytearray()
        assert proc.proc.stdout is not None
        fd = proc.proc.stdout.fileno()
        self.thread = threading.Thread(target=self._read, args=(fd,), daemon=True)
        self.thread.start()

    def _read(self, fd: int) -> None:
        while data := os.read(fd, 65536):
            self.out += data

    def stop(self) -> str:
        if self.proc.proc.poll() is None:
            self.proc.proc.send_signal(signal.SIGINT)
        self.proc.proc.wait(timeout=30)
        self.thread.join(timeout=30)  # the pipe is at its end once the process is gone
        _, rest = self.proc.stop(sig=None)  # closes the pipes; `rest` is what came before the thread
        return rest + self.out.decode(errors="replace")


@dataclass(frozen=True)
class ClaimsRun:
    results: list[Any]
    """The server checks of every claimed item, against a `serve` process of their own."""
    out: str
    """Everything that process printed on stdout, to its end (it was stopped after the checks)."""


@pytest.fixture(scope="module")
def claims_run(tmp_path_factory: pytest.TempPathFactory) -> ClaimsRun:
    """One run of the server checks of every claimed item (the S2, S14 and S20 the secrecy test
    reads among them) on one drained `serve` process, then stopped for the whole of its stdout."""
    d = Drained(_serve(tmp_path_factory.mktemp("claims-run")))
    try:
        results = asyncio.run(run_server_checks(d.proc.base_url, KEY, ids=list(CLAIMED_S_ITEMS), timeout_s=60))
    finally:
        out = d.stop()
    return ClaimsRun(list(results), out)


def test_every_visible_claim_passes_the_server_checks_on_the_cli_path(claims_run: ClaimsRun) -> None:
    status = {r.id: r.status for r in claims_run.results}
    assert set(status) == set(CLAIMED_S_ITEMS)
    failing = {r.id: r.diff or r.reason for r in claims_run.results if r.id not in NOT_VISIBLE and r.status != "pass"}
    assert failing == {}
    assert {i: status[i] for i in NOT_VISIBLE} == {"S35": "n/a"}


def test_no_secret_reaches_stdout(claims_run: ClaimsRun) -> None:
    # Among the checks, a wrong key refused (S2) and the right one answered, streamed and not
    # (S14, S20): the key the server was started with and the wrong one sent to it never reach
    # a stdout line of the whole run.
    status = {r.id: r.status for r in claims_run.results}
    assert {i: status[i] for i in ("S2", "S14", "S20")} == {"S2": "pass", "S14": "pass", "S20": "pass"}
    out = claims_run.out
    assert '"type": "request"' in out or '"type":"request"' in out  # it did print the exchanges
    assert KEY not in out and "sk-wrong-0000" not in out


# --- what only the mock can show ---------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    p = _serve(tmp_path_factory.mktemp("claims"))
    yield p
    p.kill()


@pytest.fixture
def http(server: ServeProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=httpx.Timeout(30.0),
                      headers={"Authorization": f"Bearer {KEY}"}) as client:
        yield client


def post(http: httpx.Client, *, session: str | None = None, behavior: str | None = None, **body: Any) -> httpx.Response:
    headers = {"X-Mock-Session": session or f"c-{uuid.uuid4().hex[:8]}"}
    if behavior:
        headers["X-Mock-Behavior"] = behavior
    return http.post("/chat/completions", json={"model": "deepseek-v4-flash", "messages": U, **body}, headers=headers)


def test_s35_replay_serves_a_recording_byte_for_byte(http: httpx.Client) -> None:
    assert post(http, session="sse", stream=True).content == SSE_FILE
    body = post(http, session="jsonl", stream=True).content
    assert body == b"".join(b"data: " + line.encode() + b"\n\n" for line in JSONL_LINES) + b"data: [DONE]\n\n"


def test_s26_to_s28_two_scripted_tool_calls_stream_in_turn(http: httpx.Client) -> None:
    chunks = parse_sse(post(http, session="tools", stream=True).content).chunks
    tcs = [ch["choices"][0]["delta"]["tool_calls"] for ch in chunks if ch["choices"] and "tool_calls" in ch["choices"][0]["delta"]]
    assert all(len(t) == 1 for t in tcs)
    idx = [t[0]["index"] for t in tcs]
    assert idx == sorted(idx) and sorted(set(idx)) == [0, 1]
    openers = [t[0] for t in tcs if "id" in t[0]]
    assert [o["index"] for o in openers] == [0, 1]
    for i, o in enumerate(openers):
        assert re.fullmatch(rf"call_0{i}_[A-Za-z0-9]{{24}}", o["id"]) and o["function"]["arguments"] == ""
    got = reassemble(chunks)
    assert [json.loads(t["arguments"]) for t in got["tool_calls"]] == [{"x": [1, 2]}, {"y": "z"}]
    body = post(http, session="tools").json()
    calls = body["choices"][0]["message"]["tool_calls"]
    assert [c["index"] for c in calls] == [0, 1] and body["choices"][0]["finish_reason"] == "tool_calls"


def test_s17_keep_alive_puts_blank_lines_before_a_json_body(http: httpx.Client) -> None:
    r = post(http, behavior="keep_alive")
    assert r.content.startswith(b"\n") and json.loads(r.content)["object"] == "chat.completion"


def test_s21_keep_alive_fills_only_with_keep_alive_comments(http: httpx.Client) -> None:
    body = post(http, behavior="keep_alive", stream=True).content
    head = body[: body.index(b"data: ")]
    assert head and set(head.split(b"\n\n")[:-1]) == {b": keep-alive"}


def test_s36_faults_over_the_cli(http: httpx.Client) -> None:
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):  # closed with no [DONE]
        post(http, behavior="partial_disconnect", stream=True)
    events = parse_sse(post(http, behavior="inband_error", stream=True).content).events
    assert json.loads(events[-1].data)["error"]
    chunks = parse_sse(post(http, behavior="split_writes", stream=True).content).chunks
    assert "回复" in reassemble(chunks)["content"]  # a write split inside a multi-byte character
