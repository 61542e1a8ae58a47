"""A page grows with the log, not with its square: each thing is printed once and linked after.

An agent sends its whole history with every request; a page that printed each request whole
repeated every tool result once per later call (a 10-step page printed one tool-result line
54 times). These walks are written by the real agent against the real mock server.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dshkit.view import render_paths

from .conftest import NOTES, Walk, make_long_walk, write_report

REPO = Path(__file__).resolve().parents[2]


def _dangling(html: str) -> list[str]:
    ids = set(re.findall(r' id="([^"]+)"', html))
    return [href for href in re.findall(r' href="#([^"]+)"', html) if href not in ids]


@pytest.fixture
async def walks(tmp_path: Path) -> tuple[Walk, Walk]:
    (tmp_path / "short").mkdir()
    (tmp_path / "long").mkdir()
    return await make_long_walk(tmp_path / "short", 3), await make_long_walk(tmp_path / "long", 6)


def test_twice_the_steps_make_twice_the_page(walks: tuple[Walk, Walk]) -> None:
    short, long = (render_paths([w.log])[0] for w in walks)
    ratio = len(long) / len(short)
    assert 1.7 < ratio < 2.3, ratio  # a page that repeated each request's history would be ~3.3x


def test_each_tool_result_line_is_printed_once(walks: tuple[Walk, Walk]) -> None:
    walk = walks[1]
    html, _ = render_paths([walk.log], journal=walk.journal)
    assert "0 requests differ from what was sent" in html  # every request is still compared whole
    for line in NOTES.splitlines():
        assert html.count(line) == 1, line  # 6 reads, 12 requests: one printing, links elsewhere
    assert html.count('href="#e') >= 5 + 6  # later results and every request's tool message link back
    assert _dangling(html) == []


@pytest.mark.parametrize("name", ["tool-loop-reasoning", "parallel-tool-calls", "readme-walk", "bad-request-400"])
def test_links_of_wire_pages_resolve(name: str) -> None:
    html, _ = render_paths([REPO / "recordings" / f"{name}.cassette.jsonl"])
    assert _dangling(html) == []


def test_links_of_journal_and_matrix_pages_resolve(walks: tuple[Walk, Walk], tmp_path: Path) -> None:
    html, _ = render_paths([walks[1].journal])
    assert _dangling(html) == [] and 'href="#x1-req"' in html  # later requests link to the first
    report = write_report(tmp_path / "r.json", "a.b:make", failing=range(0, 20, 3), na=[1])
    html, _ = render_paths([report, report])
    assert _dangling(html) == [] and html.count("<details class=\"failure-diff\"") == 14


