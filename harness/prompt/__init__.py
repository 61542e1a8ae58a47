"""System prompt assembly and the runtime-context snapshot.

Plugins contribute sections, contexts, variables and tools to a `SystemPrompt`; each step the
loop calls `assemble()` and asks a `RuntimeContextSnapshot` whether to append a snapshot message.
"""

from .assembly import (
    HARNESS_IDENTITY,
    UNLISTED_TOOLS,
    Assembly,
    PromptPlugin,
    RenderedSection,
    SystemPrompt,
)
from .interpolate import VARIABLE_NAME, PromptError, interpolate
from .runtime_context import (
    RUNTIME_CONTEXT_CLEARED,
    RUNTIME_CONTEXT_HEADER,
    RUNTIME_CONTEXT_PLUGIN,
    RuntimeContextSnapshot,
    render_runtime_context,
)

__all__ = [
    "Assembly",
    "HARNESS_IDENTITY",
    "PromptError",
    "PromptPlugin",
    "RUNTIME_CONTEXT_CLEARED",
    "RUNTIME_CONTEXT_HEADER",
    "RUNTIME_CONTEXT_PLUGIN",
    "RenderedSection",
    "RuntimeContextSnapshot",
    "SystemPrompt",
    "UNLISTED_TOOLS",
    "VARIABLE_NAME",
    "interpolate",
    "render_runtime_context",
]
