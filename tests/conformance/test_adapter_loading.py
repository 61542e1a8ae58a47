"""`--adapter pkg.mod:Factory` / `--dshkit-adapter`: resolved from the current directory, and a path
or a factory that cannot work is one usage error before any scenario runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from dshkit.cli import main
from dshkit.conformance.runner import FactoryError, load_factory

_MODULE = '''\
from dshkit.harness.providers.deepseek import DeepSeekAdapter


def make(base_url, api_key, *, connect_timeout_s, idle_timeout_s):
    return DeepSeekAdapter(base_url, api_key, connect_timeout_s=connect_timeout_s, idle_timeout_s=idle_timeout_s)


def wrong(base_url):
    return None


class NoTimeouts:
    def __init__(self, base_url, api_key):
        pass
'''


def _project(root: Path) -> str:
    """A user's project folder holding `<pkg>/adapters.py`; returns the (unique) package name."""
    name = f"userpkg_{uuid.uuid4().hex[:8]}"
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("")
    (root / name / "adapters.py").write_text(_MODULE)
    return name


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", os.getcwd())])
    return _project(tmp_path)


def test_console_script_finds_the_module_in_the_current_directory(tmp_path: Path) -> None:
    # The installed `dshkit` script, not `python -m` (which puts the current directory on sys.path).
    pkg = _project(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([str(Path(sys.executable).parent / "dshkit"), "conformance", "--adapter", f"{pkg}.adapters:make",
                        "--only", "A22"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "total" in r.stdout


@pytest.mark.parametrize(("attr", "words"), [
    ("wrong", ["cannot be called as factory(base_url, api_key, *, connect_timeout_s, idle_timeout_s)", "(base_url)"]),
    ("NoTimeouts", ["cannot be called as", "connect_timeout_s"]),
    ("mak", ["has no attribute 'mak'", "did you mean 'make'?"]),
])
def test_an_unusable_factory_is_one_usage_error(project: str, attr: str, words: list[str],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--adapter", f"{project}.adapters:{attr}"]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # no scenario ran, no table
    assert err.count("\n") == 1 and err.startswith("dshkit conformance: ")
    assert all(w in err for w in words), err


def test_a_missing_module_names_the_directory_searched(project: str, tmp_path: Path) -> None:
    with pytest.raises(FactoryError, match=r"cannot import module 'nosuchpkg_x.adapters'.*current directory \(" + re.escape(str(tmp_path))):
        load_factory("nosuchpkg_x.adapters:make")


def _plugin_session(folder: Path, *args: str) -> tuple[int, str]:
    """(exit code, output) of the `pytest` console script run in `folder` as a user would (not
    `python -m pytest`, which puts the current directory on sys.path; not in-process, where
    pytester's module snapshot would re-import httpx under this process's adapters)."""
    (folder / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS")}
    # Installed plugins the session has no use for (their imports were ~0.3 s of CPU); ours still
    # loads by its entry point.
    unused = [a for name in ("xdist", "hypothesispytest", "syrupy", "anyio", "dshkit_mock_server") for a in ("-p", f"no:{name}")]
    r = subprocess.run([str(Path(sys.executable).parent / "pytest"), "-p", "no:cacheprovider", *unused,
                        "--pyargs", "dshkit.conformance", *args],
                       cwd=folder, env=env, capture_output=True, text=True, timeout=120, check=False)
    return r.returncode, r.stdout + r.stderr


def test_plugin_wrong_signature_is_one_collection_error(tmp_path: Path) -> None:
    pkg = _project(tmp_path)
    code, out = _plugin_session(tmp_path, "--dshkit-adapter", f"{pkg}.adapters:wrong", "-q")
    assert code == pytest.ExitCode.INTERRUPTED, out
    assert "1 error" in out and "failed" not in out and "passed" not in out
    # once in the error report (the short summary repeats it whole on CI, where $CI turns off truncation)
    assert out.split("short test summary info")[0].count("cannot be called as factory(base_url, api_key") == 1
    assert "Traceback" not in out and "pytest_plugin.py" not in out


def test_plugin_finds_the_module_in_the_current_directory(tmp_path: Path) -> None:
    pkg = _project(tmp_path)
    code, out = _plugin_session(tmp_path, "--dshkit-adapter", f"{pkg}.adapters:make", "--dshkit-only", "A22", "-q")
    assert code == 0, out
    assert "passed" in out
