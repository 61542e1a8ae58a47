"""The DeepSeek provider on Chat Completions: `DeepSeekAdapter` (address, key, headers, on httpx)
and DeepSeek's profile of the OpenAI-style wire, `DeepSeekConfig`. The wire itself (serialize,
SSE, translate) is the chat base, `dshkit.harness.providers.openai_chat`."""

from dshkit.harness.providers.openai_chat.profile import DeepSeekConfig

from .adapter import DeepSeekAdapter

__all__ = ["DeepSeekAdapter", "DeepSeekConfig"]
