"""Mock server throughput against the honest limit on this machine (loopback only).

The load comes from a small C client (`bench/loadgen.c`, compiled with the system `cc` into
`build/bench/`, rebuilt when its source changes): `--client-threads` epoll threads (2 where the
machine has 2 cores or more), each over its share of the connections, that parse every response
(chunked, Content-Length or to the end of file), count its `data: ` events, check each response
has the events a probe request found, and report the process's CPU time and the busiest
thread's. A Python client capped the old figures (it could not drive more than ~1.4M events/s),
and one C thread came near a full core against the limit at 64 one-request connections; the
bench prints the client's CPU/wall and its busiest thread's for every run, and the first goal
says that thread never saturated a core (`client_thread_cpu_max`; `client_cpu_max` is the whole
process, which may pass 1 with two threads).

The limit is a minimal raw asyncio server that answers every request with the same pre-encoded
stream in ONE `transport.write` (headers, chunked body and terminator together): no framework,
no generation, one `send()`. It serves the very bytes the mock sends for the generated reply.
Contenders (each in its own process):

* `mock generated`: a scripted reply (`repeat_last`), the normal path (fast path: cached);
* `mock raw step`: a `raw` step serving the identical recorded bytes from a file;
* `mock new reply`: the unscripted default reply quoting a message that carries a new number in
  every request, so no response was ever rendered before; `mock default` is the same reply
  with the same message every time (the cached path it is compared with);
* `mock plain path` (`--plain`): the scripted reply through `serve --plain-path`;
* `before generated`, `before new reply` (`--baseline DIR`): those two contenders served from
  another checkout, interleaved with the rest (a before/after within one run);
* `aiohttp floor` (`--floor`): a bare aiohttp app (the mock's runner settings) answering the
  generated reply's headers and bytes: what the framework alone costs per request;
* `aimock` (`--peers`): CopilotKit's aimock (npm `@copilotkit/aimock`, installed into
  `build/bench/peers` with npm on first use) serving a fixture of the same text, on the same
  wire. Where npm or node is missing the bench says so and goes on without it.

Every contender is measured with keep-alive connections (`ka`: one connection per stream,
request after request) and with one request per connection (`close`), at 1, 64 and 512
concurrent streams. Rounds are interleaved (every round runs each mode, level and contender in
turn), so a slow spell of the shared machine hits all of them alike. It prints events per
second, server CPU per stream, p50/p99 time to the first event and the client's CPU share, each
server's peak resident set (the kernel's high-water mark) and how much load added to it, then
the ratios, by events per second and by server CPU per stream (what a core of this machine can
serve, whatever the neighbours on a shared machine take: the goals use it, at 64 streams, one
request per connection); the last line is one JSON object with the figures and each goal as
`{"goal", "ratio", "target", "met"}`.

    python bench/server.py [--chunks 200] [--rounds 3] [--seconds 1] [--surface chat|anthropic]
                           [--plain] [--floor] [--peers] [--modes ka,close] [--levels 1,64,512]
                           [--mock-root DIR] [--baseline DIR] [--client-threads N]
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "bench"
LOADGEN_C = Path(__file__).resolve().parent / "loadgen.c"
AIMOCK = "@copilotkit/aimock@1.43.0"

LIMIT_SERVER = r"""
import asyncio, sys
body = bytes.fromhex(sys.stdin.read())
head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
        b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n")
framed = b"%x\r\n%b\r\n0\r\n\r\n" % (len(body), body)
keep = head + b"Connection: keep-alive\r\n\r\n" + framed
close = head + b"Connection: close\r\n\r\n" + framed

class Limit(asyncio.Protocol):
    def connection_made(self, transport):
        self.t, self.buf = transport, b""
    def data_received(self, data):
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            length, closing = 0, False
            for line in self.buf[:end].split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"connection" and value.strip().lower() == b"close":
                    closing = True
            if len(self.buf) < end + 4 + length:
                return
            self.buf = self.buf[end + 4 + length:]
            if closing:
                self.t.write(close)  # the whole response in one write
                self.t.close()
                return
            self.t.write(keep)

