"""Write plans: where an encoded stream is cut into network writes.

The bytes a server sends and the reads a client sees are not aligned with SSE events: a write
may end inside an event, inside a multi-byte UTF-8 character or between a JSON backslash and
the character it escapes (S36). A :class:`WritePlan` names those cuts so a script can ask for
them; :func:`plan_writes` applies one to a byte string.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import pairwise

__all__ = ["WritePlan", "plan_writes"]


@dataclass(frozen=True, slots=True, kw_only=True)
class WritePlan:
    """Where a byte stream is cut into network writes, independent of SSE event boundaries.

    The cuts are the union of every source that is switched on; no source at all means one
    write. `events_per_write` = 1 writes each SSE event on its own, 0 ignores event boundaries.
    """

    events_per_write: int = 1
    """Cut after every N-th event (after its blank line); 0 switches this off."""
    size: int | None = None
    """Also cut every `size` bytes."""
    points: tuple[int, ...] = ()
    """Also cut at these byte offsets."""
    random_max: int | None = None
    """Also cut at seeded random gaps of 1..random_max bytes."""
    seed: int = 0
    inside_utf8: bool = False
    """Also cut inside every multi-byte UTF-8 character (after its first byte)."""
    inside_escapes: bool = False
    """Also cut between every JSON backslash and the character it escapes."""


def _event_ends(data: bytes) -> list[int]:
    ends: list[int] = []
    for sep in (b"\r\n\r\n", b"\n\n", b"\r\r"):
        start = 0
        while True:
            i = data.find(sep, start)
            if i < 0:
                break
            ends.append(i + len(sep))
            start = i + len(sep)
    # `\r\n\r\n` contains no `\n\n`, but `\n\n` inside `\r\n\r\n`-framed data cannot occur, so
    # the union is exactly the set of event ends for either framing.
    return sorted(set(ends))


def plan_writes(data: bytes, plan: WritePlan | None = None) -> list[bytes]:
    """Cut `data` into network writes as `plan` says; the writes concatenate to `data`.

    Cuts may land anywhere: inside an event, inside a multi-byte UTF-8 character, between a
    JSON backslash and the character it escapes (S36).
    """
    plan = plan or WritePlan()
    n = len(data)
    if n == 0:
        return []
    cuts: set[int] = set()
    if plan.events_per_write > 0:
        ends = _event_ends(data)
        cuts.update(ends[plan.events_per_write - 1 :: plan.events_per_write])
    if plan.size:
        cuts.update(range(plan.size, n, plan.size))
    cuts.update(plan.points)
    if plan.random_max:
        rng = random.Random(f"writes:{plan.seed}")
        i = rng.randint(1, plan.random_max)
        while i < n:
            cuts.add(i)
            i += rng.randint(1, plan.random_max)
    if plan.inside_utf8:
        cuts.update(i + 1 for i, b in enumerate(data) if b >= 0xC0 and i + 1 < n)
    if plan.inside_escapes:
        i = data.find(b"\\")
        while i >= 0:
            cuts.add(i + 1)
            i = data.find(b"\\", i + 2)
    bounds = [0, *sorted(c for c in cuts if 0 < c < n), n]
    return [data[a:b] for a, b in pairwise(bounds)]
