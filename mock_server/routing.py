"""Per-session script routing: which step answers a request.

There is no global cursor (unlike upstream's mock, `dsh-testing.md` §1.9). A request's session is
its `X-Mock-Session` header, else its `x-deepseek-harness-session-id` header, else a hash of its
API key (from `Authorization: Bearer`, else `x-api-key`: one key is one session whichever header
carries it), else `anonymous`. A session seen for the first time claims the script registered for
its id or, failing that, the next unclaimed script; parallel tests and concurrent subagents
therefore consume their own scripts. Within a script the first unconsumed step whose `match`
holds answers. A request no step matches, or one that finds its script used up, gets a decision
the server turns into a non-retryable 418 so a harness never retries into a hang.

Auxiliary requests never consume `steps`. A request's purpose is read from the wire by
`purpose_of`: `compaction` when it carries `x-deepseek-harness-compact: 1` (the header DSH adds to
compaction calls), `session-title` when its system text opens with DSH's title instruction
(`Create a concise title for an AI coding-assistant session`) and it offers no tools (DSH sends that
request beside step 1, thinking off, `max_tokens` 64, with the same headers as the main call, so
nothing else tells them apart), else `main`. A script's `auxiliary` steps of that purpose answer
it; a title request no such step answers gets the script's `title` reply.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import json
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from dshkit.mock_server.scripts import Match, ReplySpec, ReplyStep, Script, Step

if TYPE_CHECKING:
    from dshkit.mock_server.metrics import Metrics

__all__ = [
    "SESSION_HEADER",
    "Decision",
    "RequestView",
    "Router",
    "body_diff",
    "body_matches",
    "prompt_of",
    "purpose_of",
    "session_of",
]

SESSION_HEADER = "X-Mock-Session"
HARNESS_SESSION_HEADER = "x-deepseek-harness-session-id"
COMPACT_HEADER = "x-deepseek-harness-compact"
TITLE_INSTRUCTION = "Create a concise title for an AI coding-assistant session"
"""How the system text of DSH's session-title request begins (its first line, in 0.1.0-rc.8)."""


def session_of(headers: Mapping[str, str]) -> str:
    """The session key of a request (see the module docstring). Never contains the API key."""
    for name in (SESSION_HEADER, HARNESS_SESSION_HEADER):
        value = headers.get(name)
        if value:
            return value
    # The Anthropic surface may carry the key in `x-api-key` instead: the same key is the same
    # session whichever header (and `Bearer` spelling) carries it.
    auth = headers.get("Authorization", "").strip()
    scheme, _, rest = auth.partition(" ")
    key = rest.strip() if scheme.lower() == "bearer" else auth
    key = key or headers.get("x-api-key", "").strip()
    return _key_session(key) if key else "anonymous"


@functools.lru_cache(maxsize=256)
def _key_session(key: str) -> str:
    """The session of requests that name no session but carry this key (a client sends the
    same key on every request: hashed once)."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"key-{digest}"


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestView:
    """What step matchers look at in a request."""

    last_user: str = ""
    tool_results: frozenset[str] = frozenset()
    model: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    """The parsed request body as sent, for `match.body` (the journal keeps a redacted copy)."""
    path: str = ""
    """The request path, without the query (cassette matching compares it)."""


_SCRUBBED = re.compile(r"^\{\{scrubbed:[^{}]*\}\}$")


def body_matches(recorded: Any, live: Any) -> bool:
    """Whether a live body equals a recorded one; a recorded `{{scrubbed:...}}` string matches
    any value (the recorder replaced a secret there)."""
    if isinstance(recorded, str) and _SCRUBBED.match(recorded):
        return True
    if isinstance(recorded, dict):
        return (
            isinstance(live, dict)
            and recorded.keys() == live.keys()
            and all(body_matches(v, live[k]) for k, v in recorded.items())
        )
    if isinstance(recorded, list):
        return (
            isinstance(live, list)
            and len(recorded) == len(live)
            and all(body_matches(a, b) for a, b in zip(recorded, live, strict=True))
        )
    return type(recorded) is type(live) and bool(recorded == live)


def body_diff(recorded: Any, live: Any, *, context: int = 3, limit: int = 80) -> str:
    """A unified diff, recorded → live, of two bodies as indented sorted JSON."""

    def lines(value: Any) -> list[str]:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()

    diff = list(
        difflib.unified_diff(
            lines(recorded), lines(live), "recorded request", "live request", n=context, lineterm=""
        )
    )
    if len(diff) > limit:
        diff = [*diff[:limit], f"... ({len(diff) - limit} more diff lines)"]
    return "\n".join(diff)


def _text(content: Any) -> str:
    """The text of a message's content: a string, or the `text` parts of a list of parts/blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"] for part in content
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
        )
    return ""


