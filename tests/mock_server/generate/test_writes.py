"""Write plans (`generate/writes.py`): where an encoded stream is cut into network writes."""

from __future__ import annotations

from dshkit.mock_server.generate.chunks import generate_chunks
from dshkit.mock_server.generate.encode import encode_sse
from dshkit.mock_server.generate.reply import Reply
from dshkit.mock_server.generate.writes import WritePlan, plan_writes


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
