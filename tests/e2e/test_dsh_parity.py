"""dshkit's loop ends a faulted call as DSH 0.1.0-rc.8 does by default (docs/dsh_parity.md), with
the departures behind named options; over the real adapter and the real mock server.

The DSH side of each fact was measured with `make e2e-dsh-parity` (the table in the docs).
"""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

from dshkit.harness.loop import AgentOptions
from dshkit.mock_server import MockServer, Script
from dshkit.run import EXIT_CODES, PROVIDER, run_command

from .conftest import MODEL, RigFactory, reply


async def test_a_stream_without_done_fails_as_stream_closed(loop_rig: RigFactory) -> None:
    """DSH trusts no stream that lacks `[DONE]`: STREAM_CLOSED, not retried, no message kept."""
    rig = await loop_rig("done_missing", reply("never asked for"))
    outcome = await rig.run("hi")
    assert outcome.reason["kind"] == "error"
    assert outcome.reason["error"] == {"message": "SSE stream ended without [DONE]", "code": "STREAM_CLOSED"}
    assert rig.data("llm/retry") == [] and rig.data("assistant/message") == []
    (finish,) = [c["chunk"] for c in rig.data("assistant/chunk") if c["chunk"]["type"] == "finish"]
    assert finish["reason"] == {"kind": "stop"} and finish["meta"]["doneMissing"] is True  # the adapter's report
    assert len(rig.requests) == 1 and rig.server.journal.unused_steps()


async def test_missing_done_accept_keeps_the_answer(loop_rig: RigFactory) -> None:
    rig = await loop_rig("done_missing", options=AgentOptions(model=MODEL, missing_done="accept"))
    assert (await rig.run("hi")).kind == "completed"
    (message,) = rig.data("assistant/message")
    assert message["message"]["content"][0]["text"] == "mock response recovered"


async def test_an_in_band_error_ends_the_turn_without_retry(loop_rig: RigFactory) -> None:
    """DSH ignores the error object and fails at EOF (STREAM_CLOSED); dshkit keeps its richer
    PROVIDER_ERROR with the provider's words, for the same outcome: an error, no retry."""
    rig = await loop_rig("inband_error", reply("never asked for"))
    outcome = await rig.run("hi")
    assert outcome.kind == "error" and outcome.reason["error"]["code"] == "PROVIDER_ERROR"
    assert rig.data("llm/retry") == [] and len(rig.requests) == 1


async def test_retry_after_is_an_integer_in_the_log(loop_rig: RigFactory) -> None:
    rig = await loop_rig({"fault": "rate_limit", "retry_after": 1}, reply("after the wait"))
    assert (await rig.run("hi")).kind == "completed"
    line = next(json.loads(json.dumps(e)) for e in rig.data("llm/retry"))
    assert line["failure"]["providerRetryAfterMs"] == 1000 and type(line["failure"]["providerRetryAfterMs"]) is int
    finish = next(c["chunk"] for c in rig.data("assistant/chunk") if c["chunk"]["type"] == "finish")
    assert type(finish["reason"]["failure"]["providerRetryAfterMs"]) is int


def run_args(base_url: str, workspace: Path, session: Path) -> argparse.Namespace:
    return argparse.Namespace(
        prompt="hi", base_url=base_url, api_key="k", model=MODEL, workspace=str(workspace),
        session=str(session), tools="read", yes=True, json=True, max_steps=None, replay=None,
        tool_timeout=5.0, idle_timeout=10.0, pace=0, protocol="chat",
    )


async def test_dshkit_run_exits_as_dsh_headless(tmp_path: Path) -> None:
    """Only a completed turn exits 0 (a max-tokens cut is 1, as `dsh --profile headless`), and the
    log names DSH's provider route."""
    assert EXIT_CODES["completed"] == 0 and EXIT_CODES["error"] == 1
    for fault, status in (("success", 0), ("max_tokens", 1), ("done_missing", 1)):
        async with MockServer(Script.of(fault)) as server:
            log = tmp_path / f"{fault}.jsonl"
            assert await run_command(run_args(server.base_url, tmp_path, log), io.StringIO()) == status
        events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        header = next(e for e in events if e.get("type") == "request/header")
        assert header["data"]["header"]["config"]["provider"] == PROVIDER == "deepseek-official"


async def test_an_empty_body_fails_as_stream_closed_and_an_empty_completion_retries(loop_rig: RigFactory) -> None:
    """DSH: a 200 body without one event ends without [DONE] (STREAM_CLOSED, not retried); a
    completion with events but no content is EMPTY_RESPONSE and retried."""
    rig = await loop_rig("empty_body", "empty", reply("after the retry"))
    first = await rig.run("one")
    assert first.reason["error"] == {"message": "SSE stream ended without [DONE]", "code": "STREAM_CLOSED"}
    assert rig.data("llm/retry") == []
    assert (await rig.run("two")).kind == "completed"
    (retry,) = rig.data("llm/retry")
    assert retry["failure"]["code"] == "EMPTY_RESPONSE"


async def test_empty_body_retry_keeps_the_adapters_empty_response(loop_rig: RigFactory) -> None:
    rig = await loop_rig("empty_body", reply("after the retry"), options=AgentOptions(model=MODEL, empty_body="retry"))
    assert (await rig.run("hi")).kind == "completed"
    (retry,) = rig.data("llm/retry")
    assert retry["failure"]["code"] == "EMPTY_RESPONSE"
