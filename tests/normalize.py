"""One normaliser for snapshots: ids and times become numbered tokens, so a snapshot holds only
behaviour. Two presets cover the two kinds of documents the tests snapshot:

- `Normalizer.by_key()` for translated/serialised documents, where ids sit under known keys
  (`id`, `toolCallId`, …) and times under `created`, `time`, …: `<id-1>`, `<time-1>`;
- `Normalizer.in_text(cwd)` for session events, where ids also occur inside strings (a uuid, a
  32-hex fingerprint, a DeepSeek call id) and the workspace path appears in tool output:
  `{{uuid:1}}`, `{{hex:1}}`, `{{call:1}}`, `{{request:1}}`, `{{cwd}}`, times to 0.

Tokens are numbered per kind by first appearance, so one normaliser per document (or per pair of
documents that must compare equal) keeps the numbering stable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
HEX32 = re.compile(r"\b[0-9a-f]{32}\b")
CALL_ID = re.compile(r"\bcall_\d\d_[A-Za-z0-9]{24}\b")


class Normalizer:
    """Replace ids and times with numbered tokens (see the module docstring for the presets).

    `id_keys` maps a key to the token kind of a non-empty string under it; `patterns` are
    (kind, regex) pairs replaced inside every other string; `time_keys` name numeric times, which
    become tokens (`times="token"`) or 0 (`times="zero"`); `token` is the token's format, with
    `{kind}` and `{n}`; `cwd`, when given, becomes `{{cwd}}` inside strings."""

    def __init__(self, *, id_keys: Mapping[str, str] | None = None, time_keys: frozenset[str] = frozenset(),
                 times: Literal["token", "zero"] = "token", patterns: tuple[tuple[str, re.Pattern[str]], ...] = (),
                 token: str = "<{kind}-{n}>", cwd: Path | str | None = None) -> None:
        self.id_keys = dict(id_keys or {})
        self.time_keys = time_keys
        self.times = times
        self.patterns = patterns
        self.token_format = token
        self.cwd = str(cwd) if cwd is not None else None
        self.tokens: dict[tuple[str, Any], str] = {}

    @classmethod
    def by_key(cls) -> Normalizer:
        """Ids and times by key, as `<id-N>` / `<time-N>`; strings are otherwise left alone."""
        ids = ("id", "toolCallId", "callId", "tool_call_id", "requestId")
        return cls(id_keys=dict.fromkeys(ids, "id"), time_keys=frozenset({"created", "createdAt", "time", "timestamp"}))

    @classmethod
    def in_text(cls, cwd: Path | str) -> Normalizer:
        """Ids inside any string (`{{uuid:N}}`, `{{hex:N}}`, `{{call:N}}`), `requestId` values as
        `{{request:N}}`, the workspace path as `{{cwd}}`, times to 0."""
        return cls(id_keys={"requestId": "request"}, time_keys=frozenset({"time", "createdAt", "created", "time0"}),
                   times="zero", patterns=(("uuid", UUID), ("hex", HEX32), ("call", CALL_ID)),
                   token="{{{{{kind}:{n}}}}}", cwd=cwd)

    def token(self, kind: str, value: Any) -> str:
        key = (kind, value)
        if key not in self.tokens:
            n = sum(1 for k in self.tokens if k[0] == kind) + 1
            self.tokens[key] = self.token_format.format(kind=kind, n=n)
        return self.tokens[key]

    def text(self, value: str) -> str:
        if self.cwd is not None:
            value = value.replace(self.cwd, "{{cwd}}")
        for kind, pattern in self.patterns:
            value = pattern.sub(lambda m, kind=kind: self.token(kind, m.group()), value)  # type: ignore[misc]
        return value

    def __call__(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, Mapping):
            return {k: self(v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self(v) for v in value]
        if isinstance(value, str):
            kind = self.id_keys.get(key) if key is not None else None
            return self.token(kind, value) if kind and value else self.text(value)
        if key in self.time_keys and isinstance(value, (int, float)):
            return self.token("time", value) if self.times == "token" else 0
        return value
