"""`ToolRuntime`: the pipeline one tool call goes through, stage by stage.

In the seed's walk this is `ctx.tools.execute()`: parse the raw arguments leniently, copy and
freeze them, resolve the visible tool, run the pre-execute policy chain (allow / deny / ask the
approver), the guards, the execute waterfall around the handler, post-execute (accept / replace /
add / block), `finalize_content` and the result observers (dsh-core.md §4.2–4.3). Nothing a tool
does can crash the loop: every failure is an error result the model reads. The stages are split
(`prepare`, `run_body`, `complete`) so the scheduler can serialize policy and commits in model
order while bodies overlap; `execute()` runs them all for one call.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from dshkit.harness.llm import TextBlock, ToolSchema, UserMessage
from dshkit.harness.llm.errors import ToolNotFoundError, UsageError
from dshkit.harness.llm.messages import ContentBlock
from dshkit.harness.secrets import KnownSecrets
from dshkit.harness.session.lossless import LosslessJsonError, freeze_json

from .definition import ToolDefinition
from .policy import (
    Accept,
    Allow,
    ApprovalResult,
    Approver,
    Ask,
    Block,
    Deny,
    ExecuteWrapper,
    Guard,
    PostDecision,
    PostExecute,
    PreDecision,
    PreExecute,
    ResultObserver,
)
from .results import (
    ToolErrorInfo,
    ToolResult,
    aborted_before_dispatch_result,
    aborted_result,
    denied_result,
    error_result,
    scrub_result,
)

__all__ = ["PreparedCall", "ToolCall", "ToolRuntime", "parse_arguments"]

_log = logging.getLogger("dshkit.harness.tools")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_arguments(raw: str) -> Any:
    """Lenient parse of the model's raw arguments (§4.2): `""` → `{}`; invalid JSON → `raw` itself.

    Python's `NaN`/`Infinity` extensions count as invalid JSON, as in DSH.
    """
    if raw == "":
        return {}
    try:
        return json.loads(raw, parse_constant=_no_constants)
    except ValueError:
        return raw


@dataclass(eq=False, slots=True)
class ToolCall:
    """One execution: what policies, guards, wrappers, handlers and observers see."""

    call_id: str
    name: str
    raw_arguments: str
    """Exactly what the model sent (and what `tool/call` logs)."""
    arguments: Any
    """Parsed and frozen; the raw string when it was not valid JSON."""
    signal: asyncio.Event
    """Set when the turn is cancelled; long-running handlers should watch it."""
    definition: ToolDefinition | None = None
    body_invoked: bool = False
    _deferred: list[UserMessage] = field(default_factory=list)
    _concludes: bool = False

    def conclude_turn(self) -> None:
        """End the turn after this step's tools (no further model call)."""
        self._concludes = True

    def defer_context(self, message: UserMessage) -> None:
        """Add a message for the model's next step (after all results of this step)."""
        self._deferred.append(message)


