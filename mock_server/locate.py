"""Locating a validation error in the YAML a person wrote: pydantic's error location → the field
path as written (`steps[0].reply.content`) and the line it sits on. Shared by script loading here
and scenario loading in `conformance`, so both point at the same place the same way."""

from __future__ import annotations

from collections.abc import Sequence

import yaml

__all__ = ["field_path", "yaml_line_of"]


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
