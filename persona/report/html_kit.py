"""Building blocks of the offline HTML pages: the page shell with inline CSS, tables, bars, SVG scatter plots.

No script, no font, no CDN: a report opened from a USB stick in ten years still renders.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

CSS = """
:root{--fg:#1d232a;--muted:#5f6b76;--line:#d8dee4;--bg:#fff;--soft:#f5f7f9;--good:#1a7f37;--mid:#b7791f;--bad:#c62828;
--a:#1f6feb;--b:#e8590c}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg);margin:0 auto;max-width:1100px;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}.muted{color:var(--muted)}a{color:var(--a)}code{background:var(--soft);padding:0 3px;border-radius:3px}
table{border-collapse:collapse;margin:6px 0 12px}th,td{border-bottom:1px solid var(--line);padding:4px 10px 4px 0;text-align:left;
vertical-align:top}th{font-weight:600;white-space:nowrap}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.bar{display:inline-block;height:10px;background:var(--a);border-radius:2px;vertical-align:middle}
.meta td:first-child{color:var(--muted);white-space:nowrap}
.s10{color:var(--good)}.s5{color:var(--mid)}.s0{color:var(--bad)}
.card{border:1px solid var(--line);border-left:4px solid var(--a);border-radius:4px;padding:6px 10px;margin:6px 0;background:var(--soft)}
.card.s10{border-left-color:var(--good)}.card.s5{border-left-color:var(--mid)}.card.s0{border-left-color:var(--bad)}
.card .q{font-weight:600;color:var(--fg)}.card .answer{white-space:pre-wrap}.card div{color:var(--fg)}
.ex{display:grid;grid-template-columns:70px 1fr;gap:2px 12px;padding:6px 0;border-bottom:1px solid var(--line)}
.ex .n{color:var(--muted);font-size:12px}.ex .sent{white-space:pre-wrap}.ex .reply{white-space:pre-wrap;background:var(--soft);
padding:4px 8px;border-radius:4px;margin-top:3px}.ex .sig{color:var(--muted);font-size:12px}
.divider{margin:14px 0 4px;padding:4px 8px;background:#e7f0fe;border-radius:4px;font-weight:600}
.notice{color:var(--b);font-size:12px}
#only-checks:checked~.transcript .ex:not(.check){display:none}
svg text{font:11px system-ui,sans-serif;fill:var(--muted)}svg .dot-a{fill:var(--a)}svg .dot-b{fill:var(--b)}
svg .axis{stroke:#8c959f;stroke-width:1}svg .grid{stroke:var(--line);stroke-width:1}
.legend span{display:inline-block;width:10px;height:10px;border-radius:50%;margin:0 4px 0 12px;vertical-align:middle}
.plots{display:flex;flex-wrap:wrap;gap:16px}
"""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def page(title: str, body: str) -> str:
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{esc(title)}</title>'
            f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n")


def score_class(score: float) -> str:
    return "s10" if score >= 10 else "s0" if score <= 0 else "s5"


def table(header: Sequence[str], rows: Iterable[Sequence[str]], *, numeric: Sequence[int] = (), cls: str = "") -> str:
    """Cells are HTML already (escape text with esc); columns in `numeric` are right-aligned."""
    def cell(tag: str, i: int, v: str) -> str:
        return f'<{tag} class="num">{v}</{tag}>' if i in numeric else f"<{tag}>{v}</{tag}>"
    head = "".join(cell("th", i, h) for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def bar(value: float, maximum: float, width_px: int = 160) -> str:
    w = 0 if maximum <= 0 else max(0, min(1, value / maximum)) * width_px
    return f'<span class="bar" style="width:{w:.0f}px"></span>'


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    series: str  # "a" or "b": the two colours
    title: str  # shown on hover


def nice_ticks(hi: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least `hi`."""
    if hi <= 0:
        return [0, 1]
    raw = hi / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(math.ceil(hi / step)) + 1)]


def _tick_label(v: float) -> str:
    return f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"


def scatter(points: Sequence[Point], x_label: str, y_label: str = "score", *, y_max: float = 10,
            width: int = 500, height: int = 260) -> str:
    """An SVG scatter plot with axes from 0; points carry a <title> tooltip."""
    left, right, top, bottom = 44, 12, 10, 38
    xs = nice_ticks(max((p.x for p in points), default=1))
    ys = nice_ticks(y_max, 5)
    pw, ph = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + (x / xs[-1]) * pw if xs[-1] else left

    def py(y: float) -> float:
        return top + ph - (y / ys[-1]) * ph

    parts = [f'<svg viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" aria-label="{esc(y_label)} against {esc(x_label)}">']
    for y in ys:
        parts.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{py(y):.1f}" y2="{py(y):.1f}"/>'
                     f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{_tick_label(y)}</text>')
    for x in xs:
        parts.append(f'<line class="axis" x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{top + ph}" y2="{top + ph + 4}"/>'
                     f'<text x="{px(x):.1f}" y="{top + ph + 16}" text-anchor="middle">{_tick_label(x)}</text>')
    parts.append(f'<line class="axis" x1="{left}" x2="{width - right}" y1="{top + ph}" y2="{top + ph}"/>'
                 f'<line class="axis" x1="{left}" x2="{left}" y1="{top}" y2="{top + ph}"/>')
    parts.append(f'<text x="{left + pw / 2:.0f}" y="{height - 4}" text-anchor="middle">{esc(x_label)}</text>'
                 f'<text x="12" y="{top + ph / 2:.0f}" text-anchor="middle" transform="rotate(-90 12 {top + ph / 2:.0f})">{esc(y_label)}</text>')
    for p in points:
        parts.append(f'<circle class="dot-{p.series}" cx="{px(p.x):.1f}" cy="{py(p.y):.1f}" r="5" fill-opacity="0.75">'
                     f"<title>{esc(p.title)}</title></circle>")
    parts.append("</svg>")
    return "".join(parts)
