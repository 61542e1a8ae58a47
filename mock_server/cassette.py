"""Cassettes: recorded HTTP exchanges with every network read, their bytes and their timing.

`recordings/NAME.cassette.jsonl` holds a header line `{"type": "cassette", "version": 1, …}` and
then one `exchange` line per exchange: the request (method, path, headers, body; secrets
scrubbed to `{{scrubbed:LABEL}}`), the response status and headers, `headers_ms` (request sent →
response headers) and `reads: [{"text" | "b64", "dt_ms"}]`, each network read with its delay
since the previous one (the first since the headers). `text` is used only when the read is
valid UTF-8 on its own; a read that ends inside a character is `b64`. Unlike vcrpy's one-blob
bodies (peers.md), nothing is joined: replay writes the reads one for one.

This module holds the format (load with located errors, atomic save), the scrubber the recorder
applies and the conversion to mock-server scripts (raw steps) and back.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mock_server.generate import WritePlan, plan_writes
from mock_server.journal import SECRET_FIELDS, is_secret_header
from mock_server.routing import HARNESS_SESSION_HEADER, SESSION_HEADER
from mock_server.scripts import Match, RawSpec, RawStep, RawWrite, Script, ScriptError, Step, Timing

__all__ = [
    "CASSETTE_SUFFIX",
    "CASSETTE_VERSION",
    "Cassette",
    "CassetteError",
    "Read",
    "RecordedExchange",
    "RecordedRequest",
    "Scrubber",
    "cassette_path",
    "cassette_to_scripts",
    "load_cassette",
    "save_cassette",
    "script_to_cassette",
]

CASSETTE_VERSION = 1
CASSETTE_SUFFIX = ".cassette.jsonl"
_HOP_HEADERS = frozenset(
    {
        "connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding",
        "date", "server", "proxy-connection", "te", "trailer", "upgrade",
    }
)


class CassetteError(ScriptError):
    """A cassette that cannot be read: file, line, field and what to do."""

    default_source = "<cassette>"


@dataclass(frozen=True, slots=True)
class Read:
    """One network read: its bytes and the delay since the previous read."""

    data: bytes
    dt_ms: float

    def to_json(self) -> dict[str, Any]:
        try:
            return {"text": self.data.decode("utf-8"), "dt_ms": self.dt_ms}
        except UnicodeDecodeError:
            return {"b64": base64.b64encode(self.data).decode("ascii"), "dt_ms": self.dt_ms}


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    """What the client sent (scrubbed)."""

    method: str = "POST"
    path: str = "/chat/completions"
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    """The parsed JSON body; None for no body, a string for a body that is not JSON."""

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path, "headers": dict(self.headers), "body": self.body}


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedExchange:
    """One request and the response as it arrived, read by read."""

    request: RecordedRequest
    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    headers_ms: float = 0.0
    reads: tuple[Read, ...] = ()

    @property
    def body(self) -> bytes:
        """The response body: every read joined."""
        return b"".join(r.data for r in self.reads)

    @property
    def is_chat(self) -> bool:
        """A model call: Chat Completions, or the Anthropic Messages surface (query ignored)."""
        path = self.request.path.split("?", 1)[0].rstrip("/")
        return self.request.method == "POST" and (
            path.endswith("/chat/completions")
            or (path.startswith("/anthropic/") and path.endswith("/messages"))
        )

    def summary(self) -> str:
        body = self.request.body
        model = body.get("model") if isinstance(body, Mapping) else None
        return f"{self.request.method} {self.request.path}" + (f" model={model}" if model else "") + f" → {self.status}"

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "exchange",
            "request": self.request.to_json(),
            "status": self.status,
            "headers": dict(self.headers),
            "headers_ms": self.headers_ms,
            "reads": [r.to_json() for r in self.reads],
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Cassette:
    """A header and the exchanges in the order they completed."""

    exchanges: tuple[RecordedExchange, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Header fields besides `type` and `version` (`upstream`, `recorded_at`, `recorder`)."""
    source: str = "<cassette>"

    def dumps(self) -> str:
        lines = [{"type": "cassette", "version": CASSETTE_VERSION, **self.meta}]
        lines += [x.to_json() for x in self.exchanges]
        return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def cassette_path(name: str | os.PathLike[str]) -> Path:
    """`recordings/NAME` → `recordings/NAME.cassette.jsonl` (a full file name stays as it is)."""
    p = Path(name)
    return p if p.name.endswith(CASSETTE_SUFFIX) or p.suffix == ".jsonl" else p.with_name(p.name + CASSETTE_SUFFIX)


