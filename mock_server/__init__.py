"""A mock DeepSeek server for wire-level tests: scripted and generated streams, faults, replay.

`MockServer` serves DeepSeek's `/chat/completions` on loopback, and the Anthropic Messages
surface DeepSeek serves at `/anthropic/v1/messages` (:mod:`dshkit.mock_server.anthropic`). Scripts (`Script`, loaded with
`load_script`) route per session; `generate_chunks`/`encode_sse`/`plan_writes` are the pure
generator other components reuse; `FAULTS` is the fault catalogue; the `Journal` records every
exchange. `dshkit serve` and the pytest plugin (`mock_deepseek`, `dshkit_mock_server`) wrap it.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from dshkit.mock_server.faults import FAULTS
from dshkit.mock_server.generate.chunks import QUIRKS
from dshkit.mock_server.journal import Journal, JournalEntry, UnconsumedStepsError
from dshkit.mock_server.routing import SESSION_HEADER, RequestView
from dshkit.mock_server.scripts import CallbackStep, Script, ScriptError, load_script, parse_script
from dshkit.mock_server.server import MockServer

if _TYPE_CHECKING:
    from dshkit.mock_server.cassette import CassetteError, load_cassette, script_to_cassette
    from dshkit.mock_server.factories import (
        AwaitableMockServer,
        MockServerFactory,
        ReplayServerFactory,
        SyncMockServerFactory,
    )
    from dshkit.mock_server.record import Recorder
    from dshkit.mock_server.replay import cassette_to_scripts

# What `dshkit serve` does not need is imported on first use (PEP 562), so the server is ready
# sooner: cassettes, the recorder, replay and the pytest factories pull in the harness's session
# and replay code.
_LAZY: dict[str, str] = {
    "AwaitableMockServer": "dshkit.mock_server.factories",
    "CassetteError": "dshkit.mock_server.cassette",
    "MockServerFactory": "dshkit.mock_server.factories",
    "Recorder": "dshkit.mock_server.record",
    "ReplayServerFactory": "dshkit.mock_server.factories",
    "SyncMockServerFactory": "dshkit.mock_server.factories",
    "cassette_to_scripts": "dshkit.mock_server.replay",
    "load_cassette": "dshkit.mock_server.cassette",
    "script_to_cassette": "dshkit.mock_server.cassette",
}


def __getattr__(name: str) -> _Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


#: Items of the server checklist (`wire.md` §13) this server implements; each is checked by
#: tests/mock_server/test_claims.py against a server started with `--api-key`. S40 (FIM) is not.
CLAIMED_S_ITEMS: tuple[str, ...] = (
    *(f"S{i}" for i in range(1, 22)),
    "S21b",
    *(f"S{i}" for i in range(22, 40)),
    "S41",
)

__all__ = [
    "CLAIMED_S_ITEMS",
    "FAULTS",
    "QUIRKS",
    "SESSION_HEADER",
    "AwaitableMockServer",
    "CallbackStep",
    "CassetteError",
    "Journal",
    "JournalEntry",
    "MockServer",
    "MockServerFactory",
    "Recorder",
    "ReplayServerFactory",
    "RequestView",
    "Script",
    "ScriptError",
    "SyncMockServerFactory",
    "UnconsumedStepsError",
    "cassette_to_scripts",
    "load_cassette",
    "load_script",
    "parse_script",
    "script_to_cassette",
]
