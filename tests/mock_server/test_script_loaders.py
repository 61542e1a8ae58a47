"""Scripts load through libyaml when PyYAML has it, and a bad script is located the same way
through either loader: the same message, line, field and hint, word for word."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dshkit.mock_server import locate as scripts_module  # the YAML reader of scripts and scenarios
from dshkit.mock_server.scripts import ScriptError, load_scripts

BAD = {
    "unknown_key": "steps:\n  - reply:\n      content: hi\n      bogus: 1\n",
    "unknown_fault": "steps:\n  - success\n  - fault: nope\n",
    "step_kind": "name: x\nsteps:\n  - {replyx: 1}\n",
    "misspelt_steps": "stpes:\n  - success\n",
    "deep_field": "steps:\n  - reply:\n      tool_calls:\n        - name: 'bad name'\n",
    "regex": "steps:\n  - reply: {content: x}\n    match: {user: '('}\n",
    "block_scalar": "steps:\n  - reply:\n      content: |\n        line one\n        line two\n      logprobs: 99\n",
    "in_a_list": "scripts:\n  - steps: [success]\n  - steps:\n      - reply:\n          content: hi\n          bogus: 1\n",
    "unclosed_flow": "steps:\n  - [unclosed\n",
    "unclosed_mapping": "steps:\n  - reply: {content: hi\n  - success\n",
    "tab_indent": "steps:\n\t- success\n",
    "bad_scalar": "steps:\n  - reply:\n      content: 'open\n",
    "not_a_mapping": "- 3\n- [x\n",
    "duplicate_anchor_alias": "steps:\n  - *nowhere\n",
    "wrong_type": "steps: 7\n",
}


def _error(path: Path) -> str:
    with pytest.raises(ScriptError) as info:
        load_scripts(path)
    e = info.value
    return f"{e}|line={e.line}|field={e.field}|hint={e.hint}"


@pytest.mark.skipif(getattr(yaml, "CSafeLoader", None) is None, reason="PyYAML built without libyaml")
@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_script_is_located_the_same_through_libyaml_and_pure_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    f = tmp_path / f"{name}.yaml"
    f.write_text(BAD[name], encoding="utf-8")
    monkeypatch.setattr(scripts_module, "_FAST_LOADER", yaml.CSafeLoader)
    fast = _error(f)
    monkeypatch.setattr(scripts_module, "_FAST_LOADER", None)
    assert fast == _error(f)


def test_scripts_load_the_same_through_either_loader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "ok.yaml"
    f.write_text(
        "scripts:\n"
        "  - name: a\n    steps:\n      - reply: {content: 'héllo', reasoning: \"r\\u00e9\"}\n"
        "      - fault: rate_limit\n        retry_after: 1.5\n"
        "  - steps: [success, {raw: {writes: [{text: 'data: x\\n\\n'}]}}]\n",
        encoding="utf-8",
    )
    loaded = []
    for loader in (getattr(yaml, "CSafeLoader", None), None):
        monkeypatch.setattr(scripts_module, "_FAST_LOADER", loader)
        loaded.append([s.model_dump() for s in load_scripts(f)])
    assert loaded[0] == loaded[1]
    assert loaded[0][0]["steps"][0]["reply"]["content"] == "héllo"


def test_syntax_errors_keep_the_pure_python_wording(tmp_path: Path) -> None:
    f = tmp_path / "broken.yaml"
    f.write_text("steps:\n  - [unclosed\n", encoding="utf-8")
    with pytest.raises(ScriptError) as info:
        load_scripts(f)
    assert info.value.line == 3
    assert "while parsing a flow sequence" in str(info.value)


def _bomb(levels: int, where: str) -> str:
    """A script whose tool-call arguments hold nine copies of nine copies of ... through aliases."""
    lines = ['x0: &x0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"x{i}: &x{i} [" + ",".join([f"*x{i - 1}"] * 9) + "]" for i in range(1, levels)]
    inner = "\n".join(" " * 12 + line for line in lines)
    return f"steps:\n  - reply:\n      tool_calls:\n        - name: f\n          {where}:\n{inner}\n"


@pytest.mark.parametrize("loader", [getattr(yaml, "CSafeLoader", None), None])
def test_an_alias_bomb_is_a_located_error_before_it_is_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loader: object
) -> None:
    monkeypatch.setattr(scripts_module, "_FAST_LOADER", loader)
    f = tmp_path / "bomb.yaml"
    f.write_text(_bomb(9, "arguments"), encoding="utf-8")  # 9**9 values once expanded
    with pytest.raises(ScriptError) as info:
        load_scripts(f)
    assert "aliases expand to more than 1,000,000 values" in str(info.value)
    assert info.value.line is not None and 6 <= info.value.line <= 14


def test_modest_aliases_still_load(tmp_path: Path) -> None:
    f = tmp_path / "ok.yaml"
    f.write_text(_bomb(4, "arguments"), encoding="utf-8")  # 9**4 values: a big but honest document
    (script,) = load_scripts(f)
    call = script.steps[0].reply.tool_calls[0]  # type: ignore[union-attr]
    assert call.arguments["x3"][8][8][8] == ["x"] * 9  # type: ignore[index]
