"""`dshkit serve`: run the mock DeepSeek server from a shell.

`register(subparsers)` adds the `serve` subcommand to the root `dshkit` parser (and to
`python -m dshkit.mock_server`). On stdout the command prints one JSON line `{"type": "ready",
"base_url", "port", "seed"}` once the port is bound, then one `request` and one `result` line
per request; diagnostics go to stderr. SIGINT exits 130 and SIGTERM 143, after closing every
open stream, stalled ones included, and printing an end-of-run summary: a `summary` JSON line on
stdout and the same in words on stderr (requests by outcome, scripted steps nobody used,
rejected requests with their reasons).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import select
import signal
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

from dshkit.args import (
    backlog,
    byte_limit,
    non_negative_int,
    output_file,
    port_number,
    positive_float,
)
from dshkit.harness.llm import HarnessError
from dshkit.mock_server.journal import (
    DEFAULT_KEEP,
    DEFAULT_KEEP_BYTES,
    DEFAULT_KEEP_TRIMMED,
    json_line,
)
from dshkit.mock_server.scripts import ScriptError, load_scripts
from dshkit.mock_server.server import MockServer, settle_heap
from dshkit.mock_server.startup import owns_process

__all__ = ["register", "run_serve", "run_summary", "serve_epilog"]

API_KEY_ENV = "DSHKIT_MOCK_API_KEY"


def _weights(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise argparse.ArgumentTypeError(f"expected name=weight, got {item!r}")
        if name in out:
            raise argparse.ArgumentTypeError(f"weight for {name!r} given twice")
        try:
            out[name] = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"weight for {name!r} is not a number: {value!r}") from None
    return out


def _workers(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of worker processes, got {text!r}") from None
    if not 1 <= n <= 256:
        raise argparse.ArgumentTypeError(f"expected 1 to 256 worker processes, got {n}")
    return n


def _keep(text: str) -> int | None:
    if text == "all":
        return None
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count or `all`, got {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"expected a count >= 0 or `all`, got {n}")
    return n


_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000**2, "mb": 1000**2,
          "mib": 1024**2, "g": 1000**3, "gb": 1000**3, "gib": 1024**3}


def _byte_size(text: str) -> int | None:
    """A byte count (`67108864`, `64MiB`, `500MB`, `1GiB`) or `all` (None: no budget)."""
    if text == "all":
        return None
    number = text.strip().rstrip("BbIiKkMmGg")
    unit = text.strip()[len(number):].lower()
    try:
        value = float(number) * _UNITS[unit]
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(
            f"expected a size such as 67108864, 64MiB or 500MB, or `all`, got {text!r}"
        ) from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"expected a size >= 0 or `all`, got {text!r}")
    return int(value)


_EXAMPLES = """\
examples:
  dshkit serve                                   generated replies quoting the last user message
  dshkit serve --script weather.yaml --journal j.jsonl
                                                 a scripted session; every exchange journaled
  dshkit serve --sequence rate_limit,success     one 429, then a normal streamed answer
  dshkit serve --sequence random --weights stall=1,success=3 --seed 7
  dshkit serve --replay recordings/readme-walk --speed 0
                                                 a recorded cassette, byte for byte, no waits
  OPENAI_BASE_URL=http://127.0.0.1:PORT python app.py   point a client at the printed base_url

