"""Driver: LiteLLM's `completion()` with its `deepseek/` provider, streaming.

The chunks are put back together with `litellm.stream_chunk_builder`, LiteLLM's documented way
to rebuild a response from a stream, and its message goes back into the history as a dict.
LiteLLM retries nothing unless told: `num_retries` is the option to try.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Mapping
from typing import Any

import driverkit

DRIVER = driverkit.Driver(
    "litellm", protocols=["chat"], packages=["litellm", "openai"],
    options={"num_retries": "completion()'s num_retries (LiteLLM's default is no retry)"},
    tries=[{"num_retries": "2"}],
    known={
        "err-inband-error-object": "an in-band error becomes MidStreamFallbackError (status 500) without the "
                                   "provider's `code` and `type`",
        "err-event-error": "an `event: error` becomes MidStreamFallbackError (status 500) without the "
                           "provider's `code` and `type`",
    },
)
DRIVER.answer_describe()  # before the library is imported: a describe run needs none of it

import litellm
from litellm import exceptions

OWN = tuple(c for _, c in inspect.getmembers(exceptions, inspect.isclass)
            if issubclass(c, Exception) and c.__module__.startswith("litellm"))


def request_args(task: Mapping[str, Any], options: Mapping[str, str]) -> dict[str, Any]:
    opts = task["options"]
    args: dict[str, Any] = {"model": f"deepseek/{task['model']}", "api_base": task["base_url"],
                            "api_key": task["api_key"], "stream": True, "stream_options": {"include_usage": True},
                            "timeout": task["timeouts"]["read_s"]}
    if "num_retries" in options:
        args["num_retries"] = int(options["num_retries"])
    if task["tools"]:
        args["tools"] = driverkit.chat_tools(task)
    if opts["thinking"] is not None:
        args["extra_body"] = {"thinking": {"type": "enabled" if opts["thinking"] else "disabled"}}
    args.update(driverkit.chat_options(task))
    return args


def observe(response: Any) -> driverkit.Observation:
    obs = driverkit.Observation()
    choice = response.choices[0] if response is not None and response.choices else None
    message = getattr(choice, "message", None)
    if message is not None:
        obs.content = message.content or ""
        obs.reasoning = getattr(message, "reasoning_content", None)
        obs.tool_calls = [{"id": c.id, "name": getattr(c.function, "name", None),
                           "arguments": getattr(c.function, "arguments", None) or ""}
                          for c in message.tool_calls or ()]
    obs.finish = getattr(choice, "finish_reason", None)
    usage = getattr(response, "usage", None)
    if usage is not None:
        cached = getattr(usage.prompt_tokens_details, "cached_tokens", None)
        obs.usage = {"prompt_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens,
                     "cache_read_tokens": cached,
                     "reasoning_tokens": getattr(usage.completion_tokens_details, "reasoning_tokens", None)}
    return obs


def main() -> None:
    if not DRIVER.hello():
        return
    task = DRIVER.task
    args = request_args(task, DRIVER.options())
    history = driverkit.chat_messages(task)

    def call(k: int, step: Mapping[str, Any]) -> driverkit.Observation:
        chunks: list[Any] = []
        try:
            for chunk in litellm.completion(messages=history, **args):
                chunks.append(chunk)
            response = litellm.stream_chunk_builder(chunks, messages=history)
        except Exception as exc:  # noqa: BLE001 - whatever LiteLLM raises is the observation
            partial = None
            if chunks:
                try:
                    partial = litellm.stream_chunk_builder(chunks, messages=history)
                except Exception:  # noqa: BLE001 - nothing to rebuild from
                    partial = None
            obs = observe(partial)
            obs.finish = None
            obs.error = driverkit.describe_error(exc, OWN)
            return obs
        obs = observe(response)
        message = response.choices[0].message if response is not None and response.choices else None
        if message is not None:
            history.append(message.model_dump(exclude_none=True))
            for i, c in enumerate(message.tool_calls or ()):
                history.append({"role": "tool", "tool_call_id": c.id, "content": driverkit.result_for(step, i)})
        if step["then_user"] is not None:
            history.append({"role": "user", "content": step["then_user"]})
        return obs

    DRIVER.play(call)


if __name__ == "__main__":
    main()
    # LiteLLM leaves non-daemon worker threads behind (its logging queue), so the interpreter would
    # sit at exit past the scenario's budget; everything the driver had to say is printed by now.
    sys.stderr.flush()
    os._exit(0)
