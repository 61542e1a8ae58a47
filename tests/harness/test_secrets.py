"""The secrets policy: one name rule, whole-value matching with a minimum length, one placeholder.

The journal, the recorder and tool-output scrubbing all decide through these functions, so the
cases here are the ones each of them used to get wrong on its own (issue 17, 18, 19).
"""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshkit.harness.llm.errors import JsonShapeError
from dshkit.harness.secrets import (
    MIN_SECRET_LENGTH,
    KnownSecrets,
    credential_pairs,
    credential_values,
    is_credential_name,
    placeholder,
    scrub_credential_text,
    scrub_headers,
    scrub_json,
    scrub_query,
    scrub_url,
)

CREDENTIALS = [
    "Authorization", "Proxy-Authorization", "Authentication", "x-api-key", "api-key", "api_key", "apiKey",
    "API_KEY", "apikey", "Ocp-Apim-Subscription-Key", "X-Goog-Api-Key", "X-Custom-Key", "token", "tokens",
    "client_secret", "clientSecret", "x_access_token", "XACCESSTOKEN", "refresh_token", "password", "passwd",
    "passphrase", "bearer", "cookie", "Set-Cookie", "secret", "X-Signature", "X-Amz-Signature",
    "X-Amz-Credential", "X-Amz-Security-Token", "key", "sig", "private_key", "x-secret-id", "jwt",
]
NOT_CREDENTIALS = [
    "model", "messages", "content", "role", "max_tokens", "prompt_tokens", "total_tokens", "budget_tokens",
    "max_completion_tokens", "reasoning_effort", "stream_options", "tool_call_id", "user_id", "error_code",
    "keywords", "monkey", "tokenizer", "x-mock-session", "x-deepseek-harness-session-id", "content-type",
    "user-agent", "WWW-Authenticate", "x-ds-trace-id", "keep-alive",
    "signature", "code",  # in JSON: Anthropic's thinking signature, a tool's code argument
]


@pytest.mark.parametrize("name", CREDENTIALS)
def test_credential_names_in_any_case_and_separator(name: str) -> None:
    assert is_credential_name(name)


@pytest.mark.parametrize("name", NOT_CREDENTIALS)
def test_names_that_are_not_credentials(name: str) -> None:
    assert not is_credential_name(name)


def test_code_and_signature_are_credentials_in_urls_and_forms_only() -> None:
    assert is_credential_name("code", in_url=True) and is_credential_name("Signature", in_url=True)
    assert scrub_query("/cb?code=c0de&state=s") == "/cb?code={{scrubbed:code}}&state=s"
    assert scrub_json({"code": "print(1)", "signature": "sig"}) == {"code": "print(1)", "signature": "sig"}


def test_placeholder_keeps_labels_readable_and_whole() -> None:
    assert placeholder("x-api-key") == "{{scrubbed:x-api-key}}"
    assert placeholder("we}}ird name") == "{{scrubbed:we__ird_name}}"
    assert placeholder("") == "{{scrubbed:secret}}"


def test_known_secrets_match_whole_values_only() -> None:
    known = KnownSecrets(["sk-abc123"])
    assert known.scrub("KEY=sk-abc123 'sk-abc123' (sk-abc123)") == \
        "KEY={{scrubbed:secret}} '{{scrubbed:secret}}' ({{scrubbed:secret}})"
    # Glued to a letter or digit it is part of another token, not the secret.
    assert known.scrub("sk-abc1234 xsk-abc123") == "sk-abc1234 xsk-abc123"
    # `_` separates, as in file and variable names.
    assert known.scrub("backup_sk-abc123.txt") == "backup_{{scrubbed:secret}}.txt"


def test_a_value_that_ends_in_punctuation_matches_at_that_end_anywhere() -> None:
    known = KnownSecrets(["dXNlcjpwYXNz=="])
    assert known.scrub("Basic dXNlcjpwYXNz==x") == "Basic {{scrubbed:secret}}x"


@pytest.mark.parametrize("short", ["k", "the", "test", "abcde"])
def test_short_values_are_never_matched(short: str) -> None:
    known = KnownSecrets([short])
    assert len(known) == 0 and not known.add(short)
    text = "unknown tool: the test took too long; abcde"
    assert known.scrub(text) == text


def test_the_longest_value_wins_where_two_overlap() -> None:
    known = KnownSecrets()
    known.add("secret-one", "short")
    known.add("secret-one-two", "long")
    assert known.scrub("secret-one-two secret-one") == "{{scrubbed:long}} {{scrubbed:short}}"


word = st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=8)
glue = st.text(alphabet=" \n\t=:;,.\"'/()[]{}&", min_size=1, max_size=3)


