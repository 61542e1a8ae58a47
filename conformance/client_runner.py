"""The client runner: play each scenario with a driver process and judge what it reports.

For every scenario the runner starts a mock server of its own (port 0) serving that scenario's
script, its last step repeated so a library's retries meet the same answer. It then starts the
driver command in a process group of its own, writes the task on its standard input and reads
its `hello` and one `observation` per model call from its standard output, each line validated
against the protocol's schemas (`client_protocol`). The driver gets `STARTUP_S` to load its
library and print `hello`; from there the scenario's own time budget runs. A driver that
crashes, hangs past the budget (its process group is killed), prints something that is not the
protocol, or exits without its observations gets a failure that names the scenario and says
which of these happened, with the end of its standard error. The observations and the mock's
journal are then judged by `client_judge`, with the catalogue's checks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dshkit.mock_server import MockServer, Script

from .checks import CheckResult, unified
from .client_judge import judge_step, observation_summary
from .client_protocol import (
    CLIENTS_DIR,
    ProtocolViolation,
    build_task,
    describe_task,
    not_applicable,
    parse_line,
    validate_task,
)
from .runner import ScenarioResult, _free_port, for_protocol
from .scenario import Scenario
from .wire import to_mock_step

__all__ = [
    "BUNDLED_CLIENTS",
    "STARTUP_S",
    "ClientCommand",
    "ClientError",
    "ClientScenarioResult",
    "DriverRun",
    "describe_client",
    "resolve_client",
    "run_client_catalogue",
    "run_client_scenario",
    "run_driver",
]

STARTUP_S = 60.0
"""How long a driver may take to load its library and print `hello` (not part of the budget:
importing a large library on a loaded machine can take longer than a scenario)."""
KILL_GRACE_S = 1.0
"""After the budget, SIGTERM to the process group, then SIGKILL this much later."""
LINE_LIMIT = 4 * 1024 * 1024
"""The longest stdout line the runner reads; a longer one is a protocol violation."""
STDERR_TAIL = 4000
"""How many characters of the end of a driver's stderr a failure shows."""

#: The drivers shipped in `clients/`: name → (runtime, file). Python drivers run with
#: $DSHKIT_CLIENTS_PYTHON (default: this interpreter), Node ones with $DSHKIT_CLIENTS_NODE
#: (default: `node`) and $DSHKIT_CLIENTS_NODE_PATH prepended to NODE_PATH.
BUNDLED_CLIENTS: dict[str, tuple[str, str]] = {
    "openai-python": ("python", "drive_openai.py"),
    "anthropic-python": ("python", "drive_anthropic.py"),
    "pydantic-ai": ("python", "drive_pydantic_ai.py"),
    "litellm": ("python", "drive_litellm.py"),
    "langchain-deepseek": ("python", "drive_langchain_deepseek.py"),
    "openai-node": ("node", "drive_openai.cjs"),
    "ai-sdk-deepseek": ("node", "drive_ai_sdk_deepseek.cjs"),
    "ai-sdk-anthropic": ("node", "drive_ai_sdk_anthropic.cjs"),
    "anthropic-node": ("node", "drive_anthropic.cjs"),
}


class ClientError(Exception):
    """The client command cannot be used at all (it does not start, or does not say `hello`)."""


@dataclass(frozen=True, slots=True)
class ClientCommand:
    """How to start one driver."""

    name: str
    """What reports call it: the bundled name, or the command as given."""
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables set on top of this process's environment."""


def resolve_client(spec: str) -> ClientCommand:
    """A bundled driver's name (`openai-python`, …) or a command line (`node my_driver.js`)."""
    bundled = BUNDLED_CLIENTS.get(spec)
    if bundled is None:
        argv = tuple(shlex.split(spec))
        if not argv:
            raise ClientError("--client needs a bundled driver name or a command; bundled: " + ", ".join(BUNDLED_CLIENTS))
        return ClientCommand(name=spec, argv=argv)
    runtime, file = bundled
    path = str(CLIENTS_DIR / file)
    if runtime == "python":
        return ClientCommand(name=spec, argv=(os.environ.get("DSHKIT_CLIENTS_PYTHON") or sys.executable, path))
    extra = os.environ.get("DSHKIT_CLIENTS_NODE_PATH")
    env = {}
    if extra:
        env["NODE_PATH"] = os.pathsep.join(p for p in (extra, os.environ.get("NODE_PATH", "")) if p)
    return ClientCommand(name=spec, argv=(os.environ.get("DSHKIT_CLIENTS_NODE") or "node", path), env=env)


