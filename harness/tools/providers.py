"""File-system and shell providers: the capabilities built-in tools run on.

In the seed's walk, `read` calls a file-system provider and `bash` a shell provider; a tool
depends only on the capability interface, so the local implementations here can be swapped for
a remote sandbox (dsh-core.md §4.3 step 5). `LocalFileSystem` confines every path to the
workspace root: `..`, absolute paths elsewhere and symlinks leading out are refused. `LocalShell`
runs a command in its own process group with a timeout, an output cap and cancellation.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal as _signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from harness.llm import ToolError

__all__ = [
    "DirEntry",
    "FileSystem",
    "LocalFileSystem",
    "LocalShell",
    "Shell",
    "ShellResult",
    "WorkspaceError",
]


class WorkspaceError(ToolError):
    """A path outside the workspace root."""

    def __init__(self, message: str, code: str = "PATH_OUTSIDE_WORKSPACE") -> None:
        super().__init__(message, code)


@dataclass(frozen=True, slots=True)
class DirEntry:
    name: str
    is_dir: bool
    size: int


class FileSystem(Protocol):
    """What file tools need. Paths are as the model wrote them, relative to the workspace."""

    def read_bytes(self, path: str) -> bytes: ...
    def size(self, path: str) -> int: ...
    def is_dir(self, path: str) -> bool: ...
    def write_text(self, path: str, content: str) -> int: ...
    def list_dir(self, path: str) -> list[DirEntry]: ...
    def walk_files(self, path: str) -> Iterator[str]: ...


@dataclass(frozen=True, slots=True)
class ShellResult:
    exit_code: int | None
    """None when the command was killed (timeout or cancellation)."""
    output: str
    """stdout and stderr interleaved, cut at the cap."""
    truncated: bool = False
    timed_out: bool = False
    aborted: bool = False


class Shell(Protocol):
    async def run(
        self, command: str, *, timeout: float, output_limit: int, signal: asyncio.Event | None = None
    ) -> ShellResult: ...


class LocalFileSystem:
    """The local disk under `root`."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()

    def resolve(self, path: str) -> Path:
        """The real path for `path`, or `WorkspaceError` if it leaves the workspace."""
        if "\x00" in path:
            raise WorkspaceError(f"path {path!r} contains a NUL byte")
        candidate = Path(path)
        full = (candidate if candidate.is_absolute() else self.root / candidate).resolve()
        if full != self.root and self.root not in full.parents:
            raise WorkspaceError(
                f'path "{path}" is outside the workspace {self.root}; use a path inside it'
            )
        return full

    def display(self, full: Path) -> str:
        return str(full.relative_to(self.root)) if full != self.root else "."

    def read_bytes(self, path: str) -> bytes:
        return self.resolve(path).read_bytes()

    def size(self, path: str) -> int:
        return self.resolve(path).stat().st_size

    def is_dir(self, path: str) -> bool:
        return self.resolve(path).is_dir()

    def write_text(self, path: str, content: str) -> int:
        full = self.resolve(path)
        full.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode()
        full.write_bytes(data)
        return len(data)

    def list_dir(self, path: str) -> list[DirEntry]:
        full = self.resolve(path)
        out = []
        for child in sorted(full.iterdir(), key=lambda p: p.name):
            try:
                is_dir = child.is_dir()
                size = 0 if is_dir else child.stat().st_size
            except OSError:
                continue
            out.append(DirEntry(child.name, is_dir, size))
        return out

    def walk_files(self, path: str) -> Iterator[str]:
        full = self.resolve(path)
        if full.is_file():
            yield self.display(full)
            return
        for dirpath, dirnames, filenames in os.walk(full):
            dirnames[:] = sorted(d for d in dirnames if d not in (".git", "node_modules", ".venv", "__pycache__"))
            for name in sorted(filenames):
                child = Path(dirpath) / name
                try:
                    real = self.resolve(str(child))
                except WorkspaceError:
                    continue  # a symlink leading out is skipped, never followed
                yield self.display(real)


class LocalShell:
    """Runs `sh -c` commands in the workspace, each in its own process group."""

    def __init__(self, cwd: str | os.PathLike[str]) -> None:
        self.cwd = Path(cwd)

    async def run(
        self, command: str, *, timeout: float, output_limit: int, signal: asyncio.Event | None = None
    ) -> ShellResult:
        proc = await asyncio.create_subprocess_shell(
            command,
            cwd=self.cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        kept = bytearray()
        truncated = False

        async def pump() -> None:
            nonlocal truncated
            assert proc.stdout is not None
            while chunk := await proc.stdout.read(65536):
                room = output_limit - len(kept)
                if room > 0:
                    kept.extend(chunk[:room])
                if len(chunk) > max(room, 0):
                    truncated = True  # keep draining so the command never blocks on a full pipe
            await proc.wait()

        work = asyncio.ensure_future(pump())
        waiters: set[asyncio.Future[object]] = {work}  # type: ignore[arg-type]
        stop = asyncio.ensure_future(signal.wait()) if signal is not None else None
        if stop is not None:
            waiters.add(stop)  # type: ignore[arg-type]
        try:
            done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            self._kill(proc)
            work.cancel()
            raise
        finally:
            if stop is not None:
                stop.cancel()
        timed_out = work not in done and (stop is None or stop not in done)
        aborted = stop is not None and stop in done and work not in done
        if timed_out or aborted:
            self._kill(proc)
            try:
                await asyncio.wait_for(work, 5)
            except (TimeoutError, asyncio.CancelledError):
                work.cancel()
        text = kept.decode("utf-8", errors="replace")
        return ShellResult(
            exit_code=None if (timed_out or aborted) else proc.returncode,
            output=text,
            truncated=truncated,
            timed_out=timed_out,
            aborted=aborted,
        )

    @staticmethod
    def _kill(proc: asyncio.subprocess.Process) -> None:
        if proc.returncode is not None:
            return
        try:
            os.killpg(proc.pid, _signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
