"""`conceal_from_tools`: the key leaves `os.environ` (so no tool's process inherits it) and is
blanked in what `/proc/self/environ` and `/proc/self/cmdline` show, which a tool can read from
its parent. These tests read this very process's files, as a tool would read `/proc/$PPID`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dshkit.harness.tools.concealment import conceal_from_tools

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc (Linux)")


def start_up(name: str) -> list[bytes]:
    return Path(f"/proc/self/{name}").read_bytes().split(b"\0")


def test_named_and_key_valued_variables_leave_the_environment_until_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-conceal-test-0123456789"
    monkeypatch.setenv("DSHKIT_TEST_NAMED", "anything")
    monkeypatch.setenv("DSHKIT_TEST_HOLDS_KEY", key)
    monkeypatch.setenv("DSHKIT_TEST_HOLDS_SHORT", "abc")
    done = conceal_from_tools(["DSHKIT_TEST_NAMED"], [key, "abc", None])
    assert done.removed == {"DSHKIT_TEST_NAMED": "anything", "DSHKIT_TEST_HOLDS_KEY": key}
    assert "DSHKIT_TEST_NAMED" not in os.environ and "DSHKIT_TEST_HOLDS_KEY" not in os.environ
    assert os.environ["DSHKIT_TEST_HOLDS_SHORT"] == "abc"  # a value too short to be a key is left
    assert (done.blanked, done.unreachable) == (0, None)  # set after start-up: nothing there to blank
    os.environ["DSHKIT_TEST_NAMED"] = "set again meanwhile"
    done.restore()
    assert os.environ["DSHKIT_TEST_NAMED"] == "set again meanwhile"  # a newer value is kept
    assert os.environ["DSHKIT_TEST_HOLDS_KEY"] == key and done.removed == {}


def test_the_start_up_environment_and_command_line_are_blanked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blanks one variable and one argument this process started with (`os.environ` and
    `sys.argv` are copies, so only the `/proc` view of them changes; the variable is put back
    in `os.environ` at teardown)."""
    entries = [e for e in start_up("environ") if e]
    name, _, value = next(
        e.partition(b"=") for e in reversed(entries)
        if os.environ.get(os.fsdecode(e.partition(b"=")[0])) == os.fsdecode(e.partition(b"=")[2])
    )
    variable = os.fsdecode(name)
    monkeypatch.delenv(variable)  # gone from os.environ already: still blanked by its name
    argument = [a for a in start_up("cmdline") if a][-1]
    copies = start_up("cmdline").count(argument)
    done = conceal_from_tools([variable], [os.fsdecode(argument)])
    assert done.unreachable is None and done.removed == {}
    assert done.blanked == len(name) + 1 + len(value) + copies * len(argument)
    assert not [e for e in start_up("environ") if e.startswith(name + b"=")]
    assert argument not in start_up("cmdline")
