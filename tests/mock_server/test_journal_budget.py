"""The journal's byte budget: finished exchanges keep their bytes only while they fit in it."""

from __future__ import annotations

import json
import signal
from typing import Any

import httpx
import pytest

from dshkit.mock_server import MockServer, Script
from dshkit.mock_server.journal import DEFAULT_KEEP_BYTES, Journal, Write

from .cli_process import ServeProcess
from .wire import chat


def _close(j: Journal, size: int, *, body: int = 0) -> Any:
    e = j.open_entry(t=0.0, method="POST", path="/chat/completions", headers={})
    e.request_bytes = body
    e.writes.append(Write(0.0, b"x" * size))
    j.close_entry(e)
    return e


def _held(j: Journal) -> int:
    """The bytes the untrimmed finished entries really hold (writes plus request bodies)."""
    return sum(e.request_bytes + len(e.data) for e in j.entries if not e.trimmed)


def test_the_oldest_exchanges_are_trimmed_until_the_rest_fit() -> None:
    j = Journal(keep=None, keep_bytes=1000)
    a, b, c = _close(j, 400), _close(j, 400), _close(j, 150, body=50)
    assert not (a.trimmed or b.trimmed or c.trimmed) and j.kept_bytes == 1000 == _held(j)
    d = _close(j, 300)
    assert (a.trimmed, b.trimmed, c.trimmed, d.trimmed) == (True, False, False, False)
    assert j.kept_bytes == 900 == _held(j)
    assert (j.trimmed, j.trimmed_for_bytes) == (1, 1)
    assert a.bytes_sent == 400 and a.write_count == 1  # counts survive the trim
    with pytest.raises(LookupError, match="byte budget"):
        a.data  # noqa: B018


def test_one_exchange_larger_than_the_budget_keeps_nothing() -> None:
    j = Journal(keep_bytes=100)
    small, big = _close(j, 50), _close(j, 500)
    assert small.trimmed and big.trimmed and j.kept_bytes == 0 and j.trimmed == 2
    assert big.bytes_sent == 500


def test_count_and_bytes_both_bound_and_stats_say_which_trimmed() -> None:
    j = Journal(keep=2, keep_bytes=10_000)
    for _ in range(5):
        _close(j, 10)
    s = j.stats()
    assert (s["entries"], s["kept"], s["kept_bytes"], s["trimmed"], s["trimmed_for_bytes"]) == (5, 2, 20, 3, 0)
    assert Journal().keep_bytes == DEFAULT_KEEP_BYTES
    with pytest.raises(ValueError, match="keep_bytes must be >= 0"):
        Journal(keep_bytes=-1)
    unbounded = Journal(keep=None, keep_bytes=None)
    for _ in range(3):
        _close(unbounded, 10)
    assert not any(e.trimmed for e in unbounded.entries) and unbounded.stats()["kept_bytes"] is None


async def test_big_replies_over_http_stay_within_the_budget() -> None:
    """Replies of about 200 KB each through the real server and a real client: after every
    exchange the bytes the journal holds (by its own accounting, which matches what its entries
    hold) stay within a 1 MiB budget, the newest exchange keeps its bytes, and the trimmed ones
    are counted."""
    budget = 1024 * 1024
    text = "the forge turns YAML recipes into widgets. " * 5000
    script = Script.of(*({"reply": {"content": text + str(i)}, "stream": {"split": {"mode": "fixed", "size": 512}}}
                         for i in range(12)))
    async with MockServer(script, journal_bytes=budget, journal_keep=100) as server, \
            httpx.AsyncClient(timeout=10, headers={"X-Mock-Session": "big"}) as c:
        for _ in range(12):
            r = await c.post(server.url, json=chat(stream=True))
            assert r.status_code == 200 and len(r.content) > 200_000
            j = server.journal
            assert j.kept_bytes <= budget
            assert j.kept_bytes == _held(j)
            assert j.last.data == r.content  # the newest exchange is whole
    assert server.journal.trimmed >= 7 and server.journal.trimmed == server.journal.trimmed_for_bytes


