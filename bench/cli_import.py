"""Cold start of `dshkit run`: what a fresh interpreter imports before the first request is sent.

`dshkit.cli` imports only the module of the subcommand it runs, and `dshkit run` itself defers
what the first request does not need (the tools' jsonschema and pydantic, the mock server on the
`--base-url` path). Each figure is a median over fresh interpreters, measured round by round in
turn so a busy moment hits every contender alike:

- `base_url`: `dshkit run PROMPT --base-url URL`, stopped at the moment it opens its connection
  (an audit hook on `socket.connect` ends the process there), so everything imported before the
  first request is counted: CLI, harness, adapter, httpx and its transport. The goal is 300 ms.
- `embedded`: the same without `--base-url`, which first starts the embedded mock server (aiohttp,
  the script models) and then connects to it.
- `run_help`: `dshkit run --help`, `top_help`: `dshkit --help` (which lists every command by the
  summary `dshkit.cli` keeps, importing none of them), and `all`: building the parser of every
  subcommand (what the top-level help did before it was lazy).

`*_import_ms` is the total import time `python -X importtime` reports (the sum of the top-level
imports' cumulative times); `*_wall_ms` is the process's wall time up to that point, and
`*_cpu_ms` its CPU time (interpreter start-up included), which does not count the time spent
waiting for a core (other work sharing the machine still slows it, through caches).

Prints the figures, and as the very last line one JSON object with those keys, `goal_ms`,
`base_url_vs_goal` (below 1 meets the goal), each path's import time over `all`'s (steadier
than milliseconds on a shared machine) and `top_help_vs_run_help`, the top-level help's import
time over `dshkit run --help`'s (the goal: at most 1, the top-level help costs no more). Run: `python bench/cli_import.py` (about a minute).
"""

from __future__ import annotations

import json
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 7
GOAL_MS = 300

RUN_HELP = "from dshkit.cli import main\ntry:\n    main(['run', '--help'])\nexcept SystemExit:\n    pass"
TOP_HELP = "from dshkit.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass"
WHOLE = "from dshkit.cli import build_parser\nbuild_parser()"
UNTIL_CONNECT = """\
import os, sys

def _stop_at_first_connection(event, args):
    if event == "socket.connect":
        os._exit(0)  # the first request is about to go out: everything it needed is imported

sys.addaudithook(_stop_at_first_connection)
from dshkit.cli import main
main(sys.argv[1:])
sys.exit("dshkit run ended without opening a connection")
"""


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _import_ms(code: str, *argv: str) -> tuple[float, float, float]:
    """(total import time in ms as -X importtime reports it, wall time of the process in ms,
    CPU time of the process in ms)."""
    cpu = _children_cpu_s()
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", code, *argv], cwd=ROOT,
                            capture_output=True, text=True, check=False, timeout=120)
    wall = (time.perf_counter() - start) * 1000
    cpu = (_children_cpu_s() - cpu) * 1000
    if result.returncode != 0:
        raise SystemExit(f"bench/cli_import.py: the child failed ({result.returncode}): {result.stderr[-2000:]}")
    total_us = 0
    for line in result.stderr.splitlines():
        # "import time: self [us] | cumulative | imported package"; top-level imports are the
        # ones not indented, and their cumulative times add up to the whole.
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|", 2)
            if cumulative.strip().isdigit() and not name.startswith("  "):
                total_us += int(cumulative)
    return total_us / 1000, wall, cpu


def main() -> dict[str, float]:
    samples: dict[str, list[tuple[float, float, float]]] = {k: [] for k in ("base_url", "embedded", "run_help", "top_help", "all")}
    # A listening socket nobody answers: the child stops as it connects, before sending anything.
    with tempfile.TemporaryDirectory() as tmp, socket.create_server(("127.0.0.1", 0)) as listener:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        common = ["run", "hello", "--workspace", tmp, "--api-key", "sk-bench", "--json"]
        for n in range(ROUNDS):  # interleaved, so a busy moment hits every contender alike
            samples["base_url"].append(_import_ms(UNTIL_CONNECT, *common, "--base-url", url,
                                                  "--session", f"{tmp}/b{n}.jsonl"))
            samples["embedded"].append(_import_ms(UNTIL_CONNECT, *common, "--session", f"{tmp}/e{n}.jsonl"))
            samples["run_help"].append(_import_ms(RUN_HELP))
            samples["top_help"].append(_import_ms(TOP_HELP))
            samples["all"].append(_import_ms(WHOLE))
    out: dict[str, float] = {}
    for key, pairs in samples.items():
        out[f"{key}_import_ms"] = round(statistics.median(p[0] for p in pairs), 1)
        out[f"{key}_wall_ms"] = round(statistics.median(p[1] for p in pairs), 1)
        out[f"{key}_cpu_ms"] = round(statistics.median(p[2] for p in pairs), 1)
    out["goal_ms"] = GOAL_MS
    out["base_url_vs_goal"] = round(out["base_url_import_ms"] / GOAL_MS, 2)
    # Ratios against building every subcommand's parser in the same rounds: steadier than the
    # milliseconds when other work shares the machine.
    for key in ("base_url", "embedded", "run_help", "top_help"):
        out[f"{key}_vs_all"] = round(out[f"{key}_import_ms"] / out["all_import_ms"], 2)
    out["top_help_vs_run_help"] = round(out["top_help_import_ms"] / out["run_help_import_ms"], 2)
    return out


if __name__ == "__main__":
    result = main()
    for key, label in [("base_url", "dshkit run --base-url, up to its first connection"),
                       ("embedded", "dshkit run with the embedded mock server, up to its first connection"),
                       ("run_help", "dshkit run --help"), ("top_help", "dshkit --help"),
                       ("all", "every subcommand's module")]:
        print(f"{label}: imports {result[f'{key}_import_ms']} ms (process {result[f'{key}_wall_ms']} ms, "
              f"CPU {result[f'{key}_cpu_ms']} ms)")
    print(f"goal: the --base-url path under {GOAL_MS} ms of imports; dshkit --help no dearer than dshkit run --help")
    print(json.dumps(result))
