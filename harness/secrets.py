"""The secrets policy: which names hold credentials, how a known secret is found in text, and
what replaces it.

One policy for every place dshkit writes down what it saw: the mock server's journal, the
recorder's cassettes and the tool results the harness logs and sends to the model all import
it from here. A value under a credential name (a header, a JSON field at any depth, a query or
form parameter, a `name: value` pair in a text body) is replaced whatever its length. A known
secret value (the API key, a key the recorder saw in a header) is replaced wherever it appears
in text, but only whole (not glued to a letter or digit on either side) and only when it is at
least `MIN_SECRET_LENGTH` characters long: replacing every `k` of a one-letter key would rewrite
text that is not the secret. Every replacement reads `{{scrubbed:LABEL}}`, LABEL naming where
the value was found. docs/reliability.md lists what is scrubbed where and how to add a name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any, Final
from urllib.parse import unquote_plus

from dshkit.harness.llm.errors import JsonShapeError

__all__ = [
    "CREDENTIAL_LAST_WORDS",
    "CREDENTIAL_NAMES",
    "CREDENTIAL_SUFFIXES",
    "CREDENTIAL_WORDS",
    "MIN_SECRET_LENGTH",
    "SCHEMA_NAME_MAPS",
    "URL_CREDENTIAL_NAMES",
    "KnownSecrets",
    "credential_pairs",
    "credential_values",
    "is_credential_name",
    "placeholder",
    "scrub_credential_text",
    "scrub_headers",
    "scrub_json",
    "scrub_query",
    "scrub_strings",
    "scrub_url",
]

MIN_SECRET_LENGTH: Final = 6
"""Known values shorter than this are never matched in text: a short key (`k`, `the`) would
rewrite ordinary words. Values under a credential name are replaced whatever their length."""

# A name is compared as its words, lower-cased: `X-Api-Key`, `x_api_key`, `xApiKey` and
# `X API KEY` are the words x, api, key; `XAPIKEY` is one word, caught by the suffixes.
CREDENTIAL_NAMES: Final = frozenset({
    "apikey", "key", "token", "tokens", "secret", "secrets", "password", "passwords", "passwd", "pwd",
    "passphrase", "authorization", "authentication", "auth", "bearer", "cookie", "cookies", "jwt",
    "credential", "credentials", "sig",
})
"""Whole names (the words joined) that hold a credential."""
CREDENTIAL_SUFFIXES: Final = (
    "apikey", "secret", "password", "passphrase", "token", "secretkey", "privatekey", "accesskey",
    "subscriptionkey", "credential", "credentials", "signature", "cookie",
)
"""Endings of the joined words (`clientsecret`, `XACCESSTOKEN`, `ocpapimsubscriptionkey`)."""
CREDENTIAL_LAST_WORDS: Final = frozenset({
    "key", "token", "secret", "password", "passwd", "pwd", "passphrase", "signature", "sig",
    "credential", "credentials", "cookie", "auth", "authorization", "authentication", "bearer", "jwt",
})
"""Last words of a longer name (`X-Goog-Api-Key`, `x_access_token`, `X-Signature`)."""
CREDENTIAL_WORDS: Final = frozenset({"secret", "secrets", "password", "passwd", "passphrase"})
"""Words that make a name a credential wherever they stand (`x-secret-id`)."""
URL_CREDENTIAL_NAMES: Final = frozenset({"code", "signature"})
"""Credentials only in query strings and form bodies: an OAuth `code`, a presigned URL's
`Signature`. In a JSON body `code` is program text and `signature` Anthropic's thinking
signature, which the client must send back unchanged."""
SCHEMA_NAME_MAPS: Final = frozenset({"properties", "patternProperties", "$defs", "definitions"})
"""JSON Schema keywords whose object maps names to schemas: a tool parameter called `password`
or `token` is a field name there, not a credential, and its schema object is kept."""

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_WORD_CHAR = r"[^\W_]"
"""A letter or digit (any script): a known secret glued to one is part of another token."""


@lru_cache(maxsize=1024)
def placeholder(label: str) -> str:
    """`{{scrubbed:LABEL}}`, LABEL kept to `[A-Za-z0-9_.-]` so the placeholder reads back whole."""
    return "{{scrubbed:" + (_LABEL_UNSAFE.sub("_", label)[:64] or "secret") + "}}"


@lru_cache(maxsize=8192)
def is_credential_name(name: str, *, in_url: bool = False) -> bool:
    """Whether a header, JSON field, query or form parameter of this name holds a credential.

    `in_url` also counts `URL_CREDENTIAL_NAMES` (for query strings and form bodies).
    """
    words = [w.lower() for w in _WORDS.findall(name)]
    if not words:
        return False
    joined = "".join(words)
    if joined in URL_CREDENTIAL_NAMES:
        return in_url
    return (
        joined in CREDENTIAL_NAMES
        or joined.endswith(CREDENTIAL_SUFFIXES)
        or (len(words) > 1 and words[-1] in CREDENTIAL_LAST_WORDS)
        or any(w in CREDENTIAL_WORDS for w in words)
    )


class KnownSecrets:
    """Secret values to replace wherever they appear in text, each matched whole.

    A value is found only where the characters on both sides of it are not letters or digits
    (a value that starts or ends with punctuation has no such condition at that end), so the
    key `sk-abc123` is replaced in `KEY=sk-abc123` and `"sk-abc123"` but not in `sk-abc1234`.
    Values shorter than `MIN_SECRET_LENGTH` are refused by `add`; the longest value wins where
    two overlap.
    """

    def __init__(self, values: Iterable[str] = (), *, label: str = "secret") -> None:
        self._labels: dict[str, str] = {}
        self._regex: re.Pattern[str] | None = None
        for value in values:
            self.add(value, label)

    def add(self, value: str, label: str = "secret") -> bool:
        """Replace `value` from now on (labelled `label`); False if it is too short to match safely."""
        if not isinstance(value, str) or len(value) < MIN_SECRET_LENGTH or value in self._labels:
            return False
        self._labels[value] = label
        self._regex = None
        return True

    def __len__(self) -> int:
        return len(self._labels)

    def __contains__(self, value: object) -> bool:
        return value in self._labels

    def __iter__(self) -> Iterator[str]:
        return iter(self._labels)

    def _pattern(self) -> re.Pattern[str]:
        if self._regex is None:
            parts = []
            for value in sorted(self._labels, key=len, reverse=True):
                before = f"(?<!{_WORD_CHAR})" if re.match(_WORD_CHAR, value[0]) else ""
                after = f"(?!{_WORD_CHAR})" if re.match(_WORD_CHAR, value[-1]) else ""
                parts.append(before + re.escape(value) + after)
            self._regex = re.compile("|".join(parts))
        return self._regex

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, label) of every whole occurrence in `text`, in order, not overlapping."""
        if not self._labels:
            return []
        return [(m.start(), m.end(), self._labels[m.group()]) for m in self._pattern().finditer(text)]

    def scrub(self, text: str) -> str:
        """`text` with every whole occurrence replaced by its placeholder."""
        if not self._labels:
            return text
        return self._pattern().sub(lambda m: placeholder(self._labels[m.group()]), text)


