"""The runner: play each scenario over real HTTP against an adapter and judge the result.

One mock server serves the whole run. Each scenario gets its own API key, so the server routes
its requests to its own script (routing by key hash, `dshkit.mock_server.routing`) and the journal
tells its request bodies apart, which lets scenarios run concurrently on one event loop. The
adapter comes from a factory `module:callable`, called as
`factory(base_url, api_key, *, connect_timeout_s, idle_timeout_s)`, a fresh one per scenario.
Each scenario has a time budget that covers closing the adapter too; exceeding it is `fail:
timeout`. A broken adapter cannot keep the run alive: a stream that ignores cancellation is left
behind after a short grace (and fails the scenario), and an `aclose()` that never returns is
abandoned when the budget runs out.

On the `anthropic` protocol the adapter's base URL is the mock's `/anthropic` surface, the
scenarios written for that protocol run with their `anthropic` step overrides, and requests are
routed by the harness session header (`GenerateOptions.session_id`, which an Anthropic adapter
must send as `x-deepseek-harness-session-id`): Anthropic clients put the key in `x-api-key` or
`Authorization`, so the key alone does not say which route the runner registered.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import importlib
import inspect
import os
import socket
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dshkit.harness.llm import BlockAssembler, Message, StreamChunk, UserMessage
from dshkit.harness.llm.errors import UsageError
from dshkit.harness.llm.messages import ModelSource, ToolResultMessage
from dshkit.mock_server import MockServer, Script
from dshkit.mock_server.routing import session_of

from .checks import (
    CheckResult,
    check_assemble,
    check_finish,
    check_meta,
    check_request,
    check_requests,
    check_translate,
    check_usage,
    finish_summary,
    unified,
)
from .scenario import CAPABILITIES, CAPABILITY_NOTES, Scenario, Step, area_of
from .wire import build_messages, build_options, to_mock_step

__all__ = [
    "DEFAULT_ADAPTER",
    "DEFAULT_ANTHROPIC_ADAPTER",
    "AdapterFactory",
    "FactoryError",
    "ScenarioResult",
    "Status",
    "expected_wait_s",
    "for_protocol",
    "load_factory",
    "run_catalogue",
    "run_scenario",
    "summarize",
]

DEFAULT_ADAPTER = "dshkit.harness.providers.deepseek:DeepSeekAdapter"
DEFAULT_ANTHROPIC_ADAPTER = "dshkit.harness.providers.anthropic:AnthropicAdapter"
CANCEL_GRACE_S = 2.0
"""How long a cancelled stream may take to end before the runner stops waiting for it."""
CLOSE_GRACE_S = 1.0
"""`aclose()` gets what is left of the budget, but at least this (also after a timeout)."""
Status = Literal["pass", "fail", "n/a"]
AdapterFactory = Callable[..., Any]


class FactoryError(UsageError, ValueError):
    """The adapter factory path cannot be used: says what was wrong and what to write."""

    def __init__(self, message: str, code: str = "BAD_FACTORY") -> None:
        super().__init__(message, code)


def _import_from_cwd(module_name: str) -> Any:
    """Import `module_name` as `python -m` would: the current directory is searched too (first, as
    `python -m` puts it), so `--adapter mypkg.adapters:make` works from a project's root without
    `PYTHONPATH=.`; the console script `dshkit` and plain `pytest` do not put it on `sys.path`."""
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
        importlib.invalidate_caches()
    return importlib.import_module(module_name)


_CALL_SHAPE = "factory(base_url, api_key, *, connect_timeout_s, idle_timeout_s)"


def _check_signature(spec: str, target: Any) -> None:
    """Refuse a factory that cannot take the runner's call, before any scenario runs (one usage
    error instead of every scenario failing with the same TypeError)."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return  # a builtin or C callable without a signature: the first call will tell
    try:
        signature.bind("http://127.0.0.1:1", "sk-check", connect_timeout_s=1.0, idle_timeout_s=1.0)
    except TypeError as exc:
        raise FactoryError(
            f"adapter factory {spec!r} cannot be called as {_CALL_SHAPE}: {exc} (its signature is "
            f"{signature}); give it those parameters, or point --adapter at a small function that "
            "takes them and builds your adapter"
        ) from None


