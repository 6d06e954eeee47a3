"""How far two graders agree on the same checks: exact-match share, mean absolute difference, weighted
Cohen's kappa, and the checks where they are furthest apart.

Kappa is computed on scores rounded to the 11 points 0..10 with quadratic weights (a disagreement of
d points costs (d/10)²), the usual choice for ordinal scales: 1 is perfect agreement, 0 what chance
alone gives with these score distributions, below 0 worse than chance. It is undefined (None) when
both graders give one and the same score to every check: there is nothing to tell apart from chance.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from persona.state import Evaluation

POINTS = 11  # scores 0..10
EXACT_TOLERANCE = 0.01


class Pair(BaseModel):
    model_config = ConfigDict(frozen=True)

    check_id: str
    a: float
    b: float

    @property
    def difference(self) -> float:
        return abs(self.a - self.b)


class Agreement(BaseModel):
    model_config = ConfigDict(frozen=True)

    checks: int
    exact: float  # share of checks scored the same, 0..1
    mean_abs_difference: float
    kappa: float | None
    furthest: list[Pair]  # the checks they disagree on most, furthest first

    def summary(self) -> str:
        kappa = f"{self.kappa:.2f}" if self.kappa is not None else "n/a (one score only)"
        return (f"exact {100 * self.exact:.0f} % · mean |difference| {self.mean_abs_difference:.2f} · "
                f"weighted κ {kappa} over {self.checks} checks")

    def apart(self, a: str, b: str) -> str:
        """The checks furthest apart, e.g. "d2 (persona 10, judge 0)"."""
        return ", ".join(f"{p.check_id} ({a} {p.a:g}, {b} {p.b:g})" for p in self.furthest) or "none"


def point(score: float) -> int:
    """A 0..10 score on the kappa scale: rounded half up (3.35 -> 3, 6.5 -> 7)."""
    return min(POINTS - 1, max(0, math.floor(score + 0.5)))


def weighted_kappa(a: list[int], b: list[int], points: int = POINTS) -> float | None:
    """Cohen's kappa with quadratic weights over the ratings 0..points-1."""
    n = len(a)
    if n == 0 or n != len(b):
        return None
    rows, cols = [0] * points, [0] * points
    observed = 0.0
    for x, y in zip(a, b, strict=True):
        rows[x] += 1
        cols[y] += 1
        observed += (x - y) ** 2
    expected = sum(rows[i] * cols[j] * (i - j) ** 2 for i in range(points) for j in range(points)) / n
    if expected == 0:
        return None
    return 1 - observed / expected


def agreement(pairs: list[Pair], furthest: int = 5) -> Agreement | None:
    """None when there is nothing to compare."""
    if not pairs:
        return None
    exact = sum(p.difference <= EXACT_TOLERANCE for p in pairs) / len(pairs)
    mad = sum(p.difference for p in pairs) / len(pairs)
    kappa = weighted_kappa([point(p.a) for p in pairs], [point(p.b) for p in pairs])
    apart = sorted((p for p in pairs if p.difference > EXACT_TOLERANCE), key=lambda p: -p.difference)
    return Agreement(checks=len(pairs), exact=exact, mean_abs_difference=mad, kappa=kappa, furthest=apart[:furthest])


def persona_vs_judge(evaluations: list[Evaluation]) -> Agreement | None:
    """The persona's own scores against the grades of record, where a judge graded."""
    return agreement([Pair(check_id=e.check_id, a=e.persona_grade.score, b=e.score)
                      for e in evaluations if e.persona_grade])
