"""The generator package as a whole (`mock_server/generate`): a reply through chunks, SSE bytes
and network writes, parsed back, is the reply (S36)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from dshkit.mock_server.generate.chunks import generate_chunks
from dshkit.mock_server.generate.encode import encode_sse
from dshkit.mock_server.generate.reply import Reply, ToolCall
from dshkit.mock_server.generate.split import FragmentPlan, SplitPlan
from dshkit.mock_server.generate.writes import WritePlan, plan_writes

from .generate.test_split import _split, _text
from .wire import parse_sse, reassemble


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
