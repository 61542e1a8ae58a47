"""`GET /metrics`: the Prometheus text format, scraped with httpx and read back with
prometheus_client's own parser after real requests on both wires."""

from __future__ import annotations

import json
import signal
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from dshkit.mock_server import MockServer, Script

from .cli_process import ServeProcess
from .wire import chat


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _get(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_metrics_after_real_requests_on_both_wires() -> None:
    script = Script.of({"reply": {"content": "hello there"}}, "rate_limit", {"reply": {"content": "again"}},
                       name="walk", session="m")
    anthropic_body = {"model": "deepseek-v4-flash", "max_tokens": 64, "stream": True,
                      "messages": [{"role": "user", "content": "hi"}]}
    async with MockServer(script, unscripted="default") as server, httpx.AsyncClient(timeout=10) as c:
        headers = {"X-Mock-Session": "m"}
        first = await c.post(server.url, json=chat(stream=True), headers=headers)
        limited = await c.post(server.url, json=chat(stream=True), headers=headers)
        third = await c.post(server.url, json=chat(stream=False), headers=headers)
        other = await c.post(server.anthropic_base_url + "/v1/messages", json=anthropic_body,
                             headers={"X-Mock-Session": "a"})
        missing = await c.get(server.make_url("/nowhere"))
        assert [first.status_code, limited.status_code, third.status_code, other.status_code, missing.status_code] == [
            200, 429, 200, 200, 404]
        page = await c.get(server.make_url("/metrics"))
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/plain")
    s = _samples(page.text)
    assert _get(s, "dshkit_mock_requests_total", surface="chat") == 4
    assert _get(s, "dshkit_mock_requests_total", surface="anthropic") == 1
    assert _get(s, "dshkit_mock_responses_total", surface="chat", status="200", behavior="reply", outcome="completed") == 2
    assert _get(s, "dshkit_mock_responses_total", surface="chat", status="429", behavior="rate_limit",
                outcome="completed") == 1
    assert _get(s, "dshkit_mock_responses_total", surface="chat", status="404", behavior="not_found",
                outcome="rejected") == 1
    assert _get(s, "dshkit_mock_responses_total", surface="anthropic", status="200", behavior="default",
                outcome="completed") == 1
    assert _get(s, "dshkit_mock_steps_served_total", script="walk") == 3
    chat_bytes = sum(len(r.content) for r in (first, limited, third, missing))
    assert _get(s, "dshkit_mock_bytes_written_total", surface="chat") == chat_bytes
    assert _get(s, "dshkit_mock_bytes_written_total", surface="anthropic") == len(other.content)
    assert _get(s, "dshkit_mock_time_to_first_byte_seconds_count", surface="chat") == 4
    assert _get(s, "dshkit_mock_time_to_first_byte_seconds_bucket", surface="chat", le="+Inf") == 4
    assert _get(s, "dshkit_mock_stream_duration_seconds_count", surface="anthropic") == 1
    assert _get(s, "dshkit_mock_journal_entries") == 5  # /metrics itself is not journaled
    assert _get(s, "dshkit_mock_journal_kept_bytes") == server.journal.kept_bytes > 0


def test_metrics_of_all_workers_from_any_worker() -> None:
    """Also what an unscripted `--workers 2` server answers and how it ends on SIGTERM: exit 143
    and one summary of both workers' requests (SIGINT with workers: test_workers.py)."""
    p = ServeProcess("--workers", "2")
    try:
        n = 10
        with httpx.Client(base_url=p.base_url, timeout=10, headers={"Connection": "close"}) as c:
            for _ in range(n):
                assert c.post("/chat/completions", json=chat(stream=True)).status_code == 200
            workers = {p.next_line()["worker"] for _ in range(2 * n)}
            scrapes: list[dict[Any, float]] = [_samples(c.get("/metrics").text) for _ in range(4)]
        code, rest = p.stop(signal.SIGTERM)
    finally:
        p.kill()
    assert code == 143 and workers == {0, 1}
    summary = json.loads(rest.splitlines()[-1])
    assert summary["type"] == "summary" and summary["workers"] == 2
    assert summary["requests"] == n and summary["outcomes"] == {"completed": n}
    for s in scrapes:  # whichever worker answered, it reports both workers' requests
        assert _get(s, "dshkit_mock_requests_total", surface="chat") == n
        assert _get(s, "dshkit_mock_responses_total", surface="chat", status="200", behavior="default",
                    outcome="completed") == n
        assert _get(s, "dshkit_mock_journal_entries") == n
