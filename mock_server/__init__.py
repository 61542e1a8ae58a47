"""A mock DeepSeek server for wire-level tests: scripted and generated streams, faults, replay.

`MockServer` serves DeepSeek's `/chat/completions` on loopback. Scripts (`Script`, loaded with
`load_script`) route per session; `generate_chunks`/`encode_sse`/`plan_writes` are the pure
generator other components reuse; `FAULTS` is the fault catalogue; the `Journal` records every
exchange. `dshkit serve` and the pytest plugin (`mock_deepseek`, `dshkit_mock_server`) wrap it.
"""

from mock_server.faults import FAULTS, FaultInfo
from mock_server.generate import (
    QUIRKS,
    FragmentPlan,
    Reply,
    SplitPlan,
    StreamMeta,
    ToolCall,
    WritePlan,
    build_completion,
    compute_usage,
    encode_events,
    encode_sse,
    encode_stream,
    frame_jsonl,
    generate_chunks,
    make_meta,
    plan_writes,
    split_text,
)
from mock_server.journal import Journal, JournalEntry, UnconsumedStepsError, Write
from mock_server.pytest_plugin import MockServerFactory
from mock_server.routing import SESSION_HEADER, Decision, RequestView, Router, session_of
from mock_server.scripts import (
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
from mock_server.server import MockServer, sequence_script
from mock_server.validation import MODELS, ChatRequest, Rejection, validate_chat

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
    "ChatRequest",
    "Decision",
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
    "Rejection",
    "Reply",
    "ReplySpec",
    "ReplyStep",
    "RequestView",
    "Router",
    "Script",
    "ScriptError",
    "SplitPlan",
    "SplitSpec",
    "StreamMeta",
    "StreamSpec",
    "Timing",
    "ToolCall",
    "ToolCallSpec",
    "UnconsumedStepsError",
    "Write",
    "WritePlan",
    "WriteSpec",
    "build_completion",
    "compute_usage",
    "encode_events",
    "encode_sse",
    "encode_stream",
    "frame_jsonl",
    "generate_chunks",
    "load_script",
    "load_scripts",
    "make_meta",
    "parse_script",
    "plan_writes",
    "script_json_schema",
    "sequence_script",
    "session_of",
    "split_text",
    "validate_chat",
]
