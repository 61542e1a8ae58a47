"""Scenario files and the catalogue (`dshkit.conformance.scenario`): every bundled file validates
and the catalogue covers the checklist; an invalid file is refused with its path, line and field;
file defaults, per-protocol step overrides, and ids unique across files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dshkit.conformance import load_catalogue
from dshkit.conformance.scenario import (
    SCENARIO_DIR,
    FinishExpect,
    ScenarioError,
    checklist_ids,
    load_scenario_file,
)


def test_every_file_validates_and_ids_are_unique() -> None:
    files = sorted(SCENARIO_DIR.glob("*.yaml"))
    assert files
    per_file = [load_scenario_file(f) for f in files]
    ids = [s.id for scenarios in per_file for s in scenarios]
    assert len(ids) == len(set(ids))
    assert len(load_catalogue()) == len(ids) >= 100


def test_every_adapter_item_is_covered() -> None:
    covered = {t for s in load_catalogue() for t in checklist_ids(s.tags)}
    assert {f"A{i}" for i in range(1, 25)} <= covered


def test_a20_is_marked_by_design() -> None:
    a20 = [s for s in load_catalogue() if "A20" in s.tags]
    assert a20 and all("by-design" in s.tags and s.by_design for s in a20)


def test_every_dsh_testing_section_4_part_is_covered() -> None:
    tags = {t for s in load_catalogue() for t in s.tags}
    assert {"dsh:4.1", "dsh:4.2", "dsh:4.3", "dsh:4.4"} <= tags


def test_dsh_exact_scenarios_pin_chunks() -> None:
    exact = [s for s in load_catalogue() if "dsh-exact" in s.tags]
    assert exact and all(any(step.expect.chunks for step in s.steps) for s in exact)


BAD = """\
area: sse
scenarios:
  - id: broken-one
    title: t
    tags: [A1]
    wire: {reply: {content: x}}
    expect:
      finish: {kind: stopp}
