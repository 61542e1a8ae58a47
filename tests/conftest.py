"""Fixtures shared by the whole suite: the hypothesis profiles and the corpus locations.

The corpus (`../shared/corpus/`) is real data written by others; tests read it in place and skip
with a clear reason when it is absent (as on a user's machine). It is never copied here.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", deadline=None, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("DSHKIT_SHARED", REPO.parent / "shared"))
REAL_CORPUS = SHARED / "corpus" / "real"
DSH_SESSIONS = SHARED / "corpus" / "dsh-sessions"
DSH_UPSTREAM = SHARED / "corpus" / "dsh-sessions-upstream"


def upstream_folders() -> list[Path]:
    """Every scenario folder of `shared/corpus/dsh-sessions-upstream` (one holding a session log
    or an override sidecar), or none when the corpus is absent; for parametrizing at collection."""
    if not DSH_UPSTREAM.is_dir():
        return []
    return sorted({p.parent for p in DSH_UPSTREAM.rglob("*") if p.is_file() and p.name != "README.md"})


def _corpus(path: Path) -> Path:
    if not path.is_dir():
        pytest.skip(f"corpus folder {path} is absent (set DSHKIT_SHARED to the shared/ folder)")
    return path


@pytest.fixture
def real_corpus() -> Path:
    """`shared/corpus/real`: recorded provider streams with `*.expected.json`."""
    return _corpus(REAL_CORPUS)


@pytest.fixture
def dsh_sessions() -> Path:
    """`shared/corpus/dsh-sessions`: session logs written by upstream DSH."""
    return _corpus(DSH_SESSIONS)
