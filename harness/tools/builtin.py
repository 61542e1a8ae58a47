"""Built-in tools: `read`, `write`, `list`, `grep` and `bash`, with pinned parameters.

These are the tools of the seed's example: the model calls `read {"file_path": "README.md"}` and
gets back line-numbered text in DSH's envelope (`<path>…</path>`, `<type>file</type>`, then
`1: # DeepSeek Harness` rows and an end-of-file footer inside `<content>`; docs/dsh_parity.md
lists where the other tools' outputs still differ from DSH's). Each tool is a `define_tool` over a provider
(`FileSystem`, `Shell`), so swapping the providers moves the tools to a sandbox unchanged. `bash`
asks for approval under the default policy.

No call may freeze the event loop (and with it streaming and Ctrl-C): the file tools run in a
thread with a deadline (`blocking.run_blocking`), and `grep` matches in a child process that is
killed at the deadline or on cancel, since a catastrophic regex holds the GIL and cannot be
interrupted inside a thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

from dshkit.harness.llm.errors import ToolError

from .blocking import TOOL_TIMEOUT, run_blocking
from .definition import ToolDefinition, define_tool
from .providers import FileSystem, LocalFileSystem, LocalShell, Shell
from .runtime import ToolCall

__all__ = [
    "BASH_PARAMETERS",
    "GREP_PARAMETERS",
    "LIST_PARAMETERS",
    "READ_PARAMETERS",
    "WRITE_PARAMETERS",
    "builtin_tools",
    "render_read",
    "render_write",
]

READ_PARAMETERS: Final = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "Path of the file, relative to the workspace root."},
        "offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based)."},
        "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines to return."},
    },
    "required": ["file_path"],
}
WRITE_PARAMETERS: Final = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "Path of the file, relative to the workspace root."},
        "content": {"type": "string", "description": "The complete new content of the file."},
    },
    "required": ["file_path", "content"],
}
LIST_PARAMETERS: Final = {
    "type": "object",
    "properties": {"path": {"type": "string", "description": "Directory to list (default: the workspace root)."}},
}
GREP_PARAMETERS: Final = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "A Python regular expression."},
        "path": {"type": "string", "description": "File or directory to search (default: the workspace root)."},
    },
    "required": ["pattern"],
}
BASH_PARAMETERS: Final = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "A shell command, run in the workspace root."},
        "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds before the command is killed."},
    },
    "required": ["command"],
}

MAX_READ_BYTES: Final = 256 * 1024
MAX_GREP_MATCHES: Final = 200
BASH_TIMEOUT: Final = 120.0
BASH_OUTPUT_LIMIT: Final = 30_000
_GREP_WORKER: Final = Path(__file__).with_name("grep_worker.py")


READ_LIMIT: Final = 2000
READ_MAX_LINE_LENGTH: Final = 2000
READ_MAX_BYTES: Final = 50 * 1024


def render_read(display_path: str, text: str, offset: int = 1, limit: int | None = None) -> str:
    """What `read` returns, in DSH's envelope: `<path>`, `<type>file</type>` and a `<content>`
    of `N: line` rows (at most `limit` lines, default 2000, of at most 2000 characters, and
    50 KiB in all) ending in a footer that says where the file ends or how to read on.

    Lines are split on `\n` with a trailing `\r` dropped; a final newline ends the last line.
    An `offset` past the end is an `OFFSET_OUT_OF_RANGE` error (an empty file reads at offset 1).
    """
    limit = READ_LIMIT if limit is None else limit
    rows = text.split("\n")
    if rows and rows[-1] == "":
        rows.pop()
    total = len(rows)
    if offset > total and not (total == 0 and offset == 1):
        raise ToolError(f'offset {offset} is out of range for "{display_path}" ({total} lines)', "OFFSET_OUT_OF_RANGE")
    shown: list[str] = []
    used = 0
    capped = False
    for number, row in enumerate(rows[offset - 1 : offset - 1 + limit], start=offset):
        row = row.removesuffix("\r")
        if len(row) > READ_MAX_LINE_LENGTH:
            row = f"{row[:READ_MAX_LINE_LENGTH]}... (line truncated to {READ_MAX_LINE_LENGTH} chars)"
        size = len(row.encode("utf-8")) + (1 if shown else 0)
        if used + size > READ_MAX_BYTES:
            capped = True
            break
        used += size
        shown.append(f"{number}: {row}")
    end = offset + len(shown) - 1 if shown else max(0, offset - 1)
    if capped:
        footer = f"(Output capped. Showing lines {offset}-{end}. Use offset={end + 1} to continue.)"
    elif end < total:
        footer = f"(Showing lines {offset}-{end} of {total}. Use offset={end + 1} to continue.)"
    else:
        footer = f"(End of file - total {total} lines)"
    body = "\n".join(shown) + "\n\n" + footer if shown else footer
    return f"<path>{display_path}</path>\n<type>file</type>\n<content>\n{body}\n</content>"


def render_write(display_path: str, *, created: bool) -> str:
    """What `write` returns, in DSH's envelope: `Created file` or `Updated file` (no content)."""
    return f"<path>{display_path}</path>\n<type>file</type>\n<content>\n{'Created' if created else 'Updated'} file\n</content>"


