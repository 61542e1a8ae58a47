"""`dshkit view j1.jsonl j2.jsonl`: journals of several `dshkit serve` instances on one page."""

from __future__ import annotations

from pathlib import Path

import httpx

from dshkit.mock_server import MockServer
from dshkit.view import render_paths
from dshkit.view.load import merge_journals
from dshkit.view.wire import load_journal


async def test_two_instances_journals_merge_in_arrival_order(tmp_path: Path) -> None:
    j1, j2 = tmp_path / "j1.jsonl", tmp_path / "j2.jsonl"
    body = {"model": "deepseek-v4-flash", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    async with MockServer(journal=j1) as a, MockServer(journal=j2) as b, httpx.AsyncClient(timeout=10) as c:
        for server, session in ((a, "one"), (b, "two"), (a, "one"), (b, "two"), (b, "three")):
            assert (await c.post(server.url, json=body, headers={"X-Mock-Session": session})).status_code == 200
    merged = merge_journals([(j1, load_journal(j1)), (j2, load_journal(j2))])
    assert [x.session for x in merged] == ["one", "two", "one", "two", "three"]
    assert [x.number for x in merged] == [1, 2, 3, 4, 5]
    assert [x.note.split(" · ")[0] for x in merged] == ["j1.jsonl #1", "j2.jsonl #1", "j1.jsonl #2",
                                                        "j2.jsonl #2", "j2.jsonl #3"]
    html, kind = render_paths([j1, j2])
    assert kind == "journal" and ">5 exchanges<" in html and "j2.jsonl #3" in html
