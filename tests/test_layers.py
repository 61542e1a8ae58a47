"""The package layers hold: `harness` imports neither `mock_server` nor `conformance` (nor the
`dshkit` application layer), `import dshkit.mock_server` does not import pytest, the `dshkit` command
imports only the module of the subcommand it runs, and a cold `dshkit run` sends its first request
without loading modules it does not need yet (jsonschema, pydantic, the mock server).

The import facts are checked in fresh interpreters (a subprocess each, but some facts share one:
the walk of every harness module, then `import dshkit.mock_server`, then the walk of every module,
in one interpreter; `import dshkit.run` and what a `dshkit run --base-url` loads by its first
connection in another; the modules and the CA certificates of one plain `dshkit serve` at its
ready line and its collector at its first request in a third), since this test process has
long since imported everything; the static check also catches imports inside functions,
which no import of the package would run.
"""

from __future__ import annotations

import ast
import json
import os
import re
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dshkit.cli import COMMANDS, build_parser
from dshkit.run import API_KEY_ENV

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN_IN_HARNESS = ("dshkit.mock_server", "dshkit.conformance", "dshkit.view", "dshkit.cli",
                        "dshkit.run", "dshkit.replay", "dshkit.decode", "dshkit.args")
"""Everything of dshkit the harness may not import: the other libraries and the command line."""
BARE_NAMES = ("harness", "mock_server", "conformance", "dshkit_view")
"""The repository's folder names, installed only as `dshkit.<name>` (`dshkit.view` for the
last): importing one bare would load a second copy of the module, or a user's own package."""


def _modules_after(code: str) -> set[str]:
    """The names in `sys.modules` after running `code` in a fresh interpreter."""
    (modules,) = _modules_after_each(code)
    return modules


def _modules_after_each(*codes: str) -> list[set[str]]:
    """The names in `sys.modules` after each of `codes`, run one after the other in one fresh
    interpreter: for a code that imports everything an earlier one did anyway, its set is the
    one a fresh interpreter of its own would show."""
    report = "\nimport json as _j, sys as _s\nprint(_j.dumps(sorted(_s.modules)), flush=True)\n"
    script = "".join(code + report for code in codes)
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()[-len(codes):]
    return [set(json.loads(line)) for line in lines]


def _top(name: str) -> str:
    """The package a module belongs to: `dshkit.harness` for `dshkit.harness.llm.chunks`, `dshkit.cli`
    for itself, `httpx` for `httpx._client`."""
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "dshkit" and len(parts) > 1 else parts[0]


