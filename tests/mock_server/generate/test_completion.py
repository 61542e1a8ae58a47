"""The non-streaming completion (`generate/completion.py`): the `chat.completion` body, with the
stream's text, tool calls and token accounting (S14–S16)."""

from __future__ import annotations

from dshkit.mock_server.generate.chunks import generate_chunks
from dshkit.mock_server.generate.completion import build_completion

from .test_chunks import CALL_ID, REPLY


def test_build_completion_shape() -> None:
    body = build_completion(REPLY, thinking=True, seed=5)
    assert body["object"] == "chat.completion" and isinstance(body["created"], int)
    (choice,) = body["choices"]
    assert choice["index"] == 0 and choice["logprobs"] is None and choice["finish_reason"] == "tool_calls"
    msg = choice["message"]
    assert msg["reasoning_content"] == REPLY.reasoning and msg["content"] == REPLY.content
    call = msg["tool_calls"][0]
    assert call["index"] == 0 and call["type"] == "function" and CALL_ID.match(call["id"])
    assert call["function"] == {"name": "get_weather", "arguments": REPLY.tool_calls[0].arguments}
    assert "reasoning_content" not in build_completion(REPLY, thinking=False)["choices"][0]["message"]
    # The same token accounting as the stream.
    assert body["usage"] == generate_chunks(REPLY, thinking=True, seed=5)[-1]["usage"]
