"""The session: validated event log, surface, derived history, crash repair and JSONL store.

Everything the model sees is first appended here and then projected by `derive_messages()`.
"""

import typing  # as a module, so the namespace holds no public names outside __all__

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
from .session import EventLog, History, Session, SessionObserver
from .shapes import logged_message
from .store import DEFAULT_SESSIONS_DIR, SessionStore, encode_segment

if typing.TYPE_CHECKING:
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

_LAZY = frozenset({
    "ReplayEntry", "ReplayError", "SessionScript", "derive_replay_script", "fill_from_request",
    "load_log_session", "load_session_scripts", "parse_override",
})
"""Names of `replay_scripts`, imported on first use: a live run never replays a log, and this
keeps that module out of a cold `dshkit run`."""


def __getattr__(name: str) -> typing.Any:
    if name in _LAZY:
        from . import replay_scripts

        value = getattr(replay_scripts, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