@dataclass(slots=True)
class DriverRun:
    """What one run of a driver printed, and how it ended."""

    hello: dict[str, Any] | None = None
    observations: list[dict[str, Any]] = field(default_factory=list)
    problem: str | None = None
    """Why the run is not a clean protocol exchange (crash, hang, bad output), or None."""
    timed_out: bool = False
    exit_code: int | None = None
    stderr: str = ""
    """The end of its standard error."""
    started_at: float = 0.0
    """`time.monotonic()` when `hello` arrived (when the budget started)."""


def _kill_group(proc: asyncio.subprocess.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """End the driver's whole process group: SIGTERM, then SIGKILL after a grace."""
    if proc.returncode is None:
        _kill_group(proc, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), KILL_GRACE_S)
        except TimeoutError:
            _kill_group(proc, signal.SIGKILL)
            await proc.wait()
    # Children the driver left behind (a library's worker processes) go too.
    _kill_group(proc, signal.SIGKILL)


async def _tail(stream: asyncio.StreamReader, keep: list[str]) -> None:
    buf = ""
    while chunk := await stream.read(65536):
        buf = (buf + chunk.decode("utf-8", "replace"))[-STDERR_TAIL:]
        keep[:] = [buf]


async def run_driver(
    cmd: ClientCommand, task: Mapping[str, Any], *, steps: int, budget_s: float, startup_s: float = STARTUP_S
) -> DriverRun:
    """Start the driver, give it `task`, and read its `hello` and up to `steps` observations.
    Never raises for what the driver does."""
    run = DriverRun()
    try:
        proc = await asyncio.create_subprocess_exec(
            *cmd.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env={**os.environ, **cmd.env}, start_new_session=True, limit=LINE_LIMIT,
        )
    except OSError as exc:
        run.problem = f"the client command {shlex.join(cmd.argv)!r} cannot be started: {exc.strerror or exc}"
        return run
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    stderr: list[str] = [""]
    tail = asyncio.ensure_future(_tail(proc.stderr, stderr))
    try:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(json.dumps(task, ensure_ascii=False).encode("utf-8") + b"\n")
            await proc.stdin.drain()
            proc.stdin.close()
        await _read(proc, proc.stdout, run, steps=steps, budget_s=budget_s, startup_s=startup_s)
    finally:
        await _stop(proc)
        run.exit_code = proc.returncode
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(tail, 2.0)
        tail.cancel()
        run.stderr = stderr[0]
    return run


