"""The aiohttp application: the registered wires, their routes and typed state, nothing else.

:data:`SURFACES` is the registry of wires a server speaks by default: Chat Completions (S1: the
root, `/v1` and `/beta` prefixes are one endpoint) and the Anthropic Messages surface
(`/anthropic/v1/messages`). `make_app` routes each surface's paths to its model-call handler,
adds the endpoints every DeepSeek client shares (`/models`, `/user/balance`, a 404 for the
rest) and stores the runtime, router and surfaces under typed `web.AppKey`s. Serving, binding
and shutdown live in :mod:`dshkit.mock_server.server`.
"""

from __future__ import annotations

from collections.abc import Sequence

from aiohttp import web

from dshkit.mock_server.anthropic.surface import AnthropicSurface
from dshkit.mock_server.chat import CHAT_PATHS, ChatSurface
from dshkit.mock_server.handlers import (
    ROUTER_KEY,
    RUNTIME_KEY,
    SURFACES_KEY,
    balance,
    list_models,
    metrics_page,
    model_call,
    not_found,
)
from dshkit.mock_server.routing import Router
from dshkit.mock_server.runtime import Runtime
from dshkit.mock_server.surface import Surface

__all__ = ["CHAT_PATHS", "SURFACES", "make_app"]

#: The wires a server speaks unless told otherwise (`MockServer(surfaces=...)`).
SURFACES: tuple[Surface, ...] = (ChatSurface(), AnthropicSurface())


def make_app(
    runtime: Runtime, router: Router, surfaces: Sequence[Surface] = SURFACES, *, admin: bool = False
) -> web.Application:
    """The application for one server; the runtime, router and surfaces are its only state.
    `admin` adds the admin HTTP API under `/_dshkit/` (:mod:`dshkit.mock_server.admin`)."""
    # Bodies are read by the handler with its own limit (413 with DeepSeek's envelope), so
    # aiohttp's own limit is set out of the way.
    app = web.Application(client_max_size=runtime.config.max_body_bytes + 1)
    app[RUNTIME_KEY] = runtime
    app[ROUTER_KEY] = router
    app[SURFACES_KEY] = tuple(surfaces)
    for surface in surfaces:
        handler = model_call(surface)
        for path in surface.paths:  # a query string is ignored
            app.router.add_post(path, handler)
    for prefix in ("", "/v1"):
        app.router.add_get(f"{prefix}/models", list_models)
        app.router.add_get(f"{prefix}/user/balance", balance)
    if admin:
        from dshkit.mock_server.admin import add_admin_routes

        add_admin_routes(app, router, runtime)
    app.router.add_get("/metrics", metrics_page)
    app.router.add_route("*", "/{tail:.*}", not_found)
    return app
