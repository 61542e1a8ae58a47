"""The package as a user gets it: the wheel builds without a setuptools warning and holds every
package, and installed into a fresh venv next to a user project it disturbs nothing.

The wheel is built once per worker (from a copy of the repository: setuptools builds in the
source tree, and a stale build/ from an older layout would end up in the wheel), with the
setuptools of this venv (the `test` extra holds the `[build-system]` requirement, so no
throwaway build env need be filled every run): one Python calls the `build_wheel` hook of the
backend pyproject.toml names, as a PEP 517 frontend's hook process does (`pip wheel` would start
one more Python, its own, around it); the tests that install it share that build and the group
keeps them on one xdist worker. One fresh venv serves both installs, in this
file's order: the wheel with pytest alone (the plugin without pytest-asyncio), then the wheel
with its extras added, as a user would add them. It is made without pip of its own (`python -m
venv --without-pip`) and filled by this interpreter's pip (`pip --python`), from pip's
configured index and cache, without byte-compiling what it installs (`--no-compile`: the venv's
own Python compiles only the modules the tests import, once, where pip would compile all of
openai, pydantic, aiohttp, ...); without a reachable index the install tests skip, saying so.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# setuptools' note that it skips byte-compiling (bytecode writing off) is not about the package
_NOT_OURS = re.compile(r"byte-compiling is disabled", re.I)
_NO_INDEX = re.compile(r"No matching distribution|Could not find a version|Failed to establish|"
                       r"Network is unreachable|Temporary failure in name resolution", re.I)

pytestmark = pytest.mark.xdist_group("wheel")


@dataclass(frozen=True)
class Built:
    wheel: Path
    output: str
    """What the build backend printed (stdout and stderr)."""


BUILD_WHEEL = """
import importlib, os, sys, tomllib
with open("pyproject.toml", "rb") as f:
    system = tomllib.load(f)["build-system"]
sys.path[:0] = [os.path.abspath(p) for p in system.get("backend-path", [])]
module, _, attr = system["build-backend"].partition(":")
backend = importlib.import_module(module)
for name in filter(None, attr.split(".")):
    backend = getattr(backend, name)
os.makedirs(sys.argv[1], exist_ok=True)
print(backend.build_wheel(sys.argv[1]))
"""
"""The PEP 517 `build_wheel` hook of the backend `[build-system]` names, run in the source
tree (the current directory) into the folder argv[1]; prints the wheel's file name."""


def _env() -> dict[str, str]:
    # no variable of this suite's venv may leak into the user's (PYTHONPATH, a virtualenv's own)
    drop = {"PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS", "PYTEST_PLUGINS"}
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PYTEST_XDIST")}


def _pip(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True,
                            timeout=timeout, env=_env(), check=False)
    if result.returncode != 0 and _NO_INDEX.search(result.stdout + result.stderr):
        pytest.skip("pip cannot reach a package index (the build backend or dshkit's "
                    "dependencies cannot be installed): " + (result.stdout + result.stderr)[-300:])
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    return result


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The wheel of this tree, built once per worker."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "src"
    shutil.copytree(REPO, source, symlinks=True,
                    ignore=shutil.ignore_patterns(".git", ".venv*", "build", "dist", "*.egg-info", ".dshkit",
                                                  "__pycache__", ".hypothesis", ".clients*", ".e2e-dsh",
                                                  ".mypy_cache", ".ruff_cache", ".pytest_cache"))
    result = subprocess.run([sys.executable, "-c", BUILD_WHEEL, str(tmp / "dist")], cwd=source, capture_output=True,
                            text=True, timeout=600, env=_env(), check=False)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    (wheel,) = (tmp / "dist").glob("dshkit-*.whl")
    assert result.stdout.splitlines()[-1] == wheel.name  # the hook's answer: the file it wrote
    return Built(wheel, result.stdout + result.stderr)


