"""The runtime-context snapshot: dynamic contexts as one user-role message, sent only on change.

In the seed's walk, after the claimed input the loop appends "an extra user-role snapshot message,
only when it differs from the last one", so time, sandbox or approval state is not repeated every
step (dsh-core.md §1.7, trap 5). `RuntimeContextSnapshot` is that rule as a small state machine:
`project()` gives the message to append (or None), and the state moves only on committed events,
which it watches as a session observer: an appended snapshot becomes the retained one, and a
surface replace that shadows it (compaction) clears it so the next step sends it again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from dshkit.harness.llm import TextBlock, UserMessage
from dshkit.harness.llm.messages import PluginSource
from dshkit.harness.session import Session
from dshkit.harness.session.events import SessionEvent, SurfaceReplace

from .assembly import Assembly, RenderedSection

__all__ = [
    "RUNTIME_CONTEXT_CLEARED",
    "RUNTIME_CONTEXT_HEADER",
    "RUNTIME_CONTEXT_PLUGIN",
    "RuntimeContextSnapshot",
    "render_runtime_context",
]

RUNTIME_CONTEXT_HEADER: Final = (
    "Current runtime context. This snapshot supersedes earlier runtime-context snapshots.\n\n"
)
RUNTIME_CONTEXT_CLEARED: Final = (
    "Current runtime context: none. Earlier runtime-context snapshots no longer apply."
)
RUNTIME_CONTEXT_PLUGIN: Final = "@deepseek-ai/dsh-system-prompt"
"""`source.plugin` of every snapshot message: how a snapshot is recognized in the log."""


def render_runtime_context(contexts: Sequence[RenderedSection]) -> str:
    """The snapshot text for these contexts ("" when there are none)."""
    body = "\n\n".join(c.text for c in contexts if c.text)
    return RUNTIME_CONTEXT_HEADER + body if body else ""


@dataclass(frozen=True, slots=True)
class _Retained:
    seq: int
    text: str | None
    """None when the retained message is not exactly one text block: equal to nothing."""


class _Never:
    """No snapshot was ever logged (distinct from "one was, but none is retained")."""


_NEVER: Final = _Never()


def _owned(event: SessionEvent) -> bool:
    if event.type != "user/message":
        return False
    source = event.data.get("source")
    return (
        isinstance(source, Mapping)
        and source.get("kind") == "plugin"
        and source.get("plugin") == RUNTIME_CONTEXT_PLUGIN
    )


def _single_text(data: Mapping[str, Any]) -> str | None:
    content = data.get("content")
    if isinstance(content, list) and len(content) == 1:
        block = content[0]
        if isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str):
            return str(block["text"])
    return None


class RuntimeContextSnapshot:
    """Decides, each step, whether the runtime-context snapshot must be appended.

    Use `RuntimeContextSnapshot.attach(session)` (restores state from the log and subscribes),
    then call `project(assembly)` once per step and append what it returns, after the claimed
    messages, with `session.append_user_message(message)`.
    """

    def __init__(self) -> None:
        self._retained: _Retained | _Never | None = _NEVER

    @classmethod
    def attach(cls, session: Session) -> RuntimeContextSnapshot:
        tracker = cls()
        tracker.restore(session)
        session.subscribe(tracker.observe)
        return tracker

    @property
    def retained_text(self) -> str | None:
        """Text of the retained snapshot (None if none is retained)."""
        return self._retained.text if isinstance(self._retained, _Retained) else None

    def restore(self, session: Session) -> None:
        """Rebuild the state from a (resumed) log: the newest snapshot still on the surface."""
        self._retained = _NEVER
        for event in reversed(session.events):
            if not _owned(event):
                continue
            if self._retained is _NEVER:
                self._retained = None
            if session.is_surface_node(event.seq):
                self._retained = _Retained(event.seq, _single_text(event.data))
                return

    def observe(self, event: SessionEvent) -> None:
        """Session observer: follow committed snapshots and replaces that shadow them."""
        if _owned(event):
            self._retained = _Retained(event.seq, _single_text(event.data))
            return
        if (
            isinstance(event.surface_op, SurfaceReplace)
            and isinstance(self._retained, _Retained)
            and self._retained.seq in (event.source_event_seqs or ())
        ):
            self._retained = None

    def project(self, current: Assembly | Sequence[RenderedSection]) -> UserMessage | None:
        """The snapshot message to append this step, or None when nothing changed.

        No contexts and no earlier snapshot → None; no contexts after a snapshot → the fixed
        "none" marker once; otherwise the rendered text, only when it differs from the retained.
        """
        contexts = current.contexts if isinstance(current, Assembly) else tuple(current)
        text = render_runtime_context(contexts)
        if self._retained is _NEVER and not text:
            return None
        snapshot = text or RUNTIME_CONTEXT_CLEARED
        if isinstance(self._retained, _Retained) and self._retained.text == snapshot:
            return None
        form = None
        if text:
            form = {"form": "snapshot", "sections": [{"name": c.name, "text": c.text} for c in contexts]}
        return UserMessage(
            content=(TextBlock(text=snapshot),),
            source=PluginSource(plugin=RUNTIME_CONTEXT_PLUGIN, form=form),
        )
