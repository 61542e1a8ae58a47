"""MockServer: a mock DeepSeek endpoint on 127.0.0.1, for async tests, sync tests and the CLI.

The server binds port 0 by default and reads the real port back (`.port`, `.base_url`), so
parallel tests never collide. Use it with `async with MockServer(...)` on the running loop, or
with a plain `with MockServer(...)` from sync code, which runs it on a background thread with
its own loop (the sync openai client can then call it). `close()` is idempotent and ends every
open stream, stalled ones included.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import reprlib
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self, get_args

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from dshkit.mock_server.app import SURFACES, make_app
from dshkit.mock_server.front import Front
from dshkit.mock_server.generate.reply import Era
from dshkit.mock_server.handlers import model_answer
from dshkit.mock_server.journal import (
    DEFAULT_KEEP,
    DEFAULT_KEEP_BYTES,
    DEFAULT_KEEP_TRIMMED,
    Journal,
)
from dshkit.mock_server.routing import Router
from dshkit.mock_server.runtime import DEFAULT_WEIGHTS, Runtime, ServerConfig
from dshkit.mock_server.scripts import (
    FaultName,
    FaultStep,
    Script,
    ScriptError,
    StreamSpec,
    Timing,
    WriteSpec,
    load_scripts,
    parse_script,
)
from dshkit.mock_server.surface import Surface

__all__ = ["MockServer", "ScriptSource", "sequence_script", "settle_heap"]

#: Seconds answers in flight get to finish when a server closes.
_SHUTDOWN_TIMEOUT = 0.5


class _OneLineClientErrors(logging.Filter):
    """aiohttp logs a malformed HTTP request (bad request line, header too long, broken chunked
    framing) with a full traceback although it is the client's mistake, already answered with
    a 400: keep the log line, drop the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            lines = str(exc.message).strip().splitlines() or [""]
            record.msg = f"{record.getMessage()}: {exc.code} {lines[0].rstrip(':')}"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
        return True


#: The logger aiohttp's connection handlers use (instead of `aiohttp.server`).
_HTTP_LOG = logging.getLogger("dshkit.mock_server.http")
_HTTP_LOG.addFilter(_OneLineClientErrors())

ScriptSource = Script | str | os.PathLike[str] | Mapping[str, Any] | Sequence[Any]
"""What `MockServer` takes as a script: a `Script`, the path of a YAML/JSON script file, a
mapping holding a whole script (`{"steps": [...], ...}`) or a list of steps."""


def _script_of(source: object, where: str, name: str | None) -> list[Script]:
    """The scripts `source` stands for (a file may hold several; an inline script without a
    name gets `name`, else `script`). An invalid script, or a value that is no script at all,
    raises `ScriptError` naming `where` it was given."""
    if isinstance(source, Script):
        return [source]
    if isinstance(source, str | os.PathLike):
        return load_scripts(Path(source))
    if isinstance(source, Mapping):
        return [parse_script(dict(source), source=where, default_name=name)]
    if isinstance(source, Sequence) and not isinstance(source, bytes | bytearray):
        return [parse_script(list(source), source=where, default_name=name)]
    raise ScriptError(
        f"{reprlib.repr(source)} ({type(source).__name__}) is not a script",
        source=where,
        hint="pass Script.of(...), a file path, a mapping with steps or a list of steps",
    )


_FAULT_NAMES = frozenset(get_args(FaultName))


def sequence_script(names: Sequence[str] | str, *, repeat_last: bool = False) -> Script:
    """A script of fault steps from names (`"rate_limit,success"` or a list)."""
    items = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
    steps = [n for n in items if n]
    if steps and all(isinstance(n, str) and n in _FAULT_NAMES for n in steps):
        # Known fault names only: the script validation would make, built without building a
        # validator (the whole script's, and its steps' default stream and timing, cost tens of
        # milliseconds of `dshkit serve --sequence`'s start-up). Anything else is validated, so
        # that it fails as a script step would.
        return Script.model_construct(name="sequence", repeat_last=repeat_last,
                                      steps=[_fault_step(n) for n in steps])
    return parse_script({"name": "sequence", "repeat_last": repeat_last, "steps": steps}, source="--sequence")


def _fault_step(name: str) -> FaultStep:
    """`FaultStep(fault=name)` as validation makes it, its default stream and timing included."""
    stream = StreamSpec.model_construct(_fields_set=set(), writes=WriteSpec.model_construct(_fields_set=set()))
    return FaultStep.model_construct(fault=name, stream=stream, timing=Timing.model_construct(_fields_set=set()),
                                     _fields_set={"fault"})


