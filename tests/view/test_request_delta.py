"""`RequestDeltas`: each request body printed as what it adds to the one before it in its thread."""

from __future__ import annotations

from dshkit.view.request_delta import RequestDeltas
from dshkit.view.shown import Shown


def test_a_request_shows_what_it_adds() -> None:
    shown = Shown()
    deltas = RequestDeltas(shown)
    tools = [{"type": "function", "function": {"name": "read", "description": "Read a file. " * 10}}]
    first = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools, "temperature": 0.5}
    second = {"model": "m", "messages": [*first["messages"], {"role": "assistant", "content": "hello"}], "tools": tools}
    deltas.render(first, anchor="r1", label="call 1's request")
    out = deltas.render(second, anchor="r2", label="call 2's request")
    assert '"model": "m"' in out  # short: printed again
    assert 'href="#r1">⤴ as in call 1&#x27;s request</a>' in out  # the tools: a link
    assert "message 1 as in call 1&#x27;s request" in out and '"hello"' in out and '"hi"' not in out
    assert "no longer sent: <code>temperature</code>" in out and "1 new message after call 1&#x27;s request" in out
    # a compaction rewrote the history: every message from the first change on is printed
    third = {**second, "messages": [{"role": "user", "content": "summary"}, second["messages"][1]]}
    out = deltas.render(third, anchor="r3", label="call 3's request")
    assert '"summary"' in out and '"hello"' in out and "as in call 1" in out  # tools still linked
    assert "from message 1 on, the history differs from call 2&#x27;s request" in out
    # not a chat body: printed whole
    assert '"prompt"' in deltas.render({"prompt": "x"}, anchor="r4", label="r4")
