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
from .compare import ReplayReport, replay_diff
from .entries import ReplayEntry, ReplayError, SessionScript, derive_replay_script
from .override import parse_override
from .placeholders import fill_from_request, request_strings
from .plan import CallPlan, Piece, plan_call
from .scripts import load_log_session, load_session_scripts
from .session import ReplayAdapterSource, logged_tool_runtime, replay_session, turn_inputs

__all__ = [
    "CallPlan",
    "Piece",
    "ReplayAdapter",
    "ReplayAdapterSource",
    "ReplayEntry",
    "ReplayError",
    "ReplayReport",
    "SessionScript",
    "derive_replay_script",
    "fill_from_request",
    "load_log_session",
    "load_session_scripts",
    "logged_tool_runtime",
    "parse_override",
    "plan_call",
    "replay_diff",
    "replay_session",
    "request_strings",
    "turn_inputs",
]
