"""Small statistics and table helpers for the bench."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def p90(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return xs[0] if xs else float("nan")
    return statistics.quantiles(xs, n=10, method="inclusive")[-1]


def ratio(a: float, b: float) -> float:
    return a / b if b else float("inf")


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table; floats get two decimals unless already formatted."""
    def cell(v: object) -> str:
        return f"{v:.2f}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
