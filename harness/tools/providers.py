"""File-system and shell providers: the capabilities built-in tools run on.

In the seed's walk, `read` calls a file-system provider and `bash` a shell provider; a tool
depends only on the capability interface, so the local implementations here can be swapped for
a remote sandbox (dsh-core.md §4.3 step 5). `LocalFileSystem` confines every path to the
workspace root: `..`, absolute paths elsewhere and symlinks leading out are refused; it reads
and writes regular files only (opening a FIFO blocks until a writer appears, a device may never
end), and refuses to read or write a file with more than one hard link, since the other name may
sit outside the workspace: a hard link is a way out that no path check can see. `LocalShell` runs a command in its own process
group with a timeout, an output cap and cancellation, without the environment variables it was
told to hide (the API key).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal as _signal
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from dshkit.harness.llm.errors import ToolError

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


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


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

    def _open_regular(self, path: str, full: Path, flags: int) -> int:
        """An fd on `full`, checked to be a regular file on the open fd itself (no race with a
        swap after a check by name). O_NONBLOCK keeps the open of a FIFO from blocking."""
        try:
            fd = os.open(full, flags | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o666)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a FIFO opened for writing with no reader
                raise ToolError(f'"{path}" is not a regular file (a FIFO); only regular files can be written', "NOT_A_FILE") from exc
            raise
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                kind = _file_kind(info.st_mode)
                raise ToolError(
                    f'"{path}" is not a regular file ({kind}); the file tools read and write regular files only',
                    "NOT_A_FILE",
                )
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _refuse_hard_link(self, path: str, fd: int, doing: str, remedy: str) -> None:
        """`HARD_LINKED_FILE` for a file with other names, checked on the open descriptor (no
        swap after the check): any of them may be outside the workspace."""
        if os.fstat(fd).st_nlink > 1:
            raise WorkspaceError(
                f'"{path}" has other hard links, which may be outside the workspace {self.root}; '
                f"refusing to {doing} through it ({remedy})",
                "HARD_LINKED_FILE",
            )

    def read_bytes(self, path: str) -> bytes:
        fd = self._open_regular(path, self.resolve(path), os.O_RDONLY)
        with os.fdopen(fd, "rb") as f:
            self._refuse_hard_link(path, f.fileno(), "read", "read a copy of the file instead")
            return f.read()

    def size(self, path: str) -> int:
        return self.resolve(path).stat().st_size

    def is_dir(self, path: str) -> bool:
        return self.resolve(path).is_dir()

    def write_text(self, path: str, content: str) -> int:
        full = self.resolve(path)
        full.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode()
        fd = self._open_regular(path, full, os.O_WRONLY | os.O_CREAT)
        with os.fdopen(fd, "wb") as f:
            # Checked before truncating: another name of this file may be outside the workspace.
            self._refuse_hard_link(path, f.fileno(), "write", "remove the other links or write a new file")
            f.truncate(0)
            f.write(data)
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
                    if not self.resolve(str(child)).is_file():
                        continue  # a FIFO, socket or device: reading it could block for good
                except (WorkspaceError, OSError):
                    continue  # a symlink leading out is skipped, never followed
                # under the name it has in the tree: a link to a file inside the workspace is
                # not listed as that file a second time
                yield self.display(child)


class LocalShell:
    """Runs `sh -c` commands in the workspace, each in its own process group.

    `hide_env` names environment variables the commands must not inherit (such as
    `DEEPSEEK_API_KEY`: a model asking for `env` should not get the key).
    """

    def __init__(self, cwd: str | os.PathLike[str], *, hide_env: Sequence[str] = ()) -> None:
        self.cwd = Path(cwd)
        self.hide_env = frozenset(hide_env)

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
            env={k: v for k, v in os.environ.items() if k not in self.hide_env} if self.hide_env else None,
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
