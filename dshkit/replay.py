"""`dshkit replay`, and the wire mode of a replay: a session log's recorded model calls served
as DeepSeek SSE by the mock server and parsed by the real `DeepSeekAdapter`.

The replay itself (`ReplayAdapter`, `replay_session`, the comparison with the log) is the
library `dshkit.harness.replay`; it takes the adapter as an injected dependency so that `harness`
never imports the mock server. This module, in the application layer, supplies the wire one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dshkit.harness.llm import HarnessError, jsonio
from dshkit.harness.replay import replay_session as replay_with
from dshkit.harness.replay.compare import ReplayReport

if TYPE_CHECKING:
    from dshkit.harness.replay.entries import SessionScript
    from dshkit.harness.session import Session
    from dshkit.harness.tools.policy import Approver

__all__ = ["register", "replay_session", "wire_adapter"]


@contextlib.asynccontextmanager
async def wire_adapter(
    scripts: Sequence[SessionScript], ready_dir: Path, on_call: Callable[[int, int], None]
) -> AsyncIterator[Any]:
    """A `DeepSeekAdapter` talking to a mock server on loopback that serves `scripts` as SSE;
    `on_call(script, index)` runs when the server starts serving call `index` of
    `scripts[script]`. Both are closed on exit."""
    from dshkit.harness.providers.deepseek import DeepSeekAdapter
    from dshkit.mock_server import MockServer
    from dshkit.mock_server.replay import session_scripts_to_mock

    mocks = session_scripts_to_mock(scripts, ready_dir=ready_dir)
    position = dict(zip((m.name for m in mocks), (i for i, s in enumerate(scripts) if s.entries), strict=True))

    def on_server_event(event: dict[str, Any]) -> None:
        script, step = event.get("script"), event.get("step")
        if event.get("type") == "request" and script in position and isinstance(step, int):
            on_call(position[script], step)

    async with MockServer(*mocks, on_event=on_server_event) as server:
        adapter = DeepSeekAdapter(server.base_url, "sk-dshkit-replay", idle_timeout_s=30)
        try:
            yield adapter
        finally:
            await adapter.aclose()


async def replay_session(
    path: str | Path,
    *,
    wire: bool = False,
    workspace: Path | None = None,
    tools: Literal["logged", "builtin"] = "logged",
    out: Session | None = None,
    approver: Approver | None = None,
    tool_timeout: float | None = None,
) -> tuple[ReplayReport, Session]:
    """`dshkit.harness.replay.replay_session`, with `wire` choosing `wire_adapter` over feeding the
    recorded chunks straight into the loop."""
    return await replay_with(
        path, adapter=wire_adapter if wire else None, workspace=workspace, tools=tools, out=out,
        approver=approver, tool_timeout=tool_timeout,
    )


def _replay_command(args: argparse.Namespace) -> int:
    workspace = Path(args.workspace) if args.workspace else None
    if workspace is not None and not workspace.is_dir():
        print(f"dshkit replay: --workspace {args.workspace} is not a directory", file=sys.stderr)
        return 2
    refusal = _out_refusal(args.session, args.out, overwrite=args.overwrite)
    if refusal is not None:
        print(f"dshkit replay: {refusal}", file=sys.stderr)
        return 2
    from dshkit.harness.tools.policy import terminal_approver

    concealed = None
    if args.tools == "builtin":
        # Built-in tools run real commands: as under `dshkit run`, the API key leaves the
        # environment they inherit and the start-up memory /proc shows them.
        from dshkit.harness.tools.concealment import conceal_from_tools
        from dshkit.run import API_KEY_ENV

        concealed = conceal_from_tools((API_KEY_ENV,), (os.environ.get(API_KEY_ENV),))
    try:
        report, session = asyncio.run(
            replay_session(
                args.session, wire=args.wire, workspace=workspace, tools=args.tools,
                approver=terminal_approver(yes=args.yes), tool_timeout=args.tool_timeout,
            )
        )
    except (HarnessError, OSError) as exc:
        print(f"dshkit replay: {exc}", file=sys.stderr)
        return 2
    finally:
        if concealed is not None:
            concealed.restore()
    if not report.calls:
        ends = ", ".join(report.turn_ends) or "no turn"
        print(
            f"dshkit replay: {args.session} records no model call to replay (turn ends: {ends}; "
            "a run cancelled before the model's first chunk logs none); replay a log with a model call",
            file=sys.stderr,
        )
        return 2
    if args.out:
        from dshkit.harness.session.jsonl import save_session

        try:
            save_session(session, args.out)
        except OSError as exc:
            print(f"dshkit replay: cannot write --out {args.out}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    result = {
        "type": "replay",
        "session": args.session,
        "mode": "wire" if args.wire else "chunks",
        "turns": report.turn_ends,
        "model_calls": report.calls,
        "assistant_messages": len(report.logged_messages),
        "failed_calls": report.logged_failures,
        "messages_equal": report.messages_equal,
        "tool_results_equal": report.results_equal,
        "outcomes_equal": report.outcomes_equal,
    }
    print(jsonio.dumps(result, compact=False))
    diff = report.diff()
    if diff:
        print("\n".join(diff), file=sys.stderr)
        return 1
    return 0


def _out_refusal(session: str, out: str | None, *, overwrite: bool) -> str | None:
    """Why `--out` cannot be written, checked before anything runs; None when it can."""
    if out is None:
        return None
    target = Path(out)  # a directory is refused by the option's type already
    try:
        same = target.exists() and os.path.samefile(session, target)
    except OSError:
        same = False
    if same and not overwrite:
        return (f"--out {out} is the session log being replayed ({session}); writing it would replace "
                "the original: choose another --out, or pass --overwrite to replace it on purpose")
    return None


_REPLAY_EPILOG = """\
examples:
  dshkit replay .dshkit/sessions/ID.jsonl            recorded chunks straight into the agent loop
  dshkit replay SESSION.jsonl --wire                 the same calls as SSE through the mock server
                                                     and the real DeepSeek adapter
  dshkit replay SESSION.jsonl --tools builtin --workspace DIR
                                                     run the real tools again in DIR; a tool result
                                                     that changed shows as a diff (exit 1)
  dshkit replay SESSION.jsonl --out replayed.jsonl && dshkit view replayed.jsonl
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `dshkit replay`."""
    from dshkit.args import output_file, positive_float

    p = sub.add_parser(
        "replay",
        help="re-run a session log's prompts against its recorded model calls",
        description="Replay a session JSONL (ours or upstream DSH's, packed rows and override "
        "sidecars included; plain or zstd-compressed): its user prompts go through the agent loop "
        "again, each model call is answered by the recorded chunks, and the replay is compared with "
        "the log: the assistant messages, the tool results, each turn's outcome and each failed "
        "call's failure code. Exit 0 when they are equal; 1 when not, after printing a unified diff "
        "of each that differs to stderr; 2 on bad input (a log with no model call included).",
        epilog=_REPLAY_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("session", help="the session JSONL (children NAME.N.jsonl and the sidecar are found beside it)")
    p.add_argument("--wire", action="store_true", help="serve the calls as DeepSeek SSE through the mock server and the real adapter")
    p.add_argument("--workspace", help="workspace for builtin tools and hang ready files (default: .)")
    p.add_argument("--tools", choices=("logged", "builtin"), default="logged",
                   help="answer tool calls from the log (default) or run the builtin tools in --workspace")
    p.add_argument("--yes", action="store_true",
                   help="with --tools builtin: approve tool calls that ask (bash); without it a TTY "
                   "asks and no TTY denies, as in dshkit run")
    p.add_argument("--tool-timeout", type=positive_float, default=None, metavar="S",
                   help="with --tools builtin: seconds (> 0) before a read/write/list/grep call is "
                   "abandoned with a TIMEOUT error (default: 30)")
    p.add_argument("--out", type=output_file, help="write the replayed session JSONL here (never the "
                   "replayed log itself, by any path or link, unless --overwrite)")
    p.add_argument("--overwrite", action="store_true",
                   help="allow --out to be the replayed session log itself (replaces the original)")
    p.set_defaults(func=_replay_command)

