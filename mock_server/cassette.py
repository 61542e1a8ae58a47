"""Cassettes: recorded HTTP exchanges with every network read, their bytes and their timing.

`recordings/NAME.cassette.jsonl` holds a header line `{"type": "cassette", "version": 1, …}` and
then one `exchange` line per exchange: the request (method, path, headers, body; secrets
scrubbed to `{{scrubbed:LABEL}}`), the response status and headers, `headers_ms` (request sent →
response headers) and `reads: [{"text" | "b64", "dt_ms"}]`, each network read with its delay
since the previous one (the first since the headers). `text` is used only when the read is
valid UTF-8 on its own; a read that ends inside a character is `b64`. Unlike vcrpy's one-blob
bodies (peers.md), nothing is joined: replay writes the reads one for one. An exchange whose
upstream connection broke before the body ended carries `cut` (why), and replay breaks the
connection at the same byte.

The recorder appends one line per exchange (:class:`CassetteAppender`), so a crash can tear at
most the last line; `load_cassette` sets a torn last line aside instead of refusing the file.
This module holds the format (load with located errors, atomic save, append), the scrubber the
recorder applies and the conversion of raw-step scripts to a cassette; serving a cassette
(`cassette_to_scripts`) is `dshkit.mock_server.replay`.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import fcntl
import glob
import math
import os
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

from dshkit.harness.llm import jsonio
from dshkit.harness.secrets import (
    MIN_SECRET_LENGTH,
    KnownSecrets,
    credential_pairs,
    credential_values,
    is_credential_name,
    placeholder,
    scrub_credential_text,
    scrub_headers,
    scrub_json,
    scrub_query,
    scrub_strings,
    scrub_url,
)
from dshkit.mock_server.scripts import (
    RawStep,
    Script,
    ScriptError,
)

__all__ = [
    "CASSETTE_SUFFIX",
    "CASSETTE_VERSION",
    "Cassette",
    "CassetteAppender",
    "CassetteError",
    "CassetteLocked",
    "Read",
    "RecordedExchange",
    "RecordedRequest",
    "Scrubber",
    "cassette_path",
    "load_cassette",
    "parse_cassette",
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
    cut: str | None = None
    """Why the body ended early (the upstream connection broke mid-body); None for a whole body.
    Replay writes the reads, then breaks the connection the same way."""

    @property
    def body(self) -> bytes:
        """The response body: every read joined."""
        return b"".join(r.data for r in self.reads)

    @property
    def is_chat(self) -> bool:
        """A model call: Chat Completions, or the Anthropic Messages surface (the recorded path
        keeps its query, which is ignored here)."""
        path = self.request.path.partition("?")[0].rstrip("/")
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
            **({"cut": self.cut} if self.cut is not None else {}),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Cassette:
    """A header and the exchanges in the order they completed."""

    exchanges: tuple[RecordedExchange, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Header fields besides `type` and `version` (`upstream`, `recorded_at`, `recorder`)."""
    source: str = "<cassette>"
    torn_line: int | None = None
    """The number of a torn last line (a crash in the middle of appending it) that `load_cassette`
    set aside; None when the file ended cleanly."""

    def dumps(self) -> str:
        lines = [{"type": "cassette", "version": CASSETTE_VERSION, **self.meta}]
        lines += [x.to_json() for x in self.exchanges]
        return "".join(jsonio.dumps(line, compact=False) + "\n" for line in lines)


def cassette_path(name: str | os.PathLike[str]) -> Path:
    """`recordings/NAME` → `recordings/NAME.cassette.jsonl` (a full file name stays as it is)."""
    p = Path(name)
    return p if p.name.endswith(CASSETTE_SUFFIX) or p.suffix == ".jsonl" else p.with_name(p.name + CASSETTE_SUFFIX)


def save_cassette(cassette: Cassette, path: str | os.PathLike[str]) -> Path:
    """Write atomically: a temporary file in the same folder, fsync, `os.replace`, fsync the
    folder. A crash at any point leaves the previous file (or none), never a torn one."""
    target = cassette_path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}{_TMP_INFIX}{os.getpid()}-{secrets.token_hex(4)}")
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


_TMP_INFIX = ".tmp-"


