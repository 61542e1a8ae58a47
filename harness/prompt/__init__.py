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
from .interpolate import PromptError, interpolate
from .runtime_context import RUNTIME_CONTEXT_PLUGIN, RuntimeContextSnapshot

__all__ = [
    "Assembly",
    "HARNESS_IDENTITY",
    "PromptError",
    "PromptPlugin",
    "RUNTIME_CONTEXT_PLUGIN",
    "RenderedSection",
    "RuntimeContextSnapshot",
    "SystemPrompt",
    "UNLISTED_TOOLS",
    "interpolate",
]
