"""The scripted cases `make e2e-dsh` runs the real DSH and dshkit's loop through.

Each case is one mock-server script (steps for the main calls; DSH's session-title request gets
the script's default title reply), one task and the workspace files the task needs. `CASES` are
the checked cases; `fault_cases()` gives one case per fault of the mock's catalogue, each fault
repeated for every retry, for the fault-parity table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CASES", "DEPARTURES", "IDLE_MS", "NOTES", "UNSCRIPTABLE", "Case", "fault_cases"]

IDLE_MS = 3000
"""The stream idle timeout both harnesses run with (DSH `streamIdleTimeoutMs`, dshkit
`--idle-timeout`), so stalls end in seconds rather than DSH's default five minutes."""
NOTES = "alpha: 1\nbeta: 2\ngamma: 3\n"
ANSWER = {"reply": {"content": "Recovered: hello."}}


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    what: str
    script: dict[str, Any]
    task: str = "Say hello"
    files: dict[str, str] = field(default_factory=lambda: {"notes.txt": NOTES})


CASES: tuple[Case, ...] = (
    Case(
        "tool-call",
        "reasoning, then a read call whose arguments arrive in 3-byte fragments over random writes",
        {"steps": [
            {"match": {"prompt": "^Read notes.txt"}, "reply": {
                "reasoning": "The user wants the notes. I will read the file first.",
                "tool_calls": [{"id": "call_00_read", "name": "read", "arguments": {"file_path": "notes.txt"}}]},
             "stream": {"arguments": {"mode": "fixed", "size": 3}, "reasoning": {"mode": "fixed", "size": 5},
                        "writes": {"random_max": 7, "inside_utf8": True, "inside_escapes": True}, "seed": 11}},
            {"match": {"tool_result": "call_00_read"}, "reply": {"content": "The notes list alpha, beta and gamma."}},
        ]},
        task="Read notes.txt and summarise it",
    ),
    Case("rate-limit", "429 with Retry-After: 1, then an answer",
         {"steps": [{"fault": "rate_limit", "retry_after": 1}, ANSWER]}),
    Case("server-error", "500, then an answer", {"steps": ["server_error", ANSWER]}),
    Case("reset-mid-text", "text deltas, then a TCP reset, then an answer",
         {"steps": [{"fault": "partial_disconnect", "text": "Hello, I was cut"}, ANSWER]}),
    Case("eof-mid-arguments", "a tool call cut by a clean EOF inside its arguments",
         {"steps": ["partial_tool_eof"]}),
    Case("done-missing", "a complete reply with its finish chunk, then EOF without [DONE]",
         {"steps": ["done_missing"]}),
    Case("inband-error", "two events, then data: {\"error\": …} and EOF", {"steps": ["inband_error"]}),
    Case("stall", f"two events, then silence past the {IDLE_MS} ms idle timeout, then an answer",
         {"steps": ["stall_after", ANSWER]}),
)

UNSCRIPTABLE = {
    "random": "picks another fault per request: its rows are those of the faults it picks",
    "connection_refused": "only a `--sequence` entry of `dshkit serve` (no server to script yet)",
}


DEPARTURES = {
    "malformed_event": "DSH's translator throws a TypeError on `choices: [null]`, which its adapter reports as "
    "TRANSPORT and retries; dshkit reports MALFORMED_RESPONSE and does not retry a reply that is broken by "
    "shape (add MALFORMED_RESPONSE to RetryPolicy.retryable_codes to retry it)",
    "context_overflow": "DSH answers CONTEXT_WINDOW_EXCEEDED with one compaction call (`x-deepseek-harness-compact: 1`, "
    "max_tokens 8192), which fails the same way; dshkit has no compaction engine and ends the turn at once, with the "
    "same error and exit",
    "tool_call_success": "the fault's tool call carries no reasoning; on the next request DSH sends the call without "
    "`reasoning_content`, which DeepSeek (and the mock) reject in thinking mode (400); dshkit sends `reasoning_content: "
    "\"\"` beside it and goes on",
}
"""Faults whose outcome dshkit's loop does not match on purpose, and why (docs/dsh_parity.md)."""


def fault_cases(names: list[str]) -> list[Case]:
    """One case per fault: the fault answers every request of the turn (`repeat_last`), so a
    retried fault shows the whole retry chain and the turn's last word. A tool call is answered
    once and then by a text reply, or the turn would call tools forever."""
    def steps(name: str) -> dict[str, Any]:
        if name == "tool_call_success":
            return {"steps": [name, "success"]}
        return {"repeat_last": True, "steps": [name]}

    return [Case(f"fault:{name}", name, steps(name)) for name in sorted(names) if name not in UNSCRIPTABLE]
