"""`dshkit decode` (`dshkit.decode`), run in this process: a cassette decoded exchange by exchange
as the adapter would have read it (an exchange recorded with no body kept as such, an error
status read as an error body), a zstd-compressed file read as its bytes, and the `--pretty` help
saying what it prints. Detection and the capture formats are `tests/harness/test_decode.py`'s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zstandard

from dshkit.cli import main
from dshkit.decode import decode_cassette

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "examples" / "seed-walk.sse"


def _cassette(*exchanges: tuple[int, list[str]]) -> bytes:
    lines = [{"type": "cassette", "version": 1, "upstream": "hand-made"}]
    for status, reads in exchanges:
        lines.append({"type": "exchange", "request": {"method": "POST", "path": "/chat/completions", "headers": {}, "body": {}},
                      "status": status, "headers": {}, "reads": [{"text": r, "dt_ms": 0} for r in reads]})
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def test_a_cassette_decodes_exchange_by_exchange() -> None:
    ok = 'data: {"id":"r","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
    doc = decode_cassette(_cassette(
        (429, ['{"error":{"message":"slow down","type":"rate_limit_error"}}']),
        (200, [ok[:20], ok[20:], "data: [DONE]\n\n"]),  # reads are joined before decoding
        (200, []),
    ))
    assert doc["format"] == "cassette" and doc["upstream"] == "hand-made"
    refused, answered, silent = doc["exchanges"]
    assert refused["status"] == 429 and refused["decoded"]["finish"]["failure"]["code"] == "RATE_LIMIT"
    assert answered["decoded"]["message"]["content"] == [{"type": "text", "text": "hi"}]
    assert answered["decoded"]["finish"] == {"kind": "stop"}
    assert silent == {"request": {"method": "POST", "path": "/chat/completions"}, "status": 200, "decoded": None}


def test_a_compressed_capture_decodes_as_its_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    packed = tmp_path / "seed-walk.sse.zst"
    packed.write_bytes(zstandard.ZstdCompressor().compress(SEED.read_bytes()))
    outputs = []
    for path in (SEED, packed):
        assert main(["decode", str(path)]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and json.loads(outputs[0])["finish"]["kind"] == "tool-calls"
    broken = tmp_path / "broken.zst"
    broken.write_bytes(packed.read_bytes()[:40])
    assert main(["decode", str(broken)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("dshkit decode: ")


def test_decode_pretty_is_described_as_what_it_prints(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["decode", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "indented JSON" not in text
    assert "--pretty print text for a reader instead of JSON" in text
