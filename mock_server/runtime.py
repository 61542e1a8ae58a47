"""Server-wide settings and state: what a server is started with and what its handlers share.

:class:`ServerConfig` is fixed when a server starts (keys, era, seed, limits, fault weights,
the Anthropic surface's options, whether the fast path is on); :class:`Runtime` lives on the
server's event loop for as long as it serves: the journal, the closing flag every wait watches,
the random-mode generator, the open exchanges, how often each step answered, the prefix of its
trace ids, and the :mod:`~dshkit.mock_server.output` that renders and cuts every generated
stream.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from dshkit.mock_server.generate.reply import Era, Reply
from dshkit.mock_server.journal import Journal
from dshkit.mock_server.metrics import Metrics
from dshkit.mock_server.output import FastOutput, Output, PlainOutput
from dshkit.mock_server.validation import ValidationCache

if TYPE_CHECKING:
    from dshkit.mock_server.exchange import Exchange
    from dshkit.mock_server.scripts import ReplySpec

__all__ = ["DEFAULT_WEIGHTS", "Runtime", "ServerConfig", "trace_prefix"]

log = logging.getLogger("dshkit.mock_server")

#: Test pressure, not production incidence (upstream's defaults, dsh-testing.md §1.6).
DEFAULT_WEIGHTS: Mapping[str, float] = {
    "success": 48,
    "slow_success": 10,
    "partial_disconnect": 10,
    "connection_reset": 5,
    "stream_disconnect": 5,
    "empty": 5,
    "rate_limit": 5,
    "server_error": 4,
    "max_tokens": 2,
    "stall": 2,
    "service_unavailable": 2,
    "partial_eof": 1,
    "malformed_json": 1,
}


@dataclass(slots=True, kw_only=True)
class ServerConfig:
    """Settings fixed when a server starts."""

    api_key: str | None = None
    era: Era = "v4"
    seed: int = 0
    max_body_bytes: int = 16 * 1024 * 1024
    idle_timeout: float = 60.0
    """Seconds a connection may wait for a complete request head (from opening or from the end
    of the previous response), and a request body may take to arrive."""
    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    on_event: Callable[[dict[str, Any]], None] | None = None
    anthropic_envelope: Literal["evidence", "deepseek", "anthropic"] = "evidence"
    """The error envelope of the Anthropic surface: per status as the recordings support
    (4xx but 429 in DeepSeek's OpenAI-style one, 429/5xx in Anthropic's), or one for all."""
    anthropic_unknown_model: Literal["reject", "flash"] = "reject"
    """The Anthropic surface's answer to a model that is neither DeepSeek's nor `claude…`."""
    fast_path: bool = True
    """Serve generated streams through :class:`~dshkit.mock_server.output.FastOutput` (cached
    stream templates, coalesced writes); False uses the plain reference path. Either way a
    client receives the same bytes."""


def trace_prefix(server_seed: int) -> str:
    """The first 8 of a trace id's 32 hex digits: the server's own (servers with different seeds
    hardly ever share an id); each request's sequence number fills the other 24."""
    return hashlib.blake2b(f"trace:{server_seed}".encode(), digest_size=4).hexdigest()


class Runtime:
    """Server-wide state the handlers share; lives on the server's event loop."""

    def __init__(self, config: ServerConfig, journal: Journal) -> None:
        self.config = config
        self.journal = journal
        self.closing = asyncio.Event()
        self.random = random.Random(f"random-mode:{config.seed}")
        self.active: set[Exchange] = set()
        self.output: Output = FastOutput() if config.fast_path else PlainOutput()
        self.validation = ValidationCache() if config.fast_path else None
        """Validates each distinct request body once on the fast path (None: the plain path)."""
        self.trace_prefix = trace_prefix(config.seed)
        """The first digits of every trace id this server sends."""
        self._served: dict[tuple[str, int | None], int] = {}
        self._replies: dict[int, tuple[ReplySpec, Reply]] = {}
        self.metrics = Metrics(journal.stats)
        """What `/metrics` reports (counted by the handlers)."""

    def repeat_of(self, session: str, step: int | None) -> int:
        """How many times `step` (None: the default reply) already answered `session`; counts
        this request."""
        key = (session, step)
        n = self._served.get(key, 0)
        self._served[key] = n + 1
        return n

    def reply_of(self, spec: ReplySpec) -> Reply:
        """`spec.to_reply()`, made once per step (a script's models are frozen, and so is a
        `Reply`); the spec is held with it, so its id names no other object meanwhile."""
        kept = self._replies.get(id(spec))
        if kept is not None and kept[0] is spec:
            return kept[1]
        reply = spec.to_reply()
        self._replies[id(spec)] = (spec, reply)
        if len(self._replies) > 1024:
            del self._replies[next(iter(self._replies))]  # the oldest first
        return reply

    def emit(self, event: dict[str, Any]) -> None:
        """Telemetry for the CLI; an observer's exception never alters wire behaviour."""
        if self.config.on_event is not None:
            try:
                self.config.on_event(event)
            except Exception:  # telemetry must not break serving
                log.debug("on_event observer failed", exc_info=True)
