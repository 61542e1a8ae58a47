"""The pure generator: DeepSeek V4 shapes (wire.md §4, §5, §8, §10), splits, quirks, writes."""

from __future__ import annotations

import json
import random
import re
import threading
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshkit.mock_server import QUIRKS
from dshkit.mock_server.generate.chunks import generate_chunks
from dshkit.mock_server.generate.completion import build_completion
from dshkit.mock_server.generate.encode import encode_events, encode_sse, encode_stream, frame_jsonl
from dshkit.mock_server.generate.reply import Reply, ToolCall, compute_usage, make_meta, seeded_uuid
from dshkit.mock_server.generate.split import (
    SEP,
    FragmentPlan,
    SplitPlan,
    cut_joined,
    cut_reply,
    split_text,
)
from dshkit.mock_server.generate.writes import WritePlan, plan_writes

from .wire import parse_sse, reassemble

CALL_ID = re.compile(r"^call_\d\d_[A-Za-z0-9]{24}$")
REPLY = Reply(
    reasoning="Think about the weather.",
    content="It is sunny in 东京 🌞.",
    tool_calls=(ToolCall(name="get_weather", arguments='{"city": "Tokyo", "q": "a\\"b"}'),),
)


def deltas(chunks: list[dict]) -> list[dict]:
    return [c["choices"][0]["delta"] for c in chunks if c["choices"]]


def check_usage(u: dict, *, reasoning: bool) -> None:
    assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"]
    assert u["prompt_cache_hit_tokens"] + u["prompt_cache_miss_tokens"] == u["prompt_tokens"]
    assert u["prompt_tokens_details"]["cached_tokens"] == u["prompt_cache_hit_tokens"]
    assert u["prompt_cache_hit_tokens"] % 64 == 0
    assert ("completion_tokens_details" in u) is reasoning
    if reasoning:
        assert u["completion_tokens_details"]["reasoning_tokens"] <= u["completion_tokens"]


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


def _reference_uuid(text: str) -> str:
    return str(uuid.UUID(int=random.Random(text).getrandbits(128), version=4))


_UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


@given(text=st.one_of(st.builds("meta:{}:repeat:{}".format, st.integers(0, 2**32), st.integers(1, 2**40)),
                      st.text()))
def test_seeded_uuid_is_a_uuid4_fixed_by_its_text(text: str) -> None:
    """The same text gives the same id (any text: a lone surrogate too), in the UUID version 4
    form a client may parse."""
    got = seeded_uuid(text)
    assert _UUID4.fullmatch(got)
    assert uuid.UUID(got).version == 4
    assert seeded_uuid(text) == got


def test_seeded_uuid_is_the_same_in_every_process() -> None:
    """Ids are a function of the text alone, not of a process's hash salt or state: a server
    started again with the same seed sends the same ids (pinned values)."""
    assert seeded_uuid("meta:7:repeat:3") == "7af93660-1c89-46dd-aa41-13bbe2f12cf2"
    assert seeded_uuid("meta:1") == "0d7940d6-3345-4d6d-b1be-ff7672bdfa05"


def test_seeded_uuid_differs_per_text() -> None:
    """Every repeat of every seed has its own id (no two of 40,000 texts share one), and the
    first response's id, drawn the other way, is none of them."""
    texts = [f"meta:{s}:repeat:{r}" for s in range(200) for r in range(1, 201)]
    ids = {seeded_uuid(t) for t in texts}
    assert len(ids) == len(texts)
    assert not ids & {make_meta("deepseek-chat", seed=s).id for s in range(200)}


