"""`{{fromRequest:REGEX}}`: the last match of the live request's strings, read only when needed."""

import pytest

from dshkit.harness.llm.chunks import TextDelta
from dshkit.harness.replay.entries import ReplayEntry, ReplayError
from dshkit.harness.replay.placeholders import fill_from_request, request_strings

from .test_entries import FINISH, text


def test_the_last_match_and_its_first_group_win() -> None:
    corpus = "goal id G-1234 then goal id G-5678"
    assert fill_from_request({"t": "id={{fromRequest:G-(\\d{4})}}"}, corpus) == {"t": "id=5678"}
    assert fill_from_request("{{fromRequest:G-\\d+}}!", corpus) == "G-5678!"


@pytest.mark.parametrize(("bad", "message"), [
    ("{{fromRequest:nothing}}", "matched nothing"), ("{{fromRequest:(}}", "invalid regex"), ("{{fromRequest:G", "unterminated"),
])
def test_a_placeholder_that_cannot_be_filled_says_why(bad: str, message: str) -> None:
    with pytest.raises(ReplayError, match=message):
        fill_from_request(bad, "goal id G-1234")


def test_request_strings_are_every_string_leaf_in_order() -> None:
    assert request_strings([{"role": "user", "content": [{"type": "text", "text": "a"}], "n": 1}, "b"]) == "user\ntext\na\nb"


def test_the_request_is_read_only_for_a_placeholder() -> None:
    asked: list[int] = []

    def request() -> str:
        asked.append(1)
        return "call id: call_42"

    plain = ReplayEntry(chunks=(text("hi"), FINISH))
    assert plain.stream_chunks(request)[0] == TextDelta(index=0, text="hi")
    assert asked == []
    filled = ReplayEntry(chunks=(text(r"id={{fromRequest:call_(\d+)}}"), FINISH))
    assert filled.stream_chunks(request)[0] == TextDelta(index=0, text="id=42")
    assert asked == [1]
