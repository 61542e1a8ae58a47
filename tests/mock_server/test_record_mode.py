"""Record mode in pytest: a user's test suite run by pytest (in this process, through pytest's
own `pytester`: a fresh pytest session with the project's ini, as a subprocess would run it but
without paying an interpreter start and every import per run), recording through the proxy from
a real mock server upstream, then replaying with the upstream gone.

The upstream's journal tells what was recorded (it saw the request) from what was replayed (it
did not); the cassette file tells what was kept.
"""

from __future__ import annotations

import json
import re
import socket
import socketserver
import textwrap
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from dshkit.mock_server import MockServer, Script
from dshkit.mock_server.record_mode import cassette_name_for

APP = '''
import openai
import pytest


def ask(base_url, text, model="deepseek-chat"):
    with openai.OpenAI(base_url=base_url, api_key="sk-secret-user-key", max_retries=0) as client:
        reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": text}])
    return reply.choices[0].message.content


def ask_or_error(base_url, text):
    """An app that swallows the API's errors (the test must still fail)."""
    try:
        return ask(base_url, text)
    except openai.APIStatusError as e:
        return f"error {e.status_code}"
'''

TEST_FILE = APP + '''

@pytest.mark.parametrize("n", [1])
def test_weather(dshkit_cassette, n):
    assert ask(dshkit_cassette.base_url, "weather?") == "sunny"
    EXTRA
'''


def _project(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "test_app.py").write_text(TEST_FILE.replace("EXTRA", extra))
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return tmp_path


