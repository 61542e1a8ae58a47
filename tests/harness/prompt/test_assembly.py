import pytest

from dshkit.harness.llm import ToolSchema
from dshkit.harness.prompt import SystemPrompt
from dshkit.harness.prompt.assembly import HARNESS_IDENTITY, UNLISTED_TOOLS
from dshkit.harness.prompt.interpolate import PromptError


def schema(name: str) -> ToolSchema:
    return ToolSchema(name=name, description=name, parameters={"type": "object", "properties": {}})


def test_sections_ordered_with_variables_and_identity_first() -> None:
    p = SystemPrompt(persona="You are {{name}}, running {{model}}.")
    p.variable("name", "dshkit")
    p.variable("model", lambda: "deepseek-chat")
    p.section("tools:guidance", "Use the read tool.", order=100)
    p.section("early", "", order=-5)  # empty sections are dropped
    a = p.assemble()
    assert a.system == f"{HARNESS_IDENTITY}\n\nYou are dshkit, running deepseek-chat.\n\nUse the read tool."
    assert [s.name for s in a.sections] == ["harness:identity", "deployment:persona", "tools:guidance"]


def test_ties_keep_registration_order_and_plugins() -> None:
    class Plugin:
        def setup(self, prompt: SystemPrompt) -> None:
            prompt.section("b", "B", order=5)
            prompt.section("a", "A", order=5)

    p = SystemPrompt(include_identity=False).use(Plugin())
    p.use(lambda q: q.section("c", "C", order=1))
    assert p.assemble().system == "C\n\nB\n\nA"


def test_unknown_variable_names_variable_and_section() -> None:
    p = SystemPrompt()
    p.section("persona:extra", "Model: {{modle}}")
    with pytest.raises(PromptError, match=r"section 'persona:extra'.*\{\{modle\}\}"):
        p.assemble()


def test_unknown_variable_in_context() -> None:
    p = SystemPrompt()
    p.context("env:time", "Now: {{now}}")
    with pytest.raises(PromptError, match=r"context 'env:time'.*\{\{now\}\}"):
        p.assemble()


def test_contexts_are_not_in_system_and_system_is_stable() -> None:
    clock = iter(["10:00", "10:01"])
    p = SystemPrompt()
    p.variable("cwd", "/work")
    p.context("env:time", lambda: f"Time: {next(clock)}")
    p.context("env:cwd", "Working directory: {{cwd}}", order=-1)
    first, second = p.assemble(), p.assemble()
    assert first.system == second.system and "10:0" not in first.system
    assert first.contexts_text == "Working directory: /work\n\nTime: 10:00"
    assert second.contexts_text.endswith("10:01")
    p.include_runtime_context = False
    assert p.assemble().contexts == ()


def test_tools_sorted_by_name_unless_ordered() -> None:
    p = SystemPrompt()
    p.tools([schema("write"), schema("bash")])
    p.tools(lambda: [schema("read"), schema("Zed")])
    assert [t.name for t in p.assemble().tools] == ["Zed", "bash", "read", "write"]
    q = SystemPrompt(tool_order=["read", UNLISTED_TOOLS, "bash"])
    q.tools([schema("write"), schema("bash"), schema("read"), schema("list")])
    assert [t.name for t in q.assemble().tools] == ["read", "list", "write", "bash"]
    r = SystemPrompt(tool_order=["nope", UNLISTED_TOOLS])
    r.tools([schema("read")])
    with pytest.raises(PromptError, match="nope"):
        r.assemble()
    with pytest.raises(PromptError, match="exactly once"):
        SystemPrompt(tool_order=["read"])


def test_duplicates_and_complete_sections() -> None:
    p = SystemPrompt()
    with pytest.raises(PromptError, match="already registered"):
        p.section("harness:identity", "x")
    p.section("only", "Just this.", complete=True)
    assert p.assemble().system == "Just this."
    p.section("other", "x", complete=True)
    with pytest.raises(PromptError, match="one complete section"):
        p.assemble()
    with pytest.raises(PromptError, match="finite"):
        p.section("nan", "x", order=float("nan"))
