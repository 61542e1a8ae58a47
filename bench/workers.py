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
(1.0 is a whole core: wrk shares the machine with the server).

What N workers can give at most depends on the machine, not on the server alone: the server
processes, the state owner and wrk share its cores, and one worker never uses more than one. From
the CPU each of them spends per request (the serving processes' and the owner's from /proc, wrk's
from its rusage), the bench prints the ceiling: `min(N / s, cores / (s + o + c)) × s`, with `s` one
worker's CPU per request on its own, `o` the owner's and `c` wrk's in the N-worker run; and the
ratio as a share of it (`of_ceiling`). On 2 cores, with wrk at 24-26 µs a request against a
worker's 128-134 µs, the ceiling was ×1.66-1.70 on 2026-12-07: the goal of ×1.7 is at or above
what the machine allows with this client (`goal_within_ceiling`), reachable only if two workers
lose nothing to each other, and a cheaper server lowers the ceiling further. The bench runs the
1- and N-worker servers in turn, not interleaved, so a slow spell of a shared host can land on
either (one run gave ×2.10 against a ceiling of ×1.75, a worker then costing 170 µs alone and
134 beside another): compare `of_ceiling` across runs, not one run's ratio. The last line is one
JSON object with every figure and `ratio` (the default reply's). Run: `python bench/workers.py`
(about half a minute).
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
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Run:
    """One measured wrk run against one server."""

    rps: float
    client_share: float
    """wrk's CPU seconds per wall second (1.0: a whole core)."""
    server_us: float
    """The serving processes' CPU per request (µs): the workers', without the owner's."""
    owner_us: float
    """The state owner's CPU per request (µs): 0 with one worker, which is its own owner."""
    client_us: float
    """wrk's CPU per request (µs)."""


def _cpu(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    try:
        found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(p) for p in found]


def wrk(port: int, lua: Path, connections: int, seconds: float, server: int) -> Run:
    """One wrk run against the process `server`, whose CPU (and its workers') is measured."""
    workers = _children(server)
    owner0, served0 = _cpu(server), sum(map(_cpu, workers))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "-s", str(lua), f"http://127.0.0.1:{port}/chat/completions"],
        capture_output=True, text=True, check=False,
    )
    out = done.stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    owner1, served1 = _cpu(server), sum(map(_cpu, workers))
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    count = re.search(r"(\d+) requests in", out)
    if done.returncode != 0 or match is None or count is None or "Non-2xx" in out:
        raise RuntimeError(f"wrk failed (exit {done.returncode}) or got errors:\n{out}{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    n = max(1, int(count.group(1)))
    owner, served = owner1 - owner0, served1 - served0
    if not workers:  # one worker: the process serves and owns
        served, owner = owner, 0.0
    return Run(float(match.group(1)), cpu / seconds, 1e6 * served / n, 1e6 * owner / n, 1e6 * cpu / n)


def measure(workers: int, script: Path | None, lua: Path, args: argparse.Namespace) -> Run:
    proc, port = start(workers, script)
    try:
        wrk(port, lua, args.connections, 1, proc.pid)  # warm-up: caches, connections
        return wrk(port, lua, args.connections, args.seconds, proc.pid)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def ceiling(one: Run, many: Run, workers: int, cores: int) -> float:
    """The most N workers can give over one on this machine, from what a request costs: a worker
    serves at most one core's worth (`1 / server_us`, as one worker does), and the server, its
    owner and the client share `cores` (each request costs the three of them together). The
    client's and the owner's cost per request are the N-worker run's; a worker's is the one
    worker's (what it costs without contention)."""
    per = one.server_us + many.owner_us + many.client_us
    best = min(workers / one.server_us, cores / per)
    return best * one.server_us


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=4)
    args = ap.parse_args()
    if shutil.which("wrk") is None:
        print(json.dumps({"bench": "workers", "skipped": "wrk is not installed (apt-get install wrk)"}))
        return
    cores = os.cpu_count() or 1
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        lua = Path(tmp) / "post.lua"
        lua.write_text(LUA)
        script = Path(tmp) / "bench.yaml"
        script.write_text(SCRIPT)
        for name, s in (("default", None), ("scripted", script)):
            # Each configuration twice, in turn, best of both: a busy moment hits both alike.
            runs = [measure(n, s, lua, args) for _ in range(2) for n in (1, args.workers)]
            one = max(runs[0::2], key=lambda r: r.rps)
            many = max(runs[1::2], key=lambda r: r.rps)
            ratio, top = many.rps / one.rps, ceiling(one, many, args.workers, cores)
            results[name] = {"rps_1": round(one.rps), f"rps_{args.workers}": round(many.rps),
                             "ratio": round(ratio, 3), "ceiling": round(top, 3), "of_ceiling": round(ratio / top, 3),
                             "client_cpu_share": round(max(one.client_share, many.client_share), 3),
                             "server_us_1": round(one.server_us, 1), f"server_us_{args.workers}": round(many.server_us, 1),
                             "owner_us": round(many.owner_us, 1), "client_us": round(many.client_us, 1)}
            print(f"{name:>8}: 1 worker {one.rps:8.0f} req/s, {args.workers} workers {many.rps:8.0f} req/s "
                  f"(×{ratio:.2f}; ×{top:.2f} at most on {cores} cores: {ratio / top:.2f} of it); "
                  f"µs a request: worker {one.server_us:.0f} alone, {many.server_us:.0f} beside another, "
                  f"owner {many.owner_us:.0f}, wrk {many.client_us:.0f}")
    default = results["default"]
    print(json.dumps({"bench": "workers", "workers": args.workers, "connections": args.connections,
                      "cores": cores, "ratio": default["ratio"], "goal": 1.7,
                      "met": default["ratio"] >= 1.7, "goal_within_ceiling": default["ceiling"] >= 1.7, **results}))


if __name__ == "__main__":
    main()
