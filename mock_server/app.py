"""The aiohttp application: routes and typed state, nothing else.

`make_app` wires the handlers of :mod:`dshkit.mock_server.handlers` to DeepSeek's paths (S1: the root,
`/v1` and `/beta` prefixes are one endpoint; `/anthropic/v1/messages` is the Anthropic
Messages surface) and stores the runtime and router under typed
`web.AppKey`s. Serving, binding and shutdown live in :mod:`dshkit.mock_server.server`.
"""

from __future__ import annotations

from aiohttp import web

from dshkit.mock_server.anthropic.surface import ANTHROPIC_PATHS
from dshkit.mock_server.exchange import Runtime
from dshkit.mock_server.handlers import (
    ROUTER_KEY,
    RUNTIME_KEY,
    anthropic_messages,
    balance,
    chat_completions,
    list_models,
    not_found,
)
from dshkit.mock_server.routing import Router

__all__ = ["CHAT_PATHS", "make_app"]

CHAT_PATHS = ("/chat/completions", "/v1/chat/completions", "/beta/chat/completions")


def make_app(runtime: Runtime, router: Router) -> web.Application:
    """The application for one server; the runtime and router are its only state."""
    # Bodies are read by the handler with its own limit (413 with DeepSeek's envelope), so
    # aiohttp's own limit is set out of the way.
    app = web.Application(client_max_size=runtime.config.max_body_bytes + 1)
    app[RUNTIME_KEY] = runtime
    app[ROUTER_KEY] = router
    for path in CHAT_PATHS:
        app.router.add_post(path, chat_completions)
    for path in ANTHROPIC_PATHS:  # the Anthropic Messages surface (a query string is ignored)
        app.router.add_post(path, anthropic_messages)
    for prefix in ("", "/v1"):
        app.router.add_get(f"{prefix}/models", list_models)
        app.router.add_get(f"{prefix}/user/balance", balance)
    app.router.add_route("*", "/{tail:.*}", not_found)
    return app