def save_cassette(cassette: Cassette, path: str | os.PathLike[str]) -> Path:
    """Write atomically: a temporary file in the same folder, fsync, `os.replace`, fsync the
    folder. A crash at any point leaves the previous file (or none), never a torn one."""
    target = cassette_path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(cassette.dumps())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    try:
        fd = os.open(target.parent, os.O_RDONLY)
    except OSError:  # pragma: no cover - a platform without directory fds
        return target
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return target


# --- loading ---------------------------------------------------------------------------------


def _need(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], err: Any, where: str) -> Any:
    if key not in obj:
        raise err(f"missing `{key}`", field=f"{where}{key}")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise err(f"`{key}` must be {names}, got {type(value).__name__}", field=f"{where}{key}")
    return value


def _str_map(value: Any, err: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise err("must be an object of string values", field=where)
    return dict(value)


def _exchange_from_json(obj: Mapping[str, Any], err: Any) -> RecordedExchange:
    req = _need(obj, "request", Mapping, err, "")
    reads_json = _need(obj, "reads", list, err, "")
    reads: list[Read] = []
    for i, r in enumerate(reads_json):
        where = f"reads[{i}]"
        if not isinstance(r, Mapping) or ("text" in r) == ("b64" in r):
            raise err("a read needs exactly one of `text` or `b64`", field=where)
        dt = _need(r, "dt_ms", (int, float), err, where + ".")
        if dt < 0:
            raise err("`dt_ms` must be >= 0", field=f"{where}.dt_ms")
        if "text" in r:
            if not isinstance(r["text"], str):
                raise err("`text` must be a string", field=f"{where}.text")
            data = r["text"].encode("utf-8")
        else:
            try:
                data = base64.b64decode(r["b64"], validate=True)
            except (ValueError, TypeError) as e:
                raise err(f"`b64` is not valid base64: {e}", field=f"{where}.b64") from None
        reads.append(Read(data, float(dt)))
    status = _need(obj, "status", int, err, "")
    if not 100 <= status <= 599:
        raise err(f"`status` must be an HTTP status, got {status}", field="status")
    headers_ms = obj.get("headers_ms", 0)
    if not isinstance(headers_ms, (int, float)) or headers_ms < 0:
        raise err("`headers_ms` must be a number >= 0", field="headers_ms")
    return RecordedExchange(
        request=RecordedRequest(
            method=_need(req, "method", str, err, "request."),
            path=_need(req, "path", str, err, "request."),
            headers=_str_map(req.get("headers", {}), err, "request.headers"),
            body=req.get("body"),
        ),
        status=status,
        headers=_str_map(obj.get("headers", {}), err, "headers"),
        headers_ms=float(headers_ms),
        reads=tuple(reads),
    )


def load_cassette(path: str | os.PathLike[str]) -> Cassette:
    """Read a cassette; any problem raises `CassetteError` naming the file, line and field."""
    p = cassette_path(path)
    src = str(p)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CassetteError(
            "no such cassette", source=src, hint="record one with `dshkit record --upstream URL --out NAME`"
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise CassetteError(f"cannot read the cassette: {e}", source=src) from None
    meta: dict[str, Any] | None = None
    exchanges: list[RecordedExchange] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue

        def err(message: str, *, field: str | None = None, n: int = number) -> CassetteError:
            return CassetteError(message, source=src, line=n, field=field,
                                 hint="re-record it, or fix the line by hand (docs/record_replay.md)")

        try:
            obj = json.loads(line)
        except ValueError as e:
            raise err(f"not a JSON line: {e}") from None
        if not isinstance(obj, Mapping):
            raise err("a cassette line must be a JSON object")
        if meta is None:
            if obj.get("type") != "cassette":
                raise err('the first line must be the header {"type": "cassette", "version": 1, ...}', field="type")
            if obj.get("version") != CASSETTE_VERSION:
                raise err(f"unsupported cassette version {obj.get('version')!r}; this dshkit reads version "
                          f"{CASSETTE_VERSION}", field="version")
            meta = {k: v for k, v in obj.items() if k not in ("type", "version")}
            continue
        if obj.get("type") != "exchange":
            raise err(f"expected an `exchange` line, got type {obj.get('type')!r}", field="type")
        exchanges.append(_exchange_from_json(obj, err))
    if meta is None:
        raise CassetteError("empty file: no cassette header line", source=src, line=1)
    return Cassette(exchanges=tuple(exchanges), meta=meta, source=src)


# --- scrubbing -------------------------------------------------------------------------------


def _placeholder(label: str) -> str:
    return "{{scrubbed:" + label + "}}"


class Scrubber:
    """Replaces secrets before anything is written: credential headers, credential-looking body
    fields, the literal key values seen in those headers (wherever they reappear) and custom
    regexes (`LABEL=REGEX` or a bare `REGEX`, labelled `pattern`). `enabled=False` keeps only
    the custom patterns."""

    def __init__(self, patterns: Iterable[str] = (), *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.patterns: list[tuple[str, re.Pattern[str]]] = []
        for item in patterns:
            label, sep, regex = item.partition("=")
            if not sep or not re.fullmatch(r"[A-Za-z0-9_.-]+", label):
                label, regex = "pattern", item
            try:
                self.patterns.append((label, re.compile(regex)))
            except re.error as e:
                raise ValueError(f"--scrub {item!r}: invalid regex: {e}") from None
        self.secrets: dict[str, str] = {}

    def learn(self, headers: Mapping[str, str]) -> None:
        """Remember key values from credential headers so they are scrubbed everywhere."""
        if not self.enabled:
            return
        for name, value in headers.items():
            low = name.lower()
            if is_secret_header(low):
                token = value.split(None, 1)[1] if low.endswith("authorization") and " " in value else value
                if len(token) >= 6:
                    self.secrets[token] = low

    def text(self, value: str) -> str:
        for secret, label in self.secrets.items():
            value = value.replace(secret, _placeholder(label))
        for label, pattern in self.patterns:
            value = pattern.sub(_placeholder(label), value)
        return value

    def data(self, value: bytes) -> bytes:
        """Scrub a read; bytes that are not UTF-8 are scrubbed through latin-1, byte for byte."""
        if not self.secrets and not self.patterns:
            return value
        try:
            return self.text(value.decode("utf-8")).encode("utf-8")
        except UnicodeDecodeError:
            return self.text(value.decode("latin-1")).encode("latin-1", "replace")

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for name, value in headers.items():
            low = name.lower()
            if self.enabled and is_secret_header(low):
                out[low] = _placeholder(low)
            else:
                out[low] = self.text(value)
        return out

    def body(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {
                k: (_placeholder(k) if self.enabled and k in SECRET_FIELDS and v is not None else self.body(v))
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.body(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value


# --- cassettes ⇄ scripts ---------------------------------------------------------------------

MatchMode = Literal["sequence", "body"]


def _session_of(x: RecordedExchange) -> str:
    # The session headers `routing.session_of` reads; no API-key fallback: keys are scrubbed.
    h = {k.lower(): v for k, v in x.request.headers.items()}
    return h.get(SESSION_HEADER.lower()) or h.get(HARNESS_SESSION_HEADER) or ""


def _writes(x: RecordedExchange, scale: float, resplit: int | None) -> tuple[float, list[RawWrite]]:
    """(delay before the first write, the writes with the delay after each), in ms; recorded
    delays are multiplied by `scale`."""
    reads = [r for r in x.reads if r.data]
    if not reads:
        return 0.0, []
    if resplit is None:
        pieces = [(r.data, r.dt_ms) for r in reads]
    else:
        # New boundaries from a seeded plan; each new write starting in an old read takes that
        # read's delay, so the pacing stays roughly where it was.
        starts: dict[int, float] = {}
        pos = 0
        for r in reads:
            starts[pos] = r.dt_ms
            pos += len(r.data)
        plan = WritePlan(events_per_write=0, random_max=24, seed=resplit, inside_utf8=True)
        pieces = []
        pos = 0
        for piece in plan_writes(b"".join(r.data for r in reads), plan):
            dt = sum(d for s, d in starts.items() if pos <= s < pos + len(piece))
            pieces.append((piece, dt))
            pos += len(piece)
    first = pieces[0][1] * scale
    writes: list[RawWrite] = []
    for i, (data, _) in enumerate(pieces):
        after = pieces[i + 1][1] * scale if i + 1 < len(pieces) else 0.0
        try:
            writes.append(RawWrite(text=data.decode("utf-8"), delay_ms=after))
        except UnicodeDecodeError:
            writes.append(RawWrite(b64=base64.b64encode(data).decode("ascii"), delay_ms=after))
    return first, writes


def cassette_to_scripts(
    cassette: Cassette,
    *,
    speed: float = 1.0,
    resplit: int | None = None,
    match: MatchMode = "sequence",
    name: str | None = None,
) -> list[Script]:
    """Mock-server scripts of raw steps that serve the cassette's chat exchanges byte for byte.

    Exchanges are grouped by the session header they were recorded with (one script per
    recorded session, in first-request order, so live sessions claim them as §2.8 binds); with
    `match="body"` each step answers only a request whose body equals the recorded one.
    `speed` scales the recorded delays (0: no waiting); `resplit` re-cuts the bytes with a
    seeded plan to try other read boundaries.
    """
    if speed < 0:
        raise ValueError(f"speed must be >= 0, got {speed}")
    base = name or Path(cassette.source).name.removesuffix(CASSETTE_SUFFIX)
    scale = 0.0 if speed == 0 else 1.0 / speed
    groups: dict[str, list[tuple[int, RecordedExchange]]] = {}
    for n, x in enumerate(cassette.exchanges, 1):
        if x.is_chat:
            groups.setdefault(_session_of(x), []).append((n, x))
    scripts: list[Script] = []
    for g, items in enumerate(groups.values()):
        steps: list[Step] = []
        for n, x in items:
            first, writes = _writes(x, scale, resplit)
            headers = {k: v for k, v in x.headers.items() if k.lower() not in _HOP_HEADERS}
            steps.append(
                RawStep(
                    label=f"exchange {n}: {x.summary()}",
                    match=Match(body=x.request.body) if match == "body" and x.request.body is not None else None,
                    timing=Timing(headers_delay_ms=round(x.headers_ms * scale)),
                    raw=RawSpec(status=x.status, headers=headers, writes=writes, first_write_delay_ms=first),
                )
            )
        if steps:
            scripts.append(Script(name=base if len(groups) == 1 else f"{base}#{g}", steps=steps))
    if not scripts:
        raise CassetteError(
            "the cassette holds no POST …/chat/completions or /anthropic/…/messages exchange to replay", source=cassette.source
        )
    return scripts


def script_to_cassette(scripts: Sequence[Script], *, meta: Mapping[str, Any] | None = None) -> Cassette:
    """The inverse for raw steps with explicit writes: one exchange per step (the request is
    the step's `match.body`, if any). Other step kinds have no fixed bytes and are refused."""
    out: list[RecordedExchange] = []
    for script in scripts:
        for i, step in enumerate(script.steps):
            if not isinstance(step, RawStep) or step.raw.file is not None:
                raise CassetteError(
                    f"step {script.step_label(i)} is not a raw step with `writes`",
                    source=script.name,
                    field=f"steps[{i}]",
                    hint="only raw steps have fixed bytes; record the server instead (dshkit record)",
                )
            raw = step.raw
            reads: list[Read] = []
            dt = raw.first_write_delay_ms
            for w in raw.writes:
                reads.append(Read(w.data(), dt))
                dt = w.delay_ms
            body = step.match.body if step.match is not None else None
            headers = {"x-mock-session": script.session} if script.session else {}
            out.append(
                RecordedExchange(
                    request=RecordedRequest(headers=headers, body=body),
                    status=raw.status,
                    headers={k.lower(): v for k, v in raw.headers.items()},
                    headers_ms=float(step.timing.headers_delay_ms),
                    reads=tuple(reads),
                )
            )
    return Cassette(exchanges=tuple(out), meta=dict(meta or {"converted_from": "script"}))
