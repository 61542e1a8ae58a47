"""Property: however a body is split into network reads, the chunks and the assembled message
are the same (issue 2; wire.md A1, S36). Every split point for small streams, sampled multi-splits
for larger ones, 1-byte fragments, and one 1 MiB event (the quadratic-copy trap)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshkit.harness.llm import TextBlock
from dshkit.harness.llm.messages import ModelSource

from .wire import USAGE, assemble, call, chunk, decode, sse

REPO = Path(__file__).resolve().parents[4]
SRC = ModelSource(provider="deepseek", model="m")

SMALL = {
    "reasoning-text": b": keep-alive\n\n"
    + sse(
        chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
        chunk({"reasoning_content": "想一想 🙂"}),
        chunk({"content": "答案 é"}),
        chunk({"content": ""}, "stop", USAGE),
    ),
    "parallel-calls": sse(
        chunk({"tool_calls": [call(0, "call_00_a", "read", '{"p":')]}),
        chunk({"tool_calls": [call(0, arguments='"中"}')]}),
        chunk({"tool_calls": [call(1, "call_01_b", "ls", "{}")]}),
        chunk({}, "tool_calls", USAGE),
    ),
    "error-mid-stream": sse(chunk({"content": "partial 🙂"}), done=False)
    + b'event: error\ndata: {"error":{"message":"overloaded"}}\n\n',
    "done-missing": sse(chunk({"content": "x"}), chunk({}, "stop"), done=False) + b"data: [DONE]",
    "truncated": sse(chunk({"content": "abc"}), done=False) + b'data: {"choi',
}


def _result(body: bytes, cuts: list[int]) -> tuple[list, list]:
    chunks = decode(body, sorted(set(cuts)))
    return chunks, assemble(chunks).message(SRC, id="m").content


def _variants(body: bytes) -> list[bytes]:
    return [body, body.replace(b"\n", b"\r\n"), body.replace(b"\n", b"\r")]


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_single_split_point(name: str) -> None:
    for body in _variants(SMALL[name]):
        assert len(body) <= 4096
        whole = _result(body, [])
        for i in range(1, len(body)):
            assert _result(body, [i]) == whole, (name, i)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_one_byte_fragments(name: str) -> None:
    body = SMALL[name]
    assert _result(body, list(range(1, len(body)))) == _result(body, [])


def test_line_ending_styles_agree() -> None:
    for body in SMALL.values():
        results = [_result(v, []) for v in _variants(body)]
        assert results[0] == results[1] == results[2]


def _large_bodies() -> dict[str, bytes]:
    bodies = {"seed-walk": (REPO / "examples" / "seed-walk.sse").read_bytes()}
    parts = [chunk({"role": "assistant", "content": None, "reasoning_content": ""})]
    parts += [chunk({"reasoning_content": f"步骤 {i} 🙂 "}) for i in range(150)]
    parts += [chunk({"content": f"word{i} "}) for i in range(150)]
    parts += [chunk({"tool_calls": [call(0, "call_00_x", "write", "")]})]
    args = json.dumps({"content": "é" * 300 + "🙂" * 50}, ensure_ascii=False)
    parts += [chunk({"tool_calls": [call(0, arguments=args[i : i + 5])]}) for i in range(0, len(args), 5)]
    parts += [chunk({}, "tool_calls", USAGE)]
    bodies["generated"] = sse(*parts)
    return bodies


LARGE = _large_bodies()


@functools.cache
def _whole(name: str) -> tuple[list, list]:
    """`_result(LARGE[name], [])`, the unsplit reference, decoded once rather than per example."""
    return _result(LARGE[name], [])


@pytest.mark.parametrize("name", sorted(LARGE))
@settings(max_examples=30)
@given(data=st.data())
def test_sampled_multi_splits(name: str, data: st.DataObject) -> None:
    body = LARGE[name]
    cuts = data.draw(st.lists(st.integers(1, len(body) - 1), max_size=40))
    assert _result(body, cuts) == _whole(name)


@given(st.lists(st.integers(1, 12), min_size=1, max_size=20))
def test_tcp_read_sizes(sizes: list[int]) -> None:
    """Reads of repeating sizes (as a socket delivers them) across the whole generated body."""
    body = LARGE["generated"]
    cuts, pos, i = [], 0, 0
    while pos < len(body):
        pos += sizes[i % len(sizes)] * 97
        cuts.append(pos)
        i += 1
    assert _result(body, [c for c in cuts if c < len(body)]) == _whole("generated")


def test_one_mib_event_fed_in_small_pieces() -> None:
    text = ("abcdefghij" * 104858)[: 1 << 20]
    body = sse(chunk({"content": text}, "stop"))
    assert len(body) > 1 << 20
    whole = decode(body)
    assert assemble(whole).blocks() == [TextBlock(text=text)]

    # 7-byte reads: linear only if the unfinished line is never re-joined per read.
    assert decode(body, list(range(7, len(body), 7))) == whole
