"""Replay of session logs: log → entries → a plan per call → chunks for the loop, or a wire.

The one home of replay, imported by the loop's users and by the mock server alike:

- `entries` (`ReplayEntry`, `SessionScript`, `derive_replay_script`): one entry per logged model
  call (dsh-testing.md §2.4); `override` reads `replay.override.json` sidecars (§2.6);
  `placeholders` fills `{{fromRequest:REGEX}}` from the live request (§2.7); `scripts` finds
  and loads a log, its subagents' logs and its sidecar (§2.8), plain or zstd-compressed;
- `plan` (`plan_call`): what one call held and how it ended, wire-neutral; the mock server
  renders it as Chat Completions SSE or Anthropic Messages events;
- `adapter` (`ReplayAdapter`): the calls fed to the agent loop as `StreamChunk`s;
- `session` (`replay_session`) re-runs a log's turns through the loop and `compare`
  (`ReplayReport`) says how the result compares with the log.

Nothing here imports the mock server, and the loop only when a replay runs (`replay_session`).
"""

from .adapter import ReplayAdapter
from .session import replay_session

__all__ = [
    "ReplayAdapter",
    "replay_session",
]
