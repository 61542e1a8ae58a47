"""Tool results: how a failure becomes a coded or uncoded error result, and how every text of
a result (content, error message, deferred contexts, meta) is scrubbed of known secrets before
the log or the model sees it."""

from __future__ import annotations

from pathlib import Path

import pytest

from dshkit.harness.llm import TextBlock, UserMessage
from dshkit.harness.llm.errors import ToolArgsError
from dshkit.harness.tools import ToolRuntime, builtin_tools
from dshkit.harness.tools.policy import auto_approver
from dshkit.harness.tools.results import (
    ToolErrorInfo,
    ToolResult,
    denied_result,
    error_result,
    scrub_result,
)


def test_an_error_is_coded_only_by_a_harness_error_or_an_explicit_code() -> None:
    coded = error_result(ToolArgsError("bad input"))
    assert coded.text == "Error: bad input"
    assert coded.error_event_data() == {"name": "ToolArgsError", "code": "INVALID_ARGS"}
    plain = error_result(ValueError())  # no message: the type names the failure
    assert plain.text == "Error: ValueError" and plain.error_event_data() is None
    assert error_result("gone", code="X").error_event_data() == {"name": "ToolError", "code": "X"}
    denied = denied_result("not today")
    assert denied.is_error and denied.text == "Error: not today" and denied.error_event_data() is None
    block = denied.to_message("call_1").content[0]
    assert (block.tool_call_id, block.is_error, block.content) == ("call_1", True, denied.content)
    fine = ToolResult(is_error=False, content=(TextBlock(text="fine"),)).to_message("call_2")
    assert fine.content[0].is_error is False  # written on success too, as DSH does


async def test_secrets_are_scrubbed_from_tool_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_TOKEN", "sk-very-secret-42")
    rt = ToolRuntime(builtin_tools(tmp_path), approver=auto_approver, secrets=["sk-very-secret-42"])
    result = await rt.execute("c", "bash", '{"command": "env | grep SOME_TOKEN"}')
    assert result.text == "SOME_TOKEN={{scrubbed:secret}}\n"
    failed = await rt.execute("c", "bash", '{"command": "echo sk-very-secret-42; exit 3"}')
    assert "sk-very-secret" not in failed.text and "{{scrubbed:secret}}" in failed.text


def test_scrub_result_covers_every_text_of_a_result_and_its_meta() -> None:
    result = ToolResult(
        is_error=True, content=(TextBlock(text="key sk-very-secret-42"),),
        error=ToolErrorInfo(message="failed with sk-very-secret-42", code="X", name="E"),
        meta={"shown": ["sk-very-secret-42", 3], "path": "sk-very-secret-42.txt"},
        additional_contexts=(UserMessage.text("ctx sk-very-secret-42"),),
    )
    scrubbed = scrub_result(result, ["sk-very-secret-42", "k"])
    assert "sk-very-secret-42" not in repr(scrubbed)
    assert scrubbed.meta == {"shown": ["{{scrubbed:secret}}", 3], "path": "{{scrubbed:secret}}.txt"}
    assert scrubbed.text == "key {{scrubbed:secret}}" and scrubbed.error is not None
    assert scrubbed.error.message == "failed with {{scrubbed:secret}}"


@pytest.mark.parametrize("key", ["k", "the", "test"])
async def test_a_short_key_rewrites_no_text(tmp_path: Path, key: str) -> None:
    """A key shorter than the policy's minimum is never matched: scrubbing it would rewrite
    every word holding those letters (`un{{scrubbed:secret}}nown tool`)."""
    (tmp_path / "notes.txt").write_text("the test took too long; unknown tool k\n")
    rt = ToolRuntime(builtin_tools(tmp_path), approver=auto_approver, secrets=[key])
    result = await rt.execute("c", "read", '{"file_path": "notes.txt"}')
    assert "\n1: the test took too long; unknown tool k\n" in result.text and "scrubbed" not in result.text
    unknown = await rt.execute("c", "nope", "{}")
    assert "unknown" in unknown.text.lower() and "scrubbed" not in unknown.text
