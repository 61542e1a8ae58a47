"""`dshkit run`: one turn of the agent against any DeepSeek-compatible endpoint, shown live.

With no `--base-url` it starts the embedded mock server on loopback, serving the bundled script
of the seed's walk (`harness/data/seed_walk.yaml`): the model reasons, calls `read` on README.md
with its arguments split over several fragments, gets the line-numbered file back and answers.
The session is written as JSONL while it runs and its path printed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import httpx

import dshkit.harness
from dshkit.args import http_url, non_empty, non_negative_int, positive_float, positive_int
from dshkit.harness.llm import Adapter, HarnessError, jsonio
from dshkit.harness.llm.errors import SessionError
from dshkit.harness.llm.retry import RetryPolicy
from dshkit.harness.loop import Agent, AgentOptions
from dshkit.harness.loop.options import AgentEvent, TurnOutcome
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.harness.secrets import scrub_url
from dshkit.harness.session import Session, SessionHeader
from dshkit.harness.session.events import SessionEvent
from dshkit.harness.session.store import DEFAULT_SESSIONS_DIR, SessionStore
from dshkit.harness.tools import ToolRuntime, builtin_tools
from dshkit.harness.tools.blocking import TOOL_TIMEOUT
from dshkit.harness.tools.concealment import conceal_from_tools
from dshkit.harness.tools.policy import terminal_approver
from dshkit.harness.tools.providers import LocalShell

__all__ = ["BUNDLED_SCRIPT", "EXIT_CODES", "register", "run_command"]

BUNDLED_SCRIPT = Path(dshkit.harness.__file__).parent / "data" / "seed_walk.yaml"
BUILTIN_TOOLS = ("read", "write", "list", "grep", "bash")
API_KEY_ENV = "DEEPSEEK_API_KEY"
_SURROGATE = re.compile("[\ud800-\udfff]")
"""Read for the key, then taken out of the environment and blanked from what `/proc` shows of
this process, so no tool can read it (tool output is scrubbed of it too)."""
EXIT_CODES = {"completed": 0, "max-tokens": 1, "error": 1, "blocked": 3, "max-steps": 4, "aborted": 130}
"""`turn/end` reason kind → exit status. As `dsh --profile headless`, only a completed turn
exits 0 (a turn cut by max-tokens is 1); blocked, max-steps and aborted keep statuses of their own."""
PROVIDER = "deepseek-official"
"""The provider name the session log records for the Chat Completions wire: DSH's route name for
its DeepSeek adapter, so a dshkit log and a DSH log of the same call name the same provider."""


class LiveView:
    """Prints the flow of a turn as it happens: a readable view, or one JSON line per event."""

    def __init__(self, out: TextIO, *, as_json: bool, wire: bool = True, max_retries: int | None = None) -> None:
        self.out = out
        self.max_retries = max_retries
        """The run's retry limit, named when a turn ends on a failure the limit gave up on."""
        self._retries = 0  # retries seen in the current step's chain
        self.as_json = as_json
        self.wire = wire and not as_json
        """Also show the wire: requests, HTTP status, step boundaries, fragment and usage counts."""
        self._mode: str | None = None  # what is being streamed: reasoning / text
        self._counts: dict[str, int] = {}
        self.closed = False

    # -- the wire, from httpx event hooks (the adapter's own client) ---------------------------

    async def on_request(self, request: Any) -> None:
        if self.wire and not self.closed:
            self._guarded(lambda: self._wire_line(
                f"→ {request.method} {request.url.path} ({len(request.content)} bytes)"))

    async def on_response(self, response: Any) -> None:
        if self.wire and not self.closed:
            kind = response.headers.get("content-type", "").split(";")[0]
            rid = response.headers.get("x-ds-trace-id") or response.headers.get("x-request-id")
            self._guarded(lambda: self._wire_line(
                f"← HTTP {response.status_code} {kind}" + (f" (request id {rid})" if rid else "")))

    def _guarded(self, show: Any) -> None:
        try:
            show()
        except BrokenPipeError:
            self.closed = True

    def _wire_line(self, text: str) -> None:
        self._end_stream()
        self._line(f"  {text}")

    def _count(self, chunk: Any) -> None:
        kind = chunk["type"]
        if kind == "tool-call-delta" and chunk.get("argumentsDelta"):
            kind = "fragment"
        self._counts[kind] = self._counts.get(kind, 0) + 1
        if kind == "usage":
            self._counts["_in"] = int(chunk["usage"].get("inputTokens") or 0)
            self._counts["_out"] = int(chunk["usage"].get("outputTokens") or 0)
            self._counts["_cached"] = int(chunk["usage"].get("cacheReadTokens") or 0)

    def _call_summary(self, finish: Any) -> str:
        c, self._counts = self._counts, {}
        parts = [f"finish {finish['reason']['kind']}",
                 f"{c.get('reasoning-delta', 0)} reasoning + {c.get('text-delta', 0)} text chunks",
                 f"{c.get('fragment', 0)} argument fragments"]
        if "usage" in c:
            parts.append(f"usage in {c['_in']} / out {c['_out']} / cached {c['_cached']}")
        return "· " + " · ".join(parts)

    def __call__(self, event: AgentEvent) -> None:
        if self.closed:
            return
        try:
            self._show(event)
        except BrokenPipeError:
            self.closed = True  # the reader went away; the run itself goes on and is logged

    def _show(self, event: AgentEvent) -> None:
        if self.as_json:
            data = event.data
            if isinstance(data, SessionEvent):
                from dshkit.harness.session.events import event_to_json

                payload: Any = {"type": "session/event", "event": event_to_json(data)}
            else:
                payload = {"type": event.type, **({k: _plain(v) for k, v in data.items()} if isinstance(data, dict) else {})}
            # A model's text may hold a lone surrogate (`"\ud800"` on the wire): escaped, never a crash.
            self.out.write(jsonio.dumps(payload, compact=False, default=str) + "\n")
            self.out.flush()
            return
        if event.type == "session/event":
            self._session_event(event.data)
        elif event.type == "agent/error":
            self._end_stream()
            failure = event.data["error"]
            self._line(f"! error {failure.code}: {failure.message}")

    def _write(self, text: str) -> None:
        if _SURROGATE.search(text):  # a lone surrogate from the model cannot be printed as UTF-8
            text = _SURROGATE.sub("\ufffd", text)
        self.out.write(text)
        self.out.flush()

    def _line(self, text: str) -> None:
        self._write(text + "\n")

    def _end_stream(self) -> None:
        if self._mode is not None:
            self._write("\n")
            self._mode = None

    def _session_event(self, event: SessionEvent) -> None:
        data = event.data
        kind = event.type
        if kind == "user/message":
            self._end_stream()
            source = data["source"]
            who = "context" if source.get("kind") == "plugin" else "user"
            text = "".join(b.get("text", "") for b in data["content"] if b.get("type") == "text")
            if who == "context":
                self._line(f"· runtime context ({len(text)} chars)")
            else:
                self._line(f"› {text}")
        elif kind == "step/start":
            self._retries = 0
            if not self.wire:
                return
            self._end_stream()
            self._line(f"── step {data['step']} " + "─" * 20)
        elif kind == "assistant/chunk":
            chunk = data["chunk"]
            ctype = chunk["type"]
            if self.wire:
                self._count(chunk)
                if ctype == "finish":
                    self._wire_line(self._call_summary(chunk))
            if ctype in ("reasoning-delta", "text-delta"):
                mode = "reasoning" if ctype == "reasoning-delta" else "text"
                if self._mode != mode:
                    self._end_stream()
                    self._write("thinking: " if mode == "reasoning" else "answer: ")
                    self._mode = mode
                self._write(chunk["text"])
        elif kind == "assistant/message":
            self._end_stream()
            for block in data["message"]["content"]:
                if block["type"] == "tool-call":
                    self._line(f"⚙ {block['name']} {block['arguments']}   [{block['id']}]")
        elif kind == "tool/result":
            self._end_stream()
            block = data["message"]["content"][0]
            text = "".join(b.get("text", "") for b in block["content"] if b.get("type") == "text")
            lines = text.splitlines() or [""]
            mark = "✗" if block.get("isError") else "↳"
            shown = lines[:8] + ([f"… ({len(lines) - 8} more lines)"] if len(lines) > 8 else [])
            self._line(f"{mark} " + "\n  ".join(shown))
        elif kind == "llm/retry":
            self._end_stream()
            self._retries = int(data.get("retry", self._retries + 1))
            failure = data["failure"]
            self._line(f"↻ retry {data['retry']} in {data['delayMs'] / 1000:.1f}s after {failure['code']}: {failure['message']}")
        elif kind == "turn/end":
            self._end_stream()
            reason = data["reason"]
            extra = f" ({reason['error']['code']}: {reason['error']['message']})" if reason["kind"] == "error" else ""
            if reason["kind"] == "max-steps":
                extra = f" (limit {reason['limit']})"
            self._line(f"■ turn {data['turn']} {reason['kind']}{extra}")
            error = reason.get("error") or {}
            if (reason["kind"] == "error" and self.max_retries is not None and self._retries >= self.max_retries
                    and error.get("code") in RetryPolicy().retryable_codes):
                self._line(self.gave_up_message(error))

    def gave_up_message(self, error: dict[str, Any]) -> str:
        """Why a retryable failure ended the turn: the retry limit ran out."""
        limit = self.max_retries
        tried = f"after {self._retries} retr{'y' if self._retries == 1 else 'ies'}"
        return (f"gave up on {error.get('code')} {tried}: the retry limit is {limit} (--max-retries {limit}); "
                "raise --max-retries to keep trying, or fix what the failure says")


