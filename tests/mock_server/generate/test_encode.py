"""SSE encoding (`generate/encode.py`): the framing, the fast JSON encoder and the template
fast path, each byte for byte what the plain two-step form gives."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from dshkit.mock_server import QUIRKS
from dshkit.mock_server.generate.chunks import generate_chunks
from dshkit.mock_server.generate.encode import encode_events, encode_sse, encode_stream, frame_jsonl
from dshkit.mock_server.generate.reply import Reply, ToolCall
from dshkit.mock_server.generate.split import SplitPlan

from .test_split import _split, _text, _tricky


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
