"""Packed chunk rows: the compact on-disk form of runs of `assistant/chunk` deltas.

In the seed's walk every stream chunk is logged as its own `assistant/chunk` event; on disk DSH
folds a run of ≥3 deltas of one block into a single row (`text-chunks`, `reasoning-chunks`,
`tool-call-chunks`) keeping each fragment and its timing (dsh-core.md §1.11, dsh-testing.md
§2.2). This module is the codec in both directions, on plain JSON dicts, and the envelope
synthesis for projected logs that omit `seq`/`time` (dsh-testing.md §2.3). It imports nothing
but the standard library and `dshkit.harness.llm`, so the mock server can use it to replay logs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import pairwise
from typing import Any, Final

from dshkit.harness.llm.errors import SessionError

__all__ = [
    "CHUNK_ROW_TYPES",
    "MIN_PACKED_RUN",
    "is_chunk_row",
    "pack_events",
    "unpack_line",
    "unpack_row",
    "unpack_rows",
]

Json = Any

CHUNK_ROW_TYPES: Final = {
    "text-chunks": "text-delta",
    "reasoning-chunks": "reasoning-delta",
    "tool-call-chunks": "tool-call-delta",
}
"""Row tag → the delta type of its members. Tags have no slash, so no event type collides."""

_ROW_OF: Final = {delta: tag for tag, delta in CHUNK_ROW_TYPES.items()}
MIN_PACKED_RUN: Final = 3
_MAX_SAFE: Final = 2**53 - 1


def _bad(where: str, problem: str) -> SessionError:
    return SessionError(f"{where}: malformed packed chunk row: {problem}", "SESSION_CORRUPT")


def is_chunk_row(value: Json) -> bool:
    """Whether a decoded JSONL line is a packed chunk row rather than an event."""
    if not isinstance(value, Mapping):
        return False
    kind = value.get("type")
    return isinstance(kind, str) and kind in CHUNK_ROW_TYPES  # a hand-edited `type` may be a list


def _is_int(value: Json) -> bool:
    return type(value) is int and -_MAX_SAFE <= value <= _MAX_SAFE


def unpack_row(
    row: Mapping[str, Json], *, seq0: int | None = None, time0: int | None = None, where: str = "row"
) -> list[dict[str, Json]]:
    """Expand one row into its `assistant/chunk` events (strict: exact keys and arity).

    A projected row has no `seq0`/`time0`; pass the synthesized `seq0` (and `time0`, default 0).
    """
    tag = row.get("type")
    delta = CHUNK_ROW_TYPES.get(tag) if isinstance(tag, str) else None
    if delta is None:
        raise _bad(where, f"unknown row type {tag!r}")
    keys = set(row)
    if keys == {"type", "seq0", "time0", "data"}:
        seq0, time0 = row["seq0"], row["time0"]
    elif keys == {"type", "data"}:
        if seq0 is None:
            raise _bad(where, "a projected row needs a synthesized seq0")
        time0 = 0 if time0 is None else time0
    else:
        raise _bad(where, f"keys must be type, seq0, time0, data; got {sorted(keys)}")
    if not (_is_int(seq0) and seq0 is not None and seq0 >= 0):
        raise _bad(where, "seq0 must be a non-negative integer")
    if not _is_int(time0):
        raise _bad(where, "time0 must be an integer")
    data = row["data"]
    if not isinstance(data, Mapping):
        raise _bad(where, "data must be an object")
    is_tool = delta == "tool-call-delta"
    parts_key = "args" if is_tool else "texts"
    expected = {"turn", "step", "index", "dt", parts_key} | ({"id"} if is_tool else set())
    allowed = expected | ({"name"} if is_tool else set())
    if not expected <= set(data) <= allowed:
        raise _bad(where, f"data keys must be {sorted(expected)} (+ name for tool calls); got {sorted(data)}")
    for key in ("turn", "step", "index"):
        if not (_is_int(data[key]) and data[key] >= 0):
            raise _bad(where, f"data.{key} must be a non-negative integer")
    parts, dt = data[parts_key], data["dt"]
    if not isinstance(parts, list) or not parts or not all(isinstance(p, str) for p in parts):
        raise _bad(where, f"data.{parts_key} must be a non-empty list of strings")
    if not isinstance(dt, list) or len(dt) != len(parts) - 1 or not all(_is_int(d) for d in dt):
        raise _bad(where, f"data.dt must hold {len(parts) - 1} integer gaps")
    if is_tool:
        if not isinstance(data["id"], str):
            raise _bad(where, "data.id must be a string")
        if "name" in data and not isinstance(data["name"], str):
            raise _bad(where, "data.name must be a string")
    turn, step, index = data["turn"], data["step"], data["index"]
    out: list[dict[str, Json]] = []
    t = time0
    for k, part in enumerate(parts):
        if k:
            t += dt[k - 1]
        if not _is_int(t) or seq0 + k > _MAX_SAFE:
            raise _bad(where, "reconstructed time or seq leaves the safe-integer range")
        if is_tool:
            chunk: dict[str, Json] = {"type": delta, "index": index, "id": data["id"]}
            if "name" in data:
                chunk["name"] = data["name"]
            chunk["argumentsDelta"] = part
        else:
            chunk = {"type": delta, "index": index, "text": part}
        out.append(
            {"type": "assistant/chunk", "seq": seq0 + k, "time": t,
             "data": {"turn": turn, "step": step, "chunk": chunk}}
        )
    return out


def unpack_line(row: Mapping[str, Json], *, next_seq: int, where: str = "row") -> list[dict[str, Json]]:
    """One decoded body line as enveloped events: a packed row expanded, an event passed on.

    The projected fixture form has no `seq`/`seq0`: it gets `next_seq` (contiguous from the
    previous line) and time 0. Envelopes that are present are kept (a `Session` checks them).
    """
    if is_chunk_row(row):
        return unpack_row(row, seq0=None if "seq0" in row else next_seq, where=where)
    event = dict(row)
    event.setdefault("seq", next_seq)
    event.setdefault("time", 0)
    return [event]


def unpack_rows(rows: Iterable[Mapping[str, Json]], *, first_seq: int = 0) -> Iterator[dict[str, Json]]:
    """Decode body lines into enveloped events, expanding packed rows (see `unpack_line`)."""
    next_seq = first_seq
    for i, row in enumerate(rows):
        members = unpack_line(row, next_seq=next_seq, where=f"row {i}")
        last = members[-1]["seq"]
        next_seq = last + 1 if type(last) is int else next_seq + len(members)
        yield from members


def _packable(event: Mapping[str, Json]) -> tuple[str, tuple[Json, ...]] | None:
    """The run key of an event a row may hold, or None (exact whitelisted shape only)."""
    if event.get("type") != "assistant/chunk" or set(event) != {"type", "seq", "time", "data"}:
        return None
    if not (_is_int(event["seq"]) and _is_int(event["time"])):
        return None
    data = event["data"]
    if not isinstance(data, Mapping) or set(data) != {"turn", "step", "chunk"}:
        return None
    chunk = data["chunk"]
    if not isinstance(chunk, Mapping):
        return None
    kind = chunk.get("type")
    if kind in ("text-delta", "reasoning-delta"):
        if set(chunk) != {"type", "index", "text"} or not isinstance(chunk["text"], str):
            return None
        extra: tuple[Json, ...] = ()
    elif kind == "tool-call-delta":
        keys = set(chunk)
        if keys not in ({"type", "index", "id", "argumentsDelta"}, {"type", "index", "id", "name", "argumentsDelta"}):
            return None
        if not isinstance(chunk["id"], str) or not isinstance(chunk["argumentsDelta"], str):
            return None
        if "name" in chunk and not isinstance(chunk["name"], str):
            return None
        extra = (chunk["id"], "name" in chunk, chunk.get("name"))
    else:
        return None
    if not all(_is_int(data[k]) and data[k] >= 0 for k in ("turn", "step")):
        return None
    if not (_is_int(chunk["index"]) and chunk["index"] >= 0):
        return None
    return kind, (data["turn"], data["step"], chunk["index"], *extra)


def _row(run: list[Mapping[str, Json]], kind: str) -> dict[str, Json]:
    first = run[0]
    data0, chunk0 = first["data"], first["data"]["chunk"]
    dt = [b["time"] - a["time"] for a, b in pairwise(run)]
    data: dict[str, Json] = {"turn": data0["turn"], "step": data0["step"], "index": chunk0["index"]}
    if kind == "tool-call-delta":
        data["id"] = chunk0["id"]
        if "name" in chunk0:
            data["name"] = chunk0["name"]
        data["dt"] = dt
        data["args"] = [e["data"]["chunk"]["argumentsDelta"] for e in run]
    else:
        data["dt"] = dt
        data["texts"] = [e["data"]["chunk"]["text"] for e in run]
    return {"type": _ROW_OF[kind], "seq0": first["seq"], "time0": first["time"], "data": data}


def pack_events(events: Iterable[Mapping[str, Json]]) -> list[dict[str, Json]]:
    """Encode enveloped events for disk: runs of ≥3 packable deltas become rows, the rest stays."""
    out: list[dict[str, Json]] = []
    run: list[Mapping[str, Json]] = []
    run_key: tuple[str, tuple[Json, ...]] | None = None

    def flush() -> None:
        if run_key is not None and len(run) >= MIN_PACKED_RUN:
            out.append(_row(run, run_key[0]))
        else:
            out.extend(dict(e) for e in run)
        run.clear()

    for event in events:
        key = _packable(event)
        if key is not None and key == run_key and event["seq"] == run[-1]["seq"] + 1:
            run.append(event)
            continue
        flush()
        run_key = key
        if key is not None:
            run.append(event)
        else:
            out.append(dict(event))
    flush()
    return out