async def _read(
    proc: asyncio.subprocess.Process, out: asyncio.StreamReader, run: DriverRun, *, steps: int, budget_s: float,
    startup_s: float,
) -> None:
    lineno = 0
    deadline = time.monotonic() + startup_s
    try:
        while True:
            try:
                raw = await asyncio.wait_for(out.readline(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                run.timed_out = True
                if run.hello is None:
                    run.problem = f"the driver printed no `hello` line within {startup_s:g} s of starting; its process group was killed"
                else:
                    run.problem = (f"the driver did not finish within the scenario's {budget_s:g} s budget "
                                   f"({len(run.observations)} of {steps} observations printed); its process group was killed")
                return
            if not raw:
                break
            lineno += 1
            if run.hello is None:
                run.hello = parse_line(raw, lineno, expect="hello")
                run.started_at = time.monotonic()
                deadline = run.started_at + budget_s
                continue
            obs = parse_line(raw, lineno, expect="observation")
            due = len(run.observations)
            if obs["step"] != due or due >= steps:
                what = f"step {due}" if due < steps else f"nothing more (the scenario has {steps} steps)"
                raise ProtocolViolation(f"stdout line {lineno} is the observation of step {obs['step']}, where {what} was due")
            run.observations.append(obs)
    except ProtocolViolation as exc:
        run.problem = str(exc)
        return
    except ValueError:  # a line past LINE_LIMIT
        run.problem = f"stdout line {lineno + 1} is longer than {LINE_LIMIT} bytes"
        return
    try:
        code = await asyncio.wait_for(proc.wait(), max(KILL_GRACE_S, deadline - time.monotonic()))
    except TimeoutError:
        run.timed_out = True
        run.problem = "the driver closed its standard output but did not exit within the budget; its process group was killed"
        return
    if code != 0:
        how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        run.problem = f"the driver {how}" + (" before printing `hello`" if run.hello is None else "")
    elif run.hello is None:
        run.problem = "the driver exited without printing its `hello` line"


async def describe_client(cmd: ClientCommand, *, startup_s: float = STARTUP_S) -> dict[str, Any]:
    """The driver's `hello`: its name, library versions, protocols, options and what it cannot
    send. Raises `ClientError` when the command does not speak the protocol."""
    run = await run_driver(cmd, describe_task(), steps=0, budget_s=startup_s, startup_s=startup_s)
    if run.problem is not None or run.hello is None:
        tail = run.stderr.strip()[-1500:]
        raise ClientError(f"client {cmd.name!r} did not describe itself: {run.problem or 'no hello line'}"
                          + (f"\n--- its stderr ends with:\n{tail}" if tail else ""))
    return run.hello


# --- one scenario ----------------------------------------------------------------------------------


@dataclass(slots=True)
class ClientScenarioResult(ScenarioResult):
    """The verdict on one scenario played by a client, with what the driver printed."""

    observations: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""

    def to_json(self) -> dict[str, Any]:
        out = ScenarioResult.to_json(self)
        if self.status != "n/a":
            out["observations"] = self.observations
        if self.status == "fail" and self.stderr:
            out["stderr"] = self.stderr
        return out


def _attribute(entries: Sequence[Any], steps: int) -> list[list[Any]]:
    """Journal entries per scenario step. A routed entry names its script step (retries of the
    last step meet it again); a rejected one belongs to the call after the last routed one."""
    out: list[list[Any]] = [[] for _ in range(steps)]
    last: int | None = None
    for e in entries:
        if e.step is not None:
            last = min(int(e.step), steps - 1)
            out[last].append(e)
        else:
            out[min(0 if last is None else last + 1, steps - 1)].append(e)
    return out


def _entries(server: MockServer, protocol: str) -> list[Any]:
    return server.journal.messages() if protocol == "anthropic" else server.journal.chat()


async def run_client_scenario(
    sc: Scenario, cmd: ClientCommand, hello: Mapping[str, Any], *, protocol: str = "chat",
    client_options: Mapping[str, str] | None = None, startup_s: float = STARTUP_S,
) -> ClientScenarioResult:
    """Play one scenario with a fresh driver process against a mock server of its own; never
    raises for the driver's misbehaviour."""
    started = time.monotonic()
    result = ClientScenarioResult(id=sc.id, tags=list(sc.tags), status="pass", title=sc.title, started_at=started)
    if protocol not in sc.protocols:
        result.status, result.reason = "n/a", f"written for {', '.join(sc.protocols)}, not {protocol}"
        return result
    why = not_applicable(sc, hello)
    if why is not None:
        result.status, result.reason = "n/a", why
        return result
    played = [s.for_protocol(protocol) for s in sc.steps]
    base = Path(sc.source).parent if sc.source else Path(".")
    steps = [to_mock_step(s.wire, base=base, seed=i, protocol=protocol) for i, s in enumerate(played)]
    key = f"sk-conf-{uuid.uuid4().hex[:12]}"
    required = key if sc.api_key == "required" else None  # the mock answers 401 without it
    async with MockServer(Script(name=sc.id, steps=steps, repeat_last=True), seed=7, api_key=required) as server:
        base_url = server.base_url if sc.endpoint == "mock" else f"http://127.0.0.1:{_free_port()}"
        if protocol == "anthropic":
            base_url += "/anthropic"
        task = build_task(sc, protocol=protocol, base_url=base_url, api_key=key, client_options=client_options)
        validate_task(task)
        run = await run_driver(cmd, task, steps=len(played), budget_s=sc.budget_s, startup_s=startup_s)
        by_step = _attribute(_entries(server, protocol), len(played))
    result.observations = run.observations
    result.stderr = run.stderr
    if run.started_at:
        result.started_at = run.started_at
    thinking_off = sc.request.reasoning_effort in ("off", "none") or sc.request.purpose == "session-title"
    checks: list[CheckResult] = []
    stopped_at: int | None = None
    for i, step in enumerate(played):
        if i < len(run.observations):
            obs = run.observations[i]
            checks += judge_step(i, step, obs, by_step[i], thinking_off=thinking_off, protocol=protocol)
            if obs.get("error") is not None and stopped_at is None:
                stopped_at = i
        elif run.problem is None:
            after = f"step {stopped_at} ended in an error" if stopped_at is not None else "the driver stopped early"
            checks.append(CheckResult(f"step{i}.played", False, unified(
                {f"step {i}": "played"}, {f"step {i}": f"not played: {after}"}, f"step{i}.played"),
                summary=f"step {i} was not played ({after})"))
    if run.problem is not None:
        checks.append(CheckResult("driver", False, unified({"driver": "speaks the protocol and exits 0"},
                                                           {"driver": run.problem}, "driver"), summary=run.problem))
    _verdict(result, checks, run, played_steps=len(played))
    result.seconds = time.monotonic() - started
    return result


def _verdict(result: ClientScenarioResult, checks: list[CheckResult], run: DriverRun, *, played_steps: int) -> None:
    for c in checks:
        result.info += [f"{c.name}: {note}" for note in c.info]
    failed = [c for c in checks if not c.ok]
    if not failed:
        return
    result.status = "fail"
    result.failed = [c.name for c in failed]
    if run.timed_out:
        result.reason = "timeout: " + (run.problem or "")
    else:
        result.reason = "failed: " + ", ".join(result.failed) + "".join(f"; {c.summary}" for c in failed if c.summary)
    lines = [f"# observation, step{i}: {observation_summary(run.observations[i] if i < len(run.observations) else None)}\n"
             for i in range(played_steps)]
    tail = run.stderr.strip()
    if tail and run.problem is not None:
        lines.append("# driver stderr ends with:\n" + "".join(f"#   {line}\n" for line in tail.splitlines()[-15:]))
    result.diff = "".join(c.diff for c in failed) + "".join(lines)


# --- the whole catalogue ---------------------------------------------------------------------------


async def run_client_catalogue(
    scenarios: Sequence[Scenario], cmd: ClientCommand, *, hello: Mapping[str, Any] | None = None,
    protocol: str = "chat", client_options: Mapping[str, str] | None = None, concurrency: int = 4,
    on_result: Callable[[ScenarioResult, int, int], None] | None = None, startup_s: float = STARTUP_S,
) -> list[ClientScenarioResult]:
    """Run `scenarios` (those written for `protocol`) with `cmd`, `concurrency` drivers at a
    time; results come back in catalogue order. `hello` is the driver's description, asked for
    first when not given (`describe_client`, which raises `ClientError`)."""
    info = hello if hello is not None else await describe_client(cmd, startup_s=startup_s)
    chosen = for_protocol(scenarios, protocol)
    gate = asyncio.Semaphore(max(1, concurrency))
    done = 0

    async def one(sc: Scenario) -> ClientScenarioResult:
        nonlocal done
        async with gate:
            try:
                res = await run_client_scenario(sc, cmd, info, protocol=protocol, client_options=client_options,
                                                startup_s=startup_s)
            except Exception as exc:  # noqa: BLE001 - a runner bug must not sink the whole run
                res = ClientScenarioResult(id=sc.id, tags=list(sc.tags), status="fail", title=sc.title, failed=["runner"],
                                           reason=f"runner error: {type(exc).__name__}: {exc}",
                                           diff=unified({"runner": "ok"}, {"runner": f"{type(exc).__name__}: {exc}"}, "runner"))
        done += 1
        if on_result is not None:
            on_result(res, done, len(chosen))
        return res

    return list(await asyncio.gather(*(one(sc) for sc in chosen)))
