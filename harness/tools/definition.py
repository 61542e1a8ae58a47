"""`define_tool`: a tool's schema, its validated handler, and how its value becomes content.

In the seed's walk the model sees a tool only as `{name, description, parameters}`; when it calls
the tool, the arguments are checked against that exact schema (jsonschema) before the handler
runs, and an invalid call becomes an `INVALID_ARGS` result the model can read and correct
(dsh-core.md §4.1). Parameters are a pydantic model (the handler then receives an instance) or a
JSON Schema dict (the handler receives a dict). The handler's value is checked against an optional
output schema and rendered to content blocks.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard

from dshkit.harness.llm import TextBlock, ToolSchema
from dshkit.harness.llm.errors import ToolArgsError, ToolError, UsageError
from dshkit.harness.llm.messages import ContentBlock
from dshkit.harness.session.lossless import LosslessJsonError, freeze_json, thaw_json

from .results import INVALID_TOOL_OUTPUT

if TYPE_CHECKING:
    import jsonschema
    from pydantic import BaseModel

    from .runtime import ToolCall

__all__ = ["ToolDefinition", "argument_violations", "define_tool", "to_content"]

Handler = Callable[..., Any]
Render = Callable[[Any, Any], "str | Sequence[ContentBlock]"]
FinalizeContent = Callable[["ToolCall", "tuple[ContentBlock, ...]"], "Sequence[ContentBlock] | None"]

_TYPE_WORDS = {
    "object": "an object", "array": "an array", "string": "a string", "number": "a number",
    "integer": "an integer", "boolean": "a boolean", "null": "null",
}


def _label(path: Sequence[Any], root: str) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or root


def argument_violations(validator: jsonschema.protocols.Validator, value: Any, root: str = "arguments") -> list[str]:
    """Readable violations of `value` against a schema, DSH-style (`missing required property "a.b"`)."""
    out: list[str] = []
    for error in sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path]):
        where = _label(list(error.absolute_path), root)
        kind = error.validator
        if kind == "required":
            missing = error.message.split("'")[1] if "'" in error.message else error.message
            full = missing if where == root else f"{where}.{missing}"
            out.append(f'missing required property "{full}"')
        elif kind == "type":
            expected: Any = error.validator_value
            words = (
                _TYPE_WORDS.get(expected, expected) if isinstance(expected, str)
                else " or ".join(_TYPE_WORDS.get(t, t) for t in expected)
            )
            out.append(f'"{where}" must be {words}')
        elif kind == "enum":
            out.append(f'"{where}" must be one of {json.dumps(error.validator_value)}')
        elif kind == "const":
            out.append(f'"{where}" must be {json.dumps(error.validator_value)}')
        elif kind == "additionalProperties":
            schema: Any = error.schema
            instance: Any = error.instance
            extras = [k for k in instance if k not in (schema.get("properties") or {})]
            for key in extras:
                out.append(f'"{key}" is not a declared property (additionalProperties: false)')
        else:
            out.append(f'"{where}": {error.message}')
    return out


def _is_blocks(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(
        hasattr(b, "type") and not isinstance(b, dict) for b in value
    )


def to_content(value: Any) -> tuple[ContentBlock, ...]:
    """Default rendering: a string is one text block, blocks stay, other JSON is dumped."""
    if isinstance(value, str):
        return (TextBlock(text=value),)
    if _is_blocks(value):
        return tuple(value)
    return (TextBlock(text=json.dumps(value, ensure_ascii=False)),)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDefinition:
    """A registered tool. Only `schema` is ever sent to the model."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    """The exact JSON Schema sent to the model and used to validate arguments."""
    handler: Handler
    model: type[BaseModel] | None = None
    output_schema: Mapping[str, Any] | None = None
    render: Render | None = None
    concurrency_safe: bool | Callable[[Any], bool] = False
    finalize_content: FinalizeContent | None = None
    requires_approval: bool = False
    """The default policy asks for approval before each call (e.g. `bash`)."""
    _validator: Any = field(default=None, repr=False, compare=False)
    """Built by `define_tool` when it checks the schema, else at the first call
    (`_arguments_validator`), so tools defined with `check_schema=False` need no jsonschema."""
    _output_validator: Any = field(default=None, repr=False, compare=False)
    _handler_arity: int = field(default=2, repr=False, compare=False)

    @property
    def schema(self) -> ToolSchema:
        return ToolSchema(name=self.name, description=self.description, parameters=self.parameters)

    def _arguments_validator(self) -> jsonschema.protocols.Validator:
        """The validator of `parameters`, built at the first call rather than at definition:
        importing jsonschema is a large part of a cold start, and no tool runs before the
        first request has been answered."""
        if self._validator is None:
            object.__setattr__(self, "_validator", _validator_for(self.parameters))
        validator: jsonschema.protocols.Validator = self._validator
        return validator

    def validate_arguments(self, arguments: Any) -> Any:
        """The handler's argument value, or raise `ToolArgsError` (`INVALID_ARGS`)."""
        violations = argument_violations(self._arguments_validator(), arguments)
        if violations:
            raise ToolArgsError(f"invalid arguments: {'; '.join(violations)}")
        plain = thaw_json(arguments)
        if self.model is None:
            return plain
        from pydantic import ValidationError  # a model is a pydantic class: pydantic is loaded

        try:
            return self.model.model_validate(plain)
        except ValidationError as exc:
            details = "; ".join(
                f'"{_label(list(e["loc"]), "arguments")}": {e["msg"]}' for e in exc.errors()
            )
            raise ToolArgsError(f"invalid arguments: {details}") from exc

    def is_concurrency_safe(self, arguments: Any) -> bool:
        """True only when declared safe for these arguments; invalid arguments → False."""
        if isinstance(self.concurrency_safe, bool):
            return self.concurrency_safe
        try:
            if argument_violations(self._arguments_validator(), arguments):
                return False
            return self.concurrency_safe(arguments) is True
        except Exception:  # noqa: BLE001
            return False

    async def invoke(self, arguments: Any, call: ToolCall) -> tuple[Any, tuple[ContentBlock, ...]]:
        """Validate, run the handler, check and render its value: `(value, content)`."""
        args = self.validate_arguments(arguments)
        outcome = self.handler(args, call) if self._handler_arity >= 2 else self.handler(args)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        if not _is_blocks(outcome):
            try:  # the value must survive the log as JSON (dsh-core.md §4.3 step 5)
                freeze_json(outcome, "output")
            except LosslessJsonError as exc:
                raise ToolError(
                    f'tool "{self.name}" returned invalid output: {exc}', INVALID_TOOL_OUTPUT
                ) from exc
        if self.output_schema is not None:
            if self._output_validator is None:
                object.__setattr__(self, "_output_validator", _validator_for(self.output_schema))
            violations = argument_violations(self._output_validator, outcome, root="output")
            if violations:
                raise ToolError(
                    f'tool "{self.name}" returned invalid output: {"; ".join(violations)}', INVALID_TOOL_OUTPUT
                )
        if self.render is None:
            return outcome, to_content(outcome)
        try:
            rendered = self.render(args, outcome)
        except Exception as exc:
            raise ToolError(f"output.render failed: {exc}", INVALID_TOOL_OUTPUT) from exc
        return outcome, to_content(rendered) if isinstance(rendered, str) else tuple(rendered)


