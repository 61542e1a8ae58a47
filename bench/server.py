"""Mock server throughput against the physical limit on this machine (loopback only).

The limit is a minimal raw asyncio server that answers every request with the same pre-encoded
SSE bytes, one `transport.write` per event. The mock server (`python -m mock_server serve`)
answers with a scripted reply it generates and encodes per request (its normal path) and, for
comparison, with a raw step serving the identical bytes. Each server runs in its own process;
this process is the client: raw sockets, one request per connection, counting `data: ` events.
For 1, 64 and 512 concurrent streams it prints chunks per second and the median time to the
first event, then the ratios, and as its last line one JSON object with the chunks/s ratios.

    python bench/server.py [--chunks 200] [--seconds-per-level 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mock_server import Reply, encode_stream

LEVELS = (1, 64, 512)

LIMIT_SERVER = r"""
import asyncio, sys
events = [bytes.fromhex(h) for h in sys.stdin.read().split()]
head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
        b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n")

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
        self.t.write(head)
        for e in events:
            self.t.write(e)
        self.t.close()

async def main():
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Limit, "127.0.0.1", 0, backlog=2048)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


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


async def level(port: int, concurrency: int, budget: float) -> tuple[float, float]:
    """Run batches of `concurrency` streams for about `budget` seconds; (chunks/s, median TTFB)."""
    req = request_bytes(port)
    total = 0
    firsts: list[float] = []
    start = time.perf_counter()
    while True:
        results = await asyncio.gather(*(one_stream(port, req) for _ in range(concurrency)))
        total += sum(r[0] for r in results)
        firsts += [r[1] for r in results]
        if time.perf_counter() - start >= budget:
            break
    return total / (time.perf_counter() - start), statistics.median(firsts)


def start_limit(events: list[bytes]) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", LIMIT_SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(" ".join(e.hex() for e in events))
    proc.stdin.close()
    return proc, int(proc.stdout.readline())


def start_mock(script: Path) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "serve", "--script", str(script), "--seed", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )
    assert proc.stdout is not None
    ready = json.loads(proc.stdout.readline())
    # Drain the per-request telemetry lines so the server never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    return proc, int(ready["port"])


def measure(name: str, port: int, budget: float) -> dict[int, tuple[float, float]]:
    out = {}
    for c in LEVELS:
        out[c] = asyncio.run(level(port, c, budget))
        print(f"  {name:>14} c={c:<4} {out[c][0]:>10,.0f} chunks/s   TTFB p50 {out[c][1] * 1000:7.2f} ms",
              flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=200, help="content fragments per stream")
    ap.add_argument("--seconds-per-level", type=float, default=3.0)
    args = ap.parse_args()

    text = " ".join(f"w{i}" for i in range(args.chunks))
    events = encode_stream(Reply(content=text), thinking=False, seed=1)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "body.sse").write_bytes(b"".join(events))
        (d / "gen.json").write_text(json.dumps(
            {"repeat_last": True, "steps": [{"reply": {"content": text}}]}))
        (d / "raw.json").write_text(json.dumps(
            {"repeat_last": True, "steps": [{"raw": {"file": "body.sse"}}]}))
        print(f"{len(events)} events per stream, {sum(map(len, events))} bytes; "
              f"{args.seconds_per_level:g} s per level; cpus={os.cpu_count()}")
        results = {}
        for name, starter in (
            ("limit", lambda: start_limit(events)),
            ("mock generated", lambda: start_mock(d / "gen.json")),
            ("mock raw step", lambda: start_mock(d / "raw.json")),
        ):
            proc, port = starter()
            try:
                results[name] = measure(name, port, args.seconds_per_level)
            finally:
                proc.terminate()
                proc.wait()
    limit = results["limit"]
    ratios = {}
    for name in ("mock generated", "mock raw step"):
        parts = []
        for c in LEVELS:
            r = results[name][c][0] / limit[c][0]
            parts.append(f"c={c}: {r:.2f}")
            if name == "mock generated":
                ratios[f"vs_limit_{c}"] = round(r, 3)
        print(f"ratio {name:>14} / limit   " + "   ".join(parts))
    print(json.dumps(ratios))


if __name__ == "__main__":
    main()
