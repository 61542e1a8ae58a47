"""`dshkit conformance --client CMD`: the catalogue against client libraries, through drivers.

Each `--client` is described first (its `hello`: name, versions, wires, options), then plays the
scenarios written for its wire; the table, `--json`, `--junit` and the exit status work as for
`--adapter`. With `--matrix-md FILE`, failing behaviours are rerun with each option set the
driver offers and the client × behaviour matrix is written (docs/clients.md); with `--json-dir
DIR` each client's report is kept there and the matrix covers every report in DIR, so slow
clients can run in invocations of their own (`--matrix-scenarios`: only the columns' scenarios).
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

from dshkit.harness.llm import jsonio

from .cli import _fail, _print_results, _run_to_end, select
from .client_matrix import ClientRun, matrix_ids, render_markdown, try_options
from .client_runner import (
    BUNDLED_CLIENTS,
    ClientError,
    ClientScenarioResult,
    describe_client,
    resolve_client,
    run_client_catalogue,
)
from .report import Progress, write_junit
from .runner import ScenarioResult, for_protocol, summarize
from .scenario import ScenarioError, load_catalogue

__all__ = ["parse_client_options", "run_clients"]


def parse_client_options(pairs: list[str]) -> dict[str, str]:
    """`KEY=VALUE` strings as a dict; ValueError names the malformed one."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--client-option {pair!r} must look like KEY=VALUE (e.g. max_retries=0)")
        out[key.strip()] = value
    return out


def _file_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:80] or "client"


def _write(path: Path, run: ClientRun) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(jsonio.dumps(run.to_json(), compact=False, indent=2) + "\n", encoding="utf-8")


class ReportError(Exception):
    """A file in --json-dir that is not a readable client report (exit 2)."""


def _reports(folder: Path) -> list[ClientRun]:
    """Every client report in `folder`, bundled drivers first in their listed order."""
    runs = []
    for f in sorted(folder.glob("*.json")):
        try:
            doc = jsonio.loads(f.read_bytes(), where=str(f))
            if isinstance(doc, dict) and doc.get("client"):
                runs.append(ClientRun.from_json(doc))
        except OSError as e:
            raise ReportError(f"{f}: cannot be read ({e.strerror or e})") from None
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ReportError(f"{f}: not a client report that --client … --json-dir wrote ({e!r:.200}); "
                              "delete it or write it again") from None
    order = list(BUNDLED_CLIENTS)
    return sorted(runs, key=lambda r: (order.index(r.name) if r.name in order else len(order), r.name))


def _render(path: str, runs: list[ClientRun]) -> None:
    command = "dshkit conformance --client NAME … --json-dir DIR --matrix-md FILE"
    Path(path).write_text(render_markdown(runs, date=datetime.date.today().isoformat(), command=command), encoding="utf-8")
    print(f"matrix: {path}", file=sys.stderr)


def _title(run: ClientRun) -> str:
    libs = ", ".join(f"{k} {v}" for k, v in (run.hello.get("libraries") or {}).items())
    return f"client conformance: {run.name} ({libs}; {run.protocol})"


def run_clients(args: argparse.Namespace) -> tuple[int, list[ScenarioResult]]:
    """The `--client` mode of `run_conformance`."""
    if args.adapter or args.server:
        return _fail("--client judges a client library; it cannot be combined with --adapter or --server"), []
    if not args.client:
        if not args.json_dir:
            return _fail("--matrix-md without --client needs --json-dir DIR, the client reports to draw it from"), []
        try:
            saved = _reports(Path(args.json_dir))
        except ReportError as e:
            return _fail(str(e)), []
        if not saved:
            return _fail(f"--json-dir {args.json_dir}: no client report there (write some with --client … --json-dir)"), []
        _render(args.matrix_md, saved)
        return 0, []
    if len(args.client) > 1 and (args.json or args.junit):
        return _fail("--json and --junit take one --client; use --matrix-md FILE for several"), []
    concurrency = 4 if args.concurrency is None else args.concurrency
    if concurrency < 1:
        return _fail("--concurrency must be at least 1"), []
    try:
        options = parse_client_options(args.client_option)
        cmds = [resolve_client(c) for c in args.client]
        catalogue = load_catalogue(args.scenarios)
    except (ClientError, ScenarioError, ValueError) as exc:
        return _fail(str(exc)), []
    runs: list[ClientRun] = []
    everything: list[ScenarioResult] = []
    for cmd in cmds:
        try:
            hello = _run_to_end(describe_client(cmd))
        except ClientError as exc:
            return _fail(str(exc)), everything
        unknown = sorted(set(options) - set(hello.get("options") or {}))
        if unknown:
            offered = ", ".join(hello.get("options") or {}) or "none"
            return _fail(f"client {cmd.name!r} has no option {', '.join(unknown)} (it offers: {offered})"), everything
        protocol = args.protocol or hello["protocols"][0]
        if protocol not in hello["protocols"]:
            return _fail(f"client {cmd.name!r} speaks {', '.join(hello['protocols'])}, not {protocol}"), everything
        wire = for_protocol(catalogue, protocol)
        try:
            scenarios = select(wire, [*args.only, *(matrix_ids(protocol) if args.matrix_scenarios else [])])
        except ValueError as exc:
            return _fail(str(exc)), everything
        progress = Progress()
        results: list[ClientScenarioResult] = _run_to_end(run_client_catalogue(
            scenarios, cmd, hello=hello, protocol=protocol, client_options=options, concurrency=concurrency,
            on_result=progress))
        progress.close()
        run = ClientRun(name=cmd.name, hello=hello, protocol=protocol, results=results, catalogue=len(wire))
        runs.append(run)
        everything += results
        _print_results(results, _title(run), args.verbose)
        if args.matrix_md:
            _run_to_end(try_options(run, cmd, scenarios, concurrency=concurrency))
        if args.json:
            _write(Path(args.json), run)
        if args.json_dir:
            _write(Path(args.json_dir) / f"{_file_name(cmd.name)}.json", run)
        if args.junit:
            write_junit(args.junit, results, name=f"dshkit client conformance: {cmd.name}")
    if args.matrix_md:
        try:
            _render(args.matrix_md, _reports(Path(args.json_dir)) if args.json_dir else runs)
        except ReportError as e:
            return _fail(str(e)), everything
    return (1 if summarize(everything)["fail"] else 0), everything
