"""Chunk generation (`generate/chunks.py`): the DeepSeek V4 chunk shapes (wire.md §4, §5, §8),
tool-call emission, `max_tokens` truncation, logprobs and the dialect quirks."""

from __future__ import annotations

import re

import pytest

from dshkit.mock_server import QUIRKS
from dshkit.mock_server.generate.chunks import generate_chunks
from dshkit.mock_server.generate.encode import encode_sse
from dshkit.mock_server.generate.reply import Reply, ToolCall
from dshkit.mock_server.generate.split import SplitPlan, split_text

from ..wire import reassemble
from .test_reply import check_usage

CALL_ID = re.compile(r"^call_\d\d_[A-Za-z0-9]{24}$")


REPLY = Reply(
    reasoning="Think about the weather.",
    content="It is sunny in 东京 🌞.",
    tool_calls=(ToolCall(name="get_weather", arguments='{"city": "Tokyo", "q": "a\\"b"}'),),
)


def deltas(chunks: list[dict]) -> list[dict]:
    return [c["choices"][0]["delta"] for c in chunks if c["choices"]]


def test_thinking_stream_has_deepseek_v4_shape() -> None:
    chunks = generate_chunks(REPLY, thinking=True, seed=7, prompt_tokens=300)
    d = deltas(chunks)
    # S23: the role opener with null content and empty reasoning.
    assert d[0] == {"role": "assistant", "content": None, "reasoning_content": ""}
    kinds = []
    for x in d[1:-1]:
        if "tool_calls" in x:
            kinds.append("tool")
            assert "content" not in x  # wire.md §5: tool-call deltas carry no content key
        elif x.get("reasoning_content") is not None:
            assert x["content"] is None  # S24
            kinds.append("reasoning")
        else:
            assert x["reasoning_content"] is None and isinstance(x["content"], str)
            kinds.append("content")
    # S25: all reasoning, then the answer, then tool calls; never interleaved.
    assert kinds == sorted(kinds, key=["reasoning", "content", "tool"].index)
    assert d[-1] == {"content": "", "reasoning_content": None}  # S29
    # S22: one envelope for the whole stream.
    envelopes = {(c["id"], c["created"], c["model"], c["system_fingerprint"], c["object"]) for c in chunks}
    assert len(envelopes) == 1 and chunks[0]["object"] == "chat.completion.chunk"
    # S29/S30: one finish chunk, usage only there.
    assert [c["choices"][0]["finish_reason"] for c in chunks][:-1] == [None] * (len(chunks) - 1)
    assert all(c["usage"] is None for c in chunks[:-1])
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    check_usage(chunks[-1]["usage"], reasoning=True)
    assert list(chunks[0]) == ["id", "object", "created", "model", "system_fingerprint", "choices", "usage"]


def test_tool_call_opener_then_fragments() -> None:
    chunks = generate_chunks(REPLY, thinking=True, seed=1)
    tool = [x["tool_calls"] for x in deltas(chunks) if "tool_calls" in x]
    opener = tool[0][0]
    assert list(opener) == ["index", "id", "type", "function"]
    assert CALL_ID.match(opener["id"]) and opener["id"].startswith("call_00_")
    assert opener["function"] == {"name": "get_weather", "arguments": ""}
    for entries in tool[1:]:
        assert len(entries) == 1 and list(entries[0]) == ["index", "function"]  # S26, S27
        assert list(entries[0]["function"]) == ["arguments"]
    args = "".join(e[0]["function"]["arguments"] for e in tool)
    assert args == REPLY.tool_calls[0].arguments  # byte for byte


def test_parallel_calls_come_one_after_another() -> None:
    reply = Reply(tool_calls=(ToolCall(name="a", arguments='{"x": 1}'), ToolCall(name="b", arguments="{}")))
    indexes = [x["tool_calls"][0]["index"] for x in deltas(generate_chunks(reply, thinking=False)) if "tool_calls" in x]
    assert indexes == sorted(indexes) and set(indexes) == {0, 1}
    ids = [x["tool_calls"][0].get("id") for x in deltas(generate_chunks(reply)) if "tool_calls" in x]
    assert [i[:8] for i in ids if i] == ["call_00_", "call_01_"]


