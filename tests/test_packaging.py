"""The package builds without a setuptools warning, and the wheel holds every package."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# pip's own notes about this machine's package indexes are not the package's warnings
_NOT_OURS = re.compile(r"Location '.*' is ignored|byte-compiling is disabled", re.I)


def test_wheel_builds_without_setuptools_warnings(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # Built from a copy: setuptools builds in the source tree, and a stale build/ from an older
    # layout would end up in the wheel.
    source = tmp_path / "src"
    shutil.copytree(REPO, source, symlinks=True,
                    ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", ".dshkit", "__pycache__"))
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )
    output = result.stdout + result.stderr
    if result.returncode != 0 and re.search(r"No matching distribution|Could not find a version", output):
        pytest.skip("the build backend (setuptools) cannot be installed: no package index reachable")
    assert result.returncode == 0, output[-3000:]
    warnings = [line.strip() for line in output.splitlines()
                if re.search(r"warning|deprecat", line, re.I) and not _NOT_OURS.search(line)]
    assert warnings == []
    (wheel,) = (tmp_path / "dist").glob("dshkit-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for package in ("dshkit", "dshkit/harness", "dshkit/mock_server", "dshkit/conformance", "dshkit/view"):
        assert f"{package}/__init__.py" in names
    assert "dshkit/harness/data/seed_walk.yaml" in names and not any(n.startswith("tests/") for n in names)
    # one installed namespace: nothing at the top level but dshkit itself and its metadata
    assert sorted({n.split("/")[0] for n in names if not n.startswith("dshkit-")}) == ["dshkit"]
