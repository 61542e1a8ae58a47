"""`SystemPrompt`: plugins contribute sections, contexts, variables and tools; `assemble()` renders.

At the start of every step in the seed's walk the loop calls `assemble()`, and the three model
channels come out separate: `system` (stable rules, joined sections), the runtime context (dynamic
contexts, sent as a user-role snapshot message, never in `system`), and the visible tool schemas
(sorted by name unless an order is configured) (dsh-core.md §5.9). Because whatever changes per
step (time, cwd, sandbox state) lives in contexts, the system text stays byte-stable.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

from dshkit.harness.llm import ToolSchema

from .interpolate import VARIABLE_NAME, PromptError, interpolate

__all__ = [
    "HARNESS_IDENTITY",
    "UNLISTED_TOOLS",
    "Assembly",
    "PromptPlugin",
    "RenderedSection",
    "SystemPrompt",
]

HARNESS_IDENTITY: Final = "You are an AI agent powered by DeepSeek Harness."
UNLISTED_TOOLS: Final = "<unlisted-tools>"
"""Marker in a configured tool order: where every tool not listed goes (sorted by name)."""

Text = str | Callable[[], str]
Variable = str | None | Callable[[], str | None]
ToolProvider = Callable[[], Iterable[ToolSchema]]


class PromptPlugin(Protocol):
    """Anything that registers its contributions on a `SystemPrompt`."""

    def setup(self, prompt: SystemPrompt) -> None: ...


@dataclass(frozen=True, slots=True)
class RenderedSection:
    """A section or context after interpolation."""

    name: str
    text: str


@dataclass(frozen=True, slots=True)
class _Entry:
    name: str
    order: float
    text: Text
    index: int
    complete: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Assembly:
    """What one step sends: system text, runtime-context text and tool schemas."""

    system: str
    """Rendered non-empty sections joined by a blank line ("" means no system message)."""
    sections: tuple[RenderedSection, ...]
    contexts: tuple[RenderedSection, ...]
    """Non-empty rendered contexts, in order: the body of the runtime-context snapshot."""
    tools: tuple[ToolSchema, ...]
    variables: Mapping[str, str | None] = field(default_factory=dict)

    @property
    def contexts_text(self) -> str:
        """The contexts joined by a blank line ("" when there are none)."""
        return "\n\n".join(c.text for c in self.contexts)


def _text(value: Text) -> str:
    return value() if callable(value) else value


class SystemPrompt:
    """A registry of prompt contributions.

    Args:
        persona: text of the built-in `deployment:persona` section (order 0; empty = dropped).
        include_identity: keep the built-in `harness:identity` section (order -100).
        include_runtime_context: False suppresses every context (the loop then clears any
            earlier snapshot).
        tool_order: names in the order to send them, containing `UNLISTED_TOOLS` once; `None`
            sorts all tools by name.
    """

    def __init__(
        self,
        *,
        persona: str = "",
        include_identity: bool = True,
        include_runtime_context: bool = True,
        tool_order: Sequence[str] | None = None,
    ) -> None:
        self._sections: dict[str, _Entry] = {}
        self._contexts: dict[str, _Entry] = {}
        self._variables: dict[str, Variable] = {}
        self._tool_providers: list[ToolProvider] = []
        self._count = 0
        self.include_runtime_context = include_runtime_context
        if tool_order is not None:
            _check_tool_order(tool_order)
        self.tool_order = tuple(tool_order) if tool_order is not None else None
        if include_identity:
            self.section("harness:identity", HARNESS_IDENTITY, order=-100)
        self.section("deployment:persona", persona, order=0)

    # --- registration ----------------------------------------------------------------------

    def use(self, plugin: PromptPlugin | Callable[[SystemPrompt], None]) -> SystemPrompt:
        """Let a plugin register its contributions; returns self for chaining."""
        setup = getattr(plugin, "setup", None)
        if callable(setup):
            setup(self)
        else:
            plugin(self)  # type: ignore[operator]
        return self

    def _entry(self, table: dict[str, _Entry], kind: str, name: str, text: Text, order: float, complete: bool) -> None:
        if not name:
            raise PromptError(f"a {kind} needs a non-empty name")
        if name in table:
            raise PromptError(f"{kind} {name!r} is already registered")
        if not math.isfinite(order):
            raise PromptError(f"{kind} {name!r}: order must be a finite number")
        table[name] = _Entry(name, float(order), text, self._count, complete)
        self._count += 1

    def section(self, name: str, text: Text, *, order: float = 0, complete: bool = False) -> None:
        """A named part of the system prompt; sections render in ascending `order`.

        A `complete` section replaces every other section (at most one may be registered).
        """
        self._entry(self._sections, "section", name, text, order, complete)

    def replace_section(self, name: str, text: Text, *, order: float | None = None) -> None:
        """Change the text (and optionally the order) of a registered section."""
        old = self._sections.get(name)
        if old is None:
            raise PromptError(f"section {name!r} is not registered")
        self._sections[name] = _Entry(name, old.order if order is None else float(order), text, old.index, old.complete)

    def context(self, name: str, text: Text, *, order: float = 0) -> None:
        """A dynamic part of the runtime-context snapshot (never of the system prompt)."""
        self._entry(self._contexts, "context", name, text, order, False)

    def remove_context(self, name: str) -> None:
        self._contexts.pop(name, None)

    def variable(self, name: str, value: Variable) -> None:
        """A `{{name}}` value: a string, None (referencing it fails), or a function read per step."""
        if not VARIABLE_NAME.fullmatch(name):
            raise PromptError(f"variable name {name!r} must match [a-z][a-z0-9_]*")
        self._variables[name] = value

    def tools(self, provider: ToolProvider | Iterable[ToolSchema]) -> None:
        """Contribute visible tool schemas: a list, or a function called at each assembly."""
        if callable(provider):
            self._tool_providers.append(provider)
        else:
            fixed = tuple(provider)
            self._tool_providers.append(lambda: fixed)

    # --- assembly -----------------------------------------------------------------------

    def assemble(
        self, *, variables: Mapping[str, Variable] | None = None, tools: Iterable[ToolProvider] = ()
    ) -> Assembly:
        """Evaluate variables, render sections and contexts strictly, order the tools.

        `variables` and `tools` are contributions of the caller for this assembly only (the
        agent's `provider`, `model`, `cwd` and its tool runtime), so one registry can serve
        several agents without being changed by them; a variable given here wins over a
        registered one of the same name.

        Raises `PromptError` for an unknown/undefined/malformed variable (naming it and the
        section), several complete sections, or a tool order naming an unknown tool.
        """
        merged = {**self._variables, **(variables or {})}
        variables_ = {name: (v() if callable(v) else v) for name, v in merged.items()}
        entries = sorted(self._sections.values(), key=lambda e: (e.order, e.index))
        complete = [e for e in entries if e.complete]
        if len(complete) > 1:
            raise PromptError(f"only one complete section may be active; got {[e.name for e in complete]}")
        if complete:
            entries = complete
        sections = _render(entries, variables_, "section")
        contexts: tuple[RenderedSection, ...] = ()
        if self.include_runtime_context:
            ctx_entries = sorted(self._contexts.values(), key=lambda e: (e.order, e.index))
            contexts = _render(ctx_entries, variables_, "context")
        return Assembly(
            system="\n\n".join(s.text for s in sections),
            sections=sections,
            contexts=contexts,
            tools=self._ordered_tools((*self._tool_providers, *tools)),
            variables=variables_,
        )

    def _ordered_tools(self, providers: Iterable[ToolProvider]) -> tuple[ToolSchema, ...]:
        by_name: dict[str, ToolSchema] = {}
        for provider in providers:
            for schema in provider():
                if schema.name == UNLISTED_TOOLS or not schema.name:
                    raise PromptError(f"invalid tool name {schema.name!r}")
                if schema.name in by_name:
                    raise PromptError(f"tool {schema.name!r} is contributed twice")
                by_name[schema.name] = schema
        rest = sorted(by_name)  # lexicographic by code point, not registration order (trap 26)
        if self.tool_order is None:
            return tuple(by_name[n] for n in rest)
        unknown = [n for n in self.tool_order if n != UNLISTED_TOOLS and n not in by_name]
        if unknown:
            raise PromptError(f"tool order names tools that are not registered: {unknown}")
        listed = set(self.tool_order)
        out: list[ToolSchema] = []
        for name in self.tool_order:
            if name == UNLISTED_TOOLS:
                out.extend(by_name[n] for n in rest if n not in listed)
            else:
                out.append(by_name[name])
        return tuple(out)


def _render(entries: Iterable[_Entry], variables: Mapping[str, str | None], kind: str) -> tuple[RenderedSection, ...]:
    out: list[RenderedSection] = []
    for entry in entries:
        text = interpolate(_text(entry.text), variables, where=f"{kind} {entry.name!r}")
        if text:
            out.append(RenderedSection(entry.name, text))
    return tuple(out)


def _check_tool_order(order: Sequence[str]) -> None:
    if list(order).count(UNLISTED_TOOLS) != 1:
        raise PromptError(f"a tool order must contain {UNLISTED_TOOLS!r} exactly once")
    if len(set(order)) != len(order):
        raise PromptError("a tool order must not repeat a name")
