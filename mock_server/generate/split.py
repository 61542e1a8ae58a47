"""Split plans: how a reply's strings are cut into the fragments its deltas carry.

DeepSeek streams text, reasoning and tool-call arguments in token-sized pieces; adapters must
survive any other cut too (one piece, fixed sizes, chosen offsets, seeded random sizes). This
module cuts a :class:`~dshkit.mock_server.generate.reply.Reply` into :class:`ReplyPieces` (with the
`max_tokens` truncation applied), which both surfaces render: Chat Completions chunks
(:mod:`dshkit.mock_server.generate.chunks`) and Anthropic events (:mod:`dshkit.mock_server.anthropic`).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Literal

from dshkit.mock_server.generate.reply import Reply, compute_usage, tool_call_id

__all__ = [
    "SEP",
    "FragmentPlan",
    "JoinedPieces",
    "ReplyPieces",
    "Run",
    "SplitPlan",
    "cut_joined",
    "cut_reply",
    "reply_usage",
    "split_text",
]

# Token-like pieces: a word with its leading space, a run of punctuation, one non-ASCII
# character, or whitespace. Real DeepSeek deltas look like this (`{"`, `location`, `": "`).
# "Punctuation" is every ASCII character that is neither whitespace (`\s`, which in ASCII also
# holds \x1c-\x1f) nor a word character, spelled out: a class with a range up to U+10FFFF
# made `re` walk 65,536 code points while compiling it, which `dshkit serve` paid at start-up.
_TOKEN_RE = re.compile(
    r" ?[A-Za-z0-9_]+| ?[\x00-\x08\x0e-\x1b!-/:-@\[-^`{-\x7f]+|[^\x00-\x7f]|\s+", re.DOTALL
)
# The same tokens where a text is printable and never has two spaces in a row (so its only
# whitespace is single spaces), read after a SEP was put before every space: a run of words
# with a space between each is a run of ` ?word` tokens, found in one match (a loop over one
# character class) with its SEPs in place; between two matches the SEP before a space matches
# nothing, so findall leaves it out and the join by SEP puts it back. Its punctuation and
# non-ASCII classes are spelled as in _TOKEN_RE, for the same reason, and without DEL (SEP).
_RUN_RE = re.compile(
    r" ?[\x00-\x08\x0e-\x1b!-/:-@\[-^`{-~]+|[A-Za-z0-9_ ](?:[A-Za-z0-9_\x7f ]*[A-Za-z0-9_])?|[^\x00-\x7f]", re.DOTALL
)

#: What the fast renderers join a string's fragments with: DEL, a character JSON escaping
#: leaves as it is and UTF-8 writes as one byte no other character's bytes hold, so a whole
#: string's fragments are escaped in one call and cut apart again at that byte (and an ASCII
#: text stays a one-byte-per-character string throughout). Used only for strings without it.
SEP = "\x7f"


@dataclass(frozen=True, slots=True, kw_only=True)
class SplitPlan:
    """How one logical string is cut into delta fragments.

    `mode` is one of: `tokens` (word-like pieces, as DeepSeek sends), `fixed` (`size` code
    points each), `points` (cut at the code-point offsets in `points`), `random` (seeded sizes
    between `min_size` and `max_size`), `whole` (one fragment).
    """

    mode: Literal["tokens", "fixed", "points", "random", "whole"] = "tokens"
    size: int = 4
    points: tuple[int, ...] = ()
    min_size: int = 1
    max_size: int = 8

    def __post_init__(self) -> None:
        if self.size < 1 or self.min_size < 1 or self.max_size < self.min_size:
            raise ValueError(
                f"SplitPlan sizes must satisfy size >= 1 and 1 <= min_size <= max_size, "
                f"got size={self.size}, min_size={self.min_size}, max_size={self.max_size}"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class FragmentPlan:
    """Split plans for each kind of fragment in a stream."""

    text: SplitPlan = field(default_factory=SplitPlan)
    reasoning: SplitPlan = field(default_factory=SplitPlan)
    arguments: SplitPlan = field(default_factory=SplitPlan)

    @classmethod
    def all(cls, plan: SplitPlan) -> FragmentPlan:
        """The same plan for text, reasoning and arguments."""
        return cls(text=plan, reasoning=plan, arguments=plan)


def split_text(text: str, plan: SplitPlan, rng: random.Random | None = None) -> list[str]:
    """Cut `text` into fragments whose concatenation is `text`; an empty text gives no fragment."""
    if not text:
        return []
    if plan.mode == "whole":
        return [text]
    if plan.mode == "tokens":
        pieces = _TOKEN_RE.findall(text)
        if "".join(pieces) != text:  # pragma: no cover - the pattern covers every character
            raise AssertionError("token split lost characters")
        return pieces
    if plan.mode == "fixed":
        return [text[i : i + plan.size] for i in range(0, len(text), plan.size)]
    if plan.mode == "points":
        cuts = sorted({p for p in plan.points if 0 < p < len(text)})
        bounds = [0, *cuts, len(text)]
        return [text[a:b] for a, b in pairwise(bounds)]
    rng = rng or random.Random(0)
    out: list[str] = []
    i = 0
    while i < len(text):
        n = rng.randint(plan.min_size, plan.max_size)
        out.append(text[i : i + n])
        i += n
    return out


#: The printable ASCII characters: what `isprintable` is true of in an ASCII text, deleted by
#: `bytes.translate` (a table lookup per byte, where `str.isprintable` asks the Unicode database),
#: so an ASCII text is printable when nothing is left.
_PRINTABLE_ASCII = bytes(range(0x20, 0x7F))


_SEP_SPACE = (SEP + " ").encode("ascii")


def _joined_tokens(text: str) -> str:
    """`SEP.join(split_text(text, SplitPlan()))` for a text without SEP, for less CPU.

    An ASCII text gets its SEPs before the spaces as bytes (a str replace of each space by two
    characters took about twice the CPU of the bytes one and the decode together)."""
    if text.isascii():
        data = text.encode("ascii")
        if not data.translate(None, _PRINTABLE_ASCII) and "  " not in text:
            return SEP.join(_RUN_RE.findall(data.replace(b" ", _SEP_SPACE).decode("ascii")))
        return SEP.join(_TOKEN_RE.findall(text))
    if text.isprintable() and "  " not in text:
        return SEP.join(_RUN_RE.findall(text.replace(" ", SEP + " ")))
    return SEP.join(_TOKEN_RE.findall(text))


@dataclass(slots=True)
class ReplyPieces:
    """The fragments of one reply after splitting and max_tokens truncation.

    Both surfaces render from these (the Chat Completions chunks of
    :mod:`dshkit.mock_server.generate.chunks`, the Anthropic events of :mod:`dshkit.mock_server.anthropic`),
    so a script step means the same reply on either.
    """

    reasoning: list[str]
    content: list[str]
    calls: list[tuple[str, str, list[str]]]  # (id, name, argument fragments)
    finish_reason: str
    completion_tokens: int


def cut_reply(
    reply: Reply,
    *,
    thinking: bool,
    split: FragmentPlan | SplitPlan | None = None,
    seed: int = 0,
    max_tokens: int | None = None,
) -> ReplyPieces:
    """The reply's fragments as every output form streams them (same seed, same cuts).

    Each fragment stands for one token and a tool call's opener for one more; past `max_tokens`
    the reply is cut where the budget runs out, with `finish_reason: "length"` (S32).
    """
    plan = split if isinstance(split, FragmentPlan) else FragmentPlan.all(split or SplitPlan())
    # Seeded generators are made only when a random plan or a call without an id needs one
    # (seeding costs more than the usual split): the draws, and so the cuts, are the same.
    random_plan = "random" in (plan.reasoning.mode, plan.text.mode, plan.arguments.mode)
    rng = random.Random(f"split:{seed}") if random_plan else None
    reasoning = split_text(reply.reasoning, plan.reasoning, rng) if thinking else []
    content = split_text(reply.content, plan.text, rng)
    calls = [(call_id, call.name, split_text(call.arguments, plan.arguments, rng))
             for call_id, call in zip(_call_ids(reply, seed), reply.tool_calls, strict=True)]
    finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    pieces = ReplyPieces(reasoning, content, calls, finish, _tokens(reasoning, content, calls))
    if max_tokens is not None and pieces.completion_tokens > max_tokens:
        return _truncate(pieces, max_tokens)
    return pieces


def _call_ids(reply: Reply, seed: int) -> list[str]:
    """Each call's id: its own, else DeepSeek-shaped, drawn from the seed in call order."""
    id_rng: random.Random | None = None
    ids = []
    for i, call in enumerate(reply.tool_calls):
        if call.id is not None:
            ids.append(call.id)
            continue
        if id_rng is None:
            id_rng = random.Random(f"ids:{seed}")
        ids.append(tool_call_id(i, id_rng))
    return ids