def _imports(path: Path, text: str | None = None) -> list[tuple[int, str]]:
    """Every absolute import in a source file (its `text`, when already read), with its line,
    function bodies included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8") if text is None else text)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.append((node.lineno, node.module or ""))
    return found


def test_no_harness_module_imports_the_other_packages_even_lazily() -> None:
    found = [f"{path.relative_to(ROOT)}:{line} imports {name}"
             for path in sorted((ROOT / "harness").rglob("*.py"))
             for line, name in _imports(path) if _top(name) in FORBIDDEN_IN_HARNESS]
    assert found == []


def test_no_source_imports_a_repository_folder_by_its_bare_name() -> None:
    sources = [p for folder in ("dshkit", *BARE_NAMES, "tests", "bench", "recordings")
               for p in sorted((ROOT / folder).rglob("*.py")) if ".venv" not in p.parts]
    assert len(sources) > 100
    texts = {path: path.read_text(encoding="utf-8") for path in sources}
    # Only a source holding a bare name as a name of its own (not after a dot, not inside a
    # longer name) can import it: the first part of an import's dotted name follows `import`,
    # `from`, a comma or a line break. The others (two thirds) need no parse.
    bare_word = re.compile(r"(?<![\w.])(?:" + "|".join(BARE_NAMES) + r")\b")
    found = [f"{path.relative_to(ROOT)}:{line} imports {name}"
             for path, text in texts.items() if bare_word.search(text)
             for line, name in _imports(path, text) if name.split(".")[0] in BARE_NAMES]
    # `python -m NAME` in a subprocess would import the bare folder as well
    run_as_main = re.compile(r'"-m",\s*"(?:' + "|".join(BARE_NAMES) + r')[".]')
    found += [f"{path.relative_to(ROOT)} runs python -m on a bare name"
              for path, text in texts.items() if run_as_main.search(text)]
    assert found == []


@dataclass(frozen=True)
class Walks:
    harness: set[str]
    """`sys.modules` of a fresh interpreter once it has imported every harness module."""
    mock_server: set[str]
    """The same interpreter's, once it has gone on to `import dshkit.mock_server` and look up its
    `MockServer`: what that import alone loads, and what every harness module loads (none of
    which is the mock server's, nor pytest: see the tests below)."""
    everything: set[str]
    """The same interpreter's, once it has gone on to import every module of the package (the
    harness's among them, so the set is the one a walk of everything alone would leave)."""


@pytest.fixture(scope="module")
def walks() -> Walks:
    harness, mock_server, everything = _modules_after_each(
        "import importlib, pkgutil, dshkit.harness\n"
        "for info in pkgutil.walk_packages(dshkit.harness.__path__, 'dshkit.harness.'):\n"
        "    importlib.import_module(info.name)",
        "import dshkit.mock_server\ndshkit.mock_server.MockServer",
        "import importlib, pkgutil, dshkit\n"
        "for info in pkgutil.walk_packages(dshkit.__path__, 'dshkit.'):\n"
        "    if not info.name.endswith('__main__') and '.pytest_plugin' not in info.name:\n"
        "        importlib.import_module(info.name)",
    )
    return Walks(harness, mock_server, everything)


SHARES_WALKS = pytest.mark.xdist_group("layers-walks")
"""On the tests of `walks`: one worker runs them (`--dist loadgroup`), so one process starts."""


@SHARES_WALKS
def test_installed_namespace_leaves_the_bare_names_free(walks: Walks) -> None:
    """A user's own `harness`, `mock_server` or `conformance` package never meets dshkit's."""
    modules = walks.everything
    assert "dshkit.mock_server.server" in modules and "dshkit.view.pages" in modules
    assert sorted(m for m in modules if m.split(".")[0] in BARE_NAMES) == []


@SHARES_WALKS
def test_importing_every_harness_module_loads_no_other_package(walks: Walks) -> None:
    modules = walks.harness
    assert len([m for m in modules if _top(m) == "dshkit.harness"]) > 20  # the walk did import them
    assert sorted(m for m in modules if _top(m) in FORBIDDEN_IN_HARNESS) == []


@SHARES_WALKS
def test_import_mock_server_imports_no_pytest(walks: Walks) -> None:
    assert "dshkit.mock_server.server" not in walks.harness  # so the mock server's import loaded it
    modules = walks.mock_server
    assert "dshkit.mock_server.server" in modules
    assert sorted(m for m in modules if _top(m) in ("pytest", "_pytest", "pytest_asyncio", "syrupy")) == []


@pytest.mark.parametrize("command", ["run", "decode", "replay"])
def test_the_cli_imports_only_the_module_of_the_command_it_runs(command: str) -> None:
    modules = _modules_after(
        "from dshkit.cli import main\n"
        "try:\n"
        f"    main([{command!r}, '--help'])\n"
        "except SystemExit:\n"
        "    pass"
    )
    own = COMMANDS[command]
    assert own in modules
    others = {m for name, m in COMMANDS.items() if name != command} - {own}
    assert sorted(others & modules) == []
    assert "dshkit.conformance" not in modules and "dshkit.view" not in modules


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_command_alone_has_the_same_help_as_in_the_whole_parser(command: str) -> None:
    def help_of(parser: object) -> str:
        (action,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]  # type: ignore[attr-defined]
        return str(action.choices[command].format_help())

    assert help_of(build_parser(command)) == help_of(build_parser())


HEAVY_BEFORE_FIRST_REQUEST = ("jsonschema", "pydantic", "dshkit.mock_server", "dshkit.conformance", "dshkit.view",
                              "aiohttp", "yaml")
"""Top-level packages `dshkit run --base-url` must not import before its first request: each
costs tens of milliseconds of a cold start and none is needed until a tool runs (jsonschema,
pydantic) or at all against a real endpoint (the mock server, aiohttp, yaml)."""

UNTIL_FIRST_CONNECTION = """\
import json, os, sys

def stop(event, args):
    if event == "socket.connect":  # the first request is about to go out
        with open(os.environ["DSHKIT_MODULES_OUT"], "w") as out:
            json.dump(sorted(sys.modules), out)
        os._exit(0)

sys.addaudithook(stop)
import dshkit.run  # what importing it alone loads (the run imports it anyway, before connecting)
with open(os.environ["DSHKIT_MODULES_OUT"] + ".import", "w") as out:
    json.dump(sorted(sys.modules), out)
from dshkit.cli import main
main(sys.argv[1:])
"""


@dataclass(frozen=True)
class FirstConnection:
    modules: set[str]
    """What a fresh `dshkit run` has imported when it opens its first connection."""
    import_run: set[str]
    """What the same interpreter had imported just after `import dshkit.run`, first thing: what
    that import alone loads (the run itself imports it as well, so its own set is unchanged)."""


def _modules_at_first_connection(tmp_path: Path, *argv: str) -> FirstConnection:
    """The modules a fresh `dshkit run` has imported when it opens its first connection (an
    audit hook on `socket.connect` records them and ends the process there)."""
    out = tmp_path / "modules.json"
    env = {**os.environ, "DSHKIT_MODULES_OUT": str(out)}
    env.pop(API_KEY_ENV, None)
    args = ["run", "hello", "--workspace", str(tmp_path), "--session", str(tmp_path / "s.jsonl"),
            "--api-key", "sk-test", "--json", *argv]
    result = subprocess.run([sys.executable, "-c", UNTIL_FIRST_CONNECTION, *args], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert out.exists(), f"dshkit run never connected (exit {result.returncode}): {result.stderr[-2000:]}"
    first = Path(f"{out}.import")
    return FirstConnection(set(json.loads(out.read_text(encoding="utf-8"))),
                           set(json.loads(first.read_text(encoding="utf-8"))))


def _closed_port() -> int:
    """A loopback port nobody listens on, so a connection that did go out fails at once."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def base_url_run(tmp_path_factory: pytest.TempPathFactory) -> FirstConnection:
    """One fresh `dshkit run --base-url` to its first connection, for both what it imported by
    then and what its `import dshkit.run` alone did."""
    return _modules_at_first_connection(tmp_path_factory.mktemp("first-connection"),
                                        "--base-url", f"http://127.0.0.1:{_closed_port()}")


SHARES_BASE_URL_RUN = pytest.mark.xdist_group("layers-base-url-run")
"""On the tests of `base_url_run`: one worker runs them (`--dist loadgroup`), so one process starts."""


@SHARES_BASE_URL_RUN
def test_import_dshkit_run_loads_no_heavy_module(base_url_run: FirstConnection) -> None:
    modules = base_url_run.import_run
    assert "dshkit.harness.loop" in modules and "httpx" in modules
    assert sorted(m for m in modules if _top(m) in HEAVY_BEFORE_FIRST_REQUEST) == []


@SHARES_BASE_URL_RUN
def test_dshkit_run_with_base_url_sends_its_first_request_without_heavy_modules(base_url_run: FirstConnection) -> None:
    modules = base_url_run.modules
    assert "dshkit.harness.tools.builtin" in modules and "dshkit.harness.providers.deepseek.adapter" in modules
    assert sorted({_top(m) for m in modules} & set(HEAVY_BEFORE_FIRST_REQUEST)) == []
    assert "dshkit.harness.replay" not in modules  # replaying logs: loaded on first use


def test_embedded_dshkit_run_loads_the_mock_server_but_not_jsonschema(tmp_path: Path) -> None:
    modules = _modules_at_first_connection(tmp_path).modules
    assert "dshkit.mock_server.server" in modules and "aiohttp" in modules
    assert sorted({_top(m) for m in modules} & {"jsonschema", "dshkit.conformance", "dshkit.view"}) == []


UNTIL_READY = """\
import json, os, runpy, sys

class _StopAtReady:
    def __init__(self, out):
        self.out = out
        self.ready = None

    def write(self, text):
        if '"type": "ready"' in text:  # `dshkit serve` is ready: what has it imported?
            import ssl
            import aiohttp.connector
            cas = ssl.create_default_context().cert_store_stats()["x509_ca"]
            # aiohttp's own default client context (a private name: -1 if aiohttp renames it)
            own = getattr(aiohttp.connector, "_SSL_CONTEXT_VERIFIED", None)
            self.ready = {"modules": sorted(sys.modules), "ca_certificates": cas,
                          "aiohttp_ca_certificates": own.cert_store_stats()["x509_ca"] if own else -1}
            if not os.environ.get("DSHKIT_THEN_REQUEST"):
                self.stop()
            # ask something, from a thread: the server's loop runs here (imported only now, so
            # that the modules above are the server's alone)
            import threading, urllib.request
            ready = json.loads(text.splitlines()[0])
            body = json.dumps({"model": "deepseek-chat", "messages": [{"role": "user", "content": "hi"}]})
            request = urllib.request.Request(ready["base_url"] + "/chat/completions", body.encode(),
                                             {"Content-Type": "application/json"})
            threading.Thread(target=urllib.request.urlopen, args=(request,), daemon=True).start()
        elif self.ready is not None and ('"type": "request"' in text or '"type": "result"' in text):
            import gc  # serving: is the collector on?
            self.ready.update(collector_on=gc.isenabled(), frozen=gc.get_freeze_count())
            self.stop()
        return self.out.write(text)

    def stop(self):
        with open(os.environ["DSHKIT_MODULES_OUT"], "w") as f:
            json.dump(self.ready, f)
        os._exit(0)

    def __getattr__(self, name):
        return getattr(self.out, name)

sys.stdout = _StopAtReady(sys.stdout)
if os.environ.get("DSHKIT_ENTRY") == "module":  # python -m dshkit.mock_server serve ...
    runpy.run_module("dshkit.mock_server", run_name="__main__", alter_sys=True)
else:  # dshkit serve ..., as the console script calls it (no argv: the process is the command)
    from dshkit.cli import main
    main()
"""

NOT_NEEDED_TO_SERVE = ("yaml", "importlib.metadata", "dshkit.harness.llm.messages", "dshkit.harness.llm.chunks",
                       "dshkit.harness.llm.codec", "dshkit.harness.session", "dshkit.harness.replay")
"""What `dshkit serve` without a script file is ready without: the YAML parser (for script
files), pydantic's plugin lookup (it runs when a model's validator is first built: a plain
`--sequence` builds none), and the harness beyond its errors, `jsonio` and the secrets policy."""


def _when_serve_is_ready(tmp_path: Path, *argv: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """What a fresh `dshkit serve` (or with `DSHKIT_ENTRY=module` in `env`, `python -m
    dshkit.mock_server serve`) has imported by its ready line, and how many CA certificates a
    TLS context made then loads, and aiohttp's own client context holds; with
    `DSHKIT_THEN_REQUEST=1` in `env`, also whether its collector is on once it serves a first
    request (`collector_on`) and how many objects are frozen out of it then (`frozen`)."""
    out = tmp_path / "modules.json"
    env = {**os.environ, **(env or {}), "DSHKIT_MODULES_OUT": str(out)}
    env.pop("DSHKIT_MOCK_API_KEY", None)
    result = subprocess.run([sys.executable, "-c", UNTIL_READY, "serve", "--port", "0", *argv], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120, check=False)
    assert out.exists(), f"dshkit serve never got ready (exit {result.returncode}): {result.stderr[-2000:]}"
    return dict(json.loads(out.read_text(encoding="utf-8")))


def _ca_bundle() -> str | None:
    """The system's CA bundle file, when there is one."""
    import ssl

    bundle = ssl.get_default_verify_paths().openssl_cafile
    return bundle if Path(bundle).is_file() else None


@pytest.fixture(scope="module")
def plain_serve_ready(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One fresh `dshkit serve` (no script) at its ready line, for the modules it loaded and the
    CA certificates a TLS context made then holds, and then at its first request, for its
    collector: run as on a user's machine, with $SSL_CERT_FILE naming the system's bundle (the
    suite's conftest empties it), when there is one."""
    bundle = _ca_bundle()
    return _when_serve_is_ready(tmp_path_factory.mktemp("serve-ready"),
                                env={"DSHKIT_THEN_REQUEST": "1", **({"SSL_CERT_FILE": bundle} if bundle else {})})


SHARES_SERVE_READY = pytest.mark.xdist_group("layers-serve-ready")
"""On the tests of `plain_serve_ready`: one worker runs them (`--dist loadgroup`), so one process starts."""


@SHARES_SERVE_READY
@pytest.mark.parametrize("argv", [[], ["--sequence", "rate_limit,success"]])
def test_dshkit_serve_gets_ready_without_modules_it_does_not_need(
        request: pytest.FixtureRequest, tmp_path: Path, argv: list[str]) -> None:
    ready = _when_serve_is_ready(tmp_path, *argv) if argv else request.getfixturevalue("plain_serve_ready")
    modules = set(ready["modules"])
    assert "dshkit.mock_server.server" in modules and "aiohttp.web" in modules
    loaded = [m for m in modules if any(m == n or m.startswith(n + ".") for n in NOT_NEEDED_TO_SERVE)]
    assert loaded == []


def test_dshkit_serve_with_a_script_file_loads_yaml_for_it(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("steps:\n  - reply: {content: hi}\n  - rate_limit\n", encoding="utf-8")
    assert "yaml" in _when_serve_is_ready(tmp_path, "--script", str(script))["modules"]


@SHARES_SERVE_READY
@pytest.mark.parametrize("entry", ["dshkit", "module"])
def test_tls_contexts_made_in_dshkit_serve_still_load_the_ca_certificates(
        request: pytest.FixtureRequest, tmp_path: Path, entry: str) -> None:
    """`dshkit serve` and `python -m dshkit.mock_server serve` import aiohttp without reading the
    CA certificates into aiohttp's own client contexts (they never open a client connection);
    any other TLS context is made as usual."""
    import ssl

    # The suite's conftest empties $SSL_CERT_FILE (no bundle loaded); that serve named a real one.
    bundle = _ca_bundle()
    if bundle is None:
        pytest.skip(f"no CA bundle at {ssl.get_default_verify_paths().openssl_cafile}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(cafile=bundle)
    expected = context.cert_store_stats()["x509_ca"]
    assert expected > 0
    ready = (request.getfixturevalue("plain_serve_ready") if entry == "dshkit"
             else _when_serve_is_ready(tmp_path, env={"SSL_CERT_FILE": bundle, "DSHKIT_ENTRY": entry}))
    assert ready["ca_certificates"] == expected
    assert ready["aiohttp_ca_certificates"] == 0


@SHARES_SERVE_READY
def test_dshkit_serve_collects_garbage_once_it_serves(plain_serve_ready: dict[str, Any]) -> None:
    """`dshkit serve` starts with the cyclic collector off (nothing it builds to start is
    garbage); by its first request the collector is on again, with the start-up heap frozen out
    of its walks, so a long run still frees its cycles."""
    assert plain_serve_ready["collector_on"] is True
    assert plain_serve_ready["frozen"] > 10_000


SERVE_INSIDE_A_PROGRAM = """\
import gc, json, os, signal, sys

class _StopAtReady:  # ends the serve (as Ctrl-C would) once it is ready
    def __init__(self, out):
        self.out = out

    def write(self, text):
        if '"type": "ready"' in text:
            os.kill(os.getpid(), signal.SIGINT)
        return self.out.write(text)

    def __getattr__(self, name):
        return getattr(self.out, name)

gc.set_threshold(1234, 11, 12)
before = {"enabled": gc.isenabled(), "threshold": gc.get_threshold(), "frozen": gc.get_freeze_count()}
from dshkit.cli import main
sys.stdout = _StopAtReady(sys.stdout)
code = main(["serve", "--port", "0"])
sys.stdout = sys.stdout.out
import aiohttp.connector  # the program's own aiohttp, as it would use it next
own = getattr(aiohttp.connector, "_SSL_CONTEXT_VERIFIED", None)  # private: -1 if aiohttp renames it
after = {"enabled": gc.isenabled(), "threshold": gc.get_threshold(), "frozen": gc.get_freeze_count()}
with open(os.environ["DSHKIT_MODULES_OUT"], "w") as f:
    json.dump({"code": code, "before": before, "after": after,
               "aiohttp_ca_certificates": own.cert_store_stats()["x509_ca"] if own else -1}, f)
"""


def test_serve_run_inside_a_program_leaves_its_collector_and_its_aiohttp_alone(tmp_path: Path) -> None:
    """Only a process whose whole job is `dshkit serve` has its start tuned (collector off, then
    frozen heap and a new threshold; aiohttp's client contexts without CA certificates). A
    program that calls `main(["serve", ...])` keeps its collector's settings, collects its own
    heap, and its aiohttp verifies certificates as ever."""
    bundle = _ca_bundle()
    out = tmp_path / "state.json"
    env = {**os.environ, "DSHKIT_MODULES_OUT": str(out), **({"SSL_CERT_FILE": bundle} if bundle else {})}
    env.pop("DSHKIT_MOCK_API_KEY", None)
    result = subprocess.run([sys.executable, "-c", SERVE_INSIDE_A_PROGRAM], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0 and out.is_file(), result.stdout[-2000:] + result.stderr[-2000:]
    state = json.loads(out.read_text())
    assert state["code"] == 130 and '"type": "ready"' in result.stdout
    assert state["after"] == state["before"] == {"enabled": True, "threshold": [1234, 11, 12], "frozen": 0}
    if bundle is not None:
        assert state["aiohttp_ca_certificates"] > 0


NOT_LOADED_BY_THE_PLUGINS = ("dshkit.conformance.runner", "dshkit.conformance.checks", "dshkit.mock_server.server",
                             "aiohttp", "openai", "anthropic", "httpx", "pydantic", "jsonschema", "yaml")
"""What a project's pytest run must not pay for because dshkit is installed (its two plugins load
by entry point in every run) while none of its tests uses a dshkit fixture or option."""

SYS_MODULES_TEST = """\
import json
import os
import sys


def test_modules():
    with open(os.environ["DSHKIT_MODULES_OUT"], "w") as f:
        json.dump(sorted(sys.modules), f)
"""


def test_a_project_that_uses_no_dshkit_fixture_pays_nothing_for_the_plugins(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text(SYS_MODULES_TEST, encoding="utf-8")
    out = tmp_path / "modules.json"
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                             "test_mine.py"], cwd=tmp_path, env={**os.environ, "DSHKIT_MODULES_OUT": str(out)},
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    modules = set(json.loads(out.read_text(encoding="utf-8")))
    assert {"dshkit.conformance.pytest_plugin", "dshkit.mock_server.pytest_plugin"} <= modules  # both loaded
    loaded = sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in NOT_LOADED_BY_THE_PLUGINS))
    assert loaded == []
