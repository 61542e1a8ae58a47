"""The admin HTTP API: drive a running mock server from any language (Node, Go, Java suites).

It shares the server's port under the reserved prefix `/_dshkit/`, which neither wire uses (Chat
Completions lives at the root, `/v1` and `/beta`; the Anthropic surface under `/anthropic`). It
is outside the wire's auth (`--api-key` guards the model calls only) and answers loopback peers
only (127.0.0.0/8, ::1): anyone else gets 403, even on a server bound to another address.
`dshkit serve` turns it on (`--no-admin` turns it off); `MockServer(admin=True)` elsewhere.

| method and path | what it does |
| --- | --- |
| `GET /_dshkit/` | the endpoints |
| `PUT /_dshkit/scripts` | replace every script with the body's; sessions and counts start over |
| `POST /_dshkit/scripts` | add the body's scripts (`?session=ID` reserves one for that session) |
| `DELETE /_dshkit/scripts` | drop every script (requests get the generated default reply) |
| `POST /_dshkit/reset` | forget sessions (each script claimable again, every step unused) and the journal |
| `GET /_dshkit/journal` | the journal since the last reset, as JSON (`?session=ID` filters) |
| `GET /_dshkit/counts` | requests per script step, unused steps, requests by outcome |

A script body is what a `--script` file holds (one script, a list of steps, or `scripts: [...]`),
as YAML, or JSON when the `Content-Type` says `application/json`, checked the same way: a bad one
gets 400 with the same located message (`admin body:3: steps[0].reply.content: ...`). Answers are
JSON; errors use DeepSeek's envelope (`{"error": {"message", "type", "code"}}`).
"""

from __future__ import annotations

import base64
import ipaddress
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from dshkit.harness.llm.errors import InputError
from dshkit.mock_server.journal import JournalEntry, json_line
from dshkit.mock_server.routing import Router
from dshkit.mock_server.runtime import Runtime
from dshkit.mock_server.scripts import Script, ScriptError, parse_scripts_text

__all__ = ["ADMIN_PREFIX", "add_admin_routes"]

ADMIN_PREFIX = "/_dshkit"
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_ENDPOINTS = {
    "GET /_dshkit/": "this list",
    "PUT /_dshkit/scripts": "replace every script with the body's (YAML, or JSON by Content-Type); sessions start over",
    "POST /_dshkit/scripts": "add the body's scripts; ?session=ID reserves them for that session",
    "DELETE /_dshkit/scripts": "drop every script: requests get the generated default reply; sessions start over",
    "POST /_dshkit/reset": "forget every session and the journal; every step unused again",
    "GET /_dshkit/journal": "the journal since the last reset, as JSON; ?session=ID filters",
    "GET /_dshkit/counts": "requests per script step, unused steps, requests by outcome",
}


def _error(status: int, message: str, code: str) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}},
        status=status,
    )


