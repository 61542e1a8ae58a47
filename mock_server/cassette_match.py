"""Which recorded exchange answers a live request: matching a cassette, as vcrpy's `match_on` does.

A replayed cassette is served by :class:`CassetteRouter`, a :class:`~dshkit.mock_server.routing.Router`
that ignores sessions and recorded order: each request is compared with the exchanges not yet
used, in recorded order, and the first one every matcher accepts answers it. Repeated identical
requests therefore get their recorded answers in the order they were recorded. A request no unused
exchange matches gets a 418 `mock_no_match` whose message names the nearest recorded request and
shows the difference (the journal and :attr:`CassetteRouter.misses` keep it for the test's
teardown).

Matchers compare the live request with a recorded one, both as
:class:`~dshkit.mock_server.cassette.RecordedRequest` (method, path without the query, headers
with names lower-cased, parsed JSON body). The built-in ones are named:

| name | compares |
| --- | --- |
| `method` | the HTTP method |
| `path` | the path, without the query string |
| `model` | the body's `model` |
| `messages` | the body's `messages`, and the Anthropic surface's top-level `system` |
| `tools` | the body's `tools` (and `tool_choice`) |
| `body` | the whole body |

The default is `method, path, model, messages, tools`. A custom matcher is any callable
`matcher(live, recorded)` that returns False or raises `AssertionError` (its message is shown) for
a mismatch; True or None is a match (the vcrpy convention). Values the recorder scrubbed
(`{{scrubbed:LABEL}}`, whole or inside a string) match any live value in their place.
"""

from __future__ import annotations

import difflib
import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dshkit.harness.secrets import scrub_json
from dshkit.mock_server.cassette import (
    CASSETTE_SUFFIX,
    Cassette,
    CassetteError,
    RecordedExchange,
    RecordedRequest,
)
from dshkit.mock_server.routing import Decision, RequestView, Router, body_diff
from dshkit.mock_server.scripts import Script, Step

__all__ = [
    "DEFAULT_MATCH_ON",
    "MATCHERS",
    "CassetteRouter",
    "MatchRule",
    "Matcher",
    "live_request",
    "resolve_match_on",
    "values_match",
]

Matcher = Callable[[RecordedRequest, RecordedRequest], "bool | None"]
"""`matcher(live, recorded)`: False, or an `AssertionError`, for a mismatch."""
MatchRule = str | Matcher
"""A built-in matcher's name or a custom matcher."""

_PLACEHOLDER = re.compile(r"\{\{scrubbed:[A-Za-z0-9_.-]*\}\}")


def values_match(recorded: Any, live: Any) -> bool:
    """Whether a live JSON value equals a recorded one, where a scrubbed placeholder in the
    recorded value (a whole string, or part of one) stands for any text."""
    if isinstance(recorded, str):
        if "{{scrubbed:" not in recorded:
            return isinstance(live, str) and recorded == live
        if _PLACEHOLDER.fullmatch(recorded):
            return True  # the whole value was a secret: it may have been any JSON value
        if not isinstance(live, str):
            return False
        parts = _PLACEHOLDER.split(recorded)
        return re.fullmatch(".*?".join(re.escape(p) for p in parts), live, re.DOTALL) is not None
    if isinstance(recorded, dict):
        return (
            isinstance(live, dict)
            and recorded.keys() == live.keys()
            and all(values_match(v, live[k]) for k, v in recorded.items())
        )
    if isinstance(recorded, list):
        return (
            isinstance(live, list)
            and len(recorded) == len(live)
            and all(values_match(a, b) for a, b in zip(recorded, live, strict=True))
        )
    return type(recorded) is type(live) and bool(recorded == live)


def _field(request: RecordedRequest, *names: str) -> dict[str, Any]:
    body = request.body if isinstance(request.body, Mapping) else {}
    return {name: body[name] for name in names if name in body}


def _fields(*names: str) -> Matcher:
    def matcher(live: RecordedRequest, recorded: RecordedRequest) -> bool:
        return values_match(_field(recorded, *names), _field(live, *names))

    return matcher


def _method(live: RecordedRequest, recorded: RecordedRequest) -> bool:
    return live.method.upper() == recorded.method.upper()


def _path(live: RecordedRequest, recorded: RecordedRequest) -> bool:
    return live.path.partition("?")[0] == recorded.path.partition("?")[0]