def _venv(path: Path) -> Path:
    """A fresh venv without pip (this interpreter's pip fills it); its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120,
                   env=_env())
    return path / "bin" / "python"


def _run(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), *args], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env=_env(), check=False)


def test_wheel_builds_without_setuptools_warnings(built: Built) -> None:
    warnings = [line.strip() for line in built.output.splitlines()
                if re.search(r"warning|deprecat", line, re.I) and not _NOT_OURS.search(line)]
    assert warnings == []
    names = zipfile.ZipFile(built.wheel).namelist()
    for package in ("dshkit", "dshkit/harness", "dshkit/mock_server", "dshkit/conformance", "dshkit/view"):
        assert f"{package}/__init__.py" in names
    assert "dshkit/harness/data/seed_walk.yaml" in names and not any(n.startswith("tests/") for n in names)
    # one installed namespace: nothing at the top level but dshkit itself and its metadata
    assert sorted({n.split("/")[0] for n in names if not n.startswith("dshkit-")}) == ["dshkit"]


# -- a user project with packages named like dshkit's folders ---------------------------------

USER_PACKAGE = '''"""The user's own {name} package (not dshkit's)."""

OWNER = "user project"


def greet() -> str:
    return "{name} of the user"
'''

USER_PACKAGE_TEST = '''import {name}


def test_{name}_is_the_users_own():
    assert {name}.OWNER == "user project" and {name}.greet() == "{name} of the user"
'''

USER_APP_TEST = '''import openai
import pytest

import conformance
import harness
import mock_server
from dshkit.mock_server import Script


def ask(base_url):
    with openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0) as client:
        reply = client.chat.completions.create(model="deepseek-chat", messages=[{"role": "user", "content": "hi"}])
    return reply.choices[0].message.content


@pytest.mark.dshkit_script(Script.replies("hello from dshkit's mock"))
def test_a_dshkit_fixture_beside_the_users_packages(mock_deepseek):
    assert ask(mock_deepseek.base_url) == "hello from dshkit's mock"
    assert [harness.OWNER, conformance.OWNER, mock_server.OWNER] == ["user project"] * 3


@pytest.mark.asyncio
async def test_an_async_fixture(dshkit_mock_server):
    server = await dshkit_mock_server(Script.replies("async"))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client:
        reply = await client.chat.completions.create(model="deepseek-chat", messages=[{"role": "user", "content": "q"}])
    assert reply.choices[0].message.content == "async"
'''

WHICH = """
import json, conformance, harness, mock_server, dshkit.mock_server, dshkit.harness, dshkit.conformance
print(json.dumps({m.__name__: m.__file__ for m in (conformance, harness, mock_server, dshkit.mock_server,
                                                  dshkit.harness, dshkit.conformance)}))