Stop it with Ctrl-C: it prints a summary (requests, unused steps, rejections) and exits 130.
"""


def serve_epilog() -> str:
    """The examples and the fault catalogue, by kind, as `serve --help` prints them."""
    from dshkit.mock_server.faults import FAULTS

    kinds: dict[str, list[str]] = {}
    for name, info in sorted(FAULTS.items()):
        kinds.setdefault(info.kind, []).append(name)
    lines = [_EXAMPLES, "fault names (for --sequence, `- NAME` or `fault: NAME` in a script):"]
    for kind, names in kinds.items():
        lines.append(textwrap.fill(", ".join(names), width=96, initial_indent=f"  {kind + ':':<12}",
                                   subsequent_indent=" " * 14))
    lines.append("  refusal:    connection_refused (only as the first --sequence entry, with an explicit --port)")
    lines.append("What each one does: the fault catalogue in docs/cli.md and docs/mock_server.md.")
    return "\n".join(lines)


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Add the `serve` subcommand; its `func` runs the server and returns the exit code."""
    p = subparsers.add_parser(
        "serve",
        help="run the mock DeepSeek server",
        description="Serve DeepSeek's /chat/completions on loopback with scripted or generated "
        "streams and faults. Prints a `ready` JSON line, then `request`/`result` lines, and a "
        "`summary` line when stopped; GET /metrics answers in the Prometheus text format. Exit status: 130 on Ctrl-C, 143 on SIGTERM, 2 for bad "
        "options or scripts, 1 when the port cannot be bound.",
        epilog=serve_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--script", action="append", default=[], metavar="FILE",
                   help="YAML/JSON script file (repeatable); each new session claims the next")
    p.add_argument("--sequence", metavar="a,b,c",
                   help="fault names forming one script, e.g. rate_limit,success "
                   "(`connection_refused` first: refuse connections for --listen-delay-ms)")
    p.add_argument("--repeat-last", action="store_true",
                   help="reuse the last step once all are used: of --sequence, and of each --script "
                   "(as `repeat_last: true` in the script would)")
    p.add_argument("--unscripted", choices=("error", "default"), default="error",
                   help="what a new session gets when no script is left for it: a 418 "
                   "`mock_no_script` error (default) or the generated default reply")
    p.add_argument("--seed", type=int, default=None, help="seed for ids, splits and random mode")
    p.add_argument("--weights", type=_weights, default=None, metavar="name=w,...",
                   help="weights for `random` steps")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=port_number, default=0, help="port (default 0: any free port)")
    p.add_argument("--api-key",  # None: $API_KEY_ENV, read when the command runs, not when parsed
                   help=f"require `Authorization: Bearer KEY` (default ${API_KEY_ENV})")
    p.add_argument("--journal", type=output_file, metavar="FILE", help="append every exchange to this JSONL file")
    p.add_argument("--journal-keep", type=_keep, default=DEFAULT_KEEP, metavar="N|all",
                   help="keep the bytes, headers and body of only the last N exchanges in memory "
                   f"(default {DEFAULT_KEEP}; older ones keep counts and timings; `all` keeps "
                   "everything); the --journal file always gets every exchange")
    p.add_argument("--journal-bytes", type=_byte_size, default=DEFAULT_KEEP_BYTES, metavar="SIZE|all",
                   help="byte budget of the exchanges kept in memory (bytes written plus request "
                   "bodies; default 64MiB; units B, KB, KiB, MB, MiB, GB, GiB): the oldest are "
                   "trimmed until the rest fit, whatever --journal-keep allows; `all`: no budget")
    p.add_argument("--journal-trimmed", type=_keep, default=DEFAULT_KEEP_TRIMMED, metavar="N|all",
                   help="trimmed exchanges (counts and timings, about 0.5 KB each) kept in memory "
                   f"(default {DEFAULT_KEEP_TRIMMED}); older ones leave it altogether (the --journal "
                   "file has them); `all` keeps them all")
    p.add_argument("--workers", type=_workers, default=1, metavar="N",
                   help="serve from N processes on one port (SO_REUSEPORT; default 1); scripted "
                   "sessions still get their steps in order, whichever process a request reaches "
                   "(see docs/mock_server.md, \"Workers\")")
    p.add_argument("--idle-timeout", type=positive_float, default=60.0, metavar="SECONDS",
                   help="close a connection that sends no complete request head within this "
                   "time of opening or of its last response; 408 for a body this slow (default 60)")
    p.add_argument("--backlog", type=backlog, default=1024,
                   help="listen backlog: connections queued before they are accepted (default 1024)")
    p.add_argument("--era", choices=("v4", "v3.2"), default="v4", help="stream and limit shapes")
    p.add_argument("--anthropic-envelope", choices=("evidence", "deepseek", "anthropic"),
                   default="evidence",
                   help="error body of the Anthropic surface (/anthropic/v1/messages): evidence "
                   "(default; 4xx but 429 in DeepSeek's OpenAI-style envelope, as recorded, 429 and "
                   "5xx in Anthropic's), deepseek (OpenAI-style for all) or anthropic (for all)")
    p.add_argument("--anthropic-unknown-model", choices=("reject", "flash"), default="reject",
                   help="Anthropic surface: a model name that is neither DeepSeek's nor claude* "
                   "gets 400 (newest DeepSeek page, default) or is served by the flash model "
                   "(older pages)")
    p.add_argument("--plain-path", action="store_true",
                   help="serve generated streams through the plain reference path (rendered "
                   "afresh, one write per event, every request read by aiohttp) instead of the "
                   "fast path; clients get the same bytes either way")
    p.add_argument("--max-body-bytes", type=byte_limit, default=16 * 1024 * 1024,
                   help="larger request bodies get 413 (at least 1; default 16 MiB)")
    p.add_argument("--listen-delay-ms", type=non_negative_int, default=None,
                   help="with `connection_refused`: how long to refuse (default 750)")
    p.add_argument("--replay", action="append", default=[], metavar="recordings/NAME",
                   help="serve a cassette byte for byte (or a session JSONL as SSE); repeatable")
    p.add_argument("--speed", type=float, default=None,
                   help="with --replay: scale recorded delays (2 = twice as fast, 0 = no waiting)")
    p.add_argument("--resplit", type=int, default=None, metavar="SEED",
                   help="with --replay: cut the recorded bytes at new seeded boundaries")
    p.add_argument("--match", choices=("sequence", "body"), default="sequence",
                   help="with --replay: answer requests in recorded order (default) or by equal body")
    p.add_argument("--no-admin", action="store_true",
                   help="turn off the admin HTTP API (off with --workers too; under /_dshkit/ on the same port, loopback "
                   "clients only: load scripts, reset sessions, read the journal and per-step "
                   "counts; see docs/admin_api.md)")
    p.set_defaults(func=run_serve)