def _too_deep() -> JsonShapeError:
    return JsonShapeError("", "nesting deeper than the limit")


def scrub_json(
    value: Any, *, text: Callable[[str], str] | None = None, max_depth: int | None = None
) -> Any:
    """A copy of a parsed JSON value with the values under credential names replaced.

    Under a credential name every string and number (not booleans or null) becomes
    `{{scrubbed:NAME}}`, in lists and nested objects too, so the shape stays readable; the
    keys of a JSON Schema name map (`SCHEMA_NAME_MAPS`) are field names whose schemas are kept.
    Other strings go through `text` (a known-secrets scrub) when given. Raises
    :class:`JsonShapeError` past `max_depth` levels, before recursing any deeper.
    """
    return _scrub(value, text, -1 if max_depth is None else max_depth, False)


_NAMES_SEEN: dict[str, bool] = {}
"""`is_credential_name` of the field and header names seen so far: a plain dict lookup per
name, since the mock server scrubs every request it journals (cleared past a bound)."""


def _is_credential_field(key: Any, value: Any, schema_map: bool) -> bool:
    """The one rule for a field of a JSON object (`schema_map`: the object is a JSON Schema
    name map, whose object values are schemas)."""
    if value is None or key.__class__ is not str:
        return False
    hit = _NAMES_SEEN.get(key)
    if hit is None:
        hit = _learn_name(key)
    return hit and not (schema_map and isinstance(value, dict))


