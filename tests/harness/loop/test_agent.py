"""Fast unit tests of the agent loop, driven by the in-memory `ReplayAdapter` (no HTTP).

The end-to-end tests in tests/e2e run the same loop over the real DeepSeek adapter and mock
server; these pin the turn algorithm itself: typed step outcomes, the step budget, hooks, the
requests rebuilt from the log and prompt sharing (one step's own work, retries included, is in
test_steps.py; what each option does, in test_options.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dshkit.harness.llm import (
    Finish,
    FinishReason,
    GenerateOptions,
    StreamChunk,
    TextBlock,
    ToolCallBlock,
)
from dshkit.harness.llm.chunks import BlockEnd, BlockStart, TextDelta, ToolCallDelta
from dshkit.harness.llm.codec import chunk_to_json
from dshkit.harness.loop import Agent, AgentOptions, rebuild_requests
from dshkit.harness.loop.prestep import PreStep, PreStepDecision, Reject
from dshkit.harness.prompt import SystemPrompt
from dshkit.harness.replay import ReplayAdapter
from dshkit.harness.replay.entries import ReplayEntry, SessionScript
from dshkit.harness.session import Session
from dshkit.harness.tools import ToolRuntime, define_tool

MODEL = "deepseek-v4-flash"


def text_reply(text: str) -> list[StreamChunk]:
    return [
        BlockStart(index=0, block_type="text"),
        TextDelta(index=0, text=text),
        BlockEnd(index=0, block=TextBlock(text=text)),
        Finish(reason=FinishReason(kind="stop")),
    ]


def tool_reply(call_id: str, name: str, arguments: str) -> list[StreamChunk]:
    return [
        BlockStart(index=0, block_type="tool-call"),
        ToolCallDelta(index=0, id=call_id, name=name, arguments_delta=arguments),
        BlockEnd(index=0, block=ToolCallBlock(id=call_id, name=name, arguments=arguments)),
        Finish(reason=FinishReason(kind="tool-calls")),
    ]


class Recording(ReplayAdapter):
    """The replay adapter, keeping each request it was asked for."""

    def __init__(self, *replies: Sequence[StreamChunk]) -> None:
        entries = tuple(
            ReplayEntry(chunks=tuple(chunk_to_json(c) for c in reply), where=f"reply {i}")
            for i, reply in enumerate(replies)
        )
        super().__init__([SessionScript(session_id="s", created_at=0, entries=entries, source="test")])
        self.requests: list[GenerateOptions] = []

    async def stream(self, options: GenerateOptions):  # type: ignore[no-untyped-def, override]
        self.requests.append(options)
        async for chunk in super().stream(options):
            yield chunk


def echo_tool() -> ToolRuntime:
    def echo(args: dict[str, Any]) -> str:
        return f"echo:{args['text']}"

    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    return ToolRuntime([define_tool("echo", "Echo the text.", schema, echo, concurrency_safe=True)])


def types(session: Session) -> list[str]:
    return [e.type for e in session.events if e.type not in ("assistant/chunk", "session/created")]


async def test_text_turn_completes_in_one_step() -> None:
    session = Session()
    agent = Agent(session, Recording(text_reply("hello")), AgentOptions(model=MODEL))
    outcome = await agent.run("hi")
    assert outcome.kind == "completed"
    assert types(session)[-6:] == [
        "step/start", "user/message", "request/header", "assistant/message", "step/end", "turn/end",
    ]


async def test_tool_step_continues_then_completes() -> None:
    adapter = Recording(tool_reply("c1", "echo", '{"text":"x"}'), text_reply("done"))
    session = Session()
    outcome = await Agent(session, adapter, AgentOptions(model=MODEL), tools=echo_tool()).run("go")
    assert outcome.kind == "completed"
    assert [e.data["step"] for e in session.events if e.type == "step/start"] == [1, 2]
    second = adapter.requests[1].messages
    assert [type(m).__name__ for m in second] == ["UserMessage", "AssistantMessage", "ToolResultMessage"]
    assert second[-1].content[0].tool_call_id == "c1" and "echo:x" in str(second[-1].content[0])


async def test_step_budget_ends_the_turn_with_max_steps() -> None:
    adapter = Recording(tool_reply("c1", "echo", '{"text":"x"}'), text_reply("never"))
    options = AgentOptions(model=MODEL, max_steps=1)
    outcome = await Agent(Session(), adapter, options, tools=echo_tool()).run("go")
    assert outcome.reason == {"kind": "max-steps", "limit": 1}
    assert len(adapter.requests) == 1


async def test_max_tokens_stays_the_turn_end() -> None:
    cut = [*text_reply("partial")[:-1], Finish(reason=FinishReason(kind="max-tokens"))]
    outcome = await Agent(Session(), Recording(cut), AgentOptions(model=MODEL)).run("go")
    assert outcome.kind == "max-tokens"


async def test_rejecting_hook_blocks_the_turn_before_any_call() -> None:
    async def reject(payload: PreStep, nxt: Any) -> PreStepDecision:
        return Reject("no")

    adapter = Recording(text_reply("never"))
    outcome = await Agent(Session(), adapter, AgentOptions(model=MODEL), pre_step=[reject]).run("go")
    assert outcome.kind == "blocked" and adapter.requests == []


async def test_agents_sharing_one_prompt_leave_it_unchanged() -> None:
    prompt = SystemPrompt(persona="Shared persona for {{model}}.")
    before = prompt.assemble(variables={"model": "m"})
    first = Agent(Session(), Recording(text_reply("a")), AgentOptions(model=MODEL), prompt=prompt, tools=echo_tool())
    second = Agent(Session(), Recording(text_reply("b")), AgentOptions(model="other"), prompt=prompt, tools=echo_tool())
    assert (await first.run("1")).kind == "completed"
    assert (await second.run("2")).kind == "completed"
    assert prompt.assemble(variables={"model": "m"}) == before  # no variable or tool was registered
    assert first.adapter.requests[0].system == f"You are an AI agent powered by DeepSeek Harness.\n\nShared persona for {MODEL}."  # type: ignore[attr-defined]
    assert second.adapter.requests[0].system.endswith("Shared persona for other.")  # type: ignore[attr-defined]
    assert [t.name for t in first.adapter.requests[0].tools] == ["echo"]  # type: ignore[attr-defined]


async def test_later_prompt_changes_apply_from_the_next_step() -> None:
    prompt = SystemPrompt(persona="One.")
    session = Session()
    adapter = Recording(text_reply("a"), text_reply("b"))
    agent = Agent(session, adapter, AgentOptions(model=MODEL), prompt=prompt)
    await agent.run("1")
    prompt.replace_section("deployment:persona", "Two.")
    await agent.run("2")
    reasons = [e.data["reason"] for e in session.events if e.type == "request/header"]
    assert reasons == ["initial", "change"]
    assert [r.system.endswith(p) for r, p in zip(adapter.requests, ("One.", "Two."), strict=True)] == [True, True]  # type: ignore[union-attr]


async def test_every_request_rebuilds_from_the_log() -> None:
    adapter = Recording(tool_reply("c1", "echo", '{"text":"x"}'), text_reply("done"))
    session = Session()
    options = AgentOptions(model=MODEL, temperature=0.0, max_tokens=64, reasoning_effort="high", stop=("END",))
    await Agent(session, adapter, options, tools=echo_tool()).run("go")
    rebuilt = rebuild_requests(session.events, session_id=session.id)
    assert rebuilt == [
        GenerateOptions(**{**_fields(r), "signal": None}) for r in adapter.requests
    ]


def _fields(options: GenerateOptions) -> dict[str, Any]:
    return {name: getattr(options, name) for name in options.__dataclass_fields__}
