"""A third wire is one Surface subclass and one registration: this test writes a tiny one and
serves it through the real server, next to the two built-in wires.

The wire takes Chat Completions request bodies at `/lines/v1/generate` and answers with NDJSON
lines (`{"text": …}` per fragment, then `{"done": true}`), errors as `{"problem": {…}}`. Scripts,
routing, faults, the journal and the fast path work for it unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import httpx
import pytest

from dshkit.harness.llm import LlmFailure, StreamChunk
from dshkit.mock_server import MockServerFactory, Script
from dshkit.mock_server.app import SURFACES
from dshkit.mock_server.generate.encode import Framing
from dshkit.mock_server.generate.reply import Reply
from dshkit.mock_server.generate.split import split_text
from dshkit.mock_server.output import Rendering
from dshkit.mock_server.runtime import ServerConfig
from dshkit.mock_server.scripts import ChunksSpec, FaultStep, StreamSpec
from dshkit.mock_server.surface import Body, Call, Cuts, Replay, Surface, json_body
from dshkit.mock_server.validation import ChatRequest, Rejection, validate_chat

from .wire import chat, parse_sse, reassemble

PATH = "/lines/v1/generate"
DONE = b'{"done": true}\n'


class LinesSurface(Surface):
    """Chat Completions requests, answered as NDJSON lines."""

    name = "lines"
    paths = (PATH,)
    cuts = Cuts(reasoning=0, first_argument=1)
    stream_headers: ClassVar[Mapping[str, str]] = {"Content-Type": "application/x-ndjson"}

    def authorize(self, headers: Mapping[str, str], api_key: str | None) -> None:
        if api_key is not None and headers.get("x-lines-key") != api_key:
            raise Rejection(401, "send the key in x-lines-key", type="authentication_error")

    def validate(self, raw: bytes, *, path: str, headers: Mapping[str, str], config: ServerConfig) -> ChatRequest:
        return validate_chat(raw, path=path, headers=headers, era=config.era)

    def response_headers(self, trace_id: str) -> Mapping[str, str]:
        return {"x-lines-trace": trace_id}

    def error(self, call: Call, status: int, message: str, type: str, code: str | None,
              headers: Mapping[str, str] | None) -> Body:
        return json_body(status, {"problem": {"status": status, "kind": type, "message": message}}, headers)

    def stream(self, call: Call, reply: Reply, spec: StreamSpec, *, done: bool = True,
               logprobs: int | None = None) -> Rendering[None]:
        plan = spec.fragment_plan().text

        def render(_: None) -> list[bytes]:
            lines = [json.dumps({"text": t}).encode() + b"\n" for t in split_text(reply.content, plan)]
            return [*lines, DONE] if done else lines

        return Rendering(render=render, envelope=None, key=(self.name, reply, plan, done))

    def body(self, call: Call, reply: Reply, spec: StreamSpec, *, logprobs: int | None = None) -> Body:
        return json_body(200, {"text": reply.content})

    def replay(self, call: Call, chunks: Sequence[StreamChunk], failure: LlmFailure | None,
               spec: ChunksSpec) -> Replay:
        return Replay(body=self.error(call, 501, "this wire replays no session logs", "unsupported", None, None))

    def inband_error(self, call: Call, step: FaultStep, *, event_line: bool) -> bytes:
        return json.dumps({"error": step.message or "failed mid-stream"}).encode() + b"\n"

    def malformed(self, call: Call, what: Literal["json", "event"]) -> tuple[bytes, list[bytes]]:
        data = b"{not-json" if what == "json" else b'{"text": 7}'
        return data, [data + b"\n", DONE]

    def done_unterminated(self, framing: Framing) -> bytes:
        return DONE.rstrip(b"\n")


def lines(data: bytes) -> list[Any]:
    return [json.loads(line) for line in data.splitlines()]


@pytest.fixture
def wires() -> tuple[Surface, ...]:
    return (*SURFACES, LinesSurface())


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast", "plain"])
async def test_a_registered_wire_serves_scripts_faults_and_errors(
    dshkit_mock_server: MockServerFactory, wires: tuple[Surface, ...], fast_path: bool
) -> None:
    text = {"reply": {"content": "one two three"}, "stream": {"split": {"mode": "whole"}}}
    split = {"reply": {"content": "one two three"}}
    script = Script.of(text, split, "rate_limit", {"fault": "inband_error", "after_events": 2},
                       "partial_eof", {"fault": "done_unterminated"}, {"reply": {"content": "whole"}},
                       {"reply": {"content": "on chat"}})
    server = await dshkit_mock_server(script, api_key="k", surfaces=wires, fast_path=fast_path)
    url = server.make_url(PATH)
    auth = {"x-lines-key": "k", "X-Mock-Session": "s"}
    async with httpx.AsyncClient(timeout=5) as c:
        r = await c.post(url, json=chat(), headers=auth)
        assert r.status_code == 200 and r.headers["content-type"] == "application/x-ndjson"
        assert len(r.headers["x-lines-trace"]) == 32 and "x-ds-trace-id" not in r.headers
        assert lines(r.content) == [{"text": "one two three"}, {"done": True}]
        r = await c.post(url, json=chat(), headers=auth)
        assert lines(r.content) == [{"text": "one"}, {"text": " two"}, {"text": " three"}, {"done": True}]
        r = await c.post(url, json=chat(), headers=auth)
        assert r.status_code == 429 and r.headers["retry-after"] == "1"
        assert r.json() == {"problem": {"status": 429, "kind": "rate_limit_error",
                                        "message": "Rate limit reached for requests"}}
        r = await c.post(url, json=chat(), headers=auth)
        assert lines(r.content)[-1] == {"error": "failed mid-stream"} and len(lines(r.content)) == 3
        r = await c.post(url, json=chat(), headers=auth)
        assert {"done": True} not in lines(r.content) and lines(r.content)
        r = await c.post(url, json=chat(), headers=auth)
        assert r.content.endswith(b'}\n{"done": true}')  # the end marker without its newline
        r = await c.post(url, json=chat(stream=False), headers=auth)
        assert r.json() == {"text": "whole"}
        # The wire's own auth and envelope, before any step is touched.
        r = await c.post(url, json=chat(), headers={**auth, "x-lines-key": "wrong"})
        assert r.status_code == 401 and r.json()["problem"]["kind"] == "authentication_error"
        # The built-in wires still answer on the same server (one script spans both), and a
        # 404 names the new path.
        r = await c.post(server.url, json=chat(thinking={"type": "disabled"}),
                         headers={"Authorization": "Bearer k", "X-Mock-Session": "s"})
        assert r.status_code == 200 and "x-lines-trace" not in r.headers
        assert reassemble(parse_sse(r.content).chunks)["content"] == "on chat"
        r = await c.get(server.make_url("/lines/v2"))
        assert r.status_code == 404 and PATH in r.json()["error"]["message"]
    assert [e.path for e in server.journal.entries].count(PATH) == 8
    server.assert_consumed()
