"""The adapter conformance suite: a catalogue of wire scenarios (data), a runner that plays them
over real HTTP against any adapter factory, the server checks (S1–S41), reports, the
`dshkit conformance` command and a pytest plugin (`pytest --pyargs dshkit.conformance
--dshkit-adapter MOD:FACTORY`). The client runner plays the same catalogue with client libraries
in any language, through drivers speaking the client protocol (docs/client_protocol.md).
"""

from .anthropic_checks import run_anthropic_checks
from .client_runner import ClientCommand, run_client_catalogue
from .report import write_json, write_junit
from .runner import run_catalogue
from .scenario import load_catalogue
from .server_checks import run_server_checks

__all__ = [
    "ClientCommand",
    "load_catalogue",
    "run_anthropic_checks",
    "run_catalogue",
    "run_client_catalogue",
    "run_server_checks",
    "write_json",
    "write_junit",
]
