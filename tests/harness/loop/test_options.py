"""What the agent's options change, driven through an `Agent` over the in-memory
`ReplayAdapter`: a stream without `[DONE]` and a body without a byte fail as DSH fails them
unless the option keeps the adapter's reading, and `retry_policy=None` retries nothing."""

from __future__ import annotations

from collections.abc import Sequence

from dshkit.harness.llm import Finish, FinishReason, StreamChunk, TextBlock
from dshkit.harness.llm.chunks import BlockEnd, BlockStart, FinishMeta, TextDelta
from dshkit.harness.loop import Agent, AgentOptions
from dshkit.harness.session import Session

from .test_agent import MODEL
from .test_agent import Recording as replay
from .test_steps import error_reply

STREAM_CLOSED = {"message": "SSE stream ended without [DONE]", "code": "STREAM_CLOSED"}


def text_reply(text: str, meta: FinishMeta | None = None) -> list[StreamChunk]:
    return [
        BlockStart(index=0, block_type="text"),
        TextDelta(index=0, text=text),
        BlockEnd(index=0, block=TextBlock(text=text)),
        Finish(reason=FinishReason(kind="stop"), meta=meta),
    ]


EMPTY_BODY = [Finish.error("DeepSeek API returned no response body", "EMPTY_RESPONSE")]
"""What the DeepSeek adapter ends a 200 response without one byte of body with."""


async def no_wait(seconds: float) -> None:
    pass


async def test_a_stream_without_done_fails_unless_accepted() -> None:
    cut = text_reply("answer", FinishMeta(done_missing=True))
    session = Session()
    failed = await Agent(session, replay(cut, text_reply("retried")), AgentOptions(model=MODEL), sleep=no_wait).run("go")
    assert failed.kind == "error" and failed.reason["error"] == STREAM_CLOSED
    assert [e.type for e in session.events if e.type.startswith("llm/retry")] == []  # and not retried
    options = AgentOptions(model=MODEL, missing_done="accept")
    assert (await Agent(Session(), replay(cut), options).run("go")).kind == "completed"


async def retried_codes(options: AgentOptions, first: Sequence[StreamChunk]) -> list[str]:
    """The failure codes retried before a turn that ends well."""
    session = Session()
    outcome = await Agent(session, replay(first, text_reply("ok")), options, sleep=no_wait).run("go")
    assert outcome.kind == "completed"
    return [e.data["failure"]["code"] for e in session.events if e.type == "llm/retry"]


async def test_an_empty_body_fails_unless_retried() -> None:
    session = Session()
    failed = await Agent(session, replay(EMPTY_BODY, text_reply("retried")), AgentOptions(model=MODEL), sleep=no_wait).run("go")
    assert failed.kind == "error" and failed.reason["error"] == STREAM_CLOSED
    assert [e.type for e in session.events if e.type.startswith("llm/retry")] == []  # and not retried
    assert await retried_codes(AgentOptions(model=MODEL, empty_body="retry"), EMPTY_BODY) == ["EMPTY_RESPONSE"]
    # a completion that came but said nothing is no empty body: retried under either setting
    empty_completion = [Finish.error("model returned a completed response with no content", "EMPTY_RESPONSE")]
    assert await retried_codes(AgentOptions(model=MODEL), empty_completion) == ["EMPTY_RESPONSE"]


async def test_failure_without_retries_ends_the_turn_with_the_error() -> None:
    options = AgentOptions(model=MODEL, retry_policy=None)
    outcome = await Agent(Session(), replay(error_reply("SERVER")), options).run("go")
    assert outcome.kind == "error" and outcome.reason["error"]["code"] == "SERVER"
