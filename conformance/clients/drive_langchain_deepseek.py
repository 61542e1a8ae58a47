"""Driver: LangChain's `ChatDeepSeek` (langchain-deepseek), streaming.

The chunks of `model.stream(...)` are added up (`chunk + chunk`, LangChain's own way to
assemble a streamed message), and that message goes back into the history as it is, followed by
one `ToolMessage` per call, so what is sent back (reasoning_content, ids, argument strings) is
what LangChain kept. The raw argument string of a call is the one its `tool_call_chunks` joined.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import driverkit

DRIVER = driverkit.Driver(
    "langchain-deepseek", protocols=["chat"], packages=["langchain-deepseek", "langchain-openai", "langchain-core", "openai"],
    options={"max_retries": "ChatDeepSeek's max_retries (passed to the OpenAI client; default 2)"},
    tries=[{"max_retries": "0"}, {"max_retries": "5"}],
    known={
        **dict.fromkeys(("rt-thinking-tool-call", "rt-three-steps-passback-kept", "rt-client-ids-empty-reasoning"),
                        "the assistant turn it sends back lacks `reasoning_content`, so DeepSeek answers the "
                        "thinking-mode follow-up with 400"),
        **dict.fromkeys(("end-eof-before-finish", "end-eof-after-role-only"),
                        "a body that ends before the finish chunk ends the stream quietly: no finish reason, "
                        "no error"),
    },
)
DRIVER.answer_describe()  # before the library is imported: a describe run needs none of it

import openai
from langchain_core.exceptions import LangChainException
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_deepseek import ChatDeepSeek


def lc_messages(task: Mapping[str, Any]) -> list[Any]:
    out: list[Any] = [SystemMessage(content=task["system"])] if task["system"] is not None else []
    for m in task["messages"]:
        if m["role"] == "assistant":
            extra = {"reasoning_content": m["reasoning"]} if m["reasoning"] is not None else {}
            calls = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                     for c in m["tool_calls"]]
            out.append(AIMessage(content=m["content"], additional_kwargs={**extra, **({"tool_calls": calls} if calls else {})}))
        elif m["role"] == "tool":
            out.append(ToolMessage(content=m["content"], tool_call_id=m["tool_call_id"]))
        elif m["role"] == "system":
            out.append(SystemMessage(content=m["content"]))
        else:
            content = m["content"] if isinstance(m["content"], str) else [dict(p) for p in m["content"]]
            out.append(HumanMessage(content=content))
    return out


def make_model(task: Mapping[str, Any], options: Mapping[str, str]) -> Any:
    opts = task["options"]
    kw: dict[str, Any] = {"model": task["model"], "api_key": task["api_key"], "api_base": task["base_url"],
                          "timeout": openai.Timeout(task["timeouts"]["read_s"], connect=task["timeouts"]["connect_s"]),
                          "stream_usage": True}
    if "max_retries" in options:
        kw["max_retries"] = int(options["max_retries"])
    if opts["thinking"] is not None:
        kw["extra_body"] = {"thinking": {"type": "enabled" if opts["thinking"] else "disabled"}}
    for name in ("reasoning_effort", "max_tokens", "temperature", "stop"):
        if opts[name] is not None:
            kw[name] = opts[name]
    model = ChatDeepSeek(**kw)
    if task["tools"]:
        tools = driverkit.chat_tools(task)
        choice = opts["tool_choice"]
        model = model.bind_tools(tools, **({"tool_choice": choice if isinstance(choice, str) else choice["name"]}
                                           if choice is not None else {}))
    return model


def observe(message: Any) -> driverkit.Observation:
    obs = driverkit.Observation()
    if message is None:
        return obs
    content = message.content
    obs.content = content if isinstance(content, str) else "".join(
        p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    obs.reasoning = message.additional_kwargs.get("reasoning_content")
    chunks = {c.get("index"): c for c in getattr(message, "tool_call_chunks", None) or ()}
    calls = message.tool_calls or []
    if chunks:
        obs.tool_calls = [{"id": c.get("id"), "name": c.get("name"), "arguments": c.get("args") or ""} for c in chunks.values()]
    else:
        obs.tool_calls = [{"id": c.get("id"), "name": c.get("name"), "arguments": json.dumps(c.get("args") or {})} for c in calls]
        if calls:
            obs.notes.append("no tool_call_chunks: arguments re-encoded from the parsed tool_calls")
    obs.finish = (message.response_metadata or {}).get("finish_reason")
    u = getattr(message, "usage_metadata", None)
    if u:
        obs.usage = {"prompt_tokens": u.get("input_tokens", 0), "output_tokens": u.get("output_tokens", 0),
                     "cache_read_tokens": (u.get("input_token_details") or {}).get("cache_read"),
                     "reasoning_tokens": (u.get("output_token_details") or {}).get("reasoning")}
    return obs


def main() -> None:
    if not DRIVER.hello():
        return
    task = DRIVER.task
    model = make_model(task, DRIVER.options())
    history = lc_messages(task)

    def call(k: int, step: Mapping[str, Any]) -> driverkit.Observation:
        message = None
        try:
            for chunk in model.stream(history):
                message = chunk if message is None else message + chunk
        except Exception as exc:  # noqa: BLE001 - whatever LangChain raises is the observation
            obs = observe(message)
            obs.finish = None
            obs.error = driverkit.describe_error(exc, (openai.OpenAIError, LangChainException))
            return obs
        obs = observe(message)
        if message is not None:
            history.append(message)
            for i, c in enumerate(message.tool_calls or ()):
                history.append(ToolMessage(content=driverkit.result_for(step, i), tool_call_id=c["id"]))
        if step["then_user"] is not None:
            history.append(HumanMessage(content=step["then_user"]))
        return obs

    DRIVER.play(call)


if __name__ == "__main__":
    main()
