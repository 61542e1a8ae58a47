"""How a process that only serves (`dshkit serve`, `python -m dshkit.mock_server serve`) starts:
imported before the server, and importing neither it nor aiohttp itself."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["owns_process", "serving"]

_own_process = False


@contextmanager
def serving(*, own_process: bool) -> Iterator[None]:
    """Around the whole `serve` command: when the command is its process's whole job
    (`own_process`: the console script, `python -m`), the cyclic collector off and aiohttp
    imported without the CA certificates in its client TLS contexts, for a sooner ready line.
    A program that runs the command inside itself (`main([...])`, as a test may) gets neither:
    its collector, the collector's settings and its aiohttp stay as it had them, and the server
    leaves its heap alone once started (see :func:`owns_process`).

    Everything the command builds before its server has started (modules, scripts, the app)
    lives as long as the process, so the hundred or so collections an import of this size sets
    off would free nothing: the collector stays off until `settle_heap` turns it on, once the
    server has started, and is on again when the command returns whichever way it ends (bad
    options, `--help`).

    aiohttp builds two default client TLS contexts when it is first imported, and reading the
    system's CA bundle into them was about a tenth of the time `dshkit serve` took to get ready.
    A serving process is a plain-HTTP server that never opens a client connection, so its
    aiohttp gets those two contexts without certificates: a verifying connection through them
    would fail its certificate check, never pass unchecked. The patch covers only this import;
    every TLS context made afterwards (and in any other process) loads the CA certificates as
    usual. Where aiohttp is already imported, it is left as it is."""
    global _own_process
    if not own_process:
        yield
        return
    collecting = gc.isenabled()
    gc.disable()
    _own_process = True
    try:
        _import_aiohttp_without_ca_certificates()
        yield
    finally:
        _own_process = False
        if collecting:
            gc.enable()


def owns_process() -> bool:
    """Whether the running `serve` command is its process's whole job: only then may it tune
    the process's collector once its server has started (`server.settle_heap`)."""
    return _own_process


def _import_aiohttp_without_ca_certificates() -> None:
    if "aiohttp" in sys.modules:
        return
    import ssl

    setattr(ssl.SSLContext, "set_default_verify_paths", lambda self: None)  # noqa: B010 (mypy refuses `ssl.SSLContext.x = ...`)
    try:
        import aiohttp  # noqa: F401
    finally:
        delattr(ssl.SSLContext, "set_default_verify_paths")  # _ssl._SSLContext's own again
