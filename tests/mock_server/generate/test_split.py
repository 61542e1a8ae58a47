"""Split plans (`generate/split.py`): how strings are cut into fragments, and the fast path's
cuts (`cut_joined`), which must be the plain cuts (`cut_reply`) joined."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshkit.mock_server.generate.reply import Reply, ToolCall
from dshkit.mock_server.generate.split import SEP, SplitPlan, cut_joined, cut_reply, split_text


def test_split_modes() -> None:
    assert split_text("abcdef", SplitPlan(mode="fixed", size=4)) == ["abcd", "ef"]
    assert split_text("abcdef", SplitPlan(mode="points", points=(1, 3, 99))) == ["a", "bc", "def"]
    assert split_text("abcdef", SplitPlan(mode="whole")) == ["abcdef"]
    assert split_text('{"location": "San Francisco"}', SplitPlan()) == [
        '{"', "location", '":', ' "', "San", " Francisco", '"}']
    assert split_text("", SplitPlan()) == []
    with pytest.raises(ValueError, match="min_size"):
        SplitPlan(min_size=3, max_size=2)


def test_token_split_joins_a_character_to_punctuation_only_when_it_is_ascii_punctuation() -> None:
    """Token pieces by character class, over every code point up to U+3000 and a sample above:
    an ASCII character that is neither whitespace nor a word character extends a punctuation
    run; any other character starts a piece of its own (a non-ASCII one is always alone)."""
    for code in [*range(0x3000), *range(0x3000, 0x110000, 97), 0x10FFFF]:
        ch = chr(code)
        punctuation = ch.isascii() and not ch.isspace() and not (ch.isalnum() or ch == "_")
        assert split_text("!" + ch, SplitPlan()) == (["!" + ch] if punctuation else ["!", ch]), hex(code)
        if not ch.isascii():
            assert split_text(ch + ch, SplitPlan()) == [ch, ch], hex(code)


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


_split = st.one_of(
    st.just(SplitPlan()),
    st.just(SplitPlan(mode="whole")),
    st.integers(1, 6).map(lambda n: SplitPlan(mode="fixed", size=n)),
    st.integers(1, 5).map(lambda n: SplitPlan(mode="random", min_size=1, max_size=n)),
)


# Word runs with single and double spaces, punctuation, other whitespace (ASCII, Unicode, the
# separators str.isspace counts), control characters, non-ASCII letters and the joiner itself.
_tricky = st.text(st.sampled_from(list("ab_09 ,.\"\\:{}\t\n\r\x0b\x1c\x00\u00a0\u2028\u3000中é🎉\x7f")), max_size=60)


#: Texts the bulk cut takes (printable, no two spaces in a row) far more often than `_tricky`'s.
_printable = st.text(st.sampled_from(list("ab_09 ,.\"\\:{}~`中é🎉")), max_size=60)


#: ASCII prose: runs of words with single spaces, and now and then punctuation.
_prose = st.lists(st.sampled_from(["w1", "ab", "_", " ", " ", " ", ",", '"', ":", "x.y", "{", "~"]), max_size=120).map("".join)


@given(text=st.one_of(_tricky, _printable, _prose))
def test_token_cuts_found_in_bulk_are_the_token_splits(text: str) -> None:
    """`cut_joined` finds a text's token cuts by runs of words; split at the joiner they are
    the fragments `split_text` gives (or, for a text holding the joiner, it declines)."""
    pieces = cut_joined(Reply(content=text), thinking=True)
    if SEP in text:
        assert pieces is None
        return
    assert pieces is not None
    joined, count = pieces.content
    assert (joined.split(SEP) if count else []) == split_text(text, SplitPlan()) and count == len(split_text(text, SplitPlan()))


@given(content=_tricky, reasoning=_text, split=_split, seed=st.integers(0, 2**32 - 1), thinking=st.booleans(),
       max_tokens=st.one_of(st.none(), st.integers(1, 30)), args=st.lists(_tricky, max_size=2),
       ids=st.lists(st.sampled_from([None, "call_x"]), min_size=2, max_size=2))
def test_joined_pieces_are_the_reply_pieces_joined(
    content: str, reasoning: str, split: SplitPlan, seed: int, thinking: bool, max_tokens: int | None,
    args: list[str], ids: list[str | None],
) -> None:
    reply = Reply(content=content, reasoning=reasoning,
                  tool_calls=tuple(ToolCall(name=f"t{i}", arguments=a, id=ids[i]) for i, a in enumerate(args)))
    kw: dict = {"thinking": thinking, "split": split, "seed": seed, "max_tokens": max_tokens}
    joined, pieces = cut_joined(reply, **kw), cut_reply(reply, **kw)
    if joined is None:
        assert SEP in reasoning + content + "".join(args)
        return

    def run(frags: list[str]) -> tuple[str, int]:
        return SEP.join(frags), len(frags)

    assert joined.reasoning == run(pieces.reasoning) and joined.content == run(pieces.content)
    assert joined.calls == [(i, name, run(a)) for i, name, a in pieces.calls]
    assert (joined.finish_reason, joined.completion_tokens) == (pieces.finish_reason, pieces.completion_tokens)
