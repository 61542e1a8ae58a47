"""The stream generator: a logical reply becomes DeepSeek wire chunks, SSE bytes and network writes.

The server side of the seed's walk run backwards, one module per step: the reply model
(:mod:`.reply`: `Reply`, `ToolCall`, the stream envelope, usage), split plans (:mod:`.split`:
how strings are cut into fragments, `max_tokens` truncation), chunk generation (:mod:`.chunks`:
the chunk dicts, tool-call emission, logprobs, dialect quirks), encoding (:mod:`.encode`: SSE
framing and the template fast path), write plans (:mod:`.writes`: where bytes are cut into
network writes) and the non-streaming completion (:mod:`.completion`). Every function is pure:
the same arguments and seed give the same output, so the conformance suite and the recorder
reuse it without a server. The package exports the names `mock_server` exports from it; the
rest (`Era`, `Framing`, `ReplyPieces`, `cut_reply`, `tool_call_id`, `ENCODE_QUIRKS`, …) is
imported from its own module.
"""

from dshkit.mock_server.generate.chunks import generate_chunks
from dshkit.mock_server.generate.encode import encode_sse
from dshkit.mock_server.generate.reply import Reply, ToolCall

__all__ = [
    "Reply",
    "ToolCall",
    "encode_sse",
    "generate_chunks",
]
