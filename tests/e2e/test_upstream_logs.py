"""Every session log upstream DSH committed loads, and every step replays to its logged message.

The corpus folder `shared/corpus/dsh-sessions-upstream` holds upstream's snapshot fixtures under
their own paths: 112 scenario folders (a `session.jsonl`, maybe `session.N.jsonl` subagents,
maybe a `replay.override.json` sidecar, or only a sidecar). For each folder:

- every log loads as an imported log (`lenient=True`): no line is cut, and the only problems
  reported are the ones listed in `INCONSISTENT` (logs whose own data disagree with itself);
- the loaded log writes back to the same events;
- each `assistant/message` equals what `BlockAssembler` folds from the chunks of its call;
- the derived replay script, re-encoded as DeepSeek SSE by the real mock server and parsed by
  the real `DeepSeekAdapter` over loopback, assembles to the same content, call by call.

One mock server serves the whole module (per xdist worker): each test reserves its scripts for
session ids of its own, so tests never see each other's calls.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dshkit.harness.llm import BlockAssembler, Finish, GenerateOptions, StreamChunk, UserMessage
from dshkit.harness.llm.codec import message_to_json
from dshkit.harness.llm.messages import ModelSource, UserSource
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.harness.replay.entries import ReplayEntry, ReplayError, SessionScript
from dshkit.harness.replay.scripts import load_log_session, load_session_scripts
from dshkit.harness.replay.session import turn_inputs
from dshkit.harness.session import parse_session_log
from dshkit.harness.session.calls import assemble_chunk_events, split_model_calls
from dshkit.harness.session.events import SessionEvent
from dshkit.harness.session.jsonl import LoadedLog, dump_session
from dshkit.harness.session.lossless import thaw_json
from dshkit.harness.session.shapes import logged_message
from dshkit.mock_server import MockServer
from dshkit.mock_server.replay import session_scripts_to_mock
from dshkit.replay import replay_session

from ..conftest import DSH_UPSTREAM, corpus_missing, upstream_folders

FOLDERS = upstream_folders()

_FIXTURES = "packages/test-support/acp-snapshot/tests/fixtures"
_FAKE_HEADER = "request/header whose config names no provider (the snapshot tool's own test fixture, model 'fake')"
INCONSISTENT: dict[str, tuple[str, str]] = {
    # folder: (why its own data is inconsistent, a words of the problem dshkit reports)
    "apps/web/tests/snapshots/cordis-tool-round": (
        "chunks were cut out by hand without renumbering: sourceEventSeqs point past the events",
        "sourceEventSeqs must name earlier events",
    ),
    "examples/acp-agent/tests/snapshots/persistent-pwsh-tool-turn": (
        "the pwsh call's argument deltas join to `{\"command\": …}` but its block-end holds `{\"command\":…}`",
        "differs from its deltas joined",
    ),
    "apps/web/tests/snapshots/message-feedback-protocol": (
        "hand-written assistant/message with no model call (no assistant/chunk) behind it",
        "has no logged model call",
    ),
    f"{_FIXTURES}/record-suite/rec-child": (_FAKE_HEADER, "config.provider"),
    f"{_FIXTURES}/record-suite/rec-pin": (_FAKE_HEADER, "config.provider"),
    f"{_FIXTURES}/suite/pin-turn": (_FAKE_HEADER, "config.provider"),
    f"{_FIXTURES}/suite/plain-turn": (_FAKE_HEADER, "config.provider"),
    f"{_FIXTURES}/suite/shared-pin": (_FAKE_HEADER, "config.provider"),
    f"{_FIXTURES}/suite/authored-error": (
        "a lone turn/end {error} with no turn number and no turn/start (an authored failure)",
        "data.turn",
    ),
}


LIVE_GOAL_ID = "goal-0f1e2d3c-4b5a-4968-8776-5a4b3c2d1e0f"


def _rel(folder: Path) -> str:
    return folder.relative_to(DSH_UPSTREAM).as_posix()


def _params() -> list[Any]:
    if not FOLDERS:
        reason = corpus_missing(DSH_UPSTREAM)
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="corpus-absent")]
    return [pytest.param(f, id=_rel(f)) for f in FOLDERS]


@pytest.fixture(scope="module")
def wire_server() -> Iterator[MockServer]:
    with MockServer() as server:  # a background thread: it outlives each test's event loop
        yield server


def _call_index(events: Any) -> dict[int, int]:
    """Seq of each `assistant/message` → index of its call in the derived script (the last call
    of its step that finished before it), as `derive_replay_script` counts calls."""
    calls: list[tuple[int, int] | None] = []
    out: dict[int, int] = {}
    for e in events:
        if e.defect is not None:
            continue
        if e.type == "assistant/chunk" and e.data["chunk"].get("type") == "finish":
            calls.append((e.data["turn"], e.data["step"]))
        elif e.type == "compaction/summary" and e.data.get("llmStreamCall"):
            calls.append(None)
        elif e.type == "assistant/message":
            key = (e.data["turn"], e.data["step"])
            found = [i for i, c in enumerate(calls) if c == key]
            if found:
                out[e.seq] = found[-1]
    return out


def _delta_mismatches(call: list[SessionEvent], where: str) -> list[str]:
    """Blocks whose `block-end` disagrees with the concatenation of their deltas. The wire carries
    only the deltas, so such a call cannot come back over SSE as it was logged."""
    parts: dict[int, list[str]] = {}
    out: list[str] = []
    for e in call:
        chunk = e.data["chunk"]
        kind = chunk.get("type")
        if kind in ("text-delta", "reasoning-delta"):
            parts.setdefault(chunk["index"], []).append(chunk["text"])
        elif kind == "tool-call-delta":
            parts.setdefault(chunk["index"], []).append(chunk["argumentsDelta"])
        elif kind == "block-end" and chunk["index"] in parts:
            block = chunk["block"]
            whole = block.get("arguments") if block.get("type") == "tool-call" else block.get("text")
            if "".join(parts[chunk["index"]]) != whole:
                out.append(f"{where} seq {e.seq}: block-end of index {chunk['index']} differs from its deltas joined")
    return out


def _message_problems(loaded: LoadedLog, where: str) -> tuple[list[str], dict[int, Any]]:
    """Check each logged assistant message against its chunks; return the problems and the
    logged content of each message by call index in the derived script (for the wire check)."""
    session = loaded.session
    problems: list[str] = []
    by_call: dict[int, Any] = {}
    seed = session.header.seed_length or 0  # a fork child's inherited prefix is not its own
    index = _call_index(session.events[seed:])
    for event in session.events:
        if event.type != "assistant/message" or event.defect is not None:
            continue
        data = event.data
        turn, step = data["turn"], data["step"]
        calls = split_model_calls(session.chunk_events(turn, step))
        if not calls:
            problems.append(f"{where} seq {event.seq}: the assistant/message has no logged model call")
            continue
        cited = calls[-1]
        if event.source_event_seqs:  # it names exactly the chunks of its own (last) attempt
            wanted = set(event.source_event_seqs)
            assert [e for e in session.chunk_events(turn, step) if e.seq in wanted] == cited, where
        logged = logged_message(event.type, data, seq=event.seq)
        assert isinstance(logged.source, ModelSource)
        assembler = assemble_chunk_events(cited)
        source = ModelSource(provider=logged.source.provider, model=logged.source.model, replay_state=assembler.replay_state)
        rebuilt = message_to_json(assembler.message(source, id=logged.id, interrupted=bool(data.get("interrupted"))))
        # the enveloped form is compared as logged, raw JSON; the flat form as decoded
        want = thaw_json(data["message"]) if "message" in data else message_to_json(logged)
        assert rebuilt == want, f"{where} seq {event.seq}"
        mismatches = _delta_mismatches(cited, where)
        problems.extend(mismatches)
        if event.seq >= seed and not data.get("interrupted") and not mismatches:
            by_call[index[event.seq]] = want["content"]
    return problems, by_call


async def _wire_content(adapter: DeepSeekAdapter, session_id: str, request: str) -> tuple[Any, Finish]:
    options = GenerateOptions(provider="deepseek", model="deepseek-v4-flash",
                              messages=(UserMessage.text(request),), session_id=session_id)
    assembler = BlockAssembler()
    chunks: list[StreamChunk] = [c async for c in adapter.stream(options)]
    for chunk in chunks:
        assembler.feed(chunk)
    finish = chunks[-1]
    assert isinstance(finish, Finish)
    return message_to_json(assembler.message(ModelSource(provider="p", model="m")))["content"], finish


def _entry_content(entry: ReplayEntry, request: str) -> tuple[Any, str]:
    assembler = BlockAssembler()
    for chunk in entry.stream_chunks(lambda: request):
        assembler.feed(chunk)
    content = message_to_json(assembler.message(ModelSource(provider="p", model="m")))["content"]
    return content, assembler.finish_reason.kind


@pytest.mark.parametrize("folder", _params())
async def test_upstream_log_loads_and_replays(folder: Path, wire_server: MockServer) -> None:
    rel = _rel(folder)
    problems: list[str] = []
    logged_by_log: dict[str, dict[int, Any]] = {}
    for path in sorted(folder.glob("session*.jsonl")):
        loaded = parse_session_log(path.read_bytes(), source=f"{rel}/{path.name}", lenient=True)
        assert loaded.dropped_lines == 0, "no line of an upstream log is cut as a torn tail"
        problems.extend(loaded.defects)
        again = parse_session_log(dump_session(loaded.session), lenient=True)
        assert list(again.session.events) == list(loaded.session.events)
        found, by_call = _message_problems(loaded, f"{rel}/{path.name}")
        problems.extend(found)
        logged_by_log[str(path)] = by_call
    expected = INCONSISTENT.get(rel)
    if expected is None:
        assert problems == []
    else:
        assert problems and any(expected[1] in p for p in problems), (expected[0], problems)

    # Over the wire: the calls derived from the logs alone (each logged message must come back),
    # then the calls `dshkit replay` serves with the sidecar (a thrown or hung call has chunks
    # but no finish, so only its sidecar makes the log replayable; a bare-list sidecar replaces
    # the derived calls on purpose).
    primary = folder / "session.jsonl"
    sets: list[tuple[str, list[SessionScript]]] = []
    try:
        if primary.exists():
            sets.append(("derived", load_session_scripts(primary, override=False)))
    except ReplayError as exc:
        assert "write a replay.override.json" in str(exc)
    sidecar = folder / "replay.override.json"
    try:
        if sidecar.exists() or not sets:
            sets.append(("served", load_session_scripts(primary)))
    except ReplayError as exc:  # refused with a located reason: only for a log listed above
        assert expected is not None, str(exc)
    checked = 0
    adapter = DeepSeekAdapter(wire_server.base_url, "sk-replay", idle_timeout_s=30)
    try:
        for tag, scripts in sets:
            checked += await _replay_over_the_wire(
                wire_server, adapter, scripts, f"{rel}@{tag}", logged_by_log if tag == "derived" else {},
                consistent=expected is None,
            )
    finally:
        await adapter.aclose()
    assert checked == sum(len(v) for v in logged_by_log.values()) or expected is not None


async def _replay_over_the_wire(
    server: MockServer, adapter: DeepSeekAdapter, scripts: list[SessionScript], tag: str,
    logged_by_log: dict[str, dict[int, Any]], *, consistent: bool,
) -> int:
    """Serve each script as SSE under its own session id and compare, call by call, what the
    adapter assembles with the call's own chunks and with the logged message; returns how many
    logged messages were compared."""
    # `{{fromRequest:…}}` placeholders are filled from the live request: a goal id the goal
    # plugin mints at run time (goal-wrapup's sidecar); this request carries one such id
    request = f"the goal {LIVE_GOAL_ID} is active"
    checked = 0
    for i, script in enumerate(scripts):
        session_id = f"{tag}#{i}"
        for mock in session_scripts_to_mock([script]):
            server.add_script(mock, session=session_id)
        logged = logged_by_log.get(script.source, {})
        for k, entry in enumerate(script.entries):
            if entry.kind == "hang":
                break  # a sidecar's hang waits for the client to cancel; it is the last call
            content, finish = await _wire_content(adapter, session_id, request)
            if entry.kind != "chunks":
                # a sidecar's throw: an HTTP error carrying its message, not a recorded message
                assert finish.reason.failure is not None and entry.message in finish.reason.failure.message
                continue
            from_chunks, kind = _entry_content(entry, request)
            assert finish.reason.kind == kind, f"{script.source} call {k}"
            if consistent:
                assert content == from_chunks, f"{script.source} call {k}"
            if k in logged:
                assert content == logged[k], f"{script.source} call {k}"
                checked += 1
    return checked


# --- the whole log through the agent loop (`dshkit replay`) ------------------------------------

_HOOK_STOP = "a Stop hook re-opens the finished turn with a next-step message; dshkit's loop has no Stop hooks"
NOT_REPLAYED: dict[str, str] = {
    # folder: why `dshkit replay` cannot re-run it to the logged messages (beyond INCONSISTENT)
    "apps/web/tests/snapshots/minimal-preset": "a request snapshot of the web app: no turn and no assistant/message to compare",
    "apps/web/tests/snapshots/web-search-round": "a request snapshot of the web app: no turn and no assistant/message to compare",
    "examples/acp-agent/tests/snapshots/hook-cc-stop-continue": _HOOK_STOP,
    "examples/acp-agent/tests/snapshots/hook-codex-stop-continue": _HOOK_STOP,
    "examples/acp-agent/tests/snapshots/session-title-after-turn": (
        "its sidecar scripts only the title model's call; upstream serves the turn's call from a second provider route"
    ),
    "examples/headless-agent/tests/snapshots/compaction-recovery": "dshkit has no compaction engine to make the compaction call",
}
NOT_REPLAYED_ON_THE_WIRE: dict[str, str] = {
    "examples/acp-agent/tests/snapshots/inline-image-prompt": "the DeepSeek text adapter refuses image input (UNSUPPORTED_CONTENT)",
}
INBOX_STARTED = {
    # folders with a turn opened by a subagent's notice or report rather than a user prompt
    "examples/acp-agent/tests/snapshots/subagent-continuable",
    "examples/acp-agent/tests/snapshots/subagent-continuable-inheritance",
    "examples/acp-agent/tests/snapshots/subagent-list-agents",
    "examples/acp-agent/tests/snapshots/subagent-report",
}


def _log_params() -> list[Any]:
    """Every folder with a log, through the loop on chunks; over the wire too where the loop
    itself is the point (turns opened by the inbox, the adapter's refusals). Every call of every
    log is already checked over the wire by `test_upstream_log_loads_and_replays`."""
    out: list[Any] = []
    for p in _params():
        folder = p.values[0]
        if folder is None:
            out.append(pytest.param(None, False, marks=p.marks, id=p.id))
        elif (folder / "session.jsonl").exists():
            out.append(pytest.param(folder, False, id=f"{p.id}-chunks"))
            if _rel(folder) in INBOX_STARTED | set(NOT_REPLAYED_ON_THE_WIRE):
                out.append(pytest.param(folder, True, id=f"{p.id}-wire"))
    return out


@pytest.mark.parametrize(("folder", "wire"), _log_params())
async def test_upstream_log_replays_through_the_loop(folder: Path, wire: bool, tmp_path: Path) -> None:
    rel = _rel(folder)
    try:
        report, _ = await replay_session(folder / "session.jsonl", wire=wire, workspace=tmp_path)
    except ReplayError:
        assert rel in INCONSISTENT  # a thrown call without its sidecar: refused with a reason
        return
    gap = NOT_REPLAYED.get(rel) or (NOT_REPLAYED_ON_THE_WIRE.get(rel) if wire else None)
    if rel in INCONSISTENT or gap is not None:
        # listed: keep the list honest (a log that starts replaying must leave it)
        assert gap is None or not (report.messages_equal and report.logged_messages), gap
        return
    assert report.messages_equal, (report.logged_messages, report.replayed_messages)
    # each turn ends as logged, and every failed call fails again with the same code
    assert report.outcomes_equal, report.diff()
    # one live turn per logged turn that had input (header-only and authored logs have none)
    logged = load_log_session(folder / "session.jsonl")
    inputs = turn_inputs(logged)
    assert len(report.turn_ends) == len(inputs)
    opened_by_inbox = any(not isinstance(turn[0].source, UserSource) for turn in inputs)
    assert opened_by_inbox == (rel in INBOX_STARTED)
