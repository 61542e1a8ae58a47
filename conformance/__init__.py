"""The adapter conformance suite: a catalogue of wire scenarios (data), a runner that plays them
over real HTTP against any adapter factory, the server checks (S1–S41), reports, the
`dshkit conformance` command and a pytest plugin (`pytest --pyargs dshkit.conformance
--dshkit-adapter MOD:FACTORY`). The client runner plays the same catalogue with client libraries
in any language, through drivers speaking the client protocol (docs/client_protocol.md).
"""

from .anthropic_checks import ANTHROPIC_SERVER_CHECKS, run_anthropic_checks
from .checks import CheckResult, canonical, unified
from .client_protocol import PROTOCOL_VERSION
from .client_runner import (
    BUNDLED_CLIENTS,
    ClientCommand,
    ClientError,
    ClientScenarioResult,
    describe_client,
    resolve_client,
    run_client_catalogue,
)
from .report import to_json, to_junit, write_json, write_junit
from .runner import (
    DEFAULT_ADAPTER,
    DEFAULT_ANTHROPIC_ADAPTER,
    FactoryError,
    ScenarioResult,
    for_protocol,
    load_factory,
    run_catalogue,
    run_scenario,
)
from .scenario import (
    CAPABILITIES,
    CAPABILITY_NOTES,
    PROTOCOLS,
    SCENARIO_DIR,
    Scenario,
    ScenarioError,
    load_catalogue,
    load_scenario_file,
)
from .server_checks import SERVER_CHECKS, run_server_checks

__all__ = [
    "ANTHROPIC_SERVER_CHECKS",
    "BUNDLED_CLIENTS",
    "CAPABILITIES",
    "CAPABILITY_NOTES",
    "CheckResult",
    "ClientCommand",
    "ClientError",
    "ClientScenarioResult",
    "DEFAULT_ADAPTER",
    "DEFAULT_ANTHROPIC_ADAPTER",
    "FactoryError",
    "PROTOCOLS",
    "PROTOCOL_VERSION",
    "SCENARIO_DIR",
    "SERVER_CHECKS",
    "Scenario",
    "ScenarioError",
    "ScenarioResult",
    "canonical",
    "describe_client",
    "for_protocol",
    "load_catalogue",
    "load_factory",
    "load_scenario_file",
    "resolve_client",
    "run_anthropic_checks",
    "run_catalogue",
    "run_client_catalogue",
    "run_scenario",
    "run_server_checks",
    "to_json",
    "to_junit",
    "unified",
    "write_json",
    "write_junit",
]