_pending: list[str] = []
_flush_due = False
"""Whether a `_flush` is scheduled on the loop (the lines in `_pending` wait for it)."""
_atomic_lines = False
"""Set with --workers: several processes share stdout, so lines go out in writes of at most
PIPE_BUF bytes that end at a line's end (a pipe never interleaves such writes)."""


#: `json.dumps` of a str without ASCII escapes, the C function `json_line` uses for every string.
_string = json.encoder.encode_basestring
_SURROGATE = re.compile("[\ud800-\udfff]")
#: The keys of the two per-request events, in the order the handlers write them.
_REQUEST_KEYS = ("type", "seq", "path", "session", "script", "step", "script_behavior", "behavior")
_RESULT_KEYS = ("type", "seq", "session", "script", "step", "behavior", "status", "outcome", "writes", "bytes")


def _event_line(obj: dict[str, Any]) -> str:
    """`json_line(obj)`, the same text, spelled from a template for the `request` and `result`
    events (two a request; `json_line` took about 4 µs for each, most of it setting up the C
    encoder). Any other event, or one whose values are not the plain strings (or None) and
    ints (or None, not bools) the handlers put there, goes through `json_line`. The checks and
    spellings are written out (no call per value), and a line of ASCII, which `str.isascii`
    says at once, holds no lone surrogate."""
    keys = tuple(obj)
    if keys == _RESULT_KEYS:
        _, seq, session, script, step, behavior, status, outcome, writes, size = obj.values()
        if not (type(seq) is int and type(writes) is int and type(size) is int
                and (step is None or type(step) is int) and (status is None or type(status) is int)
                and (session is None or type(session) is str) and (script is None or type(script) is str)
                and (behavior is None or type(behavior) is str) and (outcome is None or type(outcome) is str)):
            return json_line(obj)
        line = (f'{{"type": "result", "seq": {seq}, '
                f'"session": {"null" if session is None else _string(session)}, '
                f'"script": {"null" if script is None else _string(script)}, '
                f'"step": {"null" if step is None else step}, '
                f'"behavior": {"null" if behavior is None else _string(behavior)}, '
                f'"status": {"null" if status is None else status}, '
                f'"outcome": {"null" if outcome is None else _string(outcome)}, '
                f'"writes": {writes}, "bytes": {size}}}')
    elif keys == _REQUEST_KEYS:
        _, seq, path, session, script, step, script_behavior, behavior = obj.values()
        if not (type(seq) is int and (step is None or type(step) is int)
                and (path is None or type(path) is str) and (session is None or type(session) is str)
                and (script is None or type(script) is str)
                and (script_behavior is None or type(script_behavior) is str)
                and (behavior is None or type(behavior) is str)):
            return json_line(obj)
        line = (f'{{"type": "request", "seq": {seq}, '
                f'"path": {"null" if path is None else _string(path)}, '
                f'"session": {"null" if session is None else _string(session)}, '
                f'"script": {"null" if script is None else _string(script)}, '
                f'"step": {"null" if step is None else step}, '
                f'"script_behavior": {"null" if script_behavior is None else _string(script_behavior)}, '
                f'"behavior": {"null" if behavior is None else _string(behavior)}}}')
    else:
        return json_line(obj)
    # A lone surrogate (a header that is not UTF-8) switches the line to ASCII escapes there.
    return line if line.isascii() or not _SURROGATE.search(line) else json_line(obj)


