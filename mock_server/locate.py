"""Reading the YAML or JSON a person wrote, and locating a validation error in it: pydantic's
error location → the field path as written (`steps[0].reply.content`) and the line it sits on.
Shared by script loading here and scenario loading in `conformance`, so both read files the same
way and point at the same place the same way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from dshkit.harness.llm import jsonio

if TYPE_CHECKING:
    import yaml  # imported on first use: `dshkit serve` without a script file never parses YAML

__all__ = ["MAX_EXPANDED", "field_path", "load_yaml", "parse_document", "yaml_line_of"]


MAX_EXPANDED = 1_000_000
"""Most values a YAML document may hold once its aliases are expanded. An alias is a reference
to an anchored value, so nine aliases to a list of nine aliases to ... ("a billion laughs") is a
few lines that every later walk (validation, rendering a reply) would expand to millions of
values; no script or scenario is anywhere near this size."""

_UNSET: Any = object()
_FAST_LOADER: Any = _UNSET
"""libyaml's safe loader when PyYAML was built with it (about 4x faster than the pure-Python
one), else None; either way the loader is safe (plain data, no tags that run code). Looked up
on the first YAML parse, which is when PyYAML is first imported."""


def load_yaml(text: str) -> tuple[Any, yaml.Node | None]:
    """The data of a YAML document and its composed node tree (for line numbers), in one parse.

    Through libyaml when available. libyaml words some syntax errors differently and places
    some a line later, so a text it refuses is parsed again by the pure-Python loader, whose
    error (message and line) is the one raised: a bad file is located the same either way.
    A document whose aliases expand past :data:`MAX_EXPANDED` values is refused
    (`jsonio.JsonTooDeep`, code `YAML_TOO_LARGE`) before its data is built."""
    global _FAST_LOADER
    import yaml

    if _FAST_LOADER is _UNSET:
        _FAST_LOADER = getattr(yaml, "CSafeLoader", None)
    loaders = [yaml.SafeLoader] if _FAST_LOADER is None else [_FAST_LOADER, yaml.SafeLoader]
    for n, loader_cls in enumerate(loaders):
        loader = loader_cls(text)
        try:
            node = loader.get_single_node()
            if node is not None and ("&" in text or "<<" in text):
                _check_expansion(node)
            return (loader.construct_document(node) if node is not None else None), node
        except yaml.YAMLError:
            if n == len(loaders) - 1:
                raise
        finally:
            loader.dispose()
    raise AssertionError("unreachable")  # pragma: no cover


def _check_expansion(root: yaml.Node) -> None:
    """Refuse a node graph that expands past MAX_EXPANDED values. Aliases share node objects, so
    each node's expanded size is counted once (memoised by identity), children before parents."""
    import yaml

    size: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in size:
            continue
        kids: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            kids = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            kids = [n for pair in node.value for n in pair]
        if not children_done:
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in size)
            continue
        total = 1 + sum(size.get(id(k), 0) for k in kids)
        if total > MAX_EXPANDED:
            raise jsonio.JsonTooDeep(
                "", f"its aliases expand to more than {MAX_EXPANDED:,} values (from the value at line "
                f"{node.start_mark.line + 1}); write the values out, or anchor fewer copies of copies",
                code="YAML_TOO_LARGE", line=node.start_mark.line + 1)
        size[id(node)] = total


def _safe_load(text: str) -> Any:
    import yaml

    return yaml.safe_load(text)


def parse_document(text: str, *, is_json: bool, load_yaml: Callable[[str], Any] = _safe_load) -> Any:
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
    import yaml

    return any(isinstance(k, yaml.ScalarNode) and k.value == name for k, _ in node.value)


def yaml_line_of(
    node: yaml.Node | None, loc: Sequence[int | str], *, implicit_list: str | None = None
) -> int | None:
    """Walk a composed YAML node tree along `loc`; the 1-based line of the deepest node found.

    `implicit_list` names a key that a document may leave out when it holds a single item (a
    one-step scenario written without `steps:`): `name, 0` is then skipped where `name` is absent.
    """
    import yaml

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
                    nxt = value
                    break
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            node = None
    return line if node is None else node.start_mark.line + 1