def _serve_summary(*args: str, requests: int) -> tuple[dict[str, Any], str]:
    """`dshkit serve ARGS`, `requests` streamed chat requests, then SIGINT: (its summary, its stderr)."""
    p = ServeProcess(*args)
    try:
        with httpx.Client(base_url=p.base_url, timeout=5) as c:
            for _ in range(requests):
                assert c.post("/chat/completions", json=chat(stream=True)).status_code == 200
        for _ in range(2 * requests):  # each request's request and result events
            p.next_line()
        code, rest = p.stop(signal.SIGINT)
    finally:
        p.kill()
    assert code == 130
    return json.loads(rest.splitlines()[-1]), p.stderr


def test_serve_journal_bytes_option_and_summary() -> None:
    summary, stderr = _serve_summary("--journal-bytes", "1KiB", "--journal-keep", "all", requests=3)
    journal = summary["journal"]
    assert journal["keep_bytes"] == 1024 and journal["keep"] is None
    assert journal["kept_bytes"] <= 1024 and journal["trimmed"] >= 1
    assert "trimmed to counts and timings" in stderr


@pytest.mark.parametrize("bad", ["lots", "-1", "12XB"])
def test_serve_rejects_a_bad_journal_budget(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    from dshkit.mock_server.__main__ import main

    with pytest.raises(SystemExit) as info:
        main(["serve", "--journal-bytes", bad])
    assert info.value.code == 2
    assert "--journal-bytes" in capsys.readouterr().err


# -- trimmed entries beyond `keep_trimmed` leave the journal ---------------------------------


def test_trimmed_entries_beyond_keep_trimmed_leave_and_are_counted() -> None:
    """Of the trimmed entries only the newest `keep_trimmed` stay; `seq` keeps counting, the
    dropped ones are counted with their outcomes, and an entry still being written is never
    dropped, however old."""
    j = Journal(keep=2, keep_bytes=None, keep_trimmed=3)
    open_first = j.open_entry(t=0.0, method="POST", path="/chat/completions", headers={})
    for _ in range(10):
        e = _close(j, 10)
        e.outcome = "completed"
    held = j.entries
    assert open_first in held and len(held) == 1 + 3 + 2
    assert [e.seq for e in held] == [1, 7, 8, 9, 10, 11]  # arrival order; 2-6 left
    assert [e.trimmed for e in held[1:]] == [True, True, True, False, False]
    assert (j.dropped, j.dropped_outcomes(), j.trimmed) == (5, {"completed": 5}, 8)
    assert (j.stats()["entries"], j.stats()["dropped"], j.stats()["keep_trimmed"]) == (6, 5, 3)
    assert len(j) == 6 and j.last.seq == 11
    assert j.open_entry(t=0.0, method="GET", path="/models", headers={}).seq == 12
    with pytest.raises(ValueError, match="keep_trimmed must be >= 0"):
        Journal(keep_trimmed=-1)


def test_keep_trimmed_none_keeps_every_trimmed_entry() -> None:
    j = Journal(keep=1, keep_trimmed=None)
    for _ in range(20):
        _close(j, 10)
    assert len(j.entries) == 20 and j.dropped == 0 and j.trimmed == 19


def test_serve_summary_counts_the_exchanges_that_left_the_journal() -> None:
    """`dshkit serve --journal-keep 1 --journal-trimmed 1`: five requests, of which three left
    the journal; the summary still counts five, by outcome, and says how many left."""
    summary, stderr = _serve_summary("--journal-keep", "1", "--journal-trimmed", "1", requests=5)
    assert (summary["requests"], summary["outcomes"]) == (5, {"completed": 5})
    assert (summary["journal"]["entries"], summary["journal"]["dropped"]) == (2, 3)
    assert "3 trimmed exchange(s) beyond --journal-trimmed left memory" in stderr


def test_serve_rejects_a_bad_journal_trimmed(capsys: pytest.CaptureFixture[str]) -> None:
    from dshkit.mock_server.__main__ import main

    with pytest.raises(SystemExit) as info:
        main(["serve", "--journal-trimmed", "many"])
    assert info.value.code == 2
    assert "--journal-trimmed" in capsys.readouterr().err
