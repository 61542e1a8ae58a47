"""The request body of every model call a log records, each history message serialized once.

An agent sends its whole history with every request, so serializing each rebuilt request on
its own (`serialize(options)`, the plain path) costs steps² on a long log. Consecutive calls
share their history: the next request is the previous one's messages (the very same frozen
`Message` objects, `Session.derive_messages` hands out snapshots of one list) plus what the step
added. `request_bodies` therefore serializes only the messages a call adds and reuses the wire
messages of the call before, which holds as long as everything else the request is built from
(model, system text, tools, thinking, limits) is equal; any other call takes the plain path. The
bodies it returns share their message dicts: they are read, never changed. `plain=True` is the
reference the fast path is tested against (tests/view/test_bodies.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from dshkit.harness.llm import GenerateOptions, Message
from dshkit.harness.providers.deepseek import DeepSeekConfig
from dshkit.harness.providers.openai_chat.serialize import serialize

__all__ = ["request_bodies"]

_UNFORCED = (None, "auto", "none")
"""`tool_choice` values that do not depend on the tools offered."""


@dataclasses.dataclass(slots=True)
class _Previous:
    """What the last call's body was made from, to extend it."""

    context: GenerateOptions
    """The call's options with no messages: what the wire form of a message may depend on."""
    messages: tuple[Message, ...]
    body: dict[str, Any]
    head: dict[str, Any]
    """The body of the context alone: every field, and the system message as its only message."""


def request_bodies(
    requests: Sequence[GenerateOptions], config: DeepSeekConfig | None = None, *, plain: bool = False
) -> list[dict[str, Any]]:
    """`[serialize(r, config) for r in requests]`, in time linear in what each request adds."""
    if plain:
        return [serialize(r, config) for r in requests]
    out: list[dict[str, Any]] = []
    previous: _Previous | None = None
    for options in requests:
        messages = tuple(options.messages)
        context = dataclasses.replace(options, messages=())
        same = previous is not None and previous.context == context
        # Everything but the history is a function of the context alone.
        head = previous.head if same and previous is not None else serialize(context, config)
        shared = 0
        if same and previous is not None:
            n = len(previous.messages)
            # A tuple comparison skips identical items at C speed (the messages are the same objects)
            if n <= len(messages) and messages[:n] == previous.messages:
                shared = n
        if shared:
            assert previous is not None
            # Only the added messages: no system text, and no tools unless a forced tool_choice
            # (which turns thinking off, and so changes assistant messages) needs them.
            tools = options.tools if options.tool_choice not in _UNFORCED else ()
            added = serialize(dataclasses.replace(options, messages=messages[shared:], system=None, tools=tools), config)
            body = {**head, "messages": previous.body["messages"] + added["messages"]}
        else:
            body = serialize(options, config)
        out.append(body)
        previous = _Previous(context=context, messages=messages, body=body, head=head)
    return out