async def main():
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Limit, "127.0.0.1", 0, backlog=4096)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""

FLOOR_SERVER = r"""
import asyncio, json, sys
from aiohttp import web
path, headers = sys.argv[1], json.loads(sys.argv[2])
body = bytes.fromhex(sys.stdin.read())

async def answer(request):
    await request.read()  # the request's body, as any handler must read it
    resp = web.Response(body=body, headers=headers)
    resp.enable_chunked_encoding()
    return resp

async def main():
    app = web.Application()
    app.router.add_post(path, answer)
    # The mock's own runner settings (server.py), so the two differ only in the handler.
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True, auto_decompress=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, reuse_address=True, backlog=1024)
    await site.start()
    print(runner.addresses[0][1], flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""

SURFACES = {
    "chat": ("/chat/completions", {"model": "deepseek-chat"}),
    "anthropic": ("/anthropic/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 100_000,
                                             "thinking": {"type": "disabled"}}),
}
#: aimock serves each wire at the vendor's own path.
AIMOCK_PATHS = {"chat": "/v1/chat/completions", "anthropic": "/v1/messages"}


def loadgen() -> Path:
    """The compiled load generator, built once per version of its source."""
    digest = hashlib.sha256(LOADGEN_C.read_bytes()).hexdigest()[:12]
    exe = BUILD / f"loadgen-{digest}"
    if not exe.exists():
        cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if cc is None:
            sys.exit("bench/server.py needs a C compiler (`cc`) to build its load generator "
                     "(apt-get install gcc)")
        BUILD.mkdir(parents=True, exist_ok=True)
        tmp = exe.with_suffix(".tmp")
        subprocess.run([cc, "-O2", "-pthread", "-o", str(tmp), str(LOADGEN_C)], check=True)
        tmp.replace(exe)
    return exe


def default_client_threads() -> int:
    """Two client threads where there are two cores to run them on, else one (see
    docs/performance.md, "Client threads")."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return 2 if cores >= 2 else 1


def aimock_cli() -> tuple[Path | None, str]:
    """aimock's CLI script (installed with npm on first use), or None and why not."""
    prefix = BUILD / "peers"
    cli = prefix / "node_modules" / "@copilotkit" / "aimock" / "dist" / "cli.js"
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None:
        return None, "aimock not measured: no `node` on this machine (apt-get install nodejs npm)"
    if not cli.exists():
        if npm is None:
            return None, "aimock not measured: no `npm` to install it with (apt-get install npm)"
        prefix.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", AIMOCK],
                              capture_output=True, text=True)
        if done.returncode or not cli.exists():
            return None, f"aimock not measured: `npm install {AIMOCK}` failed: {done.stderr.strip()[-300:]}"
    return cli, ""


def request_bytes(path: str, fields: dict[str, object], text: str, *, close: bool) -> bytes:
    body = json.dumps({**fields, "messages": [{"role": "user", "content": text}], "stream": True}).encode()
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        + ("Connection: close\r\n" if close else "")
        + "\r\n"
    ).encode() + body


def probe(port: int, path: str, fields: dict[str, object], text: str) -> bytes:
    """One streamed response body, read whole (to check a contender and learn its event count)."""
    return probe_response(port, path, fields, text)[1]


#: Headers aiohttp sets itself on every response (the floor's aiohttp sets them too).
FRAMING = {"transfer-encoding", "content-length", "connection", "date", "server"}


