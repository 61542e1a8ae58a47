"""Agent-loop overhead per step: a session of ~10 events against one of ~10,000, and against a
bare decode of the same stream.

One step is one turn whose single model call streams a ~120-chunk reply (reasoning, then text)
from the mock server on loopback. The adapter is wrapped so the time spent inside it (HTTP, the
server's own work, SSE decode and translate: everything the wire costs) is measured on every
`__anext__` and subtracted from the step's wall time, except the time the adapter spends
building the request (serializing the whole history into the body), which grows with the log
and so counts as the step's own work. What is left is the harness's work per step: turn/step
bookkeeping, inbox, prompt assembly, the runtime-context snapshot, the request header,
`derive_messages`, building the request, logging every chunk, assembling and logging the
message. Each measured step runs on a fresh `Session` seeded with the prefilled log and a fresh
`Agent`, short and long interleaved; the median of each counts. The long seed is a real log,
written by the loop itself against the mock server (tool-call steps and answers).

- step_ms_short, step_ms_long: that per-step cost in milliseconds at ~10 and ~10,000 events.
- request_ms_short, request_ms_long: the part of it spent building the request. This part grows
  with the log by nature: the whole history is serialized into every request body.
- long_vs_short: the ratio of the per-step costs; long_vs_short_without_request the same without
  request building (goal < 1.2: derivation and every other per-step cost must not grow with the
  log).
- step_vs_decode: overhead per step / a bare `FastStreamDecoder` decode (the adapter's decoder) of the same response bytes.

Prints the ratios and, as the very last line, one JSON object
with those figures and `step_vs_decode`. Run: `python bench/loop.py` (about 15 s).
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dshkit.harness.llm import GenerateOptions, StreamChunk
from dshkit.harness.loop import Agent, AgentOptions
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.harness.providers.openai_chat.fast_decoder import FastStreamDecoder
from dshkit.harness.session import Session, SessionHeader
from dshkit.harness.session.events import SessionEvent
from dshkit.harness.tools import ToolRuntime, builtin_tools
from dshkit.mock_server import MockServer
from dshkit.mock_server.scripts import parse_script

MODEL = "deepseek-v4-flash"
LONG_EVENTS = 10_000
REPS = 25
REASONING = " ".join(f"thought{i}" for i in range(60))
ANSWER = " ".join(f"word{i}" for i in range(60))
SPLIT = {"split": {"mode": "fixed", "size": 9}}


class TimedAdapter:
    """Counts the seconds spent inside the wrapped adapter's stream, and apart from them the
    seconds its `build_request` takes (request building belongs to the step)."""

    def __init__(self, inner: DeepSeekAdapter) -> None:
        self.inner = inner
        self.capabilities = inner.capabilities
        self.inside = 0.0
        self.building = 0.0
        build = inner.build_request

        def timed_build(options: GenerateOptions) -> Any:
            t = time.perf_counter()
            try:
                return build(options)
            finally:
                self.building += time.perf_counter() - t

        inner.build_request = timed_build  # type: ignore[method-assign]

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        chunks = self.inner.stream(options).__aiter__()
        while True:
            t = time.perf_counter()
            try:
                chunk = await chunks.__anext__()
            except StopAsyncIteration:
                self.inside += time.perf_counter() - t
                return
            self.inside += time.perf_counter() - t
            yield chunk


def _scripts() -> list[Any]:
    measured = {"reply": {"reasoning": REASONING, "content": ANSWER}, "stream": SPLIT}
    prefill_steps: list[Any] = []
    for i in range(80):
        prefill_steps.append({"reply": {"reasoning": f"look around {i}", "tool_calls": [{"name": "list", "arguments": "{}"}]}, "stream": SPLIT})
        prefill_steps.append({"reply": {"reasoning": REASONING, "content": f"answer {i}: {ANSWER}"}, "stream": SPLIT})
    return [
        parse_script({"name": "measured", "session": "measure", "repeat_last": True, "steps": [measured]}),
        parse_script({"name": "prefill", "session": "prefill", "steps": prefill_steps}),
        parse_script({"name": "short", "session": "short", "steps": [{"reply": {"content": "ok"}, "stream": {"split": {"mode": "whole"}}}]}),
    ]


async def _no_sleep(seconds: float) -> None:
    return None


def _agent(session: Session, adapter: Any, workspace: Path) -> Agent:
    return Agent(session, adapter, AgentOptions(model=MODEL), tools=ToolRuntime(builtin_tools(workspace)), sleep=_no_sleep)


async def _seed(session_id: str, adapter: DeepSeekAdapter, workspace: Path, target: int) -> list[SessionEvent]:
    session = Session(SessionHeader.new(id=session_id, cwd=str(workspace)))
    agent = _agent(session, adapter, workspace)
    turn = 0
    while len(session) < target:
        turn += 1
        outcome = await agent.run(f"question {turn}: what changed in the workspace?")
        if outcome.kind != "completed":
            raise RuntimeError(f"prefill turn {turn} ended {outcome.reason}")
    return list(session.events)


async def _step(seed: list[SessionEvent], adapter: TimedAdapter, workspace: Path) -> tuple[float, float, float]:
    session = Session(SessionHeader.new(id="measure", cwd=str(workspace)), seed=seed)
    agent = _agent(session, adapter, workspace)
    gc.collect()
    adapter.inside = adapter.building = 0.0
    t = time.perf_counter()
    outcome = await agent.run("one more question")
    total = time.perf_counter() - t
    if outcome.kind != "completed":
        raise RuntimeError(f"measured step ended {outcome.reason}")
    wire = adapter.inside - adapter.building
    return total - wire, wire, adapter.building


def _decode_time(data: bytes, runs: int = 200) -> float:
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        decoder = FastStreamDecoder()
        decoder.feed(data)
        decoder.close()
        best = min(best, time.perf_counter() - t)
    return best


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        (workspace / "README.md").write_text("# bench\n", encoding="utf-8")
        async with MockServer(*_scripts(), seed=1) as server:
            deepseek = DeepSeekAdapter(server.base_url, "sk-bench")
            timed = TimedAdapter(deepseek)
            short = await _seed("short", deepseek, workspace, 1)
            long = await _seed("prefill", deepseek, workspace, LONG_EVENTS)
            for _ in range(3):  # warm up: connections, caches, first-call costs
                await _step(short, timed, workspace)
                await _step(long, timed, workspace)
            over: dict[str, list[float]] = {"short": [], "long": []}
            inside: dict[str, list[float]] = {"short": [], "long": []}
            building: dict[str, list[float]] = {"short": [], "long": []}
            for _ in range(REPS):
                for name, seed in (("short", short), ("long", long)):
                    o, i, b = await _step(seed, timed, workspace)
                    over[name].append(o)
                    inside[name].append(i)
                    building[name].append(b)
            response = server.journal.last.data
            await deepseek.aclose()
    decode = _decode_time(response)
    probe = FastStreamDecoder()
    chunks = len(probe.feed(response)) + len(probe.close())
    o_short, o_long = statistics.median(over["short"]), statistics.median(over["long"])
    b_short, b_long = statistics.median(building["short"]), statistics.median(building["long"])
    long_vs_short = o_long / o_short
    rest_vs_short = (o_long - b_long) / (o_short - b_short)
    step_vs_decode = o_short / decode
    history = sum(1 for e in long if e.surface_op is not None)
    print(f"seeds: short {len(short)} events; long {len(long)} events ({history} surface nodes); measured reply: {chunks} chunks")
    print(f"harness overhead per step, ~{len(short)} events:  {o_short * 1e3:7.3f} ms  (on the wire: {statistics.median(inside['short']) * 1e3:.3f} ms)")
    print(f"harness overhead per step, ~{len(long)} events: {o_long * 1e3:7.3f} ms  (on the wire: {statistics.median(inside['long']) * 1e3:.3f} ms)")
    print(f"bare FastStreamDecoder on the same {len(response)} response bytes: {decode * 1e3:.3f} ms")
    print(f"request building per step: {b_short * 1e3:.3f} ms short, {b_long * 1e3:.3f} ms long (grows with what is sent)")
    print(f"long vs short: {long_vs_short:.3f}; without request building: {rest_vs_short:.3f} (goal < 1.2)")
    print(f"step overhead vs bare decode: {step_vs_decode:.2f}x")
    print(json.dumps({
        "step_ms_short": round(o_short * 1e3, 3),
        "step_ms_long": round(o_long * 1e3, 3),
        "request_ms_short": round(b_short * 1e3, 3),
        "request_ms_long": round(b_long * 1e3, 3),
        "long_vs_short": round(long_vs_short, 3),
        "long_vs_short_without_request": round(rest_vs_short, 3),
        "step_vs_decode": round(step_vs_decode, 2),
    }))
    return 0 if rest_vs_short < 1.2 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
