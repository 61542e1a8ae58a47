"""The chunk-arrival plot: one dot per chunk (or SSE event), coloured by kind, as inline SVG.

y is the bytes of text received so far (reasoning, answer and argument fragments; chunks that
carry none, such as block ends and usage, sit level with the one before). x is the time since
the request was sent, so waits and bursts show; when every chunk arrived at one instant (one
network read, or a log whose clock ticked once), x is the chunks' order instead, so the plot
still shows what came in which order and how big each piece was, rather than one column of
dots. The SVG stretches to the width it is given (up to 640 px) and keeps its dots round:
they are zero-length strokes with a stroke width that does not scale. Its labels are HTML
around it, so they stay legible on a phone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .html import count, esc

__all__ = ["KIND_COLOURS", "Arrival", "arrival_plot"]

KIND_COLOURS = {
    "reasoning": "#7a6ff0",
    "text": "#2e9e5b",
    "content": "#2e9e5b",
    "tool-call": "#e08a1e",
    "usage": "#3a86c8",
    "finish": "#444444",
    "error": "#d0342c",
    "other": "#999999",
}
"""Dot colour of each chunk kind (also used for the legend); other kinds are grey."""

_W, _H = 1000.0, 100.0
"""The plot's own coordinates; the SVG is stretched to the width of the page."""


@dataclass(frozen=True, slots=True)
class Arrival:
    """One chunk as the plot sees it."""

    t_ms: float
    """Milliseconds since the request was sent."""
    kind: str
    size: int
    """Bytes of text the chunk carried (UTF-8), 0 for chunks without text."""


def _ms(value: float) -> str:
    return f"{value:.0f} ms" if value >= 10 or value == int(value) else f"{value:.1f} ms"


def arrival_plot(points: Sequence[Arrival], *, label: str = "chunk arrival") -> str:
    if not points:
        return "<p class=\"note\">no chunks arrived</p>"
    n = len(points)
    if n == 1:  # nothing to plot: say it
        (only,) = points
        return (f"<p class=\"note plot-one\" data-kind=\"{esc(only.kind)}\">{esc(label)}: one chunk ({esc(only.kind)}, "
                f"{count(only.size, 'byte')} of text) at {_ms(only.t_ms)}</p>")
    end = max(p.t_ms for p in points)
    by_time = len({p.t_ms for p in points}) > 1
    total = sum(p.size for p in points)
    xs = [_W * p.t_ms / end for p in points] if by_time and end > 0 else (
        [_W * i / (n - 1) for i in range(n)] if n > 1 else [_W / 2])
    ys: list[float] = []
    so_far = 0
    for i, p in enumerate(points):
        so_far += p.size
        share = so_far / total if total else (i + 1) / n
        ys.append(_H * (1 - share))
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys, strict=True))
    style = {k: (esc(k), KIND_COLOURS.get(k, "#999999")) for k in {p.kind for p in points}}
    dots = "".join(
        f"<path class=\"pt\" data-kind=\"{style[p.kind][0]}\" data-order=\"{i}\" d=\"M{x:.1f} {y:.1f}h0\" "
        f"stroke=\"{style[p.kind][1]}\"><title>#{i} {style[p.kind][0]}, {p.size} B, at {_ms(p.t_ms)}</title></path>"
        for i, (p, x, y) in enumerate(zip(points, xs, ys, strict=True), 1)
    )
    legend = "".join(
        f"<span><i style=\"background:{KIND_COLOURS.get(k, '#999999')}\"></i>{esc(k)}</span>"
        for k in sorted({p.kind for p in points})
    )
    amount = f"{count(total, 'byte')} of text" if total else "no text"
    if by_time:
        axis = f"<span>0 ms</span><span>time since the request</span><span>{_ms(end)}</span>"
        mode = "time"
    else:
        when = "once" if n == 1 else f"all at {_ms(end)}"
        axis = f"<span>#1</span><span>order of arrival ({when})</span><span>#{n}</span>"
        mode = "order"
    return (
        f"<figure class=\"plot\" data-x=\"{mode}\"><div class=\"axis\"><span>{count(n, 'chunk')}, {amount}</span></div>"
        f"<svg class=\"plot\" role=\"img\" aria-label=\"{esc(label)}\" viewBox=\"0 0 {_W:.0f} {_H:.0f}\" "
        "preserveAspectRatio=\"none\" stroke-linecap=\"round\">"
        f"<polyline points=\"{line}\" fill=\"none\" stroke=\"#bbb\" stroke-width=\"1\" vector-effect=\"non-scaling-stroke\"/>"
        f"{dots}</svg>"
        f"<div class=\"axis\">{axis}</div>"
        f"<figcaption class=\"legend\">{esc(label)}: {legend}</figcaption></figure>"
    )