def _learn_name(key: str) -> bool:
    if len(_NAMES_SEEN) > 8192:
        _NAMES_SEEN.clear()
    hit = _NAMES_SEEN[key] = is_credential_name(key)
    return hit


def _names_schemas(key: Any, value: Any) -> bool:
    return key in SCHEMA_NAME_MAPS and isinstance(value, dict)


def _scrub(value: Any, text: Callable[[str], str] | None, left: int, schema_map: bool) -> Any:
    # `_is_credential_field` is written out in the loop, and scalars are handled there rather
    # than by a call each: this runs on every request the mock server journals.
    if isinstance(value, dict):
        if not left:
            raise _too_deep()
        out: dict[Any, Any] = {}
        names = _NAMES_SEEN
        for k, v in value.items():
            if v is not None and k.__class__ is str:
                hit = names.get(k)
                if hit is None:
                    hit = _learn_name(k)
                if hit and not (schema_map and isinstance(v, dict)):
                    out[k] = _all_scrubbed(v, k, left - 1)
                    continue
            if isinstance(v, (dict, list)):
                out[k] = _scrub(v, text, left - 1, k in SCHEMA_NAME_MAPS and isinstance(v, dict))
            else:
                out[k] = text(v) if text is not None and isinstance(v, str) else v
        return out
    if isinstance(value, list):
        if not left:
            raise _too_deep()
        return [
            _scrub(v, text, left - 1, False) if isinstance(v, (dict, list))
            else text(v) if text is not None and isinstance(v, str) else v
            for v in value
        ]
    if isinstance(value, str) and text is not None:
        return text(value)
    return value


def _all_scrubbed(value: Any, label: str, left: int) -> Any:
    """Every string and number in `value` replaced (shape kept), each labelled by the nearest
    credential name above it."""
    if isinstance(value, dict):
        if not left:
            raise _too_deep()
        return {
            k: _all_scrubbed(v, k if isinstance(k, str) and is_credential_name(k) else label, left - 1)
            for k, v in value.items()
        }
    if isinstance(value, list):
        if not left:
            raise _too_deep()
        return [_all_scrubbed(v, label, left - 1) for v in value]
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return placeholder(label)
    return value


def scrub_strings(value: Any, text: Callable[[str], str]) -> Any:
    """A copy of a JSON value with every string (not keys) passed through `text`, names not
    judged: for values that are not a request (tool result metadata, a recorder told to keep
    credentials). Objects become dicts and arrays lists."""
    if isinstance(value, Mapping):
        return {k: scrub_strings(v, text) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_strings(v, text) for v in value]
    return text(value) if isinstance(value, str) else value


def credential_values(value: Any) -> Iterator[tuple[str, str]]:
    """(name, string) for every string `scrub_json` would replace in a parsed JSON value, so
    that a recorder can go on to replace it wherever else it appears."""
    stack: list[tuple[Any, str | None, bool]] = [(value, None, False)]
    while stack:
        item, under, schema_map = stack.pop()
        if isinstance(item, dict):
            for k, v in item.items():
                if under is None and _is_credential_field(k, v, schema_map):
                    stack.append((v, k, False))
                elif under is not None:
                    stack.append((v, k if isinstance(k, str) and is_credential_name(k) else under, False))
                else:
                    stack.append((v, None, _names_schemas(k, v)))
        elif isinstance(item, list):
            stack.extend((v, under, False) for v in item)
        elif under is not None and isinstance(item, str):
            yield under, item


