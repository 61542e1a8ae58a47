"""Client mistakes that used to crash a handler (500 + traceback) or lose a journal line.

Each bad request must get a DeepSeek-shaped 4xx error envelope naming what was wrong, leave no
traceback on the server's stderr, and still get its journal line and `result` event, written
as valid JSON (no bare `NaN`, lone surrogates escaped).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshkit.mock_server import MockServerFactory

from .cli_process import ServeProcess

D = "Failed to deserialize the JSON body into the target type: "
U = [{"role": "user", "content": "hi"}]


def body(**kw: Any) -> dict[str, Any]:
    return {"model": "deepseek-chat", "messages": U, **kw}


def strict_tool(parameters: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": "f", "strict": True, "parameters": parameters}}


def raw(obj: Any) -> bytes:
    return json.dumps(obj).encode()


PLAIN = raw(body())

#: (name, body bytes, extra headers, status, start of the error message)
BAD: list[tuple[str, bytes, dict[str, Any], int, str]] = [
    ("deep nesting", b'{"model":"deepseek-chat","messages":' + b"[" * 5000 + b"]" * 5000 + b"}", {},
     400, D + "recursion limit exceeded"),
    ("nesting past serde's 128", raw(body(extra=json.loads("[" * 200 + "]" * 200))), {},
     400, D + "recursion limit exceeded"),
    ("reasoning_effort list", raw(body(reasoning_effort=["high"])), {},
     400, D + "reasoning_effort: invalid type: sequence, expected a string"),
    ("reasoning_effort object", raw(body(reasoning_effort={"level": "high"})), {},
     400, D + "reasoning_effort: invalid type: map, expected a string"),
    ("strict anyOf number", raw(body(tools=[strict_tool({"anyOf": 5})])), {},
     400, "Invalid schema for function 'f': parameters.anyOf must be a non-empty array"),
    ("strict anyOf object", raw(body(tools=[strict_tool({"anyOf": {"type": "string"}})])), {},
     400, "Invalid schema for function 'f': parameters.anyOf must be a non-empty array"),
    ("strict type object", raw(body(tools=[strict_tool({"type": {"x": 1}})])), {},
     400, "Invalid schema for function 'f': parameters.type {\"x\": 1} is not supported"),
    ("strict type nested list", raw(body(tools=[strict_tool({"type": [["object"]]})])), {},
     400, "Invalid schema for function 'f': parameters.type [\"object\"] is not supported"),
    ("strict required number", raw(body(tools=[strict_tool(
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": 5,
         "additionalProperties": False})])), {},
     400, "Invalid schema for function 'f': parameters.required must be an array of property names"),
    ("strict $defs list", raw(body(tools=[strict_tool({"$defs": [1]})])), {},
     400, "Invalid schema for function 'f': parameters.$defs must be an object"),
    ("integer past the int-string limit", PLAIN[:-1] + b',"max_tokens":' + b"9" * 5000 + b"}", {},
     400, D + "number out of range"),
    ("float past 1e308", PLAIN[:-1] + b',"temperature":1e400}', {},
     400, D + "number out of range (1e400 does not fit a 64-bit float)"),
    ("lone surrogate", PLAIN.replace(b'"hi"', b'"a\\ud800b"'), {},
     400, D + "lone surrogate in a string"),
    ("NaN temperature", PLAIN[:-1] + b',"temperature":NaN}', {},
     400, D + "`NaN` is not valid JSON"),
    ("Infinity", PLAIN[:-1] + b',"top_p":-Infinity}', {},
     400, D + "`-Infinity` is not valid JSON"),
    ("gzip header on a plain body", PLAIN, {"Content-Encoding": "gzip"},
     400, "the body is not valid gzip data although Content-Encoding says gzip"),
    ("gzip bomb", gzip.compress(b" " * 3_000_000), {"Content-Encoding": "gzip"},
     413, "Request body too large after decompression"),
    ("unknown encoding", PLAIN, {"Content-Encoding": "zstd"},
     415, "Content-Encoding 'zstd' is not supported"),
    ("non-UTF-8 Authorization", PLAIN, {"Authorization": b"Bearer sk-\xff\xfe"},
     401, "Authentication Fails, the Authorization header is not valid UTF-8 text"),
    ("non-UTF-8 X-Mock-Session", PLAIN, {"X-Mock-Session": b"s-\xe9t\xe9"},
     400, "the X-Mock-Session header is not valid UTF-8 text"),
]


async def send_all(url: str) -> list[str]:
    """Send every BAD request; the mismatches, described."""
    failures = []
    async with httpx.AsyncClient(timeout=5) as c:
        for name, payload, headers, status, message in BAD:
            r = await c.post(url, content=payload, headers=headers)
            try:
                err = r.json()["error"]
            except (ValueError, KeyError):
                failures.append(f"{name}: {r.status_code} {r.text[:200]!r}")
                continue
            if (r.status_code, err["message"][: len(message)]) != (status, message):
                failures.append(f"{name}: {r.status_code} {err['message']!r}")
            elif err["type"] not in ("invalid_request_error", "authentication_error"):
                failures.append(f"{name}: error type {err['type']!r}")
    return failures


async def test_client_mistakes_get_a_4xx_envelope(dshkit_mock_server: MockServerFactory) -> None:
    server = await dshkit_mock_server(max_body_bytes=1_000_000)
    failures = await send_all(server.url)
    assert not failures, "\n".join(failures)
    assert [e.outcome for e in server.journal] == ["rejected"] * len(BAD)


#: Requests broken at the HTTP level, which aiohttp answers with a 400 before any handler.
MALFORMED_HTTP = [
    b"HELLO WORLD\r\n\r\n",
    b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 20000 + b"\r\n\r\n",
    b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n",
    b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    b"POST /chat/\xff HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
]


def _strict_json(line: str) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"bare {name} in a journal line")

    return json.loads(line, parse_constant=refuse)


def test_cli_no_traceback_and_nothing_lost(tmp_path: Path) -> None:
    """The CLI: every bad request gets its `result` line and its journal line, no traceback."""
    journal = tmp_path / "journal.jsonl"
    proc = ServeProcess("--journal", str(journal), "--max-body-bytes", "1000000")
    try:
        failures = asyncio.run(send_all(proc.base_url + "/chat/completions"))
        # Accepted, with a header that is not UTF-8: served, and journaled all the same.
        ok = httpx.post(proc.base_url + "/chat/completions", content=PLAIN,
                        headers={"X-Note": b"caf\xe9"}, timeout=5)
        assert ok.status_code == 200, ok.text
        for request in MALFORMED_HTTP:  # answered by aiohttp itself: no journal line
            with socket.create_connection(("127.0.0.1", proc.ready["port"]), timeout=5) as sock:
                sock.sendall(request)
                assert sock.recv(100).startswith(b"HTTP/1.0 400 Bad Request"), request[:40]
        results = []
        while len(results) < len(BAD) + 1:
            line = proc.next_line()
            if line["type"] == "result":
                results.append(line)
        code, _ = proc.stop()
    finally:
        proc.kill()
    assert not failures, "\n".join(failures)
    assert code == 130
    assert "Traceback" not in proc.stderr and "Unhandled exception" not in proc.stderr, proc.stderr
    assert [r["outcome"] for r in results] == ["rejected"] * len(BAD) + ["completed"]
    lines = [_strict_json(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    assert [e["seq"] for e in lines] == list(range(1, len(BAD) + 2))
    assert lines[-1]["headers"]["x-note"] == "caf\udce9" and lines[-1]["outcome"] == "completed"
    by_name = dict(zip([b[0] for b in BAD], lines[:-1], strict=True))
    # Kept as sent, written as valid JSON: the surrogate escaped, NaN as a string.
    assert by_name["lone surrogate"]["body"]["messages"][0]["content"] == "a\ud800b"
    assert by_name["NaN temperature"]["body"]["temperature"] == "NaN"
    assert by_name["non-UTF-8 X-Mock-Session"]["session"] == "s-\udce9t\udce9"
    assert by_name["non-UTF-8 Authorization"]["headers"]["authorization"] == "{{scrubbed:authorization}}"


#: Item-by-item wrong types DeepSeek rejects while deserializing (400, the field named).
WRONG_TYPES: list[tuple[dict[str, Any], str]] = [
    (body(stream="yes"), "stream: invalid type: string \"yes\", expected a boolean"),
    (body(stream=1), "stream: invalid type: number `1`, expected a boolean"),
    (body(n="1"), "n: invalid type: string \"1\", expected an integer"),
    (body(n=1.5), "n: invalid type: number `1.5`, expected an integer"),
    (body(n=True), "n: invalid type: boolean `true`, expected an integer"),
    (body(logprobs="true"), "logprobs: invalid type: string \"true\", expected a boolean"),
    (body(stream_options="usage"), "stream_options: invalid type: string \"usage\", expected struct StreamOptions"),
    (body(stream=True, stream_options={"include_usage": "yes"}),
     "stream_options.include_usage: invalid type: string \"yes\", expected a boolean"),
    (body(user=42), "user: invalid type: number `42`, expected a string"),
    (body(seed="7"), "seed: invalid type: string \"7\", expected an integer"),
    (body(seed=[7]), "seed: invalid type: sequence, expected an integer"),
    (body(temperature="hot", model="deepseek-reasoner"), "temperature: invalid type: string \"hot\", expected a number"),
]


@pytest.mark.parametrize(("payload", "message"), WRONG_TYPES, ids=[m.split(":")[0] + "-" + str(i) for i, (_, m) in enumerate(WRONG_TYPES)])
async def test_wrong_types_are_rejected(
    dshkit_mock_server: MockServerFactory, payload: dict[str, Any], message: str
) -> None:
    server = await dshkit_mock_server()
    async with httpx.AsyncClient(timeout=2) as c:
        r = await c.post(server.url, json=payload)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == {
        "message": D + message, "type": "invalid_request_error", "param": None,
        "code": "invalid_request_error",
    }


async def test_right_types_still_pass(dshkit_mock_server: MockServerFactory) -> None:
    server = await dshkit_mock_server()
    async with httpx.AsyncClient(timeout=2) as c:
        for payload in (
            body(stream=True, stream_options={"include_usage": True}, n=1, seed=7, user="u-1", logprobs=False),
            body(stream=None, stream_options=None, n=None, seed=None, user=None, logprobs=None),
            body(temperature=1, top_p=0.5),
        ):
            r = await c.post(server.url, json=payload)
            assert r.status_code == 200, (payload, r.text)


_SCALARS = (st.none() | st.booleans() | st.integers(-(10**30), 10**30)
            | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8))
_JSON = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=12)
_FIELDS = ["model", "messages", "stream", "n", "logprobs", "top_logprobs", "stream_options", "user",
           "seed", "temperature", "top_p", "max_tokens", "stop", "tools", "tool_choice", "thinking",
           "reasoning_effort", "response_format", "presence_penalty"]
_MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system"]) | _JSON},
    optional={"content": _JSON | st.text(max_size=8), "tool_calls": _JSON, "tool_call_id": _JSON,
              "reasoning_content": _JSON, "prefix": _JSON},
)
_TOOL = st.fixed_dictionaries({"type": st.just("function"), "function": st.fixed_dictionaries(
    {"name": st.sampled_from(["f", "g"]) | _JSON},
    optional={"strict": st.booleans(), "parameters": _JSON}),
})
_BODY = st.fixed_dictionaries(
    {"model": st.sampled_from(["deepseek-chat", "deepseek-v4-flash"]) | _JSON,
     "messages": st.lists(_MESSAGE, min_size=1, max_size=3) | _JSON},
    optional={name: _JSON for name in _FIELDS[2:]} | {"tools": st.lists(_TOOL, max_size=2)},
)


@given(_BODY)
def test_any_body_is_accepted_or_a_4xx_never_a_crash(payload: dict[str, Any]) -> None:
    """Whatever JSON arrives, validation ends in a request or a 4xx Rejection, and an accepted
    request gets its default reply and a journal line without an exception."""
    from dshkit.mock_server.defaults import default_reply
    from dshkit.mock_server.journal import json_line
    from dshkit.mock_server.validation import Rejection, validate_chat

    raw_body = json.dumps(payload).encode()
    try:
        chat = validate_chat(raw_body, path="/chat/completions", headers={})
    except Rejection as r:
        assert 400 <= r.status < 500 and r.message
        return
    default_reply(chat)
    json_line(chat.redacted)


# -- the body parser: a fast read, and the standard parser for what it refuses --------------------

_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                  st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6))
_value = st.recursive(_leaf, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3),
                      max_leaves=10)
#: Spellings each reader may take differently: the forms parse_json exists to refuse, the limits of
#: number sizes (the int-string limit is 4300 digits, with or without a sign), a float's edges,
#: encodings, escapes and bytes at the edges of UTF-8.
_TRICKY = [b"NaN", b"-Infinity", b"1e400", b"-1e400", b"1.5e-400", b"-0", b"-0.0", b"1E5", b"9" * 4300, b"-" + b"9" * 4300,
           b"9" * 4301, b"18446744073709551616", b"-9223372036854775809", b"2.2250738585072011e-308", b"01", b"1.",
           b'"\\ud800"', b'"\\udc00\\ud800"', b'"\\ud83c\\udf89"', b'"\xed\xa0\x80"', b'"\xf0\x9f\x8e\x89"', b'"\xc0\x80"',
           b'"\xff"', b'"a\x01b"', b'"\x7f"', b'"\\u0000"', b'"\\/"', b'"\\x"', b"[" * 300 + b"]" * 300,
           b"[" * 1500 + b"]" * 1500, b"[1,]", b"{}x", b"\x0c1", b"true", b"True"]


def _parsed(parse: Any, raw: bytes) -> tuple[Any, ...]:
    from dshkit.mock_server.validation import Rejection

    try:
        return ("parsed", repr(parse(raw)))  # repr tells 1 from 1.0 and 0.0 from -0.0
    except Rejection as e:
        return ("rejected", e.status, e.message)


def _spelled(value: Any, spelling: str, extra: bytes | None = None) -> bytes:
    text = json.dumps({"v": value}, ensure_ascii=spelling == "ascii", indent=1 if spelling == "spaced" else None)
    raw = text.encode("utf-8", "surrogatepass")
    if extra is not None:  # one more member, spelled as given
        raw = raw[:-1] + b',"t":' + extra + b"}"
    if spelling == "utf-16":
        try:
            return raw.decode("utf-8", "surrogatepass").encode("utf-16", "surrogatepass")
        except UnicodeDecodeError:  # bytes that are not UTF-8 have no UTF-16 spelling
            return raw
    return (b"\xef\xbb\xbf" if spelling == "bom" else b"") + raw


_SPELLINGS = ["utf-8", "ascii", "bom", "utf-16", "spaced"]


@pytest.mark.parametrize("extra", _TRICKY, ids=lambda t: repr(t[:24]))
def test_the_fast_body_read_gives_the_standard_parsers_value_or_error_for_each_edge(extra: bytes) -> None:
    """`parse_json` reads with msgspec first: for every form it may take differently from the
    standard library's parser (`_parse_plain`, with its checks), it gives what that parser gives,
    the same value or the same 400."""
    from dshkit.mock_server.validation import _parse_plain, parse_json

    for spelling in _SPELLINGS:
        raw = _spelled([1, 2.5, "é", {"b": None}], spelling, extra)
        assert _parsed(parse_json, raw) == _parsed(_parse_plain, raw), (spelling, raw[:80])


@given(value=_value, spelling=st.sampled_from(_SPELLINGS))
def test_the_fast_body_read_gives_the_standard_parsers_value_for_any_body(value: Any, spelling: str) -> None:
    """The same for any JSON value, in any of the spellings a client sends."""
    from dshkit.mock_server.validation import _parse_plain, parse_json

    raw = _spelled(value, spelling)
    assert _parsed(parse_json, raw) == _parsed(_parse_plain, raw)
