"""`dshkit serve --workers 2`: two processes on one port, one state owner for the scripts.

Many sessions run at once, each request on a connection of its own so the kernel spreads them
over both workers; every session must still get its steps in order, claims stay one per
session, the numbering is one across workers, and the `--journal` file holds every exchange of
both workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import struct
from collections import defaultdict
from pathlib import Path

import httpx
import pytest

from dshkit.mock_server import Script
from dshkit.mock_server.routing import Decision, RequestView, Router
from dshkit.mock_server.workers import (
    RemoteRouter,
    _Channel,
    _own,
    _receive,
    _send,
    _view_from_json,
    _view_to_json,
    decision_from_json,
    decision_to_json,
)

from .cli_process import ServeProcess
from .wire import chat

SESSIONS = 16
STEPS = 6


def _script_file(tmp_path: Path) -> Path:
    scripts = []
    for k in range(SESSIONS):
        steps = [{"reply": {"content": f"s{k}-{i}"}} for i in range(STEPS)]
        # Half the scripts are reserved for their session, half go to the next new session.
        scripts.append({"name": f"s{k}", **({"session": f"s{k}"} if k % 2 == 0 else {}), "steps": steps})
    path = tmp_path / "many.json"
    path.write_text(json.dumps({"scripts": scripts}))
    return path


async def _session(c: httpx.AsyncClient, url: str, k: int) -> list[str]:
    got = []
    for i in range(STEPS):
        r = await c.post(url, json=chat(f"step {i}", stream=False), headers={"X-Mock-Session": f"s{k}"})
        assert r.status_code == 200, r.text
        got.append(r.json()["choices"][0]["message"]["content"])
    return got


async def _all_sessions(url: str) -> list[list[str]]:
    # No keep-alive: each request opens its own connection, which the kernel hashes to a worker.
    limits = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=20, limits=limits) as c:
        return await asyncio.gather(*(_session(c, url, k) for k in range(SESSIONS)))


def test_sessions_get_their_steps_in_order_across_workers(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    p = ServeProcess("--workers", "2", "--script", str(_script_file(tmp_path)), "--journal", str(journal))
    try:
        assert p.ready["workers"] == 2
        results = asyncio.run(_all_sessions(p.base_url + "/chat/completions"))
        n = SESSIONS * STEPS
        lines = [p.next_line() for _ in range(2 * n)]
        code, rest = p.stop(signal.SIGINT)
    finally:
        p.kill()
    assert code == 130
    # Each session's script was its own and its steps came in order. A reserved script is named
    # for its session; an unreserved one went to some new session, once.
    owners: dict[str, str] = {}
    for k, got in enumerate(results):
        name = got[0].split("-")[0]
        assert got == [f"{name}-{i}" for i in range(STEPS)]
        if k % 2 == 0:
            assert name == f"s{k}"
        owners[name] = f"s{k}"
    assert len(owners) == SESSIONS
    results_by_worker = {line["worker"] for line in lines if line["type"] == "result"}
    assert results_by_worker == {0, 1}, "the kernel sent every connection to one worker"
    # One numbering across workers; the journal file holds every exchange of both.
    entries = [json.loads(line) for line in journal.read_text().splitlines()]
    assert sorted(e["seq"] for e in entries) == list(range(1, n + 1))
    by_session: dict[str, list[int]] = defaultdict(list)
    for e in sorted(entries, key=lambda e: e["seq"]):
        by_session[e["session"]].append(e["step"])
    assert all(steps == list(range(STEPS)) for steps in by_session.values()) and len(by_session) == SESSIONS
    summary = json.loads(rest.splitlines()[-1])
    assert summary["type"] == "summary" and summary["requests"] == n and summary["workers"] == 2
    assert summary["outcomes"] == {"completed": n} and summary["unused_steps"] == []


# An unscripted `--workers 2` server (its answers, SIGTERM's 143 and summary) shares its process
# with the metrics of both workers: test_metrics.py::test_metrics_of_all_workers_from_any_worker.


def _decisions() -> list[tuple[Router, Decision]]:
    script = Script.of({"reply": {"content": "x"}}, auxiliary=[
        {"purpose": "compaction", "reply": {"content": "compact"}}], name="one", repeat_last=True)
    router = Router([script])
    title = {"messages": [{"role": "system", "content": "Create a concise title for an AI coding-assistant session"},
                          {"role": "user", "content": "hi"}]}
    return [
        (router, router.route("s", RequestView())),
        (router, router.route("s", RequestView(headers={"x-deepseek-harness-compact": "1"}))),
        (router, router.route("s", RequestView(body=title))),
        (router, router.route("other", RequestView())),
    ]


@pytest.mark.parametrize("case", range(4))
def test_a_decision_crosses_the_process_boundary_unchanged(case: int) -> None:
    """What the owner sends a worker names the same script and step again, title replies too."""
    router, d = _decisions()[case]
    again = decision_from_json(json.loads(json.dumps(decision_to_json(d, {id(s): i for i, s in enumerate(router.scripts)}, None))), router)
    assert (again.kind, again.session, again.index, again.auxiliary, again.purpose, again.message) == (
        d.kind, d.session, d.index, d.auxiliary, d.purpose, d.message)
    assert (again.script is d.script) and (again.step == d.step)


# -- a client that hangs up while its request waits for the owner -----------------------------

def test_an_answer_for_a_cancelled_ask_leaves_the_channel_working() -> None:
    """The owner answers a request whose client left (its handler cancelled mid-ask): the answer
    is dropped, and the channel still carries the worker's next questions and the owner's
    other messages. (It used to raise on the cancelled future, end the worker's reader and so
    stop the worker: every later connection went to the other one.)"""

    async def go() -> tuple[dict[str, object], list[dict[str, object]]]:
        ours, theirs = socket.socketpair()
        other: list[dict[str, object]] = []
        reader, writer = await asyncio.open_unix_connection(sock=ours)
        channel = _Channel(reader, writer, other.append)
        owner_reader, owner_writer = await asyncio.open_unix_connection(sock=theirs)
        asked = asyncio.ensure_future(channel.ask({"op": "route"}))
        first = await _receive(owner_reader)
        assert first is not None
        asked.cancel()  # the client hung up: aiohttp or the front cancels the handler
        with contextlib.suppress(asyncio.CancelledError):
            await asked
        second = asyncio.ensure_future(channel.ask({"op": "route"}))
        then = await _receive(owner_reader)
        assert then is not None
        for msg in ({"id": first["id"], "late": True}, {"id": then["id"], "ok": True}, {"op": "collect"}):
            _send(owner_writer, msg)
        answer = await asyncio.wait_for(second, 10)
        owner_writer.close()
        await asyncio.wait_for(channel._task, 10)  # the reader ends at end of file, not before
        writer.close()
        return answer, other

    answer, other = asyncio.run(go())
    assert answer == {"id": 2, "ok": True}
    assert other == [{"op": "collect"}, {"op": "stop"}]  # the owner's own message, then its end


def _hang_up_mid_request(port: int, body: bytes) -> None:
    """A whole request of session `leaving`, then a reset at once, without reading the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"POST /chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"X-Mock-Session: leaving\r\nContent-Length: %d\r\n\r\n%b" % (len(body), body))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


