"""The one error the view raises: a file it cannot show, with where and what to do."""

from __future__ import annotations

__all__ = ["ViewError"]


class ViewError(Exception):
    """A file `dshkit view` cannot read; the message names the file (and line) and what to pass."""
