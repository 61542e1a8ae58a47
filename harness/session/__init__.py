"""The session: validated event log, surface, derived history, crash repair and JSONL store.

Everything the model sees is first appended here and then projected by `derive_messages()`.
Session logs are read plain or zstd-compressed alike; replaying one is `dshkit.harness.replay`.
"""

from .calls import assemble_chunk_events, split_model_calls, stream_chunks
from .compression import decompress_log, is_compressed, read_log_bytes
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
    "SESSION_FORMAT_VERSION",
    "Session",
    "SessionEvent",
    "SessionHeader",
    "SessionObserver",
    "SessionStore",
    "assemble_chunk_events",
    "decompress_log",
    "dump_session",
    "encode_segment",
    "event_from_json",
    "event_to_json",
    "freeze_json",
    "is_compressed",
    "load_session",
    "logged_message",
    "parse_session_log",
    "read_log_bytes",
    "save_session",
    "split_model_calls",
    "stream_chunks",
    "thaw_json",
]
