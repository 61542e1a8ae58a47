"""`Shown`: a long text is printed where it is first shown and linked everywhere after."""

from __future__ import annotations

from dshkit.view.shown import MIN_LINKED, Shown


def test_shown_links_long_texts_only_after_they_were_shown() -> None:
    shown = Shown()
    long_text, short = "x" * MIN_LINKED, "y" * (MIN_LINKED - 1)
    assert shown.link(long_text) is None
    assert shown.text_or_link(long_text, "e7", "result of <read>") == long_text
    linked = shown.link(long_text)
    assert linked is not None and 'href="#e7"' in linked and "result of &lt;read&gt;" in linked
    shown.note(long_text, "e9", "later")  # the first place stays the one linked to
    assert 'href="#e7"' in (shown.link(long_text) or "")
    assert shown.text_or_link(short, "e8", "s") == short and shown.link(short) is None
