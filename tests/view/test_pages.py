"""The three pages: each is one complete HTML document that loads nothing from anywhere.

A view is opened from a CI artifact or mailed around, so everything it shows must be inside the
file: no script, stylesheet, image or font fetched, whatever the log, cassette or report held.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from dshkit.harness.session import parse_session_log
from dshkit.view.pages import matrix_page, session_page, wire_page
from dshkit.view.sessions import build_session_view
from dshkit.view.wire import load_cassette_exchanges

from .conftest import Walk, write_report

REPO = Path(__file__).resolve().parents[2]


class _Tags(HTMLParser):
    """Every start tag of a page with its attributes, and the text of its `<style>` elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.style = ""
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.style += data


def _assert_one_document(page: str) -> None:
    assert page.startswith("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
    assert page.endswith("</body></html>\n")
    parsed = _Tags()
    parsed.feed(page)
    names = [tag for tag, _ in parsed.tags]
    assert names.count("html") == names.count("head") == names.count("body") == 1
    assert names[: names.index("body")].count("title") == 1  # (an SVG dot's tooltip is a <title> too)
    assert not {"script", "link", "img", "iframe", "object", "embed", "base"} & set(names)
    for tag, attrs in parsed.tags:
        assert "src" not in attrs and "srcset" not in attrs, (tag, attrs)
        href = attrs.get("href")
        assert href is None or href.startswith("#"), (tag, attrs)  # links stay inside the page
    assert parsed.style and "url(" not in parsed.style and "@import" not in parsed.style


def test_the_session_page(walk: Walk) -> None:
    journal = [json.loads(line)["body"] for line in walk.journal.read_text().splitlines()]
    view = build_session_view(parse_session_log(walk.log.read_bytes()), journal)
    _assert_one_document(session_page(view, source=str(walk.log), journal=str(walk.journal)))


@pytest.mark.parametrize("name", ["tool-call-split-args.cassette.jsonl", "bad-request-400.cassette.jsonl"])
def test_the_wire_page(name: str) -> None:
    meta, exchanges = load_cassette_exchanges(REPO / "recordings" / name)
    _assert_one_document(wire_page("cassette", name, exchanges, meta))


def test_the_matrix_page(tmp_path: Path) -> None:
    report = write_report(tmp_path / "r.json", "a.b:make", failing=[0, 2], na=[1], only=5)
    _assert_one_document(matrix_page([("r.json", json.loads(report.read_text()))]))


def test_what_a_file_holds_never_becomes_a_fetch(tmp_path: Path) -> None:
    # a report whose texts are markup that would fetch, were it written unescaped
    hostile = '<img src="http://x/a.png"><script src="http://x/s.js"></script><link href="u">'
    doc = {"adapter": hostile, "scenarios": [{"id": "x", "tags": [], "status": "fail", "reason": hostile,
                                             "diff": hostile}], "summary": {"fail": 1}}
    page = matrix_page([(hostile, doc)])
    _assert_one_document(page)
    assert "&lt;script src=" in page  # shown as text, not written as a tag
