"""docs/api.md lists every field of `GenerateOptions` and of the message, block and tool-schema
types, with its type and default, as the dataclasses declare them."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

from dshkit.harness import llm
from dshkit.harness.llm.messages import ContentBlock

API_DOC = Path(__file__).resolve().parent.parent / "docs" / "api.md"
TYPES = [llm.GenerateOptions, *typing.get_args(llm.Message), *typing.get_args(ContentBlock), llm.ToolSchema]
FIELD_ROW = re.compile(r"^\| `(\w+)\.(\w+)` \| `(.+?)` \| (.+?) \| (.+) \|$")


def _default(f: dataclasses.Field[typing.Any]) -> str:
    if f.default is not dataclasses.MISSING:
        return f"`{f.default!r}`"
    if f.default_factory is not dataclasses.MISSING:
        return f"`{f.default_factory.__name__}()`"  # type: ignore[attr-defined]
    return "required"


def _documented() -> dict[str, list[tuple[str, str, str]]]:
    out: dict[str, list[tuple[str, str, str]]] = {}
    for line in API_DOC.read_text(encoding="utf-8").splitlines():
        if m := FIELD_ROW.match(line):
            out.setdefault(m[1], []).append((m[2], m[3].replace("\\|", "|"), m[4]))
    return out


def test_every_field_is_documented_with_its_type_and_default() -> None:
    documented = _documented()
    for cls in TYPES:
        declared = [(f.name, str(f.type), _default(f)) for f in dataclasses.fields(cls)]
        assert documented.get(cls.__name__) == declared, f"docs/api.md: the fields of {cls.__name__}"
    assert set(documented) == {c.__name__ for c in TYPES}


def test_what_the_adapter_guide_recommends_is_in_the_api_reference() -> None:
    text = API_DOC.read_text(encoding="utf-8")
    for name in ("HttpAdapter", "HttpWire", "run_stream", "StreamState", "BlockAssembler", "GenerateOptions"):
        assert f"| `{name}` |" in text, name
