"""What the bundled Python drivers' tests share: the one skip reason when a driver's library is
missing, and a driver's describe answer read in this process.

A driver answers a describe request before it imports its library (`Driver.answer_describe`), so
that answer can be read without the library and without a process of its own: the driver's file
is executed here with the describe task on its standard input, up to the `SystemExit` the answer
ends in; what it printed, its exit status and its `DRIVER` (its options, tries and known notes)
are kept. Scenario runs need the library: `need_library` skips a test whose driver's library is
not installed for the interpreter the runner would start it with (`resolve_client`).
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import pytest

from dshkit.conformance.client_protocol import (
    CLIENTS_DIR,
    describe_task,
    not_applicable,
    parse_line,
)
from dshkit.conformance.client_runner import (
    BUNDLED_CLIENTS,
    ClientCommand,
    ClientError,
    describe_client,
    resolve_client,
)

from ..catalogue_runs import catalogue
from ..client_runs import run, scenarios

__all__ = ["Described", "assert_declarations_fit_the_catalogue", "assert_describes_itself_before_its_import",
           "assert_fails_only_its_known_defects", "describe_here", "library_missing", "need_library"]


@dataclass
class Described:
    """A driver's describe answer, run in this process."""

    code: object
    """The exit status it ended with (None: it went on past the describe answer)."""
    stdout: str
    stderr: str
    driver: Any
    """The driver's `DRIVER` (a `driverkit.Driver`)."""


def describe_here(name: str) -> Described:
    """Execute the bundled driver `name` on a describe task, as `describe_client` feeds it."""
    path = CLIENTS_DIR / BUNDLED_CLIENTS[name][1]
    namespace: dict[str, Any] = {"__name__": "describe_here", "__file__": str(path)}
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin, sys.stdout, sys.stderr, list(sys.path)
    sys.path.insert(0, str(CLIENTS_DIR))  # as for `python DRIVER`: `import driverkit` finds its sibling
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(json.dumps(describe_task())), out, err
    code: object = None
    try:
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec", dont_inherit=True), namespace)
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved[:3]
        sys.path[:] = saved[3]
    return Described(code=code, stdout=out.getvalue(), stderr=err.getvalue(), driver=namespace.get("DRIVER"))


def _installed(package: str) -> bool:
    try:
        version(package)
    except PackageNotFoundError:
        return False
    return True


def library_missing(name: str) -> str | None:
    """Why the bundled driver `name` cannot play a scenario here (None when it can): the suite's
    one skip reason for a client library that is not installed."""
    cmd = resolve_client(name)
    python = cmd.argv[0]
    if python == sys.executable:
        missing = [p for p in describe_here(name).driver.packages if not _installed(p)]
        detail = ", ".join(missing)
    else:  # another interpreter ($DSHKIT_CLIENTS_PYTHON): only its describe run can tell
        try:
            asyncio.run(describe_client(cmd))
            detail = ""
        except ClientError as exc:
            detail = str(exc).strip().splitlines()[-1]
    if not detail:
        return None
    return (f"the {name} driver's library is not installed for {python} ({detail}): `make clients` installs the "
            "client libraries into .venv-clients; set DSHKIT_CLIENTS_PYTHON=.venv-clients/bin/python to run this")


def need_library(name: str) -> ClientCommand:
    """The command that starts the bundled driver `name`, or skip the test with `library_missing`."""
    reason = library_missing(name)
    if reason is not None:
        pytest.skip(reason)
    return resolve_client(name)


def assert_describes_itself_before_its_import(name: str) -> None:
    """The driver's describe answer needs no import of its library: with every package installed
    it prints a valid `hello` naming their versions and exits 0; with one missing it prints
    nothing on stdout and exits 1 naming the missing ones (the runner then reports that the
    client did not describe itself, instead of failing every scenario)."""
    got = describe_here(name)
    assert got.driver is not None and got.driver.client == name
    missing = [p for p in got.driver.packages if not _installed(p)]
    if missing:
        assert (got.code, got.stdout) == (1, ""), got.stderr
        assert got.stderr == f"{name}: not installed: {', '.join(missing)}\n"
        return
    assert got.code == 0, got.stderr
    hello = parse_line(got.stdout.encode(), 1, expect="hello")
    assert hello["client"] == name and hello["protocols"] == got.driver.protocols
    assert hello["libraries"] == {p: version(p) for p in got.driver.packages}
    assert got.stdout.count("\n") == 1


def assert_declarations_fit_the_catalogue(name: str) -> None:
    """What the driver declares for the matrix refers to what exists: each `known` note names a
    catalogue scenario of its wire that the client is judged on (a note on any other id would never
    be shown, nor reported stale), and each option set in `tries` uses only options it documents
    (the reruns would otherwise end in a usage error)."""
    driver = describe_here(name).driver
    hello = {"unsupported": driver.unsupported}
    by_id = {s.id: s for s in catalogue()}
    for sid, note in driver.known.items():
        assert sid in by_id, f"{name}: known note on {sid!r}, which is no catalogue scenario"
        sc = by_id[sid]
        assert set(sc.protocols) & set(driver.protocols), (name, sid, sc.protocols)
        assert not_applicable(sc, hello) is None, (name, sid, not_applicable(sc, hello))
        assert note.strip(), (name, sid)
    assert driver.tries, f"{name}: no option set for the matrix to try"
    for tried in driver.tries:
        assert set(tried) <= set(driver.options_doc), (name, tried, driver.options_doc)


def assert_fails_only_its_known_defects(name: str, ids: tuple[str, ...]) -> None:
    """Played with its library, the driver passes each of `ids` except the ones its `known` notes
    explain, and fails those: the notes the matrix shows are what the library really does.
    Skipped, with `library_missing`'s reason, where the library is not installed."""
    cmd = need_library(name)
    results = run(cmd, scenarios(ids))
    known = set(describe_here(name).driver.known)
    assert {i: r.status for i, r in results.items()} == {i: "fail" if i in known else "pass" for i in ids}, \
        {i: r.reason for i, r in results.items()}
