"""`dshkit serve --workers N`: throughput with N processes over one, at 64 streams.

Load comes from `wrk` (the C load generator from the Debian archive: `apt-get install wrk`), so
the client is not the bottleneck: one wrk thread, `--connections` keep-alive connections (64),
each POSTing a streamed chat request and reading the whole SSE reply before the next one, for
`--seconds` per run. Each configuration starts its own `python -m dshkit.mock_server serve` and
is measured after a short warm-up:

- `default`: no script, every request gets the generated reply (the workers share nothing per
  request);
- `scripted`: one `repeat_last` script the session claims, so every request is routed by the
  state owner (one round trip over a Unix socket pair per request).

For each, 1 worker and `--workers` workers (default 2) run in turn; the ratio is requests/s with
N workers over requests/s with one, measured in the same run (goal ≥ 1.7 on 2 cores for the
default reply). wrk's own CPU time over the run's wall time is printed as `client_cpu_share`
(1.0 is a whole core: wrk shares the machine with the server). The last line is one JSON object
with every figure and `ratio` (the default reply's). Run: `python bench/workers.py` (about half a
minute).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

LUA = """
wrk.method = "POST"
wrk.body = '{"model": "deepseek-v4-flash", "stream": true, "messages": [{"role": "user", "content": "say something about the forge"}]}'
wrk.headers["Content-Type"] = "application/json"
"""
SCRIPT = "name: bench\nrepeat_last: true\nsteps:\n  - reply: {content: 'The forge turns YAML recipes into widgets and tests them.'}\n"


def start(workers: int, script: Path | None) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    extra = ["--script", str(script)] if script else []
    proc = subprocess.Popen(
        [sys.executable, "-m", "dshkit.mock_server", "serve", "--workers", str(workers), "--seed", "1", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )
    assert proc.stdout is not None
    ready = json.loads(proc.stdout.readline())
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    return proc, int(ready["port"])


def wrk(port: int, lua: Path, connections: int, seconds: float) -> tuple[float, float]:
    """Requests per second, and wrk's CPU seconds per wall second."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", str(lua), f"http://127.0.0.1:{port}/chat/completions"],
        capture_output=True, text=True, check=False,
    )
    out = done.stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if done.returncode != 0 or match is None or "Non-2xx" in out:
        raise RuntimeError(f"wrk failed (exit {done.returncode}) or got errors:\n{out}{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return float(match.group(1)), cpu / seconds


def measure(workers: int, script: Path | None, lua: Path, args: argparse.Namespace) -> tuple[float, float]:
    proc, port = start(workers, script)
    try:
        wrk(port, lua, args.connections, 1)  # warm-up: caches, connections
        return wrk(port, lua, args.connections, args.seconds)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=4)
    args = ap.parse_args()
    if shutil.which("wrk") is None:
        print(json.dumps({"bench": "workers", "skipped": "wrk is not installed (apt-get install wrk)"}))
        return
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        lua = Path(tmp) / "post.lua"
        lua.write_text(LUA)
        script = Path(tmp) / "bench.yaml"
        script.write_text(SCRIPT)
        for name, s in (("default", None), ("scripted", script)):
            # Each configuration twice, in turn, best of both: a busy moment hits both alike.
            runs = [measure(n, s, lua, args) for _ in range(2) for n in (1, args.workers)]
            one, cpu1 = max(runs[0::2])
            many, cpun = max(runs[1::2])
            results[name] = {"rps_1": round(one), f"rps_{args.workers}": round(many),
                             "ratio": round(many / one, 3), "client_cpu_share": round(max(cpu1, cpun), 3)}
            print(f"{name:>8}: 1 worker {one:8.0f} req/s, {args.workers} workers {many:8.0f} req/s "
                  f"(×{many / one:.2f}); wrk used {max(cpu1, cpun):.2f} of a core")
    print(json.dumps({"bench": "workers", "workers": args.workers, "connections": args.connections,
                      "cores": os.cpu_count(), "ratio": results["default"]["ratio"], "goal": 1.7,
                      "met": results["default"]["ratio"] >= 1.7, **results}))


if __name__ == "__main__":
    main()
