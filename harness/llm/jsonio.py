"""JSON text in and out, safe for any file and any value: the one parse and the one encode.

Every reader of a file dshkit did not write itself (session logs, cassettes, journals, reports,
captures, scripts) parses through :func:`loads`, and every writer of a JSON line encodes through
:func:`dumps`, so two facts of Python's `json` module are handled once:

* Its parser recurses, and so does every walk over what it returns (the codecs, the secrets
  scrub, the pages). A value nested tens of thousands of levels deep raised `RecursionError`
  somewhere different in each reader. :func:`loads` measures the nesting first, without
  recursing, and refuses a value deeper than `max_depth` (:data:`MAX_DEPTH` = 200 by default)
  with :class:`JsonTooDeep`, a :class:`JsonShapeError` (so a `ValueError`), before parsing.
  No file dshkit writes nests past a few dozen levels; DeepSeek's own parser stops at 128.
* Its parser accepts what no UTF-8 encoder can write back: an escaped lone surrogate
  (`"\\ud800"`) and the bare tokens `NaN` / `Infinity`. :func:`dumps` writes any value the
  parser can return: a line holding a lone surrogate is written with ASCII escapes (which read
  back as the same string), and non-finite numbers become the strings `"NaN"`, `"Infinity"`
  and `"-Infinity"`, so every line written is strict JSON that encodes as UTF-8.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any

from .errors import JsonShapeError

__all__ = ["MAX_DEPTH", "JsonTooDeep", "dumps", "finite", "loads", "nesting_depth"]

MAX_DEPTH = 200
"""Deepest nesting (arrays and objects) :func:`loads` reads by default."""


class JsonTooDeep(JsonShapeError):
    """A JSON text nested deeper than the reader's limit (Python cannot parse or walk it safely).
    `line` is the 1-based line of the text where the nesting passes the limit, when known."""

    def __init__(self, path: str, problem: str, code: str = "JSON_TOO_DEEP", line: int | None = None) -> None:
        super().__init__(path, problem, code)
        self.line = line

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.problem, self.code, self.line))


_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_STEP = bytes.maketrans(b"[]{}", b"\x01\xff\x01\xff")
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'[]{}"')


def nesting_depth(text: str | bytes, *, at_least: int = 0) -> int:
    """How deeply the arrays and objects of a JSON text nest, found without recursion.

    Brackets inside strings do not count. The answer is exact for valid JSON and for a prefix
    of it (a torn line: an unterminated last string counts as a string). When the text holds no
    more than `at_least` opening brackets, that count is returned without looking further (the
    nesting cannot exceed it), which is the common case and costs two C-speed scans.
    """
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    opening = data.count(b"[") + data.count(b"{")
    if opening <= at_least:
        return opening
    return _depth_of(_structure(data))


def _structure(data: bytes) -> bytes:
    """The brackets of `data` outside strings, in order, by C-speed passes only: escapes go
    first (`\\\\`, then `\\"`, so no quote left is escaped), then every other piece of a split
    on `"` (of what is left of the text's brackets and quotes) is outside a string. An odd
    quote count (a torn line) leaves an unterminated last string, which is dropped with the
    rest of the line."""
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    # With all but brackets and quotes gone, two adjacent quotes have no bracket between them:
    # dropping them keeps every later quote's parity and loses no bracket outside a string (a
    # string without brackets vanishes; two strings with nothing between them merge). What is
    # left is short unless many strings hold brackets, and splitting it costs far less than
    # splitting a text of many strings (a line of 100,000 nested objects) into pieces.
    kept = data.translate(None, _NOT_STRUCTURE).replace(b'""', b"")
    return b"".join(kept.split(b'"')[0::2]) if b'"' in kept else kept


def _structure_plain(text: str) -> bytes:
    """What `_structure` computes, the plain way (one character at a time, in or out of a
    string): the reference its differential test holds it to, for JSON texts and their prefixes."""
    out: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[]{}":
            out.append(ch)
    return "".join(out).encode("ascii")


_RUN = 512
"""Steps `_peak_and_net` takes at a time."""


def _depth_of(brackets: bytes) -> int:
    return max(0, _peak_and_net(brackets.translate(_STEP))[0]) if brackets else 0


def _peak_and_net(steps: bytes) -> tuple[int, int]:
    """The highest running count of `steps` (+1 a byte of 0x01, -1 one of 0xff) and where it
    ends. A long sequence is taken a run of `_RUN` at a time, each distinct run's peak and net
    change worked out once: a text nested 100,000 deep is a few distinct runs repeated (as a
    long array of like objects is), where one accumulate over its 200,000 brackets took 8 ms,
    on every read of it."""
    if len(steps) <= _RUN:
        view = memoryview(steps).cast("b")
        return (max(accumulate(view)), sum(view)) if steps else (0, 0)
    runs: dict[bytes, tuple[int, int]] = {}
    depth = 0
    peak = -len(steps)
    for start in range(0, len(steps), _RUN):
        run = steps[start:start + _RUN]
        known = runs.get(run)
        if known is None:
            view = memoryview(run).cast("b")
            known = runs[run] = (max(accumulate(view)), sum(view))
        peak = max(peak, depth + known[0])
        depth += known[1]
    return peak, depth


def loads(text: str | bytes, *, where: str = "", max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads(text)`, refusing nesting deeper than `max_depth` first (:class:`JsonTooDeep`).

    `where` (a file and line, a field) starts the error's message. Syntax errors are
    `json.JSONDecodeError` as usual; bytes that are not UTF-8 are `UnicodeDecodeError`; both,
    like :class:`JsonTooDeep`, are `ValueError`s. A `RecursionError` the depth check did not
    foresee (a caller already deep in its own stack) is reported as :class:`JsonTooDeep` too.
    """
    depth = nesting_depth(text, at_least=max_depth)
    if depth > max_depth:
        raise too_deep(where, depth, max_depth, text=text)
    try:
        return json.loads(text)
    except RecursionError:
        raise too_deep(where, depth, max_depth, text=text) from None


def too_deep(where: str, depth: int, max_depth: int, *, text: str | bytes | None = None) -> JsonTooDeep:
    """The error :func:`loads` raises, for readers that check depth their own way; with `text`
    of several lines, `line` is where the nesting passes `max_depth`."""
    line = _line_past(text, max_depth) if text is not None else None
    return JsonTooDeep(
        where,
        f"nested {depth} levels deep, past the limit of {max_depth} (the parser and every walk "
        "over the value recurse); no file dshkit reads nests like that, so it is damaged or "
        "hand-made: flatten or remove that value",
        line=line,
    )


def _line_past(text: str | bytes, max_depth: int) -> int | None:
    """The 1-based line holding the bracket that opens level `max_depth + 1` (None for one line).

    When every string closes on the line it opens (always so in JSON, where a string cannot
    hold a line break), the brackets outside strings are found line by line by the C-speed
    passes of `_structure`: masking each string by a callback, as `_line_past_masked` does for
    any other text, took a tenth of a second on a line of 100,000 nested objects."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if "\n" not in text.strip():
        return None
    data = text.encode("utf-8", "surrogatepass")
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    pieces = data.split(b'"')
    if len(pieces) % 2 == 0 or b"\n" in b"".join(pieces[1::2]):
        return _line_past_masked(text, max_depth)
    depth = 0
    for number, line in enumerate(b"".join(pieces[0::2]).split(b"\n"), 1):
        steps = line.translate(None, _NOT_BRACKETS).translate(_STEP)
        peak, net = _peak_and_net(steps)
        if steps and depth + peak > max_depth:
            return number
        depth += net
    return None


def _line_past_masked(text: str | bytes, max_depth: int) -> int | None:
    """What `_line_past` finds, with each string masked in place (offsets kept) and the brackets
    counted one at a time: for a text with a line break inside a string or an unclosed one, and
    the reference its differential test holds the fast way to."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if "\n" not in text.strip():
        return None
    masked = _STRINGS.sub(lambda m: '"' + " " * (len(m.group()) - 2) + '"', text)  # offsets kept
    depth = 0
    for m in _BRACKET.finditer(masked):
        depth += 1 if m.group() in "[{" else -1
        if depth > max_depth:
            return text.count("\n", 0, m.start()) + 1
    return None


_BRACKET = re.compile(r"[\[\]{}]")


def finite(value: Any) -> Any:
    """`value` with NaN and the infinities replaced by the strings `NaN`, `Infinity`, `-Infinity`
    (iteratively: any depth)."""
    if isinstance(value, float):
        return _finite_float(value)
    if not isinstance(value, (dict, list)):
        return value
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        node, parent, key = stack.pop()
        if isinstance(node, dict):
            copy_d: dict[Any, Any] = dict.fromkeys(node)  # keeps the key order
            parent[key] = copy_d
            for k, v in node.items():
                stack.append((v, copy_d, k))
        elif isinstance(node, list):
            copy_l: list[Any] = [None] * len(node)
            parent[key] = copy_l
            for i, v in enumerate(node):
                stack.append((v, copy_l, i))
        else:
            parent[key] = _finite_float(node) if isinstance(node, float) else node
    return root[0]


def _finite_float(value: float) -> Any:
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


_SURROGATE = re.compile("[\ud800-\udfff]")
_COMPACT = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_SPACED = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def _text_of(encoder: json.JSONEncoder) -> Any:
    """`encoder.encode`, calling the C encoder straight (what `encode` does for a value that is
    not a string, without building the same encoder in Python on every call); the Python
    `encode` where the C one is missing."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return encoder.encode
    strings = json.encoder.encode_basestring  # ensure_ascii=False
    args = (encoder.default, strings, None, encoder.key_separator, encoder.item_separator, False, False, False)

    def encode(value: Any) -> str:
        return "".join(make({}, *args)(value, 0))  # {}: circular references raise, as in `encode`

    return encode


_ENCODE = {True: _text_of(_COMPACT), False: _text_of(_SPACED)}


def dumps(value: Any, *, compact: bool = True, **options: Any) -> str:
    """`value` as JSON text that is strict JSON and encodes as UTF-8, whatever it holds.

    Plain UTF-8 where possible; ASCII escapes when a string holds a lone surrogate; non-finite
    numbers as strings (see the module text). `compact` drops the spaces after `,` and `:`;
    `options` (`indent`, `sort_keys`) go to `json.dumps`, `ensure_ascii` and `allow_nan` are set
    here. A value nested too deeply to encode raises :class:`JsonTooDeep`.
    """
    try:
        try:
            text = _encode(value, compact, options) if options else _ENCODE[compact](value)
        except ValueError:  # NaN or an infinity somewhere
            value = finite(value)
            text = _encode(value, compact, options)
        if _SURROGATE.search(text):
            return _encode(value, compact, options, ascii_only=True)
        return text
    except RecursionError:
        raise JsonTooDeep("", "a value nested too deeply to write as JSON") from None


def _encode(value: Any, compact: bool, options: dict[str, Any], *, ascii_only: bool = False) -> str:
    separators = (",", ":") if compact else None
    if options.get("indent") is not None and not compact:
        separators = (",", ": ")
    return json.dumps(value, ensure_ascii=ascii_only, allow_nan=False, separators=separators, **options)