def probe_response(port: int, path: str, fields: dict[str, object], text: str) -> tuple[dict[str, str], bytes]:
    """One streamed response: its own headers (not the framing) and its body, read whole."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    body = json.dumps({**fields, "messages": [{"role": "user", "content": text}], "stream": True})
    conn.request("POST", path, body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    if resp.status != 200:
        raise SystemExit(f"probe of port {port}{path} answered {resp.status}: {data[:300]!r}")
    return {k: v for k, v in resp.getheaders() if k.lower() not in FRAMING}, data


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux /proc); 0 where /proc is missing."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """The process's resident set now (`VmRSS`), or the most it ever held (`VmHWM`), in MB
    (Linux /proc); 0 where /proc is missing."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _drain(fd: int) -> None:
    while os.read(fd, 1 << 20):
        pass


@dataclass
class Contender:
    name: str
    proc: subprocess.Popen[str]
    port: int
    path: str
    fields: dict[str, object]
    text: str
    expect: int = 0
    start_mb: float = 0.0
    """Resident set once started and probed, before any load."""
    peak_mb: float = 0.0
    """The most it held resident (the kernel's high-water mark, so a peak in the middle of a
    run counts too)."""


@dataclass
class Tally:
    """One contender in one mode at one level, summed over rounds."""

    events: int = 0
    responses: int = 0
    errors: int = 0
    seconds: float = 0.0
    server_cpu: float = 0.0
    client_cpu: float = 0.0
    busiest_cpu: float = 0.0
    """The CPU of the client's busiest thread in each run, summed (the busiest of each run,
    whichever thread it was: never less than any one thread's share)."""
    busiest_wall: float = 0.0
    ttfb_p50: list[float] = field(default_factory=list)
    ttfb_p99: list[float] = field(default_factory=list)
    rounds: list[float] = field(default_factory=list)
    """Server CPU per stream (µs) in each round on its own: how far one round strays from the
    next is the noise any ratio of these tallies carries."""

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0

    per_stream: int = 0
    """Events in one whole stream: CPU per stream is counted per event received, so streams
    still under way when a run ends count for what they sent (long streams, short runs)."""

    @property
    def us_per_stream(self) -> float:
        if self.per_stream and self.events:
            return 1e6 * self.server_cpu * self.per_stream / self.events
        return 1e6 * self.server_cpu / self.responses if self.responses else math.inf

    @property
    def client_share(self) -> float:
        """The whole client process's CPU / wall (above 1 with more than one thread busy)."""
        return self.client_cpu / self.seconds if self.seconds else 0.0

    @property
    def thread_share(self) -> float:
        """The busiest client thread's CPU / wall: what says whether the client kept up."""
        return self.busiest_cpu / self.busiest_wall if self.busiest_wall else 0.0


def start_limit(body: bytes) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", LIMIT_SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(body.hex())
    proc.stdin.close()
    return proc, int(proc.stdout.readline())


def start_floor(path: str, headers: dict[str, str], body: bytes) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", FLOOR_SERVER, path, json.dumps(headers)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(body.hex())
    proc.stdin.close()
    return proc, int(proc.stdout.readline())


def start_mock(root: Path, *options: str) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "dshkit.mock_server", "serve", "--seed", "1", *options],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=root,
    )
    assert proc.stdout is not None
    ready = json.loads(proc.stdout.readline())
    # Drain the per-request telemetry lines so the server never blocks on a full pipe: in big
    # raw reads (which release the GIL), so this process spends next to nothing on them.
    fd = proc.stdout.fileno()
    threading.Thread(target=lambda: _drain(fd), daemon=True).start()
    return proc, int(ready["port"])


