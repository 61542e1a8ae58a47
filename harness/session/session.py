"""`Session`: the validated, append-only event log and the history derived from it.

This is the centre of the seed's one rule: everything the model sees is first appended here,
and `derive_messages()` then projects the surface into the message list of the next request
(dsh-core.md §1.1, §1.5, §1.6). `append` checks the envelope, the data (lossless JSON and the
shape of core types) and the surface fold before touching anything, so a rejected event leaves
no trace; then it commits, updates its incremental indexes and notifies observers, whose
exceptions are contained. History is cached: each surface node is projected once, and a step
pays only for the events it adds, however long the log already is.
"""

from __future__ import annotations

import logging
import time as _time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any, overload

from dshkit.harness.llm import AssistantMessage, Message, StreamChunk, TokenUsage, UserMessage
from dshkit.harness.llm.codec import chunk_to_json, message_to_json, usage_to_json
from dshkit.harness.llm.errors import SessionError
from dshkit.harness.llm.messages import ToolResultMessage

from .events import (
    CORE_EVENT_TYPES,
    PLUGIN_EVENT_TYPES,
    SessionEvent,
    SurfaceOp,
    SurfaceReplace,
    event_from_json,
    surface_op_from_json,
)
from .header import SessionHeader
from .lossless import JsonValue, LosslessJsonError, freeze_json
from .shapes import check_event_data
from .surface import Surface

__all__ = ["EventLog", "History", "Session", "SessionObserver"]

SessionObserver = Callable[[SessionEvent], None]
"""Called synchronously after each committed event; its exceptions never undo the append."""

_log = logging.getLogger("dshkit.harness.session")


class EventLog(Sequence[SessionEvent]):
    """A read-only view of a session's events (no copy; it grows with the session)."""

    __slots__ = ("_events",)

    def __init__(self, events: list[SessionEvent]) -> None:
        self._events = events

    @overload
    def __getitem__(self, index: int) -> SessionEvent: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[SessionEvent]: ...
    def __getitem__(self, index: int | slice) -> SessionEvent | Sequence[SessionEvent]:
        return self._events[index]

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[SessionEvent]:
        return iter(self._events)


class History(Sequence[Message]):
    """An immutable snapshot of derived history, made in O(1).

    It shares the session's list of derived messages and remembers its length: that list only
    grows between replaces (a replace builds a new list), so the first `n` items never change.
    Compares equal to any sequence with the same messages.
    """

    __slots__ = ("_items", "_n")

    def __init__(self, items: list[Message], n: int) -> None:
        self._items = items
        self._n = n

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Message, ...]: ...
    def __getitem__(self, index: int | slice) -> Message | tuple[Message, ...]:
        if isinstance(index, slice):
            return tuple(self._items[: self._n][index])
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError("history index out of range")
        return self._items[index]

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[Message]:
        return islice(self._items, self._n)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(other) == self._n and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"History({list(self)!r})"


def _now_ms() -> int:
    return int(_time.time() * 1000)


def _coerce_op(op: SurfaceOp | Mapping[str, Any] | str | None) -> SurfaceOp | None:
    if op is None or isinstance(op, SurfaceReplace):
        return op
    return surface_op_from_json(op)


