"""Driver: the official `anthropic` Python SDK against DeepSeek's Anthropic Messages surface.

Each call streams through `client.messages.stream(...)`; the final message's content blocks go
back into the history as Anthropic's own examples do (`{"role": "assistant", "content":
message.content}`), so thinking blocks and their signatures travel as the SDK kept them, and
the tool results of a turn share one user message. Effort goes in `output_config`, thinking in
the SDK's `thinking` parameter.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import driverkit

DRIVER = driverkit.Driver(
    "anthropic-python", protocols=["anthropic"], packages=["anthropic"],
    options={"max_retries": "the client's max_retries (the SDK's default is 2)"},
    tries=[{"max_retries": "0"}, {"max_retries": "5"}],
    unsupported=["system_in_history"],
    known={
        "an-delta-unstarted-while-open": "the SDK's accumulator indexes `content[event.index]` unchecked, so a delta "
                                         "for a block that never started raises a bare IndexError",
        "an-delta-before-start": "the SDK's accumulator indexes `content[event.index]` unchecked, so a delta "
                                 "before any block started raises a bare IndexError",
        "an-redacted-thinking-turn-passed-back": "the SDK keeps the `redacted_thinking` block in `message.content`, "
                                                 "so the documented history pattern sends it back and DeepSeek's "
                                                 "surface answers 400 (drop those blocks before resending)",
        "an-reset-mid-stream": "a reset once the body streams escapes as the HTTP client's ReadError: the SDK "
                               "wraps transport errors in APIConnectionError only before the response",
        "an-eof-before-stop-reason": "a body cut before `message_delta` ends the stream quietly; "
                                     "`get_final_message()` returns the partial message with `stop_reason` None",
    },
)
DRIVER.answer_describe()  # before the library is imported: a describe run needs none of it

import anthropic


def _input(arguments: str) -> Any:
    try:
        return json.loads(arguments) if arguments else {}
    except ValueError:
        return arguments


def anthropic_messages(task: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The task's history as Messages API turns (tool results of a turn in one user turn)."""
    out: list[dict[str, Any]] = []
    for m in task["messages"]:
        if m["role"] == "assistant":
            blocks: list[dict[str, Any]] = []
            if m["reasoning"] is not None:
                blocks.append({"type": "thinking", "thinking": m["reasoning"], "signature": ""})
            if m["content"]:
                blocks.append({"type": "text", "text": m["content"]})
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": _input(c["arguments"])}
                       for c in m["tool_calls"]]
            out.append({"role": "assistant", "content": blocks})
        elif m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"],
                     **({"is_error": True} if m["is_error"] else {})}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list) \
                    and all(b.get("type") == "tool_result" for b in out[-1]["content"]):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        else:
            # User text goes as text blocks, the shape the Messages API documents for content.
            parts = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
            out.append({"role": "user", "content": parts})
    return out


def request_args(task: Mapping[str, Any]) -> dict[str, Any]:
    opts = task["options"]
    args: dict[str, Any] = {"model": task["model"], "max_tokens": opts["max_tokens"] or 1024}
    if task["system"] is not None:
        args["system"] = task["system"]
    if task["tools"]:
        args["tools"] = [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
                         for t in task["tools"]]
    if opts["thinking"] is not None:
        args["thinking"] = {"type": "enabled" if opts["thinking"] else "disabled"}
    if opts["reasoning_effort"] is not None:
        args["output_config"] = {"effort": opts["reasoning_effort"]}
    if opts["temperature"] is not None:
        args["temperature"] = opts["temperature"]
    if opts["stop"] is not None:
        args["stop_sequences"] = opts["stop"]
    choice = opts["tool_choice"]
    if choice is not None:
        args["tool_choice"] = {"type": {"required": "any"}.get(choice, choice)} if isinstance(choice, str) \
            else {"type": "tool", "name": choice["name"]}
    return args


def observe(message: Any) -> driverkit.Observation:
    """An observation of the SDK's message (final or the snapshot so far)."""
    obs = driverkit.Observation()
    if message is None:
        return obs
    blocks = getattr(message, "content", None) or []
    thinking = [b.thinking for b in blocks if b.type == "thinking"]
    obs.reasoning = "".join(thinking) if thinking else None
    obs.content = "".join(b.text for b in blocks if b.type == "text")
    # The SDK keeps only the parsed `input` of a tool call; it goes back as an object anyway.
    obs.tool_calls = [{"id": b.id, "name": b.name, "arguments": json.dumps(b.input, ensure_ascii=False)}
                      for b in blocks if b.type == "tool_use"]
    obs.finish = getattr(message, "stop_reason", None)
    usage = getattr(message, "usage", None)
    if usage is not None:
        obs.usage = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                     "cache_read_tokens": usage.cache_read_input_tokens}
    return obs


def main() -> None:
    if not DRIVER.hello():
        return
    task = DRIVER.task
    options = DRIVER.options()
    timeouts = task["timeouts"]
    client = anthropic.Anthropic(
        base_url=task["base_url"], api_key=task["api_key"],
        timeout=anthropic.Timeout(timeouts["read_s"], connect=timeouts["connect_s"]),
        **({"max_retries": int(options["max_retries"])} if "max_retries" in options else {}),
    )
    history = anthropic_messages(task)
    args = request_args(task)

    def call(k: int, step: Mapping[str, Any]) -> driverkit.Observation:
        stream = None
        try:
            with client.messages.stream(messages=history, **args) as stream:
                for _event in stream:
                    pass
                final = stream.get_final_message()
        except Exception as exc:  # noqa: BLE001 - whatever the SDK raises is the observation
            snapshot = None
            if stream is not None:
                try:
                    snapshot = stream.current_message_snapshot
                except (AssertionError, AttributeError, RuntimeError):  # nothing arrived
                    snapshot = None
            obs = observe(snapshot)
            obs.finish = None
            obs.error = driverkit.describe_error(exc, (anthropic.AnthropicError,))
            return obs
        history.append({"role": "assistant", "content": final.content})
        turn: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": b.id, "content": driverkit.result_for(step, i)}
            for i, b in enumerate(b for b in final.content if b.type == "tool_use")]
        if step["then_user"] is not None:
            turn.append({"type": "text", "text": step["then_user"]})
        if turn:
            history.append({"role": "user", "content": turn})
        return observe(final)

    DRIVER.play(call)


if __name__ == "__main__":
    main()
