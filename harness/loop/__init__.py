"""The agent loop: turns and steps, from a user's sentence to the model's answer.

This is the seed's walk as code, one room per concept:

- `inbox`: the durable input queues (`agent/inbox/spliced`);
- `prestep`: the pre-step waterfall of hooks (`Enter`, `Reject`);
- `header`: the request header — built per step, logged when it changes, read back from the log
  to build each request, and `rebuild_requests` to prove a finished log rebuilds every request
  (the one rule: every request is built from the log alone);
- `steps`: one step — the streamed model call with retries, the assistant message, the tool
  calls — ending in a typed `StepOutcome`;
- `agent`: `Agent`, the drive loop and the turn algorithm.
"""

from .agent import Agent
from .header import rebuild_requests
from .options import AgentOptions

__all__ = [
    "Agent",
    "AgentOptions",
    "rebuild_requests",
]
