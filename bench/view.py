"""`dshkit view` cost as a session log grows: time and page bytes per size, and how they grow.

Each log is written by the real agent against the real mock server on loopback, in a temporary
folder: turns of two steps, a tool call (`read` of a small file, argument fragments on the wire)
and an answer with reasoning, each streamed in small fragments. The largest log has 1,000 steps
(about 3.5 MB, most of it the tool schemas each step's request header logs); the smaller ones are the first turns of the same walk, so every size holds the
same kind of step. Each size is rendered through `dshkit.view.render_paths` (the code `dshkit
view` runs), timed as the best of a few runs, and the page's UTF-8 bytes are counted.

The growth exponent is the slope of log(cost) over log(steps) between the smallest and the
largest log: 1.0 is linear, 2.0 quadratic. The page used to repeat every request's whole history
(508 MB and 13.6 s at 1,000 steps, exponent ~2); it now shows what each request adds to the one
before and links to what was already shown.

Prints one line per size and, as the very last line, one JSON object with the seconds and
megabytes at 1,000 steps, `time_exponent` and `bytes_exponent` (goal ≤ 1.1 each), whether the
1,000-step page met its goals (< 2 s, < 20 MB), and `view_vs_parse`: the view's time over the
time `parse_session_log` alone takes on the same log, a ratio that holds on a busy machine (the
view parses the log, rebuilds every request by replaying it, then writes the page), and
`parse_exponent`, the growth exponent of that parse: the view's time cannot grow slower. Also
`plain_seconds`, the same 1,000-step page built with the requests rebuilt by replaying the log
event by event (`render_paths(plain=True)`, the reference path the view used before it rebuilt
them from the parsed session), and `plain_vs_fast`, that time over the default path's, measured
in the same rounds. Run:
`python bench/view.py` (one to two minutes: most of it is writing the log through the agent).
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dshkit.harness.loop import Agent, AgentOptions
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.harness.session import Session, SessionHeader, parse_session_log
from dshkit.harness.session.jsonl import save_session
from dshkit.harness.tools import ToolRuntime, builtin_tools
from dshkit.mock_server import MockServer
from dshkit.mock_server.scripts import parse_script
from dshkit.view import render_paths

MODEL = "deepseek-v4-flash"
STEPS = (100, 250, 500, 1000)
RUNS = 3
NOTES = "".join(f"line {i}: the forge turns YAML recipes into widgets and tests them.\n" for i in range(8))
SPLIT = {"split": {"mode": "fixed", "size": 16}}


def _script(turns: int) -> Any:
    steps: list[Any] = []
    for i in range(turns):
        steps.append({
            "reply": {"reasoning": f"Turn {i}: read the notes before answering.",
                      "tool_calls": [{"name": "read", "arguments": '{"file_path":"NOTES.md"}'}]},
            "stream": {**SPLIT, "arguments": {"mode": "points", "points": [3, 9, 15]}},
        })
        steps.append({
            "reply": {"reasoning": f"The notes say what the forge does; answer turn {i} in a few words.",
                      "content": f"Answer {i}: the forge turns YAML recipes into widgets, then tests each widget."},
            "stream": SPLIT,
        })
    return parse_script({"name": "view-bench", "steps": steps})


async def _no_sleep(_seconds: float) -> None:
    return None


async def write_log(folder: Path, steps: int) -> Path:
    """The walk of `steps` steps (two a turn) as a log file."""
    workspace = folder / "ws"
    workspace.mkdir()
    (workspace / "NOTES.md").write_text(NOTES, encoding="utf-8")
    turns = steps // 2
    async with MockServer(_script(turns), seed=1) as server:
        session = Session(SessionHeader.new(id="view-bench", cwd=str(workspace)))
        adapter = DeepSeekAdapter(server.base_url, "sk-bench")
        try:
            agent = Agent(session, adapter, AgentOptions(model=MODEL), tools=ToolRuntime(builtin_tools(workspace)),
                          sleep=_no_sleep)
            for turn in range(1, turns + 1):
                outcome = await agent.run(f"Question {turn}: what does the forge do?")
                if outcome.kind != "completed":
                    raise RuntimeError(f"turn {turn} ended {outcome.kind}")
        finally:
            await adapter.aclose()
    return save_session(session, folder / f"log-{steps}.jsonl")


def first_steps(log: Path, steps: int) -> Path:
    """The log cut after the turn that ends step `steps` (two steps a turn): a log of its own."""
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    turns = 0
    for end, line in enumerate(lines):
        if '"type": "turn/end"' in line or '"type":"turn/end"' in line:
            turns += 1
            if 2 * turns == steps:
                path = log.with_name(f"log-{steps}.jsonl")
                path.write_text("".join(lines[: end + 1]), encoding="utf-8")
                return path
    raise ValueError(f"{log} has fewer than {steps} steps")


def measure(path: Path, *, plain_too: bool = False) -> tuple[float, int, float, float]:
    """Best-of-`RUNS` seconds to build the page, its size in UTF-8 bytes, best-of-`RUNS`
    seconds to parse the log alone (`parse_session_log`, which every reader of logs pays) and,
    with `plain_too`, best-of-`RUNS` seconds of the page on the plain rebuild path (else nan)."""
    best, size, parse, plain = math.inf, 0, math.inf, math.inf if plain_too else math.nan
    data = path.read_bytes()
    for _ in range(RUNS):  # the paths interleaved, so a busy moment hits each alike
        t = time.perf_counter()
        html, _kind = render_paths([path])
        best = min(best, time.perf_counter() - t)
        size = len(html.encode("utf-8"))
        t = time.perf_counter()
        parse_session_log(data)
        parse = min(parse, time.perf_counter() - t)
        if plain_too:
            t = time.perf_counter()
            render_paths([path], plain=True)
            plain = min(plain, time.perf_counter() - t)
    return best, size, parse, plain


def exponent(small: tuple[int, float], large: tuple[int, float]) -> float:
    return math.log(large[1] / small[1]) / math.log(large[0] / small[0])


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        whole = asyncio.run(write_log(Path(tmp), max(STEPS)))
        paths = [whole if steps == max(STEPS) else first_steps(whole, steps) for steps in STEPS]
        rows = []
        for steps, path in zip(STEPS, paths, strict=True):
            seconds, size, parse, plain = measure(path, plain_too=steps == max(STEPS))
            rows.append((steps, path.stat().st_size, seconds, size, parse, plain))
            print(f"{steps:>5} steps  log {path.stat().st_size / 1e6:6.2f} MB  view {seconds:7.3f} s  "
                  f"page {size / 1e6:7.2f} MB  (parsing the log alone: {parse:.3f} s)")
    (s0, _, t0, b0, p0, _), (s1, log1, t1, b1, p1, plain1) = rows[0], rows[-1]
    time_exp, bytes_exp = exponent((s0, t0), (s1, t1)), exponent((s0, b0), (s1, b1))
    parse_exp = exponent((s0, p0), (s1, p1))
    ok = t1 < 2.0 and b1 < 20e6 and time_exp <= 1.1 and bytes_exp <= 1.1
    print(f"growth exponent {s0} -> {s1} steps: time {time_exp:.2f}, bytes {bytes_exp:.2f} (goal <= 1.1; 2 is "
          f"quadratic); parsing the log alone: {parse_exp:.2f}")
    print(f"at {s1} steps the view takes {t1 / p1:.2f}x the time of parsing the log alone; rebuilding the "
          f"requests by replaying the log (the plain path) it takes {plain1:.3f} s, {plain1 / t1:.2f}x")
    print(json.dumps({
        "steps": s1, "log_mb": round(log1 / 1e6, 2), "seconds": round(t1, 3), "page_mb": round(b1 / 1e6, 2),
        "parse_seconds": round(p1, 3), "view_vs_parse": round(t1 / p1, 2), "parse_exponent": round(parse_exp, 2),
        "plain_seconds": round(plain1, 3), "plain_vs_fast": round(plain1 / t1, 2),
        "time_exponent": round(time_exp, 2), "bytes_exponent": round(bytes_exp, 2),
        "goals_met": ok,
    }))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
