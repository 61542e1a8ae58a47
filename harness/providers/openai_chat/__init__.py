"""The OpenAI-style Chat Completions base that the DeepSeek and openai-SDK adapters extend:
`GenerateOptions` → request body (`serialize.serialize`, with a server family's
`profile.ChatProfile`) and wire chunks → `StreamChunk`s (`translate.Translator`;
`decoder.StreamDecoder` from body bytes, `fast_decoder.FastStreamDecoder` the same with its
fast paths).

A base to build on, not a surface: the package exports nothing, and an adapter that reuses it
imports each part from its module (`serialize`, `profile`, `translate`, `decoder`, `fast_decoder`)."""

__all__: list[str] = []
