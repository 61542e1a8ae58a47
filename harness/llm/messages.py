"""Content blocks, message sources and messages: the provider-neutral vocabulary of a conversation.

These are the values the seed's walk carries from the Session to the adapter and back: a user's
text becomes a `UserMessage`, the stream assembles into an `AssistantMessage` whose tool-call
blocks keep the model's raw argument string, and each tool result travels as a
`ToolResultMessage` (role `user`, exactly one `tool-result` block). All types are frozen and
slotted; JSON (DSH's camelCase) lives in `codec.py`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

__all__ = [
    "AssistantMessage",
    "ContentBlock",
    "ImageAttachment",
    "ImageBlock",
    "Message",
    "MessageSource",
    "ModelSource",
    "OpaqueBlock",
    "OpaqueSource",
    "PluginSource",
    "ReasoningBlock",
    "SystemMessage",
    "TextBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "ToolResultMessage",
    "ToolSource",
    "UserMessage",
    "UserSource",
    "new_message_id",
]


def new_message_id() -> str:
    """Mint a message identity; it is kept unchanged in the log, in delivery and on the wire."""
    return str(uuid.uuid4())


# --- content blocks ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TextBlock:
    """Visible text."""

    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningBlock:
    """Chain of thought, kept apart from visible text (DeepSeek's `reasoning_content`)."""

    text: str
    type: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallBlock:
    """A tool call made by the model."""

    id: str
    """The call id, echoed back by the tool result."""
    name: str
    arguments: str
    """The model's raw JSON text, byte for byte; parsed only when the call is about to run."""
    type: Literal["tool-call"] = "tool-call"


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageAttachment:
    """A durable reference to an image (`attachmentId` like `sha256:<hex>`)."""

    attachment_id: str
    media_type: str
    bytes: int
    width: int | None = None
    height: int | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageBlock:
    """An image in user content."""

    attachment: ImageAttachment
    type: Literal["image"] = "image"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultBlock:
    """The model-readable result of one tool call."""

    tool_call_id: str
    content: tuple[ContentBlock, ...]
    is_error: bool | None = None
    type: Literal["tool-result"] = "tool-result"


@dataclass(frozen=True, slots=True, kw_only=True)
class OpaqueBlock:
    """A block of a type this harness does not know, kept verbatim so logs round-trip.

    Adapters skip it when serializing; it never crashes anything.
    """

    type: str
    data: Mapping[str, Any]
    """The whole JSON object, `type` included."""


ContentBlock: TypeAlias = (
    TextBlock | ReasoningBlock | ToolCallBlock | ToolResultBlock | ImageBlock | OpaqueBlock
)

# --- message sources ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class UserSource:
    """Typed by a person."""

    kind: Literal["user"] = "user"


@dataclass(frozen=True, slots=True, kw_only=True)
class PluginSource:
    """Written by a plugin (e.g. the runtime-context snapshot)."""

    plugin: str
    form: Mapping[str, Any] | None = None
    """Presentation metadata as DSH writes it (`form`, `sections`, `summary`…); never read."""
    kind: Literal["plugin"] = "plugin"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSource:
    """Produced by a model through a provider adapter."""

    provider: str
    model: str
    replay_state: Any = None
    kind: Literal["model"] = "model"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSource:
    """Produced by running the tool call `call_id`."""

    call_id: str
    kind: Literal["tool"] = "tool"


@dataclass(frozen=True, slots=True, kw_only=True)
class OpaqueSource:
    """A source kind this harness does not know, kept verbatim."""

    kind: str
    data: Mapping[str, Any]


MessageSource: TypeAlias = UserSource | PluginSource | ModelSource | ToolSource | OpaqueSource

# --- messages ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessage:
    """A user-role message: a prompt, injected context or a runtime-context snapshot."""

    content: tuple[ContentBlock, ...]
    source: MessageSource = field(default_factory=UserSource)
    id: str = field(default_factory=new_message_id)
    role: Literal["user"] = "user"

    @classmethod
    def text(cls, text: str, **kwargs: Any) -> UserMessage:
        return cls(content=(TextBlock(text=text),), **kwargs)


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemMessage:
    """A system-role message inside history (rare; the rendered prompt travels separately)."""

    content: tuple[ContentBlock, ...]
    source: MessageSource = field(default_factory=UserSource)
    id: str = field(default_factory=new_message_id)
    role: Literal["system"] = "system"


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantMessage:
    """What the model said in one call, assembled from its stream."""

    content: tuple[ContentBlock, ...]
    source: ModelSource | OpaqueSource
    id: str = field(default_factory=new_message_id)
    role: Literal["assistant"] = "assistant"

    @property
    def tool_calls(self) -> tuple[ToolCallBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolCallBlock))


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultMessage:
    """A tool's result as the model reads it: role `user`, exactly one `tool-result` block."""

    content: tuple[ToolResultBlock]
    source: ToolSource
    id: str = field(default_factory=new_message_id)
    role: Literal["user"] = "user"

    def __post_init__(self) -> None:
        if len(self.content) != 1 or not isinstance(self.content[0], ToolResultBlock):
            raise ValueError("a tool-result message holds exactly one tool-result block")
        if self.content[0].tool_call_id != self.source.call_id:
            raise ValueError(
                f"tool-result block answers {self.content[0].tool_call_id!r} "
                f"but the message source names {self.source.call_id!r}"
            )

    @classmethod
    def create(
        cls,
        call_id: str,
        content: tuple[ContentBlock, ...] | list[ContentBlock] | str,
        *,
        is_error: bool = False,
        id: str | None = None,
    ) -> ToolResultMessage:
        """Build the result message for `call_id` (`is_error` is always written, as DSH does)."""
        blocks = (TextBlock(text=content),) if isinstance(content, str) else tuple(content)
        block = ToolResultBlock(tool_call_id=call_id, content=blocks, is_error=is_error)
        return cls(
            content=(block,), source=ToolSource(call_id=call_id), id=id or new_message_id()
        )

    @property
    def block(self) -> ToolResultBlock:
        return self.content[0]


Message: TypeAlias = UserMessage | SystemMessage | AssistantMessage | ToolResultMessage
