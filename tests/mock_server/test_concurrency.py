"""200 concurrent streams on 200 sessions: each session gets exactly its own script."""

from __future__ import annotations

import asyncio

import aiohttp

from dshkit.mock_server import SESSION_HEADER, MockServerFactory, Script

from .wire import chat, parse_sse, reassemble

N = 200


async def _run_sessions(url: str, requests_per_session: int) -> dict[str, list[str]]:
    """Each session streams its requests in order; all sessions run at once, and every one
    holds its first response open until all N have their first event (a barrier, no sleep)."""
    arrived = 0
    all_open = asyncio.Event()
    got: dict[str, list[str]] = {}
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=20)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:

        async def session(i: int) -> None:
            nonlocal arrived
            name = f"s{i:03d}"
            texts = got.setdefault(name, [])
            for k in range(requests_per_session):
                async with http.post(url, json=chat(f"q{k}"), headers={SESSION_HEADER: name}) as r:
                    assert r.status == 200, await r.text()
                    body = await r.content.readuntil(b"\n\n")
                    if k == 0:
                        arrived += 1
                        if arrived == N:
                            all_open.set()
                        await all_open.wait()
                    body += await r.read()
                texts.append(reassemble(parse_sse(body).chunks)["content"])

        await asyncio.gather(*(session(i) for i in range(N)))
    return got


async def test_reserved_scripts_reach_their_sessions(dshkit_mock_server: MockServerFactory) -> None:
    server = await dshkit_mock_server()
    for i in range(N):
        server.add_script(Script.replies(f"for s{i:03d} #0", f"for s{i:03d} #1", name=f"own{i}"), session=f"s{i:03d}")
    got = await _run_sessions(server.url, 2)
    assert got == {f"s{i:03d}": [f"for s{i:03d} #0", f"for s{i:03d} #1"] for i in range(N)}
    server.assert_consumed()


async def test_new_sessions_claim_distinct_scripts(dshkit_mock_server: MockServerFactory) -> None:
    scripts = [Script.replies(f"script {i} step 0", f"script {i} step 1", name=f"q{i}") for i in range(N)]
    server = await dshkit_mock_server(*scripts)
    got = await _run_sessions(server.url, 2)
    owners = set()
    for texts in got.values():
        k = texts[0].split()[1]
        assert texts == [f"script {k} step 0", f"script {k} step 1"]
        owners.add(k)
    assert len(owners) == N
    server.assert_consumed()
    assert {e.session for e in server.journal} == set(got)
