"""How soon `dshkit serve` is ready: from process start to its `ready` line on stdout.

Starts `python -m dshkit serve` (what the `dshkit serve` entry point runs) in a fresh
interpreter `--runs` times, reads the first stdout line (the `ready` JSON line, printed once the
port is bound and the server accepts connections), and stops it with SIGINT. At the moment the
line arrives it reads the child's CPU time (user + system, `/proc/PID/stat`): on a shared
machine the wall time includes waiting for a core, the CPU time does not. Each figure is the
median over the runs; `--with-script` adds a small script file (loading and validating it is
part of getting ready), `--sequence` a plain `--sequence rate_limit,success`.

The modules' bytecode is cached (under .venv/pycache, as `make test` does, even where
PYTHONDONTWRITEBYTECODE is set), and one run not counted comes first: an installed dshkit has
its bytecode, and a start that compiles every module instead measures the compiler (about a
hundred milliseconds of CPU more). `--no-bytecode-cache` measures that start.

The last line is one JSON object: `ready_ms` (wall), `ready_cpu_ms`, the goal (250 ms) and
`ready_vs_goal` (wall over goal; below 1 meets it), `cpu_vs_goal`, and `bytecode_cache`.

    python bench/ready.py [--runs 9] [--with-script | --sequence] [--no-bytecode-cache]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_MS = 250.0
TICK = os.sysconf("SC_CLK_TCK")
ROOT = Path(__file__).resolve().parent.parent


def cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / TICK  # utime, stime


def once(extra: list[str], *, bytecode_cache: bool) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if bytecode_cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(ROOT / ".venv" / "pycache")
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "dshkit", "serve", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        wall = (time.perf_counter() - t0) * 1000
        cpu = cpu_ms(proc.pid)
        if json.loads(line).get("type") != "ready":
            raise RuntimeError(f"expected the ready line, got {line!r}")
        return wall, cpu
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    start = ap.add_mutually_exclusive_group()
    start.add_argument("--with-script", action="store_true", help="start with a small --script file")
    start.add_argument("--sequence", action="store_true", help="start with --sequence rate_limit,success")
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="compile every module at each start (PYTHONDONTWRITEBYTECODE, no cache)")
    args = ap.parse_args()
    cache = not args.no_bytecode_cache
    with tempfile.TemporaryDirectory() as tmp:
        extra: list[str] = []
        if args.with_script:
            script = Path(tmp) / "s.yaml"
            script.write_text("steps:\n  - reply: {content: hi}\n  - rate_limit\n  - success\n")
            extra = ["--script", str(script)]
        elif args.sequence:
            extra = ["--sequence", "rate_limit,success"]
        once(extra, bytecode_cache=cache)  # not counted: writes the bytecode cache, warms the disk cache
        samples = [once(extra, bytecode_cache=cache) for _ in range(args.runs)]
    wall = statistics.median(w for w, _ in samples)
    cpu = statistics.median(c for _, c in samples)
    print(f"dshkit serve ready in {wall:.0f} ms (median of {args.runs}; {cpu:.0f} ms of CPU), goal {GOAL_MS:.0f} ms"
          + ("" if cache else ", every module compiled at each start"))
    print(json.dumps({"bench": "ready", "runs": args.runs, "ready_ms": round(wall, 1),
                      "ready_cpu_ms": round(cpu, 1), "goal_ms": GOAL_MS,
                      "ready_vs_goal": round(wall / GOAL_MS, 3), "cpu_vs_goal": round(cpu / GOAL_MS, 3),
                      "bytecode_cache": cache}))


if __name__ == "__main__":
    main()
