"""`fast_init` against the dataclass's own `__init__`: the same objects, the same errors.

The classes every request builds (the validated request, its view, the router's decision, the
call, the rendering and the responder) get their `__init__` from :func:`fast_init`; each keeps
the parameters `dataclasses` gives it and stays frozen. A twin pair of classes, one with the
generated `__init__` and one with `fast_init`'s, is called with the same arguments (hypothesis
draws which to pass, and some that are wrong) and must agree on the result or the TypeError.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshkit.mock_server.frozen import fast_init
from dshkit.mock_server.output import Rendering
from dshkit.mock_server.respond import Responder
from dshkit.mock_server.routing import Decision, RequestView
from dshkit.mock_server.surface import Call
from dshkit.mock_server.validation import ChatRequest


@dataclass(frozen=True, slots=True)
class _Plain:
    a: int
    b: str
    c: int = 3
    d: list[int] = field(default_factory=list)
    e: str = field(default="e", kw_only=True)
    f: tuple[int, ...] = field(default=(), kw_only=True)
    g: int = field(kw_only=True, default_factory=lambda: 7)


@dataclass(frozen=True, slots=True)
class _Fast:
    a: int
    b: str
    c: int = 3
    d: list[int] = field(default_factory=list)
    e: str = field(default="e", kw_only=True)
    f: tuple[int, ...] = field(default=(), kw_only=True)
    g: int = field(kw_only=True, default_factory=lambda: 7)


fast_init(_Fast)

_NAMES = ["a", "b", "c", "d", "e", "f", "g", "h"]  # `h` is no field


def _outcome(cls: type[Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    try:
        made = cls(*args, **kwargs)
    except TypeError as e:
        # The wording names the function (`_Plain.__init__()`/`__init__()`): compare the rest.
        return ("TypeError", str(e).split("() ", 1)[-1])
    return {f.name: getattr(made, f.name) for f in dataclasses.fields(made)}


@given(args=st.lists(st.integers(), max_size=5),
       kwargs=st.dictionaries(st.sampled_from(_NAMES), st.integers(), max_size=5))
def test_fast_init_takes_and_refuses_what_the_generated_init_does(args: list[Any], kwargs: dict[str, Any]) -> None:
    assert _outcome(_Fast, args, kwargs) == _outcome(_Plain, args, kwargs)


def test_the_instances_stay_frozen_and_factories_give_each_its_own() -> None:
    one, two = _Fast(1, "x"), _Fast(1, "x")
    assert one == two and repr(one) == repr(_Plain(1, "x")).replace("_Plain", "_Fast")
    assert one.d == [] and one.d is not two.d and one.g == 7
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.a = 2  # type: ignore[misc]
    assert dataclasses.replace(one, c=9, e="z") == _Fast(1, "x", 9, e="z")


def test_fast_init_refuses_what_it_cannot_reproduce() -> None:
    @dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclass(slots=True)
    class NotFrozen:
        a: int

    @dataclass(frozen=True, slots=True)
    class PostInit:
        a: int

        def __post_init__(self) -> None:
            pass

    for cls in (NoSlots, NotFrozen, PostInit):
        with pytest.raises(TypeError):
            fast_init(cls)


@pytest.mark.parametrize("cls", [ChatRequest, RequestView, Decision, Call, Rendering, Responder])
def test_the_request_classes_keep_their_dataclass_parameters(cls: type[Any]) -> None:
    """Each class's `__init__` takes the parameters its fields say, in their order and kind,
    with their defaults; built from an instance's own values it gives an equal instance."""
    params = list(inspect.signature(cls).parameters.values())
    fields = dataclasses.fields(cls)
    assert [p.name for p in params] == [f.name for f in fields if not f.kw_only] + [f.name for f in fields if f.kw_only]
    for f in fields:
        p = next(p for p in params if p.name == f.name)
        assert p.kind == (inspect.Parameter.KEYWORD_ONLY if f.kw_only else inspect.Parameter.POSITIONAL_OR_KEYWORD)
        if f.default is not dataclasses.MISSING:
            assert p.default is f.default
        elif f.default_factory is dataclasses.MISSING:
            assert p.default is inspect.Parameter.empty
    values = {f.name: object() for f in fields}
    made = cls(**values)
    assert all(getattr(made, name) is value for name, value in values.items())
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, fields[0].name, None)
