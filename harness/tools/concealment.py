"""Keeping a credential out of reach of the processes that tools start.

A `bash` tool call runs as the same user as the harness, so it can read the harness process's
`/proc/PID/environ` and `/proc/PID/cmdline`, and `cat /proc/$PPID/environ | base64` defeats any
scrubbing of its output. Those two files show the environment and the arguments the process was
started with, not `os.environ`: deleting a variable from `os.environ` keeps it from child
processes but not from them. `conceal_from_tools` does both. It takes the variables out of
`os.environ`, so no child inherits them, and blanks them (and any command-line argument that is
the key) in the memory those two files are read from, which on Linux is the process's own
writable stack, reached through `/proc/self/mem` at the addresses `/proc/self/stat` gives. Where
that is impossible the result says why (`unreachable`). Out of reach either way: a process that
started dshkit with the key in its own environment (a wrapper script, `uv run`), and the harness's
memory for a tool allowed to trace it (root, or `kernel.yama.ptrace_scope=0`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

from dshkit.harness.secrets import MIN_SECRET_LENGTH

__all__ = ["Concealment", "conceal_from_tools"]


@dataclass(slots=True, kw_only=True)
class Concealment:
    """What `conceal_from_tools` did."""

    removed: dict[str, str] = field(default_factory=dict)
    """Variables taken out of `os.environ`, with their values (for `restore`)."""
    blanked: int = 0
    """Bytes blanked in the start-up environment and command line."""
    unreachable: str | None = None
    """Why the start-up environment or command line could not be blanked although it holds the
    key; None when nothing is left there."""

    def restore(self) -> None:
        """Put the removed variables back in `os.environ` (for a host that goes on after the
        run; the blanked start-up copy stays blank)."""
        for name, value in self.removed.items():
            os.environ.setdefault(name, value)
        self.removed = {}


def conceal_from_tools(names: Sequence[str], values: Iterable[str | None] = ()) -> Concealment:
    """Take the variables `names` (and any variable whose value is one of `values`, from
    `MIN_SECRET_LENGTH` characters on) out of `os.environ`, then blank them, and every
    command-line argument equal to one of `values` (or ending in `=VALUE`), in what
    `/proc/self/environ` and `/proc/self/cmdline` show."""
    keys = [v for v in values if v]
    long_keys = {v for v in keys if len(v) >= MIN_SECRET_LENGTH}
    done = Concealment()
    for name, value in list(os.environ.items()):
        if name in names or value in long_keys:
            done.removed[name] = os.environ.pop(name)
    doomed = set(names) | set(done.removed)

    def env_entry(entry: bytes) -> tuple[int, int] | None:
        name, eq, value = entry.partition(b"=")
        text = os.fsdecode(name)
        if eq and (text in doomed or os.fsdecode(value) in long_keys):
            return 0, len(entry)
        return None

    def argument(entry: bytes) -> tuple[int, int] | None:
        text = os.fsdecode(entry)
        for key in keys:
            if text == key:
                return 0, len(entry)
            if text.endswith("=" + key):
                return len(entry) - len(os.fsencode(key)), len(entry)
        return None

    try:
        arg_start, arg_end, env_start, env_end = _start_up_areas()
    except (OSError, ValueError, IndexError):
        return done  # no /proc (not Linux): no process can read these through it either
    try:
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            done.blanked += _blank(mem, env_start, env_end, env_entry)
            done.blanked += _blank(mem, arg_start, arg_end, argument)
    except OSError as exc:
        if _still_visible(doomed, keys):
            done.unreachable = f"cannot blank the start-up environment and command line: {exc}"
    return done


def _start_up_areas() -> tuple[int, int, int, int]:
    """(arg_start, arg_end, env_start, env_end) from `/proc/self/stat` (fields 48-51, Linux 3.5+).
    The command name in field 2 may hold spaces and parentheses, so fields count from its `)`."""
    with open("/proc/self/stat", "rb") as f:
        stat = f.read()
    fields = stat[stat.rindex(b")") + 2:].split()
    start = 48 - 3  # fields[0] is field 3
    arg_start, arg_end, env_start, env_end = (int(x) for x in fields[start:start + 4])
    if not 0 < arg_start <= arg_end <= env_start <= env_end:
        raise ValueError("unexpected start-up areas in /proc/self/stat")
    return arg_start, arg_end, env_start, env_end


def _blank(mem: BinaryIO, start: int, end: int, pick: Callable[[bytes], tuple[int, int] | None]) -> int:
    """Zero the part `pick(entry)` chooses of each NUL-ended entry between `start` and `end`."""
    mem.seek(start)
    area = mem.read(end - start)
    blanked = 0
    offset = 0
    for entry in area.split(b"\0"):
        span = pick(entry) if entry else None
        if span is not None:
            lo, hi = span
            mem.seek(start + offset + lo)
            mem.write(b"\0" * (hi - lo))
            blanked += hi - lo
        offset += len(entry) + 1
    return blanked


def _still_visible(names: set[str], keys: Sequence[str]) -> bool:
    try:
        with open("/proc/self/environ", "rb") as f:
            environ = f.read()
        with open("/proc/self/cmdline", "rb") as f:
            cmdline = f.read()
    except OSError:
        return False
    entries = [os.fsdecode(e) for e in environ.split(b"\0")]
    return any(e.partition("=")[0] in names for e in entries) or any(
        os.fsdecode(a) == k or os.fsdecode(a).endswith("=" + k) for a in cmdline.split(b"\0") for k in keys
    )
