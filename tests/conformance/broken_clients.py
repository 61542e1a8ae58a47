"""Deliberately broken client drivers, run as `python broken_clients.py MODE`, to prove the client
runner without Node.

Two are the bundled openai-python driver with one realistic defect wrapped around the SDK:
`drops-passback` sends assistant turns back without `reasoning_content`, `reencodes-arguments`
parses each tool call's arguments and writes them again with `json.dumps` (on the wire back and in
what it reports). The others break the protocol itself: `crash` raises after `hello`, `hang`
sleeps after `hello` (and `hang-child` leaves a sleeping child in its process group, writing the
child's pid to $BROKEN_CLIENT_PIDFILE), `slow-hello` never gets to `hello`, `garbage` prints a line
that is not JSON, `bad-schema` prints an observation whose arguments are an object, `silent`
exits 0 after `hello` without observations.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CLIENTS = Path(__file__).resolve().parents[2] / "conformance" / "clients"
MODES = ("drops-passback", "reencodes-arguments", "crash", "hang", "hang-child", "slow-hello", "garbage",
         "bad-schema", "silent")


def _hello(out: Any) -> dict[str, Any]:
    task: dict[str, Any] = json.loads(sys.stdin.read())
    out.write(json.dumps({"type": "hello", "protocol_version": 1, "client": f"broken-{sys.argv[1]}",
                          "protocols": ["chat"], "libraries": {"none": "0"}}) + "\n")
    out.flush()
    return task


def _plain(mode: str) -> None:
    """The drivers that break the protocol; they never import a client library."""
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


def _to_dict(message: Any) -> Any:
    return message.model_dump(exclude_none=True) if hasattr(message, "model_dump") else dict(message)


def _wrapped(mode: str) -> None:
    """The openai-python driver with one defect around the SDK."""
    sys.path.insert(0, str(CLIENTS))
    import drive_openai
    from openai.resources.chat.completions import Completions

    original = Completions.stream

    def stream(self: Any, *, messages: Any, **kw: Any) -> Any:
        sent = []
        for m in messages:
            m = _to_dict(m)
            if m.get("role") == "assistant":
                if mode == "drops-passback":
                    m.pop("reasoning_content", None)
                for call in m.get("tool_calls") or () if mode == "reencodes-arguments" else ():
                    fn = call["function"]
                    fn["arguments"] = json.dumps(json.loads(fn["arguments"])) if fn.get("arguments") else ""
            sent.append(m)
        return original(self, messages=sent, **kw)

    Completions.stream = stream  # type: ignore[method-assign]
    if mode == "reencodes-arguments":
        observe = drive_openai.observe

        def reencoded(*args: Any) -> Any:
            obs = observe(*args)
            for call in obs.tool_calls:
                call["arguments"] = json.dumps(json.loads(call["arguments"])) if call["arguments"] else ""
            return obs

        drive_openai.observe = reencoded
    drive_openai.main()


if __name__ == "__main__":
    which = sys.argv[1]
    if which not in MODES:
        sys.exit(f"broken_clients.py: mode must be one of {', '.join(MODES)}")
    (_wrapped if which in ("drops-passback", "reencodes-arguments") else _plain)(which)
