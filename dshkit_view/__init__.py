"""`dshkit view`: one self-contained HTML file for a session log, a cassette, a mock-server
journal or conformance reports.

It sits above the three packages it reads (`harness` for session logs and request rebuilding,
`mock_server` for cassettes and journals, `conformance` reports as plain JSON), so `harness`
keeps importing nothing of `mock_server` and `mock_server` nothing of the loop.
"""

from .errors import ViewError
from .load import render_paths

__all__ = [
    "ViewError",
    "render_paths",
]
