"""A bundled Python driver run many times without paying for its library's import each time.

Each run of the openai-python driver is a process of its own that spends most of its CPU on
`import openai` (about 0.8 s: the SDK builds its pydantic models at import). Where the tests
need many runs of one driver, a warm process imports the library once and forks a copy of itself
for each run; the copy plays the driver's file as `__main__` on the standard streams, working
directory and environment of a small stand-in process (`python -I -S warm_driver.py run ...`),
which is what the runner starts, feeds and reads as the driver. The stand-in exits with the
copy's exit status; when the stand-in is gone first (the runner ended its process group on a
timeout), the warm process kills the copy. So the runner's side (the process it starts, its
pipes, exit status and process group) is what it always is, and the driver's code runs unchanged
in a process whose only difference from a fresh one is that its library was already imported.

As a script: `warm_driver.py serve SOCKET MODULE...` is the warm process (it imports the modules,
prints `ready`, and ends when its standard input closes), `warm_driver.py run SOCKET DRIVER` the
stand-in.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()


def _play(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked copy: take over the stand-in's streams and run the driver file; never returns."""
    code = 1
    try:
        for target, fd in zip((0, 1, 2), fds, strict=True):
            os.dup2(fd, target)
        os.closerange(3, 1 << 16)  # the warm process's sockets and the other runs' files
        import runpy
        # the process's own standard streams, as a fresh interpreter makes them (never closed)
        own = (open(0, encoding="utf-8", closefd=False),  # noqa: SIM115
               open(1, "w", encoding="utf-8", closefd=False),  # noqa: SIM115
               open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False))  # noqa: SIM115
        sys.stdin, sys.stdout, sys.stderr = own
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = list(request["argv"])
        sys.path[0] = str(Path(sys.argv[0]).parent)  # as for `python DRIVER`: the driver's folder first
        try:
            runpy.run_path(sys.argv[0], run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, int | None):
                print(exc.code, file=sys.stderr)
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 1
        for stream in (sys.stdout, sys.stderr, *own[1:]):  # the driver may have swapped them
            stream.flush()
    except BaseException as exc:
        os.write(2, f"warm_driver: {exc!r}\n".encode())
    finally:
        os._exit(code)


def serve(path: str, modules: list[str]) -> None:
    """The warm process: import `modules`, then fork a copy for each stand-in that connects."""
    import selectors
    import signal

    for name in modules:
        __import__(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(16)
    print("ready", flush=True)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, ("accept",))
    sel.register(sys.stdin, selectors.EVENT_READ, ("parent",))
    pids: dict[int, int] = {}  # connection fd -> the pid of its copy, while it runs
    while True:
        for key, _ in sel.select():
            kind = key.data[0]
            if kind == "parent":  # the test process closed our stdin (or is gone): stop
                for pid in pids.values():
                    os.kill(pid, signal.SIGKILL)
                return
            if kind == "accept":
                conn, _ = listener.accept()
                message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
                request = json.loads(message)
                pid = os.fork()
                if pid == 0:
                    _play(request, fds)
                for fd in fds:
                    os.close(fd)
                pids[conn.fileno()] = pid
                sel.register(os.pidfd_open(pid), selectors.EVENT_READ, ("exit", pid, conn))
                sel.register(conn, selectors.EVENT_READ, ("gone", pid))
            elif kind == "exit":  # a copy ended: tell its stand-in how
                _, pid, conn = key.data
                sel.unregister(key.fileobj)
                os.close(key.fd)
                _, status = os.waitpid(pid, 0)
                if pids.pop(conn.fileno(), None) is not None:
                    sel.unregister(conn)
                    with contextlib.suppress(OSError):  # the stand-in just went
                        conn.send(str(os.waitstatus_to_exitcode(status)).encode())
                    conn.close()
            else:  # "gone": the stand-in ended before its copy (killed): the copy goes too
                conn = key.fileobj
                sel.unregister(conn)
                pid = pids.pop(conn.fileno())
                os.kill(pid, signal.SIGKILL)
                conn.close()  # type: ignore[union-attr]


def stand_in(path: str, driver: str) -> int:
    """The process the runner starts: hand its streams to a warm copy and end as that copy did."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    conn.connect(path)
    request = {"argv": [driver], "env": dict(os.environ), "cwd": os.getcwd()}
    socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
    answer = conn.recv(64)
    if not answer:
        sys.stderr.write("warm_driver: the warm process ended before the driver did\n")
        return 70
    code = int(answer)
    if code < 0:  # the copy died of a signal: so does the stand-in
        import signal
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


class WarmDriver:
    """A warm process for one driver file; `argv` starts a run of the driver through it."""

    def __init__(self, driver: Path, *modules: str) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="warm-driver-")
        self.socket = str(Path(self._dir.name) / "s")
        self.proc = subprocess.Popen([sys.executable, str(HERE), "serve", self.socket, *modules],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line == b"ready\n", f"the warm process did not start (exit {self.proc.wait()})"
        self.argv = (sys.executable, "-I", "-S", str(HERE), "run", self.socket, str(driver))

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()
        self._dir.cleanup()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(stand_in(sys.argv[2], sys.argv[3]))