class Session:
    """An append-only log of `SessionEvent`s with its surface and derived history.

    Args:
        header: identity of the session; a fresh one (random id, now) when omitted.
        seed: earlier events (objects or their JSON) to start from, validated as if appended
            (resume, fork, replay). Their `seq` must equal their index.
        end_seed: after a seed, append `session/end-seed` unless the seed already ends with
            one (DSH's rule for resumed sessions; trap 22). Ignored without a seed.
        clock: epoch milliseconds for `time`; injectable for deterministic tests.
        event_types: extra event types to accept as known (their data is any JSON object).
        on_observer_error: called with (observer, exception) when an observer raises;
            the default logs it.
    """

    def __init__(
        self,
        header: SessionHeader | None = None,
        *,
        seed: Iterable[SessionEvent | Mapping[str, Any]] | None = None,
        end_seed: bool = True,
        clock: Callable[[], int] | None = None,
        event_types: Iterable[str] = (),
        on_observer_error: Callable[[SessionObserver, BaseException], None] | None = None,
    ) -> None:
        self.header = header or SessionHeader.new()
        self._clock = clock or _now_ms
        self._known = CORE_EVENT_TYPES | PLUGIN_EVENT_TYPES | frozenset(event_types)
        self._on_observer_error = on_observer_error
        self._events: list[SessionEvent] = []
        self._view = EventLog(self._events)
        self._surface = Surface()
        self._projection: dict[int, Message | None] = {}
        self._derived: list[Message] = []
        self._derived_snapshot: History | None = None
        self._chunks: dict[tuple[int, int], list[int]] = {}
        self._last_of: dict[str, int] = {}
        self._observers: list[SessionObserver] = []
        self._publishing = False
        self._open_turn: int | None = None
        self._open_step: int | None = None
        self._last_turn = 0
        if seed is not None:
            for i, item in enumerate(seed):
                event = item if isinstance(item, SessionEvent) else event_from_json(item, f"seed[{i}]")
                self._commit(self._checked(event, f"seed[{i}]"), publish=False)
            if end_seed and (not self._events or self._events[-1].type != "session/end-seed"):
                self.append("session/end-seed", {})
        self.first_live_seq = len(self._events)
        """Seq of the first event appended after the seed."""

    # --- reading ----------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self.header.id

    @property
    def events(self) -> EventLog:
        """All events in seq order (a live read-only view)."""
        return self._view

    def __len__(self) -> int:
        return len(self._events)

    @property
    def next_seq(self) -> int:
        return len(self._events)

    @property
    def surface_nodes(self) -> tuple[int, ...]:
        """Seqs of the model-visible events, in history order."""
        return tuple(self._surface.nodes)

    @property
    def replace_generation(self) -> int:
        """How many surface replaces have been committed."""
        return self._surface.replace_generation

    def is_surface_node(self, seq: int) -> bool:
        return self._surface.position(seq) is not None

    def last_of(self, type_: str) -> SessionEvent | None:
        """The latest event of `type_` (O(1); e.g. the folded `request/header`)."""
        seq = self._last_of.get(type_)
        return None if seq is None else self._events[seq]

    @property
    def open_turn(self) -> int | None:
        """The number of the turn that is open, if any."""
        return self._open_turn

    @property
    def open_step(self) -> int | None:
        return self._open_step

    @property
    def last_turn(self) -> int:
        """The number of the last `turn/start` (0 if none): the next turn is this + 1."""
        return self._last_turn

    def derive_messages(self) -> History:
        """The model-visible history: each surface node's message, in order (dsh-core.md §1.6).

        O(1) per call: each node's message was decoded once when it was appended, and the
        result is an immutable snapshot view (`History`) sharing that cache. Messages are frozen.
        """
        if self._derived_snapshot is None:
            self._derived_snapshot = History(self._derived, len(self._derived))
        return self._derived_snapshot

    def message_at(self, seq: int) -> Message | None:
        """The message event `seq` projects to (None for log-only events and empty anchors)."""
        return self._projection.get(seq)

    def chunk_events(self, turn: int, step: int) -> tuple[SessionEvent, ...]:
        """Every `assistant/chunk` of one step, in order (all attempts, if it was retried)."""
        return tuple(self._events[s] for s in self._chunks.get((turn, step), ()))

    # --- observers ----------------------------------------------------------------------------

    def subscribe(self, observer: SessionObserver) -> Callable[[], None]:
        """Call `observer(event)` after every later commit; returns an unsubscribe function."""
        self._observers.append(observer)

        def unsubscribe() -> None:
            if observer in self._observers:
                self._observers.remove(observer)

        return unsubscribe

    # --- appending ------------------------------------------------------------------------------

    def append(
        self,
        type: str,
        data: JsonValue,
        *,
        surface_op: SurfaceOp | Mapping[str, Any] | str | None = None,
        source_event_seqs: Iterable[int] | None = None,
        ignorable: bool = False,
        time: int | None = None,
    ) -> SessionEvent:
        """Validate and commit one event; return it as logged.

        Raises `SessionError` (nothing is committed) when the type is unknown and not
        `ignorable`, the data is not lossless JSON or has the wrong shape, or the surface rules
        are broken. Called from inside an observer, it raises: appends cannot reenter.
        """
        if self._publishing:
            raise SessionError(
                "session append cannot reenter while another append is being published",
                "REENTRANT_APPEND",
            )
        try:
            frozen = freeze_json(data, "data")
        except LosslessJsonError as exc:
            raise SessionError(f"{type}: {exc}", "INVALID_EVENT") from exc
        seqs = None
        if source_event_seqs is not None:
            seqs = tuple(source_event_seqs)
            if not all(type_ is int for type_ in map(_type_of, seqs)):
                raise SessionError("sourceEventSeqs must be integers", "INVALID_EVENT")
        event = SessionEvent(
            type=type,
            seq=len(self._events),
            time=self._clock() if time is None else time,
            data=frozen,
            ignorable=ignorable,
            surface_op=_coerce_op(surface_op),
            source_event_seqs=seqs,
        )
        self._commit(self._checked(event, type), publish=True)
        return event

    def _checked(self, event: SessionEvent, where: str) -> SessionEvent:
        if event.seq != len(self._events):
            raise SessionError(
                f"{where}: seq {event.seq} breaks the contiguous log (expected {len(self._events)})",
                "INVALID_EVENT",
            )
        if not isinstance(event.type, str) or not event.type:
            raise SessionError(f"{where}: an event type must be a non-empty string", "INVALID_EVENT")
        try:
            data = freeze_json(event.data, "data")
        except LosslessJsonError as exc:
            raise SessionError(f"{where}: {exc}", "INVALID_EVENT") from exc
        if data is not event.data:
            event = SessionEvent(
                type=event.type, seq=event.seq, time=event.time, data=data,
                ignorable=event.ignorable, surface_op=event.surface_op,
                source_event_seqs=event.source_event_seqs,
            )
        return event

    def _commit(self, event: SessionEvent, *, publish: bool, lenient: bool = False) -> str | None:
        """Validate and commit `event`. With `lenient` (importing a foreign log), an event whose
        data or surface fields break a rule is kept as a defect instead of raising: logged
        verbatim, left out of the surface and of turn tracking; the problem is returned."""
        try:
            self._commit_checked(event, publish=publish)
        except SessionError as exc:
            if not lenient or exc.code not in ("INVALID_EVENT", "INVALID_SURFACE"):
                raise
            problem = exc.message
            kept = SessionEvent(
                type=event.type, seq=event.seq, time=event.time, data=event.data,
                ignorable=event.ignorable, surface_op=event.surface_op,
                source_event_seqs=event.source_event_seqs, defect=problem,
            )
            self._events.append(kept)
            return problem
        return None

    def _commit_checked(self, event: SessionEvent, *, publish: bool) -> None:
        where = f"{event.type} (seq {event.seq})"
        known = event.type in self._known
        if not known and not event.ignorable:
            raise SessionError(
                f"{where}: unknown event type {event.type!r} without `ignorable: true`; the log "
                "was probably written by a newer harness (upgrade dshkit), or mark the event "
                "ignorable so older readers may skip it",
                "SESSION_FORMAT_UNSUPPORTED",
            )
        message = None
        if known:
            try:
                message = check_event_data(event.type, event.data, f"{where} data", seq=event.seq)
            except SessionError:
                raise
            except Exception as exc:
                raise SessionError(f"{where} data: {exc}", "INVALID_EVENT") from exc
        plan = self._surface.plan(event, self._events)
        # --- commit: nothing below may fail ---
        self._events.append(event)
        self._last_of[event.type] = event.seq
        self._track(event)
        if plan is not None:
            self._surface.apply(plan)
            self._projection[event.seq] = message
            if plan.start_pos is None:
                if message is not None:
                    self._derived.append(message)
                    self._derived_snapshot = None
            else:
                self._derived = [
                    m for m in (self._projection[s] for s in self._surface.nodes) if m is not None
                ]
                self._derived_snapshot = None
        if publish:
            self._publish(event)

    def _track(self, event: SessionEvent) -> None:
        type_, data = event.type, event.data
        if type_ == "assistant/chunk":
            self._chunks.setdefault((data["turn"], data["step"]), []).append(event.seq)
        elif type_ == "turn/start":
            self._open_turn = self._last_turn = data["turn"]
            self._open_step = None
        elif type_ == "turn/end":
            self._open_turn = self._open_step = None
        elif type_ == "step/start":
            self._open_step = data["step"]
        elif type_ == "step/end":
            self._open_step = None

    def _publish(self, event: SessionEvent) -> None:
        self._publishing = True
        try:
            for observer in tuple(self._observers):
                try:
                    observer(event)
                except Exception as exc:  # noqa: BLE001
                    if self._on_observer_error is not None:
                        self._on_observer_error(observer, exc)
                    else:
                        _log.exception("session observer %r failed on seq %d", observer, event.seq)
        finally:
            self._publishing = False

    # --- typed helpers (data stays plain JSON in the log) ------------------------------------

    def append_user_message(
        self,
        message: UserMessage,
        *,
        surface_op: SurfaceOp | Mapping[str, Any] | str = "append",
        source_event_seqs: Iterable[int] | None = None,
    ) -> SessionEvent:
        """Log a user-role message (a prompt, injected context, a runtime-context snapshot)."""
        return self.append(
            "user/message", message_to_json(message),
            surface_op=surface_op, source_event_seqs=source_event_seqs,
        )

    def append_chunk(self, turn: int, step: int, chunk: StreamChunk) -> SessionEvent:
        """Log one raw stream chunk as `assistant/chunk`."""
        return self.append("assistant/chunk", {"turn": turn, "step": step, "chunk": chunk_to_json(chunk)})

    def append_assistant_message(
        self,
        turn: int,
        step: int,
        message: AssistantMessage,
        *,
        source_event_seqs: Iterable[int],
        usage: TokenUsage | None = None,
        interrupted: bool = False,
    ) -> SessionEvent:
        """Log the assembled message of one model call, citing that call's chunk seqs."""
        data: dict[str, JsonValue] = {"turn": turn, "step": step, "message": message_to_json(message)}
        if usage is not None:
            data["usage"] = usage_to_json(usage)
        if interrupted:
            data["interrupted"] = True
        return self.append(
            "assistant/message", data, surface_op="append", source_event_seqs=source_event_seqs
        )

    def append_tool_call(self, turn: int, step: int, call_id: str, name: str, arguments: str) -> SessionEvent:
        """Log a tool call as it starts, with the model's raw arguments string."""
        return self.append(
            "tool/call",
            {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": arguments},
        )

    def append_tool_result(
        self,
        turn: int,
        step: int,
        message: ToolResultMessage,
        *,
        source_event_seqs: Iterable[int] | None = None,
        error: Mapping[str, str] | None = None,
        meta: JsonValue = None,
    ) -> SessionEvent:
        """Log a tool's model-facing result; `error` is `{name, code}` for coded failures."""
        data: dict[str, JsonValue] = {"turn": turn, "step": step, "message": message_to_json(message)}
        if error is not None:
            data["error"] = dict(error)
        if meta is not None:
            data["meta"] = meta
        return self.append(
            "tool/result", data, surface_op="append", source_event_seqs=source_event_seqs
        )


def _type_of(value: object) -> type:
    return type(value)