@dataclass(slots=True)
class PreparedCall:
    """A call after create + pre-execute + ask + guards."""

    call: ToolCall
    final: ToolResult | None = None
    """Set when the body must not run (denied, aborted, unparseable)."""
    skip_post: bool = False
    """Final results from internal failures skip post-execute (denials do not)."""

    @property
    def dispatch(self) -> bool:
        return self.final is None


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class ToolRuntime:
    """Registered tools and the pipeline stages around them.

    Args:
        tools: tool definitions (names must be unique).
        approver: answers `Ask` decisions; without one an ask is denied with a message.
        visible: names the model may call (default: all registered); others are `UNKNOWN_TOOL`.
        secrets: values (the API key) replaced by `{{scrubbed:secret}}` in every result before
            observers, the log or the model see it; matched whole, and only values of at least
            `MIN_SECRET_LENGTH` characters (`dshkit.harness.secrets`).
    """

    def __init__(
        self,
        tools: Iterable[ToolDefinition] = (),
        *,
        approver: Approver | None = None,
        pre_execute: Sequence[PreExecute] = (),
        guards: Sequence[Guard] = (),
        execute_wrappers: Sequence[ExecuteWrapper] = (),
        post_execute: Sequence[PostExecute] = (),
        observers: Sequence[ResultObserver] = (),
        visible: Iterable[str] | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        self._tools: dict[str, ToolDefinition] = {}
        for tool in tools:
            self.register(tool)
        self.approver = approver
        self.pre_execute: list[PreExecute] = list(pre_execute)
        self.guards: list[Guard] = list(guards)
        self.execute_wrappers: list[ExecuteWrapper] = list(execute_wrappers)
        self.post_execute: list[PostExecute] = list(post_execute)
        self.observers: list[ResultObserver] = list(observers)
        self.visible: frozenset[str] | None = None if visible is None else frozenset(visible)
        self._known = KnownSecrets(secrets)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values scrubbed from every result (those long enough to match safely)."""
        return tuple(self._known)

    # --- registry -------------------------------------------------------------------------

    def register(self, tool: ToolDefinition) -> None:
        if tool.name in self._tools:
            raise UsageError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def resolve(self, name: str) -> ToolDefinition | None:
        """The visible tool called `name`, or None."""
        if self.visible is not None and name not in self.visible:
            return None
        return self._tools.get(name)

    def schemas(self) -> tuple[ToolSchema, ...]:
        """Visible tool schemas (name, description, parameters only), sorted by name."""
        return tuple(t.schema for n, t in sorted(self._tools.items()) if self.resolve(n) is not None)

    def is_concurrency_safe(self, name: str, raw_arguments: str) -> bool:
        """Whether the call may join the parallel pool (exactly True; unknown tools → False)."""
        tool = self.resolve(name)
        return tool is not None and tool.is_concurrency_safe(parse_arguments(raw_arguments))

    # --- the pipeline ----------------------------------------------------------------------

    async def execute(
        self, call_id: str, name: str, raw_arguments: str, *, signal: asyncio.Event | None = None
    ) -> ToolResult:
        """Run one call through every stage and return its final result."""
        prepared = await self.prepare(call_id, name, raw_arguments, signal=signal)
        body = await self.run_body(prepared)
        return await self.complete(prepared, body)

    async def prepare(
        self, call_id: str, name: str, raw_arguments: str, *, signal: asyncio.Event | None = None
    ) -> PreparedCall:
        """Create the execution and run pre-execute, approval and guards."""
        signal = signal or asyncio.Event()
        parsed = parse_arguments(raw_arguments)
        definition = self.resolve(name)
        try:
            frozen = freeze_json(parsed, "arguments")
        except LosslessJsonError as exc:
            call = ToolCall(call_id, name, raw_arguments, parsed, signal, definition)
            return PreparedCall(call, error_result(exc), skip_post=True)
        call = ToolCall(call_id, name, raw_arguments, frozen, signal, definition)
        if signal.is_set():
            return PreparedCall(call, aborted_before_dispatch_result(), skip_post=True)
        try:
            decision = await self._pre(call, 0)
            if isinstance(decision, Ask):
                decision = await self._ask(call, decision)
            if isinstance(decision, Allow):
                for guard in self.guards:
                    reason = guard(call)
                    if reason:
                        decision = Deny(reason)
                        break
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            return PreparedCall(call, error_result(exc), skip_post=True)
        if isinstance(decision, Deny):
            return PreparedCall(call, denied_result(decision.reason))
        if signal.is_set():
            return PreparedCall(call, aborted_before_dispatch_result())
        return PreparedCall(call)

    async def _pre(self, call: ToolCall, i: int) -> PreDecision:
        if i == len(self.pre_execute):
            # The default policy: tools that declare it ask first (e.g. bash).
            tool = call.definition
            if tool is not None and tool.requires_approval:
                return Ask(f'tool "{call.name}" requires approval')
            return Allow()
        decision = await _maybe_await(self.pre_execute[i](call, lambda: self._pre(call, i + 1)))
        if not isinstance(decision, (Allow, Deny, Ask)):
            raise TypeError(f"a pre-execute listener returned {decision!r}, not Allow/Deny/Ask")
        return decision

    async def _ask(self, call: ToolCall, ask: Ask) -> PreDecision:
        if self.approver is None:
            return Deny(
                ask.reason + ", but no approval channel is available"
                if ask.reason
                else f'tool "{call.name}" requires approval, but no approval channel is available'
            )
        answer = await _maybe_await(self.approver(call, ask.reason))
        if answer is True:
            answer = ApprovalResult("allowed-once")
        elif answer is False:
            answer = ApprovalResult("rejected")
        elif isinstance(answer, str):
            answer = ApprovalResult(answer)  # type: ignore[arg-type]
        if answer.outcome == "allowed-once":
            return Allow()
        default = {
            "rejected": f'the user rejected tool "{call.name}"',
            "cancelled": f'approval for tool "{call.name}" was cancelled',
        }.get(answer.outcome, f'tool "{call.name}" requires approval, but no approval channel is available')
        return Deny(answer.message or default)

    async def run_body(self, prepared: PreparedCall) -> ToolResult:
        """The execute waterfall around the handler (or the prepared final result)."""
        if prepared.final is not None:
            return prepared.final
        call = prepared.call
        try:
            return await self._wrapped(call, 0)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            prepared.skip_post = True
            return error_result(exc, contexts=call._deferred)

    async def _wrapped(self, call: ToolCall, i: int) -> ToolResult:
        if i == len(self.execute_wrappers):
            return await self._body(call)
        result = await self.execute_wrappers[i](call, lambda: self._wrapped(call, i + 1))
        if not isinstance(result, ToolResult):
            raise TypeError(f"an execute wrapper returned {result!r}, not a ToolResult")
        return result

    async def _body(self, call: ToolCall) -> ToolResult:
        if call.signal.is_set():
            return aborted_before_dispatch_result()
        tool = call.definition
        if tool is None:
            return error_result(ToolNotFoundError(f'unknown tool "{call.name}"'))
        call.body_invoked = True
        try:
            value, content = await tool.invoke(call.arguments, call)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001
            return error_result(exc, contexts=call._deferred)
        if call.signal.is_set():
            return aborted_result(call._deferred)
        return ToolResult(
            is_error=False,
            content=content,
            value=value,
            additional_contexts=tuple(call._deferred),
            concludes_turn=call._concludes,
        )

    async def complete(self, prepared: PreparedCall, result: ToolResult) -> ToolResult:
        """Post-execute, cancellation check, `finalize_content`, then the result observers."""
        call = prepared.call
        if not prepared.skip_post:
            try:
                result = await self._post(call, result)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001
                result = error_result(exc)
        if call.signal.is_set() and not result.is_error:
            result = aborted_result(result.additional_contexts) if call.body_invoked else aborted_before_dispatch_result(result.additional_contexts)
        finalize = call.definition.finalize_content if call.definition is not None else None
        if finalize is not None:
            try:
                new = finalize(call, result.content)
                if new is not None:
                    result = replace(result, content=tuple(new))
            except Exception as exc:  # noqa: BLE001
                result = error_result(exc)
        result = scrub_result(result, self._known)
        for observer in self.observers:
            try:
                observer(call, result)
            except Exception:  # noqa: BLE001
                _log.exception("tool result observer %r failed for %s", observer, call.call_id)
        return result

    async def _post(self, call: ToolCall, result: ToolResult) -> ToolResult:
        decision = await self._post_chain(call, result, 0)
        if isinstance(decision, Block):
            feedback: tuple[ContentBlock, ...] = (
                (TextBlock(text=decision.feedback),) if isinstance(decision.feedback, str) else tuple(decision.feedback)
            )
            texts = [b.text if isinstance(b, TextBlock) else f"[{b.type} content]" for b in feedback]
            return ToolResult(
                is_error=True,
                content=feedback,
                error=ToolErrorInfo(message="\n".join(texts) or "tool result blocked by post-execute policy"),
                meta=result.meta,
                additional_contexts=tuple(decision.additional_contexts),
            )
        content = result.content if decision.content is None else tuple(decision.content)
        return replace(
            result,
            content=content,
            additional_contexts=result.additional_contexts + tuple(decision.additional_contexts),
        )

    async def _post_chain(self, call: ToolCall, result: ToolResult, i: int) -> PostDecision:
        if i == len(self.post_execute):
            return Accept()
        decision = await _maybe_await(self.post_execute[i](call, result, lambda: self._post_chain(call, result, i + 1)))
        if not isinstance(decision, (Accept, Block)):
            raise TypeError(f"a post-execute listener returned {decision!r}, not Accept/Block")
        return decision
