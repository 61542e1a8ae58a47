"""The agent's inbox: every change to its two queues is logged first as one
`agent/inbox/spliced` event, and an inbox built on a resumed log replays those events into the
same queues (a fork does not inherit its parent's pending input)."""

from __future__ import annotations

import pytest

from dshkit.harness.llm import HarnessError, UserMessage
from dshkit.harness.loop.inbox import Inbox
from dshkit.harness.session import Session
from dshkit.harness.session.header import SessionHeader
from dshkit.harness.session.lossless import thaw_json


def texts(messages: list[UserMessage]) -> list[str]:
    return [m.content[0].text for m in messages]  # type: ignore[union-attr]


def splices(session: Session) -> list[dict[str, object]]:
    out = []
    for event in session.events:
        if event.type == "agent/inbox/spliced":
            data = thaw_json(event.data)
            data["inserted"] = [m["content"][0]["text"] for m in data["inserted"]]
            out.append(data)
    return out


def test_claim_takes_the_step_input_and_one_turn_prompt_logging_each_change() -> None:
    session = Session()
    inbox = Inbox(session)
    for text in ("first", "second"):
        inbox.push("next-turn", UserMessage.text(text))
    inbox.push("next-step", UserMessage.text("steer"))
    assert texts(inbox.claim("next-turn")) == ["steer", "first"]
    assert texts(inbox.claim("next-step")) == []  # nothing waits for the step: nothing logged
    assert inbox.pending and not inbox.step_input_pending
    assert splices(session) == [
        {"target": "next-turn", "start": 0, "inserted": ["first"]},
        {"target": "next-turn", "start": 1, "inserted": ["second"]},
        {"target": "next-step", "start": 0, "inserted": ["steer"]},
        {"target": "next-step", "start": 0, "removedCount": 1, "inserted": []},
        {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []},
    ]


def test_a_resumed_log_rebuilds_the_queues_and_a_fork_starts_empty() -> None:
    session = Session()
    inbox = Inbox(session)
    waiting = UserMessage.text("waiting")
    for text in ("a", "b", "c"):
        inbox.push("next-step", UserMessage.text(text))
    inbox.push("next-turn", waiting)
    inbox.splice("next-step", 1, 1, [UserMessage.text("B1"), UserMessage.text("B2")])
    assert texts(inbox.splice("next-step", 3, 9)) == ["c"]  # the log says what was removed
    assert splices(session)[-1] == {"target": "next-step", "start": 3, "removedCount": 1, "inserted": []}
    resumed = Inbox(Session(session.header, seed=session.events))
    assert texts(resumed.lists["next-step"]) == ["a", "B1", "B2"]
    assert resumed.lists["next-turn"] == [waiting]  # the very message, id and all
    with pytest.raises(HarnessError, match="already pending") as caught:
        resumed.push("next-step", waiting)
    assert caught.value.code == "DUPLICATE_INPUT"
    fork = SessionHeader.new(parent_session=session.id, seed_length=len(session.events))
    assert not Inbox(Session(fork, seed=session.events)).pending


def test_clear_cancels_everything_pending() -> None:
    session = Session()
    inbox = Inbox(session)
    inbox.push("next-turn", UserMessage.text("later"))
    inbox.push("next-step", UserMessage.text("now"))
    inbox.clear()
    assert not inbox.pending
    assert splices(session)[-2:] == [
        {"target": "next-step", "start": 0, "removedCount": 1, "inserted": [], "outcome": "canceled"},
        {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": [], "outcome": "canceled"},
    ]
    assert not Inbox(Session(session.header, seed=session.events)).pending
