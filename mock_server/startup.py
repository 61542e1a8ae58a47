"""How a process that only serves (`dshkit serve`, `python -m dshkit.mock_server serve`) starts:
imported before the server, and importing neither it nor aiohttp itself."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["serving"]


@contextmanager
def serving() -> Iterator[None]:
    """Around the whole `serve` command: the cyclic collector off and aiohttp imported without
    the CA certificates in its client TLS contexts, for a sooner ready line.

    Everything the command builds before its server has started (modules, scripts, the app)
    lives as long as the process, so the hundred or so collections an import of this size sets
    off would free nothing: the collector stays off until `settle_heap` turns it on, once the
    server has started, and is on again when the command returns whichever way it ends (bad
    options, `--help`), as a caller that runs the command in its own process expects.

    aiohttp builds two default client TLS contexts when it is first imported, and reading the
    system's CA bundle into them was about a tenth of the time `dshkit serve` took to get ready.
    A serving process is a plain-HTTP server that never opens a client connection, so its
    aiohttp gets those two contexts without certificates: a verifying connection through them
    would fail its certificate check, never pass unchecked. The patch covers only this import;
    every TLS context made afterwards (and in any other process) loads the CA certificates as
    usual. Where aiohttp is already imported, it is left as it is."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        _import_aiohttp_without_ca_certificates()
        yield
    finally:
        if collecting:
            gc.enable()


def _import_aiohttp_without_ca_certificates() -> None:
    if "aiohttp" in sys.modules:
        return
    import ssl

    setattr(ssl.SSLContext, "set_default_verify_paths", lambda self: None)  # noqa: B010 (mypy refuses `ssl.SSLContext.x = ...`)
    try:
        import aiohttp  # noqa: F401
    finally:
        delattr(ssl.SSLContext, "set_default_verify_paths")  # _ssl._SSLContext's own again