def start_aimock(cli: Path, fixtures: Path, chunk_size: int) -> tuple[subprocess.Popen[str], int]:
    # Quiet (no line per request), so it does not print its port: give it a free one.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    proc = subprocess.Popen(
        ["node", str(cli), "-p", str(port), "-f", str(fixtures), "-c", str(chunk_size), "--log-level", "warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("aimock exited before it listened")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, port
        time.sleep(0.05)  # polling a child's port: no event to wait on
    proc.kill()
    raise SystemExit("aimock did not listen within 30 s")


def run_level(exe: Path, c: Contender, conns: int, seconds: float, close: bool, tmp: Path,
              threads: int) -> dict[str, float]:
    req = tmp / f"req-{abs(hash((c.name, close)))}.http"
    req.write_bytes(request_bytes(c.path, c.fields, c.text, close=close))
    before = cpu_seconds(c.proc.pid)
    done = subprocess.run([str(exe), str(c.port), str(req), str(conns), str(seconds), "0" if close else "1",
                           str(c.expect), str(threads)], capture_output=True, text=True, check=True)
    out: dict[str, float] = json.loads(done.stdout)
    out["server_cpu"] = cpu_seconds(c.proc.pid) - before
    return out


def goal(name: str, ratio: float, target: float, *, at_most: bool = False,
         rounds: list[float] | None = None) -> dict[str, object]:
    """A goal's line of the last JSON line: the ratio over every round (what `met` judges) and,
    for a ratio of two contenders, the same ratio round by round (`rounds`: lowest, median,
    highest, and in how many rounds it alone would have met the target)."""
    met = ratio <= target if at_most else ratio >= target
    out: dict[str, object] = {"goal": name, "ratio": round(ratio, 3), "target": target, "met": bool(met)}
    if rounds:
        ordered = sorted(rounds)
        out["rounds"] = {"min": round(ordered[0], 3), "median": round(statistics.median(ordered), 3),
                         "max": round(ordered[-1], 3),
                         "met_in": sum(1 for r in rounds if (r <= target if at_most else r >= target)),
                         "of": len(rounds)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=200, help="content fragments per stream")
    ap.add_argument("--rounds", type=int, default=3, help="rounds; each runs every contender once per mode and level")
    ap.add_argument("--seconds", type=float, default=1.0, help="seconds per contender, mode, level and round")
    ap.add_argument("--baseline", type=Path, default=None, metavar="DIR",
                    help="also run the cached and new-reply contenders from this checkout (e.g. the commit before a "
                         "change), interleaved with the rest: a before/after measured within one run")
    ap.add_argument("--mock-root", type=Path, default=ROOT,
                    help="checkout whose mock_server to run (e.g. an older one, for a before/after)")
    ap.add_argument("--surface", choices=sorted(SURFACES), default="chat",
                    help="the wire the clients ask (the limit serves that wire's stream)")
    ap.add_argument("--plain", action="store_true",
                    help="also run the mock on its plain reference path (`serve --plain-path`)")
    ap.add_argument("--floor", action="store_true",
                    help="also run a bare aiohttp app answering the mock's headers and bytes (the framework's floor)")
    ap.add_argument("--peers", action="store_true",
                    help=f"also run aimock ({AIMOCK}, installed with npm into build/bench/peers)")
    ap.add_argument("--modes", default="ka,close", help="ka (keep-alive), close (a connection per request)")
    ap.add_argument("--levels", default="1,64,512", help="concurrent streams")
    ap.add_argument("--client-threads", type=int, default=default_client_threads(), metavar="N",
                    help="load generator threads, each an epoll loop over its share of the connections "
                         "(default: 2 on a machine with 2 cores or more, else 1)")
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    levels = [int(x) for x in args.levels.split(",") if x]
    if not set(modes) <= {"ka", "close"}:
        ap.error("--modes takes ka and/or close")
    if args.client_threads < 1:
        ap.error("--client-threads takes 1 or more")

    exe = loadgen()
    path, fields = SURFACES[args.surface]
    text = " ".join(f"w{i}" for i in range(args.chunks))
    # The default reply quotes the message: a new number in it makes every reply new.
    quoted = " ".join(f"w{i}" for i in range(max(1, args.chunks - 8)))
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        (tmp / "gen.json").write_text(json.dumps({"repeat_last": True, "steps": [{"reply": {"content": text}}]}))
        contenders: list[Contender] = []
        try:
            def add(name: str, start: Callable[[], tuple[subprocess.Popen[str], int]], cpath: str = path,
                    cfields: dict[str, object] = fields, ctext: str = "bench") -> Contender:
                proc, port = start()
                c = Contender(name, proc, port, cpath, cfields, ctext)
                contenders.append(c)
                return c

            gen = add("mock generated", lambda: start_mock(args.mock_root, "--script", str(tmp / "gen.json")))
            gen_headers, body = probe_response(gen.port, path, fields, "bench")
            (tmp / "body.sse").write_bytes(body)
            (tmp / "raw.json").write_text(json.dumps(
                {"repeat_last": True, "steps": [{"raw": {"file": str(tmp / "body.sse")}}]}))
            add("limit", lambda: start_limit(body))
            add("mock raw step", lambda: start_mock(args.mock_root, "--script", str(tmp / "raw.json")))
            add("mock default", lambda: start_mock(args.mock_root, "--unscripted", "default"),
                ctext=quoted + " 00000000")
            add("mock new reply", lambda: start_mock(args.mock_root, "--unscripted", "default"),
                ctext=quoted + " @@@@@@@@")
            if args.baseline is not None:
                base = args.baseline
                add("before generated", lambda: start_mock(base, "--script", str(tmp / "gen.json")))
                add("before new reply", lambda: start_mock(base, "--unscripted", "default"), ctext=quoted + " @@@@@@@@")
            if args.floor:
                add("aiohttp floor", lambda: start_floor(path, gen_headers, body))
            if args.plain:
                add("mock plain path", lambda: start_mock(args.mock_root, "--script", str(tmp / "gen.json"),
                                                          "--plain-path"))
            if args.peers:
                cli, why = aimock_cli()
                if cli is None:
                    notes.append(why)
                else:
                    (tmp / "fx").mkdir()
                    (tmp / "fx" / "bench.json").write_text(json.dumps(
                        {"fixtures": [{"match": {"userMessage": "bench"}, "response": {"content": text}}]}))
                    size = max(1, round(len(text) / args.chunks))
                    add("aimock", lambda: start_aimock(cli, tmp / "fx", size), cpath=AIMOCK_PATHS[args.surface])
            for c in contenders:
                sample = probe(c.port, c.path, c.fields, c.text.replace("@@@@@@@@", "ffffffff"))
                c.expect = sample.count(b"data: ")
                c.start_mb = rss_mb(c.proc.pid)
            for n in notes:
                print(n)
            print(f"{gen.expect} events per stream, {len(body)} bytes; {args.rounds} rounds of {args.seconds:g} s "
                  f"per contender, mode and level; surface {args.surface}; cpus={os.cpu_count()}; "
                  f"client {exe.name} with {args.client_threads} thread(s)")
            print("  events per stream: " + ", ".join(f"{c.name} {c.expect}" for c in contenders))
            tallies = {(c.name, m, n): Tally(per_stream=c.expect) for c in contenders for m in modes for n in levels}
            for _ in range(args.rounds):
                for m in modes:
                    for n in levels:
                        for c in contenders:
                            r = run_level(exe, c, n, args.seconds, m == "close", tmp, args.client_threads)
                            t = tallies[c.name, m, n]
                            t.events += int(r["events"])
                            t.responses += int(r["responses"])
                            t.errors += int(r["errors"])
                            t.seconds += r["wall"]
                            t.server_cpu += r["server_cpu"]
                            t.client_cpu += r["cpu"]
                            t.busiest_cpu += r["busiest_cpu"]
                            t.busiest_wall += r["busiest_wall"]
                            t.ttfb_p50.append(r["ttfb_p50_ms"])
                            t.ttfb_p99.append(r["ttfb_p99_ms"])
                            t.rounds.append(Tally(events=int(r["events"]), responses=int(r["responses"]),
                                                  server_cpu=r["server_cpu"], per_stream=c.expect).us_per_stream)
                            c.peak_mb = max(c.peak_mb, rss_mb(c.proc.pid, "VmHWM"))
        finally:
            for c in contenders:
                c.proc.terminate()
                c.proc.wait()

    out: dict[str, object] = {}
    client_max = thread_max = 0.0
    for m in modes:
        for n in levels:
            for c in contenders:
                t = tallies[c.name, m, n]
                client_max = max(client_max, t.client_share)
                thread_max = max(thread_max, t.thread_share)
                print(f"  {m:>5} c={n:<4} {c.name:>15} {t.rate:>11,.0f} events/s {t.us_per_stream:>8.0f} µs CPU/stream"
                      f"  TTFB p50 {sorted(t.ttfb_p50)[len(t.ttfb_p50) // 2]:7.2f} ms p99 {max(t.ttfb_p99):7.2f} ms"
                      f"  client CPU {t.client_share:4.0%} (busiest thread {t.thread_share:4.0%})"
                      + (f"  ERRORS {t.errors}" if t.errors else ""))
    print("  peak RSS MB (growth under load, in MB and in response bodies): " + "   ".join(
        f"{c.name} {c.peak_mb:.1f} (+{c.peak_mb - c.start_mb:.1f}, {(c.peak_mb - c.start_mb) * 2**20 / len(body):.1f}x)"
        for c in contenders))
    names = [c.name for c in contenders]

    def rate_ratio(a: str, b: str, m: str, n: int) -> float:
        rb = tallies[b, m, n].rate
        return tallies[a, m, n].rate / rb if rb else 0.0

    def cpu_ratio(a: str, b: str, m: str, n: int) -> float:
        """How many streams `a` serves per core-second, per stream `b` serves (b's CPU / a's)."""
        ca = tallies[a, m, n].us_per_stream
        return tallies[b, m, n].us_per_stream / ca if ca and math.isfinite(ca) else 0.0

    def cpu_ratio_rounds(a: str, b: str, m: str, n: int) -> list[float]:
        """`cpu_ratio` of each round on its own (the two contenders ran minutes apart at most)."""
        return [rb / ra for ra, rb in zip(tallies[a, m, n].rounds, tallies[b, m, n].rounds, strict=True)
                if ra and math.isfinite(ra) and math.isfinite(rb)]

    pairs = [("mock generated", "limit", "vs_limit"), ("mock raw step", "limit", "raw_vs_limit"),
             ("mock raw step", "mock generated", "raw_vs_generated"),
             ("mock new reply", "mock default", "new_vs_cached")]
    if "before generated" in names:
        pairs += [("mock generated", "before generated", "vs_before"), ("mock new reply", "before new reply", "new_vs_before")]
    if "aiohttp floor" in names:
        pairs += [("aiohttp floor", "limit", "floor_vs_limit"), ("mock generated", "aiohttp floor", "vs_floor")]
    if "mock plain path" in names:
        pairs.append(("mock plain path", "limit", "plain_vs_limit"))
    if "aimock" in names:
        pairs += [("aimock", "limit", "aimock_vs_limit"), ("mock generated", "aimock", "vs_aimock"),
                  ("mock new reply", "aimock", "new_vs_aimock")]
    # Keys without a mode are one request per connection (the method of the figures before
    # this client); `ka_` keys are keep-alive; `cpu_` keys compare server CPU per stream.
    for a, b, key in pairs:
        for m in modes:
            for kind, fn in (("events/s", rate_ratio), ("CPU", cpu_ratio)):
                parts = []
                for n in levels:
                    r = fn(a, b, m, n)
                    parts.append(f"c={n}: {r:.2f}")
                    prefix = ("" if m == "close" else "ka_") + ("cpu_" if fn is cpu_ratio else "")
                    out[f"{prefix}{key}_{n}"] = round(r, 3)
                print(f"ratio {a:>15} / {b:<15} {m:>5} {kind:>8}   " + "   ".join(parts))
    main_mode = "close" if "close" in modes else modes[0]
    for n in levels:
        g = tallies["mock generated", main_mode, n]
        out[f"chunks_per_s_{n}"] = round(g.rate)
        out[f"us_per_stream_{n}"] = round(g.us_per_stream, 1)
        out[f"limit_us_per_stream_{n}"] = round(tallies["limit", main_mode, n].us_per_stream, 1)
        out[f"ttfb_p50_ms_{n}"] = round(sorted(g.ttfb_p50)[len(g.ttfb_p50) // 2], 2)
        out[f"ttfb_p99_ms_{n}"] = round(max(g.ttfb_p99), 2)
        out[f"limit_ttfb_p99_ms_{n}"] = round(max(tallies["limit", main_mode, n].ttfb_p99), 2)
    out["rss_mb"] = round(max(c.peak_mb for c in contenders if c.name.startswith("mock")), 1)
    # What serving the streams added to each server's resident set, in MB and in streams (how
    # many copies of one response body that is): the figure to watch as streams grow long.
    growth = {c.name: max(c.peak_mb - c.start_mb, 0.0) for c in contenders}
    out["rss_growth_mb"] = {name: round(g, 1) for name, g in growth.items()}
    out["rss_growth_streams"] = {name: round(g * 2**20 / len(body), 2) for name, g in growth.items()}
    out["client_cpu_max"] = round(client_max, 3)
    out["client_thread_cpu_max"] = round(thread_max, 3)
    out["client_threads"] = args.client_threads
    out["errors"] = sum(t.errors for t in tallies.values())
    out["surface"] = args.surface
    out["mode"] = main_mode
    if notes:
        out["notes"] = notes
    n = 64 if 64 in levels else levels[-1]
    at = f"{n} streams, {'one request per connection' if main_mode == 'close' else 'keep-alive'}, server CPU per stream"
    goals = [goal("the load generator never saturates a core (its busiest thread's CPU / wall, every run)",
                  thread_max, 0.9, at_most=True)]
    if args.surface == "chat":
        goals.append(goal(f"chat >= 0.35 of the honest limit ({at})", cpu_ratio("mock generated", "limit", main_mode, n), 0.35,
                          rounds=cpu_ratio_rounds("mock generated", "limit", main_mode, n)))
    else:
        goals.append(goal(f"Anthropic surface >= 0.3 of the honest limit ({at})",
                          cpu_ratio("mock generated", "limit", main_mode, n), 0.3,
                          rounds=cpu_ratio_rounds("mock generated", "limit", main_mode, n)))
    if "aimock" in names:
        # aimock renders every response: the fair comparison is the slower of our cached and new replies.
        goals.append(goal(f"{args.surface} ahead of aimock, cached and new replies alike ({at})",
                          min(cpu_ratio("mock generated", "aimock", main_mode, n),
                              cpu_ratio("mock new reply", "aimock", main_mode, n)), 1.0))
    goals.append(goal(f"recorded bytes (raw step) at least as fast as the generated reply ({at})",
                      cpu_ratio("mock raw step", "mock generated", main_mode, n), 1.0,
                      rounds=cpu_ratio_rounds("mock raw step", "mock generated", main_mode, n)))
    goals.append(goal(f"a new reply costs <= 1.3x the cached path ({at}; new / cached)",
                      1 / max(cpu_ratio("mock new reply", "mock default", main_mode, n), 1e-9), 1.3, at_most=True,
                      rounds=[1 / r for r in cpu_ratio_rounds("mock new reply", "mock default", main_mode, n) if r]))
    for g in goals:
        spread = g.get("rounds")
        per_round = (f"; round by round {spread['min']}-{spread['max']}, median {spread['median']}, "
                     f"met in {spread['met_in']} of {spread['of']}") if isinstance(spread, dict) else ""
        print(f"goal: {g['goal']}: {g['ratio']} ({'met' if g['met'] else 'NOT met'}; target {g['target']}{per_round})")
    out["goals"] = goals
    print(json.dumps(out))


if __name__ == "__main__":
    main()
