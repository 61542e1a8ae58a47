"""The session: validated event log, surface, derived history, crash repair and JSONL store.

Everything the model sees is first appended here and then projected by `derive_messages()`.
Session logs are read plain or zstd-compressed alike; replaying one is `dshkit.harness.replay`.
"""

from .header import SessionHeader
from .jsonl import parse_session_log
from .session import Session

__all__ = [
    "Session",
    "SessionHeader",
    "parse_session_log",
]
