"""Exchanges that mostly wait on timers, played side by side once, then judged test by test.

A test whose wall time is a timer (a read timeout it expects, a server's scripted delay, an idle
timeout) leaves its worker's CPU idle for that long. Tests of one module that each wait so can
instead hand their exchanges to one `play_together` call, made by a module-scoped fixture the
first time one of them runs: the exchanges play concurrently, each test then judges its own
outcome, with the assertions it always had. Give those tests one xdist group, so that under
`--dist loadgroup` one worker plays them once.

Only exchanges that mostly sleep belong here: played beside each other they crowd no event loop,
so none of their timings is tighter than when each played alone.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Played", "play_together"]

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class Played(Generic[K, T]):
    """What each exchange of a `play_together` call returned, or the exception it raised."""

    def __init__(self, outcomes: dict[K, T | BaseException]) -> None:
        self._outcomes = outcomes

    def __getitem__(self, key: K) -> T:
        """`key`'s result; raises what `key`'s exchange raised, so only its own test fails."""
        outcome = self._outcomes[key]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def keys(self) -> list[K]:
        return list(self._outcomes)


def play_together(exchanges: dict[K, Callable[[], Awaitable[T]]],
                  after: Callable[[], None] | None = None) -> Played[K, T]:
    """Run every exchange concurrently on a fresh event loop, in a thread of its own (the calling
    test's loop, if any, stays untouched), and return their outcomes once all have ended.
    `after`, if given, runs on that loop once they have (to free what they hold before it closes)."""
    outcomes: dict[K, T | BaseException] = {}
    failure: list[BaseException] = []

    async def one(key: K, exchange: Callable[[], Awaitable[T]]) -> None:
        try:
            outcomes[key] = await exchange()
        except Exception as exc:  # the exchange's own test raises it
            outcomes[key] = exc

    async def every() -> None:
        try:
            await asyncio.gather(*(one(k, e) for k, e in exchanges.items()))
        finally:
            if after is not None:
                after()

    def in_thread() -> None:
        try:
            asyncio.run(every())
        except BaseException as exc:  # handed to the caller
            failure.append(exc)

    thread = threading.Thread(target=in_thread, name="play-together")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return Played({k: outcomes[k] for k in exchanges})
