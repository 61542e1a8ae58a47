"""The fast path against the plain path: the same bytes reach a real client, on both wires.

A server started with `fast_path=False` renders every response afresh and writes each event
on its own; the default one fills cached templates in, sends whole bodies as one response and
coalesces writes. For generated scripts (replies, faults, quirks, framings, split and write
plans, seeds, repeats) both answer httpx with the same status, headers and body bytes, the
wall clock's `created` aside (checked to be this response's own, then set aside).
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dshkit.mock_server import QUIRKS, MockServer, Script
from dshkit.mock_server.anthropic.render import ANTHROPIC_QUIRKS, encode_events, encode_events_fast
from dshkit.mock_server.generate.reply import Reply, ToolCall
from dshkit.mock_server.output import FastOutput, JoinedEvents, PlainOutput, Rendering, Template

from .wire import chat

_CREATED = re.compile(rb'"created": ?(\d+)')
_IGNORED_HEADERS = {"date", "x-ds-trace-id"}
_SESSIONS = itertools.count()


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[MockServer, MockServer]]:
    """A fast-path and a plain-path server with the same seed, each on its own thread."""
    with MockServer(seed=11) as fast, MockServer(seed=11, fast_path=False) as plain:
        yield fast, plain


# -- generated scripts ---------------------------------------------------------------------------

_text = st.text(st.sampled_from(list('ab c"\\\n\té中🎉{}')), max_size=24)
_split = st.sampled_from([
    None,
    {"mode": "fixed", "size": 1},
    {"mode": "fixed", "size": 3},
    {"mode": "random", "min_size": 1, "max_size": 4},
    {"mode": "whole"},
])
_writes = st.sampled_from([None, {"events_per_write": 0, "size": 7}, {"events_per_write": 2}])
_finish = st.sampled_from([None, None, "length", "content_filter", "insufficient_system_resource"])
_FAULTS = ["success", "done_missing", "partial_eof", "stream_eof", "partial_tool_eof", "inband_error",
           "event_error", "done_unterminated", "garbage_line", "malformed_event", "reasoning_success",
           "tool_call_success", "max_tokens"]


@st.composite
def _steps(draw: st.DrawFn, quirk_names: Sequence[str]) -> dict[str, Any]:
    stream: dict[str, Any] = {"framing": draw(st.sampled_from(["lf", "crlf"])),
                              "quirks": draw(st.lists(st.sampled_from(sorted(quirk_names)), max_size=2, unique=True))}
    if (split := draw(_split)) is not None:
        stream["split"] = split
    if (writes := draw(_writes)) is not None:
        stream["writes"] = writes
    if draw(st.booleans()):
        stream["seed"] = draw(st.integers(0, 2**32 - 1))
    if (thinking := draw(st.sampled_from([None, True, False]))) is not None:
        stream["thinking"] = thinking
    timing = {"first_byte_delay_ms": 1, "keep_alive_interval_ms": 1} if draw(st.booleans()) else {}
    if draw(st.integers(0, 3)) == 0:
        return {"fault": draw(st.sampled_from(_FAULTS)), "text": draw(_text) or None, "stream": stream,
                "timing": timing}
    calls = draw(st.lists(st.fixed_dictionaries({"name": st.sampled_from(["get", "run_it"]),
                                                 "arguments": _text}), max_size=2))
    reply: dict[str, Any] = {"content": draw(_text), "reasoning": draw(_text), "tool_calls": calls,
                             "finish_reason": draw(_finish)}
    return {"reply": reply, "stream": stream, "timing": timing}


def _seen(r: httpx.Response, t0: int, t1: int) -> tuple[int, dict[str, str], bytes]:
    """What the client got, with `created` checked to be this response's time and set to 0."""
    for m in _CREATED.finditer(r.content):
        assert t0 <= int(m.group(1)) <= t1 or int(m.group(1)) == 0, m.group()
    headers = {k: v for k, v in r.headers.items() if k not in _IGNORED_HEADERS}
    return r.status_code, headers, _CREATED.sub(b'"created":0', r.content)


