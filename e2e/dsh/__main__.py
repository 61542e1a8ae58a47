"""`python -m e2e.dsh`: run the cases, print the report table, exit 1 on any FAIL.

`--faults` runs one case per fault of the mock's catalogue instead and, with `--write FILE`,
rewrites the fault-parity table between the markers in FILE (docs/dsh_parity.md).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from dshkit.mock_server.faults import FAULTS

from . import harnesses
from .cases import CASES, DEPARTURES, IDLE_MS, UNSCRIPTABLE, Case, fault_cases
from .checks import (
    Check,
    check_parity,
    check_readers,
    check_requests,
    check_tool_replay,
    check_wire,
    outcome,
)
from .harnesses import Run, dsh_bin, fresh, run_dsh, run_dshkit

START, END = "<!-- fault-parity:start -->", "<!-- fault-parity:end -->"
DSH_VERSION = "0.1.0-rc.8"


def _both(case: Case, dsh_dir: Path, folder: Path) -> tuple[Run, Run]:
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        dsh = pool.submit(run_dsh, case, dsh_dir, fresh(folder / "dsh"))
        ours = pool.submit(run_dshkit, case, fresh(folder / "dshkit"))
        return dsh.result(), ours.result()


def _end(o: dict[str, Any]) -> str:
    return f"{o['kind']}{' ' + o['code'] if o['code'] else ''}, exit {o['exit']}, {len(o['retries'])} retr{'y' if len(o['retries']) == 1 else 'ies'}"


def run_cases(cases: list[Case], dsh_dir: Path, work: Path, verbose: bool) -> int:
    rows: list[tuple[str, dict[str, Check], Run, Run]] = []
    for case in cases:
        print(f"… {case.name}: {case.what}", file=sys.stderr, flush=True)
        folder = fresh(work / case.name)
        dsh, ours = _both(case, dsh_dir, folder)
        checks = {
            "chunks = wire": check_wire(dsh),
            "requests rebuilt": check_requests(dsh),
            "zstd readers": check_readers(dsh, folder),
            "tool replay": check_tool_replay(dsh, folder),
            "loop parity": check_parity(dsh, ours),
        }
        rows.append((case.name, checks, dsh, ours))
        if verbose:
            print(json.dumps({"case": case.name, "dsh": outcome(dsh), "dshkit": outcome(ours)}), file=sys.stderr)
    names = list(rows[0][1]) if rows else []
    table = [["case", "DSH end", "dshkit end", *names]]
    for name, checks, dsh, ours in rows:
        table.append([name, _end(outcome(dsh)), _end(outcome(ours)),
                      *("—" if checks[n].status == "SKIP" else checks[n].status for n in names)])
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    print(f"DSH {DSH_VERSION} headless vs dshkit serve, stream idle timeout {IDLE_MS} ms\n")
    for i, row in enumerate(table):
        print("| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    print()
    failed = pending = 0
    for name, checks, _, _ in rows:
        for check_name, check in checks.items():
            if check.status == "SKIP":
                continue
            if check.status != "PASS" or check.detail.startswith("known difference"):
                label = check.status if check.status != "PASS" else "NOTE"
                print(f"{label} {name} / {check_name}: {check.detail}")
            failed += check.status == "FAIL"
            pending += check.status == "PENDING"
    total = sum(1 for _, c, _, _ in rows for check in c.values() if check.status != "SKIP")
    print(f"\n{total - failed - pending} passed, {failed} failed, {pending} pending")
    return 1 if failed else 0


def _describe(o: dict[str, Any]) -> str:
    end = o["kind"] + (f" `{o['code']}`" if o["code"] else "")
    retries = o["retries"]
    if retries:
        delays = ", ".join(f"{d:.0f}" if isinstance(d, float) else str(d) for _, d, _ in retries)
        end += f"; {len(retries)} retr{'y' if len(retries) == 1 else 'ies'} ({delays} ms)"
    else:
        end += "; no retry"
    return f"{end}; exit {o['exit']}"


def run_faults(dsh_dir: Path, work: Path, write: Path | None) -> int:
    cases = fault_cases(sorted(FAULTS))
    lines = ["| fault | DSH outcome | dshkit outcome | same |", "|---|---|---|---|"]
    mismatches = 0
    for case in cases:
        print(f"… {case.name}", file=sys.stderr, flush=True)
        dsh, ours = _both(case, dsh_dir, fresh(work / case.name.replace(":", "-")))
        parity = check_parity(dsh, ours)
        departure = DEPARTURES.get(case.what)
        mismatches += parity.status != "PASS" and departure is None
        if parity.status != "PASS" and departure is not None:
            same = f"no, on purpose: {departure}"
        elif parity.status == "PASS":
            same = "yes" + (f" ({parity.detail})" if parity.detail.startswith("known difference") else "")
        else:
            same = "**no**: " + parity.detail.replace("|", "/")
        message = outcome(dsh)["message"]
        dsh_text = _describe(outcome(dsh)) + (f"; “{message}”" if message else "")
        lines.append(f"| `{case.what}` | {dsh_text.replace('|', '/')} | {_describe(outcome(ours))} | {same} |")
    for name, why in sorted(UNSCRIPTABLE.items()):
        lines.append(f"| `{name}` | not run: {why} | — | — |")
    table = "\n".join(lines)
    stamp = f"Generated by `make e2e-dsh-parity` on {datetime.date.today().isoformat()} against DSH {DSH_VERSION}."
    print(table)
    if write is not None:
        text = write.read_text(encoding="utf-8")
        head, _, rest = text.partition(START)
        _, _, tail = rest.partition(END)
        write.write_text(f"{head}{START}\n{stamp}\n\n{table}\n{END}{tail}", encoding="utf-8")
    print(f"\n{len(cases) - mismatches} passed, {mismatches} failed")
    return 1 if mismatches else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e.dsh", description=__doc__)
    parser.add_argument("--dsh-dir", default=".e2e-dsh", type=Path, help="where e2e/dsh/install.sh installed DSH")
    parser.add_argument("--only", action="append", help="run only this case (repeatable)")
    parser.add_argument("--faults", action="store_true", help="one case per fault of the catalogue (the parity table)")
    parser.add_argument("--write", type=Path, help="with --faults: rewrite the table in this markdown file")
    parser.add_argument("--work", type=Path, help="keep every run's files here (default: a temporary folder)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each case's outcomes as JSON")
    parser.add_argument("--serve-arg", action="append", default=[], metavar="ARG",
                        help="one more argument for every `dshkit serve` (repeatable; e.g. --serve-arg=--workers "
                             "--serve-arg=2 runs every case against two worker processes)")
    args = parser.parse_args(argv)
    harnesses.SERVE_ARGS[:] = args.serve_arg
    launcher, _ = dsh_bin(args.dsh_dir.resolve())
    if not launcher.exists():
        print(f"no DSH at {launcher}: run `bash e2e/dsh/install.sh {args.dsh_dir}` (or `make e2e-dsh`)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="dshkit-e2e-dsh-") as tmp:
        work = (args.work or Path(tmp)).resolve()
        if args.faults:
            return run_faults(args.dsh_dir.resolve(), work, args.write)
        cases = [c for c in CASES if not args.only or c.name in args.only]
        return run_cases(cases, args.dsh_dir.resolve(), work, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
