"""Driver: pydantic-ai's OpenAI chat model with its DeepSeek provider, through its direct model
API (`pydantic_ai.direct.model_request_stream`), so the history stays in the driver's hands.

The history is pydantic-ai's own message types (`ModelRequest`, `ModelResponse` and their
parts); after each call the `ModelResponse` the stream assembled is appended as it is, so what
goes back (reasoning, tool-call ids, argument strings) is what pydantic-ai kept and serializes.
Thinking and effort use pydantic-ai's unified `thinking` setting; the OpenAI client it wraps
carries the timeouts and retries.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Mapping
from typing import Any

import driverkit

DRIVER = driverkit.Driver(
    "pydantic-ai", protocols=["chat"], packages=["pydantic-ai-slim", "openai"],
    options={"max_retries": "max_retries of the AsyncOpenAI client pydantic-ai wraps (default 2)"},
    tries=[{"max_retries": "0"}, {"max_retries": "5"}],
    known={
        "end-eof-before-finish": "a body that ends before the finish chunk is reported as a normal `stop`",
        "rt-thinking-tool-call": "sends tool-call arguments back re-encoded (parsed, then dumped compactly), "
                                 "not as the bytes the model sent",
        "rt-three-steps-passback-kept": "sends tool-call arguments back re-encoded (parsed, then dumped "
                                        "compactly), not as the bytes the model sent",
    },
)
DRIVER.answer_describe()  # before the library is imported: a describe run needs none of it

import openai
from pydantic_ai import exceptions
from pydantic_ai.direct import model_request_stream
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.deepseek import DeepSeekProvider
from pydantic_ai.tools import ToolDefinition

OWN = tuple(c for _, c in inspect.getmembers(exceptions, inspect.isclass) if issubclass(c, Exception))


def history(task: Mapping[str, Any]) -> list[Any]:
    """The task's history as pydantic-ai messages (tool returns of a turn in one request)."""
    out: list[Any] = []
    names: dict[str, str] = {}
    pending: list[Any] = [SystemPromptPart(content=task["system"])] if task["system"] is not None else []
    for m in task["messages"]:
        if m["role"] == "assistant":
            if pending:
                out.append(ModelRequest(parts=pending))
                pending = []
            parts: list[Any] = []
            if m["reasoning"] is not None:
                parts.append(ThinkingPart(content=m["reasoning"]))
            if m["content"]:
                parts.append(TextPart(content=m["content"]))
            for c in m["tool_calls"]:
                names[c["id"]] = c["name"]
                parts.append(ToolCallPart(tool_name=c["name"], args=c["arguments"], tool_call_id=c["id"]))
            out.append(ModelResponse(parts=parts, model_name=task["model"]))
        elif m["role"] == "tool":
            pending.append(ToolReturnPart(tool_name=names.get(m["tool_call_id"], "tool"), content=m["content"],
                                          tool_call_id=m["tool_call_id"]))
        elif m["role"] == "system":
            pending.append(SystemPromptPart(content=m["content"]))
        else:
            content = m["content"] if isinstance(m["content"], str) else [p["text"] for p in m["content"]]
            pending.append(UserPromptPart(content=content))
    if pending:
        out.append(ModelRequest(parts=pending))
    return out


def settings(task: Mapping[str, Any]) -> dict[str, Any]:
    opts = task["options"]
    out: dict[str, Any] = {}
    if opts["reasoning_effort"] not in (None, "none"):
        out["thinking"] = opts["reasoning_effort"]
    elif opts["thinking"] is not None:
        out["thinking"] = opts["thinking"]
    if opts["max_tokens"] is not None:
        out["max_tokens"] = opts["max_tokens"]
    if opts["temperature"] is not None:
        out["temperature"] = opts["temperature"]
    if opts["stop"] is not None:
        out["stop_sequences"] = opts["stop"]
    choice = opts["tool_choice"]
    if choice is not None:
        out["tool_choice"] = choice if isinstance(choice, str) else [choice["name"]]
    return out


def observe(response: Any) -> driverkit.Observation:
    obs = driverkit.Observation()
    if response is None:
        return obs
    thinking = [p.content for p in response.parts if isinstance(p, ThinkingPart)]
    obs.reasoning = "".join(thinking) if thinking else None
    obs.content = "".join(p.content for p in response.parts if isinstance(p, TextPart))
    obs.tool_calls = [{"id": p.tool_call_id, "name": p.tool_name,
                       "arguments": p.args if isinstance(p.args, str) else json.dumps(p.args or {}, ensure_ascii=False)}
                      for p in response.parts if isinstance(p, ToolCallPart)]
    obs.finish = response.finish_reason
    raw = (response.provider_details or {}).get("finish_reason")
    if raw is not None:
        obs.notes.append(f"raw finish reason: {raw}")
    u = response.usage
    if u is not None and (u.input_tokens or u.output_tokens):
        obs.usage = {"prompt_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                     "cache_read_tokens": u.cache_read_tokens, "reasoning_tokens": (u.details or {}).get("reasoning_tokens")}
    return obs


async def main() -> None:
    if not DRIVER.hello():
        return
    task = DRIVER.task
    options = DRIVER.options()
    t = task["timeouts"]
    client = openai.AsyncOpenAI(base_url=task["base_url"], api_key=task["api_key"],
                                timeout=openai.Timeout(t["read_s"], connect=t["connect_s"]),
                                **({"max_retries": int(options["max_retries"])} if "max_retries" in options else {}))
    model = OpenAIChatModel(task["model"], provider=DeepSeekProvider(openai_client=client))
    messages = history(task)
    params = ModelRequestParameters(function_tools=[
        ToolDefinition(name=x["name"], description=x["description"], parameters_json_schema=x["parameters"],
                       **({"strict": x["strict"]} if x["strict"] is not None else {})) for x in task["tools"]])
    model_settings: Any = settings(task)

    async def call(step: Mapping[str, Any]) -> driverkit.Observation:
        stream = None
        try:
            async with model_request_stream(model, messages, model_settings=model_settings,
                                            model_request_parameters=params) as stream:
                async for _event in stream:
                    pass
                response = stream.get()
        except Exception as exc:  # noqa: BLE001 - whatever the library raises is the observation
            obs = observe(stream.get() if stream is not None else None)
            obs.finish = None
            obs.error = driverkit.describe_error(exc, OWN)
            return obs
        messages.append(response)
        parts: list[Any] = [ToolReturnPart(tool_name=p.tool_name, content=driverkit.result_for(step, i),
                                           tool_call_id=p.tool_call_id)
                            for i, p in enumerate(p for p in response.parts if isinstance(p, ToolCallPart))]
        if step["then_user"] is not None:
            parts.append(UserPromptPart(content=step["then_user"]))
        if parts:
            messages.append(ModelRequest(parts=parts))
        return observe(response)

    for k, step in enumerate(task["steps"]):
        obs = await call(step)
        DRIVER.emit(k, obs)
        if obs.error is not None:
            break


if __name__ == "__main__":
    asyncio.run(main())
