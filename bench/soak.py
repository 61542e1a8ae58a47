"""Soak: does the mock server's memory stay flat over many streamed requests? (loopback only)

Starts `python -m dshkit.mock_server serve` in its own process (no script: every request gets the
generated streamed reply), sends `--streams` streaming requests, `--concurrency` at a time, one
request per connection over raw sockets, and reads the server's resident set size
(`/proc/PID/status` VmRSS) after a warm-up and at the end. The journal keeps bytes for only the
last `--journal-keep` exchanges (the server's default unless given), so the growth should stay
small however many streams pass. The last line is one JSON object: streams, RSS at warm-up and at
the end, the growth in MB, the goal (< 20 MB) and growth/goal (below 1 meets it).

    python bench/soak.py [--streams 10000] [--concurrency 32] [--journal-keep N|all]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

GOAL_MB = 20.0
WARMUP = 500


def rss_mb(pid: int) -> float:
    """The resident set size of process `pid`, in MB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def request_bytes(port: int, n: int) -> bytes:
    body = json.dumps({
        "model": "deepseek-v4-flash",
        "messages": [{"role": "user", "content": f"soak request {n} " + "x" * 200}],
        "stream": True,
    }).encode()
    return (
        f"POST /chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode() + body


async def one_stream(port: int, n: int) -> bool:
    """One streamed request; True when it ended with `data: [DONE]`."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request_bytes(port, n))
    data = await reader.read()
    writer.close()
    return b"data: [DONE]" in data


async def run(port: int, start: int, count: int, concurrency: int) -> int:
    """Send `count` streams, at most `concurrency` at a time; how many completed."""
    done = 0
    for first in range(start, start + count, concurrency):
        batch = range(first, min(first + concurrency, start + count))
        results = await asyncio.gather(*(one_stream(port, n) for n in batch))
        done += sum(results)
    return done


def start_server(keep: str | None) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    extra = ["--journal-keep", keep] if keep is not None else []
    proc = subprocess.Popen(
        [sys.executable, "-m", "dshkit.mock_server", "serve", "--seed", "1", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )
    assert proc.stdout is not None
    ready = json.loads(proc.stdout.readline())
    # Drain the per-request telemetry lines so the server never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    return proc, int(ready["port"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--streams", type=int, default=10_000, help="streams after the warm-up")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--journal-keep", default=None, metavar="N|all",
                    help="passed to `dshkit serve` (default: the server's own default)")
    args = ap.parse_args()

    proc, port = start_server(args.journal_keep)
    try:
        warm = asyncio.run(run(port, 0, WARMUP, args.concurrency))
        before = rss_mb(proc.pid)
        t0 = time.perf_counter()
        done = asyncio.run(run(port, WARMUP, args.streams, args.concurrency))
        seconds = time.perf_counter() - t0
        after = rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait()
    growth = after - before
    print(f"warm-up {warm}/{WARMUP} streams; then {done}/{args.streams} streams in {seconds:.1f} s "
          f"({args.streams / seconds:,.0f}/s); RSS {before:.1f} MB -> {after:.1f} MB "
          f"(+{growth:.1f} MB, {growth * 1024 / args.streams:.2f} KB per stream); "
          f"journal keep: {args.journal_keep or 'default'}")
    print(json.dumps({
        "streams": args.streams,
        "completed": done,
        "rss_warm_mb": round(before, 1),
        "rss_end_mb": round(after, 1),
        "growth_mb": round(growth, 2),
        "goal_mb": GOAL_MB,
        "growth_vs_goal": round(growth / GOAL_MB, 3),
    }))


if __name__ == "__main__":
    main()
