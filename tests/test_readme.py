"""The README's Python example runs as written (against a temporary workspace)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_python_example_runs(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"```python\n(import asyncio.*?)```", text, re.S)
    assert match, "the README lost its Python example"
    (tmp_path / "README.md").write_text("# Example\n\nA toolkit.\n", encoding="utf-8")
    code = match.group(1).replace("/path/to/workspace", str(tmp_path))
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("completed ")
    assert "'tool/result'" in result.stdout
