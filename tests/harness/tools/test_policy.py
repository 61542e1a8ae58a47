"""The approval channel a command line gets from `terminal_approver`: `--yes` approves, a TTY
asks `[y/N]` (only `y`/`yes` approve), and where no one can answer the ask becomes a denial
that says how to allow the call."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator

import pytest

from dshkit.harness.tools import ToolRuntime, define_tool
from dshkit.harness.tools.policy import terminal_approver


async def test_no_tty_ask_is_a_denial_saying_how_to_allow() -> None:
    tool = define_tool("bash", "x", {"type": "object"}, lambda a: "ran", requires_approval=True)
    approver = terminal_approver(yes=False, stdin=io.StringIO(""))
    result = await ToolRuntime([tool], approver=approver).execute("c", "bash", "{}")
    assert result.is_error and "re-run with --yes" in result.text
    yes = await ToolRuntime([tool], approver=terminal_approver(yes=True)).execute("c", "bash", "{}")
    assert yes.text == "ran"


@pytest.fixture
def terminal() -> Iterator[tuple[int, io.TextIOWrapper]]:
    """A pseudo-terminal: the fd a person types into, and the TTY the approver reads."""
    typed, tty_fd = os.openpty()
    with open(tty_fd, encoding="utf-8", closefd=True) as tty:
        yield typed, tty
    os.close(typed)


REJECTED = 'Error: the user rejected tool "bash"'


@pytest.mark.parametrize(("answer", "text"), [
    ("yes", "ran"), (" Y ", "ran"),  # any case, spaces around
    ("n", REJECTED), ("", REJECTED), ("yeah", REJECTED), ("ok", REJECTED),  # [y/N]: no by default
])
async def test_a_tty_is_asked_and_only_yes_approves(
    terminal: tuple[int, io.TextIOWrapper], answer: str, text: str,
) -> None:
    typed, tty = terminal
    os.write(typed, f"{answer}\n".encode())
    shown = io.StringIO()
    tool = define_tool("bash", "x", {"type": "object"}, lambda a: "ran", requires_approval=True)
    approver = terminal_approver(stdin=tty, stdout=shown)
    result = await ToolRuntime([tool], approver=approver).execute("c", "bash", '{"command": "ls"}')
    assert result.text == text
    assert shown.getvalue() == '\nAllow bash {"command": "ls"}? (tool "bash" requires approval) [y/N] '
