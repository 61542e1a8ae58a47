"""`dshkit run` (`dshkit.run`), in this process against the real mock server: `--max-retries`
limits the retries and says so, and refuses a negative limit as a usage error. The end-to-end
runs of the command (the wire, the session log, replays, DSH parity) are in `tests/e2e/`."""

from __future__ import annotations

from pathlib import Path

import pytest

from dshkit.cli import main
from dshkit.mock_server import MockServer

from .test_cli import _usage_error


def test_run_max_retries_limits_the_retries_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with MockServer(sequence="rate_limit", repeat_last=True) as server:
        code = main(["run", "hi", "--base-url", server.base_url, "--api-key", "sk-retry", "--max-retries", "0",
                     "--workspace", str(tmp_path), "--session", str(tmp_path / "s.jsonl")])
        sent = len(server.journal.chat())
    out = capsys.readouterr().out
    assert code == 1
    assert sent == 1  # the default policy would have retried the 429
    assert "gave up on RATE_LIMIT after 0 retries: the retry limit is 0 (--max-retries 0)" in out
    assert "raise --max-retries" in out


def test_run_max_retries_rejects_a_negative_limit(capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(["run", "hi", "--max-retries", "-1"], capsys)
    assert err.startswith("usage: dshkit run ") and "--max-retries: must be 0 or more, got -1" in err