async def _fresh_connections(url: str, n: int) -> list[str]:
    """`n` requests of session `staying`, each on a connection of its own."""
    limits = httpx.Limits(max_keepalive_connections=0)
    headers = {"X-Mock-Session": "staying"}
    async with httpx.AsyncClient(timeout=20, limits=limits) as c:
        replies = await asyncio.gather(*(c.post(url, json=chat("q", stream=False), headers=headers) for _ in range(n)))
    assert all(r.status_code == 200 for r in replies), [r.text for r in replies if r.status_code != 200]
    return [r.json()["choices"][0]["message"]["content"] for r in replies]


def test_clients_that_hang_up_mid_request_stop_no_worker(tmp_path: Path) -> None:
    """Scripted requests whose clients reset their connections while the worker waits for the
    owner's routing answer: both workers go on serving (before the fix, such a worker stopped,
    the kernel sent every later connection to the other one, and a scripted `--workers 2` served
    less than one worker did)."""
    script = tmp_path / "two.json"
    script.write_text(json.dumps({"scripts": [
        {"name": name, "session": name, "repeat_last": True, "steps": [{"reply": {"content": name}}]}
        for name in ("leaving", "staying")]}))
    p = ServeProcess("--workers", "2", "--script", str(script))
    try:
        body = json.dumps(chat("gone", stream=False)).encode()
        for _ in range(40):
            _hang_up_mid_request(p.ready["port"], body)
        replies = asyncio.run(_fresh_connections(p.base_url + "/chat/completions", 48))
        code, rest = p.stop(signal.SIGINT)
    finally:
        p.kill()
    assert code == 130 and replies == ["staying"] * 48
    results = [json.loads(line) for line in rest.splitlines() if line.startswith('{"type": "result"')]
    # The requests sent after the hang-ups, and only those, reached both workers.
    served = [r["worker"] for r in results if r["session"] == "staying" and r["outcome"] == "completed"]
    assert len(served) == 48 and set(served) == {0, 1}, "a worker stopped serving after its clients hung up"
    summary = json.loads(rest.splitlines()[-1])
    # How many reset requests a worker read before their reset is the kernel's timing, not counted.
    assert summary["workers"] == 2 and summary["outcomes"]["completed"] >= 48
    assert "Traceback" not in p.stderr and "worker" not in p.stderr, p.stderr


# -- what a worker sends the owner -------------------------------------------------------------

def _requests() -> list[RequestView]:
    title = {"messages": [{"role": "system", "content": "Create a concise title for an AI coding-assistant session"},
                          {"role": "user", "content": "hi"}]}
    turn = {"messages": [{"role": "user", "content": "fix the bug"}, {"role": "assistant", "content": "done"},
                         {"role": "user", "content": "and the tests"}]}
    return [RequestView(last_user="and the tests", body=turn),
            RequestView(headers={"x-deepseek-harness-compact": "1"}, body=turn),
            RequestView(body=title),
            RequestView(last_user="fix the bug", body={"messages": [{"role": "user", "content": "fix the bug"}]})]


