"""The session: validated event log, surface, derived history, crash repair and JSONL store.

Everything the model sees is first appended here and then projected by `derive_messages()`.
"""

from .calls import assemble_chunk_events, split_model_calls, stream_chunks
from .events import SESSION_FORMAT_VERSION, SessionEvent, event_from_json, event_to_json
from .header import SessionHeader
from .jsonl import (
    JsonlWriter,
    LoadedLog,
    dump_session,
    load_session,
    parse_session_log,
    save_session,
)
from .lossless import FrozenDict, FrozenList, JsonValue, LosslessJsonError, freeze_json, thaw_json
from .replay_scripts import (
    ReplayEntry,
    ReplayError,
    SessionScript,
    derive_replay_script,
    fill_from_request,
    load_log_session,
    load_session_scripts,
    parse_override,
)
from .session import EventLog, History, Session, SessionObserver
from .shapes import logged_message
from .store import DEFAULT_SESSIONS_DIR, SessionStore, encode_segment

__all__ = [
    "DEFAULT_SESSIONS_DIR",
    "EventLog",
    "FrozenDict",
    "FrozenList",
    "History",
    "JsonValue",
    "JsonlWriter",
    "LoadedLog",
    "LosslessJsonError",
    "ReplayEntry",
    "ReplayError",
    "SESSION_FORMAT_VERSION",
    "Session",
    "SessionEvent",
    "SessionHeader",
    "SessionObserver",
    "SessionScript",
    "SessionStore",
    "assemble_chunk_events",
    "derive_replay_script",
    "dump_session",
    "encode_segment",
    "event_from_json",
    "event_to_json",
    "fill_from_request",
    "freeze_json",
    "load_log_session",
    "load_session",
    "load_session_scripts",
    "logged_message",
    "parse_override",
    "parse_session_log",
    "save_session",
    "split_model_calls",
    "stream_chunks",
    "thaw_json",
]
