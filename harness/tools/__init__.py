"""Tools: `define_tool`, the `ToolRuntime` pipeline, the scheduler, built-ins and their providers.

The loop hands the tool-call blocks of an assistant message to `run_tool_calls`, which runs each
through the runtime's stages and reports starts and results back in model order.
"""

from .builtin import builtin_tools
from .definition import define_tool
from .runtime import ToolRuntime

__all__ = [
    "ToolRuntime",
    "builtin_tools",
    "define_tool",
]
