"""Every reader survives every file (issue 18): a corpus of hostile files, generated here from
real ones (a session log `dshkit run` wrote, a committed cassette, the mock's own journal, a
conformance report, a script, a scenario file), fed to every command that reads that kind:

* session logs: `replay`, `replay --wire`, `decode`, `view`, `run --replay`, `run --session`
* cassettes: `serve --replay`, `record --out`, `decode`, `view`, `run --replay`
* journals and reports: `view`, and a journal as `view LOG --journal`
* scripts and scenarios: `serve --script`, `conformance --scenarios`
* wire captures (SSE, JSON, JSONL, error bodies): `decode` in each format and protocol
* replay sidecars (`replay.override.json` beside a real log): `replay`, `replay --wire`

The mutations: nesting 201, 5,000 and 100,000 levels deep (arrays and objects), bytes that are
not UTF-8, lone surrogates, every field of a line set to wrong JSON types (a field that must have
its type to each of them; any other field to the ones nearest its own and two more, chosen so
that each line still meets every wrong value), non-finite and huge numbers, truncation at many
offsets, truncated and corrupt zstd. No command may raise or
print a traceback. A file built to be invalid (deep, non-finite timings, wrong types where a
shape is required, broken zstd, …) must end with exit 2 and a message naming the file; any other
file may also be accepted (exit 0 or 1: a torn last line is repaired, an unknown field kept).

Commands run in-process (`dshkit.cli.main`); `serve` and `record` stop as soon as they have
started (their wait for a signal is replaced by a finished future), so a file they accept is
told apart without serving it. `-s` prints the
count of files and runs.
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from dshkit.cli import main
from dshkit.mock_server import MockServer

from .conftest import API_KEY

ROOT = Path(__file__).resolve().parents[2]
DEPTHS = (201, 5_000, 100_000)
WRONG = ("abc", 5, -1, 1.5, None, [], {}, True, [1, "x"], {"a": {"b": 1}})
NON_FINITE = ("NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1e308")


@dataclass(frozen=True)
class Hostile:
    kind: str
    label: str
    data: bytes
    must_fail: bool
    suffix: str = ".jsonl"


# --- the real files the corpus starts from -----------------------------------------------------


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    tmp = tmp_path_factory.mktemp("bases")
    ws = tmp / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# Widget Forge\n", encoding="utf-8")
    log, journal = tmp / "walk.jsonl", tmp / "journal.jsonl"
    assert main(["run", "Read README.md", "--session", str(log), "--workspace", str(ws),
                 "--api-key", API_KEY, "--pace", "0"]) == 0
    with MockServer(journal=journal) as server:
        body = {"model": "deepseek-v4-flash", "stream": True, "messages": [{"role": "user", "content": "hi"}],
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]}
        for stream in (True, False):
            r = httpx.post(server.base_url + "/chat/completions", json={**body, "stream": stream},
                           headers={"Authorization": f"Bearer {API_KEY}"}, timeout=30)
            assert r.status_code == 200
    report = {"adapter": "x:Y", "scenarios": [
        {"id": "sse-crlf", "tags": ["A1", "area:sse"], "status": "pass", "reason": "", "failed": [],
         "seconds": 0.1, "notes": []},
        {"id": "tool-args", "tags": ["A5", "area:tools"], "status": "fail", "reason": "differs",
         "failed": ["assemble"], "seconds": 0.2, "notes": ["n"], "diff": "- a\n+ b"}],
        "summary": {"pass": 1, "fail": 1, "n/a": 0}}
    return {
        "session": log.read_bytes(),
        "cassette": (ROOT / "recordings" / "tool-call-split-args.cassette.jsonl").read_bytes(),
        "journal": journal.read_bytes(),
        "report": json.dumps(report, indent=2).encode(),
        "script": b"steps:\n  - reply: {content: hi}\n  - reply:\n      tool_calls:\n        - {name: read, arguments: {file_path: a}}\n",
        "scenario": (ROOT / "conformance" / "scenarios" / "a02_stream_end.yaml").read_bytes(),
    }


# --- mutations -----------------------------------------------------------------------------------


def _deep(depth: int, kind: str) -> str:
    return "[" * depth + "]" * depth if kind == "array" else '{"a":' * depth + "1" + "}" * depth


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _set_line(data: bytes, k: int, line: bytes) -> bytes:
    lines = _lines(data)
    lines[k] = line.rstrip(b"\n") + b"\n"
    return b"".join(lines)


def _paths(value: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> Iterator[tuple[Any, ...]]:
    """Every path to a value in `value`, down to depth 3."""
    if depth > 3:
        return
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, sub in items:
        yield (*prefix, key)
        yield from _paths(sub, (*prefix, key), depth + 1)


def _replaced(obj: Any, path: tuple[Any, ...], new: Any) -> Any:
    copy = json.loads(json.dumps(obj))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return copy


# Fields whose wrong type makes the file unreadable for certain (the others may be tolerated).
REQUIRED: dict[str, set[tuple[Any, ...]]] = {
    "session": {("type",), ("seq",)},
    "cassette": {("type",), ("status",), ("reads",), ("request",), ("headers_ms",), ("reads", 0),
                 ("reads", 0, "dt_ms"), ("request", "method"), ("request", "path")},
    "journal": {("writes",), ("seq",), ("path",), ("t",), ("writes", 0), ("writes", 0, "t"), ("status",),
                ("headers",), ("session",), ("outcome",)},
}


def _jsonl_corpus(kind: str, data: bytes, rng: random.Random) -> Iterator[Hostile]:
    lines = _lines(data)
    picks = sorted({k for k in (0, 1, len(lines) // 2, len(lines) - 2, len(lines) - 1) if 0 <= k < len(lines)})
    last = len(lines) - 1
    for k in picks:
        obj = json.loads(lines[k])
        for depth in DEPTHS:
            for shape in ("array", "object"):
                deep = json.dumps({**obj, "x": "@@"}).replace('"@@"', _deep(depth, shape))
                yield Hostile(kind, f"line {k + 1} {shape} {depth} deep", _set_line(data, k, deep.encode()), True)
        raw = lines[k].rstrip(b"\n")
        for cut in (1, len(raw) // 3, len(raw) // 2, len(raw) - 1):  # a line cut (torn if last)
            yield Hostile(kind, f"line {k + 1} cut at {cut}", _set_line(data, k, raw[:cut]),
                          kind != "session" and (k != last or k == 0) and kind != "cassette")
        at = raw.find(b'"', len(raw) // 2)
        if at > 0:
            yield Hostile(kind, f"line {k + 1} byte 0xff", _set_line(data, k, raw[:at + 1] + b"\xff\xfe" + raw[at + 1:]),
                          kind != "session" or k != last)
            yield Hostile(kind, f"line {k + 1} surrogate", _set_line(data, k, raw[:at + 1] + b"\\ud800" + raw[at + 1:]), False)
        required = REQUIRED.get(kind, set()) if k != 0 and not (kind == "session" and k == last) else set()
        for path, wrong in _wrong_types(obj, list(_paths(obj))[:22], required, rng):
            line = json.dumps(_replaced(obj, path, wrong)).encode()
            must = (path in required and _category(wrong) != _category(_get(obj, path)) and wrong is not None)
            yield Hostile(kind, f"line {k + 1} {_show(path)}={json.dumps(wrong)}", _set_line(data, k, line), must)
        numbers = [p for p in _paths(obj) if isinstance(_get(obj, p), (int, float)) and not isinstance(_get(obj, p), bool)]
        timings = {p for p in numbers if kind == "cassette" and p[-1] in ("dt_ms", "headers_ms")}
        for path, token in _non_finite(numbers[:6], timings, rng):
            line = json.dumps(_replaced(obj, path, "@@")).replace('"@@"', token).encode()
            must = path in timings and token != "-1e999"
            yield Hostile(kind, f"line {k + 1} {_show(path)}={token}", _set_line(data, k, line), must)
    for n in sorted({rng.randrange(1, len(data)) for _ in range(8)}):
        yield Hostile(kind, f"truncated at byte {n}", data[:n], False)
    yield Hostile(kind, "empty", b"", True)
    yield Hostile(kind, "only blank lines", b"\n\n  \n", True)
    yield Hostile(kind, "binary noise", bytes(rng.randrange(256) for _ in range(300)), True)
    yield from _zstd(kind, data)


def _wrong_types(obj: Any, paths: list[tuple[Any, ...]], required: set[tuple[Any, ...]],
                 rng: random.Random) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Which wrong value goes into which field. A field that must be of its type (`required`)
    gets every wrong value, each a must-fail rule. Any other field gets the values closest to
    its own, where a reader's type check is easiest to slip past (null, and for a number every
    other number and `true`), and two of the rest: those this line has used least so far, ties
    broken in a seeded order, so that every line still gets every wrong value in some field."""
    order = {json.dumps(w): rng.random() for w in WRONG}
    used = dict.fromkeys(order, 0)
    for path in paths:
        own = _get(obj, path)
        fitting = [w for w in WRONG if not (isinstance(w, type(own)) and not isinstance(w, bool))
                   and json.dumps(w) != json.dumps(own)]
        if path in required:
            yield from ((path, w) for w in fitting)
            continue
        close = [w for w in fitting if w is None or (_category(own) == "number" and _category(w) in ("number", "bool"))]
        rest = sorted((w for w in fitting if not any(w is c for c in close)),
                      key=lambda w: (used[json.dumps(w)], order[json.dumps(w)]))[:2]
        for w in close + rest:
            used[json.dumps(w)] += 1
            yield path, w


