"""The docs stand alone: they never send a reader to files the repository does not hold (the
project's internal specs, the shared corpus folder) nor use "trap N" without saying what it is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dshkit.cli import build_parser

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "recordings" / "README.md"]
FOREIGN = re.compile(
    r"\b(?:wire|dsh-core|dsh-testing|peers|anthropic)\.md\b|\.\./shared|§|\bseeds/|\btraps? \d", re.I
)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_docs_cite_nothing_outside_the_repository(doc: Path) -> None:
    hits = [f"{doc.name}:{n}: {line.strip()}" for n, line in enumerate(doc.read_text().splitlines(), 1)
            if FOREIGN.search(line)]
    assert hits == []


def test_cli_help_cites_nothing_outside_the_repository() -> None:
    parser = build_parser()
    texts = [parser.format_help()]
    for action in parser._actions:
        choices = getattr(action, "choices", None)
        if isinstance(choices, dict):
            texts += [sub.format_help() for sub in choices.values()]
    hits = [line for text in texts for line in text.splitlines() if FOREIGN.search(line)]
    assert hits == []
