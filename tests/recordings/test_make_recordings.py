"""`recordings/make_recordings.py`, the script that regenerates the committed cassettes: every
recording it names is committed (and nothing else is), and a recording made again decodes to the
very chunks of the committed cassette (the recorded delays and gaps differ from run to run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dshkit.decode import decode_cassette
from dshkit.recordings import make_recordings

COMMITTED = Path(__file__).resolve().parents[2] / "recordings"
SUFFIX = ".cassette.jsonl"


def _decoded(path: Path) -> list[tuple[Any, ...]]:
    """Each exchange as the adapter reads it: request, status, chunks. Left out: the message id,
    drawn afresh at every decode, and the response id and fingerprint, which the mock server
    draws from its seed in another way than when the cassettes were committed."""
    exchanges = decode_cassette(path.read_bytes())["exchanges"]
    out = []
    for x in exchanges:
        chunks = x["decoded"]["chunks"]
        for c in chunks:
            if c["type"] == "finish" and "meta" in c:
                c["meta"] = {k: v for k, v in c["meta"].items() if k not in ("id", "systemFingerprint")}
        out.append((x["request"], x["status"], chunks))
    return out


def test_every_recording_is_committed_and_every_committed_cassette_is_made_here() -> None:
    committed = {p.name.removesuffix(SUFFIX) for p in COMMITTED.glob(f"*{SUFFIX}")}
    assert committed and committed == set(make_recordings.RECORDINGS)


@pytest.mark.parametrize("name", ["bad-request-400", "tool-call-split-args"])
async def test_a_recording_made_again_decodes_as_the_committed_one(name: str, tmp_path: Path) -> None:
    path = await make_recordings.record_one(name, tmp_path)
    assert path == tmp_path / f"{name}{SUFFIX}"
    fresh = _decoded(path)
    assert fresh and fresh == _decoded(COMMITTED / path.name)
