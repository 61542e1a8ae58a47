"""Tools: `define_tool`, the `ToolRuntime` pipeline, the scheduler, built-ins and their providers.

The loop hands the tool-call blocks of an assistant message to `run_tool_calls`, which runs each
through the runtime's stages and reports starts and results back in model order.
"""

from .blocking import TOOL_TIMEOUT, AbortError, ToolTimeoutError
from .builtin import builtin_tools
from .definition import ToolDefinition, define_tool
from .policy import (
    Accept,
    Allow,
    ApprovalOutcome,
    ApprovalResult,
    Approver,
    Ask,
    Block,
    Deny,
    ExecuteWrapper,
    Guard,
    PostDecision,
    PostExecute,
    PreDecision,
    PreExecute,
    ResultObserver,
    auto_approver,
    no_tty_approver,
    terminal_approver,
)
from .providers import (
    DirEntry,
    FileSystem,
    LocalFileSystem,
    LocalShell,
    Shell,
    ShellResult,
    WorkspaceError,
)
from .results import ToolErrorInfo, ToolResult, error_result
from .runtime import ToolCall, ToolRuntime
from .scheduler import DEFAULT_MAX_PARALLEL, StepToolResults, run_tool_calls

__all__ = [
    "AbortError",
    "Accept",
    "Allow",
    "ApprovalOutcome",
    "ApprovalResult",
    "Approver",
    "Ask",
    "Block",
    "DEFAULT_MAX_PARALLEL",
    "Deny",
    "DirEntry",
    "ExecuteWrapper",
    "FileSystem",
    "Guard",
    "LocalFileSystem",
    "LocalShell",
    "PostDecision",
    "PostExecute",
    "PreDecision",
    "PreExecute",
    "ResultObserver",
    "Shell",
    "ShellResult",
    "StepToolResults",
    "TOOL_TIMEOUT",
    "ToolCall",
    "ToolDefinition",
    "ToolErrorInfo",
    "ToolResult",
    "ToolRuntime",
    "ToolTimeoutError",
    "WorkspaceError",
    "auto_approver",
    "builtin_tools",
    "define_tool",
    "error_result",
    "no_tty_approver",
    "run_tool_calls",
    "terminal_approver",
]
