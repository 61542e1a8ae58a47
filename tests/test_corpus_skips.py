"""Without the corpus (`../shared/corpus/`, as on a user's machine) every test that needs it skips
with one uniform reason: where it looked, and what to set."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from .conftest import corpus_missing

TESTS = Path(__file__).resolve().parent
CORPUS_ONLY = ["harness/session/test_corpus.py", "harness/providers/openai_chat/test_corpus.py",
               "harness/providers/anthropic/test_corpus.py", "harness/test_decode_anthropic.py"]


def test_the_reason_says_where_and_what_to_set(tmp_path: Path) -> None:
    reason = corpus_missing(tmp_path / "corpus" / "real")
    assert reason.startswith(f"corpus not found at {tmp_path / 'corpus' / 'real'}: set DSHKIT_SHARED=")


def test_without_the_corpus_every_skip_reason_is_the_uniform_one(tmp_path: Path) -> None:
    absent = tmp_path / "no-shared"
    env = {**os.environ, "DSHKIT_SHARED": str(absent)}
    env.pop("PYTEST_XDIST_WORKER", None)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist",
                        *(str(TESTS / f) for f in CORPUS_ONLY)],
                       cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    reasons = [line.split(": ", 1)[1] for line in r.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(reasons) >= len(CORPUS_ONLY)
    uniform = re.compile(rf"corpus not found at {re.escape(str(absent))}/corpus/\S+: set DSHKIT_SHARED=")
    assert [x for x in reasons if not uniform.match(x)] == []


def test_no_corpus_skip_reason_is_written_by_hand() -> None:
    # Every skip for an absent corpus goes through `corpus_missing`, so the reasons stay one. (A
    # corpus that is there but holds nothing a test can use is another reason, said in its words.)
    by_hand = re.compile(r"(pytest\.skip\(|reason=)\s*f?[\"'][^\"']*(absent|not found|DSHKIT_SHARED)", re.I)
    offenders = [f"{p.relative_to(TESTS)}:{n}" for p in TESTS.rglob("*.py") if p.name != "test_corpus_skips.py"
                 for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if by_hand.search(line)]
    assert offenders == []
