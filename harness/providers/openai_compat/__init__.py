"""An adapter on the official `openai` SDK, for any OpenAI-compatible server."""

from .adapter import OpenAICompatAdapter

__all__ = ["OpenAICompatAdapter"]
