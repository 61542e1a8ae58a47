"""The stream generator: a logical reply becomes DeepSeek wire chunks, SSE bytes and network writes.

The server side of the seed's walk run backwards, one module per step: the reply model
(:mod:`.reply`: `Reply`, `ToolCall`, the stream envelope, usage), split plans (:mod:`.split`:
how strings are cut into fragments, `max_tokens` truncation), chunk generation (:mod:`.chunks`:
the chunk dicts, tool-call emission, logprobs, dialect quirks), encoding (:mod:`.encode`: SSE
framing and the template fast path), write plans (:mod:`.writes`: where bytes are cut into
network writes) and the non-streaming completion (:mod:`.completion`). Every function is pure:
the same arguments and seed give the same output, so the conformance suite and the recorder
reuse it without a server. The package exports nothing: each name is imported from its
module (`reply.Reply`, `chunks.generate_chunks`, `encode.encode_sse`, `writes.plan_writes`, …).
"""

__all__: list[str] = []
