"""Record mode in pytest: a user's test suite run by pytest (in this process, through pytest's
own `pytester`: a fresh pytest session with the project's ini, as a subprocess would run it but
without paying an interpreter start and every import per run), recording through the proxy from
a real mock server upstream, then replaying with the upstream gone.

The upstream's journal tells what was recorded (it saw the request) from what was replayed (it
did not); the cassette file tells what was kept.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from dshkit.mock_server import MockServer, Script
from dshkit.mock_server.record_mode import cassette_name_for

TEST_FILE = '''
import openai
import pytest


def ask(base_url, text):
    client = openai.OpenAI(base_url=base_url, api_key="sk-secret-user-key", max_retries=0)
    reply = client.chat.completions.create(model="deepseek-chat", messages=[{"role": "user", "content": text}])
    return reply.choices[0].message.content


@pytest.mark.parametrize("n", [1])
def test_weather(dshkit_cassette, n):
    assert ask(dshkit_cassette.base_url, "weather?") == "sunny"
    EXTRA
'''


def _project(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "test_app.py").write_text(TEST_FILE.replace("EXTRA", extra))
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return tmp_path


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str


def _pytest(pytester: pytest.Pytester, *args: str) -> Run:
    """The user's suite, in the project folder (`pytester.path`), with its own pytest.ini."""
    result = pytester.runpytest_inprocess("-q", "-W", "error", "-p", "no:cacheprovider", "-p", "no:xdist", *args)
    return Run(int(result.ret), "\n".join(result.outlines), "\n".join(result.errlines))


def _cassette(project: Path) -> Path:
    return project / "cassettes" / "test_app" / "test_weather[1].cassette.jsonl"


def test_cassette_names_come_from_the_test_id() -> None:
    assert cassette_name_for("tests/test_app.py::TestA::test_b[p-1]") == "TestA.test_b[p-1]"
    assert cassette_name_for("t.py::test_x[a/b c]") == "test_x[a_b_c]"


def test_none_mode_without_a_cassette_says_how_to_record(pytester: pytest.Pytester) -> None:
    _project(pytester.path)
    result = _pytest(pytester)
    assert result.returncode == 1
    assert "no cassette" in result.stdout and "--dshkit-record=once" in result.stdout


def test_once_records_then_replays_without_the_upstream(pytester: pytest.Pytester) -> None:
    project = _project(pytester.path)
    with MockServer(Script.replies("sunny")) as upstream:
        result = _pytest(pytester, "--dshkit-record=once", f"--dshkit-record-upstream={upstream.base_url}")
        assert result.returncode == 0, result.stdout + result.stderr
        assert len(upstream.journal.chat()) == 1
    text = _cassette(project).read_text()
    assert "sk-secret-user-key" not in text  # the app's key is scrubbed
    # the upstream is gone: mode none (the default) and once both replay
    for args in ([], ["--dshkit-record=once"]):
        result = _pytest(pytester, *args)
        assert result.returncode == 0, result.stdout + result.stderr


def test_new_episodes_replays_known_requests_and_records_new_ones(pytester: pytest.Pytester) -> None:
    project = _project(pytester.path)
    with MockServer(Script.replies("sunny")) as upstream:
        assert _pytest(pytester, "--dshkit-record=once", f"--dshkit-record-upstream={upstream.base_url}").returncode == 0
    _project(pytester.path, extra='assert ask(dshkit_cassette.base_url, "tomorrow?") == "rain"')
    with MockServer(Script.replies("rain")) as upstream:
        result = _pytest(pytester, "--dshkit-record=new_episodes", f"--dshkit-record-upstream={upstream.base_url}")
        assert result.returncode == 0, result.stdout + result.stderr
        asked = [e.body["messages"][-1]["content"] for e in upstream.journal.chat()]
        assert asked == ["tomorrow?"]  # the known request was replayed, not sent upstream
    lines = _cassette(project).read_text().splitlines()
    contents = [json.loads(line)["request"]["body"]["messages"][-1]["content"] for line in lines[1:]]
    assert contents == ["weather?", "tomorrow?"]
    assert _pytest(pytester).returncode == 0  # both now replay


def test_all_records_again_from_scratch(pytester: pytest.Pytester) -> None:
    project = _project(pytester.path)
    with MockServer(Script.replies("sunny")) as upstream:
        assert _pytest(pytester, "--dshkit-record=once", f"--dshkit-record-upstream={upstream.base_url}").returncode == 0
    with MockServer(Script.replies("sunny")) as upstream:
        result = _pytest(pytester, "--dshkit-record=all", f"--dshkit-record-upstream={upstream.base_url}")
        assert result.returncode == 0, result.stdout + result.stderr
        assert len(upstream.journal.chat()) == 1  # sent upstream again, not replayed
    assert len(_cassette(project).read_text().splitlines()) == 2  # header + one exchange, not two


def test_recording_without_an_upstream_is_a_clear_failure(pytester: pytest.Pytester) -> None:
    _project(pytester.path)
    result = _pytest(pytester, "--dshkit-record=once")
    assert result.returncode == 1
    assert "no upstream is set" in result.stdout and "--dshkit-record-upstream" in result.stdout
