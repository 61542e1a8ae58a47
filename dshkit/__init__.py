"""The `dshkit` application layer: the command line over every package.

`dshkit.harness` (agent loop, adapters, session logs, tools), `dshkit.mock_server`,
`dshkit.conformance` and `dshkit.view` are libraries that do not import one another's command lines; this package is the
one place allowed to import all of them. `dshkit.cli` is the entry point and imports a
subcommand's module (`dshkit.run`, `dshkit.replay`, `dshkit.decode`, or a library's own `cli`
module) only when that subcommand runs, so `dshkit run` starts without loading the mock
server's recorder or the conformance catalogue.
"""

__all__: list[str] = []