def test_seeded_uuid_holds_across_threads() -> None:
    """Ids drawn at once on several threads are each text's own (what one thread draws alone)."""
    texts = [f"meta:{s}:repeat:{r}" for s in range(4) for r in range(1, 200)]
    expected = {t: seeded_uuid(t) for t in texts}
    bad: list[str] = []
    start = threading.Barrier(4)

    def draw() -> None:
        start.wait()
        bad.extend(t for t in texts if seeded_uuid(t) != expected[t])

    threads = [threading.Thread(target=draw) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_repeated_responses_get_the_seeded_ids() -> None:
    """A repeat's completion id is its own text's id, and differs from the first response's (the
    seeded generator's, which the fingerprint comes from too)."""
    first = make_meta("deepseek-chat", seed=7, created=1)
    again = make_meta("deepseek-chat", seed=7, created=1, repeat=3)
    assert first.id == _reference_uuid("meta:7")
    assert again.id == seeded_uuid("meta:7:repeat:3") != first.id
    assert again.id != make_meta("deepseek-chat", seed=7, created=1, repeat=4).id
    assert again.system_fingerprint == first.system_fingerprint


def test_v32_era_fingerprint() -> None:
    assert re.match(r"^fp_[0-9a-f]{10}_prod0820_fp8_kvcache$", make_meta("deepseek-chat", era="v3.2").system_fingerprint)
    assert re.match(r"^[0-9a-f]{32}$", make_meta("deepseek-v4-flash").system_fingerprint)


@pytest.mark.parametrize("prompt", [0, 1, 63, 64, 127, 128, 1000, 4096])
def test_usage_invariants(prompt: int) -> None:
    check_usage(compute_usage(prompt_tokens=prompt, completion_tokens=5, reasoning_tokens=3), reasoning=True)
    check_usage(compute_usage(prompt_tokens=prompt, completion_tokens=5, reasoning_tokens=0), reasoning=False)


def test_encode_sse_framing() -> None:
    chunks = generate_chunks(Reply(content="é"), thinking=False)
    lf = encode_sse(chunks)
    assert lf.endswith(b"data: [DONE]\n\n") and "é".encode() in lf  # raw UTF-8, not \u escapes
    for block in lf.split(b"\n\n")[:-1]:
        assert block.startswith(b"data: ") and b"\n" not in block  # S19
    crlf = encode_sse(chunks, "crlf")
    assert crlf.replace(b"\r\n", b"\n") == lf
    assert not encode_sse(chunks, done=False).endswith(b"[DONE]\n\n")
    assert len(encode_events(chunks)) == len(chunks) + 1


def test_frame_jsonl_adds_framing_and_done() -> None:
    lines = b'{"a":1}\r\n\n{"b":"\xc3\xa9"}\n'
    assert frame_jsonl(lines) == b'data: {"a":1}\n\ndata: {"b":"\xc3\xa9"}\n\ndata: [DONE]\n\n'


def test_split_modes() -> None:
    assert split_text("abcdef", SplitPlan(mode="fixed", size=4)) == ["abcd", "ef"]
    assert split_text("abcdef", SplitPlan(mode="points", points=(1, 3, 99))) == ["a", "bc", "def"]
    assert split_text("abcdef", SplitPlan(mode="whole")) == ["abcdef"]
    assert split_text('{"location": "San Francisco"}', SplitPlan()) == [
        '{"', "location", '":', ' "', "San", " Francisco", '"}']
    assert split_text("", SplitPlan()) == []
    with pytest.raises(ValueError, match="min_size"):
        SplitPlan(min_size=3, max_size=2)


def test_token_split_joins_a_character_to_punctuation_only_when_it_is_ascii_punctuation() -> None:
    """Token pieces by character class, over every code point up to U+3000 and a sample above:
    an ASCII character that is neither whitespace nor a word character extends a punctuation
    run; any other character starts a piece of its own (a non-ASCII one is always alone)."""
    for code in [*range(0x3000), *range(0x3000, 0x110000, 97), 0x10FFFF]:
        ch = chr(code)
        punctuation = ch.isascii() and not ch.isspace() and not (ch.isalnum() or ch == "_")
        assert split_text("!" + ch, SplitPlan()) == (["!" + ch] if punctuation else ["!", ch]), hex(code)
        if not ch.isascii():
            assert split_text(ch + ch, SplitPlan()) == [ch, ch], hex(code)


def test_plan_writes_cuts_inside_utf8_and_escapes() -> None:
    data = encode_sse(generate_chunks(Reply(content='é"'), thinking=False))
    writes = plan_writes(data, WritePlan(inside_utf8=True, inside_escapes=True))
    assert b"".join(writes) == data
    assert any(w.endswith(b"\xc3") for w in writes)  # a write ends inside "é"
    assert any(w.endswith(b"\\") for w in writes)  # a write ends inside the escape \"
    assert plan_writes(data, WritePlan(events_per_write=0)) == [data]
    assert len(plan_writes(data, WritePlan())) == data.count(b"\n\n")
    assert all(len(w) <= 5 for w in plan_writes(data, WritePlan(events_per_write=0, size=5)))
    assert plan_writes(b"", WritePlan()) == []


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


def test_build_completion_shape() -> None:
    body = build_completion(REPLY, thinking=True, seed=5)
    assert body["object"] == "chat.completion" and isinstance(body["created"], int)
    (choice,) = body["choices"]
    assert choice["index"] == 0 and choice["logprobs"] is None and choice["finish_reason"] == "tool_calls"
    msg = choice["message"]
    assert msg["reasoning_content"] == REPLY.reasoning and msg["content"] == REPLY.content
    call = msg["tool_calls"][0]
    assert call["index"] == 0 and call["type"] == "function" and CALL_ID.match(call["id"])
    assert call["function"] == {"name": "get_weather", "arguments": REPLY.tool_calls[0].arguments}
    assert "reasoning_content" not in build_completion(REPLY, thinking=False)["choices"][0]["message"]
    # The same token accounting as the stream.
    assert body["usage"] == generate_chunks(REPLY, thinking=True, seed=5)[-1]["usage"]


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
_split = st.one_of(
    st.just(SplitPlan()),
    st.just(SplitPlan(mode="whole")),
    st.integers(1, 6).map(lambda n: SplitPlan(mode="fixed", size=n)),
    st.integers(1, 5).map(lambda n: SplitPlan(mode="random", min_size=1, max_size=n)),
)


@given(
    content=_text,
    reasoning=_text,
    args=st.lists(st.dictionaries(st.text(max_size=5), _text, max_size=3), max_size=3),
    split=_split,
    seed=st.integers(0, 2**32 - 1),
    random_max=st.one_of(st.none(), st.integers(1, 9)),
    crlf=st.booleans(),
)
def test_reassembly_equals_the_logical_reply(
    content: str, reasoning: str, args: list[dict[str, str]], split: SplitPlan, seed: int,
    random_max: int | None, crlf: bool,
) -> None:
    calls = tuple(ToolCall(name=f"t{i}", arguments=json.dumps(a, ensure_ascii=False)) for i, a in enumerate(args))
    reply = Reply(content=content, reasoning=reasoning, tool_calls=calls)
    chunks = generate_chunks(reply, split=FragmentPlan.all(split), seed=seed)
    data = encode_sse(chunks, "crlf" if crlf else "lf")
    writes = plan_writes(data, WritePlan(random_max=random_max, seed=seed, inside_utf8=True, inside_escapes=True))
    assert b"".join(writes) == data
    parsed = parse_sse(b"".join(writes))
    assert parsed.done
    got = reassemble(parsed.chunks)
    assert got["content"] == content and got["reasoning"] == reasoning
    assert [(c["name"], c["arguments"]) for c in got["tool_calls"]] == [(c.name, c.arguments) for c in calls]
    assert got["finish_reason"] == ("tool_calls" if calls else "stop")


@given(
    content=_text, reasoning=_text, seed=st.integers(0, 2**32 - 1),
    quirks=st.sets(st.sampled_from(sorted(QUIRKS))), logprobs=st.one_of(st.none(), st.integers(0, 3)),
)
def test_fast_encoder_is_byte_identical_to_json_dumps(
    content: str, reasoning: str, seed: int, quirks: set[str], logprobs: int | None
) -> None:
    reply = Reply(content=content, reasoning=reasoning, tool_calls=(ToolCall(name="f", arguments='{"é": "\\n"}'),))
    chunks = generate_chunks(reply, seed=seed, quirks=quirks, logprobs=logprobs)
    plain = [json.dumps(c, ensure_ascii=False, separators=(",", ":")).encode() for c in chunks]
    fast = [e for e in encode_events(chunks, done=False) if e.startswith(b"data: ")]
    assert fast == [b"data: " + p + b"\n\n" for p in plain]


@given(
    content=_text, reasoning=_text, split=_split, seed=st.integers(0, 2**32 - 1), thinking=st.booleans(),
    crlf=st.booleans(), max_tokens=st.one_of(st.none(), st.integers(1, 30)),
    args=st.lists(_text, max_size=2),
)
def test_encode_stream_matches_the_two_step_form(
    content: str, reasoning: str, split: SplitPlan, seed: int, thinking: bool, crlf: bool,
    max_tokens: int | None, args: list[str],
) -> None:
    reply = Reply(content=content, reasoning=reasoning,
                  tool_calls=tuple(ToolCall(name=f"t{i}", arguments=a) for i, a in enumerate(args)))
    kw: dict = {"thinking": thinking, "split": split, "seed": seed, "max_tokens": max_tokens, "prompt_tokens": 300}
    framing = "crlf" if crlf else "lf"
    assert encode_stream(reply, framing=framing, **kw) == encode_events(generate_chunks(reply, **kw), framing)


# -- the fast path's cuts: fragments joined, found in bulk ----------------------------------------

# Word runs with single and double spaces, punctuation, other whitespace (ASCII, Unicode, the
# separators str.isspace counts), control characters, non-ASCII letters and the joiner itself.
_tricky = st.text(st.sampled_from(list("ab_09 ,.\"\\:{}\t\n\r\x0b\x1c\x00\u00a0\u2028\u3000中é🎉\x7f")), max_size=60)


#: Texts the bulk cut takes (printable, no two spaces in a row) far more often than `_tricky`'s.
_printable = st.text(st.sampled_from(list("ab_09 ,.\"\\:{}~`中é🎉")), max_size=60)


#: ASCII prose: runs of words with single spaces, and now and then punctuation.
_prose = st.lists(st.sampled_from(["w1", "ab", "_", " ", " ", " ", ",", '"', ":", "x.y", "{", "~"]), max_size=120).map("".join)


@given(text=st.one_of(_tricky, _printable, _prose))
def test_token_cuts_found_in_bulk_are_the_token_splits(text: str) -> None:
    """`cut_joined` finds a text's token cuts by runs of words; split at the joiner they are
    the fragments `split_text` gives (or, for a text holding the joiner, it declines)."""
    pieces = cut_joined(Reply(content=text), thinking=True)
    if SEP in text:
        assert pieces is None
        return
    assert pieces is not None
    joined, count = pieces.content
    assert (joined.split(SEP) if count else []) == split_text(text, SplitPlan()) and count == len(split_text(text, SplitPlan()))


@given(content=_tricky, reasoning=_text, split=_split, seed=st.integers(0, 2**32 - 1), thinking=st.booleans(),
       max_tokens=st.one_of(st.none(), st.integers(1, 30)), args=st.lists(_tricky, max_size=2),
       ids=st.lists(st.sampled_from([None, "call_x"]), min_size=2, max_size=2))
def test_joined_pieces_are_the_reply_pieces_joined(
    content: str, reasoning: str, split: SplitPlan, seed: int, thinking: bool, max_tokens: int | None,
    args: list[str], ids: list[str | None],
) -> None:
    reply = Reply(content=content, reasoning=reasoning,
                  tool_calls=tuple(ToolCall(name=f"t{i}", arguments=a, id=ids[i]) for i, a in enumerate(args)))
    kw: dict = {"thinking": thinking, "split": split, "seed": seed, "max_tokens": max_tokens}
    joined, pieces = cut_joined(reply, **kw), cut_reply(reply, **kw)
    if joined is None:
        assert SEP in reasoning + content + "".join(args)
        return

    def run(frags: list[str]) -> tuple[str, int]:
        return SEP.join(frags), len(frags)

    assert joined.reasoning == run(pieces.reasoning) and joined.content == run(pieces.content)
    assert joined.calls == [(i, name, run(a)) for i, name, a in pieces.calls]
    assert (joined.finish_reason, joined.completion_tokens) == (pieces.finish_reason, pieces.completion_tokens)


@given(content=_tricky, crlf=st.booleans(), surrogate=st.booleans(), name=st.sampled_from(["t", "t\x7f"]),
       model=st.sampled_from(["deepseek-v4-flash", "m\x7f"]))
def test_the_template_stream_is_the_two_step_form_for_any_text(
    content: str, crlf: bool, surrogate: bool, name: str, model: str
) -> None:
    """Written whole from templates (or, for a lone surrogate or the joiner in a text, a model
    or a tool's name, chunk by chunk), the stream is the two-step form's, event by event and joined."""
    reply = Reply(content=content + ("\ud800" if surrogate else ""), reasoning=content,
                  tool_calls=(ToolCall(name=name, arguments=content), ToolCall(name="u", arguments=content + " x")))
    framing = "crlf" if crlf else "lf"
    fast = encode_stream(reply, framing=framing, model=model)
    slow = encode_events(generate_chunks(reply, model=model), framing)
    assert list(fast) == slow and fast == slow
    assert [fast[i] for i in range(-len(slow), len(slow))] == slow + slow and fast[1:3] == slow[1:3]