def _looks_binary(data: bytes) -> bool:
    return b"\x00" in data[:8192]


class _GrepSearch:
    """One `grep` call: files read through the `FileSystem` in this (worker) thread, lines
    matched by a child process (`grep_worker.py`) that `stop()` can kill at any moment."""

    def __init__(self, files: FileSystem, max_read_bytes: int) -> None:
        self.files = files
        self.max_read_bytes = max_read_bytes
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        self._stopped = False

    def stop(self) -> None:
        """Kill the matcher (called from the event loop when the call is abandoned)."""
        with self._lock:
            self._stopped = True
            proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()

    def _start(self) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(_GREP_WORKER)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, encoding="ascii", start_new_session=True,
        )
        with self._lock:
            self._proc = proc
            stopped = self._stopped
        if stopped:
            self.stop()
        return proc

    @staticmethod
    def _ask(proc: subprocess.Popen[str], request: object) -> Any:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            answer = proc.stdout.readline()
        except (BrokenPipeError, ValueError):
            answer = ""
        if not answer:
            raise ToolError("the grep matcher stopped unexpectedly; try again or narrow the pattern", "GREP_FAILED")
        return json.loads(answer)

    def run(self, pattern: str, start: str) -> str:
        proc = self._start()
        try:
            header = self._ask(proc, {"pattern": pattern})
            if "error" in header:
                raise ToolError(f"invalid regular expression: {header['error']}", "INVALID_ARGS")
            return self._search(proc, start)
        finally:
            self.stop()
            with contextlib.suppress(OSError, ValueError):
                proc.wait(5)
            for stream in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError, ValueError):
                    if stream is not None:
                        stream.close()

    def _search(self, proc: subprocess.Popen[str], start: str) -> str:
        out: list[str] = []
        named_file = not self.files.is_dir(start)
        for rel in self.files.walk_files(start):
            try:
                if self.files.size(rel) > self.max_read_bytes:
                    continue
                data = self.files.read_bytes(rel)
            except OSError:
                continue
            except ToolError:
                # Refused (a hard link that may lead out of the workspace, a FIFO, a device):
                # skipped in a tree, and said when it is the file the model named.
                if named_file:
                    raise
                continue
            if _looks_binary(data):
                continue
            text = data.decode("utf-8", errors="replace")
            numbers = self._ask(proc, {"text": text, "max": MAX_GREP_MATCHES - len(out)})["lines"]
            lines = text.split("\n")
            out.extend(f"{rel}:{n}:{lines[n - 1]}" for n in numbers)
            if len(out) >= MAX_GREP_MATCHES:
                out.append(f"[stopped after {MAX_GREP_MATCHES} matches; narrow the pattern or path]")
                break
        return "\n".join(out) or "No matches."


