"""`dshkit conformance`: run the catalogue against an adapter, or the server checks against a URL.

Exit status: 0 when every scenario passed or is not applicable, 1 on any failure, 2 on a usage
error (a bad factory path, an unknown tag, an invalid scenario file).
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import sys
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from dshkit.args import output_file, positive_float, positive_int

from .client_runner import BUNDLED_CLIENTS
from .report import Progress, render_table, write_json, write_junit
from .runner import (
    DEFAULT_ADAPTER,
    DEFAULT_ANTHROPIC_ADAPTER,
    FactoryError,
    ScenarioResult,
    for_protocol,
    load_factory,
    run_catalogue,
    summarize,
)
from .scenario import Scenario, ScenarioError, load_catalogue

__all__ = ["register", "run_conformance", "select"]


_CONFORMANCE_EPILOG = """\
examples:
  dshkit conformance                                 the catalogue against the bundled DeepSeek adapter
  dshkit conformance --adapter mypkg.adapters:make --json mine.json
                                                     your adapter (a factory); a JSON report
  dshkit conformance --only area:tools -v            one area, every failure's diff printed
  dshkit conformance --server http://127.0.0.1:8000 --api-key K
                                                     check an endpoint instead of an adapter
  dshkit conformance --client openai-python         a client library through a bundled driver
  dshkit conformance --client "node my_driver.mjs" --client-option max_retries=0
                                                     your own driver (docs/client_protocol.md)
  dshkit view deepseek.json mine.json                scenario x adapter matrix of two reports
