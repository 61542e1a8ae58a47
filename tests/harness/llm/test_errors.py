"""Error tree and the context-window / quota wording classifiers (dsh-core.md §2.5)."""

from __future__ import annotations

import pickle
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshkit.harness.llm import ErrorCode, HarnessError, LlmFailure
from dshkit.harness.llm.errors import (
    _CONTEXT_PATTERNS,
    _CONTEXT_RE,
    _QUOTA_PATTERNS,
    _QUOTA_RE,
    LlmError,
    SessionError,
    ToolArgsError,
    ToolError,
    ToolNotFoundError,
    UsageError,
    is_context_window_exceeded,
    is_quota_exceeded,
)

CONTEXT = [
    ("This model's maximum context length is 131072 tokens. However, you requested 140000 tokens "
    "(139000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion."),
    "context_length_exceeded",
    "Context window exceeded",
    "context-limit-exceeded",  # not a pattern: "limit" needs "context length/window limit exceeded"
    "context length overflowed",
    "max supported context window",
    "prompt is too long for the model's context window",
    "Request too large for this model",
    "input is too long for the model",
    "messages exceed the model's context window",
    "Input of 200k tokens is larger than the context length",
]
CONTEXT_EXPECTED = [True, True, True, False, True, True, True, True, True, True, True]
NOT_CONTEXT = ["Model Not Exist", "Invalid max_tokens value, the valid range of max_tokens is [1, 8192]", "rate limited", ""]


@pytest.mark.parametrize(("text", "expected"), list(zip(CONTEXT, CONTEXT_EXPECTED, strict=True)))
def test_context_window_wording(text: str, expected: bool) -> None:
    assert is_context_window_exceeded(text) is expected
    assert is_context_window_exceeded(text.upper()) is expected


@pytest.mark.parametrize("text", NOT_CONTEXT)
def test_not_context_window(text: str) -> None:
    assert not is_context_window_exceeded(text)


@pytest.mark.parametrize(
    "text",
    [
        "Insufficient Balance",
        "invalid_request_error unknown_error Insufficient Balance",
        "insufficient_quota",
        "insufficient credits",
        "You exceeded your current quota, please check your plan",
        "quota exceeded",
        "usage limit reached",
        "Quota_Exhausted",
        "credit balance depleted",
        "balance exhausted",
        "you are out of credits",
        "out of budget",
    ],
)
def test_quota_wording(text: str) -> None:
    assert is_quota_exceeded(text)


@pytest.mark.parametrize("text", ["Rate limit reached", "Authentication Fails", "Server overloaded", "balance: 10", ""])
def test_not_quota(text: str) -> None:
    assert not is_quota_exceeded(text)


def test_tree_and_codes() -> None:
    for cls in (LlmError, ToolError, SessionError, UsageError):
        assert issubclass(cls, HarnessError)
    assert issubclass(ToolArgsError, ToolError) and issubclass(ToolNotFoundError, ToolError)
    assert ToolArgsError("bad").code == "INVALID_ARGS"
    assert ToolNotFoundError("nope").code == "UNKNOWN_TOOL"
    assert UsageError("misuse").code == "USAGE"
    assert ErrorCode.RATE_LIMIT == "RATE_LIMIT"
    err = HarnessError("what went wrong", "X")
    assert str(err) == "what went wrong" and err.code == "X"


def test_llm_error_carries_failure_and_pickles() -> None:
    failure = LlmFailure(message="boom", code="SERVER", status=503)
    err = LlmError(failure)
    assert (err.message, err.code, err.failure) == ("boom", "SERVER", failure)
    back = pickle.loads(pickle.dumps(err))
    assert isinstance(back, LlmError) and back.failure == failure
    for e in (HarnessError("m", "C"), ToolArgsError("m"), UsageError("m", "C2")):
        b = pickle.loads(pickle.dumps(e))
        assert type(b) is type(e) and (b.message, b.code) == (e.message, e.code)


_WORDS = sorted({w for p in _CONTEXT_PATTERNS + _QUOTA_PATTERNS for w in re.findall(r"[a-z']+", p)} | {"x", "200k"})
"""Every run of letters in the wording patterns (whole words and the pieces alternations join,
such as `exceed` + `ed`), and filler: texts made of them come near every pattern."""


_NEAR = st.tuples(st.sampled_from(_WORDS), st.sampled_from(["", " ", "_", "-", "'s ", ", "]))


@settings(deadline=None)
@given(st.one_of(*(st.from_regex(re.compile(p, re.IGNORECASE)) for p in _CONTEXT_PATTERNS + _QUOTA_PATTERNS),
                 st.lists(_NEAR, max_size=14).map(lambda parts: "".join(w + sep for w, sep in parts))),
       st.sampled_from([str, str.upper, str.title]))
def test_the_wording_shortcut_answers_as_the_patterns_do(text: str, case: object) -> None:
    """The classifiers first rule out an ASCII text holding no word the patterns need; on a
    text any pattern matches (in any case, amid anything) and on texts made of the patterns'
    own words they answer as the patterns alone would."""
    text = case(text)  # type: ignore[operator]
    assert is_context_window_exceeded(text) is (_CONTEXT_RE.search(text) is not None)
    assert is_quota_exceeded(text) is (_QUOTA_RE.search(text) is not None)


def test_a_long_text_of_brackets_is_neither_wording() -> None:
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000  # an error event's data, as a decoder may pass it on
    assert not is_context_window_exceeded(deep) and not is_quota_exceeded(deep)
    assert is_context_window_exceeded(deep + " context window exceeded") and is_quota_exceeded("Quota exceeded " + deep)