def _app(project: Path, tests: str) -> Path:
    """A project whose test_app.py holds the app (`ask`, `ask_or_error`) and `tests`."""
    (project / "test_app.py").write_text(APP + textwrap.dedent(tests))
    (project / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return project


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str


def _pytest(pytester: pytest.Pytester, *args: str, interrupted: bool = False) -> Run:
    """The user's suite, in the project folder (`pytester.path`), with its own pytest.ini.

    `interrupted`: the suite is expected to end on a KeyboardInterrupt (Ctrl-C); its session
    ends there as a user's would (exit 2), and pytester does not raise it again in this one."""
    result = pytester.runpytest_inprocess("-q", "-W", "error", "-p", "no:cacheprovider", "-p", "no:xdist", *args,
                                          no_reraise_ctrlc=interrupted)
    return Run(int(result.ret), "\n".join(result.outlines), "\n".join(result.errlines))


def _cassette(project: Path) -> Path:
    return project / "cassettes" / "test_app" / "test_weather[1].cassette.jsonl"


def test_cassette_names_come_from_the_test_id() -> None:
    assert cassette_name_for("tests/test_app.py::TestA::test_b[p-1]") == "TestA.test_b[p-1]"
    name = cassette_name_for("t.py::test_x[a/b c]")
    assert name.startswith("test_x[a_b_c]~") and len(name) == len("test_x[a_b_c]~") + 12


def test_simple_ids_keep_their_names() -> None:
    # cassettes recorded before names became unique are still found
    for nodeid, name in [
        ("t.py::test_weather[1]", "test_weather[1]"),
        ("t.py::TestA::test_b[p-1.5]", "TestA.test_b[p-1.5]"),
        ("t.py::test_x[k=v+w]", "test_x[k=v+w]"),
        ("t.py::test_" + "y" * 195, "test_" + "y" * 195),
    ]:
        assert cassette_name_for(nodeid) == name


def test_ids_that_used_to_collide_get_names_of_their_own() -> None:
    ids = ["t.py::test_param[a b]", "t.py::test_param[a_b]", "t.py::test_param[a/b]",
           "t.py::test_param[a:b]", "t.py::test_param[a::b]", "t.py::test_param[a.b]",
           "t.py::test_param[" + "x" * 250 + "1]", "t.py::test_param[" + "x" * 250 + "2]",
           "t.py::test_param[a~b]", "t.py::test_param[a\u00e9b]", "t.py::test_param[\u6587]"]
    names = [cassette_name_for(i) for i in ids]
    assert len(set(names)) == len(ids), names
    for name in names:
        assert len(name) <= 200
        assert re.fullmatch(r"[A-Za-z0-9_.\[\]=+~-]+", name), name  # file-system safe
        assert name.startswith("test_param[")  # readable: the test's name comes first
    assert names[1] == "test_param[a_b]"  # the simple one is untouched


def test_parametrized_ids_that_used_to_collide_record_and_replay_their_own_cassettes(
    pytester: pytest.Pytester,
) -> None:
    _app(pytester.path, '''
        @pytest.mark.parametrize("word", ["a b", "a_b", "a/b"])
        def test_param(dshkit_cassette, word):
            assert ask(dshkit_cassette.base_url, word) == "echo " + word
    ''')
    steps = [{"match": {"user": f"^{w}$"}, "reply": {"content": f"echo {w}"}} for w in ("a b", "a_b", "a/b")]
    with MockServer(Script.of(*steps)) as upstream:
        # one script answers all three: the tests share the app's key, hence one session
        result = _pytest(pytester, "--dshkit-record=once", f"--dshkit-record-upstream={upstream.base_url}")
    assert result.returncode == 0, result.stdout
    files = sorted((pytester.path / "cassettes" / "test_app").iterdir())
    assert len(files) == 3, files
    result = _pytest(pytester)  # replay: each test finds its own answer
    assert result.returncode == 0, result.stdout


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


# --- matching requests to recorded exchanges ---------------------------------------------------

WEATHER = '''
def test_weather(dshkit_cassette):
    assert ask_or_error(dshkit_cassette.base_url, PROMPT) == ANSWER
'''


def _weather(project: Path, prompt: str, answer: str, marker: str = "") -> Path:
    body = WEATHER.replace("PROMPT", repr(prompt)).replace("ANSWER", repr(answer))
    return _app(project, marker + "\n" + body.lstrip("\n") if marker else body)


def _record(pytester: pytest.Pytester, *replies: str, mode: str = "once") -> Run:
    with MockServer(Script.replies(*replies)) as upstream:
        result = _pytest(pytester, f"--dshkit-record={mode}", f"--dshkit-record-upstream={upstream.base_url}")
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def _weather_cassette(project: Path) -> Path:
    return project / "cassettes" / "test_app" / "test_weather.cassette.jsonl"


def _recorded_prompts(path: Path) -> list[str]:
    lines = path.read_text().splitlines()[1:]
    return [json.loads(line)["request"]["body"]["messages"][-1]["content"] for line in lines]


def test_a_changed_prompt_fails_against_the_stale_cassette_with_a_diff(pytester: pytest.Pytester) -> None:
    _weather(pytester.path, "weather?", "sunny")
    _record(pytester, "sunny")
    # the test now asks something else, and its app swallows API errors
    _weather(pytester.path, "forecast?", "error 418")
    result = _pytest(pytester)
    assert result.returncode == 1, result.stdout  # passed the call, failed at teardown
    assert "1 passed, 1 error" in result.stdout
    out = result.stdout
    assert "no recorded exchange matches this request" in out
    assert "differs in: messages" in out
    assert '-      "content": "weather?",' in out and '+      "content": "forecast?",' in out
    assert "During handling" not in out


def test_the_client_gets_a_clear_error_status_for_an_unmatched_request(pytester: pytest.Pytester) -> None:
    _weather(pytester.path, "weather?", "sunny")
    _record(pytester, "sunny")
    _app(pytester.path, '''
        def test_weather(dshkit_cassette):
            with pytest.raises(openai.APIStatusError) as caught:
                ask(dshkit_cassette.base_url, "forecast?")
            assert caught.value.status_code == 418
            assert caught.value.body["code"] == "mock_no_match"
            assert "Nearest: exchange 1" in caught.value.body["message"]
    ''')
    result = _pytest(pytester)
    assert "1 passed, 1 error" in result.stdout, result.stdout


def test_new_episodes_after_a_changed_prompt_then_a_plain_run_serves_the_new_answer(
    pytester: pytest.Pytester,
) -> None:
    project = _weather(pytester.path, "weather?", "sunny")
    _record(pytester, "sunny")
    _weather(project, "forecast?", "rain")
    with MockServer(Script.replies("rain")) as upstream:
        result = _pytest(pytester, "--dshkit-record=new_episodes", f"--dshkit-record-upstream={upstream.base_url}")
        assert result.returncode == 0, result.stdout
        assert [e.body["messages"][-1]["content"] for e in upstream.journal.chat()] == ["forecast?"]
    assert _recorded_prompts(_weather_cassette(project)) == ["weather?", "forecast?"]
    result = _pytest(pytester)  # upstream gone: the new episode answers, not the old one
    assert result.returncode == 0, result.stdout
    _weather(project, "weather?", "sunny")  # and the old one still answers its own request
    assert _pytest(pytester).returncode == 0


def test_new_episodes_adds_only_the_unmatched_requests(pytester: pytest.Pytester) -> None:
    project = _app(pytester.path, '''
        def test_weather(dshkit_cassette):
            assert ask(dshkit_cassette.base_url, "a") == "A"
    ''')
    _record(pytester, "A")
    _app(project, '''
        def test_weather(dshkit_cassette):
            assert ask(dshkit_cassette.base_url, "b") == "B"
            assert ask(dshkit_cassette.base_url, "a") == "A"
            assert ask(dshkit_cassette.base_url, "c") == "C"
    ''')
    with MockServer(Script.replies("B", "C")) as upstream:
        result = _pytest(pytester, "--dshkit-record=new_episodes", f"--dshkit-record-upstream={upstream.base_url}")
        assert result.returncode == 0, result.stdout
    assert _recorded_prompts(_weather_cassette(project)) == ["a", "b", "c"]
    assert _pytest(pytester).returncode == 0  # a plain run: each answer for its own request


def test_repeated_identical_requests_are_served_in_recorded_order(pytester: pytest.Pytester) -> None:
    _app(pytester.path, '''
        def test_weather(dshkit_cassette):
            assert ask(dshkit_cassette.base_url, "roll") == "one"
            assert ask(dshkit_cassette.base_url, "other") == "x"
            assert ask(dshkit_cassette.base_url, "roll") == "two"
    ''')
    _record(pytester, "one", "x", "two")
    assert _pytest(pytester).returncode == 0
    _app(pytester.path, '''
        def test_weather(dshkit_cassette):
            assert ask(dshkit_cassette.base_url, "other") == "x"  # out of order: still its own
            assert ask(dshkit_cassette.base_url, "roll") == "one"
            assert ask(dshkit_cassette.base_url, "roll") == "two"
            assert ask_or_error(dshkit_cassette.base_url, "roll") == "error 418"
    ''')
    result = _pytest(pytester)
    assert "1 passed, 1 error" in result.stdout, result.stdout
    assert "all 2 recorded exchange(s) matching this request" in result.stdout


def test_a_changed_model_does_not_match(pytester: pytest.Pytester) -> None:
    _weather(pytester.path, "weather?", "sunny")
    _record(pytester, "sunny")
    _app(pytester.path, '''
        def test_weather(dshkit_cassette):
            assert ask_or_error(dshkit_cassette.base_url, "weather?", ) == "sunny"
            with pytest.raises(openai.APIStatusError):
                ask(dshkit_cassette.base_url, "weather?", model="deepseek-reasoner")
    ''')
    result = _pytest(pytester)
    assert "1 passed, 1 error" in result.stdout, result.stdout
    assert "differs in: model" in result.stdout


def test_match_on_from_the_marker_loosens_matching(pytester: pytest.Pytester) -> None:
    _weather(pytester.path, "weather?", "sunny")
    _record(pytester, "sunny")
    _weather(pytester.path, "forecast?", "sunny", marker='@pytest.mark.dshkit_cassette(match_on=["method", "path"])')
    result = _pytest(pytester)
    assert result.returncode == 0, result.stdout


def test_a_custom_matcher_decides(pytester: pytest.Pytester) -> None:
    _weather(pytester.path, "weather?", "sunny")
    _record(pytester, "sunny")
    matcher = textwrap.dedent('''
        def same_words(live, recorded):
            text = lambda r: r.body["messages"][-1]["content"].lower().strip("?! ")
            assert text(live) == text(recorded), f"{text(live)!r} is not {text(recorded)!r}"


    ''')
    marker = '@pytest.mark.dshkit_cassette(match_on=["method", "path", "model", same_words])'
    _weather(pytester.path, "WEATHER!", "sunny", marker=marker)
    (pytester.path / "test_app.py").write_text(
        (pytester.path / "test_app.py").read_text().replace("@pytest.mark.dshkit_cassette", matcher + "@pytest.mark.dshkit_cassette"))
    assert _pytest(pytester).returncode == 0
    _weather(pytester.path, "rain?", "error 418", marker=marker)
    (pytester.path / "test_app.py").write_text(
        (pytester.path / "test_app.py").read_text().replace("@pytest.mark.dshkit_cassette", matcher + "@pytest.mark.dshkit_cassette"))
    result = _pytest(pytester)
    assert "1 passed, 1 error" in result.stdout, result.stdout
    assert "same_words: 'rain' is not 'weather'" in result.stdout  # the matcher's own message


def test_all_played_fails_for_an_exchange_never_requested(pytester: pytest.Pytester) -> None:
    _app(pytester.path, '''
        def test_weather(dshkit_cassette):
            assert ask(dshkit_cassette.base_url, "a") == "A"
            assert ask(dshkit_cassette.base_url, "b") == "B"
    ''')
    _record(pytester, "A", "B")
    _app(pytester.path, '''
        @pytest.mark.dshkit_cassette(all_played=True)
        def test_weather(dshkit_cassette):
            assert ask(dshkit_cassette.base_url, "a") == "A"
    ''')
    result = _pytest(pytester)
    assert "1 passed, 1 error" in result.stdout, result.stdout
    assert "exchange 2" in result.stdout and "never requested" in result.stdout
    _app(pytester.path, '''
        def test_weather(dshkit_cassette):
            assert ask(dshkit_cassette.base_url, "a") == "A"
    ''')
    assert _pytest(pytester).returncode == 0  # by default an unused exchange is no failure


# --- the marker: record mode, upstream, scrub; mode none never goes upstream --------------------


class _CountingUpstream:
    """A TCP endpoint that counts the connections made to it (and answers none)."""

    def __init__(self) -> None:
        count = self.connections = [0]

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                count[0] += 1

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> _CountingUpstream:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def test_mode_none_never_contacts_the_upstream(pytester: pytest.Pytester) -> None:
    _weather(pytester.path, "weather?", "sunny")
    _record(pytester, "sunny")
    with _CountingUpstream() as counting:
        marker = f"@pytest.mark.dshkit_cassette(upstream={counting.url!r})"
        _app(pytester.path, f'''
            {marker}
            def test_weather(dshkit_cassette):
                assert ask(dshkit_cassette.base_url, "weather?") == "sunny"
                assert ask_or_error(dshkit_cassette.base_url, "not recorded") == "error 418"

            {marker}
            def test_never_recorded(dshkit_cassette):
                pass
        ''')
        result = _pytest(pytester, f"--dshkit-record-upstream={counting.url}")
        assert "2 errors" in result.stdout, result.stdout  # the miss; the missing cassette
        assert "no cassette" in result.stdout
        assert counting.connections == [0]


def test_the_marker_sets_the_record_mode_of_its_test(pytester: pytest.Pytester) -> None:
    with MockServer(Script.replies("sunny", "sunny")) as upstream:
        _app(pytester.path, f'''
            @pytest.mark.dshkit_cassette(record_mode="once", upstream={upstream.base_url!r})
            def test_weather(dshkit_cassette):
                assert ask(dshkit_cassette.base_url, "weather?") == "sunny"

            @pytest.mark.dshkit_cassette(record_mode="none", upstream={upstream.base_url!r})
            def test_replay_only(dshkit_cassette):
                pass
        ''')
        result = _pytest(pytester, "--dshkit-record=all")  # the marker beats the command line
        assert "1 passed, 1 error" in result.stdout, result.stdout
        assert "no cassette" in result.stdout and "test_replay_only" in result.stdout
        assert len(upstream.journal.chat()) == 1
        assert _pytest(pytester, "--dshkit-record=all", "-k", "test_weather").returncode == 0
        assert len(upstream.journal.chat()) == 1  # `once`: replayed, not recorded again


def test_the_marker_adds_scrub_patterns(pytester: pytest.Pytester) -> None:
    _app(pytester.path, '''
        @pytest.mark.dshkit_cassette(scrub=["ORG=org-[a-z0-9]+", r"user-\\d+"])
        def test_weather(dshkit_cassette):
            assert ask(dshkit_cassette.base_url, "for org-abc123 and user-42?") == "ok"
    ''')
    _record(pytester, "ok")
    text = _weather_cassette(pytester.path).read_text()
    assert "org-abc123" not in text and "user-42" not in text
    assert "{{scrubbed:ORG}}" in text and "{{scrubbed:pattern}}" in text
    assert _pytest(pytester).returncode == 0  # and the scrubbed request still matches


@pytest.mark.parametrize(("arguments", "message"), [
    ("recrod_mode='once'", "unknown argument(s) recrod_mode"),
    ("record_mode='sometimes'", "record_mode='sometimes' is not one of none, once"),
    ("match_on=['prompt']", "unknown matcher 'prompt'"),
    ("match_on=[]", "match_on is empty"),
    ("scrub=['(']", "invalid regex"),
    ("all_played='yes'", "all_played must be True or False"),
    ("'a', 'b'", "takes one positional argument"),
])
def test_bad_marker_arguments_fail_the_test_clearly(pytester: pytest.Pytester, arguments: str, message: str) -> None:
    _app(pytester.path, f'''
        @pytest.mark.dshkit_cassette({arguments})
        def test_weather(dshkit_cassette):
            pass
    ''')
    result = _pytest(pytester)
    assert result.returncode == 1
    assert "@pytest.mark.dshkit_cassette of test_app.py::test_weather" in result.stdout
    assert message in result.stdout, result.stdout
    assert "Traceback" not in result.stdout and "During handling" not in result.stdout


# --- recordings that fail leave nothing in the way ---------------------------------------------


def _refused_url() -> str:
    """The URL of a port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_an_unreachable_upstream_fails_once_and_leaves_no_cassette(pytester: pytest.Pytester) -> None:
    project = _weather(pytester.path, "weather?", "sunny")
    url = _refused_url()
    result = _pytest(pytester, "--dshkit-record=once", f"--dshkit-record-upstream={url}")
    assert result.returncode == 1
    out = result.stdout + result.stderr
    assert f"the upstream {url} is unreachable" in out
    # once in the error report; pytest repeats it in the short summary, whole on CI (where
    # $CI turns truncation off) and cut short elsewhere, so that section is not counted
    assert out.split("short test summary info")[0].count("is unreachable") == 1
    assert "During handling" not in out and "Traceback" not in out
    assert not _weather_cassette(project).exists()
    assert list(project.glob("cassettes/**/*")) in ([], [project / "cassettes" / "test_app"])
    with MockServer(Script.replies("sunny")) as upstream:  # nothing blocks the next run
        result = _pytest(pytester, "--dshkit-record=once", f"--dshkit-record-upstream={upstream.base_url}")
    assert result.returncode == 0, result.stdout


def test_recording_all_again_from_an_unreachable_upstream_keeps_the_cassette(pytester: pytest.Pytester) -> None:
    project = _weather(pytester.path, "weather?", "sunny")
    _record(pytester, "sunny")
    before = _weather_cassette(project).read_bytes()
    result = _pytest(pytester, "--dshkit-record=all", f"--dshkit-record-upstream={_refused_url()}")
    assert result.returncode == 1 and "unreachable" in result.stdout
    assert _weather_cassette(project).read_bytes() == before
    assert _pytest(pytester).returncode == 0


@pytest.mark.parametrize("mode", ["once", "all"])
def test_a_recording_without_traffic_leaves_no_empty_cassette(pytester: pytest.Pytester, mode: str) -> None:
    project = _app(pytester.path, '''
        def test_weather(dshkit_cassette):
            raise RuntimeError("the test stops before its first request")
    ''')
    if mode == "all":  # an earlier recording, which `all` would have replaced
        _weather(project, "weather?", "sunny")
        _record(pytester, "sunny")
        before = _weather_cassette(project).read_bytes()
        _app(project, '''
            def test_weather(dshkit_cassette):
                raise RuntimeError("the test stops before its first request")
        ''')
    with MockServer(Script.replies("sunny")) as upstream:
        result = _pytest(pytester, f"--dshkit-record={mode}", f"--dshkit-record-upstream={upstream.base_url}")
        assert result.returncode == 1 and "1 failed" in result.stdout
    if mode == "all":
        assert _weather_cassette(project).read_bytes() == before
    else:
        assert not _weather_cassette(project).exists()
    assert not [p for p in project.glob("cassettes/**/.*")], "no temporary file is left"


def test_new_episodes_that_cannot_record_fails_even_when_the_app_swallows_the_error(
    pytester: pytest.Pytester,
) -> None:
    project = _weather(pytester.path, "weather?", "sunny")
    _record(pytester, "sunny")
    before = _weather_cassette(project).read_bytes()
    _app(project, '''
        def test_weather(dshkit_cassette):
            assert ask(dshkit_cassette.base_url, "weather?") == "sunny"  # replayed
            assert ask_or_error(dshkit_cassette.base_url, "forecast?") == "error 502"
    ''')
    result = _pytest(pytester, "--dshkit-record=new_episodes", f"--dshkit-record-upstream={_refused_url()}")
    assert "1 passed, 1 error" in result.stdout, result.stdout
    assert "1 of 1 new request(s) could not be recorded" in result.stdout
    assert _weather_cassette(project).read_bytes() == before


def test_ctrl_c_before_any_traffic_leaves_no_cassette(pytester: pytest.Pytester) -> None:
    project = _app(pytester.path, '''
        def test_weather(dshkit_cassette):
            raise KeyboardInterrupt
    ''')
    with MockServer(Script.replies("sunny")) as upstream:
        result = _pytest(pytester, "--dshkit-record=once", f"--dshkit-record-upstream={upstream.base_url}",
                         interrupted=True)
    assert result.returncode == 2 and "KeyboardInterrupt" in result.stdout, result.stdout
    assert not _weather_cassette(project).exists()


def test_an_empty_cassette_left_by_an_older_run_does_not_block(pytester: pytest.Pytester) -> None:
    project = _weather(pytester.path, "weather?", "sunny")
    path = _weather_cassette(project)
    path.parent.mkdir(parents=True)
    path.write_text('{"type": "cassette", "version": 1}\n')
    result = _pytest(pytester)
    assert result.returncode == 1 and "holds no exchange to replay" in result.stdout
    _record(pytester, "sunny")  # `once` records it, as for a missing cassette
    assert _recorded_prompts(path) == ["weather?"]


def test_a_cassette_holding_only_a_torn_line_keeps_that_line_when_recorded_again(pytester: pytest.Pytester) -> None:
    project = _weather(pytester.path, "weather?", "sunny")
    path = _weather_cassette(project)
    path.parent.mkdir(parents=True)
    path.write_text('{"type": "cassette", "version": 1}\n{"type": "exchange", "request": {"met')
    _record(pytester, "sunny")
    assert _recorded_prompts(path) == ["weather?"]
    torn = path.with_name(path.name + ".torn")
    assert torn.read_text() == '{"type": "exchange", "request": {"met\n'  # set aside, not lost
