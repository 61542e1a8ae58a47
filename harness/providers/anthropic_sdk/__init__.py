"""A second Anthropic-protocol adapter, on the official `anthropic` SDK."""

from .adapter import AnthropicSDKAdapter

__all__ = ["AnthropicSDKAdapter"]
