"""The session: validated event log, surface, derived history, crash repair and JSONL store.

Everything the model sees is first appended here and then projected by `derive_messages()`.
"""

from typing import TYPE_CHECKING, Any

from .calls import assemble_chunk_events, split_model_calls, step_chunk_events, stream_chunks
from .chunk_rows import (
    CHUNK_ROW_TYPES,
    MIN_PACKED_RUN,
    is_chunk_row,
    pack_events,
    unpack_row,
    unpack_rows,
)
from .events import (
    CORE_EVENT_TYPES,
    PLUGIN_EVENT_TYPES,
    SESSION_FORMAT_VERSION,
    SURFACE_EVENT_TYPES,
    SessionEvent,
    SurfaceOp,
    SurfaceReplace,
    event_from_json,
    event_to_json,
    surface_op_from_json,
    surface_op_to_json,
)
from .header import SessionHeader
from .jsonl import (
    JsonlWriter,
    LoadedLog,
    dump_session,
    dumps_json_line,
    load_session,
    parse_session_log,
    save_session,
)
from .lossless import FrozenDict, FrozenList, JsonValue, LosslessJsonError, freeze_json, thaw_json
from .repair import (
    TOOL_NOT_STARTED_TEXT,
    TOOL_OUTCOME_UNKNOWN_TEXT,
    Closer,
    interrupted_turn_closers,
)
from .session import EventLog, History, Session, SessionObserver
from .shapes import logged_message
from .store import DEFAULT_SESSIONS_DIR, SessionStore, encode_segment

if TYPE_CHECKING:
    from .replay_scripts import (
        ReplayEntry,
        ReplayError,
        SessionScript,
        derive_replay_script,
        fill_from_request,
        load_log_session,
        load_session_scripts,
        parse_override,
        request_strings,
    )

_LAZY = frozenset({
    "ReplayEntry", "ReplayError", "SessionScript", "derive_replay_script", "fill_from_request",
    "load_log_session", "load_session_scripts", "parse_override", "request_strings",
})
"""Names of `replay_scripts`, imported on first use: a live run never replays a log, and this
keeps that module out of a cold `dshkit run`."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import replay_scripts

        value = getattr(replay_scripts, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "CHUNK_ROW_TYPES",
    "CORE_EVENT_TYPES",
    "Closer",
    "DEFAULT_SESSIONS_DIR",
    "EventLog",
    "FrozenDict",
    "FrozenList",
    "History",
    "JsonValue",
    "JsonlWriter",
    "LoadedLog",
    "LosslessJsonError",
    "MIN_PACKED_RUN",
    "PLUGIN_EVENT_TYPES",
    "ReplayEntry",
    "ReplayError",
    "SESSION_FORMAT_VERSION",
    "SURFACE_EVENT_TYPES",
    "Session",
    "SessionEvent",
    "SessionHeader",
    "SessionObserver",
    "SessionScript",
    "SessionStore",
    "SurfaceOp",
    "SurfaceReplace",
    "TOOL_NOT_STARTED_TEXT",
    "TOOL_OUTCOME_UNKNOWN_TEXT",
    "assemble_chunk_events",
    "derive_replay_script",
    "dump_session",
    "dumps_json_line",
    "encode_segment",
    "event_from_json",
    "event_to_json",
    "fill_from_request",
    "freeze_json",
    "interrupted_turn_closers",
    "is_chunk_row",
    "load_log_session",
    "load_session",
    "load_session_scripts",
    "logged_message",
    "pack_events",
    "parse_override",
    "parse_session_log",
    "request_strings",
    "save_session",
    "split_model_calls",
    "step_chunk_events",
    "stream_chunks",
    "surface_op_from_json",
    "surface_op_to_json",
    "thaw_json",
    "unpack_row",
    "unpack_rows",
]
