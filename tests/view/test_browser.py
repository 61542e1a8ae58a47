"""Every page type in a real headless Chromium, at a desktop's 1400 px and a phone's 420 px: the
layout facts a reader relies on, asserted in the rendered DOM, and a screenshot of each.

The page must stand alone: the browser is told to fail every request that is not the file
itself, and the test fails if any was attempted. Set DSHKIT_VIEW_SCREENSHOTS to a folder to keep
the screenshots (they go to the test's temporary folder otherwise).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dshkit.view import render_paths

from .conftest import ARGUMENTS, Walk, in_thread, make_reset_journal, make_walk, write_report

REPO = Path(__file__).resolve().parents[2]
# One worker runs the module under `--dist loadgroup` (`make test`), so one Chromium starts.
pytestmark = pytest.mark.xdist_group("browser")

DESKTOP, PHONE = 1400, 420

LINES_OF = """el => {
  const style = getComputedStyle(el);
  const inner = el.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom);
  return inner / parseFloat(style.lineHeight);
}"""
"""How many text lines tall an element is (a `<pre>`): its height over its line height."""

PAGE_WIDTH = "() => document.documentElement.scrollWidth"
RIGHT_EDGES = "els => els.map(e => e.getBoundingClientRect().right)"


@dataclass
class Tab:
    """The one page of the module's browser: every test loads its file into it (a new page a
    test cost a renderer process of its own, a tenth of a second of CPU each)."""
    page: Any
    requested: list[str]
    """Every URL the page asked for since its last `_open`."""


@pytest.fixture(scope="module")
def tab(browser: Any) -> Iterator[Tab]:
    page = browser.new_page()
    tab = Tab(page, [])
    page.on("request", lambda request: tab.requested.append(request.url))
    yield tab
    page.close()


@pytest.fixture(scope="module")
def walk_once(tmp_path_factory: pytest.TempPathFactory) -> Walk:
    """One walk for the module's tests (none changes its files; each writes its variant beside
    them), run on a loop of its own in another thread: Playwright's sync API owns this thread's."""
    return in_thread(make_walk, tmp_path_factory.mktemp("walk"))  # type: ignore[no-any-return]


def _open(tab: Tab, html: str, tmp_path: Path, width: int = DESKTOP) -> tuple[Any, list[str]]:
    """The page showing `html` (written to a file) at `width`, and what else it asked for."""
    page_file = tmp_path / "view.html"
    page_file.write_text(html, encoding="utf-8")
    page = tab.page
    page.set_viewport_size({"width": width, "height": 900})
    tab.requested.clear()
    page.goto(page_file.as_uri())
    return page, [url for url in tab.requested if url != page_file.as_uri()]


def _shot(page: Any, tmp_path: Path, name: str) -> bytes:
    png: bytes = page.screenshot(full_page=True)
    folder = Path(os.environ.get("DSHKIT_VIEW_SCREENSHOTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.png").write_bytes(png)
    return png


def _fits(page: Any, width: int) -> None:
    """Nothing makes the page itself scroll sideways, plots included."""
    assert page.evaluate(PAGE_WIDTH) <= width
    assert all(right <= width for right in page.locator("svg.plot").evaluate_all(RIGHT_EDGES))


def _at_both_widths(page: Any, tmp_path: Path, name: str) -> None:
    """Screenshots at 1400 and 420 px; at 420 nothing may scroll the page sideways."""
    _shot(page, tmp_path, f"{name}-{DESKTOP}")
    page.set_viewport_size({"width": PHONE, "height": 900})
    _fits(page, PHONE)
    _shot(page, tmp_path, f"{name}-{PHONE}")


def _links_resolve(page: Any) -> int:
    """Every in-page link points at an element of the page; returns how many there are."""
    targets = page.locator("a[href^='#']").evaluate_all("els => els.map(e => e.getAttribute('href').slice(1))")
    missing = page.evaluate("ids => ids.filter(id => !document.getElementById(id))", targets)
    assert missing == []
    return len(targets)


def _tampered(walk: Walk, tmp_path: Path) -> Path:
    """The walk's journal with the last request's user text changed: its call shows a diff."""
    entries = [json.loads(line) for line in walk.journal.read_text().splitlines()]
    entries[-1]["body"]["messages"][1]["content"] = "something the log never held"
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return tampered


def test_session_page(tab: Tab, walk_once: Walk, tmp_path: Path) -> None:
    html, _ = render_paths([walk_once.log], journal=_tampered(walk_once, tmp_path))
    page, fetched = _open(tab, html, tmp_path)
    assert fetched == []
    summary = page.locator(".summary").inner_text()
    for words in ("1 turn", "3 model calls", "1 tool call", "1 retry", "1 failed call",
                  "1 request differs from what was sent"):
        assert words in summary
    assert re.search(r"started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", page.locator(".meta").inner_text())
    assert page.locator("section.turn").count() == 1 and page.locator("section.step").count() == 2
    calls = page.locator("article.call")
    assert [calls.nth(i).get_attribute("data-finish") for i in range(3)] == ["error", "tool-calls", "stop"]
    assert "1 chunk ·" in calls.nth(0).locator("h4").inner_text()
    assert "RATE_LIMIT 429" in calls.nth(0).locator(".failure").inner_text()
    assert "retry 1 in 1.0 s after RATE_LIMIT 429" in page.locator(".retry").inner_text()
    fragments = calls.nth(1).locator(".fragment").all_inner_texts()
    assert "".join(fragments) == ARGUMENTS and len(fragments) == 7
    chunks = int(calls.nth(1).locator("h4").inner_text().split(" · ")[2].split()[0])
    assert calls.nth(1).locator(".pt").count() == chunks  # one dot per logged chunk
    assert calls.nth(1).locator(".pt[data-kind=tool-call]").count() == 7

    # The diff has one rendered line per diff line: no blank line after each + or -.
    diff = calls.nth(2).locator("pre.diff")
    lines = diff.locator("span").count()
    assert lines > 6 and round(diff.evaluate(LINES_OF)) == lines
    assert diff.inner_text().splitlines() == diff.locator("span").all_inner_texts()
    assert "-      \"content\": \"What is this project?\"" in diff.inner_text()

    # Reasoning and answer are two boxes, one under the other, in different colours.
    reasoning, answer = calls.nth(2).locator(".block.reasoning"), calls.nth(2).locator(".block.text")
    assert reasoning.inner_text().splitlines()[-1] == "Now answer."
    assert answer.inner_text().splitlines()[-1] == "It forges <widgets> & tests them."
    r, a = reasoning.bounding_box(), answer.bounding_box()
    assert r["y"] + r["height"] <= a["y"]
    background = "el => getComputedStyle(el).backgroundColor"
    assert reasoning.evaluate(background) != answer.evaluate(background)

    # Each request shows what it adds; the rest is links to where it is printed already.
    assert _links_resolve(page) >= 4
    request = calls.nth(2).locator("details.request")
    request.locator("summary").click()
    body = request.locator("pre.json").inner_text()
    assert '"role": "tool"' in body and '"tools": ⤴ as in call 1\'s request' in body
    assert "You are an AI agent" not in body  # the system text is in call 1's request
    request.locator("a", has_text="messages 1–2 as in call 2's request").click()
    assert page.url.endswith("#req-2")
    assert calls.nth(1).locator("details.request").evaluate("d => d.open")  # following the link opened it
    result = page.locator("details.tool-result")
    assert f"result of read ({_logged_result_lines(walk_once.log)} lines)" in result.inner_text()
    result.locator("summary").click()
    assert "Widget Forge" in result.locator("pre").inner_text()
    _shot(page, tmp_path, "session-1400")

    page.set_viewport_size({"width": PHONE, "height": 900})
    _fits(page, PHONE)
    assert diff.evaluate("el => el.getBoundingClientRect().right") <= PHONE
    _shot(page, tmp_path, "session-420")


def _logged_result_lines(log: Path) -> int:
    """How many lines the walk's one tool result has, as the log holds it."""
    (event,) = [e for e in map(json.loads, log.read_text().splitlines()) if e.get("type") == "tool/result"]
    (block,) = event["data"]["message"]["content"]
    return len("".join(part["text"] for part in block["content"]).splitlines())