"""


def write_user_project(root: Path) -> Path:
    """A project with its own `harness`, `conformance` and `mock_server` packages and tests."""
    for name in ("harness", "conformance", "mock_server"):
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text(USER_PACKAGE.format(name=name), encoding="utf-8")
        (root / name / f"test_{name}.py").write_text(USER_PACKAGE_TEST.format(name=name), encoding="utf-8")
    # a user test module with the name of dshkit's catalogue module, which the plugin must not ignore
    (root / "conformance" / "test_catalogue.py").write_text(
        "def test_users_catalogue():\n    assert True\n", encoding="utf-8")
    (root / "test_app.py").write_text(USER_APP_TEST, encoding="utf-8")
    (root / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n", encoding="utf-8")
    return root


def _pytest(python: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(python, "-m", "pytest", "-q", "-W", "error", "-p", "no:cacheprovider", *args, cwd=project)


# -- the venv both installs share ---------------------------------------------------------------

@dataclass
class SharedVenv:
    python: Path
    extras: bool = False
    """Whether `installed` has added the extras (then it no longer stands for a bare install)."""


def _bare_venv(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    python = _venv(tmp_path_factory.mktemp("venv") / "venv")
    _pip("--python", str(python), "install", "--quiet", "--no-compile", str(built.wheel), "pytest>=8.0")
    return python


@pytest.fixture(scope="session")
def shared_venv(built: Built, tmp_path_factory: pytest.TempPathFactory) -> SharedVenv:
    """One fresh venv for both installs: first the wheel and pytest alone, then (`installed`) the
    wheel with its extras, as a user who adds them later; each install is a few seconds of
    unpacking the same base dependencies."""
    return SharedVenv(_bare_venv(built, tmp_path_factory))


# -- the plugin with nothing but pytest --------------------------------------------------------

WITHOUT_EXTRA = '''import httpx
import pytest

from dshkit.mock_server import Script


@pytest.mark.dshkit_script(Script.replies("no extra needed"))
def test_sync_fixture(mock_deepseek):
    r = httpx.post(mock_deepseek.url, json={"model": "deepseek-chat", "stream": False,
                                            "messages": [{"role": "user", "content": "hi"}]}, timeout=5)
    assert r.json()["choices"][0]["message"]["content"] == "no extra needed"


def test_sync_factory(dshkit_mock_server):
    server = dshkit_mock_server(sequence="success")
    assert httpx.get(server.base_url + "/models", timeout=5).status_code == 200


async def test_async_needs_a_runner(dshkit_mock_server):
    await dshkit_mock_server()
'''


@pytest.fixture
def installed_without_extra(shared_venv: SharedVenv, built: Built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel, its base dependencies (as its metadata declares them) and
    pytest, but no pytest-asyncio: the shared one until `installed` adds the extras to it (this
    file's order), else one of its own."""
    return shared_venv.python if not shared_venv.extras else _bare_venv(built, tmp_path_factory)


def test_the_plugin_loads_with_pytest_alone(installed_without_extra: Path, tmp_path: Path) -> None:
    python = installed_without_extra
    assert _run(python, "-c", "import pytest_asyncio", cwd=tmp_path).returncode != 0
    # a plain test of the user's passes beside the plugin's fixtures (one session for both)
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n", encoding="utf-8")
    (tmp_path / "test_fixtures.py").write_text(WITHOUT_EXTRA, encoding="utf-8")
    result = _pytest(python, tmp_path, "-rA", "test_plain.py", "test_fixtures.py")
    assert "3 passed, 1 error" in result.stdout, result.stdout + result.stderr
    assert "PASSED test_plain.py::test_plain" in result.stdout, result.stdout
    # the async test is told what to install, before pytest's own vaguer message
    assert "pip install 'dshkit[pytest]'" in result.stdout and "test_async_needs_a_runner" in result.stdout


# -- the user project, against the wheel with its extras -------------------------------------

@pytest.fixture(scope="session")
def installed(shared_venv: SharedVenv, built: Built) -> Path:
    """A venv holding the wheel with its `pytest` extra (and the openai SDK the user's app uses),
    installed with `pip install 'dshkit[pytest,openai]'`; its python."""
    _pip("--python", str(shared_venv.python), "install", "--quiet", "--no-compile", f"{built.wheel}[pytest,openai]")
    shared_venv.extras = True
    return shared_venv.python