def builtin_tools(
    workspace: str | os.PathLike[str] | None = None,
    *,
    fs: FileSystem | None = None,
    shell: Shell | None = None,
    max_read_bytes: int = MAX_READ_BYTES,
    bash_timeout: float = BASH_TIMEOUT,
    bash_output_limit: int = BASH_OUTPUT_LIMIT,
    tool_timeout: float = TOOL_TIMEOUT,
    names: tuple[str, ...] = ("bash", "grep", "list", "read", "write"),
) -> list[ToolDefinition]:
    """The built-in tools on `fs`/`shell` (local providers on `workspace` by default).

    `read`, `write`, `list` and `grep` run off the event loop and are stopped after
    `tool_timeout` seconds (a `TIMEOUT` error result) or when the turn is cancelled; `bash` has
    its own `timeout` argument (default `bash_timeout`).
    """
    root = Path(workspace or ".")
    files: FileSystem = fs or LocalFileSystem(root)
    sh: Shell = shell or LocalShell(getattr(files, "root", root))

    def read_sync(args: dict[str, Any]) -> str:
        path = args["file_path"]
        if files.is_dir(path):
            raise ToolError(f'"{path}" is a directory; use the list tool to see its entries', "IS_DIRECTORY")
        size = files.size(path)
        if size > max_read_bytes:
            raise ToolError(
                f'"{path}" is too large to read ({size} bytes; the limit is {max_read_bytes}); '
                "search it with grep instead",
                "FILE_TOO_LARGE",
            )
        data = files.read_bytes(path)
        if _looks_binary(data):
            raise ToolError(f'"{path}" looks like a binary file; read only reads UTF-8 text', "BINARY_FILE")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ToolError(f'"{path}" is not valid UTF-8 text (byte {exc.start})', "BINARY_FILE") from exc
        return render_read(shown_path(path), text, args.get("offset", 1), args.get("limit"))

    def shown_path(path: str) -> str:
        resolve = getattr(files, "resolve", None)
        return str(resolve(path)) if callable(resolve) else path  # DSH shows the resolved path

    def write_sync(args: dict[str, Any]) -> str:
        path = args["file_path"]
        try:
            files.size(path)
            existed = True
        except (OSError, ToolError):
            existed = False
        files.write_text(path, args["content"])
        return render_write(shown_path(path), created=not existed)

    def list_sync(args: dict[str, Any]) -> str:
        entries = files.list_dir(args.get("path") or ".")
        return "\n".join(e.name + ("/" if e.is_dir else "") for e in entries) or "(empty directory)"

    def off_loop(name: str, body: Callable[[dict[str, Any]], str]) -> Callable[[dict[str, Any], ToolCall], Awaitable[str]]:
        async def handler(args: dict[str, Any], call: ToolCall) -> str:
            return await run_blocking(
                lambda: body(args), timeout=tool_timeout, signal=call.signal, what=f"{name} {call.raw_arguments}"
            )

        return handler

    async def grep(args: dict[str, Any], call: ToolCall) -> str:
        search = _GrepSearch(files, max_read_bytes)
        return await run_blocking(
            lambda: search.run(args["pattern"], args.get("path") or "."),
            timeout=tool_timeout, signal=call.signal, what=f"grep {call.raw_arguments}", on_abandon=search.stop,
        )

    async def bash(args: dict[str, Any], call: ToolCall) -> str:
        timeout = float(args.get("timeout") or bash_timeout)
        result = await sh.run(args["command"], timeout=timeout, output_limit=bash_output_limit, signal=call.signal)
        if result.timed_out:
            raise ToolError(
                f"command timed out after {timeout:g}s and was killed; output so far:\n{result.output}", "TIMEOUT"
            )
        text = result.output
        if result.truncated:
            text += f"\n[output truncated after {bash_output_limit} bytes]"
        if result.exit_code:
            text += f"\n[exit code {result.exit_code}]"
        return text or "(no output)"

    # The schemas above are constants checked by a test, so their validators are built at the
    # first call: a cold `dshkit run` then sends its first request without importing jsonschema.
    tools = {
        "read": define_tool(
            "read", "Read a UTF-8 text file and return line-numbered content.", READ_PARAMETERS,
            off_loop("read", read_sync),
            concurrency_safe=True, check_schema=False,
        ),
        "write": define_tool(
            "write", "Write a UTF-8 text file (creating parent directories), replacing its content.",
            WRITE_PARAMETERS, off_loop("write", write_sync), check_schema=False,
        ),
        "list": define_tool(
            "list", "List a directory of the workspace; subdirectories end with '/'.", LIST_PARAMETERS,
            off_loop("list", list_sync),
            concurrency_safe=True, check_schema=False,
        ),
        "grep": define_tool(
            "grep", "Search workspace text files for a regular expression; prints path:line:text.",
            GREP_PARAMETERS, grep, concurrency_safe=True, check_schema=False,
        ),
        "bash": define_tool(
            "bash", "Run a shell command in the workspace root and return its output.", BASH_PARAMETERS, bash,
            requires_approval=True, check_schema=False,
        ),
    }
    unknown = [n for n in names if n not in tools]
    if unknown:
        raise ValueError(f"unknown built-in tools {unknown}; choose from {sorted(tools)}")
    return [tools[n] for n in names]