def _scripts(on_prompt: bool) -> list[Script]:
    match = {"prompt": "fix the bug"} if on_prompt else {"user": "tests"}
    return [Script.of({"reply": {"content": "matched"}, "match": match}, {"reply": {"content": "any"}},
                      auxiliary=[{"purpose": "compaction", "reply": {"content": "compact"}}],
                      title="A title", name="s", repeat_last=True)]


@pytest.mark.parametrize("on_prompt", [False, True], ids=["no-body-matcher", "prompt-matcher"])
def test_the_owner_routes_what_a_worker_sends_as_a_router_with_the_whole_request_does(on_prompt: bool) -> None:
    """A worker sends its purpose and no body unless a step matches on it; the owner's decisions
    for a session's requests are the ones one process makes from the whole requests."""
    whole, owner = Router(_scripts(on_prompt)), Router(_scripts(on_prompt))
    assert owner.matches_body is on_prompt
    index_of = {id(s): i for i, s in enumerate(owner.scripts)}
    for req in _requests():
        sent = json.loads(json.dumps(_view_to_json(req, body=owner.matches_body)))
        assert (sent["body"] is None) is not on_prompt
        view, purpose = _view_from_json(sent)
        want, got = whole.route("s", req), owner.route("s", view, purpose=purpose)
        assert decision_to_json(got, index_of, None) == decision_to_json(want, {id(s): i for i, s in enumerate(whole.scripts)}, None)


def test_requests_larger_than_a_line_reader_takes_are_routed_across_workers(tmp_path: Path) -> None:
    """Bodies of hundreds of KB (a DSH request with its tool schemas) on a scripted `--workers 2`
    server, whose steps match on the prompt so each body goes to the owner: every one is
    answered in order (a line-framed channel refused anything over 64 KiB, and the worker's
    requests hung from then on)."""
    script = tmp_path / "big.json"
    script.write_text(json.dumps({"repeat_last": True, "steps": [
        {"match": {"prompt": "first"}, "reply": {"content": "one"}}, {"reply": {"content": "two"}}]}))
    padding = [{"role": "system", "content": "x" * 300_000}]
    p = ServeProcess("--workers", "2", "--script", str(script))
    try:
        async def ask() -> list[str]:
            limits = httpx.Limits(max_keepalive_connections=0)
            got = []
            async with httpx.AsyncClient(timeout=20, limits=limits) as c:
                for text in ("first", "second", "third", "fourth"):
                    body = {**chat(text, stream=False), "messages": [*padding, {"role": "user", "content": text}]}
                    r = await c.post(p.base_url + "/chat/completions", json=body, headers={"X-Mock-Session": "big"})
                    assert r.status_code == 200, r.text
                    got.append(r.json()["choices"][0]["message"]["content"])
            return got

        replies = asyncio.run(ask())
        code, rest = p.stop(signal.SIGINT)
    finally:
        p.kill()
    assert replies == ["one", "two", "two", "two"] and code == 130
    summary = json.loads(rest.splitlines()[-1])
    assert summary["requests"] == 4 and summary["outcomes"] == {"completed": 4} and summary["workers"] == 2


class _Failing(Router):
    """A router that fails on one request, as a bug in routing would."""

    def route(self, session: str, req: RequestView, *, purpose: str | None = None) -> Decision:
        if req.last_user == "boom":
            raise ValueError("routing broke on this request")
        return super().route(session, req, purpose=purpose)


def test_a_request_the_owner_cannot_route_fails_alone() -> None:
    """The owner's router raising on one request costs that request its answer (the worker
    raises, and the handler answers 500 as one process does); the owner goes on answering the
    worker's next requests instead of leaving them to hang."""
    script = Script.of({"reply": {"content": "x"}}, name="one", repeat_last=True)

    async def go() -> tuple[str, Decision]:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair()
        stop: asyncio.Future[int] = loop.create_future()
        owner = asyncio.ensure_future(_own(_Failing([script]), [(0, ours)], lambda: None, stop))
        reader, writer = await asyncio.open_unix_connection(sock=theirs)
        channel = _Channel(reader, writer, lambda msg: None)
        worker = RemoteRouter(Router([script]), channel)
        with pytest.raises(RuntimeError) as failed:
            await asyncio.wait_for(worker.decide("s", RequestView(last_user="boom")), 10)
        then = await asyncio.wait_for(worker.decide("s", RequestView(last_user="fine")), 10)
        _send(writer, {"op": "summary", "summary": {}})  # the worker's last word ends its owner side
        stop.set_result(0)
        await asyncio.wait_for(owner, 10)
        await asyncio.wait_for(channel._task, 10)  # the owner closed its side
        writer.close()
        return str(failed.value), then

    message, then = asyncio.run(go())
    assert message == "the state owner could not route this request: ValueError: routing broke on this request"
    assert (then.kind, then.index, then.session) == ("step", 0, "s")