def test_the_wheel_beside_a_user_project_with_the_same_folder_names(installed: Path, tmp_path: Path) -> None:
    project = write_user_project(tmp_path / "project")
    result = _pytest(installed, project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 passed" in result.stdout, result.stdout  # 3 package tests, the catalogue, 2 app tests
    which = _run(installed, "-c", WHICH, cwd=project)
    assert which.returncode == 0, which.stderr
    files = {name: Path(f) for name, f in json.loads(which.stdout).items()}
    for name in ("harness", "conformance", "mock_server"):
        assert files[name] == project / name / "__init__.py"  # the user's, not dshkit's
        assert files[f"dshkit.{name}"].is_relative_to(installed.parent.parent)  # dshkit's, from the venv


# -- the files the --help texts name, outside the repository -----------------------------------

HELP_PATH = re.compile(r"\b((?:recordings|examples)/[\w.-]+)")


HELPS_AND_EXAMPLES = """
import contextlib, io, json, re, sys
from pathlib import Path
from dshkit.bundled import bundled_path
from dshkit.cli import COMMANDS, main
help_path, repo, examples = re.compile(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
helps = []
for argv in [["--help"], *([c, "--help"] for c in COMMANDS)]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main(argv)
    helps.append(out.getvalue())
# what the help texts name of the repository's own files (not the NAME placeholders, nor the
# files a `dshkit record --out` example would write)
named = {m for text in helps for m in help_path.findall(text)}
shipped = sorted(n for n in named if (repo / n).exists() or (repo / f"{n}.cassette.jsonl").exists())
ran = []
for argv in examples:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    ran.append([code, out.getvalue()])
print(json.dumps({"helps": helps, "shipped": shipped, "ran": ran,
                  "bundled": {name: str(bundled_path(name)) for name in shipped}}))
"""
"""Every help text as the installed `dshkit` prints it (`main` is what its console script runs;
the script itself is run for `--help`), the repository files they name, the help texts' example
commands, each through `main`, and where the package holds each file named: all in one process
of the installed wheel (the repository is only looked at, never on its sys.path)."""


def test_the_help_texts_examples_work_from_the_installed_wheel(installed: Path, tmp_path: Path) -> None:
    from dshkit.cli import COMMANDS

    dshkit = installed.parent / "dshkit"
    listed = _run(dshkit, "--help", cwd=tmp_path)
    assert listed.returncode == 0 and all(command in listed.stdout for command in COMMANDS), listed
    examples = [["decode", "examples/seed-walk.sse"],
                ["view", "recordings/readme-walk.cassette.jsonl", "-o", "walk.html"],
                ["run", "Summarise", "--replay", "recordings/readme-walk", "--workspace", ".",
                 "--session", "s.jsonl", "--json"]]
    found = _run(installed, "-c", HELPS_AND_EXAMPLES, HELP_PATH.pattern, str(REPO), json.dumps(examples), cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    report = json.loads(found.stdout.splitlines()[-1])
    helps, shipped = report["helps"], report["shipped"]
    assert helps[0] == listed.stdout and all(f"usage: dshkit {c}" in h for c, h in zip(COMMANDS, helps[1:], strict=True))
    assert {"examples/seed-walk.sse", "recordings/readme-walk"} <= set(shipped)
    # nothing of the repository was in the examples' folder (before they ran, nor after)
    assert not any((tmp_path / n.split("/")[0]).exists() for n in shipped)
    (decode, decoded), (view, _), (run, ran) = report["ran"]
    assert decode == 0 and '"chunks"' in decoded, found.stderr
    assert view == 0 and (tmp_path / "walk.html").stat().st_size > 0, found.stderr
    assert run == 0 and '"completed"' in ran, found.stderr
    for name, path in report["bundled"].items():  # every one the help names is in the package
        assert path != "None" and str(installed.parent.parent) in path, (name, path)


def test_a_users_own_file_wins_over_the_bundled_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dshkit.bundled import resolve

    monkeypatch.chdir(tmp_path)
    assert resolve("recordings/readme-walk").parent.name == "recordings" and resolve("recordings/readme-walk").is_absolute()
    (tmp_path / "recordings").mkdir()
    (tmp_path / "recordings" / "readme-walk.cassette.jsonl").write_text("{}\n", encoding="utf-8")
    assert resolve("recordings/readme-walk") == Path("recordings/readme-walk")
    assert resolve("recordings/no-such") == Path("recordings/no-such")  # the error names what was typed
    assert resolve("../recordings/readme-walk") == Path("../recordings/readme-walk")