def load_factory(spec: str) -> AdapterFactory:
    """Import `module:callable` (e.g. `dshkit.harness.providers.deepseek:DeepSeekAdapter`), the
    module found on `sys.path` or in the current directory, and check that it can be called as
    `factory(base_url, api_key, *, connect_timeout_s, idle_timeout_s)`. Every problem is a
    `FactoryError` saying what to write instead."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise FactoryError(f"adapter factory {spec!r} must look like `package.module:callable` "
                           "(e.g. mypkg.adapters:make_adapter)")
    try:
        module = _import_from_cwd(module_name)
    except ImportError as exc:
        raise FactoryError(
            f"cannot import module {module_name!r} for adapter factory {spec!r}: {exc}; the module must "
            f"be importable from the current directory ({os.getcwd()}) or the installed packages"
        ) from None
    except Exception as exc:  # noqa: BLE001 - the user's module raised while importing: a usage error
        raise FactoryError(f"importing module {module_name!r} for adapter factory {spec!r} raised "
                           f"{type(exc).__name__}: {exc}") from None
    target: Any = module
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            names = [n for n in dir(target) if not n.startswith("_")]
            near = difflib.get_close_matches(part, names, n=3)
            hint = f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
            raise FactoryError(
                f"module {module_name!r} has no attribute {attr!r} (adapter factory {spec!r}){hint}"
            ) from None
    if not callable(target):
        raise FactoryError(f"adapter factory {spec!r} is not callable (it is a {type(target).__name__})")
    _check_signature(spec, target)
    return target  # type: ignore[no-any-return]


@dataclass(slots=True)
class ScenarioResult:
    """The verdict on one scenario."""

    id: str
    tags: list[str]
    status: Status
    diff: str = ""
    reason: str = ""
    """Why n/a, or a one-line summary of the failure."""
    info: list[str] = field(default_factory=list)
    seconds: float = 0.0
    title: str = ""
    failed: list[str] = field(default_factory=list)
    """The names of the failed checks (`step0.finish`, …; `budget` on a timeout)."""
    started_at: float | None = None
    """`time.monotonic()` when the scenario started, so reports can give the run's wall time."""

    @property
    def area(self) -> str:
        return area_of(self.tags)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "title": self.title, "tags": self.tags, "status": self.status,
                               "reason": self.reason, "failed": self.failed,
                               "seconds": round(self.seconds, 3), "notes": self.info}
        if self.status == "fail":
            out["diff"] = self.diff
        return out


def for_protocol(scenarios: Sequence[Scenario], protocol: str) -> list[Scenario]:
    """The scenarios written for `protocol` (`chat` or `anthropic`), in catalogue order."""
    return [s for s in scenarios if protocol in s.protocols]


def summarize(results: Sequence[ScenarioResult]) -> dict[str, int]:
    counts = {"pass": 0, "fail": 0, "n/a": 0}
    for r in results:
        counts[r.status] += 1
    return counts


# --- one scenario ------------------------------------------------------------------------------


@dataclass(slots=True)
class _StepRun:
    chunks: list[StreamChunk] = field(default_factory=list)
    raised: BaseException | None = None
    cancelled: bool = False
    stuck: bool = False
    """The consumer task was cancelled and had not ended `CANCEL_GRACE_S` later."""


class _AdapterExit(Exception):
    """An adapter raised `SystemExit` (it called `sys.exit()`): judged as that scenario's
    failure. Raised on, it would end the whole run (asyncio re-raises it out of the event loop)
    with the exit status the adapter chose and no report."""

    def __init__(self, exc: SystemExit, where: str) -> None:
        super().__init__(f"{where} raised SystemExit({exc.code!r}) (it called sys.exit()); an adapter must "
                         "report failures as error finishes or exceptions, never end the process")


async def _consume(adapter: Any, options: Any, step: Step, run: _StepRun, ready: asyncio.Event) -> None:
    try:
        await _consume_stream(adapter, options, step, run, ready)
    except SystemExit as exc:
        raise _AdapterExit(exc, "adapter.stream()") from exc