def _body(live: RecordedRequest, recorded: RecordedRequest) -> bool:
    return values_match(recorded.body, live.body)


MATCHERS: Mapping[str, Matcher] = {
    "method": _method,
    "path": _path,
    "model": _fields("model"),
    "messages": _fields("messages", "system"),
    "tools": _fields("tools", "tool_choice"),
    "body": _body,
}
"""The built-in matchers by name (see the module docstring)."""
DEFAULT_MATCH_ON: tuple[str, ...] = ("method", "path", "model", "messages", "tools")


def resolve_match_on(rules: Iterable[MatchRule] | None) -> tuple[tuple[str, Matcher], ...]:
    """(name, matcher) pairs for `rules` (None: :data:`DEFAULT_MATCH_ON`); ValueError for an
    unknown name or a rule that is neither a name nor a callable, and for no rule at all."""
    if isinstance(rules, str):
        rules = [rules]  # `match_on="body"`: one rule, not five letters
    out: list[tuple[str, Matcher]] = []
    for rule in DEFAULT_MATCH_ON if rules is None else rules:
        if isinstance(rule, str):
            if rule not in MATCHERS:
                raise ValueError(f"match_on: unknown matcher {rule!r}; the built-in ones are "
                                 f"{', '.join(MATCHERS)}, or pass a callable matcher(live, recorded)")
            out.append((rule, MATCHERS[rule]))
        elif callable(rule):
            out.append((getattr(rule, "__name__", None) or repr(rule), rule))
        else:
            raise ValueError(f"match_on: {rule!r} ({type(rule).__name__}) is neither a matcher name "
                             "nor a callable matcher(live, recorded)")
    if not out:
        raise ValueError("match_on is empty: give at least one matcher (e.g. 'body'), or leave it "
                         "out for the default " + ", ".join(DEFAULT_MATCH_ON))
    return tuple(out)


def live_request(req: RequestView) -> RecordedRequest:
    """The live request as matchers see it (model calls are POSTs)."""
    return RecordedRequest(method="POST", path=req.path, headers=dict(req.headers), body=req.body)


@dataclass(frozen=True, slots=True)
class Miss:
    """A request no recorded exchange answered."""

    request: str
    """`POST /path model=...`"""
    message: str
    """Why, with the difference from the nearest recorded request."""


