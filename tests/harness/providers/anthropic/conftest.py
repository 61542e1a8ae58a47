"""Fixtures for the Anthropic-format provider tests: the real-anthropic corpus (read in place,
skipped with a reason when absent); the loopback raw-bytes server is the folder above's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED, corpus_missing

REAL_ANTHROPIC = SHARED / "corpus" / "real-anthropic"


def corpus_sidecars() -> list[Path]:
    """Every sidecar of the corpus (empty when the corpus is absent: tests then skip)."""
    return sorted(REAL_ANTHROPIC.glob("*.expected.json")) if REAL_ANTHROPIC.is_dir() else []


@pytest.fixture
def real_anthropic() -> Path:
    """`shared/corpus/real-anthropic`: recorded Anthropic-format bodies with sidecars."""
    if not REAL_ANTHROPIC.is_dir():
        pytest.skip(corpus_missing(REAL_ANTHROPIC))
    return REAL_ANTHROPIC


def load_capture(sidecar: Path) -> tuple[dict[str, Any], bytes]:
    """The sidecar and the bytes to serve: `.jsonl` records reframed with `event:` lines, as
    the corpus README says (each line L → `event: <L.type>` + `data: L` + blank line)."""
    meta: dict[str, Any] = json.loads(sidecar.read_text("utf-8"))
    data = (sidecar.parent / meta["file"]).read_bytes()
    if meta["format"] == "jsonl":
        data = b"".join(
            b"event: " + json.loads(line)["type"].encode() + b"\ndata: " + line + b"\n\n"
            for line in data.splitlines()
            if line.strip()
        )
    return meta, data
