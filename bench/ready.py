"""How soon `dshkit serve` is ready: from process start to its `ready` line on stdout.

Starts `python -m dshkit serve` (what the `dshkit serve` entry point runs) in a fresh
interpreter `--runs` times, reads the first stdout line (the `ready` JSON line, printed once the
port is bound and the server accepts connections), and stops it with SIGINT. At the moment the
line arrives it reads the child's CPU time (user + system, `/proc/PID/stat`): on a shared
machine the wall time includes waiting for a core, the CPU time does not. Each figure is the
median over the runs; `--with-script` adds a small script file (loading and validating it is
part of getting ready).

The last line is one JSON object: `ready_ms` (wall), `ready_cpu_ms`, the goal (250 ms) and
`ready_vs_goal` (wall over goal; below 1 meets it), and `cpu_vs_goal`.

    python bench/ready.py [--runs 9] [--with-script]
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


def cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / TICK  # utime, stime


def once(extra: list[str]) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
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
    ap.add_argument("--with-script", action="store_true", help="start with a small --script file")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        extra: list[str] = []
        if args.with_script:
            script = Path(tmp) / "s.yaml"
            script.write_text("steps:\n  - reply: {content: hi}\n  - rate_limit\n  - success\n")
            extra = ["--script", str(script)]
        samples = [once(extra) for _ in range(args.runs)]
    wall = statistics.median(w for w, _ in samples)
    cpu = statistics.median(c for _, c in samples)
    print(f"dshkit serve ready in {wall:.0f} ms (median of {args.runs}; {cpu:.0f} ms of CPU), goal {GOAL_MS:.0f} ms")
    print(json.dumps({"bench": "ready", "runs": args.runs, "ready_ms": round(wall, 1),
                      "ready_cpu_ms": round(cpu, 1), "goal_ms": GOAL_MS,
                      "ready_vs_goal": round(wall / GOAL_MS, 3), "cpu_vs_goal": round(cpu / GOAL_MS, 3)}))


if __name__ == "__main__":
    main()