@given(
    secret=st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=MIN_SECRET_LENGTH, max_size=24)
    .filter(lambda s: s[0].isalnum() and s[-1].isalnum()),
    words=st.lists(st.tuples(word, glue), max_size=12),
)
def test_scrub_removes_every_whole_occurrence_and_changes_nothing_else(
    secret: str, words: list[tuple[str, str]]
) -> None:
    """Text built of words and separators, with the secret inserted whole between some of them:
    after the scrub no word is rewritten unless it is the secret, and the secret is gone."""
    pieces: list[str] = []
    for i, (w, sep) in enumerate(words):
        pieces += [secret if i % 3 == 0 else w, sep]
    text = "".join(pieces)
    scrubbed = KnownSecrets([secret]).scrub(text)
    expected = "".join(placeholder("secret") if p == secret else p for p in pieces)
    assert scrubbed == expected


def test_scrub_json_replaces_under_credential_names_and_keeps_shape() -> None:
    body = {
        "model": "m", "max_tokens": 5, "token": "t", "secret": {"value": "v"}, "tokens": ["a", 7, None],
        "auth": {"key": "k", "client_secret": "s", "enabled": True},
        "tools": [{"function": {"parameters": {"type": "object", "properties": {
            "password": {"type": "string"}, "token": "not-a-schema"}}}}],
    }
    assert scrub_json(body) == {
        "model": "m", "max_tokens": 5, "token": "{{scrubbed:token}}", "secret": {"value": "{{scrubbed:secret}}"},
        "tokens": ["{{scrubbed:tokens}}", "{{scrubbed:tokens}}", None],
        "auth": {"key": "{{scrubbed:key}}", "client_secret": "{{scrubbed:client_secret}}", "enabled": True},
        # A parameter called `password` is a field name in a schema; a string there is not a schema.
        "tools": [{"function": {"parameters": {"type": "object", "properties": {
            "password": {"type": "string"}, "token": "{{scrubbed:token}}"}}}}],
    }
    assert sorted(credential_values(body)) == sorted(
        [("token", "t"), ("secret", "v"), ("tokens", "a"), ("key", "k"), ("client_secret", "s"),
         ("token", "not-a-schema")])


def test_scrub_json_passes_other_strings_through_the_text_hook_and_bounds_depth() -> None:
    known = KnownSecrets(["sk-known-1"])
    assert scrub_json({"content": "my key is sk-known-1"}, text=known.scrub) == {
        "content": "my key is {{scrubbed:secret}}"}
    deep: object = "x"
    for _ in range(20):
        deep = [deep]
    with pytest.raises(JsonShapeError):
        scrub_json(deep, max_depth=10)
    assert scrub_json(deep, max_depth=21) == deep


def test_headers_are_lower_cased_and_credentials_replaced() -> None:
    assert scrub_headers({"Authorization": "Bearer K", "X-Signature": "s", "Accept": "*/*"}) == {
        "authorization": "{{scrubbed:authorization}}", "x-signature": "{{scrubbed:x-signature}}", "accept": "*/*"}


def test_query_parameters() -> None:
    assert scrub_query("/v1/x?api_key=K&X-Amz-Signature=abc&mode=fast&key=&a%5Fkey=1") == (
        "/v1/x?api_key={{scrubbed:api_key}}&X-Amz-Signature={{scrubbed:X-Amz-Signature}}&mode=fast&key="
        "&a%5Fkey={{scrubbed:a_key}}")
    assert scrub_query("/no/query") == "/no/query"


def test_form_bodies_and_text_pairs() -> None:
    form = "grant_type=client_credentials&client_secret=cs%2B1&password=p%40ss&scope=read"
    assert scrub_credential_text(form) == (
        "grant_type=client_credentials&client_secret={{scrubbed:client_secret}}"
        "&password={{scrubbed:password}}&scope=read")
    assert list(credential_pairs(form)) == [("client_secret", "cs%2B1"), ("password", "p%40ss")]
    text = 'GET / HTTP/1.1\nAuthorization: Bearer sk-live-1\nnote=password=hunter2\n"api_key": "sk-2"'
    assert scrub_credential_text(text) == (
        'GET / HTTP/1.1\nAuthorization: Bearer {{scrubbed:Authorization}}\nnote=password={{scrubbed:password}}\n'
        '"api_key": "{{scrubbed:api_key}}"')


def test_urls_lose_their_user_credentials() -> None:
    assert scrub_url("http://alice:PASS@host:8/v1") == "http://alice:{{scrubbed:password}}@host:8/v1"
    assert scrub_url("https://TOKEN@host/x?key=K") == "https://{{scrubbed:username}}@host/x?key={{scrubbed:key}}"
    assert scrub_url("http://host/a@b") == "http://host/a@b"  # an @ in the path is not a user part
