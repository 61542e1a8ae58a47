"""Lossless JSON: the check and deep-frozen copy every event's data goes through on append.

In the seed's walk, whatever the model will see is first written to the Session; this module is
the gate of that write. Event data must be plain JSON that survives a round trip unchanged
(dsh-core.md §1.1, trap 27): `None`, `bool`, finite numbers other than `-0.0`, `str`, `list`
and `dict` with string keys. The accepted value is copied into `FrozenDict`/`FrozenList`, which
compare equal to (and serialize like) plain dicts and lists but refuse mutation, so no caller
can change the log behind its back.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NoReturn, SupportsIndex

from dshkit.harness.llm.errors import JsonShapeError

__all__ = ["FrozenDict", "FrozenList", "JsonValue", "LosslessJsonError", "freeze_json", "thaw_json"]

JsonValue = Any
"""A plain JSON value (kept as `Any`: recursive aliases cost more than they give here)."""


LosslessJsonError = JsonShapeError
"""The session's name for :class:`JsonShapeError` (kept so existing imports and `except`s work)."""


def _refuse(*_: Any, **__: Any) -> NoReturn:
    raise TypeError("session event data is frozen; copy it with thaw_json() to change it")


class FrozenDict(dict[str, Any]):
    """A JSON object that refuses mutation; equal to the plain dict with the same items."""

    __slots__ = ()
    __setitem__ = __delitem__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __ior__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        _refuse()

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: Any) -> FrozenDict:
        return self


class FrozenList(list[Any]):
    """A JSON array that refuses mutation; equal to the plain list with the same items."""

    __slots__ = ()
    __setitem__ = __delitem__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __iadd__(self, other: Iterable[Any]) -> NoReturn:  # type: ignore[misc]
        _refuse()

    def __imul__(self, other: SupportsIndex) -> NoReturn:
        _refuse()

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: Any) -> FrozenList:
        return self


def freeze_json(value: Any, path: str = "data") -> JsonValue:
    """Check that `value` is lossless JSON and return a deep-frozen copy of it.

    Raises `LosslessJsonError` naming the first offending path. Already-frozen containers are
    returned as they are (they were checked when they were made).

    Almost every value is good, so the first walk spells no paths and tracks no cycles; only a
    value it refuses (or one so deep, or cyclic, that it runs out of stack) is walked again, the
    slow way, to name the offending path.
    """
    try:
        return _freeze_good(value)
    except (_Refused, RecursionError):
        pass
    try:
        return _freeze(value, path, set())
    except RecursionError:
        # not a cycle (the slow walk names those): nested deeper than a walk can go, so no JSON
        # reader could take it back either
        raise LosslessJsonError(path, "nested too deep to walk (no JSON reader could read it back)") from None


class _Refused(Exception):
    """Raised by the quick walk: the value is not lossless JSON somewhere (the slow walk says where)."""


def _freeze_good(value: Any) -> JsonValue:
    """`_freeze` for a good value, without paths or a cycle check: a cycle recurses until
    RecursionError, which sends `freeze_json` to the slow walk as well."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict:
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _Refused
            out[key] = _freeze_good(item)
        return FrozenDict(out)
    if kind is list:
        return FrozenList([_freeze_good(item) for item in value])
    if kind is float:
        if not math.isfinite(value) or (value == 0.0 and math.copysign(1.0, value) < 0):
            raise _Refused
        return value
    if kind is FrozenDict or kind is FrozenList:
        return value
    # Enum members of str/int (e.g. ErrorCode) carry a plain JSON value; keep only that value.
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__index__(value)
    raise _Refused


def _freeze(value: Any, path: str, active: set[int]) -> JsonValue:
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        return value
    if kind is float:
        if not math.isfinite(value):
            raise LosslessJsonError(path, f"{value!r} is not a finite JSON number")
        if value == 0.0 and math.copysign(1.0, value) < 0:
            raise LosslessJsonError(path, "-0 does not survive a JSON round trip; use 0")
        return value
    if kind is FrozenDict or kind is FrozenList:
        return value
    if kind is dict:
        if id(value) in active:
            raise LosslessJsonError(path, "the value contains itself (a cycle)")
        active.add(id(value))
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                raise LosslessJsonError(path, f"object key {key!r} is not a string")
            out[key] = _freeze(item, f"{path}.{key}", active)
        active.discard(id(value))
        return FrozenDict(out)
    if kind is list:
        if id(value) in active:
            raise LosslessJsonError(path, "the value contains itself (a cycle)")
        active.add(id(value))
        items = [_freeze(item, f"{path}[{i}]", active) for i, item in enumerate(value)]
        active.discard(id(value))
        return FrozenList(items)
    # Enum members of str/int (e.g. ErrorCode) carry a plain JSON value; keep only that value.
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int.__index__(value)
    raise LosslessJsonError(
        path, f"{kind.__name__} is not plain JSON (use dict, list, str, int, float, bool or None)"
    )


def thaw_json(value: JsonValue) -> Any:
    """A mutable deep copy of frozen JSON (plain dicts and lists)."""
    if isinstance(value, dict):
        return {k: thaw_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [thaw_json(v) for v in value]
    return value
