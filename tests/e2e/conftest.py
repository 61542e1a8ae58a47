"""End-to-end fixtures: the real agent loop, the real DeepSeek adapter, the real mock server.

`loop_rig(...)` starts a mock server (port 0, on the test's loop) with a script, builds a
`Session`, a `DeepSeekAdapter` pointed at the server and an `Agent`, and returns a `Rig`.
`await rig.run(prompt)` runs a turn and then checks the seed's one rule: every request body the
server journaled for this session equals, byte for byte, the body rebuilt from the session log
alone (`rebuild_requests` + `serialize` with the adapter's config). The rule is checked again at
teardown for every rig a passing test made (so tests that drive the agent by hand are covered
too); a test that breaks the rule on purpose sets `rig.expect_violation = True`.

Retries never wait: the agent gets a recording `sleep` and a fixed `random`, so tests assert on
the logged `delayMs` and on `rig.sleeps`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from dshkit.harness.llm import Adapter, UserMessage
from dshkit.harness.loop import Agent, AgentOptions, rebuild_requests
from dshkit.harness.loop.options import TurnOutcome
from dshkit.harness.loop.prestep import PreStepHook
from dshkit.harness.prompt import SystemPrompt
from dshkit.harness.providers.deepseek import DeepSeekAdapter, DeepSeekConfig
from dshkit.harness.providers.openai_chat.serialize import encode_body, serialize
from dshkit.harness.session import Session, SessionHeader
from dshkit.harness.session.events import SessionEvent, event_to_json
from dshkit.harness.tools import ToolRuntime, builtin_tools
from dshkit.harness.tools.definition import ToolDefinition
from dshkit.mock_server import MockServer, MockServerFactory, Script
from dshkit.mock_server.journal import JournalEntry
from dshkit.mock_server.scripts import parse_script

MODEL = "deepseek-v4-flash"
API_KEY = "sk-dshkit-e2e"
README_TEXT = (
    "# Widget Forge\n"
    "\n"
    "Widget Forge turns YAML recipes into tested widgets.\n"
    "\n"
    "## Usage\n"
    "\n"
    "Run `forge build recipe.yaml` and find the widget in `out/`.\n"
)
"""The fixed README of the workspace fixture (never the repository's own README)."""

_RESULT_KEY = pytest.StashKey[pytest.TestReport]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[_RESULT_KEY] = report
    return report


# --- the one rule -------------------------------------------------------------------------------


class OneRuleViolation(AssertionError):
    """A request reached the model that the session log alone does not rebuild."""


def chat_entries(server: MockServer, session_id: str) -> list[JournalEntry]:
    """The chat-completion requests the server journaled for one session, in arrival order."""
    return [e for e in server.journal.chat() if e.session == session_id]


def check_one_rule(
    events: Sequence[SessionEvent] | Sequence[Mapping[str, Any]],
    session_id: str,
    entries: Sequence[JournalEntry],
    config: DeepSeekConfig | None = None,
) -> int:
    """Every journaled body == the body rebuilt from `events` alone; returns how many matched.

    Raises `OneRuleViolation` naming the first request that differs, with both bodies.
    """
    rebuilt = rebuild_requests(list(events), session_id=session_id)
    if len(rebuilt) != len(entries):
        raise OneRuleViolation(
            f"the log records {len(rebuilt)} model call(s) but the server received "
            f"{len(entries)} request(s) for session {session_id}"
        )
    for i, (options, entry) in enumerate(zip(rebuilt, entries, strict=True)):
        expected = encode_body(serialize(options, config))
        actual = encode_body(entry.body)
        if expected != actual:
            raise OneRuleViolation(
                f"request {i + 1} of session {session_id} is not rebuildable from the log:\n"
                f"  sent:    {actual.decode()}\n  rebuilt: {expected.decode()}"
            )
    return len(rebuilt)


# --- the rig ------------------------------------------------------------------------------------


@dataclass(eq=False)
class Rig:
    """One agent on one session, talking to one mock server over loopback."""

    server: MockServer
    session: Session
    deepseek: DeepSeekAdapter
    agent: Agent
    tools: ToolRuntime
    workspace: Path
    sleeps: list[float] = field(default_factory=list)
    expect_violation: bool = False

    async def run(self, prompt: UserMessage | str, *, check: bool = True) -> TurnOutcome:
        """Run one prompt to idle, then check the one rule."""
        outcome = await self.agent.run(prompt)
        if check:
            self.check()
        return outcome

    def check(self) -> int:
        return check_one_rule(
            self.session.events, self.session.id, self.requests, self.deepseek.config
        )

    @property
    def requests(self) -> list[JournalEntry]:
        return chat_entries(self.server, self.session.id)

    @property
    def bodies(self) -> list[Any]:
        return [e.body for e in self.requests]

    def events(self, *types: str) -> list[SessionEvent]:
        return [e for e in self.session.events if not types or e.type in types]

    def types(self, *, chunks: bool = False) -> list[str]:
        """Event types in log order (chunks left out unless asked)."""
        return [e.type for e in self.session.events if chunks or e.type != "assistant/chunk"]

    def data(self, *types: str) -> list[Any]:
        return [event_to_json(e)["data"] for e in self.events(*types)]


def script(*steps: Any, name: str = "e2e", **kw: Any) -> Script:
    """A mock-server script from step dicts / fault names."""
    return parse_script({"name": name, "steps": list(steps), **kw})


def reply(
    content: str = "",
    *,
    reasoning: str = "",
    calls: Iterable[Mapping[str, Any]] = (),
    match: Mapping[str, Any] | None = None,
    finish: str | None = None,
    usage: Mapping[str, Any] | None = None,
    stream: Mapping[str, Any] | None = None,
    timing: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A reply step; `calls` items are `{"name", "arguments", "id"?}`."""
    spec: dict[str, Any] = {"content": content, "reasoning": reasoning, "tool_calls": list(calls)}
    if finish is not None:
        spec["finish_reason"] = finish
    if usage is not None:
        spec["usage"] = dict(usage)
    step: dict[str, Any] = {"reply": spec}
    if match is not None:
        step["match"] = dict(match)
    if stream is not None:
        step["stream"] = dict(stream)
    if timing is not None:
        step["timing"] = dict(timing)
    return step


def call(name: str, arguments: Any = "{}", id: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "arguments": arguments}
    if id is not None:
        out["id"] = id
    return out


RigFactory = Callable[..., Awaitable[Rig]]


@pytest.fixture
def workspace() -> Iterator[Path]:
    """A fixed workspace: `README.md` (README_TEXT) and `src/main.py`.

    Its path has the same length in every run (not under pytest's numbered `tmp_path`, whose
    `pytest-N/popen-gwM` grows with N and M): the path is in the system prompt, and the mock's
    token estimate, hence the snapshots' `inputTokens`, follows the prompt's length."""
    root = Path(tempfile.mkdtemp(prefix="dshkit-ws-", dir="/tmp" if os.path.isdir("/tmp") else None))
    ws = root / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "README.md").write_text(README_TEXT, encoding="utf-8")
    (ws / "src" / "main.py").write_text("print('forge')\n", encoding="utf-8")
    yield ws
    shutil.rmtree(root, ignore_errors=True)


@pytest_asyncio.fixture
async def loop_rig(
    request: pytest.FixtureRequest, dshkit_mock_server: MockServerFactory, workspace: Path
) -> AsyncIterator[RigFactory]:
    """Factory: `rig = await loop_rig(step, step, ..., tools=[...], options=AgentOptions(...))`."""
    rigs: list[Rig] = []

    async def make(
        *steps: Any,
        scripts: Sequence[Script] | None = None,
        tools: Iterable[ToolDefinition] = (),
        builtin: bool | Sequence[str] = True,
        options: AgentOptions | None = None,
        prompt: SystemPrompt | None = None,
        pre_step: Iterable[PreStepHook] = (),
        wrap: Callable[[DeepSeekAdapter], Adapter] | None = None,
        session: Session | None = None,
        server: MockServer | None = None,
        config: DeepSeekConfig | None = None,
        **runtime: Any,
    ) -> Rig:
        if server is None:
            sources = list(scripts or ()) + ([script(*steps)] if steps else [])
            server = await dshkit_mock_server(*sources, seed=7)
        if session is None:
            session = Session(SessionHeader.new(cwd=str(workspace)))
        defs = list(tools)
        if builtin:
            names = tuple(builtin) if not isinstance(builtin, bool) else None
            defs = list(builtin_tools(workspace, **({"names": names} if names else {}))) + defs
        runtime_ = ToolRuntime(defs, **runtime)
        deepseek = DeepSeekAdapter(server.base_url, API_KEY, config=config, idle_timeout_s=30)
        rig_sleeps: list[float] = []

        async def sleep(seconds: float) -> None:
            rig_sleeps.append(seconds)

        agent = Agent(
            session,
            wrap(deepseek) if wrap is not None else deepseek,
            options or AgentOptions(model=MODEL),
            prompt=prompt,
            tools=runtime_,
            pre_step=pre_step,
            sleep=sleep,
            random=lambda: 0.5,
        )
        rig = Rig(server, session, deepseek, agent, runtime_, workspace, rig_sleeps)
        rigs.append(rig)
        return rig

    yield make
    for rig in rigs:
        await rig.deepseek.aclose()
    report = request.node.stash.get(_RESULT_KEY, None)
    if report is not None and report.passed:
        for rig in rigs:
            if not rig.expect_violation and rig.agent.status == "idle":
                rig.check()


# --- snapshot text ----------------------------------------------------------------------------------

def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True)