Run = tuple[str, int]
"""A string's fragments joined by :data:`SEP`, and how many there are."""


@dataclass(slots=True)
class JoinedPieces:
    """:class:`ReplyPieces` with each string's fragments joined by :data:`SEP` (what the fast
    renderers take: no object per fragment)."""

    reasoning: Run
    content: Run
    calls: list[tuple[str, str, Run]]  # (id, name, argument fragments)
    finish_reason: str
    completion_tokens: int


#: The plan a reply without one is cut by (frozen, so made once).
_TOKEN_PLAN = FragmentPlan.all(SplitPlan())


def _run(fragments: list[str]) -> Run:
    return SEP.join(fragments), len(fragments)


def cut_joined(
    reply: Reply,
    *,
    thinking: bool,
    split: FragmentPlan | SplitPlan | None = None,
    seed: int = 0,
    max_tokens: int | None = None,
) -> JoinedPieces | None:
    """:func:`cut_reply`'s fragments, each string's joined by :data:`SEP`; None when a string
    holds SEP. Token cuts (the default) are found in bulk; other plans and a reply that
    `max_tokens` cuts short are cut by :func:`cut_reply` and joined."""
    plan = split if isinstance(split, FragmentPlan) else _TOKEN_PLAN if split is None else FragmentPlan.all(split)
    bulk = plan.reasoning.mode == plan.text.mode == plan.arguments.mode == "tokens"
    if bulk and not reply.tool_calls:
        # The usual reply (text, maybe reasoning): what the code below does, without the lists
        # made for a reply's calls (a new reply's rendering is cut here, on every request).
        reasoning, content = reply.reasoning, reply.content
        if SEP in reasoning or SEP in content:
            return None
        r = _joined_tokens(reasoning) if thinking and reasoning else ""
        c = _joined_tokens(content) if content else ""
        tokens = (rn := r.count(SEP) + 1 if r else 0) + (cn := c.count(SEP) + 1 if c else 0)
        if max_tokens is None or tokens <= max_tokens:
            return JoinedPieces((r, rn), (c, cn), [], reply.finish_reason or "stop", tokens)
    strings = [reply.reasoning, reply.content, *(c.arguments for c in reply.tool_calls)]
    if any(SEP in s for s in strings):
        return None
    if bulk:
        if not thinking:
            strings[0] = ""
        joined = [_joined_tokens(s) if s else "" for s in strings]
        runs = [(j, j.count(SEP) + 1 if j else 0) for j in joined]
        tokens = sum(n for _, n in runs) + len(reply.tool_calls)
        if max_tokens is None or tokens <= max_tokens:
            finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
            calls = [(call_id, call.name, run)
                     for call_id, call, run in zip(_call_ids(reply, seed), reply.tool_calls, runs[2:], strict=True)]
            return JoinedPieces(runs[0], runs[1], calls, finish, tokens)
    pieces = cut_reply(reply, thinking=thinking, split=split, seed=seed, max_tokens=max_tokens)
    return JoinedPieces(_run(pieces.reasoning), _run(pieces.content),
                        [(i, name, _run(args)) for i, name, args in pieces.calls],
                        pieces.finish_reason, pieces.completion_tokens)


