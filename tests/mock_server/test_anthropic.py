"""The Anthropic Messages surface as a whole (`mock_server/anthropic`): one script serving both
surfaces per session, and `dshkit serve` announcing this surface's base URL."""

from __future__ import annotations

import httpx

from dshkit.mock_server import MockServerFactory, Script

from .anthropic.wire import KEY, body, post


async def test_one_script_serves_both_surfaces_per_session(
    dshkit_mock_server: MockServerFactory, http: httpx.AsyncClient
) -> None:
    steps = ({"match": {"user": "weather"}, "reply": {"tool_calls": [{"name": "w", "arguments": '{"c":"P"}'}]}},
             {"match": {"tool_result": "call_fixed"}, "reply": {"content": "Sunny."}})
    a = Script.of(*steps, session="anth")
    server = await dshkit_mock_server(a, assert_all_requests_served=False)  # its 418 is the point
    server.add_script(Script.of(*steps), session="chat")
    h = {"x-api-key": KEY, "X-Mock-Session": "anth"}
    first = (await post(http, server, body("weather?", thinking={"type": "disabled"}), headers=h)).json()
    assert first["content"][0]["input"] == {"c": "P"}
    call_id = first["content"][0]["id"]
    follow = body(thinking={"type": "disabled"})
    follow["messages"] = [{"role": "user", "content": "weather?"}, {"role": "assistant", "content": first["content"]},
                          {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "22C"}]}]
    second = await post(http, server, follow, headers=h)
    # The session's second step wants a result for `call_fixed`, and this one answered another id.
    assert second.status_code == 418 and "call_fixed" in second.json()["error"]["message"]
    follow["messages"][1]["content"][0]["id"] = "call_fixed"
    follow["messages"][2]["content"][0]["tool_use_id"] = "call_fixed"
    assert (await post(http, server, follow, headers=h)).json()["content"][0]["text"] == "Sunny."
    # The other session plays the same steps on the chat surface, unaffected.
    chat = await http.post(server.url, headers={"X-Mock-Session": "chat"}, json={
        "model": "deepseek-chat", "messages": [{"role": "user", "content": "weather?"}]})
    assert chat.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == '{"c":"P"}'
    assert [e.session for e in server.journal.messages()] == ["anth"] * 3
    assert [e.session for e in server.journal.chat()] == ["chat"]
    assert server.journal.messages()[0].body["messages"][0]["content"] == "weather?"


def test_serve_cli_prints_the_anthropic_url_and_takes_the_envelope() -> None:
    import signal

    from .cli_process import ServeProcess

    p = ServeProcess("--sequence", "rate_limit", "--anthropic-envelope", "anthropic", "--api-key", KEY)
    try:
        assert p.ready["anthropic_base_url"] == p.base_url + "/anthropic"
        with httpx.Client(timeout=2) as c:
            resp = c.post(p.ready["anthropic_base_url"] + "/v1/messages", json=body(), headers={"x-api-key": KEY})
        assert resp.status_code == 429
        got = resp.json()
        assert got["type"] == "error" and got["error"]["type"] == "rate_limit_error"
        assert got["request_id"].startswith("req_")
        code, rest = p.stop(signal.SIGINT)
        assert code == 130 and KEY not in rest
    finally:
        p.kill()
