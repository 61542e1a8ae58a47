"""The one stream life cycle of every adapter: `run_stream` drives a call's `WireSource` (httpx
body reads in `http_stream`, SDK stream events in `sdk_stream`) through a `WireDecoder` into
`StreamChunk`s, and owns the adapter contract (DESIGN.md "Contracts others build on"):

- a call the adapter cannot make (`UsageError` while building it) is an error finish, unsent;
- every provider or transport failure becomes one terminal `Finish` of kind `error`, stamped
  with the response's request id when the server sent one; a failure raised while the body is
  read (a TCP reset, an SDK raising on an in-band error) is ended by the decoder (`fail`), so
  that finish keeps what the decoder keeps on one (a thinking block's signature);
- the caller's `signal` ends the stream with an `aborted` finish, at any await;
- a response that ends without a single item is `EMPTY_RESPONSE`;
- an `asyncio.CancelledError` closes the response and propagates;
- the response is always closed, and nothing is retried here (retrying is the loop's call).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Protocol, TypeVar

from dshkit.harness.llm import ErrorCode, Finish, LlmFailure, StreamChunk
from dshkit.harness.llm.adapter import SignalAborted, race_signal
from dshkit.harness.llm.errors import UsageError

__all__ = ["WireDecoder", "WireSource", "run_stream", "with_request_id"]

Item = TypeVar("Item")
ItemIn = TypeVar("ItemIn", contravariant=True)
ItemOut = TypeVar("ItemOut", covariant=True)


class WireDecoder(Protocol[ItemIn]):
    """The items of one response in (body bytes, SDK events), `StreamChunk`s out."""

    @property
    def finished(self) -> bool:
        """True once the stream's terminal `Finish` was returned (the rest of the input is moot)."""
        ...

    def feed(self, item: ItemIn) -> list[StreamChunk]: ...

    def close(self) -> list[StreamChunk]:
        """The chunks owed when the input ends: open blocks closed and exactly one `Finish`."""
        ...

    def fail(self, failure: LlmFailure) -> list[StreamChunk]:
        """The chunks that end the input on a `failure` raised while it was read: exactly one
        error `Finish`, carrying what the decoder keeps on one (the plain answer is
        `[Finish.failed(failure)]`, which `run_stream` also uses for a decoder without `fail`)."""
        ...


class WireSource(Protocol[ItemOut]):
    """One call's connection to its server, as `run_stream` drives it: opened once, read, and
    always closed."""

    errors: tuple[type[BaseException], ...]
    """The exceptions that are failures as data (any other propagates)."""
    aborted_message: str
    empty_message: str
    """The message of the EMPTY_RESPONSE failure when the response had no item at all."""

    @property
    def request_id(self) -> str | None:
        """The response's request id, once `open` has returned None."""
        ...

    async def open(self) -> Finish | None:
        """Send the request: None once the response streams, or the error finish of a
        response that refused the call (an HTTP error status)."""
        ...

    def items(self) -> AsyncIterator[ItemOut]:
        """The response's items as they arrive (an empty `bytes` read counts as none)."""
        ...

    def failure(self, exc: BaseException, *, streaming: bool) -> LlmFailure:
        """One of `errors` as a failure; `streaming` says whether the response had started."""
        ...

    async def aclose(self) -> None:
        """Close the response, if any; safe at any point, also before `open`."""
        ...


async def run_stream(
    source: Callable[[], WireSource[Item]],
    decoder: Callable[[], WireDecoder[Item]],
    signal: asyncio.Event | None,
) -> AsyncIterator[StreamChunk]:
    """Open the call `source()` makes and yield its chunks, ending with exactly one `Finish`
    (see the module docstring for the contract)."""
    try:
        call = source()
    except UsageError as exc:
        yield Finish.error(exc.message, exc.code)
        return
    try:
        if signal is not None and signal.is_set():
            yield Finish.aborted(call.aborted_message)
            return
        waiter = asyncio.ensure_future(signal.wait()) if signal is not None else None
        streaming = False
        body_decoder: WireDecoder[Item] | None = None
        try:
            refused = await race_signal(call.open(), waiter)
            if refused is not None:
                yield refused
                return
            streaming = True
            request_id = call.request_id
            body_decoder = decoder()
            received = False
            items = call.items().__aiter__()
            while True:
                try:
                    item = await race_signal(items.__anext__(), waiter)
                except StopAsyncIteration:
                    break
                received = received or bool(item)
                for chunk in body_decoder.feed(item):
                    yield with_request_id(chunk, request_id)
                if body_decoder.finished:
                    return
            if not received:
                yield with_request_id(Finish.error(call.empty_message, ErrorCode.EMPTY_RESPONSE), request_id)
                return
            for chunk in body_decoder.close():
                yield with_request_id(chunk, request_id)
        except SignalAborted:
            yield Finish.aborted(call.aborted_message)
        except call.errors as exc:
            if signal is not None and signal.is_set():
                yield Finish.aborted(call.aborted_message)
            else:
                failure = call.failure(exc, streaming=streaming)
                # A decoder written before `fail` was part of the protocol ends plainly.
                fail = getattr(body_decoder, "fail", None)
                ended = (fail(failure) if callable(fail) else None) or [Finish.failed(failure)]
                for chunk in ended:
                    yield with_request_id(chunk, call.request_id)
        finally:
            if waiter is not None:
                waiter.cancel()
    finally:
        await call.aclose()


def with_request_id(chunk: StreamChunk, request_id: str | None) -> StreamChunk:
    """Stamp the response's request id on a finish: on its meta and on its failure, if any."""
    if not request_id or not isinstance(chunk, Finish):
        return chunk
    if chunk.meta is not None:
        chunk = dataclasses.replace(chunk, meta=dataclasses.replace(chunk.meta, request_id=request_id))
    failure = chunk.reason.failure
    if failure is not None and failure.request_id is None:
        failure = dataclasses.replace(failure, request_id=request_id)
        chunk = dataclasses.replace(chunk, reason=dataclasses.replace(chunk.reason, failure=failure))
    return chunk
