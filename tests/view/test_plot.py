"""The chunk-arrival plot: dots placed by time or, when every chunk came at one instant, by order."""

from __future__ import annotations

import re

from dshkit.view.plot import Arrival, arrival_plot


def _dots(markup: str) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in re.findall(r'd="M([\d.]+) ([\d.]+)h0"', markup)]


def test_chunks_of_one_read_are_plotted_in_order_with_their_bytes() -> None:
    points = [Arrival(40.0, "reasoning", 10), Arrival(40.0, "text", 30), Arrival(40.0, "finish", 0)]
    out = arrival_plot(points)
    assert 'data-x="order"' in out and "all at 40 ms" in out and "40 bytes of text" in out
    dots = _dots(out)
    assert [x for x, _ in dots] == [0.0, 500.0, 1000.0]  # spread by order, not one column
    # y falls (the SVG's y grows downwards) with the bytes so far: 10 of 40, then all 40
    assert [y for _, y in dots] == [75.0, 0.0, 0.0]


def test_chunks_over_time_are_plotted_by_time() -> None:
    out = arrival_plot([Arrival(10.0, "text", 5), Arrival(20.0, "text", 5), Arrival(40.0, "finish", 0)])
    assert 'data-x="time"' in out and "40 ms" in out
    assert [x for x, _ in _dots(out)] == [250.0, 500.0, 1000.0]
    assert "one chunk (finish, 0 bytes of text) at 7 ms" in arrival_plot([Arrival(7.0, "finish", 0)])
