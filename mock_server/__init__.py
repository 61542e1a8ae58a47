"""A mock DeepSeek server for wire-level tests: scripted and generated streams, faults, replay.

`MockServer` serves DeepSeek's `/chat/completions` on loopback, and the Anthropic Messages
surface DeepSeek serves at `/anthropic/v1/messages` (:mod:`dshkit.mock_server.anthropic`). Scripts (`Script`, loaded with
`load_script`) route per session; `FAULTS` and `QUIRKS` name what a step can inject; the journal
records every exchange. `dshkit serve` and the pytest plugin (`mock_deepseek`, `dshkit_mock_server`)
wrap it. The package exports what a test that mocks DeepSeek, records or replays needs
(docs/api.md); everything else (the generator in `generate`, the journal's types in `journal`,
`ScriptError` and `parse_script` in `scripts`, ...) is imported from its own module.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from dshkit.harness.lazy import lazy_attributes as _lazy_attributes

if _TYPE_CHECKING:
    from dshkit.mock_server.cassette import load_cassette
    from dshkit.mock_server.factories import (
        MockServerFactory,
        ReplayServerFactory,
        SyncMockServerFactory,
    )
    from dshkit.mock_server.faults import FAULTS
    from dshkit.mock_server.generate.chunks import QUIRKS
    from dshkit.mock_server.record import Recorder
    from dshkit.mock_server.replay import cassette_to_scripts
    from dshkit.mock_server.routing import SESSION_HEADER, RequestView
    from dshkit.mock_server.scripts import Script, load_script
    from dshkit.mock_server.server import MockServer

# Every name is imported on first use (PEP 562), so importing the package, or one module of it,
# costs only what the caller touches: `dshkit serve` never loads cassettes, the recorder, replay
# or the pytest factories (they pull in the harness's session and replay code), and a process
# that only serves reaches `dshkit.mock_server.startup` before any module has imported aiohttp
# (the server and the fault catalogue do), so that it can import aiohttp in its own way.
_LAZY: dict[str, str] = {
    "FAULTS": "faults",
    "QUIRKS": "generate.chunks",
    "SESSION_HEADER": "routing",
    "MockServer": "server",
    "MockServerFactory": "factories",
    "Recorder": "record",
    "ReplayServerFactory": "factories",
    "RequestView": "routing",
    "Script": "scripts",
    "SyncMockServerFactory": "factories",
    "cassette_to_scripts": "replay",
    "load_cassette": "cassette",
    "load_script": "scripts",
}


__getattr__ = _lazy_attributes(__name__, _LAZY)


__all__ = [
    "FAULTS",
    "QUIRKS",
    "SESSION_HEADER",
    "MockServer",
    "MockServerFactory",
    "Recorder",
    "ReplayServerFactory",
    "RequestView",
    "Script",
    "SyncMockServerFactory",
    "cassette_to_scripts",
    "load_cassette",
    "load_script",
]
