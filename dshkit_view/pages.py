"""The four pages, one module each: a session log's timeline (`session_page`), a cassette's or
journal's exchanges (`wire_page`) and the scenario × report matrix of conformance reports
(`matrix_page`). Each returns one complete HTML document."""

from __future__ import annotations

from .matrix_page import matrix_page
from .session_page import session_page
from .wire_page import wire_page

__all__ = ["matrix_page", "session_page", "wire_page"]