def _arity(handler: Handler) -> int:
    try:
        params = inspect.signature(handler).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return 2
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def define_tool(
    name: str,
    description: str,
    parameters: type[BaseModel] | Mapping[str, Any],
    handler: Handler,
    *,
    output_schema: Mapping[str, Any] | None = None,
    render: Render | None = None,
    concurrency_safe: bool | Callable[[Any], bool] = False,
    finalize_content: FinalizeContent | None = None,
    requires_approval: bool = False,
    check_schema: bool = True,
) -> ToolDefinition:
    """Define a tool.

    Args:
        parameters: a pydantic model class (its JSON Schema is sent; the handler receives an
            instance) or a JSON Schema dict for an object (the handler receives a dict).
        handler: `handler(args)` or `handler(args, call: ToolCall)`, sync or async. Its value is
            a string, content blocks, or JSON (checked against `output_schema`, rendered by
            `render(args, value)` or dumped). Raising makes an error result with the message.
        concurrency_safe: True (or a predicate on the parsed arguments returning exactly True)
            lets calls share the parallel pool.
        finalize_content: `(call, content) -> content | None`, applied once to the final result.
        requires_approval: the default policy asks before each call.
        check_schema: False defers checking the schemas and building their validators to the
            first call, for schemas known to be valid (the built-in tools': a test checks
            them); this keeps jsonschema out of a cold start. An invalid schema then fails at
            that call instead of here.
    """
    if not name:
        raise UsageError("a tool needs a non-empty name")
    model: type[BaseModel] | None = None
    if _is_pydantic_model(parameters):
        model = parameters
        schema: dict[str, Any] = model.model_json_schema()
    elif isinstance(parameters, Mapping):
        schema = thaw_json(dict(parameters)) if not isinstance(parameters, dict) else json.loads(json.dumps(parameters))
    else:
        raise UsageError(f"tool {name!r}: parameters must be a pydantic model class or a JSON Schema dict")
    if schema.get("type") != "object":
        raise UsageError(f'tool {name!r}: the parameters schema must have "type": "object"')
    validator = None
    out_validator = None
    if check_schema:
        import jsonschema

        try:
            validator = _validator_for(schema)
            if output_schema is not None:
                out_validator = _validator_for(output_schema)
        except jsonschema.SchemaError as exc:
            raise UsageError(f"tool {name!r}: invalid JSON Schema: {exc.message}") from exc
    return ToolDefinition(
        name=name,
        description=description,
        parameters=schema,
        handler=handler,
        model=model,
        output_schema=output_schema,
        render=render,
        concurrency_safe=concurrency_safe,
        finalize_content=finalize_content,
        requires_approval=requires_approval,
        _validator=validator,
        _output_validator=out_validator,
        _handler_arity=_arity(handler),
    )


def _is_pydantic_model(parameters: object) -> TypeGuard[type[BaseModel]]:
    """True for a pydantic model class. A program that never imported pydantic has none, so
    pydantic (a large import) is not loaded just to ask."""
    pydantic = sys.modules.get("pydantic")
    return (pydantic is not None and isinstance(parameters, type)
            and issubclass(parameters, pydantic.BaseModel))


def _validator_for(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    """A validator of the schema's own draft, after checking the schema against that draft
    (raises `jsonschema.SchemaError`)."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(dict(schema))
    validator: jsonschema.protocols.Validator = cls(schema)
    return validator