"""


def test_errors_name_file_line_and_field(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(BAD)
    with pytest.raises(ScenarioError) as info:
        load_scenario_file(f)
    text = str(info.value)
    assert str(f) in text and ":8:" in text
    assert "steps[0].expect.finish.kind" in text and "broken-one" in text


@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ("tags: [Z9]", "unknown tag"),
        ("tags: [area:x]", "checklist id"),
        ("tags: [A1]\n    requires: [teleport]", "requires"),
    ],
)
def test_semantic_errors(tmp_path: Path, snippet: str, needle: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(BAD.replace("tags: [A1]", snippet).replace("stopp", "stop"))
    with pytest.raises(ScenarioError, match=re.escape(needle)):
        load_scenario_file(f)


def test_missing_recording_is_reported(tmp_path: Path) -> None:
    f = tmp_path / "rec.yaml"
    f.write_text(BAD.replace("{reply: {content: x}}", "{recording: {file: nowhere.sse}}").replace("stopp", "stop"))
    with pytest.raises(ScenarioError, match=r"nowhere\.sse"):
        load_scenario_file(f)


def test_every_capability_says_what_it_means() -> None:
    from dshkit.conformance.scenario import CAPABILITIES, CAPABILITY_NOTES

    assert set(CAPABILITY_NOTES) == set(CAPABILITIES)


def test_a_file_that_is_not_yaml_is_located_as_the_pure_python_loader_says(tmp_path: Path) -> None:
    # Scenario files are parsed by libyaml when present; what it refuses is parsed again by the
    # pure-Python loader, so the message and line stay those of `yaml.safe_load` (libyaml words
    # this one "did not find expected node content").
    bad = tmp_path / "bad.yaml"
    bad.write_text("scenarios:\n  - id: a\n    tags: [A1,\n    title: {\n")
    with pytest.raises(ScenarioError) as caught:
        load_scenario_file(bad)
    assert str(caught.value).startswith(f"{bad}:5: not valid YAML: while parsing a flow node\n"
                                        "expected the node content, but found '<stream end>'")


def test_an_alias_bomb_in_a_scenario_file_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    lines = ["x0: &x0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * 9) + "]" for i in range(1, 9)]
    f = tmp_path / "bomb.yaml"
    f.write_text("\n".join(lines) + "\n" + BAD)
    with pytest.raises(ScenarioError) as info:
        load_scenario_file(f)
    assert "aliases expand to more than 1,000,000 values" in str(info.value) and str(f) in str(info.value)


GOOD = BAD.replace("stopp", "stop")


def test_a_file_read_again_is_its_new_text_and_its_recordings_are_checked_again(tmp_path: Path) -> None:
    # Each file's scenarios are kept by path and text: an edit is seen at once, even one of the
    # same size within the file system's timestamp granularity, and a recording deleted since
    # the last read is reported.
    f = tmp_path / "s.yaml"
    (tmp_path / "r.sse").write_text('data: {"choices": []}\n\ndata: [DONE]\n\n')
    f.write_text(GOOD)
    first = load_scenario_file(f)
    assert [sc.id for sc in first] == ["broken-one"] and first[0].source == str(f)
    assert load_scenario_file(f) == first
    f.write_text(GOOD.replace("broken-one", "broken-two"))  # same size
    assert [sc.id for sc in load_scenario_file(f)] == ["broken-two"]
    f.write_text(GOOD.replace("{reply: {content: x}}", "{recording: {file: r.sse}}"))
    assert load_scenario_file(f)[0].steps[0].wire.recording is not None
    (tmp_path / "r.sse").unlink()
    with pytest.raises(ScenarioError, match=r"r\.sse"):
        load_scenario_file(f)
    f.write_text("scenarios: {")  # and a file that became invalid is refused, not served from before
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario_file(f)


def test_the_same_text_at_another_path_is_that_paths_own(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "s.yaml").write_text(GOOD)
    (tmp_path / "b" / "s.yaml").write_text(GOOD)
    a, b = load_scenario_file(tmp_path / "a" / "s.yaml"), load_scenario_file(tmp_path / "b" / "s.yaml")
    assert a[0].source == str(tmp_path / "a" / "s.yaml") and b[0].source == str(tmp_path / "b" / "s.yaml")


def test_file_defaults_fill_each_scenario_that_does_not_set_its_own(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(GOOD.replace("area: sse\n", "area: sse\nprotocols: [chat, anthropic]\n")
                 + "  - id: own\n    title: t\n    tags: [A1, area:text]\n    protocols: [anthropic]\n"
                   "    wire: {reply: {content: x}}\n    expect: {finish: {kind: stop}}\n")
    first, own = load_scenario_file(f)
    assert (first.tags, first.protocols, first.area) == (["A1", "area:sse"], ["chat", "anthropic"], "sse")
    assert (own.tags, own.protocols, own.area) == (["A1", "area:text"], ["anthropic"], "text")
    assert len(first.steps) == 1 and first.steps[0].expect.finish is not None  # the one-step shorthand


def test_an_anthropic_override_replaces_the_fields_it_gives_and_keeps_the_rest(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(GOOD.replace("      finish: {kind: stop}\n", "      finish: {kind: stop}\n      usage: {inputTokens: 1}\n"
                              "    anthropic:\n      wire: {http: {status: 529}}\n"
                              "      expect: {finish: {kind: error, code: OVERLOADED}}\n"))
    (step,) = load_scenario_file(f)[0].steps
    chat, anthropic = step.for_protocol("chat"), step.for_protocol("anthropic")
    assert chat is step
    assert anthropic.wire.http is not None and anthropic.wire.http.status == 529 and anthropic.anthropic is None
    assert anthropic.expect.finish == FinishExpect(kind="error", code="OVERLOADED")
    assert anthropic.expect.usage == {"inputTokens": 1} == chat.expect.usage
    # An override whose merged expectation is invalid fails at load, not when played.
    f.write_text(GOOD.replace("      finish: {kind: stop}\n", "      finish: {kind: stop}\n"
                              "    anthropic:\n      expect: {cancelled: true}\n"))
    with pytest.raises(ScenarioError, match="a cancelled step has no finish to expect"):
        load_scenario_file(f)


def test_a_folder_is_read_in_name_order_and_ids_are_unique_across_files(tmp_path: Path) -> None:
    (tmp_path / "b.yml").write_text(GOOD.replace("broken-one", "from-b"))
    (tmp_path / "a.yaml").write_text(GOOD.replace("broken-one", "from-a"))
    (tmp_path / "notes.txt").write_text("not a scenario file")
    assert [s.id for s in load_catalogue([tmp_path])] == ["from-a", "from-b"]
    (tmp_path / "c.yaml").write_text(GOOD.replace("broken-one", "from-a"))
    with pytest.raises(ScenarioError) as info:
        load_catalogue([tmp_path])
    assert str(tmp_path / "c.yaml") in str(info.value)
    assert f"scenario id 'from-a' is already used in {tmp_path / 'a.yaml'}" in str(info.value)
