"""The geometry of the report's charts: score classes, bar widths and SVG scatter plots, as numbers.

No markup here: the templates (persona/report/templates/) draw what these functions lay out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def score_class(score: float) -> str:
    return "s10" if score >= 10 else "s0" if score <= 0 else "s5"


def bar_width(value: float, maximum: float, width_px: int = 160) -> int:
    return 0 if maximum <= 0 else round(max(0, min(1, value / maximum)) * width_px)


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


def tick_label(v: float) -> str:
    return f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"


@dataclass(frozen=True)
class Tick:
    at: float  # pixel position along its axis
    label: str


@dataclass(frozen=True)
class Dot:
    cx: float
    cy: float
    series: str
    title: str


@dataclass(frozen=True)
class Scatter:
    """A scatter plot laid out in pixels, axes from 0; `templates/macros.html` draws it."""

    width: int
    height: int
    left: int
    right_x: int  # the x of the plot area's right edge
    top: int
    bottom_y: int  # the y of the x axis
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    dots: list[Dot]
    x_label: str
    y_label: str

    @property
    def mid_x(self) -> float:
        return (self.left + self.right_x) / 2

    @property
    def mid_y(self) -> float:
        return (self.top + self.bottom_y) / 2


def scatter(points: Sequence[Point], x_label: str, y_label: str = "score", *, y_max: float = 10,
            width: int = 500, height: int = 260) -> Scatter:
    left, right, top, bottom = 44, 12, 10, 38
    xs = nice_ticks(max((p.x for p in points), default=1))
    ys = nice_ticks(y_max, 5)
    pw, ph = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + (x / xs[-1]) * pw if xs[-1] else left

    def py(y: float) -> float:
        return top + ph - (y / ys[-1]) * ph

    return Scatter(width=width, height=height, left=left, right_x=width - right, top=top, bottom_y=top + ph,
                   x_ticks=[Tick(px(x), tick_label(x)) for x in xs], y_ticks=[Tick(py(y), tick_label(y)) for y in ys],
                   dots=[Dot(px(p.x), py(p.y), p.series, p.title) for p in points], x_label=x_label, y_label=y_label)
