"""The session: validated event log, surface, derived history, crash repair and JSONL store.

Everything the model sees is first appended here and then projected by `derive_messages()`.
Session logs are read plain or zstd-compressed alike; replaying one is `dshkit.harness.replay`.
"""

from .events import SessionEvent, event_to_json
from .header import SessionHeader
from .jsonl import parse_session_log
from .session import Session
from .store import SessionStore

__all__ = [
    "Session",
    "SessionEvent",
    "SessionHeader",
    "SessionStore",
    "event_to_json",
    "parse_session_log",
]
