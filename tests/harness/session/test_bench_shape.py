"""Per-step cost must not grow with the log: no O(n) work in append or derive.

Counted, not timed (the timed figure is `bench/loop.py`'s): the Python lines and calls one step runs and
the memory it allocates at its peak are compared between a short log and a ~10,000-event one. An
O(n) walk shows up as more lines run, an O(n) copy (even one done in C) as a larger peak.
"""

import sys
import tracemalloc
from types import FrameType
from typing import Any

from dshkit.harness.llm import AssistantMessage, TextBlock, UserMessage
from dshkit.harness.llm.chunks import TextDelta
from dshkit.harness.llm.messages import ModelSource
from dshkit.harness.session import Session

SRC = ModelSource(provider="p", model="m")


def one_step(s: Session, turn: int) -> None:
    s.append("turn/start", {"turn": turn})
    s.append("step/start", {"turn": turn, "step": 1})
    s.append_user_message(UserMessage.text("q"))
    s.derive_messages()
    seqs = [s.append_chunk(turn, 1, TextDelta(index=0, text="x")).seq for _ in range(3)]
    s.append_assistant_message(turn, 1, AssistantMessage(content=(TextBlock(text="xxx"),), source=SRC), source_event_seqs=seqs)
    s.append("step/end", {"turn": turn, "step": 1})
    s.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    s.derive_messages()


def session_with(turns: int) -> Session:
    s = Session(clock=lambda: 0)
    for t in range(1, turns + 1):
        one_step(s, t)
    return s


def work_of_one_step(s: Session) -> int:
    """Python lines executed and C functions called by one step."""
    count = 0

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        count += 1
        return trace

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        if event == "c_call":
            count += 1

    turn = s.last_turn + 1
    sys.settrace(trace)
    sys.setprofile(profile)
    try:
        one_step(s, turn)
    finally:
        sys.setprofile(None)
        sys.settrace(None)
    return count


def peak_bytes_of_one_step(s: Session) -> int:
    turn = s.last_turn + 1
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        one_step(s, turn)
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_step_work_does_not_grow_with_log_length() -> None:
    short, long = session_with(1), session_with(1250)  # ~10,000 events in the long one
    assert len(long.events) > 10_000
    for s in (short, long):  # warm both up: first-call caches
        one_step(s, s.last_turn + 1)
    short_work, long_work = work_of_one_step(short), work_of_one_step(long)
    assert long_work <= short_work * 1.05 + 10, (short_work, long_work)
    short_peak, long_peak = peak_bytes_of_one_step(short), peak_bytes_of_one_step(long)
    # An O(n) copy of ~10,000 events or their messages would add hundreds of KB.
    assert long_peak <= short_peak * 1.5 + 16_384, (short_peak, long_peak)
