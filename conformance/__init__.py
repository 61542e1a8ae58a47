"""The adapter conformance suite: a catalogue of wire scenarios (data), a runner that plays them
over real HTTP against any adapter factory, the server checks (S1–S41), reports, the
`dshkit conformance` command and a pytest plugin (`pytest --pyargs dshkit.conformance
--dshkit-adapter MOD:FACTORY`). The client runner plays the same catalogue with client libraries
in any language, through drivers speaking the client protocol (docs/client_protocol.md).
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from dshkit.harness.lazy import lazy_attributes as _lazy_attributes

if _TYPE_CHECKING:
    from .anthropic_checks import run_anthropic_checks
    from .client_runner import ClientCommand, run_client_catalogue
    from .report import write_json, write_junit
    from .runner import run_catalogue
    from .scenario import load_catalogue
    from .server_checks import run_server_checks

# Every name is imported on first use (PEP 562). pytest imports this package in every run of
# every project dshkit is installed in (the plugin `dshkit.conformance.pytest_plugin` lives
# here); importing the runner, the checks and the mock server with it added most of a second to
# each of those runs, which use none of them unless `--dshkit-adapter` is given.
_LAZY: dict[str, str] = {
    "ClientCommand": "client_runner",
    "load_catalogue": "scenario",
    "run_anthropic_checks": "anthropic_checks",
    "run_catalogue": "runner",
    "run_client_catalogue": "client_runner",
    "run_server_checks": "server_checks",
    "write_json": "report",
    "write_junit": "report",
}

__getattr__ = _lazy_attributes(__name__, _LAZY)

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
