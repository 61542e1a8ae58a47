"""Where on a page each long text was first shown, so every later place links to it instead.

An agent's history comes back in every request: the same tool result, answer, reasoning and
user text would be printed once per later call, and a page would grow with steps². Each page
keeps one `Shown`: the place that shows a text first notes it (with its anchor and a label a
reader understands), and a later place that meets the same text renders a link to it. Short
texts are cheaper to repeat than to link, so only texts of `MIN_LINKED` characters or more are
kept.
"""

from __future__ import annotations

from .html import esc

__all__ = ["MIN_LINKED", "Shown"]

MIN_LINKED = 80
"""Texts shorter than this are printed again rather than linked (a link costs about as much)."""


class Shown:
    """The first place of each long text on one page."""

    __slots__ = ("_at",)

    def __init__(self) -> None:
        self._at: dict[str, tuple[str, str]] = {}

    def note(self, text: str, anchor: str, label: str) -> None:
        """`text` is shown at `#anchor` (described as `label`), unless it was shown before."""
        if len(text) >= MIN_LINKED and text not in self._at:
            self._at[text] = (anchor, label)

    def link(self, text: str) -> str | None:
        """Markup of a link to where `text` is shown, or None when it has not been shown."""
        place = self._at.get(text) if len(text) >= MIN_LINKED else None
        if place is None:
            return None
        anchor, label = place
        return (f"<a class=\"ref\" href=\"#{esc(anchor)}\" title=\"the same {len(text):,} characters\">"
                f"⤴ {esc(label)}</a>")

    def text_or_link(self, text: str, anchor: str, label: str) -> str:
        """Escaped `text` shown here (and noted), or a link to where it was shown already."""
        linked = self.link(text)
        if linked is not None:
            return linked
        self.note(text, anchor, label)
        return esc(text)