def _one_read(log: Path, tmp_path: Path) -> Path:
    """The log with every chunk of step 2 logged at one instant, as if one read brought them all."""
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    step2 = [r for r in rows if isinstance(r.get("data"), dict) and r["data"].get("step") == 2
             and (r["type"] == "assistant/chunk" or r["type"].endswith("-chunks"))]
    instant = min(r.get("time0", r.get("time")) for r in step2)
    for r in step2:
        if "time0" in r:
            r["time0"], r["data"]["dt"] = instant, [0] * len(r["data"]["dt"])
        else:
            r["time"] = instant
    out = tmp_path / "one-read.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def test_a_stream_read_at_once_is_plotted_by_order_and_bytes(tab: Tab, walk_once: Walk, tmp_path: Path) -> None:
    html, _ = render_paths([_one_read(walk_once.log, tmp_path)])
    page, _ = _open(tab, html, tmp_path, PHONE)
    figure = page.locator("article.call").nth(2).locator("figure.plot")
    assert figure.get_attribute("data-x") == "order" and "order of arrival (all at" in figure.inner_text()
    boxes = figure.locator(".pt").evaluate_all(
        "els => els.map(e => { const b = e.getBoundingClientRect(); return [b.x + b.width / 2, b.y + b.height / 2]; })")
    xs, ys = [x for x, _ in boxes], [y for _, y in boxes]
    assert len(xs) == 18 and all(a < b for a, b in itertools.pairwise(xs))  # not one column
    assert all(a >= b for a, b in itertools.pairwise(ys)) and ys[0] > ys[-1]  # higher with each byte
    _fits(page, PHONE)
    _shot(page, tmp_path, "session-one-read-420")


