"""Run `python -m dshkit.mock_server serve` as a subprocess and read its JSON lines (no fixed port, no sleep)."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

SHARES_PLAIN_SERVE = pytest.mark.xdist_group("plain-serve")
"""On the tests of the `plain_serve` fixture (tests/conftest.py): one worker runs them all under
`--dist loadgroup`, so one plain `dshkit serve` process serves them."""


class ServeProcess:
    """A `serve` subprocess; `ready` is its first stdout line, parsed."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dshkit.mock_server", "serve", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._buffer = b""
        self.stderr = ""
        """Everything the process wrote to stderr, once :meth:`stop` returned."""
        self.ready = self.next_line(timeout=20)

    @property
    def base_url(self) -> str:
        return str(self.ready["base_url"])

    def next_line(self, timeout: float = 5) -> dict[str, Any]:
        """The next stdout JSON line; fails (instead of hanging) when none comes in time."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise AssertionError(f"no line from `serve` within {timeout}s")
                data = os.read(fd, 65536)
                if not data:
                    err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                    raise AssertionError(f"`serve` exited with {self.proc.wait()}: {err}")
                self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        return dict(json.loads(line))

    def stop(self, sig: int | None = signal.SIGINT, timeout: float = 10) -> tuple[int, str]:
        """Send `sig` (None: none, the process is already stopping), wait, and return the exit
        code and the rest of stdout."""
        if sig is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=timeout)
        self.stderr = (err or b"").decode(errors="replace")
        return self.proc.returncode, (self._buffer + out).decode()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