def _messages(body: Any) -> list[dict[str, Any]]:
    messages = body.get("messages") if isinstance(body, dict) else None
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def _is_tool_result(message: dict[str, Any]) -> bool:
    """An Anthropic-surface user message that only carries `tool_result` blocks."""
    content = message.get("content")
    return isinstance(content, list) and bool(content) and all(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _ends_turn(message: dict[str, Any]) -> bool:
    """An assistant message that called no tool: the answer that closed a turn."""
    if message.get("role") != "assistant":
        return False
    if message.get("tool_calls"):
        return False
    content = message.get("content")
    return not (isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_use" for b in content
    ))


def prompt_of(body: Any) -> str:
    """The turn's prompt: the text of the first user message after the last assistant message
    that called no tool (the previous turn's answer), or of the first user message at all.

    Under DSH this is the user's task on every step of its turn, where the last user message is
    its runtime-context snapshot; later user messages of the turn (snapshots, steering, plugin
    notes) are not the prompt. "" when the request holds no user message."""
    messages = _messages(body)
    start = 0
    for i, message in enumerate(messages):
        if _ends_turn(message):
            start = i + 1
    for message in messages[start:]:
        if message.get("role") == "user" and not _is_tool_result(message):
            return _text(message.get("content"))
    return ""


def _system_text(body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    if "system" in body:  # the Anthropic surface: a string or a list of text blocks
        return _text(body["system"])
    # The first message that is an object (what `_messages` would list first), found without
    # listing a long conversation on every request.
    messages = body.get("messages")
    first = next((m for m in messages if isinstance(m, dict)), None) if isinstance(messages, list) else None
    return _text(first.get("content")) if first is not None and first.get("role") == "system" else ""


def purpose_of(req: RequestView) -> str:
    """What a request is for: `compaction`, `session-title` or `main` (see the module docstring)."""
    if req.headers.get(COMPACT_HEADER) == "1":
        return "compaction"
    body = req.body
    if isinstance(body, dict) and not body.get("tools") and _system_text(body).startswith(TITLE_INSTRUCTION):
        return "session-title"
    return "main"


def _failures(match: Match | None, req: RequestView) -> list[str]:
    """Why `match` does not hold for `req` (empty when it holds)."""
    if match is None:
        return []
    out: list[str] = []
    if match.user is not None and not re.search(match.user, req.last_user):
        out.append(
            f"match.user /{match.user}/ not found in the last user message {_clip(req.last_user)!r}"
        )
    if match.prompt is not None:
        prompt = prompt_of(req.body)
        if not re.search(match.prompt, prompt):
            out.append(f"match.prompt /{match.prompt}/ not found in the turn's prompt {_clip(prompt)!r}")
    if match.tool_result is not None and match.tool_result not in req.tool_results:
        seen = ", ".join(sorted(req.tool_results)) or "none"
        out.append(
            f"match.tool_result wants a tool message for {match.tool_result!r}; results present: "
            f"{seen}"
        )
    if match.model is not None and match.model != req.model:
        out.append(f"match.model wants {match.model!r}, the request asked for {req.model!r}")
    if match.body is not None and not body_matches(match.body, req.body):
        out.append("match.body differs from the live request body:\n" + body_diff(match.body, req.body))
    for name, pattern in match.headers.items():
        value = req.headers.get(name)
        if value is None:
            out.append(f"match.headers.{name} wants /{pattern}/, the header is absent")
        elif not re.search(pattern, value):
            out.append(f"match.headers.{name} wants /{pattern}/, got {_clip(value)!r}")
    return out


def _clip(text: str, n: int = 120) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """The router's answer for one request."""

    kind: Literal["step", "default", "no_match", "exhausted", "no_script"]
    session: str
    script: Script | None = None
    index: int | None = None
    """The step's index in `script.steps`; None for the default reply and auxiliary answers."""
    step: Step | None = None
    message: str = ""
    """For the 418 kinds: what happened and what to do."""
    purpose: str = "main"
    """What the request was for (`purpose_of`)."""
    auxiliary: int | None = None
    """The index in `script.auxiliary` of the step that answered; None when a main step, the
    default reply or the script's `title` answered."""
    repeat: int | None = None
    """How many times this step already answered the session, when the router counted it (the
    state owner of `dshkit serve --workers`); None: the server counts it itself."""


@dataclass(slots=True)
class _Cursor:
    script: Script
    used: list[bool]
    aux_used: list[bool] = field(default_factory=list)
    free: list[int] = field(default_factory=list)
    """`free[i]` leads to the first unused step at or after `i` (a disjoint-set forest with
    path halving; `len(steps)` when none is left): routing skips the used steps in amortised
    constant time instead of walking past every one of them on every request."""

    def __post_init__(self) -> None:
        self.free = list(range(len(self.used) + 1))

    def first_unused(self, i: int) -> int:
        """The index of the first unused step at or after `i` (`len(steps)` when none is)."""
        free = self.free
        while free[i] != i:
            free[i] = free[free[i]]
            i = free[i]
        return i

    def use(self, i: int) -> None:
        self.used[i] = True
        self.free[i] = i + 1


class Router:
    """Scripts waiting to be claimed, the sessions that claimed them, and their progress.

    `unscripted` says what a new session gets when no script is left for it: `error` (a 418
    `mock_no_script`) or `default` (the generated default reply). Thread-safe: the server's
    loop thread routes while a test thread may add scripts.
    """

    def __init__(
        self,
        scripts: list[Script] | None = None,
        *,
        unscripted: Literal["error", "default"] = "error",
        skip_used: bool = True,
    ) -> None:
        self.unscripted = unscripted
        self.skip_used = skip_used
        """Jump over used steps (the default: routing costs the same at step 10,000 as at step
        1); False walks every step from the first, the plain reference the tests compare with."""
        self._lock = threading.Lock()
        self._unclaimed: list[Script] = []
        self._reserved: dict[str, Script] = {}
        self.scripts: list[Script] = []
        """Every script added, in the order added (a script's index here names it across the
        processes of `dshkit serve --workers`, which all load the same scripts; `reset` starts
        again from them)."""
        self._sessions: list[str | None] = []
        """The session each of `scripts` was reserved for by `add(session=)`, else None."""
        self._claims: dict[str, _Cursor] = {}
        self._ever_scripted = False
        for s in scripts or ():
            self.add(s)

    def add(self, script: Script, *, session: str | None = None) -> None:
        """Queue a script for the next new session, or reserve it for `session`."""
        with self._lock:
            self._add(script, session)
            self.scripts.append(script)
            self._sessions.append(session)

    def _add(self, script: Script, session: str | None) -> None:
        self._ever_scripted = True
        key = session or script.session
        if key is None:
            self._unclaimed.append(script)
        elif key in self._reserved or key in self._claims:
            raise ValueError(
                f"session {key!r} already has a script; give each script its own session id"
            )
        else:
            self._reserved[key] = script

    def reset(self) -> None:
        """Forget every session: the scripts added so far wait to be claimed again, every step
        unused (as on a server just started with them)."""
        with self._lock:
            self._start_over()

    def replace(self, scripts: list[Script]) -> None:
        """Drop every script and session and start over with `scripts` (none: every request
        gets the default reply again). Raises ValueError, changing nothing, when two scripts
        reserve one session."""
        with self._lock:
            keys = [s.session for s in scripts if s.session is not None]
            twice = sorted({k for k in keys if keys.count(k) > 1})
            if twice:
                raise ValueError(f"session(s) {', '.join(map(repr, twice))} have more than one script; "
                                 "give each script its own session id")
            self.scripts, self._sessions = list(scripts), [None] * len(scripts)
            self._start_over()

    def _start_over(self) -> None:
        self._unclaimed, self._reserved, self._claims = [], {}, {}
        self._ever_scripted = False
        for script, session in zip(self.scripts, self._sessions, strict=True):
            self._add(script, session)

    @property
    def scripted(self) -> bool:
        """True once any script was added; before that every request gets the default reply."""
        return self._ever_scripted

    async def decide(self, session: str, req: RequestView) -> Decision:
        """:meth:`route` as the handlers call it: a router in another process (the workers of
        `dshkit serve --workers`) answers through this coroutine."""
        return self.route(session, req)

    async def gather(self, metrics: Metrics) -> dict[str, Any]:
        """The counts `/metrics` reports for the whole server: this process's own; a worker's
        router (`dshkit serve --workers`) asks the state owner, which adds up every worker's."""
        return metrics.counts()

    def serves_recorded(self, session: str) -> bool:
        """Whether the script that would answer `session` next (the one it claimed, else the one
        it would claim) serves recorded exchanges (`Script.recorded`). Claims nothing."""
        with self._lock:
            cursor = self._claims.get(session)
            if cursor is not None:
                return cursor.script.recorded
            script = self._reserved.get(session) or (self._unclaimed[0] if self._unclaimed else None)
            return script is not None and script.recorded

    @property
    def matches_body(self) -> bool:
        """Whether some step of the scripts added so far reads the request body to match
        (`match.body` or `match.prompt`); routing reads no other part of it but its purpose."""
        with self._lock:
            return any(step.match is not None and (step.match.body is not None or step.match.prompt is not None)
                       for script in self.scripts for step in (*script.steps, *script.auxiliary))

    def route(self, session: str, req: RequestView, *, purpose: str | None = None) -> Decision:
        """Pick (and consume) the step that answers this request. `purpose`: `purpose_of(req)`
        when the caller read it already (a worker of `dshkit serve --workers`, which sends its
        state owner no body that no step matches on)."""
        with self._lock:
            if not self._ever_scripted:
                return Decision(kind="default", session=session)
            cursor = self._claims.get(session)
            if cursor is None:
                script = self._reserved.pop(session, None)
                if script is None and self._unclaimed:
                    script = self._unclaimed.pop(0)
                if script is None and self.unscripted == "default":
                    return Decision(kind="default", session=session)
                if script is None:
                    owners = ", ".join(sorted(self._claims)) or "none"
                    return Decision(
                        kind="no_script",
                        session=session,
                        message=f"session {session!r} has no script: every script is claimed "
                        f"(by sessions: {owners}). Add a script for it, or send the same "
                        f"X-Mock-Session header as the session that owns the script (or start the "
                        f"server with unscripted='default' to answer such sessions with the "
                        f"generated default reply).",
                    )
                cursor = _Cursor(script, [False] * len(script.steps), [False] * len(script.auxiliary))
                self._claims[session] = cursor
            if purpose is None:
                purpose = purpose_of(req)
            if purpose != "main":
                aside = self._aside(session, cursor, req, purpose)
                if aside is not None:
                    return aside
            decision = self._pick(session, cursor, req)
            return decision if purpose == decision.purpose else dataclasses.replace(decision, purpose=purpose)

    def _aside(self, session: str, cur: _Cursor, req: RequestView, purpose: str) -> Decision | None:
        """The answer to an auxiliary request that must not consume `steps`, or None when the
        script leaves such a request to its steps (no auxiliary step for it, no `title`)."""
        script = cur.script
        candidates = [
            i for i, step in enumerate(script.auxiliary)
            if step.purpose == purpose and not _failures(step.match, req)
        ]
        for i in candidates:
            if not cur.aux_used[i]:
                cur.aux_used[i] = True
                return Decision(kind="step", session=session, script=script, step=script.auxiliary[i],
                                purpose=purpose, auxiliary=i)
        if candidates:  # all used: the last one of this purpose repeats
            i = candidates[-1]
            return Decision(kind="step", session=session, script=script, step=script.auxiliary[i],
                            purpose=purpose, auxiliary=i)
        if purpose == "session-title" and script.title is not None:
            step = ReplyStep(label="title", reply=ReplySpec(content=script.title))
            return Decision(kind="step", session=session, script=script, step=step, purpose=purpose)
        return None

    def _unused(self, cur: _Cursor) -> Iterator[int]:
        """The indices of the unused steps, in order (read lazily: the caller may use one)."""
        n = len(cur.used)
        if not self.skip_used:
            yield from (i for i in range(n) if not cur.used[i])
            return
        i = cur.first_unused(0)
        while i < n:
            yield i
            i = cur.first_unused(i + 1)

    def _pick(self, session: str, cur: _Cursor, req: RequestView) -> Decision:
        script = cur.script
        nearest: tuple[int, list[str]] | None = None
        for i in self._unused(cur):
            step = script.steps[i]
            fails = _failures(step.match, req)
            if not fails:
                cur.use(i)
                return Decision(kind="step", session=session, script=script, index=i, step=step)
            if nearest is None or len(fails) < len(nearest[1]):
                nearest = (i, fails)
        if nearest is None and script.repeat_last:
            last = len(script.steps) - 1
            fails = _failures(script.steps[last].match, req)
            if not fails:
                return Decision(
                    kind="step", session=session, script=script, index=last, step=script.steps[last]
                )
            nearest = (last, fails)
        if nearest is None:
            return Decision(
                kind="exhausted",
                session=session,
                script=script,
                message=f"script {script.name!r} (session {session!r}) is exhausted: all "
                f"{len(script.steps)} step(s) were used. Add steps, set repeat_last, or check "
                f"why the client sent one request more than scripted.",
            )
        i, fails = nearest
        return Decision(
            kind="no_match",
            session=session,
            script=script,
            index=i,
            message=f"no step of script {script.name!r} (session {session!r}) matches this "
            f"request. Nearest: {script.step_label(i)}:\n  - " + "\n  - ".join(fails),
        )

    def pending(self) -> list[str]:
        """Unused steps of claimed scripts, and scripts nobody claimed."""
        with self._lock:
            out: list[str] = []
            for session, cur in self._claims.items():
                out += [
                    f"{cur.script.step_label(i)} of session {session!r}"
                    for i, used in enumerate(cur.used)
                    if not used
                ]
            for s in self._unclaimed:
                out.append(f"script {s.name!r}: never claimed by any session ({len(s.steps)} steps)")
            for key, s in self._reserved.items():
                out.append(f"script {s.name!r} reserved for session {key!r}: never used")
            return out
