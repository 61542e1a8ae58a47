"""How a replayed session compares with its log: `ReplayReport` and `replay_diff`.

Four things are compared, each as a list in log order: the content of every assistant message
(interrupted prefixes left out), the content of every tool result, the outcome of every turn
that was replayed (its kind, and the failure code of an `error`), and the failure code of every
model call that failed (retried attempts included). A log whose only model call failed has no
assistant message, yet it replays: its failure and its turn's outcome must come back.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dshkit.harness.llm.codec import message_to_json
from dshkit.harness.session.events import SessionEvent
from dshkit.harness.session.lossless import thaw_json
from dshkit.harness.session.shapes import logged_message

__all__ = ["ReplayReport", "call_failures", "logged_contents", "replay_diff", "turn_outcome"]


def logged_contents(events: Iterable[SessionEvent], type_: str) -> list[Any]:
    """The content of each `type_` message (interrupted assistant prefixes left out), as JSON."""
    return [
        message_to_json(logged_message(e.type, e.data, seq=e.seq))["content"]
        for e in events
        if e.type == type_ and e.defect is None and not (type_ == "assistant/message" and e.data.get("interrupted"))
    ]


def turn_outcome(reason: Any) -> dict[str, Any]:
    """A `turn/end` reason as compared: its kind, and the code of an `error`'s failure (the
    messages and an abort's cause are the harness's own words, not the outcome)."""
    if not isinstance(reason, Mapping):
        return {"kind": "unknown"}
    out: dict[str, Any] = {"kind": reason.get("kind")}
    error = reason.get("error")
    if out["kind"] == "error" and isinstance(error, Mapping):
        out["code"] = error.get("code")
    return out


def call_failures(events: Iterable[SessionEvent]) -> list[str]:
    """The failure code of every model call that ended in an `error` finish, in log order."""
    out: list[str] = []
    for e in events:
        if e.type != "assistant/chunk" or e.defect is not None:
            continue
        chunk = thaw_json(e.data).get("chunk") or {}
        reason = chunk.get("reason") or {}
        if chunk.get("type") == "finish" and reason.get("kind") == "error":
            out.append(str((reason.get("failure") or {}).get("code")))
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayReport:
    """How a replayed session compares with its log."""

    logged_messages: list[Any]
    replayed_messages: list[Any]
    logged_results: list[Any]
    replayed_results: list[Any]
    turn_ends: list[str]
    """The kind of each replayed turn's end."""
    logged_outcomes: list[Any]
    """Each replayed turn's logged `turn/end`, as `turn_outcome` reads it."""
    replayed_outcomes: list[Any]
    logged_failures: list[str]
    """The failure code of each logged model call that failed."""
    replayed_failures: list[str]
    calls: int
    """The recorded model calls the replay could serve (every script's entries)."""

    @property
    def messages_equal(self) -> bool:
        return self.logged_messages == self.replayed_messages

    @property
    def results_equal(self) -> bool:
        return self.logged_results == self.replayed_results

    @property
    def outcomes_equal(self) -> bool:
        """The same turn outcomes and the same failed calls, with the same codes."""
        return self.logged_outcomes == self.replayed_outcomes and self.logged_failures == self.replayed_failures

    @property
    def equal(self) -> bool:
        return self.messages_equal and self.results_equal and self.outcomes_equal

    def diff(self) -> list[str]:
        """`replay_diff` of every compared list; empty when the replay equals the log."""
        return (
            replay_diff("assistant message", self.logged_messages, self.replayed_messages)
            + replay_diff("tool result", self.logged_results, self.replayed_results)
            + replay_diff("turn outcome", self.logged_outcomes, self.replayed_outcomes)
            + replay_diff("failed call", self.logged_failures, self.replayed_failures)
        )


def replay_diff(what: str, logged: Sequence[Any], replayed: Sequence[Any]) -> list[str]:
    """A unified diff (indented JSON) of each logged/replayed pair that differs, and a line for a
    count that differs; empty when both lists are equal."""
    out: list[str] = []
    if len(logged) != len(replayed):
        out.append(f"the log holds {len(logged)} {what}(s), the replay made {len(replayed)}")
    for i, (a, b) in enumerate(zip(logged, replayed, strict=False)):
        if a != b:
            left = json.dumps(a, indent=2, ensure_ascii=False).splitlines()
            right = json.dumps(b, indent=2, ensure_ascii=False).splitlines()
            out.append(f"{what} {i + 1} differs:")
            out.extend(difflib.unified_diff(left, right, fromfile=f"logged {what} {i + 1}",
                                            tofile=f"replayed {what} {i + 1}", lineterm=""))
    return out
