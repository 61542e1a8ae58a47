"""Provider adapters, one subpackage per wire dialect or client library (`deepseek/` on the
OpenAI-style chat base `openai_chat/`, `openai_compat/` on the openai SDK, `anthropic/`,
`anthropic_sdk/`), and what they all share, once: the SSE decoder (`sse`), failures as data
(`failures`), the stream life cycle (`stream`) with its httpx and SDK sources (`http_stream`,
`sdk_stream`), and the slot-written chunks of the fast decoders (`slot_chunks`)."""
