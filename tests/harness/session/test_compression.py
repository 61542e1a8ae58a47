"""zstd-compressed session logs: told by their bytes, every frame read, damage and bombs refused.

The logs are real DSH-written ones (the shared corpus, compressed here in `tmp_path` the ways a
writer compresses: one frame, or one frame per appended batch); readers above this one are
checked in `tests/e2e/test_compressed_logs.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import zstandard

from dshkit.harness.llm.errors import SessionError
from dshkit.harness.session import compression, parse_session_log
from dshkit.harness.session.compression import decompress_log, is_compressed, read_log_bytes
from dshkit.harness.session.jsonl import dump_session, load_session


def frames(data: bytes, per_frame: int = 3) -> bytes:
    """`data` compressed as one zstd frame per `per_frame` lines, concatenated (an appending
    writer's file)."""
    lines = data.splitlines(keepends=True)
    return b"".join(zstandard.ZstdCompressor().compress(b"".join(lines[i : i + per_frame]))
                    for i in range(0, len(lines), per_frame))


def corpus_logs(dsh_sessions: Path) -> list[Path]:
    return sorted(dsh_sessions.glob("*--session*.jsonl"))


def test_every_corpus_log_reads_the_same_compressed(dsh_sessions: Path) -> None:
    for path in corpus_logs(dsh_sessions):
        plain = path.read_bytes()
        want = parse_session_log(plain, source=path.name, lenient=True)
        for packed in (zstandard.ZstdCompressor(level=19).compress(plain), frames(plain)):
            assert is_compressed(packed) and not is_compressed(plain)
            got = parse_session_log(packed, source=path.name, lenient=True)
            assert got.compressed and list(got.session.events) == list(want.session.events), path.name
            assert dump_session(got.session) == dump_session(want.session)


def test_a_skippable_frame_may_open_the_file() -> None:
    skippable = (0x184D2A53).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
    data = b'{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0}\n'
    assert is_compressed(skippable) and decompress_log(skippable + frames(data)) == data


def test_load_session_reads_a_compressed_log_and_never_writes_it(dsh_sessions: Path, tmp_path: Path) -> None:
    plain = (dsh_sessions / "text-turn--session.jsonl").read_bytes()
    cut = plain.rsplit(b"\n", 2)[0] + b"\n"  # the turn/end is gone: repair closes the turn in memory
    log = tmp_path / "session.jsonl.zstd"
    log.write_bytes(frames(cut))
    before = log.read_bytes()
    session = load_session(log)
    assert session.events[-1].type == "turn/end" and log.read_bytes() == before
    assert read_log_bytes(log) == cut


def damaged(plain: bytes) -> dict[str, tuple[bytes, str]]:
    whole = zstandard.ZstdCompressor(write_checksum=True).compress(plain)
    flipped = bytearray(whole)
    flipped[len(whole) // 2] ^= 0xFF
    return {
        "truncated": (whole[:-7], "is truncated: it ends inside a frame"),
        "cut-between-frames-and-inside-one": (frames(plain)[:-3], "is truncated"),
        "corrupt": (bytes(flipped), "not a readable zstd-compressed log"),
        "trailing-garbage": (whole + b"not a frame", "not a readable zstd-compressed log"),
    }


@pytest.mark.parametrize("kind", ["truncated", "cut-between-frames-and-inside-one", "corrupt", "trailing-garbage"])
def test_a_damaged_file_is_a_located_error(kind: str, dsh_sessions: Path) -> None:
    data, problem = damaged((dsh_sessions / "tool-call-turn--session.jsonl").read_bytes())[kind]
    with pytest.raises(SessionError, match=problem) as caught:
        parse_session_log(data, source="logs/session.jsonl.zstd")
    assert caught.value.code == "SESSION_CORRUPT"
    assert str(caught.value).startswith("logs/session.jsonl.zstd: ")


def test_a_zstd_bomb_stops_at_the_cap_without_filling_memory() -> None:
    bomb = zstandard.ZstdCompressor(level=19).compress(b"x" * (64 << 20))  # 64 MiB from a few KiB
    assert len(bomb) < 64 << 10
    with pytest.raises(SessionError, match=r"bomb.* expands to more than 4,194,304 bytes") as caught:
        decompress_log(bomb, source="bomb.zstd", limit=4 << 20)
    assert caught.value.code == "SESSION_TOO_LARGE"


def test_the_cap_is_read_when_a_log_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    data = b'{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0}\n' * 4
    monkeypatch.setattr(compression, "MAX_DECOMPRESSED_BYTES", len(data) - 1)
    with pytest.raises(SessionError, match="expands to more than"):
        parse_session_log(frames(data), source="small.zstd")