def test_non_thinking_shape_drops_reasoning() -> None:
    chunks = generate_chunks(REPLY, thinking=False)
    d = deltas(chunks)
    assert d[0] == {"role": "assistant", "content": ""}
    assert all("reasoning_content" not in x for x in d)
    assert d[-1] == {"content": ""}
    check_usage(chunks[-1]["usage"], reasoning=False)


def test_same_seed_same_stream_and_different_seed_differs() -> None:
    assert generate_chunks(REPLY, seed=3) == generate_chunks(REPLY, seed=3)
    assert generate_chunks(REPLY, seed=3)[0]["id"] != generate_chunks(REPLY, seed=4)[0]["id"]


def test_max_tokens_ends_with_length_even_mid_reasoning() -> None:
    chunks = generate_chunks(REPLY, thinking=True, max_tokens=2)
    r = reassemble(chunks)
    assert r["finish_reason"] == "length" and r["content"] == "" and r["tool_calls"] == []
    assert r["reasoning"] == "".join(split_text(REPLY.reasoning, SplitPlan())[:2])
    assert chunks[-1]["usage"]["completion_tokens"] == 2


def test_logprobs_only_on_content_chunks() -> None:
    chunks = generate_chunks(Reply(content="OK fine"), thinking=False, logprobs=2)
    lps = [c["choices"][0]["logprobs"] for c in chunks]
    assert lps[0] is None and lps[-1] is None
    for lp, c in zip(lps[1:-1], chunks[1:-1], strict=True):
        entry = lp["content"][0]
        assert entry["token"] == c["choices"][0]["delta"]["content"]
        assert entry["bytes"] == list(entry["token"].encode())
        assert len(entry["top_logprobs"]) == 2


@pytest.mark.parametrize("quirk", sorted(QUIRKS))
def test_every_quirk_changes_the_stream(quirk: str) -> None:
    reply = Reply(reasoning="r1 r2", content="a b", tool_calls=(
        ToolCall(name="f", arguments='{"k": 1}'), ToolCall(name="g", arguments='{"z": 2}')))
    plain = encode_sse(generate_chunks(reply, seed=2), quirks=[quirk] if quirk in {"comments", "data_no_space"} else [])
    quirky = encode_sse(generate_chunks(reply, seed=2, quirks=[quirk]), quirks=[quirk])
    base = encode_sse(generate_chunks(reply, seed=2))
    assert quirky != base
    if quirk in {"comments", "data_no_space"}:
        assert quirky == plain


def test_named_quirk_shapes() -> None:
    reply = Reply(reasoning="hm", content="a b", tool_calls=(ToolCall(name="f", arguments='{"k": 1}'),))
    usage_chunk = generate_chunks(reply, quirks=["usage_chunk"])
    assert usage_chunk[-1]["choices"] == [] and usage_chunk[-1]["usage"]
    assert usage_chunk[-2]["usage"] is None
    whole = [d for d in deltas(generate_chunks(reply, quirks=["whole_tool_call"])) if "tool_calls" in d]
    assert len(whole) == 1 and whole[0]["tool_calls"][0]["function"]["arguments"] == '{"k": 1}'
    rep = [d["tool_calls"][0] for d in deltas(generate_chunks(reply, quirks=["repeat_tool_identity"])) if "tool_calls" in d]
    assert all(e["function"].get("name") == "f" and e.get("id") for e in rep)
    assert "reasoning" in deltas(generate_chunks(reply, quirks=["reasoning_field"]))[1]
    with pytest.raises(ValueError, match="unknown quirk"):
        generate_chunks(reply, quirks=["nope"])
