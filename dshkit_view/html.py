"""The pieces every page is made of: the page shell with its inline style, escaping, JSON blocks,
diffs and the chunk-arrival plot (inline SVG).

Pages are one self-contained file: no script, no font, no stylesheet or image is fetched, so a
view opens from disk, from a CI artifact or an e-mail attachment without a server or network.
Everything taken from a log is escaped here, once: a log is data, never markup.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

__all__ = ["KIND_COLOURS", "diff_block", "esc", "json_block", "page", "plot"]

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
"""Point colour of each chunk kind in the arrival plot (also used for the legend)."""

_STYLE = """
:root { color-scheme: light; --muted: #666; --line: #ddd; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1100px; padding: 1rem 1.5rem 4rem; color: #222; }
h1 { font-size: 1.4rem; margin: .2rem 0; } h2 { font-size: 1.15rem; border-bottom: 2px solid var(--line); }
h3 { font-size: 1rem; margin: 1rem 0 .3rem; } h4 { font-size: .95rem; margin: .2rem 0; }
.meta, .note { color: var(--muted); }
pre { background: #f6f6f6; padding: .5rem; overflow-x: auto; white-space: pre-wrap; word-break: break-word; }
.summary span { display: inline-block; margin-right: 1.2rem; }
.turn { margin-top: 1.5rem; } .step { margin-left: 1rem; border-left: 3px solid var(--line); padding-left: .8rem; }
.call, .auxiliary { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .8rem; margin: .5rem 0; }
.auxiliary { border-style: dashed; }
.call.failed, .exchange.failed { border-color: #d0342c; }
.user::before { content: "› "; } .user { font-weight: 600; }
.stream .reasoning { color: #5b52c4; font-style: italic; } .stream .text { color: #17623a; }
.fragment { border: 1px solid #e08a1e; background: #fff4e5; border-radius: 3px; padding: 0 2px; margin: 0 1px;
  font-family: ui-monospace, monospace; white-space: pre-wrap; }
.tool-call, .tool-result { font-family: ui-monospace, monospace; }
.tool-result.error, .failure, .retry { color: #b0281f; }
.usage { color: #1f5f96; }
.diff .add { background: #e6ffed; display: block; } .diff .del { background: #ffeef0; display: block; }
.ok { color: #17623a; } .bad { color: #b0281f; font-weight: 600; }
table.matrix { border-collapse: collapse; } .matrix th { white-space: nowrap; text-align: left; } .matrix td, .matrix th { border: 1px solid var(--line); padding: 2px 8px; }
.matrix td.pass { background: #e6ffed; } .matrix td.fail { background: #ffeef0; } .matrix td.na { color: var(--muted); }
svg.plot { background: #fbfbfb; border: 1px solid var(--line); }
.legend span { margin-right: .8rem; } .legend i { display: inline-block; width: .7rem; height: .7rem; border-radius: 50%; margin-right: .2rem; }
"""


def esc(value: Any) -> str:
    """Text for HTML: escaped, quotes included (it may end up in an attribute)."""
    return escape(str(value), quote=True)


def page(title: str, body: Iterable[str]) -> str:
    """A whole document: inline style, no script, nothing fetched."""
    return "".join((
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>{esc(title)}</title><style>{_STYLE}</style></head>\n<body>\n",
        *body,
        "\n</body></html>\n",
    ))


def json_block(value: Any, cls: str = "json") -> str:
    return f"<pre class=\"{cls}\">{esc(json.dumps(value, indent=2, ensure_ascii=False))}</pre>"


def diff_block(lines: Sequence[str]) -> str:
    """A unified diff, added and removed lines marked (`.add`, `.del`)."""
    out = []
    for line in lines:
        cls = "add" if line.startswith("+") and not line.startswith("+++") else (
            "del" if line.startswith("-") and not line.startswith("---") else "ctx")
        out.append(f"<span class=\"{cls}\">{esc(line)}</span>")
    return "<pre class=\"diff\">" + "\n".join(out) + "</pre>"


def plot(points: Sequence[tuple[float, str]], *, label: str = "chunk arrival") -> str:
    """Chunk arrival over time: x = ms since the request, y = chunks so far, coloured by kind."""
    if not points:
        return "<p class=\"note\">no chunks arrived</p>"
    width, height, pad = 640, 140, 30
    end = max(t for t, _ in points) or 1.0
    n = len(points)

    def x(t: float) -> float:
        return pad + (width - 2 * pad) * t / end

    def y(i: int) -> float:
        return height - pad + 10 - (height - pad) * (i + 1) / n

    path = " ".join(f"{x(t):.1f},{y(i):.1f}" for i, (t, _) in enumerate(points))
    dots = "".join(
        f"<circle class=\"pt\" data-kind=\"{esc(kind)}\" cx=\"{x(t):.1f}\" cy=\"{y(i):.1f}\" r=\"3\" "
        f"fill=\"{KIND_COLOURS.get(kind, '#999999')}\"><title>{esc(kind)} at {t:.1f} ms</title></circle>"
        for i, (t, kind) in enumerate(points)
    )
    kinds = sorted({kind for _, kind in points})
    legend = "".join(
        f"<span><i style=\"background:{KIND_COLOURS.get(k, '#999999')}\"></i>{esc(k)}</span>" for k in kinds
    )
    return (
        f"<figure class=\"plot\"><svg class=\"plot\" role=\"img\" aria-label=\"{esc(label)}\" "
        f"width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\">"
        f"<polyline points=\"{path}\" fill=\"none\" stroke=\"#bbb\"/>{dots}"
        f"<text x=\"{pad}\" y=\"{height - 4}\" font-size=\"10\">0 ms</text>"
        f"<text x=\"{width - pad}\" y=\"{height - 4}\" font-size=\"10\" text-anchor=\"end\">{end:.{0 if end >= 10 else 1}f} ms</text>"
        f"<text x=\"4\" y=\"12\" font-size=\"10\">{n} chunk{'' if n == 1 else 's'}</text></svg>"
        f"<figcaption class=\"legend\">{esc(label)}: {legend}</figcaption></figure>"
    )
