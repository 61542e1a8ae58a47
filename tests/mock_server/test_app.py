"""The aiohttp application (`make_app`): each registered wire's model-call paths, the endpoints
every DeepSeek client shares under both prefixes, and a 404 naming what is served."""

from __future__ import annotations

import httpx
import pytest

from dshkit.mock_server import MockServer
from dshkit.mock_server.app import CHAT_PATHS, SURFACES
from dshkit.mock_server.chat import ChatSurface
from dshkit.mock_server.validation import MODELS

from .wire import chat

ANTHROPIC = {"model": "claude-sonnet-4-6", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}


async def test_every_registered_path_and_shared_endpoint_answers(http: httpx.AsyncClient) -> None:
    """Served by aiohttp alone (no fast front), so every route is the application's own."""
    async with MockServer(front=False, api_key="k") as server:
        auth = {"Authorization": "Bearer k", "x-api-key": "k"}
        asked: list[tuple[str, str, int]] = []
        for surface in SURFACES:
            for path in surface.paths:  # a query string is ignored
                body, key, kind = (chat(stream=False), "object", "chat.completion") if surface.name == "chat" \
                    else (ANTHROPIC, "type", "message")
                r = await http.post(server.make_url(path + "?beta=1"), json=body, headers=auth)
                assert r.status_code == 200 and r.json()[key] == kind, path
                asked.append(("POST", path, 200))
        for prefix in ("", "/v1"):
            models = await http.get(server.make_url(prefix + "/models"), headers=auth)
            assert [m["id"] for m in models.json()["data"]] == list(MODELS)
            balance = await http.get(server.make_url(prefix + "/user/balance"), headers=auth)
            assert balance.json()["is_available"] is True
            refused = await http.get(server.make_url(prefix + "/models"))  # the shared endpoints check the key too
            assert refused.status_code == 401
            asked += [("GET", prefix + "/models", 200), ("GET", prefix + "/user/balance", 200),
                      ("GET", prefix + "/models", 401)]
        metrics = await http.get(server.make_url("/metrics"))
        assert metrics.status_code == 200 and metrics.headers["content-type"].startswith("text/plain")
        wrong_method = await http.get(server.url, headers=auth)
        assert wrong_method.status_code == 404
        asked.append(("GET", httpx.URL(server.url).path, 404))
    # every request is journaled under its path, in order, but /metrics
    assert [(e.method, e.path, e.status) for e in server.journal] == asked


@pytest.mark.parametrize("front", [True, False], ids=["front", "aiohttp"])
async def test_only_the_given_wires_are_served_and_the_404_names_them(http: httpx.AsyncClient, front: bool) -> None:
    async with MockServer(surfaces=(ChatSurface(),), front=front) as server:
        r = await http.post(server.anthropic_base_url + "/v1/messages", json=ANTHROPIC)
        admin = await http.get(server.make_url("/_dshkit/"))  # the admin API only when asked for
    assert r.status_code == 404 and admin.status_code == 404
    error = r.json()["error"]
    assert error["code"] == "not_found" and "POST /anthropic/v1/messages is not served" in error["message"]
    assert f"it serves POST {', '.join(CHAT_PATHS)}, and GET /models" in error["message"]
