"""`dshkit serve --workers N`: N server processes on one port, one state owner for the scripts.

The parent process loads the scripts, reserves the port (a socket bound with SO_REUSEPORT that
never listens, so port 0 still picks one free port), then forks N workers. Each worker binds
its own listening socket to that port with SO_REUSEPORT, so the kernel spreads connections over
the workers, and serves requests itself: validation, generation, writing, its own in-memory
journal. What must be one across the workers stays in the parent, the state owner:

- routing: a worker asks the owner which step answers a scripted request (one JSON message
  each way over a Unix socket pair, each framed by its length so no size is too large: the
  session, the request's purpose and the parts of it the steps' matchers read, its body only
  when some step matches on the body or the prompt; and the answer: script, step, how often it
  already answered). The owner runs the one :class:`~dshkit.mock_server.routing.Router`, so
  a session gets its steps in order whichever worker each of its requests lands on, and claims
  stay one per session. A server without scripts never asks: every request gets the generated
  reply, and the workers share nothing per request.
- numbering: journal `seq` numbers (and so trace ids) come from one counter in shared memory,
  so the workers' entries never share a number and merge into one arrival order.

The `--journal` file is appended to by every worker, one whole line per write (O_APPEND), so it
holds every exchange of every worker, in `seq` order within each worker. The `ready` line is
printed once every worker listens; on SIGINT/SIGTERM the owner stops the workers, gathers what
each served and prints one summary (requests, outcomes and rejections of all workers; unused
steps from the owner's router). A worker that dies is reported on stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import os
import signal
import socket
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

from dshkit.mock_server.metrics import Metrics, add_counts
from dshkit.mock_server.routing import Decision, RequestView, Router, purpose_of
from dshkit.mock_server.scripts import ReplySpec, ReplyStep, Step
from dshkit.mock_server.server import MockServer, settle_heap

__all__ = ["RemoteRouter", "SharedCounter", "decision_from_json", "decision_to_json", "run_workers"]


class SharedCounter:
    """A counter in shared memory that forked processes increment under one lock."""

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("fork")
        self._value = ctx.RawValue("Q", 0)
        self._lock = ctx.Lock()

    def __call__(self) -> int:
        """The next number: 1, 2, 3… across every process sharing the counter."""
        with self._lock:
            self._value.value += 1
            return int(self._value.value)


#: A message's length before it on the owner's and the workers' socket pairs: a message is as
#: long as the request it carries (a replayed DSH session sends bodies of hundreds of KB), so no
#: line reader's limit may stand in its way.
_LENGTH = 8


def _frame(msg: dict[str, Any]) -> bytes:
    data = json.dumps(msg).encode()
    return len(data).to_bytes(_LENGTH, "big") + data


def _send(writer: asyncio.StreamWriter, msg: dict[str, Any]) -> None:
    """One message onto a socket pair, now: its length, then its JSON."""
    writer.write(_frame(msg))


class _Outbox:
    """Routing messages onto one socket pair, coalesced: what is sent in one pass of the event
    loop goes out in one write when the pass ends, so many requests cost the other side one
    wake-up and one read, not one each. Each side matches answers by number, so a message sent
    at once (`_send`) may overtake these."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._pending: list[bytes] = []

    def send(self, msg: dict[str, Any]) -> None:
        self._pending.append(_frame(msg))
        if len(self._pending) == 1:
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        data = b"".join(self._pending)
        self._pending.clear()
        if data and not self._writer.is_closing():
            self._writer.write(data)


