"""The surface: which events it takes and how, and replaces located by position, never by seq order.

Most rules are checked through `Session.append`, which plans each event against the surface before
it commits anything; the fold itself is checked on a bare `Surface`.
"""

from __future__ import annotations

import pytest

from dshkit.harness.llm.codec import message_to_json
from dshkit.harness.llm.errors import SessionError
from dshkit.harness.llm.messages import ToolResultMessage
from dshkit.harness.session.events import SessionEvent, SurfaceReplace
from dshkit.harness.session.surface import Surface

from .test_session import new, user


def test_surface_op_required_on_surface_types_and_forbidden_elsewhere() -> None:
    s = new()
    with pytest.raises(SessionError, match="surfaceOp"):
        s.append("user/message", message_to_json(user("hi")))
    with pytest.raises(SessionError, match="not a surface event"):
        s.append("turn/start", {"turn": 1}, surface_op="append")
    with pytest.raises(SessionError, match="not a surface event"):
        s.append("turn/start", {"turn": 1}, source_event_seqs=[])
    assert len(s) == 0


def test_empty_source_event_seqs_only_on_assistant_message() -> None:
    s = new()
    with pytest.raises(SessionError, match="empty sourceEventSeqs"):
        s.append_user_message(user("x"), source_event_seqs=[])


def test_source_event_seqs_must_be_earlier_and_unique() -> None:
    s = new()
    s.append("turn/start", {"turn": 1})
    with pytest.raises(SessionError, match="earlier"):
        s.append_user_message(user("x"), source_event_seqs=[5])
    with pytest.raises(SessionError, match="duplicates"):
        s.append_user_message(user("x"), source_event_seqs=[0, 0])
    assert len(s) == 1


def test_replace_by_position_and_generation() -> None:
    s = new()
    a = s.append_user_message(user("a"))
    b = s.append_user_message(user("b"))
    c = s.append_user_message(user("c"))
    summary = user("summary")
    r1 = s.append_user_message(summary, surface_op=SurfaceReplace(a.seq, b.seq), source_event_seqs=[a.seq, b.seq])
    assert s.surface_nodes == (r1.seq, c.seq)
    assert s.replace_generation == 1
    assert [m.content[0].text for m in s.derive_messages()] == ["summary", "c"]  # type: ignore[union-attr]
    # after a replace, start may be numerically greater than end (positions count, not numbers)
    r2 = s.append_user_message(
        user("all"), surface_op={"op": "replace", "start": r1.seq, "end": c.seq},
        source_event_seqs=[r1.seq, c.seq],
    )
    assert s.surface_nodes == (r2.seq,)
    assert s.replace_generation == 2


def test_replace_errors_leave_state_untouched() -> None:
    s = new()
    a = s.append_user_message(user("a"))
    b = s.append_user_message(user("b"))
    before = (len(s), s.surface_nodes, s.derive_messages())
    with pytest.raises(SessionError, match="not a current surface node"):
        s.append_user_message(user("x"), surface_op=SurfaceReplace(a.seq, 99), source_event_seqs=[a.seq])
    with pytest.raises(SessionError, match="after end"):
        s.append_user_message(user("x"), surface_op=SurfaceReplace(b.seq, a.seq), source_event_seqs=[a.seq, b.seq])
    with pytest.raises(SessionError, match="shadowed"):
        s.append_user_message(user("x"), surface_op=SurfaceReplace(a.seq, b.seq), source_event_seqs=[a.seq])
    with pytest.raises(SessionError, match="exactly"):
        s.append_user_message(user("x"), surface_op={"op": "replace", "start": 0, "end": 1, "x": 1})
    assert (len(s), s.surface_nodes, s.derive_messages()) == before


def test_tool_result_replace_only_inner_content() -> None:
    s = new()
    tc = s.append_tool_call(1, 1, "c1", "read", "{}")
    original = ToolResultMessage.create("c1", "long output")
    r = s.append_tool_result(1, 1, original, source_event_seqs=[tc.seq])
    pruned = ToolResultMessage.create("c1", "[pruned]", id=original.id)
    s.append("tool/result", {"turn": 1, "step": 1, "message": message_to_json(pruned)},
             surface_op=SurfaceReplace(r.seq, r.seq), source_event_seqs=[r.seq])
    assert s.derive_messages() == (pruned,)
    changed_id = ToolResultMessage.create("c1", "[pruned]")
    last = s.surface_nodes[0]
    with pytest.raises(SessionError, match=r"only message\.content"):
        s.append("tool/result", {"turn": 1, "step": 1, "message": message_to_json(changed_id)},
                 surface_op=SurfaceReplace(last, last), source_event_seqs=[last])
    u = s.append_user_message(user("u"))
    with pytest.raises(SessionError, match="exactly one tool/result"):
        s.append("tool/result", {"turn": 1, "step": 1, "message": message_to_json(pruned)},
                 surface_op=SurfaceReplace(last, u.seq), source_event_seqs=[last, u.seq])


def test_a_replace_renumbers_positions_for_the_nodes_after_it() -> None:
    def event(seq: int, op: object = "append", seqs: tuple[int, ...] | None = None) -> SessionEvent:
        return SessionEvent(type="user/message", seq=seq, time=0, data={}, surface_op=op,  # type: ignore[arg-type]
                            source_event_seqs=seqs)

    surface = Surface()
    log = [event(seq) for seq in range(4)]
    for e in log:
        surface.apply(surface.plan(e, log))  # type: ignore[arg-type]
    plan = surface.plan(event(4, SurfaceReplace(1, 2), (1, 2)), log)
    assert plan is not None and plan.shadowed == (1, 2) and surface.nodes == [0, 1, 2, 3]  # planning changes nothing
    surface.apply(plan)
    assert surface.nodes == [0, 4, 3] and [surface.position(s) for s in (0, 1, 2, 3, 4)] == [0, None, None, 2, 1]
    surface.apply(surface.plan(event(5), log))  # type: ignore[arg-type]
    assert surface.position(5) == 3
    # a later replace finds its nodes where they are now
    final = surface.plan(event(6, SurfaceReplace(3, 5), (3, 5)), log)
    assert final is not None and final.shadowed == (3, 5)
    surface.apply(final)
    assert surface.nodes == [0, 4, 6] and surface.replace_generation == 2
