"""Every upstream DSH log in the shared corpus loads, derives, and replays to its messages."""

import os
from pathlib import Path

import pytest

from dshkit.harness.llm import AssistantMessage
from dshkit.harness.llm.codec import message_from_json, message_to_json
from dshkit.harness.llm.messages import ModelSource
from dshkit.harness.session import parse_session_log
from dshkit.harness.session.calls import assemble_chunk_events, split_model_calls
from dshkit.harness.session.jsonl import dump_session
from dshkit.harness.session.lossless import thaw_json
from tests.conftest import corpus_absent_param, corpus_missing

_SHARED = Path(os.environ.get("DSHKIT_SHARED", Path(__file__).resolve().parents[3].parent / "shared"))
CORPUS = _SHARED / "corpus" / "dsh-sessions"
LOGS = sorted(CORPUS.glob("*.jsonl")) if CORPUS.is_dir() else []


def _require_corpus() -> None:
    if not CORPUS.is_dir():
        pytest.skip(corpus_missing(CORPUS))


def test_corpus_present_or_skipped() -> None:
    _require_corpus()
    assert LOGS, f"no *.jsonl in {CORPUS}"


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in LOGS] or [corpus_absent_param(CORPUS)])
def test_log_loads_derives_and_replays(path: Path) -> None:
    loaded = parse_session_log(path.read_bytes(), source=str(path))
    session = loaded.session
    assert loaded.closers == () and loaded.dropped_lines == 0
    assert loaded.projected
    messages = session.derive_messages()
    assert messages, "a logged turn always shows the model something"
    replayed = 0
    for event in session.events:
        if event.type != "assistant/message":
            continue
        turn, step = event.data["turn"], event.data["step"]
        calls = split_model_calls(session.chunk_events(turn, step))
        # the message cites exactly the chunks of its own (last) attempt
        cited = [e for e in session.chunk_events(turn, step) if e.seq in set(event.source_event_seqs or ())]
        assert calls[-1] == cited
        assembler = assemble_chunk_events(cited)
        logged = message_from_json(event.data["message"])
        assert isinstance(logged.source, ModelSource)
        source = ModelSource(provider=logged.source.provider, model=logged.source.model, replay_state=assembler.replay_state)
        rebuilt = assembler.message(source, id=logged.id, interrupted=bool(event.data.get("interrupted")))
        assert message_to_json(rebuilt) == thaw_json(event.data["message"])
        replayed += 1
    assert replayed or path.name.startswith("error-finish")
    # an assistant message derives unless it is an empty anchor
    for m in messages:
        if isinstance(m, AssistantMessage):
            assert m.content
    # our own writer round-trips what we read
    again = parse_session_log(dump_session(session))
    assert list(again.session.events) == list(session.events)