def _print(obj: dict[str, Any]) -> None:
    """One JSON line on stdout. Lines made while the server's loop runs are written and flushed
    together at the end of the loop's current pass (one write for all the requests it handled),
    so a reader still sees each line as soon as the loop turns. Other lines (ready, summary) go
    out at once, after any still pending."""
    global _flush_due
    # json_line: a session id from a header that is not UTF-8 must not cost the event its line.
    line = _event_line(obj) + "\n"
    per_request = obj.get("type") in ("request", "result")
    if per_request and _pending and _flush_due:
        _pending.append(line)  # the flush at the end of this pass of the loop is already due
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None or not per_request:
        _pending.append(line)  # the ready line, the summary: out now, after what came before
        _flush()
        return
    if not _pending:
        _flush_due = True
        loop.call_soon(_flush)
    _pending.append(line)


def _flush() -> None:
    global _flush_due
    _flush_due = False
    if _pending:
        lines = "".join(_pending)
        _pending.clear()
        try:
            if _atomic_lines:
                _write_whole_lines(lines.encode("utf-8", "surrogateescape"))
            else:
                sys.stdout.write(lines)
                sys.stdout.flush()
        except OSError:  # nobody reads stdout any more; serving goes on (as for any telemetry failure)
            pass


def _write_whole_lines(data: bytes) -> None:
    """`data` (whole lines) to stdout in writes of at most PIPE_BUF bytes ending at a newline
    (a longer line goes in one write of its own)."""
    sys.stdout.flush()
    fd = sys.stdout.fileno()
    limit = select_pipe_buf()
    start = 0
    while start < len(data):
        end = start + limit
        if end < len(data):
            cut = data.rfind(b"\n", start, end)
            end = cut + 1 if cut >= start else data.index(b"\n", end) + 1
        view = memoryview(data)[start:end]
        while view:
            view = view[os.write(fd, view):]
        start = end


def select_pipe_buf() -> int:
    """The size up to which a pipe write is atomic (PIPE_BUF, 4096 on Linux)."""
    return int(getattr(select, "PIPE_BUF", 512))