async def _consume_stream(adapter: Any, options: Any, step: Step, run: _StepRun, ready: asyncio.Event) -> None:
    agen = adapter.stream(options)
    try:
        async for chunk in agen:
            run.chunks.append(chunk)
            n = len(run.chunks)
            if step.abort is not None and step.abort.after_chunks == n and options.signal is not None:
                options.signal.set()
            if step.cancel is not None and n >= step.cancel.after_chunks:
                ready.set()
                if step.cancel.at == "chunk":
                    # Hold chunk N until cancelled: the CancelledError lands here, between two
                    # chunks, and the adapter's generator is closed at its `yield` below.
                    await asyncio.Event().wait()
    finally:
        closer = getattr(agen, "aclose", None)
        # A stream still running here ignored a cancellation and is being dropped at exit;
        # closing it would only raise "asynchronous generator is already running".
        if closer is not None and not getattr(agen, "ag_running", False):
            await closer()


async def _play_step(adapter: Any, options: Any, step: Step) -> _StepRun:
    run = _StepRun()
    ready = asyncio.Event()
    if step.abort is not None and step.abort.before and options.signal is not None:
        options.signal.set()
    task = asyncio.ensure_future(_consume(adapter, options, step, run, ready))
    if step.cancel is not None:
        waiter = asyncio.ensure_future(ready.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if not task.done():
            task.cancel()
            # An adapter that swallows the cancellation could keep this task alive for ever:
            # give it a grace, then leave it behind and judge it.
            done, _ = await asyncio.wait({task}, timeout=CANCEL_GRACE_S)
            if not done:
                run.stuck = True
                return run
    try:
        await asyncio.wait({task})
    except asyncio.CancelledError:
        task.cancel()
        raise
    if task.cancelled():
        run.cancelled = True
    elif task.exception() is not None:
        run.raised = task.exception()
    return run


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def missing_capabilities(adapter: Any, sc: Scenario) -> list[str]:
    caps = getattr(adapter, "capabilities", None)
    return [name for name in sc.requires if name in CAPABILITIES and not getattr(caps, name, True)]


async def _close(adapter: Any, timeout: float) -> str | None:
    """Close the adapter within `timeout`; what went wrong, or None. A hanging `aclose()` is
    abandoned (cancelled, not awaited: it may ignore the cancellation too)."""
    closer = getattr(adapter, "aclose", None)
    if closer is None:
        return None

    async def call() -> None:
        try:
            result = closer()
            if inspect.isawaitable(result):
                await result
        except SystemExit as exc:
            raise _AdapterExit(exc, "adapter.aclose()") from exc

    task = asyncio.ensure_future(call())
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done:
        task.cancel()
        return f"adapter.aclose() did not return within {timeout:g} s"
    if task.cancelled():
        return "adapter.aclose() was cancelled"
    exc = task.exception()
    return None if exc is None else f"adapter.aclose() raised {type(exc).__name__}: {exc}"


def _entries(server: MockServer, protocol: str) -> list[Any]:
    """The journal entries of the protocol's surface."""
    return server.journal.messages() if protocol == "anthropic" else server.journal.chat()


async def _wait_closed(
    server: MockServer, session: str, seq_from: int, timeout: float = 1.0, protocol: str = "chat"
) -> str | None:
    """The outcome the server recorded for the session's last request, once it is known."""
    deadline = time.monotonic() + timeout
    while True:
        entries = [e for e in _entries(server, protocol) if e.session == session and e.seq > seq_from]
        outcome = entries[-1].outcome if entries else None
        if outcome not in (None, "stalled") or time.monotonic() > deadline:
            return outcome
        await asyncio.sleep(0.02)


async def run_scenario(
    sc: Scenario,
    factory: AdapterFactory,
    server: MockServer,
    *,
    provider: str = "conformance",
    protocol: str = "chat",
) -> ScenarioResult:
    """Run one scenario against a fresh adapter; never raises for adapter misbehaviour.

    A scenario with `api_key: required` is played on a mock of its own, started with the
    scenario's key required (the shared one takes any key: each scenario has its own)."""
    key = f"sk-conf-{sc.id}-{uuid.uuid4().hex[:8]}"
    if sc.api_key == "required" and sc.endpoint == "mock" and protocol in sc.protocols:
        async with MockServer(seed=7, api_key=key) as own:
            return await _run_scenario(sc, factory, own, key, provider=provider, protocol=protocol)
    return await _run_scenario(sc, factory, server, key, provider=provider, protocol=protocol)


async def _run_scenario(
    sc: Scenario, factory: AdapterFactory, server: MockServer, key: str, *, provider: str, protocol: str
) -> ScenarioResult:
    started = time.monotonic()
    anthropic = protocol == "anthropic"
    session_id = f"conf-{sc.id}-{uuid.uuid4().hex[:8]}" if anthropic else None
    session = session_id or session_of({"Authorization": f"Bearer {key}"})
    base = Path(sc.source).parent if sc.source else Path(".")
    base_url = server.base_url if sc.endpoint == "mock" else f"http://127.0.0.1:{_free_port()}"
    if anthropic:
        base_url += "/anthropic"
    result = ScenarioResult(id=sc.id, tags=list(sc.tags), status="pass", title=sc.title)
    if protocol not in sc.protocols:
        result.status = "n/a"
        result.reason = f"written for {', '.join(sc.protocols)}, not {protocol}"
        return result
    played = [s.for_protocol(protocol) for s in sc.steps]
    try:
        adapter = factory(base_url, key, connect_timeout_s=sc.connect_timeout_s, idle_timeout_s=sc.idle_timeout_s)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a factory failure is this scenario's verdict
        result.status = "fail"
        result.reason = f"the adapter factory raised {type(exc).__name__}: {exc}"
        result.failed = ["factory"]
        result.diff = unified({"factory": "returns an adapter"}, {"factory": result.reason}, "factory")
        return result
    deadline = started + sc.budget_s

    async def close() -> str | None:
        return await _close(adapter, max(deadline - time.monotonic(), CLOSE_GRACE_S))

    try:
        missing = missing_capabilities(adapter, sc)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a `capabilities` property that raises
        await close()
        result.status = "fail"
        result.reason = f"reading adapter.capabilities raised {type(exc).__name__}: {exc}"
        result.failed = ["capabilities"]
        result.diff = unified({"capabilities": "readable"}, {"capabilities": result.reason}, "capabilities")
        return result
    if missing:
        await close()
        result.status = "n/a"
        result.reason = "the adapter declares no " + ", ".join(
            f"{name} capability ({CAPABILITY_NOTES.get(name, 'see its capabilities')})" for name in missing
        )
        return result
    if sc.endpoint == "mock":
        steps = [to_mock_step(s.wire, base=base, seed=i, protocol=protocol) for i, s in enumerate(played)]
        server.add_script(Script(name=sc.id, steps=steps), session=session)
    checks: list[CheckResult] = []
    finishes: list[str] = []
    thinking_off = sc.request.reasoning_effort in ("off", "none") or sc.request.purpose == "session-title"
    result.started_at = started
    before = 0
    history: list[Message] = build_messages(sc.request.messages, model=sc.request.model)
    try:
        async with asyncio.timeout(sc.budget_s):
            for i, step in enumerate(played):
                before = max((e.seq for e in server.journal.entries), default=0)
                options = build_options(sc.request, history, provider=provider, session_id=session_id)
                if step.abort is not None:
                    options = dataclasses.replace(options, signal=asyncio.Event())
                run = await _play_step(adapter, options, step)
                assembler = BlockAssembler()
                for chunk in run.chunks:
                    assembler.feed(chunk)
                entries = [e for e in _entries(server, protocol) if e.session == session and e.seq > before]
                finishes.append(f"step{i}: " + ("cancelled" if run.cancelled else finish_summary(run.chunks)))
                checks += _judge(i, step, run, assembler, entries, thinking_off)
                if step.cancel is not None:
                    # Generous: on a loaded machine the close can take a while to reach the server;
                    # a closed response ends the wait at once.
                    outcome = await _wait_closed(server, session, before, timeout=3.0, protocol=protocol)
                    if sc.endpoint == "mock" and outcome not in ("client_closed", "closed", "completed", "reset"):
                        checks.append(CheckResult(
                            f"step{i}.cancel", False,
                            unified({"server sees": "the response closed"}, {"server sees": outcome}, f"step{i}.cancel"),
                        ))
                if i + 1 < len(played):
                    history = _next_history(history, assembler, step, sc, i)
    except TimeoutError:
        result.status = "fail"
        result.reason = f"timeout: the scenario took longer than its {sc.budget_s:g} s budget"
        result.failed = ["budget"]
        result.diff = unified({"outcome": f"done within {sc.budget_s:g} s"}, {"outcome": "timeout"}, "budget")
        sent = len([e for e in _entries(server, protocol) if e.session == session and e.seq > before])
        retried = check_requests(sent)
        if not retried.ok:
            result.reason += f"; {retried.summary}"
            result.failed.append("requests")
        result.diff += _finish_lines([*finishes, f"step{len(finishes)}: none within the budget"])
        closed = await close()
        if closed is not None:
            result.reason += f"; then {closed}"
        result.seconds = time.monotonic() - started
        return result
    closed = await close()
    if closed is not None:
        checks.append(CheckResult("close", False, unified(
            {"aclose": f"returns within the {sc.budget_s:g} s budget"}, {"aclose": closed}, "close")))
    failed = [c for c in checks if not c.ok]
    for c in checks:
        result.info += [f"{c.name}: {note}" for note in c.info]
    if sc.by_design:
        result.info.append(f"by design: {sc.by_design}")
    if failed:
        result.status = "fail"
        result.failed = [c.name for c in failed]
        result.reason = "failed: " + ", ".join(result.failed)
        result.reason += "".join(f"; {c.summary}" for c in failed if c.summary)
        result.diff = "".join(c.diff for c in failed) + _finish_lines(finishes)
    result.seconds = time.monotonic() - started
    return result


def _finish_lines(finishes: list[str]) -> str:
    """How each played step really ended, under every failure diff."""
    return "".join(f"# actual finish, {line}\n" for line in finishes)


def _judge(
    i: int, step: Step, run: _StepRun, assembler: BlockAssembler, entries: list[Any], thinking_off: bool
) -> list[CheckResult]:
    exp = step.expect
    out: list[CheckResult] = [_named(check_requests(len(entries)), i)]
    if run.raised is not None:
        exc = run.raised
        text = f"{type(exc).__name__}: {exc}"
        out.append(CheckResult(f"step{i}.translate", False, unified(
            {"stream": "ends with a finish chunk, raises nothing"}, {"stream": f"raised {text}"}, f"step{i}.translate")))
    else:
        out.append(_named(check_translate(run.chunks, exp.chunks, cancelled=exp.cancelled), i))
    if run.stuck:
        out.append(CheckResult(f"step{i}.cancel", False, unified(
            {"consumer task": "ends once cancelled (CancelledError re-raised)"},
            {"consumer task": f"still running {CANCEL_GRACE_S:g} s after the cancel (CancelledError swallowed)"},
            f"step{i}.cancel")))
    elif exp.cancelled:
        ok = run.cancelled
        out.append(CheckResult(f"step{i}.cancel", ok, "" if ok else unified(
            {"consumer task": "cancelled (CancelledError re-raised)"},
            {"consumer task": "ended normally (CancelledError swallowed)" if run.raised is None else f"raised {type(run.raised).__name__}"},
            f"step{i}.cancel")))
    if exp.message is not None:
        out.append(_named(check_assemble(assembler, exp.message), i))
    if exp.finish is not None:
        out.append(_named(check_finish(run.chunks, exp.finish), i))
    if exp.usage is not None or exp.no_usage:
        out.append(_named(check_usage(assembler, exp.usage, exp.no_usage), i))
    if exp.meta is not None:
        out.append(_named(check_meta(run.chunks, exp.meta), i))
    if exp.request is not None:
        want = exp.request
        if not want.sent:
            ok = not entries
            out.append(CheckResult(f"step{i}.serialize", ok, "" if ok else unified(
                {"requests sent": 0}, {"requests sent": len(entries)}, f"step{i}.serialize")))
        elif len(entries) != 1:
            out.append(CheckResult(f"step{i}.serialize", False, unified(
                {"requests sent": 1}, {"requests sent": len(entries)}, f"step{i}.serialize")))
        else:
            e = entries[0]
            out.append(_named(check_request(e.body, e.headers, want, thinking_off=thinking_off), i))
    return out


def _named(res: CheckResult, i: int) -> CheckResult:
    name = f"step{i}.{res.name}"
    diff = res.diff.replace(f"expected/{res.name}", f"expected/{name}").replace(f"actual/{res.name}", f"actual/{name}")
    return CheckResult(name, res.ok, diff, res.info, res.summary)


def _next_history(
    history: list[Message], assembler: BlockAssembler, step: Step, sc: Scenario, i: int
) -> list[Message]:
    # The replay envelope (Anthropic thinking signatures) stays with the message, as in the loop.
    source = ModelSource(provider="conformance", model=sc.request.model, replay_state=assembler.replay_state)
    message = assembler.message(source, id=f"conf-step-{i}")
    out = [*history, message]
    results = step.tool_results or []
    for k, call in enumerate(message.tool_calls):
        text = results[k] if k < len(results) else "ok"
        out.append(ToolResultMessage.create(call.id, text, id=f"conf-result-{i}-{k}"))
    if step.then_user is not None:
        out.append(UserMessage.text(step.then_user, id=f"conf-user-{i}"))
    return out


# --- the whole catalogue -----------------------------------------------------------------------

_STALLS = frozenset({"stall", "stall_after", "reasoning_stall"})
"""Faults that go silent with the response open: a conforming adapter ends only when its idle
watchdog fires (unless the scenario cancels or aborts first)."""
_SLOW_S = 0.5
"""A nominal wait for the faults that pace a whole body (`slow_success`, `slow_drip`), whose
length depends on the reply's size."""


def expected_wait_s(sc: Scenario, protocol: str = "chat") -> float:
    """About how many seconds `sc` spends waiting on timers by design, whatever the machine: the
    idle timeouts its stalls run into, the keep-alives, header delays and pacing its wire asks of
    the mock. Only an ordering hint (`run_catalogue` starts the longest first), so an estimate
    that is off costs time, never a verdict."""
    total = 0.0
    for step in sc.steps:
        wire = step.for_protocol(protocol).wire
        total += (wire.timing.headers_delay_ms + wire.timing.first_byte_delay_ms) / 1000
        options = wire.fault_options
        if wire.fault in _STALLS and step.cancel is None and step.abort is None:
            total += sc.idle_timeout_s
        elif wire.fault == "keep_alive":
            total += options.get("keep_alives", 3) * options.get("delay_ms", 20) / 1000
        elif wire.fault == "slow_headers":
            total += options.get("delay_ms", 200) / 1000
        elif wire.fault in ("slow_success", "slow_drip"):
            total += _SLOW_S
        if wire.sse is not None:
            total += wire.sse.write_delay_ms * len(wire.sse.events) / 1000
    return total


async def run_catalogue(
    scenarios: Sequence[Scenario],
    factory: AdapterFactory,
    *,
    concurrency: int = 16,
    server: MockServer | None = None,
    on_result: Callable[[ScenarioResult, int, int], None] | None = None,
    protocol: str = "chat",
) -> list[ScenarioResult]:
    """Run `scenarios` concurrently on one mock server; results come back in catalogue order.
    Only the scenarios written for `protocol` run (see `for_protocol`).

    They start longest wait first (`expected_wait_s`; catalogue order among equals): a run's
    wall time is set by its few scenarios that wait seconds in real time (keep-alives, stalls
    into an idle timeout), and started in catalogue order those came late, each holding the run
    open after the rest was done; started first, they wait while the others use the CPU."""
    scenarios = for_protocol(scenarios, protocol)
    waits = [expected_wait_s(sc, protocol) for sc in scenarios]
    order = sorted(range(len(scenarios)), key=lambda i: -waits[i])
    own = server is None
    srv = server or MockServer(seed=7)
    if own:
        await srv.start()
    gate = asyncio.Semaphore(max(1, concurrency))
    done = 0

    async def one(sc: Scenario) -> ScenarioResult:
        nonlocal done
        async with gate:
            try:
                res = await run_scenario(sc, factory, srv, protocol=protocol)
            except Exception as exc:  # noqa: BLE001 - a runner bug must not sink the whole run
                res = ScenarioResult(id=sc.id, tags=list(sc.tags), status="fail", title=sc.title, failed=["runner"],
                                     reason=f"runner error: {type(exc).__name__}: {exc}",
                                     diff=unified({"runner": "ok"}, {"runner": f"{type(exc).__name__}: {exc}"}, "runner"))
        done += 1
        if on_result is not None:
            on_result(res, done, len(scenarios))
        return res

    try:
        # The semaphore admits waiters first come, first served: the tasks start in this order.
        played = dict(zip(order, await asyncio.gather(*(one(scenarios[i]) for i in order)), strict=True))
        return [played[i] for i in range(len(scenarios))]
    finally:
        if own:
            await srv.close()
