from dshkit.harness.llm import TextBlock, UserMessage
from dshkit.harness.llm.codec import message_to_json
from dshkit.harness.llm.messages import PluginSource
from dshkit.harness.prompt import SystemPrompt
from dshkit.harness.prompt.runtime_context import (
    RUNTIME_CONTEXT_CLEARED,
    RUNTIME_CONTEXT_HEADER,
    RUNTIME_CONTEXT_PLUGIN,
    RuntimeContextSnapshot,
)
from dshkit.harness.session import Session
from dshkit.harness.session.events import SurfaceReplace


def test_five_steps_changing_context_initial_changed_cleared() -> None:
    session = Session(clock=lambda: 0)
    tracker = RuntimeContextSnapshot.attach(session)
    prompt = SystemPrompt()
    values: list[str | None] = ["sandbox: on", "sandbox: on", "sandbox: off", None, None]
    current = {"v": values[0]}
    prompt.context("sandbox", lambda: current["v"] or "")
    systems = set()
    appended: list[str] = []
    for value in values:
        current["v"] = value
        assembly = prompt.assemble()
        systems.add(assembly.system)
        message = tracker.project(assembly)
        if message is not None:
            session.append_user_message(message)
            appended.append(message.content[0].text)  # type: ignore[union-attr]
    assert len(systems) == 1  # the system prompt is byte-stable across steps
    assert appended == [
        RUNTIME_CONTEXT_HEADER + "sandbox: on",
        RUNTIME_CONTEXT_HEADER + "sandbox: off",
        RUNTIME_CONTEXT_CLEARED,
    ]
    assert RUNTIME_CONTEXT_HEADER == (
        "Current runtime context. This snapshot supersedes earlier runtime-context snapshots.\n\n"
    )
    assert RUNTIME_CONTEXT_CLEARED == (
        "Current runtime context: none. Earlier runtime-context snapshots no longer apply."
    )


def test_no_contexts_ever_means_no_message() -> None:
    tracker = RuntimeContextSnapshot.attach(Session(clock=lambda: 0))
    assert tracker.project(SystemPrompt().assemble()) is None


def test_snapshot_message_shape() -> None:
    prompt = SystemPrompt()
    prompt.context("a", "A")
    prompt.context("b", "B")
    message = RuntimeContextSnapshot().project(prompt.assemble())
    assert message is not None
    assert message.content == (TextBlock(text=RUNTIME_CONTEXT_HEADER + "A\n\nB"),)
    assert message.source == PluginSource(
        plugin=RUNTIME_CONTEXT_PLUGIN,
        form={"form": "snapshot", "sections": [{"name": "a", "text": "A"}, {"name": "b", "text": "B"}]},
    )
    json = message_to_json(message)
    assert json["source"] == {
        "kind": "plugin", "plugin": RUNTIME_CONTEXT_PLUGIN, "form": "snapshot",
        "sections": [{"name": "a", "text": "A"}, {"name": "b", "text": "B"}],
    }


def test_not_committed_means_not_retained() -> None:
    session = Session(clock=lambda: 0)
    tracker = RuntimeContextSnapshot.attach(session)
    prompt = SystemPrompt()
    prompt.context("a", "A")
    assert tracker.project(prompt.assemble()) is not None
    # a pre-step listener dropped it: it is offered again next step
    assert tracker.project(prompt.assemble()) is not None


def test_compaction_shadowing_re_emits_and_unrelated_replace_does_not() -> None:
    session = Session(clock=lambda: 0)
    tracker = RuntimeContextSnapshot.attach(session)
    prompt = SystemPrompt()
    prompt.context("a", "A")
    other = session.append_user_message(UserMessage.text("hello"))
    snap = tracker.project(prompt.assemble())
    assert snap is not None
    snap_event = session.append_user_message(snap)
    later = session.append_user_message(UserMessage.text("later"))
    session.append_user_message(UserMessage.text("x"), surface_op=SurfaceReplace(later.seq, later.seq), source_event_seqs=[later.seq])
    assert tracker.project(prompt.assemble()) is None
    session.append_user_message(
        UserMessage.text("summary"), surface_op=SurfaceReplace(other.seq, snap_event.seq),
        source_event_seqs=[other.seq, snap_event.seq],
    )
    assert tracker.project(prompt.assemble()) is not None


def test_restore_from_resumed_log() -> None:
    session = Session(clock=lambda: 0)
    prompt = SystemPrompt()
    prompt.context("a", "A")
    first = RuntimeContextSnapshot.attach(session)
    snap = first.project(prompt.assemble())
    assert snap is not None
    session.append_user_message(snap)
    resumed = Session(session.header, seed=list(session.events), clock=lambda: 0)
    again = RuntimeContextSnapshot.attach(resumed)
    assert again.project(prompt.assemble()) is None
    assert again.retained_text == RUNTIME_CONTEXT_HEADER + "A"
