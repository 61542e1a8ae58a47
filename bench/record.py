"""Recorder disk cost: bytes written to the cassette for a 300-exchange agent-like session.

An agent sends its whole history with every request, so exchange k carries k earlier messages
and the cassette grows quadratically on its own. The recorder used to rewrite (and fsync) the
whole cassette after every exchange, which made the bytes written cubic (3.2 GB for 300
exchanges); now it appends one line per exchange. The session runs through a real `Recorder`
in front of a real `MockServer` over loopback.

Prints the figures, and as the very last line one JSON object
`{"written_vs_file": ..., "rewrite_vs_file": ...}`: bytes written to the cassette over its final
size (1.0 is the floor: every byte once), and what rewriting after every exchange would have
written, over the same size. Run: `python bench/record.py` (about 10 s).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from dshkit.mock_server import MockServer, Recorder

EXCHANGES = 300
MESSAGE = "Read the next file and summarise what it does for the project. " * 8  # ~0.5 KB


async def main() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.cassette.jsonl"
        sizes: list[int] = []
        async with MockServer(seed=1) as upstream, Recorder(upstream.base_url, path) as rec, \
                httpx.AsyncClient(timeout=30) as client:
            header = path.stat().st_size
            history: list[dict[str, str]] = []
            for k in range(EXCHANGES):
                history.append({"role": "user", "content": f"{k}: {MESSAGE}"})
                body = {"model": "deepseek-v4-flash", "stream": True, "messages": history}
                r = await client.post(rec.base_url + "/chat/completions", json=body)
                r.raise_for_status()
                history.append({"role": "assistant", "content": "done"})
                sizes.append(path.stat().st_size)
            written = header + rec.appender.bytes_written
        final = sizes[-1]
        rewrite = sum(sizes)  # the old recorder wrote the whole file after every exchange
        return {"exchanges": EXCHANGES, "file_bytes": final, "written_bytes": written,
                "rewrite_bytes": rewrite, "written_vs_file": round(written / final, 3),
                "rewrite_vs_file": round(rewrite / final, 1)}


if __name__ == "__main__":
    out = asyncio.run(main())
    print(f"{out['exchanges']} exchanges: cassette {out['file_bytes'] / 1e6:.1f} MB, "
          f"written {out['written_bytes'] / 1e6:.1f} MB "
          f"(rewriting after each exchange: {out['rewrite_bytes'] / 1e9:.2f} GB)")
    print(json.dumps({"written_vs_file": out["written_vs_file"], "rewrite_vs_file": out["rewrite_vs_file"]}))
