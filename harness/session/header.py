"""`SessionHeader`: the first line of a session file, kept out of the event log.

Before the seed's walk begins a session has an identity: its id, creation time, working
directory and delegation lineage (dsh-core.md §1.9, §1.11). The header is written once, as
`{"type":"session","version":0,"id","createdAt","cwd"?,…,"delegationDepth":0}`, and a foreign
version is refused as unsupported (upgrade the harness) before any other check, not as corruption.

Reading is as lenient as upstream DSH's own reader, which looks only at `id`, `createdAt` and
`seedLength` (dsh-testing.md §2.3): its hand-authored fixtures omit `version` and some recorded
ones omit `delegationDepth`, and scrubbed fixtures template the cwd (`{{cwd}}`,
`{{cwd}}/workspace`). Those shapes load; the keys a header left out are remembered so writing
it back reproduces the same line, while headers dshkit makes always carry both keys.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from dshkit.harness.llm.errors import SessionError, UsageError

from .events import SESSION_FORMAT_VERSION
from .lossless import JsonValue

__all__ = ["SessionHeader"]

_KEYS: Final = frozenset(
    {"type", "version", "id", "createdAt", "cwd", "parentSession", "seedLength", "origin",
     "delegationDepth", "agentPreset"}
)
_RETIRED: Final = frozenset({"sandboxMode", "approvalPolicy"})
_PLACEHOLDER: Final = re.compile(r"\{\{[^{}]+\}\}(?:/.*)?", re.DOTALL)
"""A scrubbed cwd: a `{{name}}` placeholder, optionally followed by a path below it."""
_OPTIONAL_ON_READ: Final = ("version", "delegationDepth")
_MAX_SAFE: Final = 2**53 - 1


def _bad(where: str, problem: str) -> SessionError:
    return SessionError(f"session header{where}: {problem}", "SESSION_CORRUPT")


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionHeader:
    """Identity and lineage of one session."""

    id: str
    created_at: int
    """Epoch milliseconds."""
    cwd: str | None = None
    """Absolute working directory (a placeholder such as `{{cwd}}` in scrubbed fixtures)."""
    parent_session: str | None = None
    seed_length: int | None = None
    origin: Literal["subagent"] | None = None
    delegation_depth: int = 0
    """0 for a top-level session; always written."""
    agent_preset: str | None = None
    version: int = SESSION_FORMAT_VERSION
    omitted: frozenset[str] = frozenset()
    """Keys of `_OPTIONAL_ON_READ` the source line did not have; `to_json` leaves them out too."""

    @classmethod
    def new(cls, *, id: str | None = None, cwd: str | os.PathLike[str] | None = None, **kwargs: Any) -> SessionHeader:
        """A fresh header: a random id and the current time unless given."""
        if id is not None and (not isinstance(id, str) or not id):
            # `id or uuid4()` once made a random id of "" without a word
            raise UsageError(f"a session id must be a non-empty string, got {id!r} (leave it out for a random one)")
        created = kwargs.pop("created_at", None)
        return cls(
            id=str(uuid.uuid4()) if id is None else id,
            created_at=int(time.time() * 1000) if created is None else created,
            cwd=None if cwd is None else os.fspath(cwd),
            **kwargs,
        )

    def to_json(self) -> dict[str, JsonValue]:
        out: dict[str, JsonValue] = {"type": "session"}
        if "version" not in self.omitted:
            out["version"] = self.version
        out["id"] = self.id
        out["createdAt"] = self.created_at
        if self.cwd is not None:
            out["cwd"] = self.cwd
        if self.parent_session is not None:
            out["parentSession"] = self.parent_session
        if self.seed_length is not None:
            out["seedLength"] = self.seed_length
        if self.origin is not None:
            out["origin"] = self.origin
        if "delegationDepth" not in self.omitted:
            out["delegationDepth"] = self.delegation_depth
        if self.agent_preset is not None:
            out["agentPreset"] = self.agent_preset
        return out

    @classmethod
    def from_json(cls, value: JsonValue, where: str = "") -> SessionHeader:
        if not isinstance(value, Mapping) or value.get("type") != "session":
            raise _bad(where, 'the first line must be an object with "type": "session"')
        omitted = frozenset(k for k in _OPTIONAL_ON_READ if k not in value)
        version = value.get("version", SESSION_FORMAT_VERSION)
        if version != SESSION_FORMAT_VERSION:
            hint = (
                "it was written by a newer harness; upgrade dshkit to read it"
                if type(version) is int and version > SESSION_FORMAT_VERSION
                else "this harness reads only version 0"
            )
            raise SessionError(
                f"session header{where}: unsupported session format version {version!r}; {hint}",
                "SESSION_FORMAT_UNSUPPORTED",
            )
        retired = _RETIRED & set(value)
        if retired:
            raise _bad(where, f"retired fields {sorted(retired)} are no longer accepted")
        extra = set(value) - _KEYS
        if extra:
            raise _bad(where, f"unknown fields {sorted(extra)}")
        id_ = value.get("id")
        if not isinstance(id_, str) or not id_:
            raise _bad(f"{where}.id", "expected a non-empty string")
        created = value.get("createdAt")
        if type(created) is not int or not 0 <= created <= _MAX_SAFE:
            raise _bad(f"{where}.createdAt", "expected non-negative integer milliseconds")
        cwd = value.get("cwd")
        if cwd is not None and (
            not isinstance(cwd, str) or not (os.path.isabs(cwd) or _PLACEHOLDER.fullmatch(cwd))
        ):
            raise _bad(f"{where}.cwd", f"expected an absolute path, got {cwd!r}")
        # Without the key, a session with a parent is at least one level down.
        depth = value.get("delegationDepth", 0 if value.get("parentSession") is None else 1)
        if type(depth) is not int or depth < 0:
            raise _bad(f"{where}.delegationDepth", "expected a non-negative integer")
        seed_length = value.get("seedLength")
        if seed_length is not None and (type(seed_length) is not int or seed_length < 0):
            raise _bad(f"{where}.seedLength", "expected a non-negative integer")
        origin = value.get("origin")
        if origin is not None and origin != "subagent":
            raise _bad(f"{where}.origin", "only 'subagent' is allowed")
        for key in ("parentSession", "agentPreset"):
            if key in value and not isinstance(value[key], str):
                raise _bad(f"{where}.{key}", "expected a string")
        return cls(
            id=id_,
            created_at=created,
            cwd=cwd,
            parent_session=value.get("parentSession"),
            seed_length=seed_length,
            origin=origin,
            delegation_depth=depth,
            agent_preset=value.get("agentPreset"),
            omitted=omitted,
        )