def _loopback(request: web.Request) -> bool:
    peer = request.remote or ""
    try:
        address = ipaddress.ip_address(peer.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # a dual-stack socket's view of 127.0.0.1
    return address.is_loopback


class _Admin:
    """The handlers, over one server's router and runtime."""

    def __init__(self, router: Router, runtime: Runtime) -> None:
        self.router = router
        self.runtime = runtime
        self.since = 0
        """The journal's last seq at the last reset: older entries are not shown."""
        self._lock = threading.Lock()

    def guard(self, handler: _Handler) -> _Handler:
        async def guarded(request: web.Request) -> web.StreamResponse:
            if not _loopback(request):
                return _error(403, f"the admin API answers loopback clients only, not {request.remote}",
                              "admin_forbidden")
            return await handler(request)

        return guarded

    async def index(self, request: web.Request) -> web.StreamResponse:
        return web.json_response({"endpoints": _ENDPOINTS})

    async def _scripts(self, request: web.Request) -> list[Script] | web.Response:
        where = f"admin {request.method} {request.path} body"
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge as e:
            return _error(413, f"{where}: larger than the server accepts ({e.text}); raise "
                          "--max-body-bytes or send a smaller script", "request_too_large")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            return _error(400, f"{where}: not UTF-8 text (byte {e.start}); send the script as UTF-8 "
                          "YAML or JSON", "invalid_script")
        if not text.strip():
            return _error(400, f"{where}: empty; send a script (YAML, or JSON with Content-Type: "
                          "application/json)", "invalid_script")
        is_json = request.content_type in ("application/json", "text/json")
        try:
            return parse_scripts_text(text, source=where, is_json=is_json, stem="admin")
        except (ScriptError, InputError) as e:
            return _error(400, str(e), "invalid_script")
        except RecursionError:
            return _error(400, f"{where}: nested too deeply to read", "invalid_script")

    async def replace(self, request: web.Request) -> web.StreamResponse:
        scripts = await self._scripts(request)
        if isinstance(scripts, web.Response):
            return scripts
        try:
            self.router.replace(scripts)
        except TypeError as e:
            return _error(400, f"admin PUT {request.path}: {e}", "scripts_not_accepted")
        except ValueError as e:
            return _error(400, f"admin PUT {request.path}: {e}", "invalid_script")
        self._mark()
        return web.json_response(_loaded(scripts))

    async def clear(self, request: web.Request) -> web.StreamResponse:
        try:
            self.router.replace([])
        except TypeError as e:
            return _error(400, f"admin DELETE {request.path}: {e}", "scripts_not_accepted")
        self._mark()
        return web.json_response(_loaded([]))

    async def add(self, request: web.Request) -> web.StreamResponse:
        scripts = await self._scripts(request)
        if isinstance(scripts, web.Response):
            return scripts
        session = request.query.get("session") or None
        if session is not None and len(scripts) != 1:
            return _error(400, f"?session= reserves one script; the body holds {len(scripts)}",
                          "invalid_script")
        added: list[Script] = []
        try:
            for script in scripts:
                self.router.add(script, session=session)
                added.append(script)
        except TypeError as e:  # a server whose router takes no scripts (a replayed cassette)
            return _error(400, f"admin POST {request.path}: {e}", "scripts_not_accepted")
        except ValueError as e:
            return _error(409, f"admin POST {request.path}: {e} ({len(added)} of {len(scripts)} "
                          "script(s) added before it)", "session_taken")
        return web.json_response(_loaded(scripts), status=201)

    async def reset(self, request: web.Request) -> web.StreamResponse:
        self.router.reset()
        self._mark()
        return web.json_response({"reset": True, "journal_since": self.since})

    def _mark(self) -> None:
        entries = self.runtime.journal.entries
        with self._lock:
            self.since = entries[-1].seq if entries else 0

    def _entries(self) -> list[JournalEntry]:
        with self._lock:
            since = self.since
        return [e for e in self.runtime.journal.entries if e.seq > since]

    async def journal(self, request: web.Request) -> web.StreamResponse:
        entries = self._entries()
        session = request.query.get("session")
        if session is not None:
            entries = [e for e in entries if e.session == session]
        return web.json_response({"entries": [_entry_json(e) for e in entries]}, dumps=_dumps)

    async def counts(self, request: web.Request) -> web.StreamResponse:
        entries = self._entries()
        calls = Counter((e.script, e.step) for e in entries if e.script is not None and e.step is not None)
        steps = [
            {"script": script, "step": step, "calls": n}
            for (script, step), n in sorted(calls.items(), key=lambda kv: (str(kv[0][0]), kv[0][1] or 0))
        ]
        return web.json_response({
            "requests": len(entries),
            "outcomes": dict(Counter(str(e.outcome) for e in entries)),
            "steps": steps,
            "unused_steps": self.runtime.journal.unused_steps(),
        })

    async def not_found(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        allowed = [e.split(" ", 1)[0] for e in _ENDPOINTS if e.split(" ", 1)[1].rstrip("/") == path]
        if allowed:
            return web.json_response(
                {"error": {"message": f"{request.method} is not allowed on {request.path}; use "
                           f"{' or '.join(allowed)}", "type": "invalid_request_error", "param": None,
                           "code": "method_not_allowed"}},
                status=405, headers={"Allow": ", ".join(allowed)})
        return _error(404, f"{request.method} {request.path} is not an admin endpoint; they are: "
                      + ", ".join(_ENDPOINTS), "not_found")


def _loaded(scripts: list[Script]) -> dict[str, Any]:
    return {"scripts": [{"name": s.name, "session": s.session, "steps": len(s.steps)} for s in scripts]}


def _entry_json(entry: JournalEntry) -> dict[str, Any]:
    """An entry as the journal file has it (credentials already scrubbed), its written bytes
    joined into `response` text (or `response_b64`), not split write by write."""
    out = entry.to_json()
    writes = out.pop("writes")
    data = b"".join(w.data for w in entry.writes)
    try:
        out["response"] = data.decode("utf-8")
    except UnicodeDecodeError:
        out["response_b64"] = base64.b64encode(data).decode("ascii")
    out["writes"] = len(writes) if not entry.trimmed else entry.write_count
    out["trimmed"] = entry.trimmed
    return out


def _dumps(obj: Any) -> str:
    return json_line(obj)  # valid JSON whatever a client sent (lone surrogates, NaN)


def add_admin_routes(app: web.Application, router: Router, runtime: Runtime) -> None:
    """Register the admin endpoints on `app` (before its catch-all route)."""
    admin = _Admin(router, runtime)
    g = admin.guard
    app.router.add_get(ADMIN_PREFIX + "/", g(admin.index))
    app.router.add_get(ADMIN_PREFIX, g(admin.index))
    app.router.add_put(ADMIN_PREFIX + "/scripts", g(admin.replace))
    app.router.add_post(ADMIN_PREFIX + "/scripts", g(admin.add))
    app.router.add_delete(ADMIN_PREFIX + "/scripts", g(admin.clear))
    app.router.add_post(ADMIN_PREFIX + "/reset", g(admin.reset))
    app.router.add_get(ADMIN_PREFIX + "/journal", g(admin.journal))
    app.router.add_get(ADMIN_PREFIX + "/counts", g(admin.counts))
    app.router.add_route("*", ADMIN_PREFIX + "/{tail:.*}", g(admin.not_found))
