"""Regenerate the committed cassettes: `python recordings/make_recordings.py [OUT_DIR]`.

Each recording puts dshkit's own recorder (`dshkit.mock_server.Recorder`, what `dshkit record` runs) in
front of the mock server, which generates realistic DeepSeek streams from the scripts below, and
drives it with the real `DeepSeekAdapter` (alone, or inside the agent loop for multi-step ones).
No live API is involved. The mock paces its writes (`chunk_delay_ms`), so the cassettes carry
real read boundaries and gaps. Ids are seeded; the recorded delays change from run to run.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dshkit.harness.llm import GenerateOptions, StreamChunk, UserMessage  # noqa: E402
from dshkit.harness.loop import Agent, AgentOptions  # noqa: E402
from dshkit.harness.providers.deepseek import DeepSeekAdapter  # noqa: E402
from dshkit.harness.session import Session, SessionHeader  # noqa: E402
from dshkit.harness.tools import ToolRuntime, builtin_tools  # noqa: E402
from dshkit.harness.tools.policy import auto_approver  # noqa: E402
from dshkit.mock_server import MockServer, Recorder, Script  # noqa: E402
from dshkit.mock_server.scripts import parse_script  # noqa: E402
from dshkit.run import BUNDLED_SCRIPT  # noqa: E402

MODEL = "deepseek-v4-flash"
KEY = "sk-dshkit-recording-not-a-real-key"
PACE = {"chunk_delay_ms": 12}
README = "# Widget Forge\n\nWidget Forge turns YAML recipes into tested widgets.\n"

Drive = Callable[[str, Path], Awaitable[None]]


async def _call(base_url: str, prompt: str, **kw: Any) -> list[StreamChunk]:
    adapter = DeepSeekAdapter(base_url, KEY, idle_timeout_s=30)
    try:
        options = GenerateOptions(provider="deepseek", model=MODEL, messages=(UserMessage.text(prompt),), **kw)
        return [c async for c in adapter.stream(options)]
    finally:
        await adapter.aclose()


def _one_call(prompt: str, **kw: Any) -> Drive:
    async def drive(base_url: str, workspace: Path) -> None:
        await _call(base_url, prompt, **kw)

    return drive


def _agent(prompt: str) -> Drive:
    async def drive(base_url: str, workspace: Path) -> None:
        adapter = DeepSeekAdapter(base_url, KEY, idle_timeout_s=30)

        async def no_wait(_: float) -> None:
            return None

        try:
            tools = ToolRuntime(builtin_tools(workspace), approver=auto_approver)
            session = Session(SessionHeader.new(cwd=str(workspace)))
            agent = Agent(session, adapter, AgentOptions(model=MODEL), tools=tools, sleep=no_wait)
            await agent.run(prompt)
        finally:
            await adapter.aclose()

    return drive


def _script(name: str, *steps: dict[str, Any]) -> Script:
    return parse_script({"name": name, "steps": [{**s, "timing": {**PACE, **s.get("timing", {})}} for s in steps]})


RECORDINGS: dict[str, tuple[str, list[Script], Drive]] = {
    "plain-text": (
        "one streamed text answer, token-sized fragments",
        [_script("plain-text", {"reply": {"content": "Hello! The mock server streams this answer token by token."}})],
        _one_call("Say hello.", reasoning_effort="off"),
    ),
    "reasoning-text": (
        "reasoning_content first, then the answer (thinking mode)",
        [_script("reasoning-text", {
            "reply": {"reasoning": "The user asks for 2+2. That is 4.", "content": "2 + 2 = 4."},
            "stream": {"thinking": True},
        })],
        _one_call("What is 2+2?", reasoning_effort="high"),
    ),
    "tool-call-split-args": (
        "one tool call whose arguments arrive in several fragments, split inside keys and values",
        [_script("tool-call-split-args", {
            "reply": {"tool_calls": [{"name": "read", "id": "call_00_splitArgs0000000000000001",
                                      "arguments": '{"file_path": "src/main.py", "offset": 1}'}]},
            "stream": {"arguments": {"mode": "points", "points": [1, 5, 13, 20, 31, 38]}},
        })],
        _one_call("Read src/main.py.", reasoning_effort="off"),
    ),
    "parallel-tool-calls": (
        "two tool calls in one response (tool_calls index 0 and 1)",
        [_script("parallel-tool-calls", {
            "reply": {"tool_calls": [
                {"name": "read", "id": "call_00_parallelA00000000000000001", "arguments": '{"file_path": "README.md"}'},
                {"name": "list", "id": "call_01_parallelB00000000000000002", "arguments": '{"path": "."}'},
            ]},
            "stream": {"split": {"mode": "fixed", "size": 7}},
        })],
        _one_call("Read the README and list the folder.", reasoning_effort="off"),
    ),
    "tool-loop-reasoning": (
        "three steps through the agent loop: reason + read, reason + list, answer; every request "
        "passes the earlier reasoning_content back (the mock answers 400 otherwise)",
        [_script(
            "tool-loop-reasoning",
            {"reply": {"reasoning": "I should read the README first.",
                       "tool_calls": [{"name": "read", "id": "call_00_loopRead000000000000000001",
                                       "arguments": '{"file_path": "README.md"}'}]},
             "stream": {"thinking": True, "split": {"mode": "fixed", "size": 9}}},
            {"match": {"tool_result": "call_00_loopRead000000000000000001"},
             "reply": {"reasoning": "Now list the folder to see what else is there.",
                       "tool_calls": [{"name": "list", "id": "call_00_loopList000000000000000002",
                                       "arguments": '{"path": "."}'}]},
             "stream": {"thinking": True, "split": {"mode": "fixed", "size": 9}}},
            {"match": {"tool_result": "call_00_loopList000000000000000002"},
             "reply": {"reasoning": "I have both results.",
                       "content": "Widget Forge turns YAML recipes into tested widgets; the folder holds its README."},
             "stream": {"thinking": True, "split": {"mode": "fixed", "size": 9}}},
        )],
        _agent("What is this project? Look around first."),
    ),
    "rate-limit-then-success": (
        "a 429 with Retry-After: 1, then the retried request succeeds (two exchanges)",
        [_script("rate-limit-then-success",
                 {"fault": "rate_limit", "retry_after": 1},
                 {"reply": {"content": "Answered after one retry."}})],
        _agent("Answer even if you are rate limited."),
    ),
    "bad-request-400": (
        "a 400 invalid_request_error with DeepSeek's error body (not retried)",
        [_script("bad-request-400", {"fault": "invalid_request", "message": "Invalid request: the recorded 400."})],
        _one_call("This request is refused.", reasoning_effort="off"),
    ),
    "readme-walk": (
        "the seed's README walk (`dshkit run --replay recordings/readme-walk`): reasoning, `read` "
        "with split arguments, the tool result, the answer",
        [],  # the bundled script, loaded below
        _agent("Read README.md and tell me what the project does."),
    ),
}


async def record_one(name: str, out_dir: Path) -> Path:
    _, scripts, drive = RECORDINGS[name]
    sources: list[Any] = list(scripts) or [BUNDLED_SCRIPT]
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        (workspace / "README.md").write_text(README, encoding="utf-8")
        (workspace / "src").mkdir()
        (workspace / "src" / "main.py").write_text("print('forge')\n", encoding="utf-8")
        target = out_dir / f"{name}.cassette.jsonl"
        target.unlink(missing_ok=True)
        async with MockServer(*sources, seed=5) as upstream, Recorder(upstream.base_url, out_dir / name) as rec:
            rec.meta["upstream"] = "dshkit mock server (recordings/make_recordings.py)"
            rec.meta["description"] = RECORDINGS[name][0]
            await drive(rec.base_url, workspace)
        upstream.assert_consumed()
        return rec.path


async def main(out_dir: Path) -> None:
    for name in RECORDINGS:
        path = await record_one(name, out_dir)
        print(f"{path}")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent))