def _both_answer(servers: tuple[MockServer, MockServer], path: str, step: dict[str, Any],
                 bodies: list[dict[str, Any]]) -> None:
    session = f"differential-{next(_SESSIONS)}"
    script = Script.model_validate({"repeat_last": True, "steps": [step]})
    seen: list[list[tuple[int, dict[str, str], bytes]]] = [[], []]
    with httpx.Client(timeout=5) as client:
        for server in servers:
            server.add_script(script, session=session)
        for body in bodies:
            for i, server in enumerate(servers):
                t0 = int(time.time())
                r = client.post(server.make_url(path), json=body, headers={"X-Mock-Session": session})
                seen[i].append(_seen(r, t0, int(time.time())))
    fast, plain = seen
    assert fast == plain


_settings = settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_settings
@given(step=_steps(list(QUIRKS)), stream=st.lists(st.booleans(), min_size=3, max_size=4),
       thinking=st.booleans(), include_usage=st.sampled_from([None, False]), stop=st.sampled_from([None, ["c"]]))
def test_chat_fast_and_plain_paths_send_the_same_bytes(
    servers: tuple[MockServer, MockServer], step: dict[str, Any], stream: list[bool], thinking: bool,
    include_usage: bool | None, stop: list[str] | None,
) -> None:
    extra: dict[str, Any] = {} if thinking else {"thinking": {"type": "disabled"}}
    if include_usage is not None:
        extra["stream_options"] = {"include_usage": include_usage}
    if stop is not None:
        extra["stop"] = stop
    # A step asked for a second time is stored; from the third on it is served from the cache.
    bodies = [chat(stream=s, **extra) for s in stream]
    _both_answer(servers, "/chat/completions", step, bodies)


@_settings
@given(step=_steps(list(ANTHROPIC_QUIRKS)), stream=st.lists(st.booleans(), min_size=3, max_size=4),
       thinking=st.booleans(), stop=st.sampled_from([None, ["c"]]))
def test_anthropic_fast_and_plain_paths_send_the_same_bytes(
    servers: tuple[MockServer, MockServer], step: dict[str, Any], stream: list[bool], thinking: bool,
    stop: list[str] | None,
) -> None:
    extra: dict[str, Any] = {} if thinking else {"thinking": {"type": "disabled"}}
    if stop is not None:
        extra["stop_sequences"] = stop
    bodies = [{"model": "claude-sonnet-4-5", "max_tokens": 64, "stream": s,
               "messages": [{"role": "user", "content": "hi"}], **extra} for s in stream]
    _both_answer(servers, "/anthropic/v1/messages", step, bodies)


_texts = st.text(st.sampled_from(list('ab c"\\\n\té中🎉{}\x00\u2028\x7f')), max_size=40)


@settings(max_examples=150)
@given(content=_texts, reasoning=_texts,
       calls=st.lists(st.tuples(st.sampled_from(["get", "run_it", 'q"x', "d\x7fel"]), _texts), max_size=3),
       finish=st.sampled_from([None, "stop", "length", "tool_calls", "content_filter", "insufficient_system_resource"]),
       quirks=st.lists(st.sampled_from(sorted(ANTHROPIC_QUIRKS)), max_size=4, unique=True),
       framing=st.sampled_from(["lf", "crlf"]), thinking=st.booleans(), done=st.booleans(),
       seed=st.integers(0, 2**32 - 1), max_tokens=st.sampled_from([None, 1, 3, 50]),
       stop=st.sampled_from([(), ("c",), ("b", "中")]),
       split=st.sampled_from([None, "fixed", "random", "whole"]), repeat=st.sampled_from([0, 1, 7]),
       model=st.sampled_from(["deepseek-v4-pro", "m%d%b%%", "m\x7f", "\x01id\x01", "9000000000000"]),
       prompt_tokens=st.sampled_from([1, 40, 9000]))
