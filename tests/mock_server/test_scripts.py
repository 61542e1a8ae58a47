"""Script models and the loader: YAML/JSON, shorthand, located errors, the committed schema."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import get_args

import pytest

import dshkit.mock_server
from dshkit.mock_server import FAULTS, QUIRKS, Script, load_script
from dshkit.mock_server.anthropic.render import ANTHROPIC_QUIRKS
from dshkit.mock_server.scripts import (
    FaultName,
    FaultStep,
    QuirkName,
    RawStep,
    ReplyStep,
    ScriptError,
    load_scripts,
    script_json_schema,
)

SCHEMA = Path(dshkit.mock_server.__file__).parent / "script.schema.json"


def test_fault_names_match_the_catalogue() -> None:
    assert set(get_args(FaultName)) == set(FAULTS)
    assert set(get_args(QuirkName)) == set(QUIRKS) | set(ANTHROPIC_QUIRKS)


def test_committed_schema_is_up_to_date() -> None:
    fresh = script_json_schema()
    assert json.loads(SCHEMA.read_text(encoding="utf-8")) == fresh, (
        "mock_server/script.schema.json is stale; regenerate it with: python -c \"import json, "
        "mock_server as m; open('mock_server/script.schema.json','w').write(json.dumps("
        "m.script_json_schema(), indent=2, ensure_ascii=False) + '\\n')\""
    )


def test_yaml_script_with_every_step_kind(tmp_path: Path) -> None:
    (tmp_path / "body.sse").write_bytes(b"data: [DONE]\n\n")
    f = tmp_path / "demo.yaml"
    f.write_text(
        """
steps:
  - reply:
      reasoning: think
      content: hi
      tool_calls:
        - {name: get_weather, arguments: {city: 東京}}
        - {name: raw_args, arguments: '{"a":1 '}
    match: {user: weather, headers: {X-Team: blue}}
  - rate_limit
  - fault: stall_after
    after_events: 3
  - raw: {file: body.sse}
  - raw:
      status: 200
      writes: [{text: "data: [DONE]\\n\\n", delay_ms: 5}, {b64: "AAE="}]
""",
        encoding="utf-8",
    )
    s = load_script(f)
    assert s.name == "demo"
    assert [type(x) for x in s.steps] == [ReplyStep, FaultStep, FaultStep, RawStep, RawStep]
    reply = s.steps[0].reply.to_reply()  # type: ignore[union-attr]
    assert reply.tool_calls[0].arguments == '{"city": "東京"}'
    assert reply.tool_calls[1].arguments == '{"a":1 '  # raw strings stay byte for byte
    assert s.steps[0].match.headers == {"x-team": "blue"}  # type: ignore[union-attr]
    assert s.steps[3].raw.writes_with_delays() == [(b"data: [DONE]\n\n", 0.0)]  # type: ignore[union-attr]
    assert s.steps[4].raw.writes_with_delays() == [(b"data: [DONE]\n\n", 0.005), (b"\x00\x01", 0.0)]  # type: ignore[union-attr]


def test_json_file_and_scripts_list(tmp_path: Path) -> None:
    f = tmp_path / "two.json"
    f.write_text(json.dumps({"scripts": [{"steps": ["success"]}, {"session": "s2", "steps": [{"reply": {"content": "x"}}]}]}))
    a, b = load_scripts(f)
    assert a.name == "two#0" and b.session == "s2"
    with pytest.raises(ScriptError, match="expected one script"):
        load_script(f)


@pytest.mark.parametrize(
    ("text", "line", "field", "message"),
    [
        ("steps:\n  - reply:\n      content: hi\n      bogus: 1\n", 4, "steps[0].reply.bogus", "unknown key `bogus`"),
        ("steps:\n  - success\n  - fault: nope\n", 3, "steps[1].fault", "unknown fault `nope`"),
        ("steps:\n  - {replyx: 1}\n", 2, "steps[0]", "unknown step kind `replyx` (did you mean `reply`?)"),
        # did you mean: a misspelt key (reported before the `steps` it leaves missing), fault, nested key
        ("stpes:\n  - success\n", 2, "stpes", "unknown key `stpes` (did you mean `steps`?)"),
        ("steps:\n  - rate_limt\n", 2, "steps[0].fault", "unknown fault `rate_limt` (did you mean `rate_limit`?)"),
        ("steps:\n  - reply: {contnt: hi}\n", 2, "steps[0].reply.contnt", "unknown key `contnt` (did you mean `content`?)"),
        ("steps:\n  - reply:\n      tool_calls:\n        - name: 'bad name'\n", 4, "steps[0].reply.tool_calls[0].name", "must match"),
        ("steps:\n  - reply: {content: x}\n    match: {user: '('}\n", 3, "steps[0].match.user", "invalid regex"),
        ("steps: []\n", 1, "steps", "at least 1"),
        ("steps:\n  - raw: {writes: [{text: a, b64: YQ==}]}\n", 2, "steps[0].raw.writes[0]", "exactly one of `text` or `b64`"),
    ],
)
def test_errors_name_file_line_step_and_field(tmp_path: Path, text: str, line: int, field: str, message: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(ScriptError) as info:
        load_script(f)
    e = info.value
    assert (e.source, e.line, e.field) == (str(f), line, field)
    assert message in e.message
    assert str(e).startswith(f"{f}:{line}: {field}: ")
    assert pickle.loads(pickle.dumps(e)).field == field


def test_errors_inside_a_scripts_list_name_their_line(tmp_path: Path) -> None:
    from dshkit.mock_server.scripts import load_scripts

    f = tmp_path / "many.yaml"
    f.write_text(
        "scripts:\n"
        "  - steps: [success]\n"
        "  - steps:\n"
        "      - reply:\n"
        "          content: hi\n"
        "          bogus: 1\n"
    )
    with pytest.raises(ScriptError) as info:
        load_scripts(f)
    assert (info.value.line, info.value.field) == (6, "scripts[1].steps[0].reply.bogus")


def test_syntax_and_file_errors(tmp_path: Path) -> None:
    f = tmp_path / "broken.yaml"
    f.write_text("steps:\n  - [unclosed\n")
    with pytest.raises(ScriptError, match="not valid YAML") as info:
        load_script(f)
    assert info.value.line is not None
    with pytest.raises(ScriptError, match="cannot read script file"):
        load_script(tmp_path / "missing.yaml")
    g = tmp_path / "raw.yaml"
    g.write_text("steps:\n  - raw: {file: nowhere.sse}\n")
    with pytest.raises(ScriptError, match="cannot read raw file") as info2:
        load_script(g)
    assert info2.value.field == "steps[0].raw.file"


def test_python_builders() -> None:
    s = Script.of("rate_limit", {"reply": {"content": "ok"}}, name="x", repeat_last=True)
    assert s.name == "x" and s.repeat_last and isinstance(s.steps[0], FaultStep)
    assert Script.replies("a", "b").steps[1].reply.content == "b"  # type: ignore[union-attr]
    assert s.step_label(0) == "x[0] (rate_limit)"
