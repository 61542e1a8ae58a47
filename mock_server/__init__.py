"""A mock DeepSeek server for wire-level tests: scripted and generated streams, faults, replay.

`MockServer` serves DeepSeek's `/chat/completions` on loopback, and the Anthropic Messages
surface DeepSeek serves at `/anthropic/v1/messages` (:mod:`dshkit.mock_server.anthropic`). Scripts (`Script`, loaded with
`load_script`) route per session; `generate_chunks`/`encode_sse`/`plan_writes` are the pure
generator other components reuse; `FAULTS` is the fault catalogue; the `Journal` records every
exchange. `dshkit serve` and the pytest plugin (`mock_deepseek`, `dshkit_mock_server`) wrap it.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from dshkit.mock_server.faults import FAULTS, FaultInfo
from dshkit.mock_server.generate.chunks import QUIRKS, generate_chunks
from dshkit.mock_server.generate.completion import build_completion
from dshkit.mock_server.generate.encode import encode_events, encode_sse, encode_stream, frame_jsonl
from dshkit.mock_server.generate.reply import Reply, StreamMeta, ToolCall, compute_usage, make_meta
from dshkit.mock_server.generate.split import FragmentPlan, SplitPlan, split_text
from dshkit.mock_server.generate.writes import WritePlan, plan_writes
from dshkit.mock_server.journal import Journal, JournalEntry, UnconsumedStepsError, Write
from dshkit.mock_server.routing import SESSION_HEADER, RequestView, session_of
from dshkit.mock_server.scripts import (
    CallbackStep,
    ChunksSpec,
    ChunksStep,
    FaultStep,
    Match,
    RawSpec,
    RawStep,
    RawWrite,
    ReplySpec,
    ReplyStep,
    Script,
    ScriptError,
    SplitSpec,
    StreamSpec,
    Timing,
    ToolCallSpec,
    WriteSpec,
    load_script,
    load_scripts,
    parse_script,
    script_json_schema,
)
from dshkit.mock_server.server import MockServer, sequence_script
from dshkit.mock_server.validation import MODELS, ChatRequest, Rejection, validate_chat

if _TYPE_CHECKING:
    from dshkit.mock_server.cassette import (
        Cassette,
        CassetteAppender,
        CassetteError,
        Read,
        RecordedExchange,
        RecordedRequest,
        cassette_path,
        load_cassette,
        save_cassette,
        script_to_cassette,
    )
    from dshkit.mock_server.factories import (
        AwaitableMockServer,
        MockServerFactory,
        ReplayServerFactory,
        SyncMockServerFactory,
    )
    from dshkit.mock_server.record import Recorder
    from dshkit.mock_server.replay import (
        cassette_to_scripts,
        replay_scripts,
        session_log_scripts,
        session_scripts_to_mock,
    )

# What `dshkit serve` does not need is imported on first use (PEP 562), so the server is ready
# sooner: cassettes, the recorder, replay and the pytest factories pull in the harness's session
# and replay code.
_LAZY: dict[str, str] = {
    "AwaitableMockServer": "dshkit.mock_server.factories",
    "Cassette": "dshkit.mock_server.cassette",
    "CassetteAppender": "dshkit.mock_server.cassette",
    "CassetteError": "dshkit.mock_server.cassette",
    "MockServerFactory": "dshkit.mock_server.factories",
    "Read": "dshkit.mock_server.cassette",
    "RecordedExchange": "dshkit.mock_server.cassette",
    "RecordedRequest": "dshkit.mock_server.cassette",
    "Recorder": "dshkit.mock_server.record",
    "ReplayServerFactory": "dshkit.mock_server.factories",
    "SyncMockServerFactory": "dshkit.mock_server.factories",
    "cassette_path": "dshkit.mock_server.cassette",
    "cassette_to_scripts": "dshkit.mock_server.replay",
    "load_cassette": "dshkit.mock_server.cassette",
    "replay_scripts": "dshkit.mock_server.replay",
    "save_cassette": "dshkit.mock_server.cassette",
    "script_to_cassette": "dshkit.mock_server.cassette",
    "session_log_scripts": "dshkit.mock_server.replay",
    "session_scripts_to_mock": "dshkit.mock_server.replay",
}


def __getattr__(name: str) -> _Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


#: Items of the server checklist (`wire.md` §13) this server implements; each is checked by
#: tests/mock_server/test_claims.py against a server started with `--api-key`. S40 (FIM) is not.
CLAIMED_S_ITEMS: tuple[str, ...] = (
    *(f"S{i}" for i in range(1, 22)),
    "S21b",
    *(f"S{i}" for i in range(22, 40)),
    "S41",
)

__all__ = [
    "CLAIMED_S_ITEMS",
    "FAULTS",
    "MODELS",
    "QUIRKS",
    "SESSION_HEADER",
    "AwaitableMockServer",
    "CallbackStep",
    "Cassette",
    "CassetteAppender",
    "CassetteError",
    "ChatRequest",
    "ChunksSpec",
    "ChunksStep",
    "FaultInfo",
    "FaultStep",
    "FragmentPlan",
    "Journal",
    "JournalEntry",
    "Match",
    "MockServer",
    "MockServerFactory",
    "RawSpec",
    "RawStep",
    "RawWrite",
    "Read",
    "RecordedExchange",
    "RecordedRequest",
    "Recorder",
    "Rejection",
    "ReplayServerFactory",
    "Reply",
    "ReplySpec",
    "ReplyStep",
    "RequestView",
    "Script",
    "ScriptError",
    "SplitPlan",
    "SplitSpec",
    "StreamMeta",
    "StreamSpec",
    "SyncMockServerFactory",
    "Timing",
    "ToolCall",
    "ToolCallSpec",
    "UnconsumedStepsError",
    "Write",
    "WritePlan",
    "WriteSpec",
    "build_completion",
    "cassette_path",
    "cassette_to_scripts",
    "compute_usage",
    "encode_events",
    "encode_sse",
    "encode_stream",
    "frame_jsonl",
    "generate_chunks",
    "load_cassette",
    "load_script",
    "load_scripts",
    "make_meta",
    "parse_script",
    "plan_writes",
    "replay_scripts",
    "save_cassette",
    "script_json_schema",
    "script_to_cassette",
    "sequence_script",
    "session_log_scripts",
    "session_of",
    "session_scripts_to_mock",
    "split_text",
    "validate_chat",
]
