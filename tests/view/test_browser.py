"""The view in a real headless Chromium: DOM assertions on a walk's page, and a screenshot.

The page must stand alone: the browser is told to fail every request that is not the file
itself, and the test fails if any was attempted.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from dshkit.view import render_paths

from .conftest import ARGUMENTS, Walk

REPO = Path(__file__).resolve().parents[2]
# One worker runs the module under `--dist loadgroup` (`make test`), so one Chromium starts.
pytestmark = pytest.mark.xdist_group("browser")


def _open(browser: Any, html: str, tmp_path: Path) -> tuple[Any, list[str]]:
    page_file = tmp_path / "view.html"
    page_file.write_text(html, encoding="utf-8")
    page = browser.new_page()
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    page.goto(page_file.as_uri())
    return page, [url for url in fetched if url != page_file.as_uri()]


def test_session_page_dom(browser: Any, walk_in_thread: Walk, tmp_path: Path) -> None:
    html, _ = render_paths([walk_in_thread.log], journal=walk_in_thread.journal)
    page, fetched = _open(browser, html, tmp_path)
    try:
        assert fetched == []
        assert page.locator("section.turn").count() == 1
        assert page.locator("section.step").count() == 2
        calls = page.locator("article.call")
        assert calls.count() == 3
        assert [calls.nth(i).get_attribute("data-finish") for i in range(3)] == ["error", "tool-calls", "stop"]
        assert "RATE_LIMIT 429" in calls.nth(0).locator(".failure").inner_text()
        assert "retry 1 in 1.0 s after RATE_LIMIT 429" in page.locator(".retry").inner_text()
        fragments = calls.nth(1).locator(".fragment").all_inner_texts()
        assert "".join(fragments) == ARGUMENTS and len(fragments) == 7
        # one plot point per logged chunk, coloured by kind
        assert calls.nth(1).locator("circle.pt").count() == int(calls.nth(1).locator("h4").first.inner_text().split(" · ")[2].split()[0])
        assert calls.nth(1).locator("circle.pt[data-kind=tool-call]").count() == 7
        assert page.locator(".verdict.ok").count() == 3 and page.locator(".verdict.bad").count() == 0
        assert page.locator(".usage").count() == 2
        result = page.locator("details.tool-result")
        assert "result of read" in result.inner_text()
        result.locator("summary").click()
        assert "Widget Forge" in result.locator("pre").inner_text()
        assert "forges <widgets> & tests them." in calls.nth(2).locator(".stream").inner_text()
    finally:
        page.close()


def test_conformance_matrix_dom(browser: Any, tmp_path: Path) -> None:
    import json

    report = tmp_path / "r.json"
    report.write_text(json.dumps({"adapter": "x", "scenarios": [
        {"id": "A1", "tags": [], "status": "pass"},
        {"id": "A2", "tags": [], "status": "fail", "diff": "--- expected\n+++ actual\n-a\n+b\n"}],
        "summary": {"pass": 1, "fail": 1, "n/a": 0}}))
    html, _ = render_paths([report])
    page, fetched = _open(browser, html, tmp_path)
    try:
        assert fetched == []
        assert page.locator("tr[data-scenario]").count() == 2
        page.locator("tr[data-scenario=A2] a").click()
        assert page.url.endswith("#d-0-A2")
        assert page.locator("#d-0-A2 .add").inner_text() == "+b"
    finally:
        page.close()


def test_screenshot_smoke(browser: Any, walk_in_thread: Walk, tmp_path: Path) -> None:
    html, _ = render_paths([walk_in_thread.log])
    page, _ = _open(browser, html, tmp_path)
    try:
        page.set_viewport_size({"width": 1000, "height": 800})
        png = page.screenshot(full_page=True)
    finally:
        page.close()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert width == 1000 and height > 800  # the timeline is longer than one screen
    assert len(png) > 20_000  # a blank page compresses to a few KB
    (tmp_path / "view.png").write_bytes(png)