def test_cassette_page(tab: Tab, tmp_path: Path) -> None:
    html, _ = render_paths([REPO / "recordings" / "tool-loop-reasoning.cassette.jsonl"])
    page, fetched = _open(tab, html, tmp_path)
    assert fetched == []
    meta = page.locator(".meta").inner_text()
    assert re.search(r"recorded \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", meta) and "secrets scrubbed" in meta
    assert "True" not in meta and not re.search(r"\b\d{10}\b", meta)  # no Python repr, no epoch seconds
    assert page.locator("[data-count=exchanges]").inner_text() == "3 exchanges"
    assert page.locator("[data-count=failures]").inner_text() == "0 failed exchanges"
    last = page.locator("article.exchange").nth(2)
    reasoning, answer = last.locator(".block.reasoning"), last.locator(".block.text")
    r, a = reasoning.bounding_box(), answer.bounding_box()
    assert r["y"] + r["height"] <= a["y"] and "Widget Forge" in answer.inner_text()
    last.locator("details.request summary").click()
    assert "messages 1–4 as in request #2" in last.locator("pre.json").inner_text()
    assert _links_resolve(page) > 0
    _at_both_widths(page, tmp_path, "cassette")


def test_journal_page_counts_a_broken_stream_as_a_failure(tab: Tab, tmp_path: Path) -> None:
    journal = in_thread(make_reset_journal, tmp_path)
    html, kind = render_paths([journal])
    assert kind == "journal"
    page, fetched = _open(tab, html, tmp_path)
    assert fetched == []
    assert page.locator("[data-count=failures]").inner_text() == "1 failed exchange (1 broken off by the server)"
    assert page.locator("[data-count=exchanges]").inner_text() == "2 exchanges"
    broken, whole = page.locator("article.exchange").nth(0), page.locator("article.exchange").nth(1)
    assert broken.get_attribute("data-outcome") == "reset" and "failed" in (broken.get_attribute("class") or "")
    assert "failed" not in (whole.get_attribute("class") or "") and "A whole answer." in whole.inner_text()
    border = "el => getComputedStyle(el).borderTopColor"
    assert broken.evaluate(border) != whole.evaluate(border)
    assert "Half an ans" in broken.locator(".block.text").inner_text()
    _at_both_widths(page, tmp_path, "journal")