#: The youngest generation's threshold in a serving process (Python's default is 700).
SERVE_GC_THRESHOLD = 10_000


def settle_heap() -> None:
    """For a process that only serves (`dshkit serve`), once its server has started: what was
    built to start (modules, scripts, the app) stays for the process's life, so the cyclic
    collector is told to skip it (`gc.freeze`). Every request makes short-lived objects, and
    each full collection would otherwise walk that whole heap again. Not for a host process
    (a test run): frozen objects are never collected. The collector is on afterwards (`dshkit
    serve` starts with it off, since nothing it builds to start is garbage).

    The youngest generation is collected after :data:`SERVE_GC_THRESHOLD` allocations instead
    of 700: with 700 a collection came every request or two, each walking the objects of every
    request still in flight (and moving them to an older generation, walked again later). A
    request leaves about ten objects in reference cycles, so the garbage waiting for a
    collection stays small; under the server bench's load the collector's share of the CPU
    went from 4-5% to under 2%."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(SERVE_GC_THRESHOLD, *gc.get_threshold()[1:])
    gc.enable()


def _check_weights(weights: Mapping[str, float]) -> dict[str, float]:
    from dshkit.mock_server.faults import FAULTS

    out: dict[str, float] = {}
    for name, w in weights.items():
        if name not in FAULTS or name == "random":
            raise ValueError(f"random weight for unknown fault {name!r}; known: {sorted(FAULTS)}")
        if not (w >= 0 and w != float("inf")):
            raise ValueError(f"random weight for {name!r} must be finite and >= 0, got {w}")
        out[name] = float(w)
    if not any(out.values()):
        raise ValueError("random weights need at least one positive entry")
    return out


class MockServer:
    """A mock DeepSeek server.

    Args:
        scripts: `Script` objects, paths of YAML/JSON script files, mappings holding a whole
            script or lists of steps; each new session claims the next one (or the one
            reserved for its id).
        sequence: fault names forming one more script (`--sequence`).
        api_key: require `Authorization: Bearer <api_key>` (S2); None accepts any.
        seed: seeds generated ids, split plans and random mode; None picks one (see `.seed`).
        weights: fault name → weight for `random` steps.
        journal: a JSONL file the journal appends to (parents created).
        era: `v4` (default) or `v3.2` stream and limit shapes.
        on_event: called with each `request`/`result` telemetry dict.
        unscripted: what a new session gets once no script is left for it: `error` (418
            `mock_no_script`) or `default` (the generated reply). Without any script at all,
            every request gets the default reply.
        anthropic_envelope: the error body of the Anthropic surface: `evidence` (the default:
            each status as the recordings support, 4xx but 429 in the OpenAI-style envelope
            DeepSeek sends there, 429 and 5xx in Anthropic's), `deepseek` (the OpenAI-style
            one for every status) or `anthropic` (Anthropic's own for every status).
        anthropic_unknown_model: on the Anthropic surface, a name that is neither a DeepSeek
            model nor `claude…`: `reject` (400, DeepSeek's newest page) or `flash` (served by
            the flash model, as older pages said).
        idle_timeout: seconds a connection may take to send a complete request head (after
            opening, or after the previous response) and a request body; then it is closed
            (the body gets a 408). Bounds slowloris clients.
        backlog: the listen backlog (pending connections the kernel queues before accepting).
        journal_keep: keep the written bytes, headers and body of only the last N exchanges in
            memory (older entries keep counts and timings); None keeps everything. The JSONL
            `journal` file always gets every exchange in full.
        journal_bytes: the byte budget of those kept exchanges (bytes written plus request
            bodies; default 64 MiB): the oldest are trimmed until the rest fit, however few the
            `journal_keep` limit leaves; None: no byte budget.
        journal_trimmed: how many trimmed entries (counts, timings, outcome; about half a
            kilobyte each) stay in memory; the oldest beyond it leave the journal altogether
            (`journal.dropped` counts them). Default 100,000; None keeps them all.
        fast_path: serve generated streams through the fast path (cached stream templates,
            whole bodies in one response, coalesced writes; the default), or False for the
            plain reference path (rendered afresh, one write per event). A client receives the
            same bytes either way; only the journal's write boundaries and the cost differ.
        front: on the fast path, answer plain model calls below aiohttp (the default; see
            :mod:`~dshkit.mock_server.front`): the same bytes for about a fifth less CPU per
            request. False serves every request through aiohttp (as `fast_path=False` does).
        surfaces: the wires the server speaks (default :data:`~dshkit.mock_server.app.SURFACES`:
            Chat Completions and the Anthropic Messages surface); see docs/mock_server.md,
            "Adding a wire".
        router: what picks the step answering each request, instead of a `Router` over
            `scripts` (a replayed cassette's :class:`~dshkit.mock_server.cassette_match.CassetteRouter`).
        admin: serve the admin HTTP API under `/_dshkit/` on the same port, for loopback
            clients only (load scripts, reset sessions, read the journal and counts; see
            docs/admin_api.md). `dshkit serve` turns it on.
        reuse_port: bind with SO_REUSEPORT, so that several processes listen on one port and
            the kernel spreads connections over them (`dshkit serve --workers`).
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        *scripts: ScriptSource,
        sequence: Sequence[str] | str | None = None,
        repeat_last: bool = False,
        api_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        seed: int | None = None,
        weights: Mapping[str, float] | None = None,
        journal: str | os.PathLike[str] | None = None,
        era: Era = "v4",
        max_body_bytes: int = 16 * 1024 * 1024,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        unscripted: Literal["error", "default"] = "error",
        anthropic_envelope: Literal["evidence", "deepseek", "anthropic"] = "evidence",
        anthropic_unknown_model: Literal["reject", "flash"] = "reject",
        idle_timeout: float = 60.0,
        backlog: int = 1024,
        journal_keep: int | None = DEFAULT_KEEP,
        journal_bytes: int | None = DEFAULT_KEEP_BYTES,
        journal_trimmed: int | None = DEFAULT_KEEP_TRIMMED,
        fast_path: bool = True,
        front: bool = True,
        surfaces: Sequence[Surface] = SURFACES,
        router: Router | None = None,
        admin: bool = False,
        reuse_port: bool = False,
    ) -> None:
        loaded: list[Script] = []
        for number, source in enumerate(scripts, 1):
            loaded.extend(_script_of(source, f"MockServer script argument {number}", f"inline-{number}"))
        if sequence:
            loaded.append(sequence_script(sequence, repeat_last=repeat_last))
        self.seed = seed if seed is not None else secrets.randbits(32)
        self.host = host
        self._requested_port = port
        if router is not None and loaded:
            raise ValueError("pass scripts or a router, not both (add scripts to the router instead)")
        self.router = router if router is not None else Router(loaded, unscripted=unscripted)
        if not idle_timeout > 0:
            raise ValueError(f"idle_timeout must be > 0 seconds, got {idle_timeout}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an integer 0-65535 (0: any free port), got {port!r}")
        if not 1 <= backlog <= 2**31 - 1:
            raise ValueError(f"backlog must be 1-2147483647, got {backlog}")
        if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int) or max_body_bytes < 1:
            raise ValueError(f"max_body_bytes must be an integer >= 1, got {max_body_bytes!r}")
        self.backlog = backlog
        self.reuse_port = reuse_port
        self.journal = Journal(
            journal, pending=self.router.pending, keep=journal_keep, keep_bytes=journal_bytes,
            keep_trimmed=journal_trimmed,
        )
        self.config = ServerConfig(
            api_key=api_key,
            era=era,
            seed=self.seed,
            max_body_bytes=max_body_bytes,
            idle_timeout=idle_timeout,
            weights=_check_weights(weights) if weights is not None else dict(DEFAULT_WEIGHTS),
            on_event=on_event,
            anthropic_envelope=anthropic_envelope,
            anthropic_unknown_model=anthropic_unknown_model,
            fast_path=fast_path,
        )
        self.surfaces = tuple(surfaces)
        self.front = front and fast_path
        self.admin = admin
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        self._fast_front: Front | None = None
        self._runtime: Runtime | None = None
        self._port: int | None = None
        self._closed = False
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- addresses -------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (read back from the socket)."""
        if self._port is None:
            raise RuntimeError("the server is not started; use `async with` or `await start()`")
        return self._port

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT`: give this to clients (they append `/chat/completions`)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def anthropic_base_url(self) -> str:
        """`base_url + "/anthropic"`: give this to the `anthropic` SDK (it appends `/v1/messages`)."""
        return self.base_url + "/anthropic"

    @property
    def url(self) -> str:
        """The full chat endpoint, `base_url + "/chat/completions"`, for raw HTTP clients."""
        return self.base_url + "/chat/completions"

    def make_url(self, path: str) -> str:
        return self.base_url + (path if path.startswith("/") else "/" + path)

    # -- scripts ---------------------------------------------------------------------------

    def add_script(self, script: ScriptSource, *, session: str | None = None) -> None:
        """Add a script (or a file's scripts) now, in any form `MockServer` takes one; `session`
        reserves it for that session id."""
        for s in _script_of(script, "add_script", None):
            self.router.add(s, session=session)

    def assert_consumed(self) -> None:
        """Fail listing every scripted step no request used."""
        self.journal.assert_consumed()

    # -- lifecycle on the current loop -----------------------------------------------------

    async def start(self) -> MockServer:
        """Bind and serve on the running loop."""
        if self._closed:
            raise RuntimeError("a closed MockServer cannot be restarted; make a new one")
        if self._runner is not None:
            return self
        self._runtime = Runtime(self.config, self.journal)
        app = make_app(self._runtime, self.router, self.surfaces, admin=self.admin)
        # handler_cancellation: a client that hangs up cancels its handler, ending stalls.
        # keepalive_timeout: aiohttp arms it when a connection opens and after each response,
        # and closes the connection if no complete request head arrived by then, so it is the
        # header/idle timeout that ends slowloris connections (aiohttp's default is an hour).
        # auto_decompress off: `handlers.decode_body` undoes Content-Encoding with a size cap
        # and answers a body that does not match its encoding with a 400.
        runner = web.AppRunner(
            app,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=_SHUTDOWN_TIMEOUT,
            keepalive_timeout=self.config.idle_timeout,
            auto_decompress=False,
            logger=_HTTP_LOG,
        )
        await runner.setup()
        # The listening socket's protocol: aiohttp's (`runner.server` makes one per connection),
        # or on the fast path the front, which answers plain model calls itself and hands any
        # other connection to aiohttp (docs in `front.py`).
        aiohttp_protocol = runner.server
        assert aiohttp_protocol is not None  # made by setup()
        factory: Callable[[], asyncio.BaseProtocol] = aiohttp_protocol
        if self.front:
            answers = {path: model_answer(s) for s in self.surfaces for path in s.paths}
            self._fast_front = Front(self._runtime, self.router, answers, aiohttp_protocol)
            factory = self._fast_front
        # backlog: aiohttp's default (128) drops SYNs when a few hundred clients connect at once.
        self._listener = await asyncio.get_running_loop().create_server(
            factory, self.host, self._requested_port, reuse_address=True, backlog=self.backlog,
            reuse_port=self.reuse_port or None,
        )
        self._runner = runner
        sockets = self._listener.sockets  # the bound sockets' names: (host, port, ...)
        self._port = int(sockets[0].getsockname()[1]) if sockets else self._requested_port
        return self

    async def close(self) -> None:
        """Stop serving; end open streams (stalled ones too). Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        runtime, runner, listener = self._runtime, self._runner, self._listener
        if listener is not None:
            listener.close()  # no new connections
        if runtime is not None:
            runtime.closing.set()
            await asyncio.sleep(0)  # let waiting handlers see the flag and reset their sockets
            for x in list(runtime.active):
                x.reset()
        if self._fast_front is not None:
            await self._fast_front.close(_SHUTDOWN_TIMEOUT)
        if runner is not None:
            await runner.cleanup()
        if listener is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(listener.wait_closed(), _SHUTDOWN_TIMEOUT)
        self.journal.close()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- lifecycle on a background thread (for sync code) ----------------------------------

    def start_in_thread(self) -> MockServer:
        """Serve from a daemon thread with its own loop; returns once the port is bound."""
        if self._thread is not None:
            return self
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(
            target=loop.run_forever, name="dshkit-mock-server", daemon=True
        )
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.start(), loop).result(timeout=30)
        return self

    def close_thread(self) -> None:
        """Close a server started with :meth:`start_in_thread` and join its thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._thread = None
        asyncio.run_coroutine_threadsafe(self.close(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()
        self._loop = None

    def __enter__(self) -> Self:
        self.start_in_thread()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close_thread()

    def __repr__(self) -> str:
        where = self.base_url if self._port is not None else "not started"
        return f"<MockServer {where} seed={self.seed}>"

