"""Journal memory for huge replies: peak RSS of `dshkit serve` with and without a byte budget.

Starts `python -m dshkit.mock_server serve` twice, each in its own process, with one script
of `--requests` different replies of `--chunks` content chunks each (the text cut into 4-byte
fragments: 50,000 chunks is about 8 MB on the wire; every reply is different, so no two share
cached bytes). A client reads every stream, one at a time over one connection. The first
server runs without a byte budget (`--journal-bytes all`: only the count limit, the last 100
exchanges, bounds the journal, as before the budget existed); the second with the default
budget (64 MiB). The server's peak resident set size (`/proc/PID/status` VmHWM) is read after
the last stream. Both are run on the plain path (`--plain-path`: one journal write per event,
the journal's own cost shows) and on the fast path (the default: the journal holds a few large
writes per reply). The fast path's stream cache keeps a template only on a key's second request,
so here, where every reply is asked for once, it stays empty and the peaks measure the journal. The last line is one JSON object with every peak in MB and
`budget_vs_count`, the plain path's peak with the budget over its peak without (below 1: the
budget holds memory down).

    python bench/journal.py [--chunks 50000] [--requests 40]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import httpx


def peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def write_script(path: Path, chunks: int, requests: int) -> None:
    steps = [
        {"reply": {"content": f"{i:04d}" + "abcd" * (chunks - 1)},
         "stream": {"split": {"mode": "fixed", "size": 4}}}
        for i in range(requests)
    ]
    path.write_text(json.dumps({"name": "huge", "steps": steps}), encoding="utf-8")


def run(script: Path, budget: str, requests: int, extra: list[str]) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "dshkit.mock_server", "serve", "--script", str(script),
         "--journal-bytes", budget, *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
        total = 0
        body = {"model": "deepseek-v4-flash", "stream": True,
                "messages": [{"role": "user", "content": "tell me everything"}]}
        with httpx.Client(base_url=ready["base_url"], timeout=120,
                          headers={"X-Mock-Session": "huge"}) as c:
            for _ in range(requests):
                with c.stream("POST", "/chat/completions", json=body) as r:
                    r.raise_for_status()
                    total += sum(len(b) for b in r.iter_raw())
        return peak_mb(proc.pid), total
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=50_000, help="content chunks per reply")
    ap.add_argument("--requests", type=int, default=40, help="replies streamed per server")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "huge.json"
        write_script(script, args.chunks, args.requests)
        figures: dict[str, dict[str, float]] = {}
        for path, extra in (("plain", ["--plain-path"]), ("fast", [])):
            before, wire = run(script, "all", args.requests, extra)
            after, _ = run(script, "64MiB", args.requests, extra)
            figures[path] = {"peak_mb_count_only": round(before, 1), "peak_mb_budget": round(after, 1),
                             "budget_vs_count": round(after / before, 3)}
            mb = wire / args.requests / 1e6
            print(f"{path:>5} path: {args.requests} replies of {args.chunks} chunks ({mb:.1f} MB each on "
                  f"the wire): peak RSS {before:.0f} MB with the count limit only, {after:.0f} MB "
                  "with the 64 MiB budget")
    print(json.dumps({
        "bench": "journal",
        "chunks": args.chunks,
        "requests": args.requests,
        "reply_mb": round(mb, 2),
        "budget_vs_count": figures["plain"]["budget_vs_count"],
        **{f"{k}_{path}": v for path, f in figures.items() for k, v in f.items()},
    }))


if __name__ == "__main__":
    main()
