"""`interpolate`: strict `{{name}}` substitution in prompt sections and contexts. A malformed
group, an unknown variable or one without a value fails loudly, naming the variable and the
section; a lone `{{` stays literal and substituted values are never scanned again."""

from __future__ import annotations

import pytest

from dshkit.harness.prompt.interpolate import PromptError, interpolate


def test_every_group_is_replaced_and_the_text_between_kept() -> None:
    variables = {"model": "m1", "cwd": "/w"}
    assert interpolate("{{model}} in {{cwd}}: {{model}}.", variables, where="s") == "m1 in /w: m1."


def test_errors_have_codes_and_name_the_section_and_what_is_registered() -> None:
    with pytest.raises(PromptError) as unknown:
        interpolate("{{modle}}", {"model": "m", "cwd": "/w"}, where="section 'persona'")
    assert unknown.value.code == "PROMPT_UNKNOWN_VARIABLE"
    assert str(unknown.value) == "section 'persona': unknown variable {{modle}} (registered: cwd, model)"
    with pytest.raises(PromptError) as unset:
        interpolate("{{cwd}}", {"cwd": None}, where="context 'env'")
    assert unset.value.code == "PROMPT_UNDEFINED_VARIABLE"
    assert str(unset.value) == "context 'env': variable {{cwd}} has no value"
    with pytest.raises(PromptError) as malformed:
        interpolate("{{ cwd }}", {"cwd": "/w"}, where="s")
    assert malformed.value.code == "PROMPT_INVALID"


@pytest.mark.parametrize("template", ["{{ x }}", "{{}}", "{{{model}}}", "{{Model}}"])
def test_malformed_groups_raise(template: str) -> None:
    with pytest.raises(PromptError, match="malformed"):
        interpolate(template, {"model": "m", "x": "x"}, where="section 's'")


def test_interpolation_rules() -> None:
    assert interpolate("a {{ b", {}, where="s") == "a {{ b"  # lone {{ is literal
    assert interpolate("{{x}}", {"x": "{{y}}"}, where="s") == "{{y}}"  # no rescan
    with pytest.raises(PromptError, match="no value"):
        interpolate("{{x}}", {"x": None}, where="s")
    with pytest.raises(PromptError, match="unknown variable"):
        interpolate("{{constructor}}", {}, where="s")
