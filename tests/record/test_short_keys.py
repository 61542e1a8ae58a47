"""A short API key (`k`, `the`, `data`) is scrubbed where it stands under a credential name and
nowhere else: the recorder, the cassette's replay and match, the page of `dshkit view` and the
mock server's journal (served by the admin API) keep every ordinary word that happens to equal
the key. A key long enough to match safely is still scrubbed wherever it appears.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from dshkit.cli import main
from dshkit.harness.secrets import MIN_SECRET_LENGTH
from dshkit.mock_server import MockServer, MockServerFactory, Recorder, Script, load_cassette
from dshkit.mock_server.cassette_match import CassetteRouter

TEXT = "the data: k, data.csv and the metadata of the kit"
HEADER_LABELS = {"authorization", "access-control-allow-credentials"}
"""What is scrubbed by name: the request's key, and a response header whose name ends in
`credentials` (its value, `true`, is no secret, but the policy goes by the name)."""


def _labels(text: str) -> set[str]:
    return set(re.findall(r"\{\{scrubbed:([^}]*)\}\}", text))


@pytest.mark.parametrize("key", ["k", "the", "data", "x" * (MIN_SECRET_LENGTH - 1)])
async def test_a_short_key_rewrites_nothing_in_the_cassette_its_replay_or_its_page(
    key: str, dshkit_mock_server: MockServerFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    upstream = await dshkit_mock_server(Script.replies(TEXT))
    body = {"model": "deepseek-chat", "messages": [{"role": "user", "content": TEXT}]}
    out = tmp_path / "short"
    async with Recorder(upstream.base_url, out) as rec, httpx.AsyncClient(timeout=10) as c:
        r = await c.post(rec.base_url + "/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})
        assert r.status_code == 200
    text = (tmp_path / "short.cassette.jsonl").read_text()
    exchange = json.loads(text.splitlines()[1])
    assert exchange["request"]["body"] == body  # the request as sent, every word kept
    assert exchange["request"]["headers"]["authorization"].startswith("{{scrubbed")  # by its name
    assert TEXT in "".join(read.get("text", "") for read in exchange["reads"])
    assert "scrubbed" not in json.dumps(exchange["request"]["body"]) + json.dumps(exchange["reads"])
    assert _labels(text) <= HEADER_LABELS

    router = CassetteRouter.for_cassette(load_cassette(out))
    async with MockServer(router=router, admin=True) as replay, httpx.AsyncClient(timeout=10) as c:
        r = await c.post(replay.base_url + "/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})
        assert r.json()["choices"][0]["message"]["content"] == TEXT
        entry = (await c.get(replay.base_url + "/_dshkit/journal")).json()["entries"][0]
    assert entry["body"] == body and TEXT in entry["response"]
    assert "scrubbed" not in json.dumps(entry["body"]) + entry["response"]

    page = tmp_path / "page.html"
    assert main(["view", str(out) + ".cassette.jsonl", "-o", str(page)]) == 0
    capsys.readouterr()
    html = page.read_text(encoding="utf-8")
    assert "metadata of the kit" in html and "un{{scrubbed" not in html
    assert _labels(html) <= HEADER_LABELS


async def test_a_long_key_is_still_scrubbed_wherever_it_appears(
    dshkit_mock_server: MockServerFactory, tmp_path: Path
) -> None:
    key = "sk-long-enough-0123"
    upstream = await dshkit_mock_server(Script.replies(f"your key is {key}."))
    body = {"model": "deepseek-chat", "messages": [{"role": "user", "content": f"is {key} mine?"}]}
    async with Recorder(upstream.base_url, tmp_path / "long") as rec, httpx.AsyncClient(timeout=10) as c:
        await c.post(rec.base_url + "/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})
    text = (tmp_path / "long.cassette.jsonl").read_text()
    assert key not in text
    assert "is {{scrubbed:authorization}} mine?" in text and "your key is {{scrubbed:authorization}}." in text
    # and the live request, key and all, still matches the scrubbed recording
    router = CassetteRouter.for_cassette(load_cassette(tmp_path / "long"))
    async with MockServer(router=router) as replay, httpx.AsyncClient(timeout=10) as c:
        r = await c.post(replay.base_url + "/chat/completions", json=body)
    assert r.status_code == 200 and router.misses == []