def _tokens(
    reasoning: list[str], content: list[str], calls: list[tuple[str, str, list[str]]]
) -> int:
    return len(reasoning) + len(content) + sum(len(a) + 1 for _, _, a in calls)


def _truncate(pieces: ReplyPieces, max_tokens: int) -> ReplyPieces:
    """The budget runs out where it runs out, even in the middle of reasoning (S32)."""
    budget = max_tokens
    reasoning = pieces.reasoning[:budget]
    budget -= len(reasoning)
    content = pieces.content[:budget]
    budget -= len(content)
    kept: list[tuple[str, str, list[str]]] = []
    for call_id, name, args in pieces.calls:
        if budget <= 0:
            break
        budget -= 1
        kept.append((call_id, name, args[:budget]))
        budget -= len(kept[-1][2])
    return ReplyPieces(reasoning, content, kept, "length", max_tokens)


def reply_usage(reply: Reply, pieces: ReplyPieces | JoinedPieces, prompt_tokens: int) -> dict[str, Any]:
    """The reply's own usage object, else one computed from its fragments (one token each)."""
    if reply.usage is not None:
        return dict(reply.usage)
    reasoning = pieces.reasoning[1] if isinstance(pieces, JoinedPieces) else len(pieces.reasoning)
    return compute_usage(
        prompt_tokens=prompt_tokens,
        completion_tokens=pieces.completion_tokens,
        reasoning_tokens=reasoning,
    )
