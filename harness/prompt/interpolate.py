"""Strict `{{var}}` interpolation of prompt sections and contexts.

Each step of the seed's walk renders the system prompt and the runtime context from templates;
a typo there must fail the turn loudly rather than send the model a literal `{{modle}}`
(dsh-core.md §5.9, trap 25). A group is `{{name}}` with `name` matching `[a-z][a-z0-9_]*`, and
the name must be registered with a value that is not `None`. `{{ x }}`, `{{}}` and `{{{x}}}` are
errors; a lone `{{` with no later `}}` stays literal; substituted values are never re-scanned.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from dshkit.harness.llm import HarnessError

__all__ = ["VARIABLE_NAME", "PromptError", "interpolate"]

VARIABLE_NAME: Final = re.compile(r"[a-z][a-z0-9_]*")


class PromptError(HarnessError):
    """A prompt that cannot be assembled; the message names the variable and the section."""

    def __init__(self, message: str, code: str = "PROMPT_INVALID") -> None:
        super().__init__(message, code)


def interpolate(text: str, variables: Mapping[str, str | None], *, where: str) -> str:
    """Replace every `{{name}}` in `text`; `where` names the section for error messages."""
    out: list[str] = []
    pos = 0
    while True:
        open_at = text.find("{{", pos)
        if open_at < 0:
            break
        close_at = text.find("}}", open_at + 2)
        if close_at < 0:
            break  # a lone "{{" with no later "}}" is literal text
        name = text[open_at + 2 : close_at]
        if not VARIABLE_NAME.fullmatch(name):
            raise PromptError(
                f"{where}: malformed variable reference {text[open_at:close_at + 2]!r}; "
                "write {{name}} with a lowercase name such as {{model}}"
            )
        if name not in variables:
            known = ", ".join(sorted(variables)) or "none"
            raise PromptError(
                f"{where}: unknown variable {{{{{name}}}}} (registered: {known})", "PROMPT_UNKNOWN_VARIABLE"
            )
        value = variables[name]
        if value is None:
            raise PromptError(f"{where}: variable {{{{{name}}}}} has no value", "PROMPT_UNDEFINED_VARIABLE")
        out.append(text[pos:open_at])
        out.append(value)
        pos = close_at + 2
    out.append(text[pos:])
    return "".join(out)
