"""The agent's durable inbox: two input queues whose every change is logged first.

`next-turn` holds prompts that open a turn; `next-step` holds input for the next step of the
running turn (steering, parked tool contexts). Each mutation is appended to the session as one
`agent/inbox/spliced` event (target, start, removedCount, inserted), so a resumed agent rebuilds
the queues by replaying those events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from dshkit.harness.llm import HarnessError, UserMessage
from dshkit.harness.llm.codec import message_from_json, message_to_json
from dshkit.harness.session import Session
from dshkit.harness.session.lossless import JsonValue, thaw_json

__all__ = ["Inbox", "Target"]

Target = Literal["next-turn", "next-step"]


class Inbox:
    """The two input queues of one agent, restored from and logged to its session."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.lists: dict[str, list[UserMessage]] = {"next-turn": [], "next-step": []}
        for event in session.events[session.header.seed_length or 0 :]:
            if event.type == "agent/inbox/spliced":
                self._apply(event.data)

    def _apply(self, data: Mapping[str, Any]) -> None:
        items = self.lists[data["target"]]
        start, removed = data["start"], data.get("removedCount", 0)
        inserted = [message_from_json(thaw_json(m)) for m in data.get("inserted", ())]
        items[start : start + removed] = inserted  # type: ignore[assignment]

    def splice(
        self,
        target: Target,
        start: int,
        removed: int,
        inserted: Sequence[UserMessage] = (),
        *,
        canceled: bool = False,
    ) -> list[UserMessage]:
        """Replace `removed` items at `start` with `inserted`, logging it first; returns the
        removed items. A splice that changes nothing is not logged."""
        items = self.lists[target]
        start = max(0, min(start, len(items)))
        removed = max(0, min(removed, len(items) - start))
        if not removed and not inserted:
            return []
        data: dict[str, JsonValue] = {"target": target, "start": start}
        if removed:
            data["removedCount"] = removed
        data["inserted"] = [message_to_json(m) for m in inserted]
        if canceled:
            data["outcome"] = "canceled"
        self.session.append("agent/inbox/spliced", data)
        taken = items[start : start + removed]
        items[start : start + removed] = list(inserted)
        return taken

    def push(self, target: Target, message: UserMessage) -> None:
        pending = {m.id for lst in self.lists.values() for m in lst}
        if message.id in pending:
            raise HarnessError(f"message {message.id} is already pending", "DUPLICATE_INPUT")
        self.splice(target, len(self.lists[target]), 0, [message])

    def claim(self, target: Target) -> list[UserMessage]:
        """Take the input of the next step: all of `next-step`, and for a new turn also the
        first `next-turn` prompt."""
        claimed = self.splice("next-step", 0, len(self.lists["next-step"]))
        if target == "next-turn":
            claimed += self.splice("next-turn", 0, 1)
        return claimed

    def clear(self) -> None:
        for target in ("next-step", "next-turn"):
            self.splice(target, 0, len(self.lists[target]), canceled=True)

    @property
    def pending(self) -> bool:
        return any(self.lists.values())

    @property
    def step_input_pending(self) -> bool:
        """Whether input waits for the next step of the running turn."""
        return bool(self.lists["next-step"])
