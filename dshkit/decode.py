"""`dshkit decode`: what the adapter makes of a wire capture, a cassette or a session log.

The decoding itself is the library `dshkit.harness.decode` (real SSE decoder, translator and
assembler); this application-layer module adds the command and the cassette reader, which
needs the mock server's cassette format (`harness` does not import `mock_server`).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from dshkit.bundled import resolve
from dshkit.harness.decode import (
    DOCUMENT_FORMATS,
    CaptureError,
    decode_capture,
    decode_session_log,
    document_format,
    render_document,
    render_pretty,
)
from dshkit.harness.llm import HarnessError, jsonio
from dshkit.harness.session.compression import decompress_log, is_compressed

__all__ = ["decode_cassette", "register"]


def decode_cassette(data: bytes, *, source: str = "<cassette>") -> dict[str, Any]:
    """Each exchange of a cassette decoded as the adapter would have read it."""
    from dshkit.mock_server.cassette import CassetteError, parse_cassette

    try:
        cassette = parse_cassette(data.decode("utf-8"), source=source)
    except (CassetteError, UnicodeDecodeError) as exc:
        raise CaptureError(f"not a readable cassette: {exc}") from None
    exchanges: list[dict[str, Any]] = []
    for x in cassette.exchanges:
        body = b"".join(r.data for r in x.reads)
        entry: dict[str, Any] = {"request": {"method": x.request.method, "path": x.request.path}, "status": x.status}
        if not body.strip():
            entry["decoded"] = None  # a recorded response with no body bytes
        elif 200 <= x.status < 300:
            entry["decoded"] = decode_capture(body).to_json()
        else:
            entry["decoded"] = decode_capture(body, format="error", status=x.status).to_json()
        exchanges.append(entry)
    return {"format": "cassette", "upstream": cassette.meta.get("upstream"), "exchanges": exchanges}



def _run(args: argparse.Namespace) -> int:
    path: str = args.file
    try:
        data = sys.stdin.buffer.read() if path == "-" else resolve(path).read_bytes()
    except OSError as exc:
        print(f"dshkit decode: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if is_compressed(data):  # DSH's session.jsonl.zstd, or any zstd-compressed capture
        try:
            data = decompress_log(data, source=path)
        except HarnessError as exc:
            print(f"dshkit decode: {exc}", file=sys.stderr)
            return 2
    try:
        fmt = args.format or (None if args.status is not None else document_format(data))
        if fmt in DOCUMENT_FORMATS:
            decode = decode_cassette if fmt == "cassette" else decode_session_log
            doc = decode(data, source=path)
            _print(render_document(doc) if args.pretty else jsonio.dumps(doc, compact=False, indent=2))
            return 0
        result = decode_capture(data, format=args.format, status=args.status, protocol=args.protocol)
    except CaptureError as exc:
        print(f"dshkit decode: {path}: {exc}", file=sys.stderr)
        return 2
    if args.pretty:
        _print(render_pretty(result))
    else:
        _print(jsonio.dumps(result.to_json(), compact=False, indent=2))
    return 0


_SURROGATE = re.compile("[\ud800-\udfff]")


def _print(text: str) -> None:
    """Print what was decoded; a lone surrogate in it (a capture's `"\\ud800"`, which the JSON
    output keeps as that escape) has no UTF-8 form, so the readable view shows U+FFFD."""
    print(_SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text)


_DECODE_EPILOG = """\
examples:
  dshkit decode examples/seed-walk.sse               SSE bytes: chunks, assembled message, usage, finish
  dshkit decode capture.sse --pretty                 the assembled blocks, finish and usage as text
  dshkit decode error.json --format error --status 429
                                                     an HTTP error body as the adapter maps it
  curl -sN ... | tee capture.sse && dshkit decode capture.sse
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "decode",
        help="decode a wire capture into chunks, message, usage and finish",
        description=(
            "Run a wire capture through the real SSE decoder, translator and assembler. "
            "A zstd-compressed file (DSH's session.jsonl.zstd) is decompressed first, told by its "
            "bytes. Format detection when --format is absent: a first line {\"type\": \"cassette\"} is a "
            "cassette and {\"type\": \"session\"} a session log (decoded exchange by exchange or "
            "model call by model call); a leading '[' is json; a JSON object "
            "with 'error' and no 'choices' is an HTTP error body; every non-empty line a JSON "
            "object is jsonl; anything else is sse. Anthropic Messages captures (events such as "
            "message_start, or a Message body) are recognised by their payloads unless "
            "--protocol says. Exit 0 whenever the capture was read "
            "(even if it decodes to an error finish), 2 when it is missing, empty or "
            "undetectable."
        ),
        epilog=_DECODE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", help="the capture file, or - for stdin")
    p.add_argument("--format", choices=["sse", "jsonl", "json", "error", *DOCUMENT_FORMATS], help="skip detection")
    p.add_argument("--status", type=int, help="treat the file as an HTTP error body with this status (default 400)")
    p.add_argument("--protocol", choices=["chat", "anthropic"],
                   help="the wire: Chat Completions chunks or Anthropic Messages events (default: detected)")
    p.add_argument("--pretty", action="store_true", help="print text for a reader instead of JSON: each assembled block (reasoning, "
                   "answer, tool call with its arguments) under a heading, then the finish, the usage and "
                   "the model and response id (a cassette or session log: the same per exchange)")
    p.set_defaults(func=_run)
