"""Mock server throughput against the physical limit on this machine (loopback only).

The limit is a minimal raw asyncio server that answers every request with the same pre-encoded
SSE bytes in ONE `transport.write` per stream (headers and body together): no framework, no
generation, one `send()`. The mock server (`python -m dshkit.mock_server serve`) answers with a
scripted reply it generates and encodes per request (its normal path) and, for comparison, with
a raw step serving the identical bytes. Each server runs in its own process; this process is the
client: raw sockets, one request per connection, counting `data: ` events.

Contenders are interleaved round by round (every round runs each level against each server in
turn), so a slow spell of the shared machine hits all of them alike. For 1, 64 and 512
concurrent streams it prints chunks per second, p50/p99 time to the first event and each
server's peak RSS, then the ratios; the last line is one JSON object with the figures.

    python bench/server.py [--chunks 200] [--rounds 3] [--seconds 1] [--mock-root DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dshkit.mock_server import Reply, encode_stream

ROOT = Path(__file__).resolve().parent.parent

LEVELS = (1, 64, 512)

LIMIT_SERVER = r"""
import asyncio, sys
body = bytes.fromhex(sys.stdin.read())
reply = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
         b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n") + body

class Limit(asyncio.Protocol):
    def connection_made(self, transport):
        self.t, self.buf = transport, b""
    def data_received(self, data):
        self.buf += data
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return
        length = 0
        for line in self.buf[:end].split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if len(self.buf) < end + 4 + length:
            return
        self.buf = b""
        self.t.write(reply)  # the whole stream in one write
        self.t.close()

async def main():
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Limit, "127.0.0.1", 0, backlog=2048)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


@dataclass
class Tally:
    """One contender at one level, summed over rounds."""

    events: int = 0
    seconds: float = 0.0
    firsts: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0

    def ttfb_ms(self, q: float) -> float:
        xs = sorted(self.firsts)
        return 1000 * xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


def request_bytes(port: int) -> bytes:
    body = json.dumps(
        {"model": "deepseek-chat", "messages": [{"role": "user", "content": "bench"}], "stream": True}
    ).encode()
    return (
        f"POST /chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode() + body


async def one_stream(port: int, req: bytes) -> tuple[int, float]:
    """(events received, seconds to the first event) for one request."""
    t0 = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(req)
    events = 0
    first = 0.0
    tail = b""
    while True:
        data = await reader.read(1 << 16)
        if not data:
            break
        n = (tail + data).count(b"data: ")
        if n and not events:
            first = time.perf_counter() - t0
        events += n
        tail = data[-5:]
    writer.close()
    return events, first


async def level(port: int, concurrency: int, budget: float, tally: Tally) -> None:
    """Batches of `concurrency` streams for about `budget` seconds, added to `tally`."""
    req = request_bytes(port)
    start = time.perf_counter()
    while True:
        results = await asyncio.gather(*(one_stream(port, req) for _ in range(concurrency)))
        tally.events += sum(r[0] for r in results)
        tally.firsts += [r[1] for r in results]
        if time.perf_counter() - start >= budget:
            break
    tally.seconds += time.perf_counter() - start


def rss_mb(pid: int) -> float:
    """The process's resident set now (Linux /proc), in MB; 0 where /proc is missing."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def start_limit(body: bytes) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", LIMIT_SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(body.hex())
    proc.stdin.close()
    return proc, int(proc.stdout.readline())


def _drain(fd: int) -> None:
    while os.read(fd, 1 << 20):
        pass


def start_mock(script: Path, root: Path) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "dshkit.mock_server", "serve", "--script", str(script), "--seed", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=root,
    )
    assert proc.stdout is not None
    ready = json.loads(proc.stdout.readline())
    # Drain the per-request telemetry lines so the server never blocks on a full pipe: in big
    # raw reads (which release the GIL), so this client process spends next to nothing on them
    # while it measures.
    fd = proc.stdout.fileno()
    threading.Thread(target=lambda: _drain(fd), daemon=True).start()
    return proc, int(ready["port"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=200, help="content fragments per stream")
    ap.add_argument("--rounds", type=int, default=3, help="rounds; each runs every contender once per level")
    ap.add_argument("--seconds", type=float, default=1.0, help="seconds per contender, level and round")
    ap.add_argument("--mock-root", type=Path, default=ROOT,
                    help="checkout whose mock_server to run (e.g. an older one, for a before/after)")
    args = ap.parse_args()

    text = " ".join(f"w{i}" for i in range(args.chunks))
    events = encode_stream(Reply(content=text), thinking=False, seed=1)
    body = b"".join(events)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "body.sse").write_bytes(body)
        (d / "gen.json").write_text(json.dumps(
            {"repeat_last": True, "steps": [{"reply": {"content": text}}]}))
        (d / "raw.json").write_text(json.dumps(
            {"repeat_last": True, "steps": [{"raw": {"file": str(d / "body.sse")}}]}))
        print(f"{len(events)} events per stream, {len(body)} bytes; {args.rounds} rounds of "
              f"{args.seconds:g} s per contender and level; cpus={os.cpu_count()}")
        starters: dict[str, Callable[[], tuple[subprocess.Popen[str], int]]] = {
            "limit": lambda: start_limit(body),
            "mock generated": lambda: start_mock(d / "gen.json", args.mock_root),
            "mock raw step": lambda: start_mock(d / "raw.json", args.mock_root),
        }
        servers = {name: start() for name, start in starters.items()}
        tallies = {(n, c): Tally() for n in servers for c in LEVELS}
        peak = dict.fromkeys(servers, 0.0)
        try:
            for _ in range(args.rounds):
                for c in LEVELS:
                    for name, (proc, port) in servers.items():
                        asyncio.run(level(port, c, args.seconds, tallies[name, c]))
                        peak[name] = max(peak[name], rss_mb(proc.pid))
        finally:
            for proc, _ in servers.values():
                proc.terminate()
                proc.wait()
    for c in LEVELS:
        for name in servers:
            t = tallies[name, c]
            print(f"  {name:>14} c={c:<4} {t.rate:>10,.0f} chunks/s   TTFB p50 {t.ttfb_ms(0.5):7.2f} ms"
                  f"  p99 {t.ttfb_ms(0.99):7.2f} ms")
    print("  peak RSS MB: " + "   ".join(f"{n} {peak[n]:.1f}" for n in servers))
    out: dict[str, float] = {}
    for name, key in (("mock generated", "vs_limit"), ("mock raw step", "raw_vs_limit")):
        parts = []
        for c in LEVELS:
            r = tallies[name, c].rate / tallies["limit", c].rate
            parts.append(f"c={c}: {r:.2f}")
            out[f"{key}_{c}"] = round(r, 3)
        print(f"ratio {name:>14} / limit   " + "   ".join(parts))
    for c in LEVELS:
        g = tallies["mock generated", c]
        out[f"chunks_per_s_{c}"] = round(g.rate)
        out[f"ttfb_p50_ms_{c}"] = round(g.ttfb_ms(0.5), 2)
        out[f"ttfb_p99_ms_{c}"] = round(g.ttfb_ms(0.99), 2)
        out[f"limit_ttfb_p99_ms_{c}"] = round(tallies["limit", c].ttfb_ms(0.99), 2)
    out["rss_mb"] = round(max(peak["mock generated"], peak["mock raw step"]), 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