DEFAULT_MAX_RETRIES = RetryPolicy().max_retries
"""`run --max-retries` when not given: the harness's default retry policy."""

DEFAULT_PACE_MS = 25
"""Delay between writes of the embedded mock server when the view goes to a terminal, so the
stream is seen arriving (without it the scripted walk appears all at once)."""


def _pace_ms(args: argparse.Namespace, out: TextIO) -> int:
    pace = getattr(args, "pace", None)
    if pace is not None:
        return max(0, int(pace))
    isatty = getattr(out, "isatty", None)
    return DEFAULT_PACE_MS if not args.json and isatty is not None and isatty() else 0


def _paced(sources: list[Any], pace_ms: int) -> list[Any]:
    """The bundled script(s) with `pace_ms` between writes (steps that set a delay keep it)."""
    from dshkit.mock_server import Script
    from dshkit.mock_server.scripts import load_scripts

    scripts: list[Script] = []
    for source in sources:
        scripts.extend([source] if isinstance(source, Script) else load_scripts(source))
    out: list[Any] = []
    for script in scripts:
        steps = [
            step.model_copy(update={"timing": step.timing.model_copy(update={"chunk_delay_ms": pace_ms})})
            if hasattr(step, "timing") and not step.timing.chunk_delay_ms else step
            for step in script.steps
        ]
        out.append(script.model_copy(update={"steps": steps}))
    return out