def _non_finite(paths: list[tuple[Any, ...]], required: set[tuple[Any, ...]],
                rng: random.Random) -> Iterator[tuple[tuple[Any, ...], str]]:
    """Which non-finite or huge number goes into which numeric field: a field that must be
    finite gets all six, any other three in turn (so a line with two numbers or more still gets
    all six, and every kind does)."""
    turn = list(NON_FINITE)
    rng.shuffle(turn)
    at = 0
    for path in paths:
        if path in required:
            yield from ((path, t) for t in NON_FINITE)
            continue
        for _ in range(3):
            yield path, turn[at]
            at = (at + 1) % len(turn)


def _category(value: Any) -> str:
    """The JSON type of a value (integers and floats are both numbers)."""
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def _show(path: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def _zstd(kind: str, data: bytes) -> Iterator[Hostile]:
    zstandard = pytest.importorskip("zstandard")
    packed = zstandard.ZstdCompressor(write_checksum=True).compress(data)
    for n in (4, 10, len(packed) // 2, len(packed) - 1):
        yield Hostile(kind, f"zstd truncated at {n}", packed[:n], True, ".jsonl.zstd")
    corrupt = bytearray(packed)
    corrupt[len(corrupt) // 2] ^= 0xFF
    yield Hostile(kind, "zstd corrupt", bytes(corrupt), True, ".jsonl.zstd")
    yield Hostile(kind, "zstd then garbage", packed + b"garbage", True, ".jsonl.zstd")


REPORT_REQUIRED = {("scenarios",), ("summary",), ("scenarios", 0), ("scenarios", 0, "id"), ("scenarios", 0, "status"),
                   ("scenarios", 1, "status")}
"""A report's fields whose every wrong type makes it unreadable."""


def _document_corpus(kind: str, data: bytes, suffix: str, rng: random.Random) -> Iterator[Hostile]:
    """A report (JSON), a script or scenario file (YAML, and the same as JSON)."""
    from dshkit.mock_server.locate import parse_document

    doc = parse_document(data.decode(), is_json=suffix == ".json")
    variants = [(".json", json.dumps(doc, indent=2).encode())] if kind == "report" else [
        (".yaml", data), (".json", json.dumps(doc, indent=2).encode())]
    for ext, text in variants:
        for depth in DEPTHS:
            for shape in ("array", "object"):
                deep = json.dumps({**doc, "x": "@@"}).replace('"@@"', _deep(depth, shape)).encode()
                yield Hostile(kind, f"{ext} {shape} {depth} deep", deep, True, ext)
                if ext == ".yaml":  # flow style inside block YAML
                    yield Hostile(kind, f"yaml flow {shape} {depth} deep",
                                  text + f"x: {_deep(depth, shape)}\n".encode(), True, ext)
        yield Hostile(kind, f"{ext} byte 0xff", text[:20] + b"\xff" + text[20:], True, ext)
        yield Hostile(kind, f"{ext} surrogate", text.replace(b"hi", b"h\\ud800i", 1), False, ext)
        yield Hostile(kind, f"{ext} empty", b"", True, ext)
        for n in (len(text) // 3, len(text) // 2):
            yield Hostile(kind, f"{ext} truncated at {n}", text[:n], False, ext)
    # A wrong type or a bare non-finite number is written as JSON whichever form the document
    # came in, so these are made once, not once per form.
    required = REPORT_REQUIRED if kind == "report" else set()
    for path, wrong in _wrong_types(doc, list(_paths(doc))[:30], required, rng):
        yield Hostile(kind, f".json {_show(path)}={json.dumps(wrong)}",
                      json.dumps(_replaced(doc, path, wrong)).encode(), path in required, ".json")
    for path in [p for p in _paths(doc) if isinstance(_get(doc, p), (int, float))][:3]:
        for token in NON_FINITE[:3]:
            yield Hostile(kind, f".json {_show(path)}={token}",
                          json.dumps(_replaced(doc, path, "@@")).replace('"@@"', token).encode(), False, ".json")
    yield Hostile(kind, "yaml bomb of aliases", b"a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n" + data, False, ".yaml")


def _capture_corpus(sse: bytes) -> Iterator[Hostile]:
    """Wire captures for `decode` in each format. A deep `data:` payload in SSE decodes to an
    error finish (exit 0: the capture was read); a deep JSON or JSONL document is refused."""
    for depth in DEPTHS:
        for shape in ("array", "object"):
            deep = _deep(depth, shape).encode()
            yield Hostile("capture", f"sse data {shape} {depth} deep", sse + b"data: " + deep + b"\n\n", False, ".sse")
            yield Hostile("capture", f"sse error event {shape} {depth} deep", b"event: error\ndata: " + deep + b"\n\n", False, ".sse")
            yield Hostile("capture", f"json {shape} {depth} deep", b"[" + deep + b"]", True, ".json")
            yield Hostile("capture", f"jsonl {shape} {depth} deep", b'{"choices": []}\n' + deep + b"\n", False, ".jsonl")
            yield Hostile("capture", f"error body {shape} {depth} deep", b'{"error": ' + deep + b"}", False, ".err")
    yield Hostile("capture", "sse surrogate", sse.replace(b'"content":"', b'"content":"\\ud800', 1), False, ".sse")
    yield Hostile("capture", "sse 0xff", sse.replace(b'"content":"', b'"content":"\xff', 1), False, ".sse")
    for token in NON_FINITE:
        yield Hostile("capture", f"json {token}", b'[{"choices": [], "usage": {"prompt_tokens": ' + token.encode() + b"}}]",
                      False, ".json")


SIDECARS: list[tuple[str, bytes, bool]] = [
    ("number", b"5", True), ("string", b'"abc"', True), ("list of numbers", b"[5]", True),
    ("unknown kind", b'[{"kind": "bogus"}]', True), ("patches a number", b'{"patches": 5}', True),
    ("patch at a string", b'{"patches": [{"at": "x", "entry": {"kind": "hang"}}]}', True),
    ("absolute readyFile", b'[{"kind": "hang", "readyFile": "/tmp/dshkit-escape"}]', True),
    ("readyFile climbing out", b'[{"kind": "hang", "readyFile": "../../escape"}]', True),
    ("chunk index a dict", b'[{"kind": "chunks", "chunks": [{"type": "text-delta", "index": {}, "text": "a"}]}]', True),
    ("chunks a string", b'[{"kind": "chunks", "chunks": "abc"}]', True),
    ("throw without code", b'[{"kind": "throw", "chunks": [], "message": "m"}]', True),
    ("NaN", b'[{"kind": "chunks", "chunks": [{"type": "usage", "usage": {"inputTokens": NaN}}]}]', True),
    ("not UTF-8", b'[{"kind": "hang", "readyFile": "\xff"}]', True),
    ("truncated", b'[{"kind": "ha', True),
    ("empty file", b"", True),
    ("two hangs", b'[{"kind": "hang"}, {"kind": "hang"}]', False),
    ("surrogate readyFile", b'[{"kind": "hang", "readyFile": "a\\ud800"}]', False),
] + [(f"{shape} {depth} deep", b"[" + _deep(depth, shape).encode() + b"]", True)
     for depth in DEPTHS for shape in ("array", "object")]


def corpus(bases: dict[str, bytes]) -> list[Hostile]:
    rng = random.Random(18)
    out: list[Hostile] = []
    for kind in ("session", "cassette", "journal"):
        out += _jsonl_corpus(kind, bases[kind], rng)
    out += _document_corpus("report", bases["report"], ".json", rng)
    out += _document_corpus("script", bases["script"], ".yaml", rng)
    out += _document_corpus("scenario", bases["scenario"], ".yaml", rng)
    out += _capture_corpus((ROOT / "examples" / "seed-walk.sse").read_bytes())
    out += [Hostile("sidecar", label, data, must, ".json") for label, data, must in SIDECARS]
    return out


# --- the readers ---------------------------------------------------------------------------------


def readers(kind: str, f: Path, tmp: Path, must_fail: bool, session_log: Path) -> list[list[str]]:
    out = str(tmp / "out.html")
    if kind == "session":
        argv = [["replay", str(f)], ["decode", str(f)], ["view", str(f), "-o", out]]
        if must_fail:  # a valid log would really run; the cheap readers above cover those
            argv += [["replay", str(f), "--wire"], ["run", "hi", "--replay", str(f), "--workspace", str(tmp)],
                     ["run", "hi", "--session", str(f), "--workspace", str(tmp), "--api-key", API_KEY]]
        return argv
    if kind == "cassette":
        argv = [["serve", "--replay", str(f), "--port", "0"], ["decode", str(f)], ["view", str(f), "-o", out],
                ["record", "--out", str(f), "--upstream", "http://127.0.0.1:9", "--port", "0"]]
        if must_fail:
            argv.append(["run", "hi", "--replay", str(f), "--workspace", str(tmp)])
        return argv
    if kind == "journal":
        return [["view", str(f), "-o", out], ["view", str(session_log), "--journal", str(f), "-o", out]]
    if kind == "report":
        return [["view", str(f), "-o", out]]
    if kind == "sidecar":  # `f` is the replay.override.json beside a copy of the real log
        log = str(f.parent / "session.jsonl")
        return [["replay", log], ["replay", log, "--wire", "--workspace", str(f.parent)]]
    if kind == "capture":
        fmt = {".sse": "sse", ".json": "json", ".jsonl": "jsonl", ".err": "error"}[f.suffix]
        return [["decode", str(f)], ["decode", str(f), "--format", fmt], ["decode", str(f), "--format", fmt, "--pretty"],
                ["decode", str(f), "--protocol", "anthropic"]]
    if kind == "script":
        return [["serve", "--script", str(f), "--port", "0"]]
    return [["conformance", "--scenarios", str(f), "--only", "no-such-tag-dshkit"]]


SERVES = 99
"""The exit status `serve` and `record` return here once they have started (the signal wait is
replaced by a finished future): they accepted their input and would now serve."""


def _call(argv: list[str]) -> int | str:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        return exc.code if isinstance(exc.code, int) else 2
    return "serves" if code == SERVES else code


KINDS = ("session", "cassette", "journal", "report", "script", "scenario", "capture", "sidecar")


@pytest.fixture(scope="module")
def hostile(bases: dict[str, bytes]) -> list[Hostile]:
    """The corpus, built once for every kind's test (the deep and mutated files take a while)."""
    return corpus(bases)


def test_the_corpus_holds_every_kind_and_at_least_500_files(hostile: list[Hostile]) -> None:
    files = hostile
    counts = {kind: sum(h.kind == kind for h in files) for kind in KINDS}
    print(f"\nhostile files: {len(files)} ({sum(h.must_fail for h in files)} built to be invalid): {counts}")
    assert len(files) >= 500 and all(counts.values())
    # Each field gets only some of the wrong values (see `_wrong_types`), so hold every class of
    # mutation to reaching every reader all the same: every line picked from a log, cassette or
    # journal gets each depth and shape, each wrong value and a cut; each kind every non-finite
    # token, truncation and broken zstd; each document every wrong value in some field.
    wrong = {json.dumps(w) for w in WRONG}
    deep = {f"{shape} {depth} deep" for depth in DEPTHS for shape in ("array", "object")}
    for kind in KINDS:
        labels = [h.label for h in files if h.kind == kind]
        values = {label.rsplit("=", 1)[1] for label in labels if "=" in label}
        if kind in ("session", "cassette", "journal"):
            for line in {label.split(" ")[1] for label in labels if label.startswith("line ")}:
                here = [label.removeprefix(f"line {line} ") for label in labels if label.startswith(f"line {line} ")]
                assert wrong <= {label.rsplit("=", 1)[1] for label in here if "=" in label}, (kind, line)
                assert deep <= set(here) and any(label.startswith("cut at") for label in here), (kind, line)
            assert set(NON_FINITE) <= values, kind
            assert {"zstd corrupt", "empty", "binary noise"} <= set(labels), kind
            assert any(label.startswith("truncated at byte") for label in labels), kind
        elif kind in ("report", "script", "scenario"):
            assert wrong <= values, kind
            assert {f".json {d}" for d in deep} <= set(labels), kind


@pytest.mark.parametrize("kind", KINDS)
def test_every_reader_survives_every_hostile_file(
    kind: str, bases: dict[str, bytes], hostile: list[Hostile], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
) -> None:
    import asyncio

    from dshkit.mock_server import cli as serve_cli

    def started() -> asyncio.Future[int]:
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        done.set_result(SERVES)
        return done

    monkeypatch.setattr(serve_cli, "exit_on_signals", started)
    monkeypatch.chdir(tmp_path)
    caplog.set_level(logging.WARNING)
    session_log = tmp_path / "base.jsonl"
    session_log.write_bytes(bases["session"])
    files = [h for h in hostile if h.kind == kind]
    problems: list[str] = []
    runs = 0
    seconds: dict[str, float] = {}
    for i, h in enumerate(files):
        started = time.perf_counter()
        # Cassettes keep their name whatever the bytes (a zstd cassette is read as one, never
        # mistaken for a new `NAME.jsonl.zstd.cassette.jsonl`).
        f = tmp_path / (f"h{i}.cassette.jsonl" if h.kind == "cassette" else f"h{i}{h.suffix}")
        if h.kind == "sidecar":
            (tmp_path / f"h{i}").mkdir()
            f = tmp_path / f"h{i}" / "replay.override.json"
            (f.parent / "session.jsonl").write_bytes(bases["session"])
        for argv in readers(h.kind, f, tmp_path, h.must_fail, session_log):
            # afresh when a reader changed it (`record` and repair may): rewriting it every time
            # cost more than some readers (freeing a file's blocks is slow on some disks)
            if not f.is_file() or f.read_bytes() != h.data:
                f.write_bytes(h.data)
            caplog.clear()
            try:
                code = _call(argv)
            except Exception as exc:
                problems.append(f"{h.kind} [{h.label}] {argv[0]}: raised {type(exc).__name__}: {exc}"[:400])
                continue
            finally:
                runs += 1
            captured = capsys.readouterr()
            said = captured.err + caplog.text
            if "Traceback" in said:
                problems.append(f"{h.kind} [{h.label}] {' '.join(argv[:2])}: traceback\n{said[-1500:]}")
            elif h.must_fail and code != 2:
                problems.append(f"{h.kind} [{h.label}] {' '.join(argv[:2])}: exit {code}, expected 2")
            elif h.must_fail and f.name not in said:
                problems.append(f"{h.kind} [{h.label}] {' '.join(argv[:2])}: message does not name the file: {said[-300:]}")
            elif code not in (0, 1, 2, "serves"):
                problems.append(f"{h.kind} [{h.label}] {' '.join(argv[:2])}: exit {code}")
        seconds[h.kind] = seconds.get(h.kind, 0.0) + time.perf_counter() - started
    print(f"\n{kind}: {len(files)} hostile files ({sum(h.must_fail for h in files)} built to be invalid), "
          f"reader runs: {runs}, problems: {len(problems)}, {sum(seconds.values()):.1f} s")
    if os.environ.get("DSHKIT_HOSTILE_REPORT"):
        Path(os.environ["DSHKIT_HOSTILE_REPORT"]).write_text("\n".join(problems), encoding="utf-8")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:40])
