"""Override sidecars: `replay.override.json`, what a log cannot say about its calls (§2.6).

A call that threw before its first chunk (`throw`) or that the client cancelled while it hung
(`hang`) leaves no finish in the log; upstream's replay driver reads such calls from a sidecar
beside the log. A bare list replaces the derived script; `{"patches": [{"at", "entry"}]}`
swaps or appends single calls. Keys are checked exactly, every chunk is decoded, and a `hang`'s
`readyFile` must name a file inside the replay's workspace: a sidecar is untrusted input, and
the marker it asks for is created there (`ready_path` resolves it and refuses what escapes).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, get_args

from dshkit.harness.llm.codec import chunk_from_json

from .entries import ReplayEntry, ReplayError, ReplayKind

__all__ = ["entry_from_json", "parse_override", "ready_path"]

_CHUNK_TYPES = frozenset(
    {"block-start", "text-delta", "reasoning-delta", "tool-call-delta", "block-end", "usage", "finish"}
)
_ENTRY_KEYS: dict[ReplayKind, tuple[frozenset[str], ...]] = {
    "chunks": (frozenset({"kind", "chunks"}),),
    "throw": (frozenset({"kind", "chunks", "message", "code"}),),
    "hang": (frozenset({"kind"}), frozenset({"kind", "readyFile"})),
}
"""The exact key sets a sidecar entry of each kind may have (§2.6)."""


def _ready_problem(ready: str) -> str | None:
    """Why `ready` cannot be a marker file inside the workspace, or None when it can."""
    if not ready or "\0" in ready:
        return "is empty or holds a NUL character"
    try:
        os.fsencode(ready)
    except UnicodeEncodeError:  # a lone surrogate (`"\ud800"`): no file name on this system
        return "holds a character no file name can (a lone surrogate)"
    windows = PureWindowsPath(ready)
    if PurePosixPath(ready).is_absolute() or windows.is_absolute() or windows.drive or windows.root:
        return "is an absolute path"
    if ".." in PurePosixPath(ready.replace("\\", "/")).parts:
        return "climbs out with '..'"
    return None


def ready_path(ready: str, base: Path, *, where: str = "readyFile") -> Path:
    """Where the marker `ready` goes under `base` (the workspace or the log's folder), resolved
    through symbolic links; a path that ends up outside `base` is refused."""
    problem = _ready_problem(ready)
    root = base.resolve()
    target = (root / ready).resolve()
    if problem is None and not target.is_relative_to(root):
        problem = f"resolves to {target}, outside {root} (through a symbolic link)"
    if problem is not None:
        raise ReplayError(
            f"{where}: {ready!r} {problem}; a hang's readyFile must be a relative path inside "
            "the replay's workspace (such as `.dsh-snapshot-stream-ready`)"
        )
    return target


def entry_from_json(value: Any, where: str) -> ReplayEntry:
    """One sidecar entry, checked: exact keys, decodable chunks, a non-empty `throw` message
    and code, a `readyFile` that stays inside the workspace."""
    if not isinstance(value, Mapping):
        raise ReplayError(f"{where}: an entry must be an object with `kind`")
    kind: Any = value.get("kind")
    if kind not in get_args(ReplayKind):  # a tuple: a JSON list or object as `kind` is unhashable
        raise ReplayError(f"{where}.kind: expected chunks, throw or hang, got {kind!r}")
    if frozenset(value) not in _ENTRY_KEYS[kind]:
        shapes = " or ".join(str(sorted(s)) for s in _ENTRY_KEYS[kind])
        raise ReplayError(f"{where}: a {kind} entry has exactly the keys {shapes}, got {sorted(value)}")
    chunks = value.get("chunks", [])
    if not isinstance(chunks, list):
        raise ReplayError(f"{where}.chunks: expected a list of StreamChunk objects")
    for i, chunk in enumerate(chunks):
        if not isinstance(chunk, Mapping) or chunk.get("type") not in _CHUNK_TYPES:
            raise ReplayError(f"{where}.chunks[{i}]: not a StreamChunk (type must be one of {sorted(_CHUNK_TYPES)})")
        try:
            chunk_from_json(dict(chunk), f"{where}.chunks[{i}]")
        except ValueError as exc:
            raise ReplayError(str(exc)) from None
    if kind == "throw":
        for k in ("message", "code"):
            if not isinstance(value[k], str) or not value[k]:
                raise ReplayError(f"{where}.{k}: expected a non-empty string")
    ready = value.get("readyFile")
    if ready is not None:
        if not isinstance(ready, str):
            raise ReplayError(f"{where}.readyFile: expected a string")
        problem = _ready_problem(ready)
        if problem is not None:
            raise ReplayError(
                f"{where}.readyFile: {ready!r} {problem}; a hang's readyFile must be a relative "
                "path inside the replay's workspace (such as `.dsh-snapshot-stream-ready`)"
            )
    return ReplayEntry(
        kind=kind,  # checked against `_ENTRY_KEYS` above
        chunks=tuple(dict(c) for c in chunks),
        message=value.get("message"),
        code=value.get("code"),
        ready_file=ready,
        where=where,
    )


def parse_override(doc: Any, derived: Sequence[ReplayEntry] | None, *, source: str = "replay.override.json") -> list[ReplayEntry]:
    """Apply a sidecar (§2.6): a bare list replaces the script; `{patches: [{at, entry}]}` swaps
    call `at` of the derived script, or appends one call when `at` equals its length."""
    if isinstance(doc, list):
        return [entry_from_json(e, f"{source}[{i}]") for i, e in enumerate(doc)]
    if not isinstance(doc, Mapping) or set(doc) != {"patches"} or not isinstance(doc["patches"], list):
        raise ReplayError(f"{source}: expected a list of entries or {{\"patches\": [{{\"at\", \"entry\"}}]}}")
    base = list(derived or ())
    n = len(base)
    seen: set[int] = set()
    for i, patch in enumerate(doc["patches"]):
        where = f"{source}.patches[{i}]"
        if not isinstance(patch, Mapping) or set(patch) != {"at", "entry"}:
            raise ReplayError(f"{where}: a patch has exactly the keys `at` and `entry`")
        at = patch["at"]
        if type(at) is not int or at < 0:
            raise ReplayError(f"{where}.at: expected a non-negative integer, got {at!r}")
        if at in seen:
            raise ReplayError(f"{where}.at: call {at} is patched twice")
        if at > n:
            raise ReplayError(f"{where}.at: {at} is out of range; the derived script has {n} call(s) (at == {n} appends)")
        seen.add(at)
        entry = entry_from_json(patch["entry"], f"{where}.entry")
        if at == n:
            base.append(entry)
        else:
            base[at] = entry
    return base