def _plain(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return {k: getattr(value, k) for k in value.__dataclass_fields__}
    return value


def _open_session(args: argparse.Namespace, workspace: Path) -> tuple[Session, SessionStore, Path]:
    if args.session:
        path = Path(args.session)
        store = SessionStore(path.parent)
        if path.exists():
            return store.open(path), store, path
        header = SessionHeader.new(id=path.name.removesuffix(".jsonl"), cwd=str(workspace))
        session = store.create(header)
        return session, store, store.path_for(header.id)
    store = SessionStore(DEFAULT_SESSIONS_DIR)
    session = store.create(cwd=str(workspace))
    return session, store, store.path_for(session.id)


def _adapter(args: argparse.Namespace, base_url: str, api_key: str, client: httpx.AsyncClient) -> Adapter:
    """The adapter for `--protocol`: Chat Completions (default) or Anthropic Messages, on
    `client` (which carries the timeouts and the live view's hooks)."""
    if getattr(args, "protocol", "chat") == "anthropic":
        from dshkit.harness.providers.anthropic import AnthropicAdapter

        return AnthropicAdapter(base_url, api_key, client=client)
    return DeepSeekAdapter(base_url, api_key, client=client)


async def run_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """The body of `dshkit run`; returns the exit status. `out` defaults to the current
    `sys.stdout` (looked up per call, so redirections and pytest's capture see the view)."""
    out = out if out is not None else sys.stdout
    workspace = Path(args.workspace).resolve()
    if not workspace.is_dir():
        print(f"dshkit run: --workspace {args.workspace} is not a directory", file=sys.stderr)
        return 2
    names = [n.strip() for n in args.tools.split(",") if n.strip()] if args.tools is not None else list(BUILTIN_TOOLS)
    unknown = sorted(set(names) - set(BUILTIN_TOOLS))
    if unknown:
        print(f"dshkit run: unknown tool(s) {', '.join(unknown)}; choose from {', '.join(BUILTIN_TOOLS)}", file=sys.stderr)
        return 2
    if args.base_url is not None and "@" in urlsplit(args.base_url).netloc:
        # httpx would send them as Basic auth in place of the key, and every failure message
        # (shown, and written to the session log) would quote them.
        print(f"dshkit run: --base-url {scrub_url(args.base_url)} carries credentials (user@ or "
              "user:password@); give the API key with --api-key or $DEEPSEEK_API_KEY instead", file=sys.stderr)
        return 2
    async with contextlib.AsyncExitStack() as stack:
        # The key goes to the adapter only: out of the environment tools inherit, and blanked
        # where a tool could still read it (/proc/$PPID/environ and cmdline).
        env_key = os.environ.get(API_KEY_ENV)
        base_url, api_key = args.base_url, args.api_key or env_key
        concealed = conceal_from_tools((API_KEY_ENV,), (args.api_key, env_key))
        stack.callback(concealed.restore)
        if concealed.unreachable is not None:
            print(f"dshkit run: warning: {concealed.unreachable}; a bash tool call could read the API key",
                  file=sys.stderr)
        replay = getattr(args, "replay", None)
        if replay is not None and base_url is not None:
            print("dshkit run: --replay and --base-url exclude each other", file=sys.stderr)
            return 2
        if base_url is None:
            from dshkit.mock_server import MockServer

            sources: list[Any] = [BUNDLED_SCRIPT]
            served = BUNDLED_SCRIPT.name
            if replay is not None:
                from dshkit.mock_server.replay import replay_scripts
                from dshkit.mock_server.scripts import ScriptError

                try:
                    from dshkit.bundled import resolve

                    sources = list(replay_scripts(resolve(replay)))
                except (ScriptError, HarnessError, OSError) as exc:  # a session log too (zstd included)
                    print(f"dshkit run: --replay: {exc}", file=sys.stderr)
                    return 2
                served = f"the recording {replay}"
            pace = _pace_ms(args, out)
            if pace and replay is None:
                sources = _paced(sources, pace)
                served += f", {pace} ms between writes"
            server = await stack.enter_async_context(MockServer(*sources))
            base_url, api_key = server.base_url, api_key or "sk-dshkit-embedded-mock"
            if getattr(args, "protocol", "chat") == "anthropic":
                base_url += "/anthropic"  # the mock's Anthropic Messages surface
            if not args.json:
                print(f"(embedded mock server at {base_url}, serving {served})", file=out)
        if not api_key:
            print("dshkit run: no API key; pass --api-key or set DEEPSEEK_API_KEY", file=sys.stderr)
            return 2
        try:
            session, store, path = _open_session(args, workspace)
        except (HarnessError, OSError) as exc:  # a usage slip, or a --session log that cannot load
            print(f"dshkit run: --session: {exc}", file=sys.stderr)
            return 2
        stack.callback(store.close, session)
        max_retries = getattr(args, "max_retries", DEFAULT_MAX_RETRIES)
        view = LiveView(out, as_json=args.json, max_retries=max_retries)
        # The adapter's usual client, plus hooks so the view shows each request and status line.
        client = httpx.AsyncClient(
            timeout=httpx.Timeout(connect=10, read=args.idle_timeout, write=args.idle_timeout, pool=10),
            event_hooks={"request": [view.on_request], "response": [view.on_response]},
        )
        stack.push_async_callback(client.aclose)
        adapter = _adapter(args, base_url, api_key, client)
        stack.push_async_callback(adapter.aclose)
        tools = ToolRuntime(
            builtin_tools(
                workspace, names=tuple(names), tool_timeout=getattr(args, "tool_timeout", TOOL_TIMEOUT),
                shell=LocalShell(workspace, hide_env=(API_KEY_ENV,)),
            ),
            approver=terminal_approver(yes=args.yes),
            secrets=[api_key, env_key or ""],
        )
        provider = PROVIDER if getattr(args, "protocol", "chat") == "chat" else "deepseek"
        agent = Agent(session, adapter, AgentOptions(model=args.model, provider=provider, max_steps=args.max_steps,
                                                   retry_policy=RetryPolicy(max_retries=max_retries)),
                      tools=tools)
        agent.subscribe(view)
        # A session-log write that fails stops the turn at once: nothing runs unlogged.
        store.on_write_failure = lambda _session, _exc: agent.cancel("session-log-write-failed")
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, agent.cancel)
        try:
            outcome: TurnOutcome = await agent.run(args.prompt)
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
        try:
            store.flush(session)
        except SessionError as exc:  # a write of the session log failed: the run failed
            print(f"dshkit run: {exc}", file=sys.stderr)
            return 1
        if args.json:
            out.write(json.dumps({"type": "done", "reason": outcome.reason, "session": str(path)}) + "\n")
        else:
            print(f"session: {path}", file=out)
        return EXIT_CODES.get(outcome.kind, 1)
    return 1  # pragma: no cover - the stack never swallows