def test_the_anthropic_fast_renderer_writes_the_plain_renderers_bytes(
    content: str, reasoning: str, calls: list[tuple[str, str]], finish: str | None, quirks: list[str],
    framing: str, thinking: bool, done: bool, seed: int, max_tokens: int | None, stop: tuple[str, ...],
    split: str | None, repeat: int, model: str, prompt_tokens: int,
) -> None:
    """`encode_events_fast` (the fast path's renderer) against `encode_events` (the plain
    path's): the same events, byte for byte, for any reply, quirk set, framing and cut, and
    for model names that spell a format's `%`, the fragments' joiner or the values a stream's
    frame is written with where a response's own values go."""
    from dshkit.mock_server.scripts import StreamSpec

    spec = StreamSpec.model_validate({} if split is None else {
        "split": {"mode": split, "size": 2, "min_size": 1, "max_size": 3}})
    reply = Reply(content=content, reasoning=reasoning, finish_reason=finish,
                  tool_calls=tuple(ToolCall(name=n, arguments=a) for n, a in calls))
    args: dict[str, Any] = {"model": model, "thinking": thinking, "split": spec.fragment_plan(),
                            "seed": seed, "prompt_tokens": prompt_tokens, "max_tokens": max_tokens, "stop": stop,
                            "quirks": tuple(quirks), "framing": framing, "done": done, "repeat": repeat}
    assert encode_events_fast(reply, **args) == encode_events(reply, **args)


@settings(max_examples=400)
@given(text=st.one_of(st.text(), _texts, st.text(st.characters(min_codepoint=0, max_codepoint=0x3000))))
def test_json_string_spells_what_the_standard_encoder_spells(text: str) -> None:
    """The fast renderers escape every fragment run with `json_string` (msgspec): the very
    bytes `json.encoder.encode_basestring(...).encode()` gives, and a lone surrogate (which
    `st.text()` draws) is refused with the same UnicodeEncodeError, so the renderer falls back
    to the plain one alike."""
    from dshkit.mock_server.generate.events import json_string

    try:
        expected: bytes | None = json.encoder.encode_basestring(text).encode("utf-8")  # type: ignore[attr-defined]
    except UnicodeEncodeError:
        expected = None
    if expected is None:
        with pytest.raises(UnicodeEncodeError):
            json_string(text)
    else:
        assert json_string(text) == expected


@given(prompt=st.integers(-300, 10**7), completion=st.integers(0, 10**6), reasoning=st.integers(0, 50))
def test_a_computed_anthropic_usage_is_the_chat_usage_translated(prompt: int, completion: int, reasoning: int) -> None:
    """The Anthropic streams spell a computed usage at once: what `anthropic_usage` makes of
    the Chat Completions usage `reply_usage` computes for the same pieces."""
    from dshkit.mock_server.anthropic.render import _pieces_usage, anthropic_usage
    from dshkit.mock_server.generate.split import JoinedPieces, reply_usage

    reply = Reply(content="x")
    pieces = JoinedPieces(("r", reasoning), ("x", 1), [], "stop", completion)
    assert _pieces_usage(reply, pieces, prompt) == anthropic_usage(reply_usage(reply, pieces, prompt))


# -- the cache on its own ------------------------------------------------------------------------

_fields = st.tuples(st.text(st.sampled_from("0123456789abcdef-"), min_size=1, max_size=40),
                    st.integers(0, 10**15))


@settings(max_examples=100)
@given(layout=st.lists(st.tuples(st.sampled_from(["id-created", "created-id", "id", "none"]), _text),
                       min_size=1, max_size=6),
       envelopes=st.lists(_fields, min_size=3, max_size=5))
def test_a_cached_stream_fills_in_to_what_the_renderer_gives(
    layout: list[tuple[str, str]], envelopes: list[tuple[str, int]]
) -> None:
    """Whatever order and length the per-response fields have, every response served from the
    cache is the stream rendered afresh: event by event, sliced, joined, and as writes."""

    def render(env: tuple[str, int]) -> list[bytes]:
        ident, created = json.dumps(env[0]).encode(), b"%d" % env[1]
        spelled = {"id-created": b'{"id":%s,"x":1,"created":%s' % (ident, created),
                   "created-id": b'{"created":%s,"id":%s' % (created, ident),
                   "id": b'{"id":%s' % ident, "none": b"{"}
        return [spelled[kind] + b',"t":' + json.dumps(text).encode() + b"}\n\n" for kind, text in layout]

    def spell(env: tuple[str, int]) -> tuple[bytes, ...]:
        return b'"id":%s' % json.dumps(env[0]).encode(), b'"created":%d' % env[1]

    fast = FastOutput()
    for env in envelopes:
        r = Rendering(render=render, envelope=env, key="k",
                      template=Template(placeholder=lambda _: ("p" * 36, 9_876_543_210), spell=spell))
        expected = render(env)
        got = fast.events(r)
        assert list(got) == expected == list(PlainOutput().events(r))
        assert [got[i] for i in range(-len(expected), len(expected))] == expected + expected
        assert got[1:3] == expected[1:3]
        assert fast.whole(got) == b"".join(expected) and b"".join(fast.writes(got)) == b"".join(expected)


