from pathlib import Path

import jsonschema
import pytest

from dshkit.harness.tools import ToolRuntime, builtin_tools
from dshkit.harness.tools.builtin import (
    BASH_PARAMETERS,
    GREP_PARAMETERS,
    LIST_PARAMETERS,
    READ_PARAMETERS,
    WRITE_PARAMETERS,
    render_read,
)
from dshkit.harness.tools.policy import auto_approver


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text("# DeepSeek Harness\nA toolkit.\n\nEnd\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\nprint(x)\n")
    return tmp_path


def runtime(root: Path, **kw: object) -> ToolRuntime:
    return ToolRuntime(builtin_tools(root, **kw), approver=auto_approver)  # type: ignore[arg-type]


@pytest.mark.parametrize("schema", [READ_PARAMETERS, WRITE_PARAMETERS, LIST_PARAMETERS, GREP_PARAMETERS,
                                    BASH_PARAMETERS])
def test_the_builtin_schemas_are_valid(schema: dict[str, object]) -> None:
    # builtin_tools() skips this check at definition (check_schema=False) to keep jsonschema out
    # of a cold start; this is the check it relies on.
    jsonschema.validators.validator_for(schema).check_schema(schema)


async def test_builtin_tools_validate_their_arguments(workspace: Path) -> None:
    rt = runtime(workspace)
    bad = await rt.execute("c", "read", '{"file_path": "README.md", "offset": 0}')
    assert bad.error is not None and bad.error.code == "INVALID_ARGS"
    assert bad.text.startswith('Error: invalid arguments: "offset"')
    missing = await rt.execute("c", "bash", '{"timeout": 1}')
    assert missing.text == 'Error: invalid arguments: missing required property "command"'


def envelope(path: Path, body: str) -> str:
    return f"<path>{path.resolve()}</path>\n<type>file</type>\n<content>\n{body}\n</content>"


async def test_read_answers_in_dsh_envelope(workspace: Path) -> None:
    """DSH 0.1.0-rc.8's `read` output, byte for byte: `N: line` rows, a blank line, a footer."""
    readme = workspace / "README.md"
    result = await runtime(workspace).execute("c", "read", '{"file_path": "README.md"}')
    assert result.text == envelope(readme, "1: # DeepSeek Harness\n2: A toolkit.\n3: \n4: End\n\n(End of file - total 4 lines)")
    part = await runtime(workspace).execute("c", "read", '{"file_path": "README.md", "offset": 2, "limit": 2}')
    assert part.text == envelope(readme, "2: A toolkit.\n3: \n\n(Showing lines 2-3 of 4. Use offset=4 to continue.)")
    past = await runtime(workspace).execute("c", "read", '{"file_path": "README.md", "offset": 9}')
    assert past.error is not None and past.error.code == "OFFSET_OUT_OF_RANGE"
    assert f'offset 9 is out of range for "{readme.resolve()}" (4 lines)' in past.text


def test_read_caps_lines_and_bytes_as_dsh() -> None:
    assert render_read("/e", "") == "<path>/e</path>\n<type>file</type>\n<content>\n(End of file - total 0 lines)\n</content>"
    assert "1: a\n2: b\n\n(End of file - total 2 lines)" in render_read("/f", "a\r\nb")
    long = render_read("/f", "x" * 2500)
    assert "1: " + "x" * 2000 + "... (line truncated to 2000 chars)\n" in long
    big = render_read("/f", ("y" * 1000 + "\n") * 100)
    assert big.endswith("(Output capped. Showing lines 1-51. Use offset=52 to continue.)\n</content>")
    assert "(Showing lines 1-2000 of 2001. Use offset=2001 to continue.)" in render_read("/f", "z\n" * 2001)


async def test_binary_and_oversized_refused(workspace: Path) -> None:
    (workspace / "bin.dat").write_bytes(b"\x89PNG\x00\x01")
    (workspace / "big.txt").write_text("x" * 2000)
    rt = runtime(workspace, max_read_bytes=1000)
    binary = await rt.execute("c", "read", '{"file_path": "bin.dat"}')
    assert binary.is_error and "binary" in binary.text
    big = await rt.execute("c", "read", '{"file_path": "big.txt"}')
    assert big.is_error and "too large" in big.text


async def test_write_list_grep(workspace: Path) -> None:
    rt = runtime(workspace)
    assert not (await rt.execute("c", "write", '{"file_path": "new/b.txt", "content": "hello\\nworld"}')).is_error
    assert (workspace / "new" / "b.txt").read_text() == "hello\nworld"
    listing = await rt.execute("c", "list", "{}")
    assert listing.text == "README.md\nnew/\nsrc/"
    found = await rt.execute("c", "grep", '{"pattern": "print|world"}')
    assert found.text.splitlines() == ["new/b.txt:2:world", "src/a.py:2:print(x)"]
    escaped = await rt.execute("c", "write", '{"file_path": "../x", "content": ""}')
    assert escaped.is_error


async def test_bash_runs_and_asks_under_default_policy(workspace: Path) -> None:
    ok = await runtime(workspace).execute("c", "bash", '{"command": "echo hi; exit 3"}')
    assert ok.text == "hi\n\n[exit code 3]"
    no_channel = await ToolRuntime(builtin_tools(workspace)).execute("c", "bash", '{"command": "echo hi"}')
    assert no_channel.is_error and "requires approval" in no_channel.text


async def test_bash_timeout(workspace: Path) -> None:
    result = await runtime(workspace).execute("c", "bash", '{"command": "sleep 30", "timeout": 0.2}')
    assert result.is_error and "timed out after 0.2s" in result.text
    assert result.error is not None and result.error.code == "TIMEOUT"


async def test_bash_output_cap(workspace: Path) -> None:
    rt = runtime(workspace, bash_output_limit=100)
    result = await rt.execute("c", "bash", '{"command": "yes x | head -c 100000"}')
    assert result.text.startswith("x\nx\n") and result.text.endswith("[output truncated after 100 bytes]")
    assert len(result.text) < 200


async def test_write_answers_in_dsh_envelope(workspace: Path) -> None:
    target = workspace / "new.txt"
    first = await runtime(workspace).execute("c", "write", '{"file_path": "new.txt", "content": "a"}')
    assert first.text == envelope(target, "Created file") and target.read_text() == "a"
    again = await runtime(workspace).execute("c", "write", '{"file_path": "new.txt", "content": "b"}')
    assert again.text == envelope(target, "Updated file") and target.read_text() == "b"
