"""The public namespace: a sorted `__all__` naming exactly the public names."""

from __future__ import annotations

import mock_server


def test_all_is_sorted_and_complete() -> None:
    # Sorted the way ruff's RUF022 sorts: CONSTANTS, then Classes, then functions.
    def kind(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert mock_server.__all__ == sorted(mock_server.__all__, key=kind)
    public = {n for n in vars(mock_server) if not n.startswith("_")}
    modules = {n for n, v in vars(mock_server).items() if type(v).__name__ == "module"}
    assert set(mock_server.__all__) == public - modules
    for name in mock_server.__all__:
        assert getattr(mock_server, name) is not None


def test_claimed_items_are_checklist_ids() -> None:
    import re

    assert all(re.fullmatch(r"S\d+b?", s) for s in mock_server.CLAIMED_S_ITEMS)
    assert len(set(mock_server.CLAIMED_S_ITEMS)) == len(mock_server.CLAIMED_S_ITEMS)


def test_docs_list_every_fault_and_quirk() -> None:
    from pathlib import Path

    root = Path(__file__).parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    guide = (root / "docs" / "mock_server.md").read_text(encoding="utf-8")
    for name in mock_server.FAULTS:  # the fault table lives in the README (issue 3)
        assert f"| `{name}` |" in readme, name
    for name in mock_server.QUIRKS:
        assert f"| `{name}` |" in guide, name