def _remove_orphan_temps(target: Path) -> list[Path]:
    """Delete temporary files `save_cassette` left for `target` when its process died before
    `os.replace` (their name carries the writer's pid; a live writer's file is kept)."""
    removed: list[Path] = []
    prefix = f".{target.name}{_TMP_INFIX}"
    with contextlib.suppress(OSError):
        for p in target.parent.glob(glob.escape(prefix) + "*"):
            pid = p.name[len(prefix):].split("-", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and _alive(int(pid)):
                continue
            with contextlib.suppress(OSError):
                p.unlink()
                removed.append(p)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


class CassetteAppender:
    """Appends exchanges to a cassette: one `write` of one line per exchange, then fsync.

    Writing costs the exchange's own bytes, not the whole cassette's (rewriting the file after
    every exchange made 300 exchanges write gigabytes). A crash mid-write can tear only the last
    line, which `load_cassette` sets aside; a failed write is cut back off the file, so a later
    exchange never lands after half a line.

    `open()` starts a new cassette (header only, written atomically) when the file is absent or
    `overwrite` is set; otherwise it keeps what is recorded and appends after it. A torn last line
    found there is moved to `NAME.cassette.jsonl.torn` first. A file that is not a cassette is
    refused (`CassetteError`), never replaced.
    """

    def __init__(self, path: str | os.PathLike[str], meta: Mapping[str, Any], *, overwrite: bool = False) -> None:
        self.path = cassette_path(path)
        self.meta = dict(meta)
        self.overwrite = overwrite
        self.existing = 0
        """Exchanges the file already held when it was opened."""
        self.set_aside: Path | None = None
        """Where a torn last line found at open was moved, if any."""
        self.bytes_written = 0
        self._fd: int | None = None
        self._inode: int | None = None

    def open(self) -> CassetteAppender:
        """Take the cassette: lock it (`CassetteLocked` when another appender holds it), then
        start it afresh or adopt it. The lock is held until `close()`."""
        _remove_orphan_temps(self.path)
        old_fd = self._lock_existing()
        try:
            if old_fd is not None and not self.overwrite:
                self._adopt()  # appends to the locked file itself
                fd = old_fd
            else:
                save_cassette(Cassette(meta=self.meta), self.path)
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
                if not _try_lock(fd):  # another appender took the new file the instant it appeared
                    os.close(fd)
                    raise self._locked()
            self._fd = fd
        finally:
            if old_fd is not None and old_fd != self._fd:
                os.close(old_fd)  # the replaced file's lock goes with it
        self._inode = os.fstat(fd).st_ino
        return self

    def _lock_existing(self) -> int | None:
        """Lock the file already at `path` (before it is adopted or replaced); None when absent."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        except FileNotFoundError:
            return None
        if not _try_lock(fd):
            os.close(fd)
            raise self._locked()
        return fd

    def _locked(self) -> CassetteLocked:
        return CassetteLocked(
            "another recorder is writing this cassette (it holds its lock)", source=str(self.path),
            hint="stop that recorder first, or record into another --out; replacing the file under it "
            "would make the exchanges it records from then on vanish",
        )

    def _adopt(self) -> None:
        """Check the existing file is a cassette; set a torn last line aside."""
        old = load_cassette(self.path)  # raises CassetteError for anything that is not a cassette
        self.existing = len(old.exchanges)
        data = self.path.read_bytes()
        if old.torn_line is not None:
            keep = _offset_of_line(data, old.torn_line)
            self.set_aside = self.path.with_name(self.path.name + ".torn")
            with open(self.set_aside, "ab") as f:
                f.write(data[keep:].rstrip(b"\n") + b"\n")
            os.truncate(self.path, keep)
            data = data[:keep]
        if data and not data.endswith(b"\n"):
            with open(self.path, "ab") as f:  # a hand-edited file without its final newline
                f.write(b"\n")

    def append(self, exchange: RecordedExchange) -> int:
        """Write one exchange line and fsync; returns the bytes written. On failure the file is
        cut back to where it was and the OSError propagates."""
        if self._fd is None:
            raise RuntimeError("the cassette appender is not open")
        self._check_still_ours()
        # Any string the JSON parser or aiohttp can produce (a lone surrogate from `"\\ud800"`, a
        # header byte that is not UTF-8) is written, escaped; NaN never appears bare.
        line = (jsonio.dumps(exchange.to_json(), compact=False) + "\n").encode("utf-8")
        before = os.fstat(self._fd).st_size
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(self._fd, view):]
            os.fsync(self._fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, before)
            raise
        self.bytes_written += len(line)
        return len(line)

    def _check_still_ours(self) -> None:
        """Fail loudly when `path` no longer names the file being appended to (replaced or
        deleted by something that ignored the lock): appending would write to a file no one sees."""
        try:
            inode: int | None = os.stat(self.path).st_ino
        except FileNotFoundError:
            inode = None
        if inode != self._inode:
            what = "was deleted" if inode is None else "was replaced by another file"
            raise OSError(errno.ESTALE, f"{self.path} {what} while recording (by something that ignored "
                          "the recorder's lock); this exchange and any later one are not saved: stop "
                          "and record again")

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # releases the lock


class CassetteLocked(CassetteError):
    """The cassette is held by another `CassetteAppender` (a running recorder)."""


def _try_lock(fd: int) -> bool:
    """An exclusive `flock` on `fd` without waiting; False when another process holds one."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _offset_of_line(data: bytes, number: int) -> int:
    """The byte offset where line `number` (1-based) starts."""
    pos = 0
    for _ in range(number - 1):
        pos = data.index(b"\n", pos) + 1
    return pos


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
        dt = _delay(_need(r, "dt_ms", (int, float), err, where + "."), err, f"{where}.dt_ms")
        if "text" in r:
            if not isinstance(r["text"], str):
                raise err("`text` must be a string", field=f"{where}.text")
            try:
                data = r["text"].encode("utf-8")
            except UnicodeEncodeError:
                raise err("`text` holds a lone surrogate (a \\uD800-\\uDFFF escape without its pair), "
                          "which is no byte sequence; give such bytes as `b64`", field=f"{where}.text") from None
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
    if not isinstance(headers_ms, (int, float)) or isinstance(headers_ms, bool):
        raise err(f"`headers_ms` must be a number, got {type(headers_ms).__name__}", field="headers_ms")
    headers_ms = _delay(headers_ms, err, "headers_ms")
    return RecordedExchange(
        request=RecordedRequest(
            method=_need(req, "method", str, err, "request."),
            path=_need(req, "path", str, err, "request."),
            headers=_str_map(req.get("headers", {}), err, "request.headers"),
            body=req.get("body"),
        ),
        status=status,
        headers=_str_map(obj.get("headers", {}), err, "headers"),
        headers_ms=headers_ms,
        reads=tuple(reads),
        cut=_cut_of(obj, err),
    )


MAX_DELAY_MS = 3_600_000
"""The longest delay a cassette may hold (`dt_ms`, `headers_ms`): one hour. Longer, infinite or
NaN delays (hand edits, `1e308`) would stall a replay for ever or crash it; they are refused."""


def _delay(value: int | float, err: Any, where: str) -> float:
    if not math.isfinite(value) or not 0 <= value <= MAX_DELAY_MS:
        raise err(f"must be a finite number of milliseconds from 0 to {MAX_DELAY_MS} (one hour), "
                  f"got {value!r}", field=where)
    return float(value)


def _cut_of(obj: Mapping[str, Any], err: Any) -> str | None:
    cut = obj.get("cut")
    if cut is not None and (not isinstance(cut, str) or not cut):
        raise err("`cut` must be a non-empty string (why the body ended early) or absent", field="cut")
    return cut


def _lines(text: str) -> Iterator[tuple[int, str, bool]]:
    """(number, line, is_last) for the non-blank lines."""
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    for i, (n, line) in enumerate(numbered):
        yield n, line, i == len(numbered) - 1


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
    return parse_cassette(text, source=src)


def parse_cassette(text: str, *, source: str = "<cassette>") -> Cassette:
    """Read cassette text (as `load_cassette` does a file); `source` names it in errors."""
    src = source
    meta: dict[str, Any] | None = None
    exchanges: list[RecordedExchange] = []
    torn: int | None = None
    for number, line, last in _lines(text):

        def err(message: str, *, field: str | None = None, n: int = number) -> CassetteError:
            return CassetteError(message, source=src, line=n, field=field,
                                 hint="re-record it, or fix the line by hand (docs/record_replay.md)")

        try:
            obj = jsonio.loads(line)
        except jsonio.JsonTooDeep as e:  # never a torn write (a cut line is a syntax error)
            raise err(e.problem) from None
        except ValueError as e:
            if last and meta is not None:
                # A crash while appending tears at most the last line (one write per exchange):
                # set it aside, keep everything before it.
                torn = number
                break
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
    return Cassette(exchanges=tuple(exchanges), meta=meta, source=src, torn_line=torn)


# --- scrubbing -------------------------------------------------------------------------------


class Scrubber:
    """Replaces secrets before anything is written, by the one secrets policy
    (`dshkit.harness.secrets`: names, whole-value matching, minimum length, placeholders).

    What goes: credential headers and body fields (nested, any case, lists and objects under
    them), credential query parameters of the request path, credential pairs of a body that is
    not JSON (a form body `client_secret=S&password=P`, a pasted `Authorization: Bearer K`), the
    literal values seen in any of those (wherever they reappear whole: other strings, response
    headers, the response body even when a value is split across two network reads) and custom
    regexes (`LABEL=REGEX` or a bare `REGEX`, labelled `pattern`). `enabled=False` keeps only
    the custom patterns.
    """

    MIN_SECRET = MIN_SECRET_LENGTH
    """Shorter values are not learned: replacing every `abc` in a body would wreck it."""

    def __init__(self, patterns: Iterable[str] = (), *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.patterns: list[tuple[str, re.Pattern[str]]] = []
        for item in patterns:
            label, sep, regex = item.partition("=")
            if not sep or not re.fullmatch(r"[A-Za-z0-9_.-]+", label):
                label, regex = "pattern", item
            try:
                compiled = re.compile(regex)
            except re.error as e:
                raise ValueError(f"--scrub {item!r}: invalid regex: {e}") from None
            if compiled.search("") is not None:
                raise ValueError(f"--scrub {item!r}: the regex matches the empty string, so it would "
                                 "scrub between every character; give one that matches at least one "
                                 "character")
            self.patterns.append((label, compiled))
        self.secrets = KnownSecrets()
        """The values learned so far, replaced wherever they appear whole."""

    def remember(self, value: str, label: str) -> None:
        """Scrub `value` wherever it appears from now on (labelled `label`)."""
        if self.enabled:
            self.secrets.add(value, label)

    def learn(self, headers: Mapping[str, str]) -> None:
        """Remember key values from credential headers so they are scrubbed everywhere."""
        for name, value in headers.items():
            low = name.lower()
            if is_credential_name(low):
                scheme, _, rest = value.partition(" ")
                if low.endswith(("authorization", "authentication")) and rest.strip() and scheme.isalpha():
                    self.remember(rest.strip(), low)  # `Bearer KEY`: the key alone reappears
                    if scheme.lower() == "basic":
                        self._learn_basic(rest.strip(), low)
                self.remember(value, low)

    def _learn_basic(self, token: str, label: str) -> None:
        try:
            user_pass = base64.b64decode(token, validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return
        user, _, password = user_pass.partition(":")
        self.remember(password or user, label)  # `TOKEN:` (a username-only credential) too

    def learn_body(self, value: Any) -> None:
        """Remember the values under credential names anywhere in a parsed JSON body, or of the
        credential pairs in a body that is not JSON (form-encoded or text)."""
        if isinstance(value, str):
            for name, found in credential_pairs(value):
                self.remember(found, name)
                self.remember(unquote_plus(found), name)
            return
        for name, found in credential_values(value):
            self.remember(found, name)

    def learn_path(self, path_qs: str) -> None:
        """Remember the values of credential query parameters (`?api_key=…`, `?key=…`, `?code=…`)."""
        if not self.enabled:
            return
        _, _, query = path_qs.partition("?")
        for part in query.split("&"):
            name, sep, value = part.partition("=")
            if sep and value and is_credential_name(unquote_plus(name), in_url=True):
                self.remember(unquote_plus(value), unquote_plus(name))
                self.remember(value, unquote_plus(name))

    def path(self, path_qs: str) -> str:
        """The request path with credential query values replaced (names and order kept)."""
        return self.text(scrub_query(path_qs) if self.enabled else path_qs)

    def url(self, url: str) -> str:
        """A URL fit to print: the credential in its user part (`http://TOKEN@host`,
        `http://user:PASS@host`) and its query replaced, known values scrubbed."""
        return self.text(scrub_url(url) if self.enabled else url)

    def text(self, value: str) -> str:
        value = self.secrets.scrub(value)
        for label, pattern in self.patterns:
            value = pattern.sub(placeholder(label), value)
        return value

    def data(self, value: bytes) -> bytes:
        """Scrub one piece of bytes (see `reads` for a body that arrived in several)."""
        return b"".join(r.data for r in self.reads([Read(value, 0.0)]))

    def reads(self, reads: Sequence[Read]) -> tuple[Read, ...]:
        """Scrub a response body read by read, matching across read boundaries.

        The matches are found in the joined body, so a key split over two reads is still caught.
        Each match becomes its placeholder inside the read where it started; the following reads
        lose the matched bytes they held. Boundaries and delays stay otherwise as they were.
        """
        if not self.secrets and not self.patterns:
            return tuple(reads)
        joined = b"".join(r.data for r in reads)
        spans = self._spans(joined)
        if not spans:
            return tuple(reads)
        out: list[Read] = []
        start = 0
        k = 0
        for r in reads:
            end = start + len(r.data)
            piece = bytearray()
            i = start
            while i < end:
                while k < len(spans) and spans[k][1] <= i:
                    k += 1
                if k < len(spans) and spans[k][0] < end:
                    s, e, mark = spans[k]
                    if s > i:
                        piece += joined[i:s]
                        i = s
                    if s >= start:
                        piece += mark
                    i = min(e, end)
                else:
                    piece += joined[i:end]
                    i = end
            out.append(Read(bytes(piece), r.dt_ms))
            start = end
        return tuple(out)

    def _spans(self, data: bytes) -> list[tuple[int, int, bytes]]:
        """Non-overlapping (start, end, placeholder) byte spans to replace in `data`, in order."""
        # Decoded losslessly (bytes that are not UTF-8 become lone surrogates, one per byte), so
        # character offsets map back to byte offsets exactly.
        text = data.decode("utf-8", "surrogateescape")
        hits = list(self.secrets.spans(text))
        hits += [
            (m.start(), m.end(), label)
            for label, pattern in self.patterns
            for m in pattern.finditer(text)
            if m.end() > m.start()
        ]
        hits.sort(key=lambda h: (h[0], -(h[1] - h[0])))
        found: list[tuple[int, int, bytes]] = []
        ci = bi = 0
        for cs, ce, label in hits:  # sorted by start: advance one running offset
            bi += len(text[ci:cs].encode("utf-8", "surrogateescape"))
            ci = cs
            be = bi + len(text[cs:ce].encode("utf-8", "surrogateescape"))
            found.append((bi, be, placeholder(label).encode()))
        spans: list[tuple[int, int, bytes]] = []
        for f in found:
            if not spans or f[0] >= spans[-1][1]:
                spans.append(f)
        return spans

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        if self.enabled:
            return scrub_headers(headers, text=self.text)
        return {name.lower(): self.text(value) for name, value in headers.items()}

    def body(self, value: Any) -> Any:
        """A parsed body scrubbed: a JSON value by name (`scrub_json`), a body that is not JSON
        (a string) by its credential pairs; then known values and patterns in every string."""
        if isinstance(value, str):
            return self.text(scrub_credential_text(value) if self.enabled else value)
        if not self.enabled:
            return scrub_strings(value, self.text)
        return scrub_json(value, text=self.text)


# --- scripts → cassettes (cassettes → scripts is `dshkit.mock_server.replay`) ---------------


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
                    cut="the script resets the connection after its writes" if raw.end == "reset" else None,
                )
            )
    return Cassette(exchanges=tuple(out), meta=dict(meta or {"converted_from": "script"}))
