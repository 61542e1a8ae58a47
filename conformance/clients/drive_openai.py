"""Driver: the official `openai` Python SDK, as a DeepSeek user streams with it.

Each call goes through the SDK's streaming helper, `client.chat.completions.stream(...)`, whose
snapshot is the message the SDK assembles; that message object is appended to the history as
DeepSeek's own examples do (`messages.append(message)`), so what goes back on the next request
(reasoning_content, tool-call ids, argument bytes) is what the SDK kept. Thinking is switched
with `extra_body`, the documented way to send fields the SDK has no parameter for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import driverkit

DRIVER = driverkit.Driver(
    "openai-python", protocols=["chat"], packages=["openai"],
    options={"max_retries": "the client's max_retries (the SDK's default is 2)"},
    tries=[{"max_retries": "0"}, {"max_retries": "5"}],
    known={
        "end-eof-before-finish": "a body that ends before the finish chunk ends the stream quietly: no "
                                 "`finish_reason`, no error",
        "end-eof-after-role-only": "a body that ends after the role chunk ends the stream quietly: no "
                                   "`finish_reason`, no error",
    },
)
DRIVER.answer_describe()  # before the library is imported: a describe run needs none of it

import openai


def request_args(task: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of `chat.completions.stream` for the task's tools and options."""
    opts = task["options"]
    args: dict[str, Any] = {"model": task["model"], "stream_options": {"include_usage": True}}
    if task["tools"]:
        args["tools"] = driverkit.chat_tools(task)
    if opts["thinking"] is not None:
        args["extra_body"] = {"thinking": {"type": "enabled" if opts["thinking"] else "disabled"}}
    args.update(driverkit.chat_options(task))
    return args


def observe(message: Any, choice: Any, usage: Any) -> driverkit.Observation:
    """An observation of the SDK's assembled message, finish reason and usage."""
    obs = driverkit.Observation()
    if message is not None:
        obs.content = message.content or ""
        obs.reasoning = getattr(message, "reasoning_content", None)
        obs.tool_calls = [{"id": c.id, "name": getattr(c.function, "name", None),
                           "arguments": getattr(c.function, "arguments", None) or ""}
                          for c in message.tool_calls or ()]
    obs.finish = getattr(choice, "finish_reason", None)
    if usage is not None:
        # DeepSeek's own `prompt_cache_hit_tokens` rides along as an extra field where the
        # OpenAI-style `prompt_tokens_details` is missing.
        cached = getattr(usage.prompt_tokens_details, "cached_tokens", None)
        reasoning = usage.completion_tokens_details
        obs.usage = {"prompt_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens,
                     "cache_read_tokens": cached if cached is not None else getattr(usage, "prompt_cache_hit_tokens", None),
                     "reasoning_tokens": getattr(reasoning, "reasoning_tokens", None)}
    return obs


def main() -> None:
    if not DRIVER.hello():
        return
    task = DRIVER.task
    options = DRIVER.options()
    timeouts = task["timeouts"]
    client = openai.OpenAI(
        base_url=task["base_url"], api_key=task["api_key"],
        timeout=openai.Timeout(timeouts["read_s"], connect=timeouts["connect_s"]),
        **({"max_retries": int(options["max_retries"])} if "max_retries" in options else {}),
    )
    history = driverkit.chat_messages(task)
    args = request_args(task)

    def call(k: int, step: Mapping[str, Any]) -> driverkit.Observation:
        stream_cm = client.chat.completions.stream(messages=history, **args)
        stream = None
        try:
            with stream_cm as stream:
                for _event in stream:
                    pass
                final = stream.get_final_completion()
        except Exception as exc:  # noqa: BLE001 - whatever the SDK raises is the observation
            snapshot = None
            if stream is not None:
                try:
                    snapshot = stream.current_completion_snapshot
                except AssertionError:  # no chunk arrived
                    snapshot = None
            choice = snapshot.choices[0] if snapshot is not None and snapshot.choices else None
            obs = observe(getattr(choice, "message", None), None, None)
            obs.error = driverkit.describe_error(exc, (openai.OpenAIError,))
            return obs
        choice = final.choices[0] if final.choices else None
        message = choice.message if choice is not None else None
        if message is not None:
            history.append(message)
            for i, c in enumerate(message.tool_calls or ()):
                history.append({"role": "tool", "tool_call_id": c.id, "content": driverkit.result_for(step, i)})
        if step["then_user"] is not None:
            history.append({"role": "user", "content": step["then_user"]})
        return observe(message, choice, final.usage)

    DRIVER.play(call)


if __name__ == "__main__":
    main()
