"""The pydantic-ai driver (conformance/clients/drive_pydantic_ai.py): pydantic-ai's OpenAI chat model with its DeepSeek provider.

Its describe answer is read in this process (it needs no library); playing scenarios needs the
library, which `make clients` installs into .venv-clients only, so that test skips with the
suite's one reason (`drivers.library_missing`) unless $DSHKIT_CLIENTS_PYTHON names an
interpreter that has it.
"""

from __future__ import annotations

from .drivers import (
    assert_declarations_fit_the_catalogue,
    assert_describes_itself_before_its_import,
    assert_fails_only_its_known_defects,
)

NAME = "pydantic-ai"


def test_describes_itself_before_importing_its_library() -> None:
    assert_describes_itself_before_its_import(NAME)


def test_declarations_fit_the_catalogue() -> None:
    assert_declarations_fit_the_catalogue(NAME)


def test_fails_only_its_known_defects() -> None:
    assert_fails_only_its_known_defects(NAME, ("tool-split-arguments", "text-reasoning-then-answer", "rt-thinking-tool-call"))
