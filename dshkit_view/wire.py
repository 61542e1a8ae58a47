"""Exchanges as they crossed the wire: a cassette's recorded reads or a mock-server journal's writes.

Both formats hold, per request, the body the client sent and every network read (cassette) or
write (journal) with its time. The view shows the same things for both: the request, the status,
each SSE `data:` line's delta (content, reasoning, tool-call argument fragments) at the time its
bytes arrived, and the usage of the last chunk that carried one.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dshkit.harness.llm import jsonio
from dshkit.mock_server import load_cassette

from .errors import ViewError

__all__ = ["WireDelta", "WireExchange", "load_cassette_exchanges", "load_journal", "sse_deltas"]


@dataclass(frozen=True, slots=True)
class WireDelta:
    """One SSE event's payload at the time its bytes arrived."""

    t_ms: float
    kind: str
    """`content`, `reasoning`, `tool-call` (an argument fragment), `finish`, `usage`, `error` or `other`."""
    text: str
    index: int | None = None
    """The tool call's index for `tool-call` fragments."""
    name: str | None = None
    """The tool's name, on the fragment that carried it."""


@dataclass(slots=True)
class WireExchange:
    number: int
    method: str
    path: str
    status: int | None
    body: Any
    """The request body as sent (secrets scrubbed or redacted by the recorder)."""
    deltas: list[WireDelta] = field(default_factory=list)
    usage: Mapping[str, Any] | None = None
    note: str = ""
    """Script, step and outcome (journal) or the response content type (cassette)."""
    session: str | None = None
    """The session the mock server routed the request to (journal only)."""
    outcome: str | None = None
    """How the server ended the exchange (journal only): `completed`, `reset`, `stalled`, ..."""
    started_s: float | None = None
    """When the request arrived, in seconds on the server's clock (journal only; not a date)."""


def sse_deltas(pieces: list[tuple[float, bytes]]) -> tuple[list[WireDelta], Mapping[str, Any] | None]:
    """Decode timed body pieces into deltas; a line split across pieces counts when it completes.
    A body that is one JSON error object (an HTTP error answer) becomes one `error` delta."""
    whole = b"".join(data for _, data in pieces)
    if whole.lstrip().startswith(b"{"):
        try:
            body = jsonio.loads(whole)
        except ValueError:
            body = None
        if isinstance(body, dict) and "error" in body:
            return [WireDelta(pieces[-1][0], "error", json.dumps(body["error"], ensure_ascii=False))], None
    deltas: list[WireDelta] = []
    usage: Mapping[str, Any] | None = None
    buffer = b""
    for t_ms, data in pieces:
        buffer += data
        *lines, buffer = buffer.split(b"\n")
        for raw in lines:
            line = raw.rstrip(b"\r").decode("utf-8", "replace")
            if not line.startswith("data:"):
                if line.startswith("event:") and "error" in line:
                    deltas.append(WireDelta(t_ms, "error", line))
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                deltas.append(WireDelta(t_ms, "other", "[DONE]"))
                continue
            try:
                chunk = jsonio.loads(payload)
            except ValueError:
                deltas.append(WireDelta(t_ms, "other", payload))
                continue
            if not isinstance(chunk, dict):
                deltas.append(WireDelta(t_ms, "other", payload))
                continue
            if "error" in chunk:
                deltas.append(WireDelta(t_ms, "error", json.dumps(chunk["error"], ensure_ascii=False)))
            if isinstance(chunk.get("usage"), dict):
                usage = chunk["usage"]
                deltas.append(WireDelta(t_ms, "usage", json.dumps(usage)))
            choices = chunk.get("choices")
            for choice in choices if isinstance(choices, list) else ():
                if not isinstance(choice, dict):
                    continue
                delta = choice.get("delta") or {}
                if isinstance(delta, dict):
                    if delta.get("reasoning_content"):
                        deltas.append(WireDelta(t_ms, "reasoning", str(delta["reasoning_content"])))
                    if delta.get("content"):
                        deltas.append(WireDelta(t_ms, "content", str(delta["content"])))
                    calls = delta.get("tool_calls")
                    for call in calls if isinstance(calls, list) else ():
                        if isinstance(call, dict):
                            fn = call.get("function") or {}
                            name = fn.get("name") if isinstance(fn, dict) else None
                            args = fn.get("arguments", "") if isinstance(fn, dict) else ""
                            index = call.get("index", 0)
                            index = index if isinstance(index, int) and not isinstance(index, bool) else 0
                            deltas.append(WireDelta(t_ms, "tool-call", str(args or ""), index,
                                                    str(name) if name else None))
                if choice.get("finish_reason"):
                    deltas.append(WireDelta(t_ms, "finish", str(choice["finish_reason"])))
    return deltas, usage


def load_cassette_exchanges(path: Path) -> tuple[dict[str, Any], list[WireExchange]]:
    """A cassette's header fields and its exchanges, with read times summed from `dt_ms`."""
    cassette = load_cassette(path)
    out: list[WireExchange] = []
    for number, exchange in enumerate(cassette.exchanges, 1):
        t = exchange.headers_ms
        pieces: list[tuple[float, bytes]] = []
        for read in exchange.reads:
            t += read.dt_ms
            pieces.append((t, read.data))
        deltas, usage = sse_deltas(pieces)
        out.append(WireExchange(
            number=number, method=exchange.request.method, path=exchange.request.path,
            status=exchange.status, body=exchange.request.body, deltas=deltas, usage=usage,
            note=str(exchange.headers.get("content-type", "")),
        ))
    return dict(cassette.meta), out