@settings(max_examples=60)
@given(layout=st.lists(st.tuples(st.sampled_from(["id-created", "id", "none"]), _text), min_size=1, max_size=6),
       envelopes=st.lists(_fields, min_size=3, max_size=5), crlf=st.booleans())
def test_a_stream_rendered_whole_is_cached_and_cut_into_its_events(
    layout: list[tuple[str, str]], envelopes: list[tuple[str, int]], crlf: bool
) -> None:
    """A renderer that gives its stream as one bytes object (events found after each blank
    line) is cached and filled in like one that gives a list: the same events, slices and body."""
    eol = b"\r\n" if crlf else b"\n"

    def events(env: tuple[str, int]) -> list[bytes]:
        ident, created = json.dumps(env[0]).encode(), b"%d" % env[1]
        spelled = {"id-created": b'{"id":%s,"x":1,"created":%s' % (ident, created), "id": b'{"id":%s' % ident,
                   "none": b"{"}
        return [b"data: " + spelled[kind] + b',"t":' + json.dumps(text).encode() + b"}" + eol + eol
                for kind, text in layout]

    def spell(env: tuple[str, int]) -> tuple[bytes, ...]:
        return b'"id":%s' % json.dumps(env[0]).encode(), b'"created":%d' % env[1]

    fast = FastOutput()
    for env in envelopes:
        r = Rendering(render=events, envelope=env, key="k",
                      fast=lambda e: JoinedEvents(b"".join(events(e)), terminator=eol + eol),
                      template=Template(placeholder=lambda _: ("p" * 36, 9_876_543_210), spell=spell))
        expected = events(env)
        got = fast.events(r)
        assert list(got) == expected and len(got) == len(expected) and got[-1] == expected[-1]
        assert got[1:3] == expected[1:3] and fast.whole(got) == b"".join(expected)


def test_the_stream_cache_holds_a_bounded_number_of_bytes() -> None:
    """Templates are dropped oldest first to stay within the cache's byte budget, and a stream
    longer than the whole budget is never stored; every response is still the rendered one."""
    from dshkit.mock_server.output import StreamCache

    cache = StreamCache()
    cache.BYTES = 1000

    def rendering(key: str, size: int) -> Rendering[None]:
        return Rendering(render=lambda _: [b"data: " + key.encode() * size + b"\n\n"], envelope=None, key=key)

    for size, key in [(400, "a"), (400, "b"), (400, "c"), (1000, "d"), (30, "e")] * 3:
        r = rendering(key, size)
        assert list(cache.events(r)) == r.render(None)
        assert cache.stored_bytes <= cache.BYTES


# -- recorded bytes: raw steps ------------------------------------------------------------------


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(st.binary(max_size=40).map(lambda b: b"data: " + b.replace(b"\n", b"") + b"\n\n")
                       | st.binary(max_size=30), max_size=12),
       status=st.sampled_from([200, 200, 429, 503]), jsonl=st.booleans(),
       plan=st.sampled_from([None, {"events_per_write": 0, "size": 5}]))
def test_a_raw_file_step_sends_the_same_bytes_on_both_paths(
    servers: tuple[MockServer, MockServer], events: list[bytes], status: int, jsonl: bool,
    plan: dict[str, int] | None,
) -> None:
    """A `raw` step's file (any bytes, SSE or JSONL lines, any status, with or without a write
    plan) reaches the client the same from the fast path (one response) and the plain path (a
    write per event)."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("body.jsonl" if jsonl else "body.sse")
        path.write_bytes(b"".join(events))
        raw: dict[str, Any] = {"file": str(path), "status": status}
        if plan is not None:
            raw["write_plan"] = plan
        step = {"raw": raw}
        _both_answer(servers, "/chat/completions", step, [chat(), chat()])
