"""`string_delta`: which deltas are one append of one string to one block (`one_string`), and the
bytes `learn` keeps around that string, proved by a probe, so that `FastStreamDecoder` may parse
only the string of a later line with the same bytes. (That the decoder's chunks stay the plain
decoder's with these learned deltas in play is `test_fast_decoder.py`'s.)"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dshkit.harness.llm.chunks import ReasoningDelta, TextDelta
from dshkit.harness.providers.openai_chat.string_delta import learn, one_string
from dshkit.harness.providers.openai_chat.translate import Translator

from .wire import call, chunk

LINE_HEAD = b'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,'
HEAD_REST = b'"delta":'
TAIL = b',"finish_reason":null}],"usage":null}'


def _args(**entry: Any) -> dict[str, Any]:
    return {"tool_calls": [{"index": 0, "function": {"arguments": "x"}, **entry}]}


@pytest.mark.parametrize(
    ("delta", "found"),
    [
        ({"content": None, "reasoning_content": "r"}, ("reasoning", "reasoning_content")),
        ({"reasoning_content": "r"}, ("reasoning", "reasoning_content")),
        ({"content": "t"}, ("text", "content")),
        ({"content": "t", "reasoning_content": None}, ("text", "content")),
        (_args(), ("tool-call", "arguments")),
        (_args(id=""), ("tool-call", "arguments")),  # an empty id never starts a call
        # a second string, an empty string, another type, a name or id: not one plain append
        ({"content": "t", "reasoning_content": "r"}, None),
        ({"content": "", "reasoning_content": "r"}, None),
        ({"content": "t", "reasoning": "r"}, None),
        ({"reasoning_content": ""}, None),
        ({"content": ""}, None),
        ({"content": 5}, None),
        ({"content": None, "reasoning_content": None}, None),
        (_args(id="call_1"), None),
        ({"tool_calls": [{"index": 0, "function": {"arguments": "x", "name": "f"}}]}, None),
        ({"tool_calls": [{"index": 0, "function": {"arguments": {"k": 1}}}]}, None),
        ({"tool_calls": [{"function": {"arguments": "x"}}]}, None),
        ({"tool_calls": [{"index": True, "function": {"arguments": "x"}}]}, None),
        ({"tool_calls": [{"index": 0, "function": {"arguments": "x"}}, {"index": 1}]}, None),
        ({**_args(), "content": ""}, None),
        ({**_args(), "reasoning": "r"}, None),
    ],
)
def test_one_string_names_only_a_single_append_to_one_block(delta: dict[str, Any], found: tuple[str, str] | None) -> None:
    assert one_string(delta) == found


def _learned(opening: dict[str, Any], slot: bytes) -> tuple[Translator, Any]:
    """A translator that has read `opening` and then the delta of `slot`, and what `learn`
    makes of that slot."""
    translator = Translator()
    translator.feed(chunk(opening))
    delta = json.loads(slot)
    translator.feed(chunk(delta))
    found = one_string(delta)
    assert found is not None
    return translator, learn(slot, delta, *found, translator, LINE_HEAD, HEAD_REST, TAIL)


@pytest.mark.parametrize(
    ("opening", "slot", "key_path"),
    [
        ({"reasoning_content": "r"}, b'{"content":null,"reasoning_content":"r2"}', ["reasoning_content"]),
        ({"content": "t"}, b'{ "content" : "t2" }', ["content"]),
        ({"tool_calls": [call(0, "call_0", "read", "")]}, b'{"tool_calls":[{"index":0,"function":{"arguments":"{\\"a"}}]}',
         ["tool_calls", 0, "function", "arguments"]),
        # of a repeated key the last is the value read, and so the place learned
        ({"content": "t"}, b'{"content":"old","content":"t2"}', ["content"]),
    ],
    ids=["reasoning", "text", "arguments", "repeated-key"],
)
def test_the_learned_bytes_around_the_string_make_the_same_delta_for_any_string(
    opening: dict[str, Any], slot: bytes, key_path: list[Any]
) -> None:
    _, known = _learned(opening, slot)
    assert known is not None
    assert known.line == LINE_HEAD + known.piece and known.piece.startswith(HEAD_REST)
    assert known.end.endswith(TAIL) and known.stop == -len(known.end)
    expected = json.loads(slot)
    for string in ["other", "", '中 "quoted" \\ 🙂\n']:
        line = known.line + json.dumps(string, ensure_ascii=False).encode() + known.end
        delta = json.loads(line[len(b"data: "):])["choices"][0]["delta"]
        holder = expected
        for step in key_path[:-1]:
            holder = holder[step]
        holder[key_path[-1]] = string
        assert delta == expected, string


def test_each_kind_appends_to_its_open_block_and_makes_its_chunk() -> None:
    translator, known = _learned({"reasoning_content": "r"}, b'{"reasoning_content":"s"}')
    assert known.block is translator.reasoning
    assert known.chunk("more") == ReasoningDelta(index=translator.reasoning.index, text="more")
    translator, known = _learned({"reasoning_content": "r"}, b'{"content":"s"}')
    assert known.block is translator.text and translator.text.index == 1
    assert known.chunk("more") == TextDelta(index=1, text="more")
    translator, known = _learned({"tool_calls": [call(2, "call_2", "read", "")]}, b'{"tool_calls":[{"index":2,"function":{"arguments":"s"}}]}')
    assert known.block is translator.keyed[2] and known.chunk is None


def test_learn_refuses_a_place_it_cannot_prove() -> None:
    # The key also ends another key's name inside a nested object, with the same string there.
    lookalike = b'{"content":null,"reasoning_content":"b","x":{"\\"reasoning_content":"b"}}'
    assert _learned({"reasoning_content": "r"}, lookalike)[1] is None
    # No block open for the string to go to; a slot that is not UTF-8; no such key; not JSON.
    fresh = Translator()
    delta = {"content": "t"}
    assert learn(b'{"content":"t"}', delta, "text", "content", fresh, LINE_HEAD, HEAD_REST, TAIL) is None
    translator = Translator()
    translator.feed(chunk({"content": "t"}))
    assert learn(b'{"content":"t\xff"}', delta, "text", "content", translator, LINE_HEAD, HEAD_REST, TAIL) is None
    assert learn(b'{"contents":"t"}', delta, "text", "content", translator, LINE_HEAD, HEAD_REST, TAIL) is None
    assert learn(b'{"content":"t"', delta, "text", "content", translator, LINE_HEAD, HEAD_REST, TAIL) is None