def test_conformance_page(tab: Tab, tmp_path: Path) -> None:
    adapter = "dshkit.harness.providers.deepseek:DeepSeekAdapter"
    reports = [
        write_report(tmp_path / "main" / "report.json", adapter),
        write_report(tmp_path / "branch" / "report.json", adapter, failing=[3]),  # one adapter, two runs
        write_report(tmp_path / "broken.json", "mine.adapters:make", failing=range(10, 152, 2), na=range(152, 162)),
    ]
    html, _ = render_paths(reports)
    page, fetched = _open(tab, html, tmp_path)
    assert fetched == []
    # 3 reports fit 1400 px: neither the page nor the matrix's own box scrolls sideways
    box = page.locator(".matrix-box")
    assert page.evaluate(PAGE_WIDTH) <= DESKTOP
    assert box.evaluate("b => b.scrollWidth <= b.clientWidth")
    heads = page.locator("thead th").all_inner_texts()[1:]
    assert len({h.strip() for h in heads}) == 3  # two runs of one adapter stay apart
    assert heads[0].startswith("deepseek:DeepSeekAdapter\nmain/report.json") and "branch/report.json" in heads[1]
    # rows grouped by area, each under its title; a row names its scenario's title
    areas = page.locator("tbody[data-area]")
    assert areas.count() >= 10
    assert page.locator("tbody[data-area=sse] tr.area th").first.inner_text().startswith("SSE framing")
    row = page.locator("tr[data-scenario=sse-keepalive-comment] th")
    assert row.inner_text() == "sse-keepalive-comment a : keep-alive comment before the first chunk yields no chunk"
    # an n/a cell says why
    na = page.locator("td.na").first
    assert na.inner_text() == "n/a\nthe adapter declares no reasoning capability"
    # 72 failures, each one closed line: the list stays short
    failures = page.locator("details.failure-diff")
    assert failures.count() == 72 and failures.evaluate_all("ds => ds.every(d => !d.open)")
    listed = page.evaluate("() => document.documentElement.scrollHeight - document.querySelector('h2').offsetTop")
    assert listed < 72 * 60
    # following a fail cell's link opens that failure, whose diff has one line per diff line
    page.locator("tr[data-scenario] td.fail a").first.click()
    opened = failures.evaluate_all("ds => ds.filter(d => d.open).map(d => d.dataset.scenario)")
    assert len(opened) == 1
    diff = page.locator("details.failure-diff[open] pre.diff")
    assert round(diff.evaluate(LINES_OF)) == diff.locator("span").count() >= 8
    _shot(page, tmp_path, "conformance-3-1400")
    page.set_viewport_size({"width": PHONE, "height": 900})
    assert page.evaluate(PAGE_WIDTH) <= PHONE  # the matrix scrolls inside its box instead
    assert box.evaluate("b => b.scrollWidth > b.clientWidth")
    _shot(page, tmp_path, "conformance-3-420")


def test_many_reports_scroll_inside_the_matrix_box(tab: Tab, tmp_path: Path) -> None:
    reports = [write_report(tmp_path / f"run{i}.json", f"pkg.adapters.variant{i}:make_adapter_for_a_long_name", only=20)
               for i in range(9)]
    html, _ = render_paths(reports)
    page, _ = _open(tab, html, tmp_path)
    assert page.evaluate(PAGE_WIDTH) <= DESKTOP
    box = page.locator(".matrix-box")
    assert box.evaluate("b => b.scrollWidth > b.clientWidth")
    assert box.evaluate("b => b.getBoundingClientRect().right") <= DESKTOP
    _shot(page, tmp_path, "conformance-9-1400")


def test_screenshot_smoke(tab: Tab, walk_once: Walk, tmp_path: Path) -> None:
    html, _ = render_paths([walk_once.log])
    page, _ = _open(tab, html, tmp_path, 1000)
    png = _shot(page, tmp_path, "smoke")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert width == 1000 and height > 800  # the timeline is longer than one screen
    assert len(png) > 20_000  # a blank page compresses to a few KB
