import asyncio

from dshkit.harness.llm import ToolCallBlock
from dshkit.harness.tools import ToolRuntime, define_tool
from dshkit.harness.tools.results import ToolResult
from dshkit.harness.tools.runtime import ToolCall
from dshkit.harness.tools.scheduler import run_tool_calls

OBJ = {"type": "object", "properties": {"name": {"type": "string"}}}


def block(i: int, name: str, arg: str = "") -> ToolCallBlock:
    return ToolCallBlock(id=f"c{i}", name=name, arguments=f'{{"name": "{arg or i}"}}')


class Gates:
    """Bodies wait on their own event, so tests decide the completion order."""

    def __init__(self) -> None:
        self.gates: dict[str, asyncio.Event] = {}
        self.started: dict[str, asyncio.Event] = {}
        self.ended: dict[str, asyncio.Event] = {}
        self.log: list[str] = []

    def gate(self, name: str) -> asyncio.Event:
        return self.gates.setdefault(name, asyncio.Event())

    def started_event(self, name: str) -> asyncio.Event:
        return self.started.setdefault(name, asyncio.Event())

    def ended_event(self, name: str) -> asyncio.Event:
        return self.ended.setdefault(name, asyncio.Event())

    async def body(self, args: dict[str, str], call: ToolCall) -> str:
        name = args["name"]
        self.log.append(f"begin {name}")
        self.started_event(name).set()
        await self.gate(name).wait()
        self.log.append(f"end {name}")
        self.ended_event(name).set()
        return f"done {name}"


async def test_parallel_bodies_finish_out_of_order_commit_in_model_order() -> None:
    g = Gates()
    rt = ToolRuntime([define_tool("safe", "x", OBJ, g.body, concurrency_safe=True)])
    events: list[str] = []
    calls = [block(1, "safe"), block(2, "safe"), block(3, "safe")]

    async def drive() -> None:
        for name in ("1", "2", "3"):
            await g.started_event(name).wait()
        g.gate("3").set()
        g.gate("2").set()
        g.gate("1").set()

    driver = asyncio.create_task(drive())
    out = await run_tool_calls(
        rt, calls,
        on_start=lambda b: events.append(f"call {b.id}"),
        on_result=lambda b, r: events.append(f"result {b.id}"),
    )
    await driver
    assert events == ["call c1", "call c2", "call c3", "result c1", "result c2", "result c3"]
    assert [r.text for r in out.results] == ["done 1", "done 2", "done 3"]
    assert g.log.index("end 3") < g.log.index("end 1")  # really finished out of order


async def test_exclusive_calls_run_alone() -> None:
    events: list[str] = []
    rt = ToolRuntime([define_tool("solo", "x", OBJ, lambda a: events.append(f"body {a['name']}") or "ok")])
    await run_tool_calls(
        rt, [block(1, "solo"), block(2, "solo")],
        on_start=lambda b: events.append(f"call {b.id}"),
        on_result=lambda b, r: events.append(f"result {b.id}"),
    )
    assert events == ["call c1", "body 1", "result c1", "call c2", "body 2", "result c2"]


async def test_pool_cap_is_honoured() -> None:
    g = Gates()
    rt = ToolRuntime([define_tool("safe", "x", OBJ, g.body, concurrency_safe=True)])
    calls = [block(i, "safe") for i in range(1, 4)]
    task = asyncio.create_task(run_tool_calls(rt, calls, max_parallel=2))
    await g.started_event("1").wait()
    await g.started_event("2").wait()
    assert "begin 3" not in g.log
    g.gate("1").set()
    await g.started_event("3").wait()
    g.gate("2").set()
    g.gate("3").set()
    out = await task
    assert len(out.results) == 3 and not out.aborted


async def test_cancellation_pairs_unstarted_calls_with_aborted_before_dispatch() -> None:
    g = Gates()
    signal = asyncio.Event()
    rt = ToolRuntime([define_tool("solo", "x", OBJ, g.body)])
    events: list[str] = []
    results: dict[str, ToolResult] = {}

    def on_result(b: ToolCallBlock, r: ToolResult) -> None:
        events.append(f"result {b.id}")
        results[b.id] = r

    task = asyncio.create_task(
        run_tool_calls(rt, [block(1, "solo"), block(2, "solo"), block(3, "solo")], signal=signal,
                       on_start=lambda b: events.append(f"call {b.id}"), on_result=on_result)
    )
    await g.started_event("1").wait()
    signal.set()
    g.gate("1").set()  # the running body drains
    out = await task
    assert out.aborted
    assert events == ["call c1", "result c1", "call c2", "result c2", "call c3", "result c3"]
    assert results["c1"].error_event_data() == {"name": "AbortError", "code": "ABORTED"}
    for cid in ("c2", "c3"):
        assert results[cid].error_event_data() == {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"}
        assert results[cid].text == "Error: tool call aborted before dispatch"


async def test_concluded_and_policy_order_is_model_order() -> None:
    seen: list[str] = []

    def concluding(args: dict[str, str], call: ToolCall) -> str:
        call.conclude_turn()
        return "bye"

    rt = ToolRuntime(
        [define_tool("end", "x", OBJ, concluding, concurrency_safe=True)],
        pre_execute=[lambda c, n: seen.append(c.call_id) or n()],
    )
    out = await run_tool_calls(rt, [block(1, "end"), block(2, "end")])
    assert out.concluded and seen == ["c1", "c2"]


async def turns(n: int = 50) -> None:
    """Let the event loop run `n` rounds: counted turns, not time, so a loaded machine gives the
    scheduler exactly the same chances to act (wrongly) as an idle one."""
    for _ in range(n):
        await asyncio.sleep(0)


async def test_an_exclusive_call_is_a_barrier_between_pools() -> None:
    g = Gates()
    checks: list[str] = []

    def safe_for(args: object) -> bool:
        checks.append(str(args))
        return True

    rt = ToolRuntime([
        define_tool("safe", "x", OBJ, g.body, concurrency_safe=safe_for),
        define_tool("solo", "x", OBJ, g.body),
    ])
    events: list[str] = []
    calls = [block(1, "safe"), block(2, "safe"), block(3, "solo"), block(4, "safe")]
    task = asyncio.create_task(run_tool_calls(
        rt, calls,
        on_start=lambda b: events.append(f"call {b.id}"),
        on_result=lambda b, r: events.append(f"result {b.id}"),
    ))
    await g.started_event("1").wait()
    await g.started_event("2").wait()
    # One call of the pool ends, the other still runs: the exclusive call must keep waiting.
    g.gate("2").set()
    await g.ended_event("2").wait()
    await turns()
    assert "call c3" not in events  # waits for the whole pool before it to drain
    g.gate("1").set()
    await g.started_event("3").wait()
    await turns()
    assert "call c4" not in events  # and nothing after it starts while it runs
    g.gate("3").set()
    g.gate("4").set()
    out = await task
    assert events == [
        "call c1", "call c2", "result c1", "result c2", "call c3", "result c3", "call c4", "result c4",
    ]
    assert [r.text for r in out.results] == ["done 1", "done 2", "done 3", "done 4"]
    # each call's safety is decided once, before it starts
    assert sorted(checks) == sorted(str({"name": str(i)}) for i in (1, 2, 4))
