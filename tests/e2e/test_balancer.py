"""Several `dshkit serve` instances behind a real load balancer (HAProxy or nginx, whichever is
installed; skipped without either), with session affinity on `X-Mock-Session`.

Two instances serve the same script file (one script reserved per session) and keep their own
journals; the balancer listens on a Unix socket (no port to pick) and hashes each request's
`X-Mock-Session` to one instance. Every session must get its steps in order, all of a
session's exchanges must sit in one instance's journal, and `dshkit view` must merge the two
journals into one page holding every exchange.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from dshkit.view import render_paths

from ..mock_server.cli_process import ServeProcess

SESSIONS = 24
STEPS = 3

HAPROXY = """\
global
    maxconn 512
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend mocks_in
    bind {socket}
    default_backend mocks
backend mocks
    balance hdr(X-Mock-Session)
    hash-type consistent
{servers}
"""
NGINX = """\
daemon on;
pid {pid};
error_log {root}/error.log;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {root}/body;
    proxy_temp_path {root}/proxy;
    fastcgi_temp_path {root}/fastcgi;
    uwsgi_temp_path {root}/uwsgi;
    scgi_temp_path {root}/scgi;
    upstream mocks {{
        hash $http_x_mock_session consistent;
{servers}
    }}
    server {{
        listen unix:{socket};
        location / {{
            proxy_pass http://mocks;
            proxy_http_version 1.1;
            proxy_buffering off;
        }}
    }}
}}
"""


def _wait_exit(pid: int) -> None:
    """Wait for a process that is not our child (the balancer's daemon) on a pidfd."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        select.select([fd], [], [], 30)
    finally:
        os.close(fd)


@pytest.fixture(params=["haproxy", "nginx"])
def balancer(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, list[ServeProcess]]]:
    name = request.param
    binary = shutil.which(name) or shutil.which(f"/usr/sbin/{name}")
    if binary is None:
        pytest.skip(f"{name} is not installed (apt-get install {name})")
    scripts = [{"name": f"s{k}", "session": f"s{k}",
                "steps": [{"reply": {"content": f"s{k}-{i}"}} for i in range(STEPS)]} for k in range(SESSIONS)]
    script = tmp_path / "shared.json"
    script.write_text(json.dumps({"scripts": scripts}))
    mocks = [ServeProcess("--script", str(script), "--journal", str(tmp_path / f"j{i}.jsonl")) for i in (1, 2)]
    socket_path = tmp_path / "lb.sock"
    pid_file = tmp_path / "lb.pid"
    try:
        if name == "haproxy":
            servers = "\n".join(f"    server m{i} 127.0.0.1:{m.ready['port']}" for i, m in enumerate(mocks, 1))
            config = tmp_path / "haproxy.cfg"
            config.write_text(HAPROXY.format(socket=socket_path, servers=servers))
            # -D: the command returns once the balancer listens (its daemon keeps running).
            subprocess.run([binary, "-D", "-f", str(config), "-p", str(pid_file)], check=True, timeout=30)
        else:
            servers = "\n".join(f"        server 127.0.0.1:{m.ready['port']};" for m in mocks)
            config = tmp_path / "nginx.conf"
            config.write_text(NGINX.format(socket=socket_path, servers=servers, pid=pid_file, root=tmp_path))
            subprocess.run([binary, "-c", str(config), "-p", str(tmp_path)], check=True, timeout=30)
        yield str(socket_path), mocks
    finally:
        if pid_file.exists():
            pid = int(pid_file.read_text().split()[0])
            os.kill(pid, signal.SIGTERM)
            _wait_exit(pid)
        for m in mocks:
            m.kill()


async def _sessions(socket_path: str) -> list[list[str]]:
    transport = httpx.AsyncHTTPTransport(uds=socket_path)
    async with httpx.AsyncClient(transport=transport, base_url="http://mocks", timeout=20) as c:
        async def one(k: int) -> list[str]:
            got = []
            for i in range(STEPS):
                body = {"model": "deepseek-v4-flash", "stream": True,
                        "messages": [{"role": "user", "content": f"step {i}"}]}
                r = await c.post("/chat/completions", json=body, headers={"X-Mock-Session": f"s{k}"})
                assert r.status_code == 200, r.text
                text = "".join(
                    json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
                    for line in r.text.splitlines()
                    if line.startswith("data: {") and json.loads(line[6:])["choices"]
                )
                got.append(text)
            return got

        return await asyncio.gather(*(one(k) for k in range(SESSIONS)))


def test_instances_behind_a_balancer_with_session_affinity(balancer: tuple[str, list[ServeProcess]],
                                                           tmp_path: Path) -> None:
    socket_path, mocks = balancer
    results = asyncio.run(_sessions(socket_path))
    assert results == [[f"s{k}-{i}" for i in range(STEPS)] for k in range(SESSIONS)]
    for m in mocks:  # SIGINT: each instance finishes its exchanges and closes its journal
        code, _ = m.stop(signal.SIGINT)
        assert code == 130
    journals = [tmp_path / "j1.jsonl", tmp_path / "j2.jsonl"]
    seen: dict[str, set[str]] = {}
    for j in journals:
        for line in j.read_text().splitlines():
            seen.setdefault(json.loads(line)["session"], set()).add(j.name)
    assert len(seen) == SESSIONS and all(len(where) == 1 for where in seen.values()), "affinity broke"
    assert all(j.read_text() for j in journals), "the balancer sent every session to one instance"
    html, kind = render_paths(journals)
    assert kind == "journal"
    assert f">{SESSIONS * STEPS} exchanges<" in html
