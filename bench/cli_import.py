"""Cold start of `dshkit run`: what importing the command line costs before any work starts.

`dshkit.cli` imports only the module of the subcommand it runs, so `dshkit run --help` loads the
harness (loop, DeepSeek adapter, tools) but not the mock server's recorder, the conformance
catalogue or the HTML view; the whole table is imported only for `dshkit --help`. Each figure is
the median over fresh interpreters of the total import time `python -X importtime` reports for
`main(["run", "--help"])`, and for building the whole parser, measured round by round in turn.

Prints the figures, and as the very last line one JSON object
`{"run_import_ms": ..., "all_import_ms": ..., "run_vs_all": ..., "run_wall_ms": ..., "goal_ms": 300}`.
Run: `python bench/cli_import.py` (a few seconds).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 7
GOAL_MS = 300

RUN_HELP = "from dshkit.cli import main\ntry:\n    main(['run', '--help'])\nexcept SystemExit:\n    pass"
WHOLE = "from dshkit.cli import build_parser\nbuild_parser()"


def _import_ms(code: str) -> tuple[float, float]:
    """(total import time in ms as -X importtime reports it, wall time of the process in ms)."""
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    wall = (time.perf_counter() - start) * 1000
    total_us = 0
    for line in result.stderr.splitlines():
        # "import time: self [us] | cumulative | imported package"; top-level imports are the
        # ones not indented, and their cumulative times add up to the whole.
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|", 2)
            if cumulative.strip().isdigit() and not name.startswith("  "):
                total_us += int(cumulative)
    return total_us / 1000, wall


def main() -> dict[str, float]:
    run, whole, wall = [], [], []
    for _ in range(ROUNDS):  # interleaved, so a busy moment hits both alike
        ms, w = _import_ms(RUN_HELP)
        run.append(ms)
        wall.append(w)
        whole.append(_import_ms(WHOLE)[0])
    return {
        "run_import_ms": round(statistics.median(run), 1),
        "all_import_ms": round(statistics.median(whole), 1),
        "run_vs_all": round(statistics.median(run) / statistics.median(whole), 2),
        "run_wall_ms": round(statistics.median(wall), 1),
        "goal_ms": GOAL_MS,
    }


if __name__ == "__main__":
    out = main()
    print(f"dshkit run --help: imports {out['run_import_ms']} ms (process {out['run_wall_ms']} ms); "
          f"every subcommand's module: {out['all_import_ms']} ms; goal under {GOAL_MS} ms")
    print(json.dumps(out))
