"""Every reader of session logs takes DSH's default `session.jsonl.zstd` as it takes the plain log.

DSH writes its session logs zstd-compressed. The corpus holds real DSH-written logs (plain);
each is laid out here in `tmp_path` the way DSH lays out a session folder, once plain
(`session.jsonl`, `session.N.jsonl`, `replay.override.json`) and once compressed
(`session.jsonl.zstd`, `session.N.jsonl.zstd`, the same sidecar), one zstd frame per few lines
as an appending writer makes them. `dshkit replay` (straight and `--wire`), `dshkit decode`,
`dshkit view` and the `dshkit_replay` fixture must give the same result for both; a damaged
file gets a located error and exit status 2 from each, never a traceback.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dshkit.cli import main
from dshkit.harness.llm import BlockAssembler, GenerateOptions, HarnessError, UserMessage
from dshkit.harness.llm.codec import message_to_json
from dshkit.harness.llm.messages import ModelSource
from dshkit.harness.providers.deepseek import DeepSeekAdapter
from dshkit.harness.session import parse_session_log
from dshkit.harness.session.lossless import thaw_json
from dshkit.mock_server import ReplayServerFactory

from ..harness.session.test_compression import damaged, frames

WIRE_LOGS = ("subagent-parallel", "cancel", "error-finish", "packed-chunks")
"""Replayed over the wire too: subagent logs beside the parent, a hang sidecar, a pre-chunk
throw, packed chunk rows."""


def _scenarios(dsh_sessions: Path) -> list[str]:
    return sorted(p.name.removesuffix("--session.jsonl") for p in dsh_sessions.glob("*--session.jsonl"))


def _lay_out(dsh_sessions: Path, scenario: str, folder: Path, *, compress: bool, suffix: str = ".zstd") -> Path:
    """The scenario as a DSH session folder; returns its primary log."""
    folder.mkdir(parents=True)
    for src in dsh_sessions.glob(f"{scenario}--*"):
        name = src.name.removeprefix(f"{scenario}--")
        if name.endswith(".jsonl") and compress:
            (folder / (name + suffix)).write_bytes(frames(src.read_bytes()))
        else:
            shutil.copyfile(src, folder / name)
    return folder / ("session.jsonl" + (suffix if compress else ""))


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def _same(plain: str, packed: str, plain_path: Path, packed_path: Path) -> None:
    assert packed.replace(str(packed_path), str(plain_path)) == plain


def test_replay_decode_and_view_read_every_compressed_corpus_log_alike(
    dsh_sessions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for scenario in _scenarios(dsh_sessions):
        plain = _lay_out(dsh_sessions, scenario, tmp_path / "plain" / scenario, compress=False)
        packed = _lay_out(dsh_sessions, scenario, tmp_path / "zstd" / scenario, compress=True)
        workspace = tmp_path / "ws" / scenario
        workspace.mkdir(parents=True)
        modes = [[], ["--wire"]] if scenario in WIRE_LOGS else [[]]
        for mode in modes:
            results = [_run(["replay", str(p), "--workspace", str(workspace), *mode], capsys) for p in (plain, packed)]
            assert results[0][0] == results[1][0], (scenario, mode, results)
            _same(results[0][1], results[1][1], plain, packed)
            assert json.loads(results[1][1])["model_calls"] > 0 or scenario == "compaction-recovery"
        decoded = [_run(["decode", str(p)], capsys) for p in (plain, packed)]
        assert decoded[0][0] == decoded[1][0] == 0, (scenario, decoded[1][2])
        _same(decoded[0][1], decoded[1][1], plain, packed)
        pages = []
        for p in (plain, packed):
            out = tmp_path / "views" / f"{scenario}-{p.suffix}.html"
            assert _run(["view", str(p), "-o", str(out)], capsys)[0] == 0
            pages.append(out.read_text(encoding="utf-8"))
        _same(pages[0], pages[1], plain, packed)


def test_the_frame_decides_not_the_name(dsh_sessions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A compressed log named `session.jsonl`, and one named `.zst` as the zstd tool names it."""
    plain = _lay_out(dsh_sessions, "tool-call-turn", tmp_path / "plain", compress=False)
    for folder, suffix in (("disguised", ""), ("zst", ".zst")):
        packed = _lay_out(dsh_sessions, "tool-call-turn", tmp_path / folder, compress=True, suffix=suffix)
        assert packed.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
        for argv in (["replay", "{}", "--workspace", str(tmp_path)], ["decode", "{}"]):
            want = _run([a.replace("{}", str(plain)) for a in argv], capsys)
            got = _run([a.replace("{}", str(packed)) for a in argv], capsys)
            assert got[0] == want[0] == 0
            _same(want[1], got[1], plain, packed)


async def test_the_dshkit_replay_fixture_serves_a_compressed_log(
    dshkit_replay: ReplayServerFactory, dsh_sessions: Path, tmp_path: Path
) -> None:
    log = _lay_out(dsh_sessions, "packed-chunks", tmp_path / "s", compress=True)
    server = await dshkit_replay(log)
    logged = [thaw_json(e.data)["message"]["content"]
              for e in parse_session_log(log.read_bytes()).session.events if e.type == "assistant/message"]
    adapter = DeepSeekAdapter(server.base_url, "sk-x")
    got = []
    try:
        for _ in logged:
            assembler = BlockAssembler()
            options = GenerateOptions(provider="deepseek", model="deepseek-v4-flash", messages=(UserMessage.text("hi"),))
            async for chunk in adapter.stream(options):
                assembler.feed(chunk)
            got.append(message_to_json(assembler.message(ModelSource(provider="p", model="m")))["content"])
    finally:
        await adapter.aclose()
    assert got == logged and logged


@pytest.mark.parametrize("kind", ["truncated", "corrupt"])
def test_a_damaged_compressed_log_is_a_located_error_for_every_command(
    kind: str, dsh_sessions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, problem = damaged((dsh_sessions / "tool-call-turn--session.jsonl").read_bytes())[kind]
    log = tmp_path / "session.jsonl.zstd"
    log.write_bytes(data)
    for argv in (["replay", str(log), "--workspace", str(tmp_path)], ["replay", str(log), "--wire"],
                 ["decode", str(log)], ["view", str(log), "-o", str(tmp_path / "v.html")],
                 ["serve", "--replay", str(log)], ["run", "hi", "--replay", str(log), "--workspace", str(tmp_path)]):
        code, _, err = _run(argv, capsys)
        assert code == 2, argv
        assert f"{log}: " in err and problem in err and "Traceback" not in err, (argv, err)


@pytest.mark.parametrize("kind", ["truncated", "corrupt"])
async def test_a_damaged_compressed_log_is_a_located_error_for_the_fixture(
    kind: str, dsh_sessions: Path, tmp_path: Path, dshkit_replay: ReplayServerFactory,
) -> None:
    data, problem = damaged((dsh_sessions / "tool-call-turn--session.jsonl").read_bytes())[kind]
    log = tmp_path / "session.jsonl.zstd"
    log.write_bytes(data)
    with pytest.raises(HarnessError, match=problem):
        await dshkit_replay(log, check_consumed=False)


def test_run_refuses_to_resume_a_compressed_log(dsh_sessions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Appending plain lines to a zstd file would break it: `dshkit run --session` says so."""
    log = _lay_out(dsh_sessions, "text-turn", tmp_path / "s", compress=True)
    before = log.read_bytes()
    code, _, err = _run(["run", "hi", "--session", str(log), "--workspace", str(tmp_path)], capsys)
    assert code == 2 and f"{log}: a zstd-compressed session log cannot be resumed" in err
    assert log.read_bytes() == before
