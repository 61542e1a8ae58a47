"""Reading the YAML or JSON a person wrote, and locating a validation error in it: pydantic's
error location → the field path as written (`steps[0].reply.content`) and the line it sits on.
Shared by script loading here and scenario loading in `conformance`, so both read files the same
way and point at the same place the same way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import yaml

from dshkit.harness.llm import jsonio

__all__ = ["field_path", "parse_document", "yaml_line_of"]


def parse_document(text: str, *, is_json: bool, load_yaml: Callable[[str], Any] = yaml.safe_load) -> Any:
    """A script or scenario file's text as data: JSON through `jsonio.loads`, YAML through
    `load_yaml`; both refuse nesting past `jsonio.MAX_DEPTH` with `jsonio.JsonTooDeep` (YAML's
    parser and every later walk recurse). Flow-style YAML nesting (`[[[`, `{a: {b:`) is measured
    before parsing; block-style nesting, which needs a line per level, is caught if it recurses.
    Syntax errors are `json.JSONDecodeError` / `yaml.YAMLError` as usual."""
    if is_json:
        return jsonio.loads(text)
    depth = jsonio.nesting_depth(text, at_least=jsonio.MAX_DEPTH)
    if depth > jsonio.MAX_DEPTH:
        raise jsonio.too_deep("", depth, jsonio.MAX_DEPTH, text=text)
    try:
        return load_yaml(text)
    except RecursionError:
        raise jsonio.JsonTooDeep("", f"nested deeper than the limit of {jsonio.MAX_DEPTH} levels (the YAML "
                                 "parser recurses); no script or scenario nests like that: flatten it") from None


def field_path(loc: Sequence[int | str]) -> str:
    """`("steps", 0, "reply")` → `steps[0].reply`."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


def _has_key(node: yaml.MappingNode, name: str) -> bool:
    return any(isinstance(k, yaml.ScalarNode) and k.value == name for k, _ in node.value)


def yaml_line_of(
    node: yaml.Node | None, loc: Sequence[int | str], *, implicit_list: str | None = None
) -> int | None:
    """Walk a composed YAML node tree along `loc`; the 1-based line of the deepest node found.

    `implicit_list` names a key that a document may leave out when it holds a single item (a
    one-step scenario written without `steps:`): `name, 0` is then skipped where `name` is absent.
    """
    line = None
    parts = list(loc)
    while parts:
        part = parts.pop(0)
        if node is None:
            break
        line = node.start_mark.line + 1
        if (
            implicit_list is not None and part == implicit_list and parts and parts[0] == 0
            and isinstance(node, yaml.MappingNode) and not _has_key(node, implicit_list)
        ):
            parts.pop(0)
            continue
        if isinstance(node, yaml.MappingNode):
            nxt = None
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                    nxt, line = value, key.start_mark.line + 1
                    break
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            node = None
    return line if node is None else node.start_mark.line + 1
