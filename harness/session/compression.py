"""Compressed session logs: DSH writes `session.jsonl.zstd` by default; every reader takes it.

A log is zstd when its bytes start with a zstd frame (the magic number `28 B5 2F FD`, or a
skippable frame `5? 2A 4D 18`), whatever the file is called; anything else is read as plain
JSONL. Decoding streams the frames one after another in small pieces and stops at a size cap,
so a zstd bomb (a few kilobytes that expand to gigabytes) ends in an error instead of filling
memory. A damaged frame, a file cut inside a frame and trailing bytes that are no frame each
end in a `SessionError` naming the file and what is wrong. dshkit itself writes plain JSONL,
and a compressed log is never appended to (`SessionStore.open` refuses it). The codec is the
`zstandard` package, imported only when a compressed log is met.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from dshkit.harness.llm.errors import SessionError

__all__ = ["COMPRESSED_SUFFIXES", "MAX_DECOMPRESSED_BYTES", "decompress_log", "is_compressed", "read_log_bytes"]

ZSTD_MAGIC: Final = b"\x28\xb5\x2f\xfd"
MAX_DECOMPRESSED_BYTES = 256 << 20
"""256 MiB: far above any real session log (a long DSH session with large tool outputs is tens of
megabytes), far below what would hurt the machine; pass `limit=` to read a larger one."""
COMPRESSED_SUFFIXES: Final = (".zstd", ".zst")
"""The names DSH (`.zstd`) and the zstd tool (`.zst`) give compressed files; used only to find a
log's siblings (subagent logs, the override sidecar), never to decide how to read a file."""
_PIECE: Final = 1024
"""Compressed bytes fed per step. zstd expands at most ~32,768 times (a 128 KiB run-length block
from 4 bytes), so one step yields at most ~32 MiB before the cap is checked again."""


def is_compressed(data: bytes) -> bool:
    """Whether `data` (a file's first bytes are enough) starts with a zstd frame."""
    if data[:4] == ZSTD_MAGIC:
        return True
    # A skippable frame (magic 0x184D2A50-0x184D2A5F, little-endian) may open a zstd file too.
    return len(data) >= 4 and data[1:4] == b"\x2a\x4d\x18" and data[0] & 0xF0 == 0x50


def _too_large(source: str, limit: int) -> SessionError:
    return SessionError(
        f"{source}: the zstd-compressed log expands to more than {limit:,} bytes "
        f"({limit / (1 << 20):g} MiB) and was not read further: a zstd bomb, or a log far larger "
        "than any session writes; decompress it by hand (`zstd -d`) if you trust it",
        "SESSION_TOO_LARGE",
    )


def decompress_log(data: bytes, *, source: str = "<session log>", limit: int | None = None) -> bytes:
    """The JSONL inside a zstd-compressed log (all of its frames, in order).

    Raises `SessionError`: `SESSION_CORRUPT` for a damaged frame, a file cut inside a frame or
    trailing bytes that are no frame; `SESSION_TOO_LARGE` when the output would pass `limit`
    (default `MAX_DECOMPRESSED_BYTES`).
    """
    import zstandard

    limit = MAX_DECOMPRESSED_BYTES if limit is None else limit
    decompressor = zstandard.ZstdDecompressor()
    frame = decompressor.decompressobj()
    out = bytearray()
    pos = 0
    while pos < len(data):
        piece = data[pos : pos + _PIECE]
        at = pos
        pos += len(piece)
        while piece:
            if frame.eof:  # the previous frame ended: the rest starts the next one
                frame = decompressor.decompressobj()
            try:
                out += frame.decompress(piece)
            except zstandard.ZstdError as exc:
                raise SessionError(
                    f"{source}: not a readable zstd-compressed log: {exc} (near compressed byte "
                    f"{at:,} of {len(data):,}); the file is damaged: restore it from a backup "
                    "(`zstd -t` tests a file)",
                    "SESSION_CORRUPT",
                ) from None
            if len(out) > limit:
                raise _too_large(source, limit)
            piece = frame.unused_data if frame.eof else b""
    if not frame.eof:
        raise SessionError(
            f"{source}: the zstd-compressed log is truncated: it ends inside a frame after "
            f"{len(data):,} compressed bytes ({len(out):,} bytes decompressed so far); the file "
            "was cut short (an unfinished copy, or a writer that died): restore it, or save what "
            "is readable with `zstd -dc FILE > FILE.jsonl` and read that",
            "SESSION_CORRUPT",
        )
    return bytes(out)


def read_log_bytes(path: str | os.PathLike[str], *, limit: int | None = None) -> bytes:
    """A session log's JSONL bytes, decompressed when the file is zstd. `OSError` passes."""
    data = Path(path).read_bytes()
    return decompress_log(data, source=str(path), limit=limit) if is_compressed(data) else data