def _run(args: argparse.Namespace) -> int:
    return asyncio.run(run_command(args))


_RUN_EPILOG = """\
examples:
  dshkit run "Read README.md and tell me what the project does."
                                          the seed walk against the embedded mock server
  dshkit run "Fix the failing test" --base-url https://api.deepseek.com --yes
                                          a real model ($DEEPSEEK_API_KEY), tools approved
  dshkit run "Summarise" --replay recordings/readme-walk
                                          a recorded cassette instead of the bundled script
  dshkit run "List files" --json | jq .   one JSON live event per line
  dshkit run "Go on" --session .dshkit/sessions/ID.jsonl   resume a session
  dshkit view .dshkit/sessions/ID.jsonl   then look at the session as one HTML page
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        help="run one turn of the agent, showing the flow live",
        description=(
            "Run one turn against a DeepSeek-compatible endpoint. Without --base-url, the "
            "embedded mock server serves the bundled seed-walk script. Exit status: 0 completed, "
            "1 error or cut by max-tokens (as DSH), 3 blocked, 4 max-steps, 130 aborted, 2 bad usage."
        ),
        epilog=_RUN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("prompt", help="the user's message")
    p.add_argument("--base-url", type=http_url,
                   help="endpoint http(s) base URL (clients append /chat/completions, or /v1/messages "
                   "with --protocol anthropic, e.g. https://api.deepseek.com/anthropic); default: embedded mock")
    p.add_argument("--protocol", choices=["chat", "anthropic"], default="chat",
                   help="the wire: Chat Completions (default) or DeepSeek's Anthropic Messages surface")
    p.add_argument("--api-key", help="API key (default: $DEEPSEEK_API_KEY)")
    p.add_argument("--model", type=non_empty, default="deepseek-v4-flash", help="model id (default: deepseek-v4-flash)")
    p.add_argument("--workspace", default=".", help="root the file tools are confined to (default: .)")
    p.add_argument("--session", help="session JSONL to write, or to resume if it exists (default: ./.dshkit/sessions/<id>.jsonl)")
    p.add_argument("--tools", help=f"comma-separated built-in tools to offer (default: {','.join(BUILTIN_TOOLS)})")
    p.add_argument("--yes", action="store_true", help="approve every tool call that asks (e.g. bash)")
    p.add_argument("--json", action="store_true", help="print one JSON live event per line instead of the human view")
    p.add_argument("--max-steps", type=positive_int, help="end the turn after N steps, N >= 1 (exit 4)")
    p.add_argument("--max-retries", type=non_negative_int, default=DEFAULT_MAX_RETRIES, metavar="N",
                   help=f"retry a retryable failure (rate limit, server error, timeout, transport) at most N "
                   f"times per step, with backoff, before the turn ends with it (exit 1); 0 never retries "
                   f"(default: {DEFAULT_MAX_RETRIES})")
    p.add_argument("--replay", metavar="recordings/NAME",
                   help="serve this cassette (recorded timing) through the embedded mock server "
                   "instead of the bundled script, e.g. recordings/readme-walk")
    p.add_argument("--tool-timeout", type=positive_float, default=TOOL_TIMEOUT, metavar="S",
                   help=f"seconds (> 0) before a read/write/list/grep call is stopped with a TIMEOUT "
                   f"error (default: {TOOL_TIMEOUT:g}; bash has its own timeout argument)")
    p.add_argument("--idle-timeout", type=positive_float, default=300.0,
                   help="seconds (> 0) without bytes before a call times out (default: 300)")
    p.add_argument("--pace", type=non_negative_int, metavar="MS",
                   help=f"ms between the embedded mock server's writes, so the stream is seen arriving "
                   f"(default: {DEFAULT_PACE_MS} on a terminal, 0 otherwise)")
    p.set_defaults(func=_run)
