"""What the mock server's public names promise: checklist ids and documented faults and quirks.

(`__all__` itself is checked for every package in tests/test_exported_members.py.)"""

from __future__ import annotations

import dshkit.mock_server
from dshkit.mock_server.claims import CLAIMED_S_ITEMS


def test_claimed_items_are_checklist_ids() -> None:
    import re

    assert all(re.fullmatch(r"S\d+b?", s) for s in CLAIMED_S_ITEMS)
    assert len(set(CLAIMED_S_ITEMS)) == len(CLAIMED_S_ITEMS)


def test_docs_list_every_fault_and_quirk() -> None:
    from pathlib import Path

    root = Path(__file__).parents[2]
    reference = (root / "docs" / "cli.md").read_text(encoding="utf-8")
    guide = (root / "docs" / "mock_server.md").read_text(encoding="utf-8")
    for name in dshkit.mock_server.FAULTS:  # the fault catalogue of the CLI reference
        assert f"| `{name}` |" in reference, name
    for name in dshkit.mock_server.QUIRKS:
        assert f"| `{name}` |" in guide, name
