"""The planted-secrets corpus: more than a hundred secrets placed wherever a client or a tool
can put one, sent through the real recorder to the real mock server (both wires), and through
`dshkit run` with tools that print the key; not one planted value may reach any file dshkit
writes (cassettes, journals, session logs, the views made of them) or anything it prints.

Each planted value is unique, so a leak names its place. The figure printed at the end (run
with `-s` to see it) is the count of placements scrubbed.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from dshkit.cli import main
from dshkit.mock_server import MockServer, Recorder, Script

SURFACES = {"chat": "/chat/completions", "anthropic": "/anthropic/v1/messages"}
HEADER_NAMES = [
    "Authorization", "x-api-key", "api-key", "Ocp-Apim-Subscription-Key", "X-Goog-Api-Key", "Authentication",
    "X-Signature", "Cookie", "Proxy-Authorization", "X-Amz-Security-Token", "X-Client-Secret", "X-Refresh-Token",
]
QUERY_NAMES = ["api_key", "key", "token", "access_token", "X-Amz-Signature", "code", "sig"]
DEEP_NAMES = ["token", "client_secret", "x_access_token", "password", "apiKey", "private_key"]
FORM_NAMES = ["client_secret", "password", "refresh_token", "code", "api_key", "token"]
TEXT_LINES = ['Authorization: Bearer {}', "password={}", "api_key: {}", '"client_secret": "{}"', "X-Api-Key: {}",
              "token={}"]


@dataclass
class Corpus:
    """Planted values by place; each value is unique and names its place."""

    places: list[tuple[str, str]] = field(default_factory=list)

    def plant(self, place: str) -> str:
        value = f"PLANT{len(self.places):03d}-{place.replace(' ', '-').replace('_', '-')}-{secrets.token_hex(3)}"
        self.places.append((place, value))
        return value


def _headers(c: Corpus, surface: str) -> dict[str, str]:
    out = {}
    for name in HEADER_NAMES:
        value = c.plant(f"{surface} header {name}")
        out[name] = f"Bearer {value}" if name == "Authorization" else (
            f"session={value}" if name == "Cookie" else value)
    return out


def _query(c: Corpus, surface: str) -> str:
    return "?" + "&".join(f"{n}={c.plant(f'{surface} query {n}')}" for n in QUERY_NAMES) + "&mode=fast"


def _json_body(c: Corpus, surface: str) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "deepseek-v4-flash", "max_tokens": 32, "stream": True,
                            "messages": [{"role": "user", "content": "hi"}]}
    holder = body
    for depth, name in enumerate(DEEP_NAMES, 1):  # one credential field per level, down to six
        nxt: dict[str, Any] = {name: c.plant(f"{surface} json depth {depth}")}
        holder["metadata" if depth == 1 else f"level{depth}"] = nxt
        holder = nxt
    body["tokens"] = [c.plant(f"{surface} list tokens {i}") for i in range(3)]
    body["credentials"] = [c.plant(f"{surface} list credentials"), {"secret": c.plant(f"{surface} list object")}]
    body["secret"] = {"value": c.plant(f"{surface} object secret value"),
                      "meta": {"rotated": c.plant(f"{surface} object secret nested")}}
    body["auth"] = {"user": "u", "password": c.plant(f"{surface} object auth password"),
                    "headers": {"x": c.plant(f"{surface} object auth nested")}}
    for name in ("bearer", "passphrase", "cookie"):
        body[name] = c.plant(f"{surface} field {name}")
    return body


def _form(c: Corpus, surface: str) -> str:
    return "grant_type=x&" + "&".join(f"{n}={c.plant(f'{surface} form {n}')}" for n in FORM_NAMES)


def _text(c: Corpus, surface: str) -> str:
    return "\n".join(line.format(c.plant(f"{surface} text {i}")) for i, line in enumerate(TEXT_LINES)) + "\n"


async def _wire_corpus(c: Corpus, out: Path) -> int:
    """Every kind of wire placement on both surfaces, through two recorders (a token alone and
    a password in the upstream URL) in front of one mock server with a journal file. Returns
    how many requests were sent."""
    sent = 0
    async with MockServer(journal=out / "wire-journal.jsonl") as mock:
        up_token = mock.base_url.replace("http://", f"http://{c.plant('recorder url username-token')}@")
        up_pass = mock.base_url.replace("http://", f"http://user:{c.plant('recorder url password')}@")
        async with Recorder(up_token, out / "wire") as rec, Recorder(up_pass, out / "wire-pass") as rec2, \
                httpx.AsyncClient(timeout=10) as http:
            for surface, path in SURFACES.items():
                url = rec.base_url + path
                answers = [
                    await http.post(url + _query(c, surface), json=_json_body(c, surface), headers=_headers(c, surface)),
                    await http.post(url, content=_form(c, surface),
                                    headers={"Content-Type": "application/x-www-form-urlencoded"}),
                    await http.post(url, content=_text(c, surface), headers={"Content-Type": "text/plain"}),
                ]
                assert all(a.status_code < 500 for a in answers), [a.text for a in answers]
                sent += len(answers)
            assert (await http.get(rec2.base_url + "/models")).status_code == 200
            sent += 1
        assert len(mock.journal) == sent
    return sent


TOOL_CALLS = {
    "read of a file": {"name": "read", "arguments": {"file_path": "key.txt"}},
    "grep of a file": {"name": "grep", "arguments": {"pattern": "KEY", "path": "key.txt"}},
    "grep of the tree": {"name": "grep", "arguments": {"pattern": "KEY"}},
    "list of a file named by the key": {"name": "list", "arguments": {"path": "."}},
    "bash stdout": {"name": "bash", "arguments": {"command": "cat key.txt; ls"}},
    "bash stderr": {"name": "bash", "arguments": {"command": "cat key.txt >&2"}},
    "bash error exit": {"name": "bash", "arguments": {"command": "cat key.txt; exit 3"}},
    "bash timeout error message": {"name": "bash", "arguments": {"command": "cat key.txt; sleep 30", "timeout": 1}},
}
"""Tool calls that put the key in their result; the model never names the key itself (it
could only learn it from an unscrubbed result)."""


def _tool_script() -> Script:
    calls = list(TOOL_CALLS.values())
    return Script.of({"reply": {"reasoning": "Look around.", "tool_calls": calls}}, {"reply": {"content": "Done."}})


async def _run(*argv: str, env: dict[str, str] | None = None) -> tuple[int, bytes]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "dshkit", *argv, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out


async def _session_corpus(c: Corpus, out: Path, tmp: Path) -> list[bytes]:
    """`dshkit run` on each wire, through a recorder to a mock server with a journal, with a key
    that the model's tool calls print eight ways. Returns what the runs printed. The two runs
    go side by side: each spends most of its time waiting (a second for the bash timeout)."""
    return list(await asyncio.gather(*(_session_run(c, out, tmp, protocol) for protocol in ("chat", "anthropic"))))


async def _session_run(c: Corpus, out: Path, tmp: Path, protocol: str) -> bytes:
    key = c.plant(f"{protocol} adapter-header api-key")
    for place in TOOL_CALLS:
        c.places.append((f"{protocol} session-log {place}", key))
    ws = tmp / f"ws-{protocol}"
    ws.mkdir()
    # Inputs of the run, not something dshkit wrote.
    (ws / "key.txt").write_text(f"KEY={key}\n")
    (ws / f"{key}.txt").write_text("named by the key\n")
    async with MockServer(_tool_script(), api_key=key, journal=out / f"run-{protocol}-journal.jsonl") as mock, \
            Recorder(mock.base_url, out / f"run-{protocol}") as rec:
        base = rec.base_url + ("/anthropic" if protocol == "anthropic" else "")
        env = {**os.environ, "DEEPSEEK_API_KEY": key}
        code, text = await _run("run", "Look around", "--yes", "--protocol", protocol, "--base-url", base,
                                "--workspace", str(ws), "--session", str(out / f"run-{protocol}.jsonl"), env=env)
        assert code == 0, text.decode()
        mock.assert_consumed()
    return text


async def test_no_planted_secret_reaches_any_file_written(tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "written"
    out.mkdir()
    corpus = Corpus()
    requests = await _wire_corpus(corpus, out)
    printed = await _session_corpus(corpus, out, tmp_path)
    for written in sorted(out.iterdir()):  # the views made of every file
        assert main(["view", str(written), "-o", str(out / "views" / f"{written.name}.html")]) == 0
    captured = capsys.readouterr()
    files = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    outputs = {**{str(p.relative_to(out)): data for p, data in files.items()},
               "printed": b"".join(printed), "stdout/stderr": (captured.out + captured.err).encode()}
    leaks = [(place, name) for place, value in corpus.places
             for name, data in outputs.items() if value.encode() in data]
    assert leaks == [], '\n'.join(sorted({f'{a} -> {b}' for a, b in leaks}))
    assert len(corpus.places) >= 100
    assert sum(name.endswith(".cassette.jsonl") for name in outputs) == 4
    assert sum(name.endswith("journal.jsonl") for name in outputs) == 3
    assert sum(name.startswith("views/") for name in outputs) >= 9
    kinds = Counter(place.split(" ")[1] for place, _ in corpus.places)
    with capsys.disabled():
        print(f"\nplanted-secrets corpus: {len(corpus.places)} placements "
              f"({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}), {requests} wire requests, "
              f"{len(files)} files written: {len(corpus.places)} scrubbed, {len(leaks)} leaked")
