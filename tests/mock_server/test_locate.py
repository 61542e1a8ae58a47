"""Reading the YAML or JSON a person wrote and locating an error in it, `dshkit.mock_server.locate`:
a field path as written, the line a path sits on (a missing field at the mapping it belongs in, a
one-item list left implicit), syntax errors worded and placed as PyYAML's pure-Python loader does
whichever loader parsed, and documents whose aliases or nesting would explode refused up front.
"""

from __future__ import annotations

import json

import pytest
import yaml

from dshkit.harness.llm import jsonio
from dshkit.mock_server.locate import (
    MAX_EXPANDED,
    field_path,
    load_yaml,
    parse_document,
    yaml_line_of,
)

SCRIPT = """\
name: demo
steps:
  - reply:
      content: hi
  - reply:
      content:
        - not
        - a string
"""
ONE_STEP = """\
name: demo
reply:
  content: 3
"""


@pytest.mark.parametrize(("loc", "line"), [
    (("steps", 1, "reply", "content"), 7),  # the value's own line: the list under `content:`
    (("steps", 0, "reply", "content"), 4),
    (("steps", 0, "reply", "tool_calls"), 4),  # missing: the mapping it belongs in
    (("steps", 9), 3),  # no such item: the list
    (("model",), 1),
])
def test_a_path_is_located_on_the_line_it_sits_on(loc: tuple[int | str, ...], line: int) -> None:
    data, node = load_yaml(SCRIPT)
    assert data == yaml.safe_load(SCRIPT)
    assert yaml_line_of(node, loc) == line


def test_a_one_item_list_left_out_is_walked_past_only_when_asked() -> None:
    _, node = load_yaml(ONE_STEP)
    loc = ("steps", 0, "reply", "content")
    assert field_path(loc) == "steps[0].reply.content"
    assert yaml_line_of(node, loc, implicit_list="steps") == 3
    assert yaml_line_of(node, loc) == 1  # no `steps:`: only the document itself
    _, node = load_yaml(SCRIPT)  # written out, the list is walked as usual
    assert yaml_line_of(node, loc, implicit_list="steps") == 4


@pytest.mark.parametrize("text", ["a: b: c\n", "a: [1, 2\nb: 3\n", "- a\nb: 1\n"])
def test_a_syntax_error_reads_as_the_pure_python_loader_words_it(text: str) -> None:
    with pytest.raises(yaml.YAMLError) as pure:
        yaml.load(text, Loader=yaml.SafeLoader)
    with pytest.raises(yaml.YAMLError) as ours:
        load_yaml(text)
    assert str(ours.value) == str(pure.value)


def test_aliases_that_expand_past_the_limit_are_refused_and_others_expanded() -> None:
    # nine copies of nine copies ...: seven levels are 9**7 (4.8 million) values in a few lines
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, 7)]
    assert 9 ** 7 > MAX_EXPANDED > 9 ** 6
    with pytest.raises(jsonio.JsonTooDeep, match="aliases expand to more than 1,000,000 values") as info:
        load_yaml("\n".join(lines) + "\n")
    assert info.value.code == "YAML_TOO_LARGE" and info.value.line == 7
    data, _ = load_yaml("\n".join(lines[:6]) + "\nbase: &b {x: 1}\nmerged: {<<: *b, y: 2}\n")  # 9**6 is fine
    assert len(data["l5"]) == 9 and data["l5"][0][0][0][0][0] == ["x"] * 9
    assert data["merged"] == {"x": 1, "y": 2}


def test_nesting_past_the_limit_is_refused_in_either_form() -> None:
    for levels in (jsonio.MAX_DEPTH + 1, 100_000):  # just past the limit; deep enough to sink a recursive parser
        text = f'{{"x": {"[" * levels}{"]" * levels}}}'
        for is_json in (True, False):  # measured before any parse, so the error names the depth
            with pytest.raises(jsonio.JsonTooDeep, match=f"^nested {levels + 1} levels deep, past the limit"):
                parse_document(text, is_json=is_json, load_yaml=lambda t: load_yaml(t)[0])
    at_limit: list[object] = []
    for _ in range(jsonio.MAX_DEPTH - 1):
        at_limit = [at_limit]
    flow = "x: " + json.dumps(at_limit)
    assert parse_document(flow, is_json=False, load_yaml=lambda t: load_yaml(t)[0]) == {"x": at_limit}
    assert parse_document(json.dumps({"a": [1, 2]}), is_json=True) == {"a": [1, 2]}