async def _receive(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message from a socket pair, whatever its size; None at its end."""
    try:
        size = int.from_bytes(await reader.readexactly(_LENGTH), "big")
        msg: dict[str, Any] = json.loads(await reader.readexactly(size))
    except asyncio.IncompleteReadError:
        return None
    return msg


def _view_to_json(req: RequestView, *, body: bool) -> dict[str, Any]:
    """What the owner's router reads of a request: its purpose, read here, and the body only
    when some step's `match` reads it (`body:` or `prompt:`), since it is most of the request."""
    headers: dict[str, str] = {}
    for name, value in req.headers.items():
        headers.setdefault(name.lower(), value)  # the first of repeated headers, as .get() gives
    return {"last_user": req.last_user, "tool_results": sorted(req.tool_results), "model": req.model,
            "headers": headers, "body": req.body if body else None, "purpose": purpose_of(req)}


def _view_from_json(data: dict[str, Any]) -> tuple[RequestView, str]:
    view = RequestView(last_user=data["last_user"], tool_results=frozenset(data["tool_results"]),
                       model=data["model"], headers=data["headers"], body=data["body"])
    return view, data["purpose"]


def decision_to_json(d: Decision, index_of: dict[int, int], repeat: int | None) -> dict[str, Any]:
    """A decision as the owner sends it: scripts by their index in `Router.scripts`."""
    title = d.step is not None and d.index is None and d.auxiliary is None
    return {"kind": d.kind, "session": d.session,
            "script": index_of[id(d.script)] if d.script is not None else None,
            "index": d.index, "auxiliary": d.auxiliary, "title": title, "message": d.message,
            "purpose": d.purpose, "repeat": repeat}


def decision_from_json(data: dict[str, Any], router: Router) -> Decision:
    """The decision again, with this process's own copies of the scripts and steps."""
    script = router.scripts[data["script"]] if data["script"] is not None else None
    step: Step | None = None
    if script is not None:
        if data["index"] is not None:
            step = script.steps[data["index"]]
        elif data["auxiliary"] is not None:
            step = script.auxiliary[data["auxiliary"]]
        elif data["title"]:
            step = ReplyStep(label="title", reply=ReplySpec(content=script.title or ""))
    return Decision(kind=data["kind"], session=data["session"], script=script, index=data["index"],
                    step=step, message=data["message"], purpose=data["purpose"],
                    auxiliary=data["auxiliary"], repeat=data["repeat"])


class _Channel:
    """One worker's end of its socket pair: numbered requests, answers matched by number."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 on_message: Callable[[dict[str, Any]], None]) -> None:
        self._reader, self._writer = reader, writer
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._next = 0
        self._on_message = on_message
        self._asks = _Outbox(writer)
        self._task = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        try:
            while (msg := await _receive(self._reader)) is not None:
                future = self._waiting.pop(msg.get("id", -1), None)
                if future is None:
                    self._on_message(msg)
                elif not future.done():
                    future.set_result(msg)
                # else: the request that asked is gone (its client hung up and its handler was
                # cancelled while it waited): the answer has nobody to go to. The owner still
                # counted the step as served, as one process does for a client that leaves.
        finally:
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(ConnectionError("the state owner of `dshkit serve --workers` is gone"))
            self._on_message({"op": "stop"})

    def send(self, msg: dict[str, Any]) -> None:
        _send(self._writer, msg)

    async def ask(self, msg: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[self._next] = future
        self._asks.send({**msg, "id": self._next})
        return await future


class RemoteRouter(Router):
    """A worker's router: asks the state owner, which runs the one real router."""

    def __init__(self, local: Router, channel: _Channel) -> None:
        super().__init__(unscripted=local.unscripted)
        self.scripts = local.scripts
        self._ever_scripted = local.scripted
        self._channel = channel
        self._body_matched = local.matches_body
        """Whether the owner needs each request's body (a worker's scripts are the owner's, fixed:
        the admin API is off with workers)."""

    async def decide(self, session: str, req: RequestView) -> Decision:
        if not self._ever_scripted:
            return Decision(kind="default", session=session)
        view = _view_to_json(req, body=self._body_matched)
        answer = await self._channel.ask({"op": "route", "session": session, "view": view})
        if "error" in answer:  # the owner's router raised: this request fails, as on one process
            raise RuntimeError(f"the state owner could not route this request: {answer['error']}")
        return decision_from_json(answer, self)

    def route(self, session: str, req: RequestView, *, purpose: str | None = None) -> Decision:
        raise RuntimeError("a worker's router decides through the state owner: await decide()")

    def pending(self) -> list[str]:
        return []  # the owner knows

    async def gather(self, metrics: Metrics) -> dict[str, Any]:
        answer = await self._channel.ask({"op": "metrics"})
        return dict(answer["counts"])


# -- a worker --------------------------------------------------------------------------------


async def _work(server: MockServer, index: int, sock: socket.socket, summarize: Callable[[MockServer], dict[str, Any]]) -> int:
    loop = asyncio.get_running_loop()
    stop: asyncio.Future[None] = loop.create_future()

    def on_message(msg: dict[str, Any]) -> None:
        op = msg.get("op")
        if op == "stop" and not stop.done():
            stop.set_result(None)
        elif op == "collect" and server._runtime is not None:
            channel.send({"op": "counts", "cid": msg["cid"], "counts": server._runtime.metrics.counts()})

    reader, writer = await asyncio.open_unix_connection(sock=sock)
    channel = _Channel(reader, writer, on_message)
    observer = server.config.on_event
    if observer is not None:
        server.config.on_event = lambda event: observer({**event, "worker": index})
    server.router = RemoteRouter(server.router, channel)
    loop.add_signal_handler(signal.SIGTERM, on_message, {"op": "stop"})
    await server.start()
    settle_heap()
    channel.send({"op": "ready", "worker": index, "pid": os.getpid()})
    await stop
    await server.close()
    with contextlib.suppress(ConnectionError):
        channel.send({"op": "summary", "worker": index, "summary": summarize(server)})
        await writer.drain()
        writer.close()
    return 0


def _worker_main(server: MockServer, index: int, sock: socket.socket,
                 summarize: Callable[[MockServer], dict[str, Any]]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the owner stops the workers
    code = 1
    try:
        code = asyncio.run(_work(server, index, sock, summarize))
    except BaseException as e:  # noqa: BLE001 - a worker must never fall back into the owner's code
        sys.stderr.write(f"dshkit serve: worker {index} failed: {e!r}\n")
    finally:
        from dshkit.mock_server.cli import _flush

        _flush()
        sys.stdout.flush()
        os._exit(code)


# -- the owner -------------------------------------------------------------------------------


def _reserve_port(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind((host, port))
    return s


async def _own(router: Router, workers: list[tuple[int, socket.socket]], on_ready: Callable[[], None],
               stop: asyncio.Future[int]) -> tuple[int, list[dict[str, Any]]]:
    index_of = {id(s): i for i, s in enumerate(router.scripts)}
    served: dict[tuple[str, int | None], int] = {}
    summaries: list[dict[str, Any]] = []
    ready = 0
    writers: list[asyncio.StreamWriter] = []
    # /metrics on one worker: every worker's counts, gathered by collect id, then added up.
    collects: dict[int, tuple[list[dict[str, Any]], int, asyncio.StreamWriter, int]] = {}
    next_collect = 0

    def answer(msg: dict[str, Any]) -> dict[str, Any]:
        view, purpose = _view_from_json(msg["view"])
        d = router.route(msg["session"], view, purpose=purpose)
        repeat = None
        if d.kind == "step" and d.auxiliary is None and d.index is not None:
            key = (d.session, d.index)
            repeat = served.get(key, 0)
            served[key] = repeat + 1
        return {"id": msg["id"], **decision_to_json(d, index_of, repeat)}

    async def serve(index: int, sock: socket.socket) -> None:
        nonlocal ready, next_collect
        reader, writer = await asyncio.open_unix_connection(sock=sock)
        writers.append(writer)
        answers = _Outbox(writer)
        while (msg := await _receive(reader)) is not None:
            op = msg.get("op")
            if op == "route":
                try:
                    reply = answer(msg)
                except Exception as e:  # noqa: BLE001 - one request's failure, never the worker's channel
                    reply = {"id": msg.get("id"), "error": f"{type(e).__name__}: {e}"}
                answers.send(reply)
            elif op == "metrics":
                next_collect += 1
                live = [w for w in writers if not w.is_closing()]
                collects[next_collect] = ([], len(live), writer, msg["id"])
                for w in live:
                    _send(w, {"op": "collect", "cid": next_collect})
            elif op == "counts" and msg["cid"] in collects:
                got, expected, target, rid = collects[msg["cid"]]
                got.append(msg["counts"])
                if len(got) == expected:
                    del collects[msg["cid"]]
                    _send(target, {"id": rid, "counts": add_counts(got)})
            elif op == "ready":
                ready += 1
                if ready == len(workers):
                    on_ready()
            elif op == "summary":
                summaries.append(msg["summary"])
                return
        if not stop.done() or len(summaries) < len(workers):
            sys.stderr.write(f"dshkit serve: worker {index} exited\n")
            if ready < len(workers) and not stop.done():
                stop.set_result(1)  # a worker that dies before it is ready ends the run

    tasks = [asyncio.ensure_future(serve(i, s)) for i, s in workers]
    code = await stop
    for writer in writers:
        with contextlib.suppress(ConnectionError):
            _send(writer, {"op": "stop"})
    await asyncio.wait(tasks, timeout=30)
    for writer in writers:
        writer.close()
    return code, summaries


def merge_summaries(summaries: list[dict[str, Any]], unused: list[str]) -> dict[str, Any]:
    """One `summary` line for every worker: counts added, rejections in `seq` order, the
    journals' figures added, unused steps from the owner."""
    outcomes: Counter[str] = Counter()
    journal: Counter[str] = Counter()
    rejections: list[dict[str, Any]] = []
    for s in summaries:
        outcomes.update(s["outcomes"])
        rejections += s["rejections"]
        for k in ("entries", "kept_bytes", "trimmed", "trimmed_for_bytes", "dropped"):
            journal[k] += s["journal"].get(k) or 0
    first = summaries[0]["journal"] if summaries else {}
    return {
        "type": "summary",
        "requests": sum(s["requests"] for s in summaries),
        "outcomes": dict(outcomes),
        "unused_steps": unused,
        "rejections": sorted(rejections, key=lambda r: r["seq"]),
        "journal": {**dict(journal), "keep": first.get("keep"), "keep_bytes": first.get("keep_bytes"),
                    "keep_trimmed": first.get("keep_trimmed"), "workers": len(summaries)},
        "workers": len(summaries),
    }


def run_workers(server: MockServer, n: int, *, emit: Callable[[dict[str, Any]], None],
                summarize: Callable[[MockServer], dict[str, Any]],
                exit_on_signals: Callable[[], asyncio.Future[int]]) -> tuple[int, dict[str, Any] | None]:
    """Serve with `n` worker processes until SIGINT/SIGTERM; the exit status and the merged
    summary (None when the port could not be bound)."""
    try:
        reserved = _reserve_port(server.host, server._requested_port)
    except OSError as e:
        sys.stderr.write(f"dshkit serve: cannot bind {server.host}:{server._requested_port}: {e}\n")
        return 1, None
    port = reserved.getsockname()[1]
    server._requested_port = port
    server.reuse_port = True
    server.journal.next_seq = SharedCounter()
    router = server.router
    sys.stdout.flush()
    sys.stderr.flush()
    children: list[tuple[int, socket.socket]] = []
    pids: list[int] = []
    for i in range(n):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:
            ours.close()
            for _, other in children:
                other.close()
            reserved.close()
            _worker_main(server, i, theirs, summarize)
        theirs.close()
        children.append((i, ours))
        pids.append(pid)
    server.journal.close()  # the workers write the file; the owner holds no exchange

    async def main() -> tuple[int, list[dict[str, Any]]]:
        stop = exit_on_signals()
        server._port = port
        base = server.base_url

        def on_ready() -> None:
            emit({"type": "ready", "base_url": base, "port": port, "seed": server.seed,
                  "anthropic_base_url": base + "/anthropic", "workers": n})

        return await _own(router, children, on_ready, stop)

    try:
        code, summaries = asyncio.run(main())
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        for pid in pids:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        reserved.close()
    return code, merge_summaries(summaries, router.pending())
