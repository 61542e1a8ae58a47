"""`SessionStore`: one safe file per session id, created once, reopened (and resumed) to keep writing."""

from __future__ import annotations

from pathlib import Path

import pytest
import zstandard

from dshkit.harness.llm.errors import UsageError
from dshkit.harness.session import Session
from dshkit.harness.session.jsonl import dump_session, load_session
from dshkit.harness.session.store import SessionStore, encode_segment

from .test_jsonl import full_turn, tick


def test_store_open_resumes_with_end_seed_and_keeps_writing(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, clock=tick)
    s = store.create(id="r")
    full_turn(s)
    store.close(s)
    resumed = store.open("r")
    assert resumed.events[-1].type == "session/end-seed"
    resumed.append("turn/start", {"turn": 2})
    store.close(resumed)
    again = load_session(store.path_for("r"))
    # turn 2 was left open, so loading closes it as interrupted
    assert [e.type for e in again.events][-3:] == ["session/end-seed", "turn/start", "turn/end"]


def test_open_without_resume_marks_nothing_and_appends_to_the_file_it_was_given(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "elsewhere", clock=tick, durable=False)
    s = Session(clock=tick)
    full_turn(s)
    path = tmp_path / "p.jsonl"
    path.write_text(dump_session(s))
    reopened = store.open(path, resume=False)
    assert list(reopened.events) == list(s.events)
    reopened.append("session/title", {"title": "later"})
    store.close(reopened)
    assert [e.type for e in load_session(path).events][-2:] == ["turn/end", "session/title"]
    assert not (tmp_path / "elsewhere").exists()


def test_any_id_gets_one_file_inside_the_root_and_is_created_once(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions", clock=tick, durable=False)
    s = store.create(id="../up")
    store.close(s)
    assert [p.name for p in (tmp_path / "sessions").iterdir()] == ["..~002Fup.jsonl"]
    with pytest.raises(UsageError, match="already exists"):
        store.create(id="../up")
    with pytest.raises(UsageError, match="no session file"):
        store.open("missing")
    # an empty id is refused, not quietly made a random one
    with pytest.raises(UsageError, match="a session id must be a non-empty string, got ''"):
        store.create(id="")
    assert len(list((tmp_path / "sessions").iterdir())) == 1


def test_encode_segment_is_injective_and_safe() -> None:
    assert encode_segment("abc-1.2_3") == "abc-1.2_3"
    assert encode_segment(".") == "~002E" and encode_segment("..") == "~002E~002E"
    assert encode_segment("a/b") == "a~002Fb"
    assert encode_segment("a~b") == "a~007Eb"
    assert encode_segment("😀") == "~D83D~DE00"
    with pytest.raises(UsageError, match="must not be empty"):
        encode_segment("")


def test_default_store_location() -> None:
    assert SessionStore().path_for("x") == Path(".dshkit/sessions/x.jsonl")


def test_a_compressed_log_is_not_resumed(tmp_path: Path) -> None:
    s = Session(clock=tick)
    full_turn(s)
    log = tmp_path / "session.jsonl.zstd"
    log.write_bytes(zstandard.ZstdCompressor().compress(dump_session(s).encode()))
    with pytest.raises(UsageError, match=r"session\.jsonl\.zstd: a zstd-compressed session log cannot be resumed .*zstd -d"):
        SessionStore(tmp_path).open(log)