# The journal's envelope: each field's JSON type (None allowed where the server writes null).
_ENTRY_FIELDS: dict[str, tuple[tuple[type, ...], bool, str]] = {
    "seq": ((int,), False, "an integer >= 1 (the arrival number)"),
    "method": ((str,), False, "a string (the HTTP method)"),
    "path": ((str,), False, "a string (the request path)"),
    "headers": ((dict,), True, "an object of header names to strings"),
    "session": ((str,), True, "a string or null"),
    "script": ((str,), True, "a string or null"),
    "step": ((int,), True, "an integer or null"),
    "script_behavior": ((str,), True, "a string or null"),
    "behavior": ((str,), True, "a string or null"),
    "status": ((int,), True, "an HTTP status (100-599) or null"),
    "outcome": ((str,), True, "a string or null"),
    "error": ((dict,), True, "an object or null"),
    "writes": ((list,), False, "a list of writes, each {t, text} or {t, b64}"),
}
_LONGEST_CLOCK_S = 1e10
"""A journal's `t` is seconds on the server's monotonic clock: larger values are not times."""


def _check_entry(entry: Mapping[str, Any], where: str) -> None:
    """Each envelope field has its type (a hand-edited journal names the field that does not)."""
    for name, (types, nullable, wanted) in _ENTRY_FIELDS.items():
        if name not in entry or (nullable and entry[name] is None):
            continue
        value = entry[name]
        if isinstance(value, bool) or not isinstance(value, types):
            raise ViewError(f"{where}: {name} must be {wanted}, got {_shown(value)}")
    seq, status = entry.get("seq"), entry.get("status")
    if isinstance(seq, int) and seq < 1:
        raise ViewError(f"{where}: seq must be {_ENTRY_FIELDS['seq'][2]}, got {seq}")
    if isinstance(status, int) and not 100 <= status <= 599:
        raise ViewError(f"{where}: status must be {_ENTRY_FIELDS['status'][2]}, got {status}")
    headers = entry.get("headers")
    if isinstance(headers, dict):
        for key, value in headers.items():
            if not isinstance(value, str):
                raise ViewError(f"{where}: headers.{key} must be a string, got {_shown(value)}")
    for i, write in enumerate(entry["writes"]):
        if not isinstance(write, dict) or ("text" in write) == ("b64" in write):
            raise ViewError(f"{where}: writes[{i}] must be an object with t and exactly one of text or b64, "
                            f"got {_shown(write)}")
        kind = "text" if "text" in write else "b64"
        if not isinstance(write[kind], str):
            raise ViewError(f"{where}: writes[{i}].{kind} must be a string, got {_shown(write[kind])}")


def _shown(value: Any) -> str:
    return jsonio.dumps(value)[:60]


def _write_bytes(write: Mapping[str, Any], where: str) -> bytes:
    if "text" in write:
        # surrogatepass: a hand-edited `\ud800` is shown (as U+FFFD), not a crash
        return str(write["text"]).encode("utf-8", "surrogatepass")
    try:
        return base64.b64decode(str(write.get("b64", "")), validate=True)
    except binascii.Error as exc:
        raise ViewError(f"{where}: b64 is not base64 ({exc})") from None


def _number(value: Any, where: str, field: str, default: float) -> float:
    if value is None:
        return default
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or not -_LONGEST_CLOCK_S <= value <= _LONGEST_CLOCK_S):
        raise ViewError(f"{where}: {field} must be a number of seconds (a server clock reading, at most "
                        f"{_LONGEST_CLOCK_S:.0e}), got {_shown(value)}")
    return float(value)


def load_journal(path: Path, text: str | None = None) -> list[WireExchange]:
    """The entries of a journal file (`dshkit serve --journal FILE`), in the order they finished;
    `text` is the file's content when the caller has read it already."""
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ViewError(f"{path}: cannot read it ({exc})") from None
    out: list[WireExchange] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            entry = jsonio.loads(line)
        except ValueError as exc:
            raise ViewError(f"{where}: not a JSON line ({exc}); is this a journal written by `dshkit serve --journal`?") from None
        if not isinstance(entry, dict) or "writes" not in entry or "path" not in entry:
            raise ViewError(f"{where}: not a journal entry (expected keys seq, path, body, writes)")
        _check_entry(entry, where)
        writes = entry["writes"]
        t0 = _number(entry.get("t"), where, "t", 0.0)
        pieces = [((_number(w.get("t"), where, f"writes[{i}].t", t0) - t0) * 1000.0, _write_bytes(w, f"{where}: writes[{i}]"))
                  for i, w in enumerate(writes)]
        # The HTTP head is the first write for streamed answers; only the body holds SSE lines.
        deltas, usage = sse_deltas(pieces)
        note = " · ".join(
            f"{key} {entry[key]}" for key in ("script", "step", "behavior") if entry.get(key) is not None
        )
        seq, status, outcome, session = (entry.get(k) for k in ("seq", "status", "outcome", "session"))
        out.append(WireExchange(
            number=seq if isinstance(seq, int) else len(out) + 1,
            method=str(entry.get("method", "POST")), path=str(entry["path"]),
            status=status, body=entry.get("body"), deltas=deltas, usage=usage, note=note,
            session=session, outcome=outcome, started_s=t0,
        ))
    return out
