"""System prompt assembly and the runtime-context snapshot.

Plugins contribute sections, contexts, variables and tools to a `SystemPrompt`; each step the
loop calls `assemble()` and asks a `RuntimeContextSnapshot` whether to append a snapshot message.
"""

from .assembly import SystemPrompt

__all__ = ["SystemPrompt"]