def run_serve(args: argparse.Namespace) -> int:
    """Run until SIGINT (130) or SIGTERM (143); 2 when the options or scripts are invalid."""
    if not args.replay:
        given = [name for name, value in (("--speed", args.speed), ("--resplit", args.resplit)) if value is not None]
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            return _fail(f"{' and '.join(given)} {verb} only with --replay; add --replay recordings/NAME or drop it")
    sequence = [n.strip() for n in (args.sequence or "").split(",") if n.strip()]
    refuse = bool(sequence) and sequence[0] == "connection_refused"
    if "connection_refused" in sequence[1:]:
        return _fail("`connection_refused` is allowed only as the first --sequence entry")
    if refuse:
        sequence = sequence[1:]
        if not sequence:
            return _fail("`connection_refused` must be followed by a request behaviour")
        if not args.port:
            return _fail("`connection_refused` needs an explicit non-zero --port")
    elif args.listen_delay_ms is not None:
        return _fail("--listen-delay-ms is only allowed with `connection_refused`")
    if args.weights is not None and "random" not in sequence and not args.script:
        return _fail("--weights needs `random` in --sequence (or a script using it)")
    if args.repeat_last and not sequence and not args.script:
        return _fail("--repeat-last applies to the steps of --sequence or --script; add one of them or drop it")
    speed = 1.0 if args.speed is None else args.speed
    if not speed >= 0:
        return _fail("--speed must be >= 0")
    try:
        replayed = []
        if args.replay:  # imported only when used: replay pulls in the harness's session code
            from dshkit.bundled import resolve
            from dshkit.mock_server.replay import replay_scripts

            replayed = [
                s
                for path in args.replay
                for s in replay_scripts(resolve(path), speed=speed, resplit=args.resplit, match=args.match, warn=_warn)
            ]
        # --repeat-last applies to every --script too (as `repeat_last: true` in the file would).
        scripts: list[Any] = (
            [sc.model_copy(update={"repeat_last": True}) for path in args.script for sc in load_scripts(path)]
            if args.repeat_last else list(args.script)
        )
        server = MockServer(
            *scripts,
            *replayed,
            sequence=sequence or None,
            repeat_last=args.repeat_last,
            api_key=(os.environ.get(API_KEY_ENV) if args.api_key is None else args.api_key) or None,
            host=args.host,
            port=args.port,
            seed=args.seed,
            weights=args.weights,
            journal=args.journal,
            era=args.era,
            max_body_bytes=args.max_body_bytes,
            on_event=_print,
            unscripted=args.unscripted,
            anthropic_envelope=args.anthropic_envelope,
            anthropic_unknown_model=args.anthropic_unknown_model,
            idle_timeout=args.idle_timeout,
            backlog=args.backlog,
            journal_keep=args.journal_keep,
            journal_bytes=args.journal_bytes,
            journal_trimmed=args.journal_trimmed,
            fast_path=not args.plain_path,
            # With --workers the script state lives in the parent process, which the admin API of
            # one worker cannot change: the API is off there (docs/admin_api.md).
            admin=not args.no_admin and args.workers == 1,
        )
    except (ScriptError, ValueError, HarnessError) as e:
        return _fail(str(e))
    except OSError as e:  # a file cannot be read (--replay) or created (--journal)
        name = str(e.filename) if e.filename is not None else "?"
        journal = Path(args.journal) if args.journal else None
        if journal is not None and Path(name) in (journal, *journal.parents):
            return _fail(f"--journal {args.journal}: cannot create or open it for writing ({name}: "
                         f"{e.strerror or e}); give a writable file path")
        return _fail(f"cannot open {name}: {e.strerror or e}")
    delay = (args.listen_delay_ms if args.listen_delay_ms is not None else 750) if refuse else 0
    if args.workers > 1:
        if refuse:
            return _fail("`connection_refused` cannot be combined with --workers")
        return _serve_workers(server, args.workers)
    return asyncio.run(_serve(server, delay / 1000))


def _serve_workers(server: MockServer, n: int) -> int:
    global _atomic_lines
    from dshkit.mock_server.workers import run_workers

    if owns_process():
        gc.enable()  # off while `dshkit serve` started (dshkit.cli); each worker's settle_heap turns it on too
    _atomic_lines = True
    code, summary = run_workers(server, n, emit=_print, summarize=run_summary, exit_on_signals=exit_on_signals)
    if summary is None:
        return code
    _print(summary)
    sys.stderr.write(_summary_text(summary))
    return code