def scrub_headers(headers: Mapping[str, str], *, text: Callable[[str], str] | None = None) -> dict[str, str]:
    """A copy with names lower-cased and credential headers' values replaced; other values go
    through `text` when given."""
    out: dict[str, str] = {}
    for name, value in headers.items():
        low = name.lower()
        hit = _NAMES_SEEN.get(low)
        if hit is None:
            hit = _learn_name(low)
        if hit:
            out[low] = placeholder(low)
        else:
            out[low] = text(value) if text is not None else value
    return out


def scrub_query(path_qs: str) -> str:
    """A request target with the values of credential query parameters replaced (names, order
    and the rest kept): `/v1?api_key=K&mode=x` → `/v1?api_key={{scrubbed:api_key}}&mode=x`."""
    base, sep, query = path_qs.partition("?")
    if not sep:
        return path_qs
    parts = []
    for part in query.split("&"):
        name, eq, value = part.partition("=")
        if eq and value and is_credential_name(unquote_plus(name), in_url=True):
            part = f"{name}={placeholder(unquote_plus(name))}"
        parts.append(part)
    return base + "?" + "&".join(parts)


def scrub_url(url: str) -> str:
    """A URL fit to print or record: the credential of its user part replaced (the password of
    `user:PASS@`, or the whole user of `TOKEN@`, which is a token whenever no password follows
    it) and its credential query parameters too (`scrub_query`)."""
    scheme, sep, rest = url.partition("://")
    if sep:
        end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
        netloc = rest[:end]
        if "@" in netloc:
            userinfo, _, host = netloc.rpartition("@")
            user, colon, _ = userinfo.partition(":")
            shown = f"{user}:{placeholder('password')}" if colon else placeholder("username")
            url = f"{scheme}://{shown}@{host}{rest[end:]}"
    return scrub_query(url)


_PAIR_NAME: Final = re.compile(r"(?<![\w.-])(?P<name>[A-Za-z_%][\w.%-]*)[\"']?[ \t]*[:=][ \t]*[\"']?")
"""The `name: ` / `name=` / `"name": "` before a value in free text or a form body."""
_PAIR_VALUE: Final = re.compile(r"(?i:(?:bearer|basic|token|digest)[ \t]+)?(?P<value>[^\s&\"',;<>]+)")
"""The value after it; an HTTP auth scheme (`Authorization: Bearer K`) is kept and K replaced."""


def _credential_value_spans(text: str) -> Iterator[tuple[str, int, int]]:
    """(name, start, end) of the value of each pair under a credential name. A pair under
    another name is passed over name first, so a credential pair inside its value is still found."""
    pos = 0
    while (m := _PAIR_NAME.search(text, pos)) is not None:
        name = unquote_plus(m["name"])
        value = _PAIR_VALUE.match(text, m.end()) if is_credential_name(name, in_url=True) else None
        if value is None:
            pos = m.end()
            continue
        yield name, value.start("value"), value.end("value")
        pos = value.end()


def credential_pairs(text: str) -> Iterator[tuple[str, str]]:
    """(name, value) for each pair under a credential name in free text or a form body
    (`client_secret=S&password=P`, a pasted `Authorization: Bearer K` line)."""
    for name, start, end in _credential_value_spans(text):
        yield name, text[start:end]


def scrub_credential_text(text: str) -> str:
    """`text` with the value of every credential pair replaced (see `credential_pairs`)."""
    out: list[str] = []
    pos = 0
    for name, start, end in _credential_value_spans(text):
        out += (text[pos:start], placeholder(name))
        pos = end
    out.append(text[pos:])
    return "".join(out)
