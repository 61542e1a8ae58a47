"""How long the whole test suite takes, as `make test` runs it (goal: under 60 s on 2 cores).

Runs `HYPOTHESIS_PROFILE=ci python -m pytest -n auto --dist loadgroup -q --durations=20` (the
recipe of `make test` with its bytecode cache, less its chromium install step) `--rounds` times in a row, each in a fresh
interpreter, and reads pytest's own summary: the seconds pytest reports for the run, how many
tests passed, failed and were skipped, and the 20 slowest setups, calls and teardowns of the
last round (where the time goes). The wall time of the whole process (interpreter start,
collection in every worker) is reported besides. The machine's load is printed too: on a shared
machine the figures move with it, so compare rounds taken under the same load.

Prints the figures, and as the very last line one JSON object
`{"rounds": ..., "median_s": ..., "median_wall_s": ..., "goal_s": 60, "vs_goal": ..., "passed": ...,
"failed": ..., "skipped": ..., "workers": ..., "load_1m": ...}` where `vs_goal` is the median
wall time over the goal (below 1 meets it).
Run: `python bench/suite.py [--rounds N] [-n WORKERS] [pytest args...]` (a minute or more a round).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GOAL_S = 60.0
SLOWEST = 20

_SUMMARY = re.compile(r"^=*\s*(?P<body>\d+ \w+.*?) in (?P<seconds>[\d.]+)s(?: \([\d:]+\))?\s*=*\s*$")
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)")
_DURATION = re.compile(r"^(?P<seconds>[\d.]+)s (?P<phase>setup|call|teardown)\s+(?P<test>\S+)")


def _parse(out: str) -> dict[str, Any]:
    """pytest's closing line (`N passed, M skipped in S s`) and its `--durations` table."""
    found: dict[str, Any] = {"seconds": None, "counts": {}, "slowest": []}
    for line in out.splitlines():
        summary = _SUMMARY.match(line)
        if summary:
            found["seconds"] = float(summary["seconds"])
            found["counts"] = {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
                               for n, kind in _COUNT.findall(summary["body"])}
        duration = _DURATION.match(line)
        if duration:
            found["slowest"].append((float(duration["seconds"]), duration["phase"], duration["test"]))
    return found


def _round(workers: str, extra: list[str]) -> dict[str, Any]:
    # as `make test`: bytecode cached under .venv/pycache even where PYTHONDONTWRITEBYTECODE is set
    env = {**os.environ, "HYPOTHESIS_PROFILE": "ci", "PYTHONPYCACHEPREFIX": str(ROOT / ".venv" / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    command = [sys.executable, "-m", "pytest", "-n", workers, "--dist", "loadgroup", "-q",
               f"--durations={SLOWEST}", *extra]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    found = _parse(done.stdout)
    if found["seconds"] is None:
        sys.exit(f"bench/suite.py: pytest printed no summary line (exit {done.returncode}):\n"
                 f"{done.stdout[-3000:]}{done.stderr[-3000:]}")
    found["wall"] = wall
    found["exit"] = done.returncode
    return found


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="how many whole runs (default 1)")
    parser.add_argument("-n", dest="workers", default="auto", help="pytest-xdist workers (default auto)")
    args, extra = parser.parse_known_args(argv)
    rounds = [_round(args.workers, extra) for _ in range(max(1, args.rounds))]
    last = rounds[-1]
    for i, r in enumerate(rounds, 1):
        print(f"round {i}: pytest {r['seconds']:.1f} s, wall {r['wall']:.1f} s, exit {r['exit']}, {r['counts']}")
    print(f"slowest {SLOWEST} of the last round:")
    for seconds, phase, test in last["slowest"]:
        print(f"  {seconds:7.2f} s {phase:8} {test}")
    median_wall = statistics.median(r["wall"] for r in rounds)
    counts = last["counts"]
    result = {
        "rounds": len(rounds),
        "median_s": round(statistics.median(r["seconds"] for r in rounds), 1),
        "median_wall_s": round(median_wall, 1),
        "goal_s": GOAL_S,
        "vs_goal": round(median_wall / GOAL_S, 2),
        "passed": counts.get("passed", 0),
        "failed": counts.get("failed", 0) + counts.get("error", 0),
        "skipped": counts.get("skipped", 0),
        "workers": args.workers,
        "cpus": os.cpu_count(),
        "load_1m": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
