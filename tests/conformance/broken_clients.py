"""Deliberately broken client drivers, run as `python broken_clients.py MODE`, to prove the client
runner without Node.

Two are Chat Completions clients with one realistic defect each, for the judge to catch:
`drops-passback` sends assistant turns back without `reasoning_content`, `reencodes-arguments`
parses each tool call's arguments and writes them again with `json.dumps` (on the wire back and in
what it reports). They speak the wire with the standard library (`http.client`, the `data:`
events put together as the openai SDK's stream helper does), not through the openai SDK: what they
prove is that the runner and judge see the defect in the requests and the observations, which
needs the wire shapes but not the SDK, while importing it was most of each run's CPU (the real
SDK is proven by the bundled openai-python driver's own runs). The others break the protocol
itself: `crash` raises after `hello`, `hang` sleeps after `hello` (and `hang-child` leaves a
sleeping child in its process group, writing the child's pid to $BROKEN_CLIENT_PIDFILE),
`slow-hello` never gets to `hello`, `garbage` prints a line that is not JSON, `bad-schema` prints
an observation whose arguments are an object, `silent` exits 0 after `hello` without
observations.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

CLIENTS = Path(__file__).resolve().parents[2] / "conformance" / "clients"
MODES = ("drops-passback", "reencodes-arguments", "crash", "hang", "hang-child", "slow-hello", "garbage",
         "bad-schema", "silent")


def _hello(out: Any, **extra: Any) -> dict[str, Any]:
    task: dict[str, Any] = json.loads(sys.stdin.read())
    out.write(json.dumps({"type": "hello", "protocol_version": 1, "client": f"broken-{sys.argv[1]}",
                          "protocols": ["chat"], "libraries": {"none": "0"}, **extra}) + "\n")
    out.flush()
    return task


def _plain(mode: str) -> None:
    """The drivers that break the protocol."""
    if mode == "slow-hello":
        time.sleep(3600)
    task = _hello(sys.stdout)
    if task.get("describe") or mode == "silent":
        return
    if mode == "crash":
        raise RuntimeError("the driver fell over while calling the model")
    if mode in ("hang", "hang-child"):
        if mode == "hang-child":
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
            Path(os.environ["BROKEN_CLIENT_PIDFILE"]).write_text(str(child.pid))
        time.sleep(3600)
    if mode == "garbage":
        print("calling the model now...", flush=True)
    if mode == "bad-schema":
        obs = {"type": "observation", "step": 0, "content": "", "reasoning": None, "finish": "tool_calls",
               "tool_calls": [{"id": "c", "name": "f", "arguments": {"city": "Paris"}}], "usage": None, "error": None}
        print(json.dumps(obs), flush=True)


class StatusError(Exception):
    """An HTTP status other than 200, with the body and message as the SDK's APIStatusError
    keeps them (the provider error's `message` when the body has one)."""

    def __init__(self, status: int, body: bytes) -> None:
        try:
            self.body: Any = json.loads(body)
        except ValueError:
            self.body = None
        inner = self.body.get("error", self.body) if isinstance(self.body, dict) else None
        said = inner.get("message") if isinstance(inner, dict) else None
        self.status_code = status
        super().__init__(f"Error code: {status} - {said or body.decode('utf-8', 'replace')}")


def _request(task: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The streaming request body, with the fields the openai-python driver sends."""
    import driverkit

    opts = task["options"]
    body: dict[str, Any] = {"model": task["model"], "messages": messages, "stream": True,
                            "stream_options": {"include_usage": True}}
    if task["tools"]:
        body["tools"] = driverkit.chat_tools(task)
    if opts["thinking"] is not None:
        body["thinking"] = {"type": "enabled" if opts["thinking"] else "disabled"}
    body.update(driverkit.chat_options(task))
    return body


def _stream(task: dict[str, Any], body: dict[str, Any], message: dict[str, Any]) -> tuple[str | None, Any]:
    """POST `body` and fold its `data:` events into `message` (text and reasoning concatenated,
    tool-call fragments joined by index); the finish reason and usage come back."""
    url = urlsplit(task["base_url"])
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=task["timeouts"]["read_s"])
    finish, usage, calls = None, None, message["tool_calls"]
    try:
        conn.request("POST", url.path.rstrip("/") + "/chat/completions", json.dumps(body).encode(),
                     {"Content-Type": "application/json", "Authorization": f"Bearer {task['api_key']}"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise StatusError(resp.status, resp.read())
        for raw in resp:
            line = raw.decode("utf-8").strip()
            if not line.startswith("data:"):
                continue
            if line[5:].strip() == "[DONE]":
                break
            chunk = json.loads(line[5:])
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                for key in ("content", "reasoning_content"):
                    if delta.get(key) is not None:
                        message[key] = (message.get(key) or "") + delta[key]
                for frag in delta.get("tool_calls") or ():
                    while len(calls) <= frag.get("index", 0):
                        calls.append({"id": None, "type": "function", "function": {"name": None, "arguments": ""}})
                    call, fn = calls[frag.get("index", 0)], frag.get("function") or {}
                    call["id"] = frag.get("id") or call["id"]
                    call["function"]["name"] = fn.get("name") or call["function"]["name"]
                    call["function"]["arguments"] += fn.get("arguments") or ""
                finish = choice.get("finish_reason") or finish
    finally:
        conn.close()
    return finish, usage


def _reencode(arguments: str) -> str:
    return json.dumps(json.loads(arguments)) if arguments else ""


def _wire(mode: str) -> None:
    """A Chat Completions client with one defect: it keeps the history as openai-python's users
    do (the assembled message appended, then the tool results) and spoils it on the way out."""
    sys.path.insert(0, str(CLIENTS))
    import driverkit

    task = _hello(sys.stdout, runtime=f"python {sys.version.split()[0]}",
                  options={"max_retries": "taken for the matrix's reruns; this client never retries"},
                  tries=[{"max_retries": "0"}, {"max_retries": "5"}])
    if task.get("describe"):
        return
    unknown = sorted(set(task.get("client_options") or {}) - {"max_retries"})
    if unknown:
        sys.stderr.write(f"broken-{mode}: unknown client option(s) {', '.join(unknown)}; known: max_retries\n")
        raise SystemExit(2)
    history: list[dict[str, Any]] = driverkit.chat_messages(task)
    for k, step in enumerate(task["steps"]):
        sent = []
        for m in history:
            if m["role"] == "assistant":
                m = {**m, "tool_calls": [{**c, "function": {**c["function"]}} for c in m.get("tool_calls") or ()]}
                if mode == "drops-passback":
                    m.pop("reasoning_content", None)
                for call in m["tool_calls"] if mode == "reencodes-arguments" else ():
                    call["function"]["arguments"] = _reencode(call["function"]["arguments"])
                if not m["tool_calls"]:
                    del m["tool_calls"]
            sent.append(m)
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": []}
        obs = driverkit.Observation()
        try:
            obs.finish, usage = _stream(task, _request(task, sent), message)
        except Exception as exc:  # what the client raised is the observation
            obs.error = driverkit.describe_error(exc, (StatusError,))
            usage = None
        obs.content, obs.reasoning = message["content"] or "", message.get("reasoning_content")
        obs.tool_calls = [{"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                          for c in message["tool_calls"]]
        if mode == "reencodes-arguments":
            for call in obs.tool_calls:
                call["arguments"] = _reencode(call["arguments"])
        if usage is not None:
            cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
            obs.usage = {"prompt_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"],
                         "cache_read_tokens": cached if cached is not None else usage.get("prompt_cache_hit_tokens"),
                         "reasoning_tokens": (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")}
        print(json.dumps(obs.to_json(k), ensure_ascii=False), flush=True)
        if obs.error is not None:
            return
        if not message["tool_calls"]:
            del message["tool_calls"]
        history.append(message)
        history += [{"role": "tool", "tool_call_id": c["id"], "content": driverkit.result_for(step, i)}
                    for i, c in enumerate(message.get("tool_calls") or ())]
        if step["then_user"] is not None:
            history.append({"role": "user", "content": step["then_user"]})


if __name__ == "__main__":
    which = sys.argv[1]
    if which not in MODES:
        sys.exit(f"broken_clients.py: mode must be one of {', '.join(MODES)}")
    (_wire if which in ("drops-passback", "reencodes-arguments") else _plain)(which)