class CassetteRouter(Router):
    """Serves `steps[i]` for the request that matches `exchanges[i]` (see the module docstring)."""

    def __init__(
        self,
        cassette: Cassette,
        steps: Sequence[Step],
        *,
        match_on: Iterable[MatchRule] | None = None,
        name: str = "cassette",
    ) -> None:
        exchanges = [x for x in cassette.exchanges if x.is_chat]
        if len(exchanges) != len(steps):
            raise ValueError(f"{len(steps)} steps for {len(exchanges)} replayable exchanges")
        if not exchanges:
            raise CassetteError(
                "the cassette holds no POST …/chat/completions or /anthropic/…/messages exchange to replay",
                source=cassette.source,
            )
        self.exchanges: tuple[RecordedExchange, ...] = tuple(exchanges)
        self.matchers = resolve_match_on(match_on)
        self.script = Script(name=name, steps=list(steps))
        super().__init__([self.script])
        self._used = [False] * len(exchanges)
        self._lock_ = threading.Lock()
        self.misses: list[Miss] = []
        """Every request that found no exchange, in arrival order."""

    def serves_recorded(self, session: str) -> bool:
        """Always: every answer is a recorded exchange, served as recorded (the upstream it was
        recorded against accepted the request, so the mock's own body rules do not apply)."""
        return True

    @classmethod
    def for_cassette(
        cls, cassette: Cassette, *, match_on: Iterable[MatchRule] | None = None, speed: float = 0.0,
        name: str | None = None,
    ) -> CassetteRouter:
        """The router serving `cassette`'s model calls byte for byte (`speed` scales the recorded
        delays; 0, the default in tests, serves without waiting)."""
        from dshkit.mock_server.replay import cassette_to_scripts

        base = name or Path(cassette.source).name.removesuffix(CASSETTE_SUFFIX)
        steps: list[Step] = []
        for n, x in enumerate(cassette.exchanges, 1):
            if x.is_chat:
                one = Cassette(exchanges=(x,), source=cassette.source)
                step = cassette_to_scripts(one, speed=speed, name=base)[0].steps[0]
                steps.append(step.model_copy(update={"label": f"exchange {n}: {x.summary()}"}))
        return cls(cassette, steps, match_on=match_on, name=base)

    def _failures(self, live: RecordedRequest, recorded: RecordedRequest) -> list[str]:
        out: list[str] = []
        for name, matcher in self.matchers:
            try:
                ok = matcher(live, recorded)
            except AssertionError as e:
                out.append(f"{name}: {e}" if str(e) else name)
                continue
            except Exception as e:  # noqa: BLE001 - a matcher's own bug: a mismatch that says so, not a 500
                out.append(f"{name}: the matcher raised {type(e).__name__}: {e}")
                continue
            if ok is False:
                out.append(name)
        return out

    @property
    def matches_body(self) -> bool:
        return True  # its matchers compare whole requests

    def route(self, session: str, req: RequestView, *, purpose: str | None = None) -> Decision:
        live = live_request(req)
        with self._lock_:
            failures: list[list[str]] = []
            matched_used = 0
            for i, x in enumerate(self.exchanges):
                fails = self._failures(live, x.request)
                failures.append(fails)
                if fails:
                    continue
                if self._used[i]:
                    matched_used += 1
                    continue
                self._used[i] = True
                return Decision(kind="step", session=session, script=self.script, index=i,
                                step=self.script.steps[i])
            message = self._miss_message(live, failures, matched_used)
            self.misses.append(Miss(_summary(live), message))
            return Decision(kind="no_match", session=session, script=self.script, message=message)

    def _miss_message(self, live: RecordedRequest, failures: list[list[str]], matched_used: int) -> str:
        names = ", ".join(name for name, _ in self.matchers)
        head = f"{_summary(live)}: "
        if matched_used:
            return head + (
                f"all {matched_used} recorded exchange(s) matching this request (on {names}) were "
                "already used; the app sent it once more than when the cassette was recorded. "
                "Record again (--dshkit-record=new_episodes adds it, =all starts afresh)."
            )
        nearest = self._nearest(live, failures)
        x = self.exchanges[nearest]
        try:
            diff = body_diff(scrub_json(x.request.body), scrub_json(live.body))
        except (RecursionError, ValueError, TypeError):
            diff = "(the bodies nest too deeply to show a diff)"
        return head + (
            f"no recorded exchange matches this request (on {names}). Nearest: exchange "
            f"{nearest + 1} ({x.request.method} {x.request.path}), which differs in: "
            f"{', '.join(failures[nearest])}\n{diff}\n"
            "The test no longer sends what was recorded: record the cassette again "
            "(--dshkit-record=new_episodes adds the new request, =all starts afresh), or loosen "
            "match_on."
        )

    def _nearest(self, live: RecordedRequest, failures: list[list[str]]) -> int:
        """The exchange failing the fewest matchers; among those, the most similar body."""
        fewest = min(len(f) for f in failures)
        candidates = [i for i, f in enumerate(failures) if len(f) == fewest]
        if len(candidates) == 1:
            return candidates[0]
        text = _dump(live.body)
        return max(candidates, key=lambda i: (
            difflib.SequenceMatcher(None, _dump(self.exchanges[i].request.body), text, autojunk=False).quick_ratio(),
            not self._used[i], -i,
        ))

    def pending(self) -> list[str]:
        """The recorded exchanges no request used."""
        with self._lock_:
            return [f"{self.script.step_label(i)} (never requested)" for i, used in enumerate(self._used) if not used]

    def replace(self, scripts: list[Script]) -> None:
        raise TypeError("a replayed cassette's server takes no scripts; start a server of its own for them")

    def add(self, script: Script, *, session: str | None = None) -> None:
        if getattr(self, "_used", None) is None:  # Router.__init__ adding the cassette's script
            super().add(script, session=session)
            return
        raise TypeError("a replayed cassette's server takes no scripts; start a server of its own for them")

    def reset(self) -> None:
        """Every exchange unused again, the misses forgotten."""
        with self._lock_:
            self._used = [False] * len(self.exchanges)
            self.misses.clear()


def _dump(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):
        return repr(value)


def _summary(request: RecordedRequest) -> str:
    body = request.body
    model = body.get("model") if isinstance(body, Mapping) else None
    return f"{request.method} {request.path}" + (f" model={model}" if isinstance(model, str) else "")