"""


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    p = subparsers.add_parser(
        "conformance",
        help="run the adapter conformance catalogue (or the server checks with --server)",
        description=(
            "Play the scenario catalogue over real HTTP against a provider adapter and judge "
            "translate, assemble, serialize and error mapping. With --server, check a "
            "DeepSeek-compatible endpoint against dshkit's server checklist instead (checks S1-S41 "
            "of DeepSeek's wire behaviour: auth, status codes, SSE framing, chunk shapes, usage, "
            "limits; each check's id and text are in the report). --protocol anthropic does both "
            "on DeepSeek's Anthropic Messages surface: the scenarios written for it against an "
            "Anthropic-protocol adapter, or the AN server checks against an Anthropic base URL "
            "(e.g. https://api.deepseek.com/anthropic). Exit status: 0 all pass or n/a, 1 any "
            "failure, 2 usage error."
        ),
        epilog=_CONFORMANCE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--adapter", default=None, metavar="MOD:FACTORY",
                   help=f"adapter factory, called as factory(base_url, api_key, *, connect_timeout_s, "
                        f"idle_timeout_s); its module is imported from the installed packages or the "
                        f"current directory, and a path or signature that cannot work is a usage error "
                        f"before anything runs (default: {DEFAULT_ADAPTER}; with --protocol anthropic "
                        f"{DEFAULT_ANTHROPIC_ADAPTER})")
    p.add_argument("--client", action="append", default=[], metavar="CMD",
                   help="judge a client library instead of an adapter: a bundled driver ("
                        + ", ".join(BUNDLED_CLIENTS) + ") or a command speaking the client protocol "
                        "(docs/client_protocol.md); repeat for several")
    p.add_argument("--client-option", action="append", default=[], metavar="KEY=VALUE",
                   help="--client: an option the driver documents (e.g. max_retries=0); repeatable")
    p.add_argument("--matrix-md", type=output_file, metavar="FILE",
                   help="--client: also rerun failing behaviours with each option set the drivers offer "
                        "and write the client x behaviour matrix as Markdown (docs/clients.md); without "
                        "--client, write it from the reports in --json-dir")
    p.add_argument("--json-dir", metavar="DIR",
                   help="--client: write each client's JSON report to DIR/<client>.json; --matrix-md then "
                        "covers every client report in DIR")
    p.add_argument("--matrix-scenarios", action="store_true",
                   help="--client: run only the scenarios behind the matrix's columns (for slow clients)")
    p.add_argument("--protocol", choices=["chat", "anthropic"], default=None,
                   help="the wire: Chat Completions (default) or the Anthropic Messages surface "
                        "(with --client: the first wire the driver speaks)")
    p.add_argument("--only", action="append", default=[], metavar="TAG",
                   help="run only scenarios with this tag, id or area (A5, dsh-exact, area:tools, "
                        "tool-split-arguments); repeat to widen")
    p.add_argument("--junit", type=output_file, metavar="FILE", help="write a JUnit XML report")
    p.add_argument("--json", type=output_file, metavar="FILE", help="write the JSON report")
    p.add_argument("--scenarios", action="append", metavar="PATH",
                   help="scenario file or folder instead of the bundled catalogue (repeatable)")
    p.add_argument("--server", metavar="URL", help="check this endpoint against the server checklist "
                   "(S1-S41; with --protocol anthropic the AN checks, given the Anthropic base URL) instead")
    p.add_argument("--api-key", metavar="K", help="API key for --server (default: $DEEPSEEK_API_KEY)")
    p.add_argument("--timeout", type=positive_float, default=30.0, metavar="S",
                   help="--server: seconds to wait for each answer (default: 30); each check gets 4x that")
    p.add_argument("--concurrency", type=positive_int, default=None,
                   help="scenarios in flight at once (default: 16; with --client 4, one driver process each)")
    p.add_argument("-v", "--verbose", action="store_true", help="print every failure's diff and the information notes")
    p.set_defaults(func=_main)


def _fail(message: str) -> int:
    print(f"dshkit conformance: {message}", file=sys.stderr)
    return 2


T = TypeVar("T")
_LEFTOVER_GRACE_S = 1.0


def _run_to_end(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run`, except that tasks still alive at the end get one cancel and a short grace,
    then are left behind with a one-line note. `asyncio.run` waits for them for ever, so an
    adapter that swallows cancellation would keep the process alive after the report is written."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(main)
    finally:
        # The report is out; what the adapter's leftovers raise from here on was already judged.
        noise: list[str] = []
        loop.set_exception_handler(lambda _loop, context: noise.append(str(context.get("message"))))
        leftovers = asyncio.all_tasks(loop)
        for task in leftovers:
            task.cancel()
        if leftovers:
            loop.run_until_complete(asyncio.wait(leftovers, timeout=_LEFTOVER_GRACE_S))
        closing = loop.create_task(loop.shutdown_asyncgens())
        loop.run_until_complete(asyncio.wait({closing}, timeout=_LEFTOVER_GRACE_S))
        stuck = [t for t in leftovers if not t.done()]
        if stuck or not closing.done():
            print(f"dshkit conformance: {len(stuck) or 'some'} adapter task(s) ignored cancellation and "
                  "were left behind at exit", file=sys.stderr)
        loop.close()


def _check_server_url(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return (f"--server {url!r} is not an http(s) URL; give the endpoint's base URL, "
                "e.g. https://api.deepseek.com or http://127.0.0.1:8000")
    return None


def _no_match(sel: str, scenarios: Sequence[Scenario]) -> str:
    """Why `--only sel` selects nothing, with the closest ids, tags and areas suggested."""
    tags = sorted({t for s in scenarios for t in s.tags if not t.startswith("quirk:")})
    areas = sorted({t.removeprefix("area:") for t in tags if t.startswith("area:")})
    words = [*tags, *areas, *(s.id for s in scenarios)]
    near = difflib.get_close_matches(sel, words, n=3, cutoff=0.7)
    hint = f"; did you mean {' or '.join(repr(n) for n in dict.fromkeys(near))}?" if near else ""
    return (f"--only {sel!r} matches no scenario{hint} (give a scenario id, a tag or an area; areas: "
            f"{', '.join(areas)}; tags: {', '.join(t for t in tags if not t.startswith('area:'))})")


def _with_suggestion(message: str, only: Sequence[str], anthropic: bool) -> str:
    """A server-check `--only` error with the closest check ids or areas suggested."""
    from . import anthropic_checks, server_checks

    areas = (anthropic_checks if anthropic else server_checks)._AREAS
    names = sorted(set(areas.values()))
    bad = next((sel for sel in only if sel not in areas and sel.removeprefix("area:") not in names), None)
    if bad is None:
        return message
    words = [*areas, *(f"area:{a}" for a in names)] if bad.startswith("area:") else [*areas, *names]
    near = difflib.get_close_matches(bad, words, n=2, cutoff=0.7)
    if not near:
        return message
    head, _, tail = message.partition(";")
    return f"{head}; did you mean {' or '.join(repr(n) for n in near)}?{tail}"


def select(scenarios: Sequence[Scenario], only: Sequence[str]) -> list[Scenario]:
    """The scenarios matching any of `only` (a tag, an id, an area name); raises ValueError for a
    selector that matches nothing."""
    if not only:
        return list(scenarios)
    out: list[Scenario] = []
    for sel in only:
        hits = [s for s in scenarios if sel in s.tags or sel == s.id or f"area:{sel}" in s.tags]
        if not hits:
            raise ValueError(_no_match(sel, scenarios))
        out += [h for h in hits if h not in out]
    order = {s.id: i for i, s in enumerate(scenarios)}
    return sorted(out, key=lambda s: order[s.id])


_OUTPUTS = (("--json", "json"), ("--junit", "junit"), ("--matrix-md", "matrix_md"))


def _prepare_outputs(args: argparse.Namespace) -> str | None:
    """Make the folders of the report files now, before anything runs: a report path that
    cannot be written must not be found out after the whole catalogue. The problem, or None."""
    for option, attr in _OUTPUTS:
        path = getattr(args, attr, None)
        if not path:
            continue
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return (f"{option} {path}: cannot create its folder ({exc.strerror or exc}); give a "
                    "writable file path")
        if Path(path).is_dir():
            return f"{option} {path}: is a directory; give the path of a file to write"
    return None


def _write_reports(args: argparse.Namespace, results: Sequence[ScenarioResult], *, adapter: str | None,
                   server: str | None, name: str) -> int | None:
    """Write the --json and --junit reports; a located usage error (exit 2) when one cannot be
    written (the results were printed already)."""
    for option, path in (("--json", getattr(args, "json", None)), ("--junit", getattr(args, "junit", None))):
        if not path:
            continue
        try:
            if option == "--json":
                write_json(path, results, adapter=adapter, server=server)
            else:
                write_junit(path, results, name=name)
        except OSError as exc:
            return _fail(f"{option} {path}: cannot write the report ({exc.strerror or exc}); give a "
                         "writable file path")
    return None


def _print_results(results: Sequence[ScenarioResult], title: str, verbose: bool) -> None:
    if verbose:
        for r in results:
            if r.status == "fail" and r.diff:
                print(f"--- {r.id}: {r.title} ({r.reason})" if r.title else f"--- {r.id} ({r.reason})")
                print(r.diff.rstrip("\n"))
            for note in r.info:
                print(f"  info {r.id}: {note}")
    print(render_table(results, title=title))


def run_conformance(args: argparse.Namespace) -> tuple[int, list[ScenarioResult]]:
    """Run what `args` ask for; returns the exit status and the results."""
    problem = _prepare_outputs(args)
    if problem is not None:
        return _fail(problem), []
    if getattr(args, "client", None) or (getattr(args, "matrix_md", None) and not args.adapter and not args.server):
        from .client_cli import run_clients

        return run_clients(args)
    protocol = getattr(args, "protocol", None) or "chat"
    if args.server:
        from .anthropic_checks import run_anthropic_checks, select_anthropic_checks
        from .server_checks import run_server_checks, select_checks

        anthropic = protocol == "anthropic"
        problem = _check_server_url(args.server)
        if problem is None and not args.timeout > 0:
            problem = f"--timeout must be a positive number of seconds, got {args.timeout:g}"
        if problem is not None:
            return _fail(problem), []
        try:
            ids = select_anthropic_checks(args.only) if anthropic else select_checks(args.only)
        except ValueError as exc:
            return _fail(_with_suggestion(str(exc), args.only, anthropic)), []
        progress = Progress()
        if anthropic:
            run = run_anthropic_checks(args.server, args.api_key, ids=ids, on_result=progress, timeout_s=args.timeout)
        else:
            run = run_server_checks(args.server, args.api_key, ids=ids, on_result=progress, timeout_s=args.timeout)
        results = _run_to_end(run)
        progress.close()
        _print_results(results, f"server checks: {args.server}", args.verbose)
        failed = _write_reports(args, results, adapter=None, server=args.server,
                                name=f"dshkit server conformance: {args.server}")
        if failed is not None:
            return failed, results
        return (1 if summarize(results)["fail"] else 0), results
    adapter = args.adapter or (DEFAULT_ANTHROPIC_ADAPTER if protocol == "anthropic" else DEFAULT_ADAPTER)
    args.adapter = adapter
    try:
        factory = load_factory(adapter)
        catalogue = load_catalogue(args.scenarios)
        written = for_protocol(catalogue, protocol)
        scenarios = select(written, args.only)
    except (FactoryError, ScenarioError, ValueError) as exc:
        return _fail(str(exc)), []
    if not catalogue:
        return _fail(f"--scenarios {', '.join(args.scenarios or [])}: no scenario found (a folder is searched "
                     "for *.yaml, *.yml and *.json files); give scenario files or drop --scenarios"), []
    if not written:
        return _fail(f"none of the {len(catalogue)} scenario(s) is written for --protocol {protocol}; "
                     "pick the protocol their `protocols` lists"), []
    concurrency = 16 if args.concurrency is None else args.concurrency
    if concurrency < 1:
        return _fail("--concurrency must be at least 1"), []
    progress = Progress()
    results = _run_to_end(
        run_catalogue(scenarios, factory, concurrency=concurrency, on_result=progress, protocol=protocol)
    )
    progress.close()
    _print_results(results, f"adapter conformance: {args.adapter}", args.verbose)
    failed = _write_reports(args, results, adapter=args.adapter, server=None,
                            name=f"dshkit adapter conformance: {args.adapter}")
    if failed is not None:
        return failed, results
    return (1 if summarize(results)["fail"] else 0), results


def _main(args: argparse.Namespace) -> int:
    code, _ = run_conformance(args)
    return code