def exit_on_signals() -> asyncio.Future[int]:
    """A future that resolves to the exit status of the first SIGINT (130) or SIGTERM (143)."""
    loop = asyncio.get_running_loop()
    stop: asyncio.Future[int] = loop.create_future()

    def request_stop(code: int) -> None:
        if not stop.done():
            stop.set_result(code)

    for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        loop.add_signal_handler(sig, request_stop, code)
    return stop


def _warn(message: str) -> None:
    sys.stderr.write(f"dshkit serve: warning: {message}\n")


def _fail(message: str) -> int:
    sys.stderr.write(f"dshkit serve: {message}\n")
    return 2


async def _serve(server: MockServer, refuse_for: float) -> int:
    stop = exit_on_signals()
    if refuse_for:
        # A bound socket cannot refuse a connection, so refusal is a phase before binding.
        _print({"type": "unavailable", "base_url": f"http://{server.host}:{server._requested_port}",
                "listen_delay_ms": int(refuse_for * 1000)})
        done, _ = await asyncio.wait({stop}, timeout=refuse_for)
        if done:
            return stop.result()
    try:
        await server.start()
    except OSError as e:
        sys.stderr.write(f"dshkit serve: cannot bind {server.host}:{server._requested_port}: {e}\n")
        return 1
    _print({"type": "ready", "base_url": server.base_url, "port": server.port, "seed": server.seed,
            "anthropic_base_url": server.anthropic_base_url,
            **({"admin_url": server.base_url + "/_dshkit/"} if server.admin else {})})
    if owns_process():  # not in a caller's process: its heap and its collector are its own
        settle_heap()  # after the ready line, before the loop handles a request: none waits longer
    try:
        code = await stop
    finally:
        await server.close()
    summary = run_summary(server)
    _print(summary)
    sys.stderr.write(_summary_text(summary))
    return code


def run_summary(server: MockServer) -> dict[str, Any]:
    """What the run did, for the end of `serve`: requests by outcome, scripted steps nobody used,
    and each rejected request with its status and reason (of those the journal still holds:
    `journal.dropped` counts the ones that left it, and their outcomes are in `outcomes`)."""
    entries = server.journal.entries
    outcomes = Counter(str(e.outcome) for e in entries)
    outcomes.update(server.journal.dropped_outcomes())
    rejections = [
        {"seq": e.seq, "status": e.status, "path": e.path,
         "reason": str((e.error or {}).get("message") or e.outcome)}
        for e in entries
        if e.outcome == "rejected"
    ]
    return {
        "type": "summary",
        "requests": outcomes.total(),
        "outcomes": dict(outcomes),
        "unused_steps": server.journal.unused_steps(),
        "rejections": rejections,
        "journal": server.journal.stats(),
    }


def _summary_text(summary: dict[str, Any]) -> str:
    outcomes = ", ".join(f"{n} {k}" for k, n in sorted(summary["outcomes"].items()))
    lines = [f"dshkit serve: {summary['requests']} request(s)" + (f" ({outcomes})" if outcomes else "")]
    unused = summary["unused_steps"]
    lines.append(f"  unused scripted steps: {len(unused)}" + "".join(f"\n    {u}" for u in unused))
    journal = summary["journal"]
    if journal["trimmed"]:
        lines.append(f"  journal: {journal['trimmed']} older exchange(s) trimmed to counts and timings "
                     f"({journal['trimmed_for_bytes']} for the byte budget); {journal['kept_bytes']} "
                     "bytes kept in memory")
    if journal.get("dropped"):
        lines.append(f"  journal: {journal['dropped']} trimmed exchange(s) beyond --journal-trimmed left memory "
                     "(counted above; the --journal file has them)")
    for r in summary["rejections"]:
        lines.append(f"  rejected #{r['seq']} {r['path']} → {r['status']}: {r['reason']}")
    return "\n".join(lines) + "\n"
